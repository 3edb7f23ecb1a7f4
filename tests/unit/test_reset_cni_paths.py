"""reset removes every CNI directory the cluster layers are checked for on a node: what
rdma_network's cni_check looks for in rdma_network_cni_dir (Multus and each IPAM's
directory) is in reset_cni_paths."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_reset_removes_every_cni_directory_cni_check_looks_for():
    tasks = yaml.safe_load((ROOT / 'roles/rdma_network/tasks/cni_check.yml').read_text())
    looked_for = next(t for t in tasks if t['name'] == 'Look for the multus.d and IPAM directories')['loop']
    cni_dir = yaml.safe_load((ROOT / 'roles/rdma_network/defaults/main.yml').read_text())['rdma_network_cni_dir']
    defaults = yaml.safe_load((ROOT / 'roles/reset/defaults/main.yml').read_text())['reset_cni_paths']
    assert 'nv-ipam.d' in looked_for and 'whereabouts.d' in looked_for
    for directory in looked_for:
        assert '%s/%s' % (cni_dir, directory) in defaults
