"""The rdma_network role's MacvlanNetwork, rendered through its real template and defaults
for sample inventories (one IPU node; three IPU nodes; a /23 RDMA subnet). The per-node
facts and the agreed network come from the project's own derivation and consensus code
(module_utils/ipu_k8s_rdma.py), exactly as rdma_network_facts and rdma_network_consensus
produce them on a site; the result is checked against the MacvlanNetwork CRD and its IPAM
JSON against the derived range and excludes."""

import ipaddress
import json
import sys

import pytest

from ipu_k8s_render import ROOT, SCHEMAS, load_role_yaml, render_role_yaml, role_expression, validate_custom_resource

sys.path.insert(0, str(ROOT / 'module_utils'))
import ipu_k8s_rdma  # noqa: E402  (needs the sys.path entry above)

MACVLAN_CRD = SCHEMAS / 'network_operator' / 'mellanox.com_macvlannetworks.yaml'


def node_facts(cidr, address, mtu=1500, interface='enp65s0f1', vipu='', excludes=None, exclude_prefix=25):
    """The rdma_network fact of one IPU node, its excludes derived by the project's code."""
    network = ipaddress.IPv4Network(cidr)
    return {
        'interface': interface,
        'cidr': str(network),
        'prefix': network.prefixlen,
        'node_address': address,
        'mtu': mtu,
        'excludes': ipu_k8s_rdma.compute_excludes(str(network), exclude_prefix, excludes),
        'vipu_address': vipu or str(network.network_address + 116),
    }


def agreed(networks):
    result, _warnings = ipu_k8s_rdma.agree_rdma_networks(networks)
    return result


def render_macvlan(agreed_network, **overrides):
    overrides['__rdma_network_agreed'] = agreed_network
    return render_role_yaml('rdma_network', 'macvlannetwork.yaml.j2', overrides)


ONE_NODE = {'poplar-01': node_facts('10.247.208.0/24', '10.247.208.201')}
THREE_NODES = {
    'poplar-01': node_facts('10.247.208.0/24', '10.247.208.201', mtu=9000),
    'poplar-02': node_facts('10.247.208.0/24', '10.247.208.202', mtu=1500),
    'poplar-03': node_facts('10.247.208.0/24', '10.247.208.203', mtu=9000),
}
SLASH_23 = {
    'poplar-01': node_facts('10.247.208.0/23', '10.247.209.10', mtu=9000),
    'poplar-02': node_facts('10.247.208.0/23', '10.247.208.200', mtu=9000),
}
INVENTORIES = {'one_ipu_node': ONE_NODE, 'three_ipu_nodes': THREE_NODES, 'slash_23_subnet': SLASH_23}


@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_macvlan_network_matches_the_crd(inventory):
    validate_custom_resource(render_macvlan(agreed(INVENTORIES[inventory])), MACVLAN_CRD)


@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_macvlan_network_is_the_guide_one_with_derived_values(inventory):
    network = agreed(INVENTORIES[inventory])
    macvlan = render_macvlan(network)
    assert macvlan['apiVersion'] == 'mellanox.com/v1alpha1'
    assert macvlan['kind'] == 'MacvlanNetwork'
    assert macvlan['metadata'] == {'name': 'rdma-net'}
    spec = macvlan['spec']
    assert spec['networkNamespace'] == 'default'
    assert spec['master'] == 'enp65s0f1'
    assert spec['mode'] == 'bridge'
    assert spec['mtu'] == min(n['mtu'] for n in INVENTORIES[inventory].values())


@pytest.mark.parametrize('inventory, cidr, excludes', [
    ('one_ipu_node', '10.247.208.0/24', ['10.247.208.0/25']),
    ('three_ipu_nodes', '10.247.208.0/24', ['10.247.208.0/25']),
    # A /23: the first /25 of the /23, not of the node's own /24 half.
    ('slash_23_subnet', '10.247.208.0/23', ['10.247.208.0/25']),
])
def test_ipam_is_whereabouts_json_with_exactly_the_derived_range(inventory, cidr, excludes):
    ipam = json.loads(render_macvlan(agreed(INVENTORIES[inventory]))['spec']['ipam'])
    assert ipam == {
        'type': 'whereabouts',
        'datastore': 'kubernetes',
        'kubernetes': {'kubeconfig': '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig'},
        'log_file': '/var/log/whereabouts.log',
        'log_level': 'info',
        'range': cidr,
        'exclude': excludes,
    }


def test_three_nodes_take_the_smallest_mtu():
    assert render_macvlan(agreed(THREE_NODES))['spec']['mtu'] == 1500


