#!/usr/bin/env bash
# Wait until something on 127.0.0.1:PORT greets with an SSH banner ("SSH-").
#
#   scripts/vm/wait-ssh.sh PORT [TIMEOUT_SECONDS] [PIDFILE]
#
# It reads the banner only and never logs in: repeated short-timeout logins pile up
# half-open sessions and sshd's MaxStartups then slows the guest's boot further.
# With PIDFILE it gives up at once when that qemu process has died.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

port="${1:?usage: wait-ssh.sh PORT [TIMEOUT_SECONDS] [PIDFILE]}"
timeout="${2:-${IPU_K8S_VM_BOOT_TIMEOUT}}"
pidfile="${3:-}"

deadline=$((SECONDS + timeout))
while ((SECONDS < deadline)); do
  if [[ -n ${pidfile} ]] && ! kill -0 "$(cat "${pidfile}" 2>/dev/null || echo 0)" 2>/dev/null; then
    ipu_k8s_vm_die "qemu (pidfile ${pidfile}) is not running; see its serial log"
  fi
  # qemu's user-net accepts the TCP connection before the guest listens, so a
  # connection alone proves nothing: read up to 4 bytes and compare.
  banner="$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/${port} && head -c 4 <&3" 2>/dev/null || true)"
  if [[ ${banner} == "SSH-" ]]; then
    exit 0
  fi
  sleep 3
done
ipu_k8s_vm_die "no SSH banner on 127.0.0.1:${port} after ${timeout} s"
