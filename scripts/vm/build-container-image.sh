#!/usr/bin/env bash
# Build (once) the lab's RDMA test image: a Debian root file system with the verbs tools,
# packed as an OCI image archive that containerd imports without a registry
# (`ctr -n k8s.io images import`). The lab's prepare step copies it to node1; verify's
# container check imports and runs it (verify_container_image, verify_container_image_archive).
#
#   scripts/vm/build-container-image.sh     # prints the archive's path on stdout
#
# Cached under ${IPU_K8S_CACHE:-~/.cache/ipu-k8s}/container-images/<key>/rdma-test.oci.tar,
# <key> hashing this script, the suite, the mirror and the package list. One layer, made
# from Debian's archive only; needs root (debootstrap). About 2 minutes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/vm/common.sh
source "${here}/common.sh"

# The name the archive carries; inventories/lab/group_vars/all.yml names the same image.
image_name="${IPU_K8S_LAB_TEST_IMAGE:-localhost/ipu-k8s-rdma-test:bookworm}"
# What the container runs: ip, ping, the verbs tools (ibv_devices, ibv_rc_pingpong) and
# their user-space drivers (rxe, mlx5), perftest (ib_write_bw).
packages=(iproute2 iputils-ping ibverbs-utils ibverbs-providers perftest)

[[ ${EUID} -eq 0 ]] || ipu_k8s_vm_die "build-container-image.sh needs root (debootstrap); run it with sudo."
for tool in debootstrap tar gzip sha256sum python3; do
  command -v "${tool}" >/dev/null || ipu_k8s_vm_die "${tool} not found: apt-get install debootstrap tar gzip python3"
done

key="$(
  {
    cat "${BASH_SOURCE[0]}"
    echo "suite=${IPU_K8S_VM_SUITE} mirror=${IPU_K8S_VM_MIRROR} name=${image_name}"
    printf '%s\n' "${packages[@]}"
  } | sha256sum | cut -c1-16
)"
out_dir="${IPU_K8S_CACHE}/container-images/${key}"
archive="${out_dir}/rdma-test.oci.tar"

mkdir -p "${IPU_K8S_CACHE}/container-images"
exec 9>"${IPU_K8S_CACHE}/container-images/.build.lock"
flock 9

if [[ -f ${archive} ]]; then
  ipu_k8s_vm_log "test image up to date: ${archive}"
  echo "${archive}"
  exit 0
fi

work="$(mktemp -d "${IPU_K8S_CACHE}/container-images/.build-XXXXXX")"
trap 'rm -rf "${work}"' EXIT

rootfs="${work}/rootfs"
ipu_k8s_vm_log "debootstrap ${IPU_K8S_VM_SUITE} for the RDMA test image (about 2 minutes)"
debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
  "${IPU_K8S_VM_SUITE}" "${rootfs}" "${IPU_K8S_VM_MIRROR}" >"${work}/debootstrap.log" 2>&1 ||
  { tail -n 30 "${work}/debootstrap.log" >&2; ipu_k8s_vm_die "debootstrap failed (log above)"; }
chroot "${rootfs}" apt-get clean
rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/dev/* "${rootfs}"/proc/* "${rootfs}"/sys/*

ipu_k8s_vm_log "packing the OCI image ${image_name}"
tar --numeric-owner --sort=name -C "${rootfs}" -cf "${work}/layer.tar" .
mkdir -p "${work}/oci/blobs/sha256"
python3 - "${work}" "${image_name}" <<'PY'
"""One-layer OCI image layout (image-spec v1.0) around layer.tar, as a tar archive."""
import gzip, hashlib, json, os, shutil, sys, tarfile

work, name = sys.argv[1], sys.argv[2]
blobs = os.path.join(work, 'oci', 'blobs', 'sha256')


def put(data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), 'wb') as f:
        f.write(data)
    return 'sha256:' + digest, len(data)


with open(os.path.join(work, 'layer.tar'), 'rb') as f:
    raw = f.read()
layer, layer_size = put(gzip.compress(raw, compresslevel=6, mtime=0))
config, config_size = put(json.dumps({
    'architecture': 'amd64', 'os': 'linux',
    'config': {'Env': ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
               'Cmd': ['/bin/sh'], 'WorkingDir': '/'},
    'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + hashlib.sha256(raw).hexdigest()]},
}, sort_keys=True).encode())
manifest, manifest_size = put(json.dumps({
    'schemaVersion': 2,
    'mediaType': 'application/vnd.oci.image.manifest.v1+json',
    'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': config, 'size': config_size},
    'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar+gzip', 'digest': layer, 'size': layer_size}],
}, sort_keys=True).encode())
index = {'schemaVersion': 2, 'manifests': [{
    'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': manifest, 'size': manifest_size,
    'platform': {'architecture': 'amd64', 'os': 'linux'},
    'annotations': {'io.containerd.image.name': name,
                    'org.opencontainers.image.ref.name': name.rsplit(':', 1)[-1]}}]}
with open(os.path.join(work, 'oci', 'index.json'), 'w') as f:
    json.dump(index, f)
with open(os.path.join(work, 'oci', 'oci-layout'), 'w') as f:
    json.dump({'imageLayoutVersion': '1.0.0'}, f)
with tarfile.open(os.path.join(work, 'rdma-test.oci.tar'), 'w') as tar:
    for entry in ('oci-layout', 'index.json', 'blobs'):
        tar.add(os.path.join(work, 'oci', entry), arcname=entry)
PY

mkdir -p "${out_dir}"
mv "${work}/rdma-test.oci.tar" "${archive}"
ipu_k8s_vm_log "test image ready: ${archive} ($(du -h "${archive}" | cut -f1))"
echo "${archive}"
