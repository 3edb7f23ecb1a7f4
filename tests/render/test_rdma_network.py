"""The rdma_network role's MacvlanNetwork (and, for NVIDIA IPAM chart rows, its IPPool),
rendered through its real templates and defaults for sample inventories (one IPU node;
three IPU nodes; a /23 RDMA subnet). The per-node facts and the agreed network come from
the project's own derivation and consensus code (plugins/module_utils/ipu_k8s_rdma.py), exactly as
rdma_network_facts and rdma_network_consensus produce them on a site; the result is checked
against each chart release's own CRDs and its IPAM against the derived range and excludes:
pods get addresses of the range outside the excludes, never the node's own or the V-IPU
controller's."""

import ipaddress
import json
import sys

import pytest
import yaml
from ansible.errors import AnsibleError

from ipu_k8s_render import (ROLES, ROOT, SCHEMAS, load_role_yaml, render_role_yaml, role_expression,
                            validate_custom_resource)

sys.path.insert(0, str(ROOT / 'tests'))
from ansible_collections.ipu_k8s.cluster.plugins.module_utils import ipu_k8s_rdma  # noqa: E402
from nv_ipam_upstream import (controller_allocations, free_addresses, selected,  # noqa: E402,F401  (tests/)
                              validate_ippool)

SCHEMA_DIR = SCHEMAS / 'network_operator'
RELEASES = yaml.safe_load((SCHEMA_DIR / 'releases.yaml').read_text())['releases']
ROWS = yaml.safe_load((ROLES / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions'][
    'network_operator']
# Rows whose release could be read upstream (the others are never installed).
CHART_VERSIONS = sorted((v for v in ROWS if 'crds' in RELEASES.get(v, {})), key=lambda v: tuple(int(p) for p in v.split('.')))
NV_IPAM_VERSIONS = [v for v in CHART_VERSIONS if ROWS[v]['ipam'] == 'nv-ipam']
# A one-POD inventory on the rows that existed before the NVIDIA IPAM row renders as before.
WHEREABOUTS_VERSIONS = [v for v in CHART_VERSIONS if ROWS[v]['ipam'] == 'whereabouts']


def crd(chart_version, name):
    return SCHEMA_DIR / RELEASES[chart_version]['crds'][name]['file']


MACVLAN_CRD = crd('25.4.0', 'macvlannetworks')


def node_facts(cidr, address, mtu=1500, interface='enp65s0f1', vipu='', excludes=None, exclude_prefix=25):
    """The rdma_network fact of one IPU node, its excludes derived by the project's code
    (the configured ones, plus the node's own and the controller's address as
    rdma_network_facts adds them)."""
    network = ipaddress.IPv4Network(cidr)
    vipu = vipu or str(network.network_address + 116)
    configured = ipu_k8s_rdma.compute_excludes(str(network), exclude_prefix, excludes)
    excluded, added = ipu_k8s_rdma.exclude_own_addresses(network, configured, [vipu, address])
    return {
        'interface': interface,
        'cidr': str(network),
        'prefix': network.prefixlen,
        'node_address': address,
        'mtu': mtu,
        'excludes': excluded,
        'excludes_added': added,
        'vipu_address': vipu,
    }


def agreed(networks, ipam='whereabouts', block_size=0):
    result, _warnings = ipu_k8s_rdma.agree_rdma_networks(networks, ipam, block_size)
    return result


def render_macvlan(agreed_network, chart_version='25.4.0', **overrides):
    # The site model of one IPU-POD, whose pool is named after the network (site_model).
    pod = {'rdma_network': agreed_network, 'pool': overrides.get('ipu_k8s_rdma_network_name', 'rdma-net')}
    overrides['ipu_k8s_site'] = {'rdma_network': agreed_network, 'pods': [pod], 'ipam': ROWS[chart_version]['ipam']}
    return render_role_yaml('rdma_network', 'macvlannetwork.yaml.j2', overrides)


def render_ippool(agreed_network, node_names, name='rdma-net', **overrides):
    overrides['item'] = {'pool': name, 'rdma_network': agreed_network, 'node_names': node_names}
    return render_role_yaml('rdma_network', 'ippool.yaml.j2', overrides)


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


@pytest.mark.parametrize('chart_version', [v for v in CHART_VERSIONS if RELEASES[v]['crds'].get('macvlannetworks')])
@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_macvlan_network_matches_the_releases_crd(inventory, chart_version):
    network = agreed(INVENTORIES[inventory], ROWS[chart_version]['ipam'])
    validate_custom_resource(render_macvlan(network, chart_version), crd(chart_version, 'macvlannetworks'))


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


# The nodes' own addresses (.201-.203, .200 and 209.10) lie outside the first /25: each is
# excluded as a /32 (adjacent ones collapse); the V-IPU controller (.116) is inside it.
@pytest.mark.parametrize('chart_version', WHEREABOUTS_VERSIONS)
@pytest.mark.parametrize('inventory, cidr, excludes', [
    ('one_ipu_node', '10.247.208.0/24', ['10.247.208.0/25', '10.247.208.201/32']),
    ('three_ipu_nodes', '10.247.208.0/24', ['10.247.208.0/25', '10.247.208.201/32', '10.247.208.202/31']),
    # A /23: the first /25 of the /23, not of the node's own /24 half.
    ('slash_23_subnet', '10.247.208.0/23', ['10.247.208.0/25', '10.247.208.200/32', '10.247.209.10/32']),
])
def test_ipam_is_whereabouts_json_with_exactly_the_derived_range(inventory, cidr, excludes, chart_version):
    ipam = json.loads(render_macvlan(agreed(INVENTORIES[inventory]), chart_version)['spec']['ipam'])
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
    # The controller (.116) and the node (209.10) lie outside the explicit ranges.
    assert ipam['exclude'] == ['10.247.208.0/26', '10.247.208.116/32', '10.247.209.10/32', '10.247.209.240/28']


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

VIPU = {'host': '10.247.208.5', 'port': 8090, 'name': 'pod001', 'label': 'ipunode=true'}


def site_model(hostvars, ipu_nodes):
    """What the role's site entry point makes of these nodes' facts (the expressions it runs)."""
    task = next(t for t in load_role_yaml('rdma_network', 'tasks/site.yml') if t.get('ansible.builtin.import_role', {}).get('name') == 'ipu_k8s')
    variables = {'groups': {'ipu_nodes': ipu_nodes}, 'hostvars': hostvars, 'network_operator_ipam': 'whereabouts'}
    variables.update((k, role_expression('rdma_network', v, variables)) for k, v in task['vars'].items())
    model = next(t for t in load_role_yaml('ipu_k8s', 'tasks/site.yml'))['ansible.builtin.set_fact']['ipu_k8s_site']
    return role_expression('ipu_k8s', model, variables)


def test_missing_facts_are_named_before_the_cluster_is_touched():
    hostvars = {'poplar-01': {'rdma_network': ONE_NODE['poplar-01'], 'vipu_server': VIPU}, 'poplar-02': {},
                'poplar-03': {}}
    with pytest.raises(AnsibleError, match=r'IPU node\(s\) poplar-02, poplar-03 have no vipu_server fact: run the '
                                           r'rdma_network facts step on them first'):
        site_model(hostvars, ['poplar-01', 'poplar-02', 'poplar-03'])


def test_empty_ipu_nodes_group_is_explained():
    with pytest.raises(AnsibleError, match='the ipu_nodes inventory group is empty'):
        site_model({}, [])


def test_the_site_model_gets_every_ipu_node_keyed_by_inventory_name():
    hostvars = dict((h, {'rdma_network': n, 'vipu_server': VIPU, 'other': 1}) for h, n in THREE_NODES.items())
    hostvars['poplar-02']['ipu_k8s_node_name'] = 'node-2'
    model = site_model(hostvars, sorted(THREE_NODES))
    assert model['pods'][0]['hosts'] == sorted(THREE_NODES)
    # The IPPool's nodeSelector names Kubernetes nodes: ipu_k8s_node_name where a host sets it.
    assert model['pods'][0]['node_names'] == ['poplar-01', 'node-2', 'poplar-03']
    assert model['rdma_network'] == agreed(THREE_NODES)


def test_nodes_on_different_subnets_are_refused_by_name():
    nodes = dict(THREE_NODES)
    nodes['poplar-03'] = node_facts('10.247.210.0/24', '10.247.210.5')
    with pytest.raises(ipu_k8s_rdma.IpuK8sError, match='poplar-03'):
        agreed(nodes)


# --- NVIDIA IPAM chart rows: MacvlanNetwork naming an IPPool over the same range ----------

def addresses(cidr, excludes):
    """Host addresses of cidr (network and broadcast left out) outside excludes."""
    network = ipaddress.IPv4Network(cidr)
    excluded = [ipaddress.IPv4Network(e) for e in excludes]
    return set(a for a in network.hosts() if not any(a in e for e in excluded))


def pool_addresses(ippool):
    """Every address the IPPool can hand to a pod: subnet host addresses outside exclusions."""
    spec = ippool['spec']
    ranges = [(ipaddress.IPv4Address(x['startIP']), ipaddress.IPv4Address(x['endIP'])) for x in spec['exclusions']]
    return set(a for a in ipaddress.IPv4Network(spec['subnet']).hosts() if not any(lo <= a <= hi for lo, hi in ranges))


def allocate(ippool, nodes):
    """What NVIDIA IPAM gives pods on these nodes (the controller's allocations, then the
    node daemon's addresses of each block: tests/nv_ipam_upstream.py) -> {node: set of
    addresses a pod on it can get}; every node must get a block."""
    handed = dict((a['nodeName'], free_addresses(ippool, a['startIP'], a['endIP']))
                  for a in controller_allocations(ippool, nodes))
    assert sorted(handed) == sorted(nodes), 'not every node gets a block: %s' % sorted(set(nodes) - set(handed))
    return handed


def pool_nodes(ippool):
    """The node names an IPPool's selector names, term by term."""
    return [v for term in ippool['spec']['nodeSelector']['nodeSelectorTerms']
            for r in term['matchFields'] for v in r['values']]


@pytest.mark.parametrize('chart_version', NV_IPAM_VERSIONS)
@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_nv_ipam_macvlan_network_names_the_pool(inventory, chart_version):
    macvlan = render_macvlan(agreed(INVENTORIES[inventory], 'nv-ipam'), chart_version)
    validate_custom_resource(macvlan, crd(chart_version, 'macvlannetworks'))
    assert json.loads(macvlan['spec']['ipam']) == {'type': 'nv-ipam', 'poolName': 'rdma-net'}
    assert macvlan['spec']['master'] == 'enp65s0f1'


@pytest.mark.parametrize('chart_version', NV_IPAM_VERSIONS)
@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_ippool_matches_the_releases_crd(inventory, chart_version):
    ippool = render_ippool(agreed(INVENTORIES[inventory], 'nv-ipam'), sorted(INVENTORIES[inventory]))
    validate_custom_resource(ippool, crd(chart_version, 'ippools'))
    assert ippool['apiVersion'] == 'nv-ipam.nvidia.com/v1alpha1' and ippool['kind'] == 'IPPool'
    # The NVIDIA IPAM controller reads IPPools in the operator's namespace only.
    assert ippool['metadata'] == {'name': 'rdma-net', 'namespace': 'network-operator'}
    assert 'gateway' not in ippool['spec']


@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_ippool_hands_out_exactly_the_derived_range_minus_the_excludes(inventory):
    network = agreed(INVENTORIES[inventory], 'nv-ipam')
    nodes = sorted(INVENTORIES[inventory])
    ippool = render_ippool(network, nodes)
    assert ippool['spec']['subnet'] == network['cidr']
    expected = addresses(network['cidr'], network['excludes'])
    assert pool_addresses(ippool) == expected
    for facts in INVENTORIES[inventory].values():
        assert ipaddress.IPv4Address(facts['node_address']) not in pool_addresses(ippool)
        assert ipaddress.IPv4Address(facts['vipu_address']) not in pool_addresses(ippool)
    handed = allocate(ippool, nodes)
    assert all(handed[n] for n in nodes), 'a node got a block with no free address'
    assert set().union(*handed.values()) <= expected
    # Blocks do not overlap: no address can go to pods on two nodes.
    assert sum(len(a) for a in handed.values()) == len(set().union(*handed.values()))


def test_one_node_gets_the_whole_range_in_one_block():
    ippool = render_ippool(agreed(ONE_NODE, 'nv-ipam'), ['poplar-01'])
    handed = allocate(ippool, ['poplar-01'])
    assert handed['poplar-01'] == addresses('10.247.208.0/24', ['10.247.208.0/25', '10.247.208.201/32'])


def test_ippool_selects_each_ipu_node_by_node_name_in_a_term_of_its_own():
    ippool = render_ippool(agreed(THREE_NODES, 'nv-ipam'), ['poplar-01', 'poplar-02.lab', 'poplar-03'])
    # One value per field requirement: the controller's validation refuses more
    # (validate_nodeselector.go:100-104); the terms are ORed.
    assert ippool['spec']['nodeSelector'] == {'nodeSelectorTerms': [
        {'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': [node]}]}
        for node in ['poplar-01', 'poplar-02.lab', 'poplar-03']]}
    assert validate_ippool(ippool) == []
    # Every IPU node gets a block, and a node the pool does not name gets none.
    handed = allocate(ippool, ['poplar-01', 'poplar-02.lab', 'poplar-03'])
    assert sorted(handed) == ['poplar-01', 'poplar-02.lab', 'poplar-03']
    assert [n for n in ('cp1', 'poplar-04') if selected(ippool['spec']['nodeSelector'], (n, {}))] == []


