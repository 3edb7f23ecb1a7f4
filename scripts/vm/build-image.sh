#!/usr/bin/env bash
# Build (once) the Debian guest image the Molecule scenario and the lab boot.
#
#   scripts/vm/build-image.sh            # prints the image directory on stdout
#
# The image is cached under ${IPU_K8S_CACHE:-~/.cache/ipu-k8s}/images/<key>/, where <key>
# hashes every build input (this script, the suite, the mirror, the package list, the public
# key root trusts and scripts/ansiballz-pyc/ansiballz_pyc.py). It is rebuilt only when one of
# those changes. The directory holds base.qcow2 (an 8 GiB ext4 root file system, no boot
# loader), vmlinuz and initrd.img (qemu boots them with -kernel/-initrd) and build-info.txt.
#
# Needs root (debootstrap, chroot) and the Debian packages debootstrap, qemu-utils and
# e2fsprogs. Takes about 3 minutes; only Debian's archive is contacted.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

# Packages beyond minbase: boot (kernel, systemd, udev), Ansible's needs (python3,
# python3-apt, sudo), what the node roles and the lab use (kmod, iproute2, iptables,
# procps), and SSH; then the lab's stand-ins for a Poplar server's RDMA userspace and the
# CNI plugins (molecule/lab/prepare.yml uses them; this list is where they come from, not
# unpacked under emulation at every boot), with what apt would add as recommended
# (debootstrap adds no recommends): ibverbs-providers holds the rxe (Soft-RoCE) provider,
# without which libibverbs finds no device. Nothing a role installs is here.
packages=(
  linux-image-amd64 systemd-sysv udev kmod dbus openssh-server python3 python3-apt sudo
  iproute2 iputils-ping netbase ca-certificates procps iptables
  rdma-core ibverbs-utils ibverbs-providers rdmacm-utils containernetworking-plugins ethtool dmidecode
)

# The bytecode cache for Ansible's module payloads, loaded by every guest Python (below).
pyc_cache="${here}/../ansiballz-pyc/ansiballz_pyc.py"

[[ ${EUID} -eq 0 ]] || ipu_k8s_vm_die "build-image.sh needs root (debootstrap and chroot); run it with sudo."
for tool in debootstrap mkfs.ext4 qemu-img ssh-keygen sha256sum; do
  command -v "${tool}" >/dev/null ||
    ipu_k8s_vm_die "${tool} not found: apt-get install debootstrap qemu-utils e2fsprogs openssh-client"
done

# The key root trusts in every guest. Generated once; part of the image key below.
if [[ ! -f ${IPU_K8S_VM_KEY} ]]; then
  mkdir -p "$(dirname "${IPU_K8S_VM_KEY}")"
  chmod 700 "$(dirname "${IPU_K8S_VM_KEY}")"
  ssh-keygen -q -t ed25519 -N '' -C ipu-k8s-vm -f "${IPU_K8S_VM_KEY}"
fi

key="$(
  {
    cat "${BASH_SOURCE[0]}" "${pyc_cache}"
    echo "suite=${IPU_K8S_VM_SUITE} mirror=${IPU_K8S_VM_MIRROR}"
    printf '%s\n' "${packages[@]}"
    cat "${IPU_K8S_VM_KEY}.pub"
  } | sha256sum | cut -c1-16
)"
image_dir="${IPU_K8S_CACHE}/images/${IPU_K8S_VM_SUITE}-${key}"

mkdir -p "${IPU_K8S_CACHE}/images"
# One build at a time; a second caller waits and then finds the finished image.
exec 9>"${IPU_K8S_CACHE}/images/.build.lock"
flock 9

if [[ -f ${image_dir}/base.qcow2 && -f ${image_dir}/vmlinuz && -f ${image_dir}/initrd.img ]]; then
  ipu_k8s_vm_log "image up to date: ${image_dir}"
  echo "${image_dir}"
  exit 0
fi

work="$(mktemp -d "${IPU_K8S_CACHE}/images/.build-XXXXXX")"
cleanup() {
  # Never leave a half-mounted chroot or a half-written image behind.
  for m in dev/pts dev proc sys; do
    mountpoint -q "${work}/rootfs/${m}" && umount -l "${work}/rootfs/${m}"
  done
  rm -rf "${work}"
}
trap cleanup EXIT

rootfs="${work}/rootfs"
ipu_k8s_vm_log "debootstrap ${IPU_K8S_VM_SUITE} from ${IPU_K8S_VM_MIRROR} (about 2 minutes)"
include="$(IFS=,; echo "${packages[*]}")"
# debootstrap's script for the suite; a suite newer than the host's debootstrap (forky on a
# bookworm host) uses "sid", which every suite since buster links to.
script=/usr/share/debootstrap/scripts/${IPU_K8S_VM_SUITE}
[[ -e ${script} ]] || script=/usr/share/debootstrap/scripts/sid
debootstrap --variant=minbase --include="${include}" \
  "${IPU_K8S_VM_SUITE}" "${rootfs}" "${IPU_K8S_VM_MIRROR}" "${script}" >"${work}/debootstrap.log" 2>&1 ||
  { tail -n 30 "${work}/debootstrap.log" >&2; ipu_k8s_vm_die "debootstrap failed (log above)"; }

