#!/usr/bin/env bash
# Boot one guest from the cached image and wait until root can log in over SSH.
#
#   scripts/vm/boot.sh --dir DIR [--name NAME] [--port PORT] [--mac MAC]
#                      [--memory MiB] [--smp N] [--image-dir DIR] [-- EXTRA QEMU ARGS...]
#
# DIR receives the VM's state: disk.qcow2 (a copy-on-write overlay on the cached base
# image), qemu.pid, serial.log, ssh_port and vm.json. Everything after "--" is passed to
# qemu unchanged, e.g. a second NIC on a private L2 segment for the lab:
#   -- -netdev socket,id=rdma,listen=127.0.0.1:40001 \
#      -device virtio-net-pci,netdev=rdma,mac=52:54:00:aa:00:01
# On success prints vm.json: {"name", "address", "port", "user", "identity_file", "pid",
# "dir"}. Accelerator, CPU model, memory, SMP, priority and timeout come from scripts/vm/common.sh
# (IPU_K8S_VM_ACCEL=kvm on a workstation with working KVM).
# Run VM-booting commands under `flock /tmp/ipu-k8s-vm.lock` on shared machines.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

dir="" name="" port="" mac="" image_dir=""
memory="${IPU_K8S_VM_MEMORY}" smp="${IPU_K8S_VM_SMP}"
extra=()
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --mac) mac="$2"; shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --smp) smp="$2"; shift 2 ;;
    --image-dir) image_dir="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) ipu_k8s_vm_die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[[ -n ${dir} ]] || ipu_k8s_vm_die "--dir is required"
[[ -z ${IPU_K8S_VM_NICE} || ${IPU_K8S_VM_NICE} =~ ^-?[0-9]+$ ]] ||
  ipu_k8s_vm_die "IPU_K8S_VM_NICE is '${IPU_K8S_VM_NICE}': give a nice value from -20 to 19, or leave it empty"
mkdir -p "${dir}"
dir="$(cd "${dir}" && pwd)"
name="${name:-$(basename "${dir}")}"
command -v qemu-system-x86_64 >/dev/null || ipu_k8s_vm_die "qemu-system-x86_64 not found: apt-get install qemu-system-x86"

if [[ -f ${dir}/qemu.pid ]] && kill -0 "$(cat "${dir}/qemu.pid")" 2>/dev/null; then
  ipu_k8s_vm_die "${name} is already running (pid $(cat "${dir}/qemu.pid")); stop it with scripts/vm/stop.sh --dir ${dir}"
fi

# The image: built (or found in the cache) unless a directory was given.
if [[ -z ${image_dir} ]]; then
  image_dir="$("${here}/build-image.sh" | tail -n 1)"
fi
for f in base.qcow2 vmlinuz initrd.img; do
  [[ -f ${image_dir}/${f} ]] || ipu_k8s_vm_die "${image_dir}/${f} missing; run scripts/vm/build-image.sh"
done

# A free loopback port unless one was asked for.
if [[ -z ${port} ]]; then
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
# A MAC of its own, stable for a name (qemu's default 52:54:00:12:34:56 repeats).
if [[ -z ${mac} ]]; then
  mac="52:54:00:$(printf '%s' "${name}" | sha256sum | sed -E 's/^(..)(..)(..).*/\1:\2:\3/')"
fi

# A fresh overlay each boot: the base image is never written.
rm -f "${dir}/disk.qcow2" "${dir}/serial.log" "${dir}/qemu.pid"
qemu-img create -q -f qcow2 -b "${image_dir}/base.qcow2" -F qcow2 "${dir}/disk.qcow2" 20G

ipu_k8s_vm_log "booting ${name} (accel ${IPU_K8S_VM_ACCEL}, ssh 127.0.0.1:${port}, mac ${mac})"
# The VM outlives this script: it must not inherit any descriptor beyond stdio, or it would
# hold what the caller opened for the length of its own run (for instance the lock of
# `flock /tmp/ipu-k8s-vm.lock scripts/lab up`, blocking every later locked command).
# (255 is bash's own descriptor of this script, closed on exec already.)
(
  for fd_path in /proc/self/fd/*; do
    fd=${fd_path##*/}
    if ((fd > 2 && fd != 255)) && [[ -e ${fd_path} ]]; then
      exec {fd}>&-
    fi
  done
  exec qemu-system-x86_64 \
    -name "${name}" \
    -accel "${IPU_K8S_VM_ACCEL}" -cpu "${IPU_K8S_VM_CPU}" \
    -m "${memory}" -smp "${smp}" \
    -kernel "${image_dir}/vmlinuz" -initrd "${image_dir}/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet" \
    -drive "file=${dir}/disk.qcow2,if=virtio,format=qcow2" \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:${port}-:22" \
    -device "virtio-net-pci,netdev=net0,mac=${mac}" \
    -display none -serial "file:${dir}/serial.log" \
    -pidfile "${dir}/qemu.pid" -daemonize \
    "${extra[@]}"
)
echo "${port}" >"${dir}/ssh_port"
ipu_k8s_vm_prioritise "$(cat "${dir}/qemu.pid")"

started=${SECONDS}
if ! "${here}/wait-ssh.sh" "${port}" "${IPU_K8S_VM_BOOT_TIMEOUT}" "${dir}/qemu.pid"; then
  tail -n 40 "${dir}/serial.log" >&2 || true
  "${here}/stop.sh" --dir "${dir}" || true
  ipu_k8s_vm_die "${name} did not come up (serial log tail above, full log ${dir}/serial.log)"
fi
# One login proves the key and a working shell.
if ! ssh "${IPU_K8S_VM_SSH_OPTS[@]}" -p "${port}" root@127.0.0.1 true; then
  "${here}/stop.sh" --dir "${dir}" || true
  ipu_k8s_vm_die "${name} answers on SSH but root login with ${IPU_K8S_VM_KEY} failed"
fi
ipu_k8s_vm_log "${name} up after $((SECONDS - started)) s"

cat >"${dir}/vm.json" <<JSON
{"name": "${name}", "address": "127.0.0.1", "port": ${port}, "user": "root", "identity_file": "${IPU_K8S_VM_KEY}", "pid": $(cat "${dir}/qemu.pid"), "dir": "${dir}"}
JSON
cat "${dir}/vm.json"