@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_ippool_passes_the_controllers_validation(inventory):
    ippool = render_ippool(agreed(INVENTORIES[inventory], 'nv-ipam'), sorted(INVENTORIES[inventory]))
    assert validate_ippool(ippool) == []


def test_the_validation_refuses_several_node_names_in_one_field_requirement():
    """The shape rendered before: one term whose matchFields named every node."""
    ippool = render_ippool(agreed(THREE_NODES, 'nv-ipam'), ['poplar-01', 'poplar-02', 'poplar-03'])
    ippool['spec']['nodeSelector'] = {'nodeSelectorTerms': [{'matchFields': [
        {'key': 'metadata.name', 'operator': 'In', 'values': ['poplar-01', 'poplar-02', 'poplar-03']}]}]}
    assert validate_ippool(ippool) == [
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value when "
        "`operator` is 'In' or 'NotIn' for node field selector"]
    with pytest.raises(AssertionError, match='InvalidSpec'):
        allocate(ippool, ['poplar-01', 'poplar-02', 'poplar-03'])


@pytest.mark.parametrize('change, error', [
    ({'nodeSelector': {'nodeSelectorTerms': []}}, 'must have at least one node selector term'),
    ({'nodeSelector': {'nodeSelectorTerms': [{'matchFields': [
        {'key': 'metadata.labels', 'operator': 'In', 'values': ['x']}]}]}}, 'not a valid field selector key'),
    ({'nodeSelector': {'nodeSelectorTerms': [{'matchFields': [
        {'key': 'metadata.name', 'operator': 'Exists'}]}]}}, 'not a valid selector operator'),
    ({'nodeSelector': {'nodeSelectorTerms': [{'matchFields': [
        {'key': 'metadata.name', 'operator': 'In', 'values': ['Poplar_01']}]}]}}, 'not a DNS-1123 subdomain'),
    ({'perNodeBlockSize': 0}, 'must be at least 1'),
    ({'perNodeBlockSize': 255}, 'is larger then amount of IPs available in the subnet'),
    ({'exclusions': [{'startIP': '10.247.209.1', 'endIP': '10.247.209.2'}]}, 'is not part of the'),
    ({'exclusions': [{'startIP': '10.247.208.9', 'endIP': '10.247.208.8'}]}, 'endIP should be equal or greater'),
])
def test_the_validation_restates_upstreams_other_refusals(change, error):
    ippool = render_ippool(agreed(ONE_NODE, 'nv-ipam'), ['poplar-01'])
    ippool['spec'].update(change)
    assert any(error in e for e in validate_ippool(ippool)), validate_ippool(ippool)


