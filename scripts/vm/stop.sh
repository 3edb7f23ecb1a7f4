#!/usr/bin/env bash
# Stop a guest started by boot.sh, by the pid in its pidfile, and drop its overlay.
#
#   scripts/vm/stop.sh --dir DIR [--keep-disk]
#
# Sends SIGTERM, waits up to 20 s, then SIGKILL. Only that one process is touched.
# Succeeds when the VM is not running (safe to call twice).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

dir="" keep_disk=false
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --keep-disk) keep_disk=true; shift ;;
    *) ipu_k8s_vm_die "unknown argument $1 (see the header of $0)" ;;
  esac
done
[[ -n ${dir} ]] || ipu_k8s_vm_die "--dir is required"

pidfile="${dir}/qemu.pid"
if [[ -f ${pidfile} ]]; then
  pid="$(cat "${pidfile}")"
  # Only a qemu process: a stale pidfile must not kill whatever reused the pid.
  if [[ -n ${pid} ]] && [[ "$(cat "/proc/${pid}/comm" 2>/dev/null || true)" == qemu-system-* ]]; then
    kill -TERM "${pid}"
    for _ in $(seq 1 40); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.5
    done
    if kill -0 "${pid}" 2>/dev/null; then
      kill -KILL "${pid}"
    fi
    ipu_k8s_vm_log "stopped $(basename "${dir}") (pid ${pid})"
  fi
  rm -f "${pidfile}"
fi
if [[ ${keep_disk} == false ]]; then
  rm -f "${dir}/disk.qcow2"
fi
