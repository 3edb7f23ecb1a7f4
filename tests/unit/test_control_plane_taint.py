"""plugins/filter/control_plane_taint.py: which IPU nodes keep kubeadm's control-plane taint,
the NicClusterPolicy's tolerations for it, and the refusals (network_operator_tolerate_control_plane,
legacy-layout rows)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('control_plane_taint', ROOT / 'plugins' / 'filter' / 'control_plane_taint.py')
taint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(taint)

# The taint kubeadm puts on control planes from 1.25 on (kubernetes/kubernetes pull request
# 110095 dropped node-role.kubernetes.io/master), tolerated as the Kubernetes API defines a
# toleration of any value of that key.
TOLERATION = {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Exists', 'effect': 'NoSchedule'}
POLICY_ROW = {'chart_version': '26.4.1', 'layout': 'policy'}
LEGACY_ROW = {'chart_version': '1.4.0', 'layout': 'legacy'}


def groups(control_plane, workers, ipu_nodes):
    return {'all': control_plane + workers, 'k8s_cluster': control_plane + workers, 'control_plane': control_plane,
            'workers': workers, 'ipu_nodes': ipu_nodes, 'ungrouped': []}


THREE_NODES = groups(['poplar-01'], ['poplar-02', 'poplar-03'], ['poplar-01', 'poplar-02', 'poplar-03'])
NO_OVERLAP = groups(['cp1'], ['poplar-01', 'poplar-02'], ['poplar-01', 'poplar-02'])
ONE_NODE = groups(['poplar-01'], [], ['poplar-01'])


def test_ipu_node_on_a_tainted_control_plane_gets_the_toleration():
    assert taint.control_plane_tolerations(THREE_NODES, False, 'auto', POLICY_ROW) == {
        'hosts': ['poplar-01'], 'tolerations': [TOLERATION], 'problem': ''}


@pytest.mark.parametrize('inventory, untaint', [(ONE_NODE, False), (NO_OVERLAP, False), (THREE_NODES, True),
                                                (THREE_NODES, 'true')])
def test_no_toleration_where_no_ipu_node_keeps_the_taint(inventory, untaint):
    assert taint.control_plane_tolerations(inventory, untaint, 'auto', POLICY_ROW) == {
        'hosts': [], 'tolerations': [], 'problem': ''}


def test_only_the_control_planes_of_a_cluster_of_several_nodes_keep_the_taint():
    assert taint.tainted_control_planes(THREE_NODES, False) == ['poplar-01']
    assert taint.tainted_control_planes(NO_OVERLAP, False) == ['cp1']
    assert taint.tainted_control_planes(ONE_NODE, False) == []
    assert taint.tainted_control_planes(THREE_NODES, 'yes') == []


def test_always_tolerates_without_a_tainted_ipu_node_and_never_refuses_one():
    assert taint.control_plane_tolerations(NO_OVERLAP, False, 'always', POLICY_ROW)['tolerations'] == [TOLERATION]
    assert taint.control_plane_tolerations(NO_OVERLAP, False, 'never', POLICY_ROW) == {
        'hosts': [], 'tolerations': [], 'problem': ''}
    refused = taint.control_plane_tolerations(THREE_NODES, False, 'never', POLICY_ROW)
    assert refused['tolerations'] == []
    assert refused['problem'].startswith('network_operator_tolerate_control_plane is never, but poplar-01 is in '
                                         'control_plane and ipu_nodes')
    assert 'Set kubeadm_untaint_control_plane: true' in refused['problem']
    assert 'take poplar-01 out of ipu_nodes' in refused['problem']


def test_legacy_row_refuses_a_tainted_ipu_node_naming_the_host_and_the_ways_out():
    refused = taint.control_plane_tolerations(THREE_NODES, False, 'auto', LEGACY_ROW)
    assert refused['tolerations'] == []
    message = refused['problem']
    assert message.startswith('poplar-01 is in control_plane and ipu_nodes and keeps kubeadm\'s '
                              'node-role.kubernetes.io/control-plane:NoSchedule taint (a cluster of 3 nodes')
    assert 'network-operator chart 1.4.0 (legacy layout) cannot tolerate that taint' in message
    assert message.endswith('Set kubeadm_untaint_control_plane: true (the control planes then take any workload), '
                            'or take poplar-01 out of ipu_nodes.')
    always = taint.control_plane_tolerations(NO_OVERLAP, False, 'always', LEGACY_ROW)['problem']
    assert always.startswith('network_operator_tolerate_control_plane is always, but network-operator chart 1.4.0')
    assert always.endswith('Set it to auto.')
    assert taint.control_plane_tolerations(NO_OVERLAP, False, 'auto', LEGACY_ROW)['problem'] == ''


def test_every_tainted_ipu_control_plane_is_named():
    inventory = groups(['poplar-01', 'poplar-02', 'cp3'], ['poplar-04'], ['poplar-01', 'poplar-02', 'poplar-04'])
    result = taint.control_plane_tolerations(inventory, False, 'never', POLICY_ROW)
    assert result['hosts'] == ['poplar-01', 'poplar-02']
    assert 'poplar-01, poplar-02 are in control_plane and ipu_nodes and keep kubeadm' in result['problem']
