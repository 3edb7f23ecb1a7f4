"""Root of the test tree: `pytest tests` from the repository root collects every tier.

Each test is marked with its tier, the directory it sits in (unit, integration, render,
api; molecule/lab/tests is the molecule tier's own), so one tier of a whole-tree run is
`pytest tests -m unit`; scripts/test runs the tiers by path, one pytest call each.

The repository's collections/ directory is on sys.path for every tier, so the collection's
module_utils import under their one name.

The `root` fixture (for tests that make network namespaces or root-owned files) skips when
not root and fails under CI=true (testlib.require)."""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The repository is the collection ipu_k8s.cluster: collections/ansible_collections/ipu_k8s/cluster
# links to the root, so its module_utils import as the modules and filters import them
# (ansible_collections.ipu_k8s.cluster.plugins.module_utils.<name>), as ansible.cfg finds them.
sys.path.append(str(HERE.parent / 'collections'))

from testlib import require_root  # noqa: E402

TIERS = {'unit': 'pure Python and ad-hoc plays on localhost, no root',
         'integration': 'plays on localhost and in network namespaces (root)',
         'render': 'templates rendered and checked against schemas and golden files',
         'api': 'a real kube-apiserver on 127.0.0.1 (root, built once)'}


def pytest_configure(config):
    for tier, what in TIERS.items():
        config.addinivalue_line('markers', '%s: the %s tier: %s' % (tier, tier, what))


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        parts = path.relative_to(HERE).parts if path.is_relative_to(HERE) else ()
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope='session')
def root():
    """Tests that use it run as root (skipped otherwise; failed under CI=true)."""
    require_root('it makes network namespaces, veth pairs or root-owned files')