ipu_k8s_vm_log "configuring the guest tree"
echo ipu-k8s-vm >"${rootfs}/etc/hostname"
cat >"${rootfs}/etc/hosts" <<HOSTS
127.0.0.1 localhost
127.0.1.1 ipu-k8s-vm
::1 localhost ip6-localhost ip6-loopback
HOSTS

cat >"${rootfs}/etc/fstab" <<FSTAB
/dev/vda / ext4 defaults,errors=remount-ro 0 1
FSTAB

# The archive the guest installs from (the containerd role's apt task uses it).
cat >"${rootfs}/etc/apt/sources.list" <<SOURCES
deb ${IPU_K8S_VM_MIRROR} ${IPU_K8S_VM_SUITE} main
deb ${IPU_K8S_VM_MIRROR} ${IPU_K8S_VM_SUITE}-updates main
deb http://deb.debian.org/debian-security ${IPU_K8S_VM_SUITE}-security main
SOURCES

# A testing suite's Release files carry a Valid-Until a week ahead (a stable suite's carry
# none): where the archive the guest reaches is a copy that is no longer refreshed, apt would
# refuse every forky list once that date has passed ("Release file ... is expired"), and the
# containerd role's package install with it. The signatures are still checked.
cat >"${rootfs}/etc/apt/apt.conf.d/90ipu-k8s-lab" <<APT
Acquire::Check-Valid-Until "false";
APT

# DHCP on eth0 (the kernel command line carries net.ifnames=0); qemu user-net DNS.
mkdir -p "${rootfs}/etc/systemd/network"
cat >"${rootfs}/etc/systemd/network/10-eth0.network" <<NETWORK
[Match]
Name=eth0

[Network]
DHCP=ipv4
NETWORK
ln -sf /lib/systemd/system/systemd-networkd.service \
  "${rootfs}/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
rm -f "${rootfs}/etc/resolv.conf"
echo "nameserver 10.0.2.3" >"${rootfs}/etc/resolv.conf"

# Root logs in with the generated key only.
install -d -m 700 "${rootfs}/root/.ssh"
install -m 600 "${IPU_K8S_VM_KEY}.pub" "${rootfs}/root/.ssh/authorized_keys"
mkdir -p "${rootfs}/etc/ssh/sshd_config.d"
cat >"${rootfs}/etc/ssh/sshd_config.d/ipu-k8s.conf" <<SSHD
UseDNS no
PermitRootLogin prohibit-password
PasswordAuthentication no
SSHD

# Each clone generates its own machine-id on first boot.
: >"${rootfs}/etc/machine-id"
rm -f "${rootfs}/var/lib/dbus/machine-id"

# Nothing in the background competing with the test: apt timers and the e2scrub reaper
# (38 s of boot under emulation).
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service e2scrub_all.timer; do
  ln -sf /dev/null "${rootfs}/etc/systemd/system/${unit}"
done

# Python compiles each task's module from its payload zip again, about a third of what a
# task costs under emulation: the guest's Python keeps what it compiles from a payload in
# /var/cache/ansiballz-pyc (ansiballz_pyc.py says how). Nothing a module does changes.
site_packages="${rootfs}/usr/lib/python3/dist-packages"
install -m 644 "${pyc_cache}" "${site_packages}/ansiballz_pyc.py"
echo 'import ansiballz_pyc; ansiballz_pyc.install("/var/cache/ansiballz-pyc")' >"${site_packages}/ansiballz-pyc.pth"

chroot "${rootfs}" apt-get clean

kernel="$(find "${rootfs}/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n 1)"
initrd="$(find "${rootfs}/boot" -maxdepth 1 -name 'initrd.img-*' | sort -V | tail -n 1)"
[[ -n ${kernel} && -n ${initrd} ]] || ipu_k8s_vm_die "no kernel/initrd in ${rootfs}/boot"
cp "${kernel}" "${work}/vmlinuz"
cp "${initrd}" "${work}/initrd.img"

ipu_k8s_vm_log "making the ext4 image"
truncate -s 8G "${work}/base.raw"
mkfs.ext4 -q -F -L ipu-k8s-root -d "${rootfs}" "${work}/base.raw"
qemu-img convert -O qcow2 "${work}/base.raw" "${work}/base.qcow2"

{
  echo "key=${key}"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "suite=${IPU_K8S_VM_SUITE} mirror=${IPU_K8S_VM_MIRROR}"
  echo "kernel=$(basename "${kernel}")"
  echo "packages=${packages[*]}"
} >"${work}/build-info.txt"

mkdir -p "${image_dir}"
mv "${work}/vmlinuz" "${work}/initrd.img" "${work}/build-info.txt" "${image_dir}/"
# base.qcow2 last: its presence marks a complete image.
mv "${work}/base.qcow2" "${image_dir}/base.qcow2"
ipu_k8s_vm_log "image ready: ${image_dir}"
echo "${image_dir}"
