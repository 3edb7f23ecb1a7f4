"""Every filter a plugin of the project offers is one the roles, playbooks or templates use
under that name, and the name leads to the plugin's function of the same purpose: a filter
renamed in a plugin but not in the plays (or offered and used nowhere) fails here, not in
the middle of a run."""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PLUGINS = ['plugins/filter/helm_release.py',
           'plugins/filter/pod_diagnosis.py', 'plugins/filter/rdma_network_check.py',
           'plugins/filter/rdma_shared_device_plugin.py', 'plugins/filter/ipu_k8s_checks.py',
           'plugins/filter/ipu_k8s_client.py', 'plugins/filter/kubeadm_join.py',
           'plugins/filter/kubernetes_packages.py',
           'plugins/filter/reset_netfilter.py', 'plugins/filter/control_plane_taint.py']
PLAYS = '\n'.join(path.read_text() for pattern in ('roles/**/*.yml', 'roles/**/*.j2', 'playbooks/**/*.yml', 'site.yml')
                  for path in ROOT.glob(pattern))


@pytest.mark.parametrize('path', PLUGINS)
def test_each_offered_filter_is_used_by_the_plays_under_its_name(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    offered = plugin.FilterModule().filters()
    assert offered, path
    for name, function in offered.items():
        assert re.search(r'\|\s*%s\b' % re.escape(name), PLAYS), '%s offers %s, which no play uses' % (path, name)
        assert getattr(plugin, function.__name__) is function
