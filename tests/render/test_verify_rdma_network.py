"""verify's "rdma-net matches the node" check against what the rdma_network role applies:
the MacvlanNetwork and, on NVIDIA IPAM chart rows, the IPPool, rendered through the role's
real templates from the project's own consensus, then compared by the filter the verify
tasks use (plugins/filter/rdma_network_check.py) with every node's own derivation."""

import importlib.util

import pytest

from ipu_k8s_render import ROOT, load_role_yaml, role_expression
from test_rdma_network import (CHART_VERSIONS, INVENTORIES, ROWS, agreed, node_facts, render_ippool,
                               render_macvlan)

_spec = importlib.util.spec_from_file_location('rdma_network_check', ROOT / 'plugins' / 'filter' / 'rdma_network_check.py')
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def applied(nodes, chart_version):
    ipam = ROWS[chart_version]['ipam']
    network = agreed(nodes, ipam)
    macvlan = render_macvlan(network, chart_version)
    pool = render_ippool(network, sorted(nodes)) if ipam == 'nv-ipam' else None
    return macvlan, pool


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_every_node_matches_what_rdma_network_applied(inventory, chart_version):
    nodes = INVENTORIES[inventory]
    macvlan, pool = applied(nodes, chart_version)
    for host, rdma in nodes.items():
        result = check.rdma_network_comparison(rdma, macvlan, pool)
        assert result['status'] == 'PASS', (host, result)
        assert result['ipam'] == ROWS[chart_version]['ipam']


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
def test_a_node_that_moved_subnet_fails_on_every_row(chart_version):
    macvlan, pool = applied(INVENTORIES['one_ipu_node'], chart_version)
    moved = node_facts('10.247.210.0/24', '10.247.210.201')
    assert check.rdma_network_comparison(moved, macvlan, pool)['status'] == 'FAIL'


def test_a_node_added_after_the_install_is_not_covered_by_the_pool():
    macvlan, pool = applied(INVENTORIES['one_ipu_node'], '26.1.2')
    newcomer = node_facts('10.247.208.0/24', '10.247.208.230')
    result = check.rdma_network_comparison(newcomer, macvlan, pool)
    assert result['status'] == 'FAIL'
    assert 'not excluded: ' in result['observed'] and '10.247.208.230/32' in result['observed']


def cni_task_vars(macvlan):
    block = next(t for t in load_role_yaml('verify', 'tasks/node_cni.yml') if t['name'] == 'Multus and IPAM CNI files')
    variables = {'__verify_macvlan': {'resources': [macvlan] if macvlan else []}}
    variables.update(block['vars'])
    return variables


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
def test_cni_check_label_names_the_applied_ipam(chart_version):
    macvlan, _pool = applied(INVENTORIES['one_ipu_node'], chart_version)
    variables = cni_task_vars(macvlan)
    label = {'whereabouts': 'Whereabouts', 'nv-ipam': 'NVIDIA IPAM'}[ROWS[chart_version]['ipam']]
    directory = {'whereabouts': 'whereabouts.d', 'nv-ipam': 'nv-ipam.d'}[ROWS[chart_version]['ipam']]
    assert role_expression('verify', '{{ __verify_check_name }}', variables) == 'Multus and %s CNI files' % label
    assert role_expression('verify', '{{ __verify_expected_text }}', variables) == (
        'multus config, multus.d, %s in /etc/cni/net.d' % directory)


def test_cni_check_label_without_a_macvlan_network_names_both():
    variables = cni_task_vars(None)
    assert role_expression('verify', '{{ __verify_check_name }}', variables) == (
        'Multus and Whereabouts or NVIDIA IPAM CNI files')
    assert role_expression('verify', '{{ __verify_expected_text }}', variables) == (
        'multus config, multus.d, whereabouts.d or nv-ipam.d in /etc/cni/net.d')


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
def test_the_verify_task_feeds_the_comparison_what_it_read(chart_version):
    nodes = INVENTORIES['three_ipu_nodes']
    macvlan, pool = applied(nodes, chart_version)
    block = next(t for t in load_role_yaml('verify', 'tasks/node_macvlan.yml')
                 if t['name'] == 'Derived RDMA network against the applied MacvlanNetwork')
    variables = {'__verify_rdma': nodes['poplar-02'], '__verify_macvlan': {'resources': [macvlan]},
                 # A skipped IPPool read (Whereabouts rows) registers no resources.
                 '__verify_ippool': {'resources': [pool]} if pool else {'skipped': True}}
    row = block['ansible.builtin.set_fact']['__verify_seen']['macvlan_matches']
    result = role_expression('verify', row, variables)
    assert result['ok'] is True, result
    assert ('subnet=' if ROWS[chart_version]['ipam'] == 'nv-ipam' else 'range=') in result['expected']
    if pool:
        variables['__verify_ippool'] = {'resources': []}
        missing = role_expression('verify', row, variables)
        assert missing['ok'] is False and 'pool rdma-net' in missing['observed']
