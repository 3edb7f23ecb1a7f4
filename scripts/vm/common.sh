# shellcheck shell=bash
# Shared settings for the VM helpers in scripts/vm/. Sourced, never run.
# Every setting can be overridden from the environment.

# Where images, the SSH key and per-VM state live (outside the repository).
IPU_K8S_CACHE="${IPU_K8S_CACHE:-${HOME}/.cache/ipu-k8s}"
# Debian suite and mirror the guest image is built from (and that the guest uses for apt).
IPU_K8S_VM_SUITE="${IPU_K8S_VM_SUITE:-bookworm}"
IPU_K8S_VM_MIRROR="${IPU_K8S_VM_MIRROR:-http://deb.debian.org/debian}"
# qemu accelerator. TCG (software emulation) is the default because a paravirtual KVM
# (kvm_pvm) cannot boot a stock Debian kernel; a workstation with real KVM sets "kvm".
IPU_K8S_VM_ACCEL="${IPU_K8S_VM_ACCEL:-tcg,thread=multi}"
IPU_K8S_VM_CPU="${IPU_K8S_VM_CPU:-max}"
# Guest size.
IPU_K8S_VM_MEMORY="${IPU_K8S_VM_MEMORY:-2048}"
IPU_K8S_VM_SMP="${IPU_K8S_VM_SMP:-2}"
# The guest's scheduling priority on the host: a nice value for qemu and for its session's
# autogroup, or empty to leave both alone (below 0 needs root). The test suite sets -10, so
# the other tiers take only the CPU the guests leave (scripts/test).
IPU_K8S_VM_NICE="${IPU_K8S_VM_NICE:-}"
# Seconds to wait for the guest's SSH banner (TCG boot takes 90-180 s on an idle machine,
# three times that while other tests keep both cores busy).
IPU_K8S_VM_BOOT_TIMEOUT="${IPU_K8S_VM_BOOT_TIMEOUT:-900}"

# The SSH key the image trusts for root; generated once by build-image.sh.
IPU_K8S_VM_KEY="${IPU_K8S_CACHE}/ssh/id_ed25519"

# Options for every ssh call to a guest: the host key changes with every new overlay.
# shellcheck disable=SC2034  # used by the scripts that source this file
IPU_K8S_VM_SSH_OPTS=(
  -o StrictHostKeyChecking=no
  -o UserKnownHostsFile=/dev/null
  -o LogLevel=ERROR
  -o BatchMode=yes
  -o IdentitiesOnly=yes
  -o ConnectTimeout=20
  -i "${IPU_K8S_VM_KEY}"
)

ipu_k8s_vm_die() {
  echo "ERROR: $*" >&2
  exit 1
}

ipu_k8s_vm_log() {
  echo "[$(date -u +%H:%M:%S)] $*" >&2
}

# ipu_k8s_vm_prioritise PID: give a running qemu the priority IPU_K8S_VM_NICE. qemu -daemonize
# starts a session of its own, and with autogroup scheduling (Linux's default where
# /proc/PID/autogroup exists) the CPU is shared between sessions before nice values count
# inside each, so the session's autogroup gets the value too. A guest under emulation that
# waits for a core costs more CPU for the same work (its vCPUs spin, its timers catch up).
# A value the kernel refuses is reported, not fatal: the guest only runs at the default.
ipu_k8s_vm_prioritise() {
  local pid=$1
  [[ -n ${IPU_K8S_VM_NICE} ]] || return 0
  if ! renice -n "${IPU_K8S_VM_NICE}" -p "${pid}" >/dev/null 2>&1 ||
     { [[ -e /proc/${pid}/autogroup ]] && ! echo "${IPU_K8S_VM_NICE}" 2>/dev/null >"/proc/${pid}/autogroup"; }; then
    ipu_k8s_vm_log "IPU_K8S_VM_NICE=${IPU_K8S_VM_NICE} refused for pid ${pid} (a value below 0 needs root): the guest runs at the default priority"
  fi
}
