"""An IPU node that is a control plane keeping kubeadm's taint, judged by the real DaemonSet
controller and scheduler (v1.20.2, hollow nodes): the NicClusterPolicy the network_operator
role renders for a 3-node inventory where poplar-01 is both control plane and IPU node puts
the operator's DaemonSets on poplar-01; the policy of a site without such a node (no
tolerations) leaves it out, and the default nodeAffinity (prefer other nodes) restricts
nothing.

No Network Operator reconciles here, so the test builds each DaemonSet as the operator's
templates do from the policy (Mellanox/network-operator v26.4.1,
manifests/state-multus-cni/0050-multus-ds.yml:26-30 affinity.nodeAffinity from
spec.nodeAffinity, :38-44 tolerations from spec.tolerations then nvidia.com/gpu; the RDMA
shared device plugin, CNI plugins and nv-ipam-node templates do the same with their
tolerations: manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml:36-42,
state-container-networking-plugins/0010-container-networking-plugins-ds.yml:45-51,
state-nv-ipam-cni/040-nv-ipam-node.yaml:39-45). The taint is the one kubeadm's
mark-control-plane phase puts on a control plane from 1.25 on.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from api_cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
NODES = ['poplar-01', 'poplar-02', 'poplar-03']
CONTROL_PLANE = 'poplar-01'
TAINT = {'key': 'node-role.kubernetes.io/control-plane', 'effect': 'NoSchedule'}
NAMESPACE = 'default'


def _render():
    """tests/render's helpers (the role's real defaults, vars and templates), loaded once under
    the name they register."""
    if 'ipu_k8s_render' not in sys.modules:
        spec = importlib.util.spec_from_file_location('ipu_k8s_render', ROOT / 'tests' / 'render' / 'conftest.py')
        module = importlib.util.module_from_spec(spec)
        sys.modules['ipu_k8s_render'] = module
        spec.loader.exec_module(module)
    return sys.modules['ipu_k8s_render']


def inventory_groups(control_plane, workers, ipu_nodes):
    return {'all': control_plane + workers, 'ungrouped': [], 'k8s_cluster': control_plane + workers,
            'control_plane': control_plane, 'workers': workers, 'ipu_nodes': ipu_nodes}


def policy_spec(groups):
    return _render().render_role_yaml('network_operator', 'nicclusterpolicy.yaml.j2', {
        'network_operator_chart_version': '26.4.1', 'groups': groups})['spec']


def operator_daemonset(name, spec):
    """A DaemonSet as the operator renders one from the policy's spec (module docstring)."""
    return {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': name, 'namespace': NAMESPACE},
        'spec': {'selector': {'matchLabels': {'app': name}}, 'template': {
            'metadata': {'labels': {'app': name}},
            'spec': {'hostNetwork': True,
                     'affinity': {'nodeAffinity': spec['nodeAffinity']},
                     'tolerations': list(spec.get('tolerations') or []) + [
                         {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
                     'containers': [{'name': 'plugin', 'image': 'example.invalid/multus:test'}]}}}}


@pytest.fixture(scope='module')
def cluster(k8s_bin):
    """Three hollow nodes; poplar-01 labelled and tainted as kubeadm marks a control plane."""
    made = Cluster(k8s_bin, NODES)
    try:
        made.start()
        from api_client import Api
        api = Api(made.kubeconfig)
        api.core.patch_node(CONTROL_PLANE, {
            'metadata': {'labels': {'node-role.kubernetes.io/control-plane': ''}},
            'spec': {'taints': [TAINT]}})
        yield made, api
    finally:
        made.remove()


def scheduled_nodes(api, name, want, timeout=180):
    """The nodes of the DaemonSet's Running pods once the controller has placed all it wants."""
    deadline = time.monotonic() + timeout
    nodes = set()
    while time.monotonic() < deadline:
        ds = api.get('apps/v1', 'DaemonSet', name, NAMESPACE) or {}
        status = ds.get('status') or {}
        pods = api.core.list_namespaced_pod(NAMESPACE, label_selector='app=%s' % name).items
        nodes = {p.spec.node_name for p in pods if p.status.phase == 'Running'}
        if status.get('desiredNumberScheduled') == want and len(nodes) == want:
            return status['desiredNumberScheduled'], nodes
        time.sleep(1)
    return (api.get('apps/v1', 'DaemonSet', name, NAMESPACE) or {}).get('status', {}).get('desiredNumberScheduled'), \
        nodes


def test_operator_daemonsets_reach_a_tainted_ipu_control_plane_only_with_the_rendered_tolerations(cluster):
    made, api = cluster
    taints = api.core.read_node(CONTROL_PLANE).spec.taints
    assert [(t.key, t.effect) for t in taints] == [(TAINT['key'], TAINT['effect'])]
    # An inventory where the control plane is no IPU node: no tolerations, and the controller
    # places nothing on the tainted node, whatever the default affinity prefers (it restricts
    # no other node either).
    plain = policy_spec(inventory_groups(['poplar-01'], ['poplar-02', 'poplar-03'], ['poplar-02', 'poplar-03']))
    assert 'tolerations' not in plain
    api.apply(operator_daemonset('multus-plain', plain))
    assert scheduled_nodes(api, 'multus-plain', 2) == (2, {'poplar-02', 'poplar-03'}), \
        made.log_tail('kube-controller-manager')
    # poplar-01 both control plane and IPU node: its DaemonSet pod is placed and runs there.
    tainted = policy_spec(inventory_groups(['poplar-01'], ['poplar-02', 'poplar-03'], NODES))
    api.apply(operator_daemonset('multus-tolerating', tainted))
    assert scheduled_nodes(api, 'multus-tolerating', 3) == (3, set(NODES)), made.log_tail('kube-controller-manager')