def test_explicit_excludes_replace_the_computed_one():
    nodes = {'poplar-01': node_facts('10.247.208.0/23', '10.247.209.10',
                                     excludes=['10.247.208.0/26', '10.247.209.240/28'])}
    ipam = json.loads(render_macvlan(agreed(nodes))['spec']['ipam'])
    assert ipam['range'] == '10.247.208.0/23'
    assert ipam['exclude'] == ['10.247.208.0/26', '10.247.209.240/28']


def test_shared_names_flow_into_the_manifest():
    macvlan = render_macvlan(agreed(ONE_NODE), ipu_k8s_rdma_network_name='ipu-rdma',
                             ipu_k8s_rdma_network_namespace='training', rdma_network_macvlan_mode='private')
    validate_custom_resource(macvlan, MACVLAN_CRD)
    assert macvlan['metadata']['name'] == 'ipu-rdma'
    assert macvlan['spec']['networkNamespace'] == 'training'
    assert macvlan['spec']['mode'] == 'private'


def test_ipam_json_survives_characters_that_string_pasting_would_break():
    odd = '/var/log/where "abouts"\\n.log'
    ipam = json.loads(render_macvlan(agreed(ONE_NODE), rdma_network_whereabouts_log_file=odd)['spec']['ipam'])
    assert ipam['log_file'] == odd


def test_an_mtu_the_crd_forbids_fails_validation():
    macvlan = render_macvlan(agreed(ONE_NODE))
    macvlan['spec']['mtu'] = -1
    with pytest.raises(AssertionError, match='mtu'):
        validate_custom_resource(macvlan, MACVLAN_CRD)


# --- control-plane logic around the manifest (consensus.yml), with the role's variables ------

def consensus_task(name):
    tasks = load_role_yaml('rdma_network', 'tasks/consensus.yml')
    return next(t for t in tasks if t['name'] == name)


def test_missing_facts_are_named_before_the_cluster_is_touched():
    task = consensus_task('Check that every IPU node derived its RDMA network')
    variables = {
        'groups': {'ipu_nodes': ['poplar-01', 'poplar-02', 'poplar-03']},
        'hostvars': {'poplar-01': {'rdma_network': ONE_NODE['poplar-01']}, 'poplar-02': {}, 'poplar-03': {}},
    }
    variables.update(task['vars'])
    assert role_expression('rdma_network', '{{ __rdma_network_missing }}', variables) == ['poplar-02', 'poplar-03']
    message = ' '.join(role_expression('rdma_network', task['ansible.builtin.assert']['fail_msg'], variables).split())
    assert 'No rdma_network facts for: poplar-02, poplar-03' in message


def test_empty_ipu_nodes_group_is_explained():
    task = consensus_task('Check that every IPU node derived its RDMA network')
    variables = {'groups': {'ipu_nodes': []}, 'hostvars': {}}
    variables.update(task['vars'])
    message = ' '.join(role_expression('rdma_network', task['ansible.builtin.assert']['fail_msg'], variables).split())
    assert message.startswith('The inventory group ipu_nodes is empty')


def test_consensus_gets_every_ipu_node_keyed_by_inventory_name():
    task = consensus_task('Check that the IPU nodes agree on interface and subnet')
    variables = {'groups': {'ipu_nodes': sorted(THREE_NODES)},
                 'hostvars': dict((h, {'rdma_network': n, 'other': 1}) for h, n in THREE_NODES.items())}
    networks = role_expression('rdma_network', task['rdma_network_consensus']['networks'], variables)
    assert networks == THREE_NODES


def test_nodes_on_different_subnets_are_refused_by_name():
    nodes = dict(THREE_NODES)
    nodes['poplar-03'] = node_facts('10.247.210.0/24', '10.247.210.5')
    with pytest.raises(ipu_k8s_rdma.IpuK8sError, match='poplar-03'):
        agreed(nodes)


def test_cni_check_names_what_a_node_lacks():
    tasks = load_role_yaml('rdma_network', 'tasks/cni_check.yml')
    check = next(t for t in tasks if t['name'] == 'Check the Multus and Whereabouts CNI files')
    variables = {
        '__rdma_network_multus_conf': {'matched': 0},
        '__rdma_network_cni_dirs': {'results': [
            {'item': 'multus.d', 'stat': {'exists': True, 'isdir': True}},
            {'item': 'whereabouts.d', 'stat': {'exists': False}},
        ]},
        'inventory_hostname': 'poplar-02',
    }
    variables.update(check['vars'])
    missing = role_expression('rdma_network', '{{ __rdma_network_cni_missing }}', variables)
    assert missing == ['a Multus configuration (00-multus.conf)', 'whereabouts.d']
    variables['__rdma_network_multus_conf'] = {'matched': 1}
    variables['__rdma_network_cni_dirs']['results'][1]['stat'] = {'exists': True, 'isdir': True}
    assert role_expression('rdma_network', '{{ __rdma_network_cni_missing }}', variables) == []