def test_the_allocator_gives_blocks_in_node_name_order_and_skips_excluded_ones():
    """Two nodes listed out of order on a /24 whose first /25 is excluded, blocks of 50:
    the block .1-.50 and .51-.100 lie inside the exclusion, .101-.150 does not."""
    ippool = render_ippool(agreed(ONE_NODE, 'nv-ipam', block_size=50), ['poplar-02', 'poplar-01'])
    handed = allocate(ippool, ['poplar-02', 'poplar-01'])
    assert min(handed['poplar-01']) == ipaddress.IPv4Address('10.247.208.128')
    assert max(handed['poplar-01']) == ipaddress.IPv4Address('10.247.208.150')
    assert min(handed['poplar-02']) == ipaddress.IPv4Address('10.247.208.151')
    assert ipaddress.IPv4Address('10.247.208.201') not in handed['poplar-02']


def test_ippool_block_size_setting_reaches_the_pool():
    ippool = render_ippool(agreed(SLASH_23, 'nv-ipam', block_size=64), ['poplar-01', 'poplar-02'])
    assert ippool['spec']['perNodeBlockSize'] == 64
    assert allocate(ippool, ['poplar-01', 'poplar-02'])['poplar-01'] <= addresses(
        '10.247.208.0/23', agreed(SLASH_23)['excludes'])


def test_ippool_with_a_misspelt_field_fails_the_crd_check():
    ippool = render_ippool(agreed(ONE_NODE, 'nv-ipam'), ['poplar-01'])
    ippool['spec']['perNodeBlocksize'] = 8
    with pytest.raises(AssertionError, match='perNodeBlocksize'):
        validate_custom_resource(ippool, crd('26.1.2', 'ippools'))


def test_apply_renders_the_ippool_only_for_nv_ipam_rows():
    task = next(t for t in load_role_yaml('rdma_network', 'tasks/apply.yml')
                if 'ippool.yaml.j2' in str(t.get('kubernetes.core.k8s', {}).get('definition')))
    assert task['when'][0] == "ipu_k8s_site.ipam == 'nv-ipam'"
    assert task['loop'] == '{{ ipu_k8s_site.pods }}'
