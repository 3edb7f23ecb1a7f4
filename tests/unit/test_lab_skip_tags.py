"""The lab skips the same layers whether it runs by scripts/lab or by Molecule."""
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("scenario", ["lab", "containerd2"])
def test_molecule_lab_skips_exactly_the_layers_scripts_lab_skips(scenario):
    from_script = subprocess.run([str(ROOT / "scripts" / "lab"), "skip-tags"], capture_output=True,
                                 text=True, check=True).stdout.strip().split(",")
    molecule = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text())
    env = molecule["provisioner"].get("env") or molecule["ansible"]["env"]
    assert sorted(env["ANSIBLE_SKIP_TAGS"].split(",")) == sorted(from_script)
    # Only layers that need the internet or a cluster are skipped: never the node layers.
    assert not {"preflight", "nodes", "node_prep", "containerd", "rdma_network_facts", "verify_node"} & set(from_script)
