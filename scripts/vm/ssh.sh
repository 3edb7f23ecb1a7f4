#!/usr/bin/env bash
# Log in to (or run a command on) a guest started by boot.sh.
#
#   scripts/vm/ssh.sh --dir DIR [COMMAND...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

[[ ${1:-} == --dir && -n ${2:-} ]] || ipu_k8s_vm_die "usage: ssh.sh --dir DIR [COMMAND...]"
dir="$2"
shift 2
[[ -f ${dir}/ssh_port ]] || ipu_k8s_vm_die "${dir}/ssh_port missing: was the VM started with scripts/vm/boot.sh --dir ${dir}?"
exec ssh "${IPU_K8S_VM_SSH_OPTS[@]}" -p "$(cat "${dir}/ssh_port")" root@127.0.0.1 "$@"
