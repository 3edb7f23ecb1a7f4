"""rdma_network_consensus: its option and what it returns or refuses."""

import pytest

from module_harness import ModuleFail


def node(address, interface='rdma0', cidr='10.247.208.0/23', mtu=9000):
    return {'interface': interface, 'cidr': cidr, 'prefix': 23, 'node_address': address, 'mtu': mtu,
            'excludes': ['10.247.208.0/25'], 'vipu_address': '10.247.208.5'}


def test_agreeing_nodes_give_one_network(run_module):
    result = run_module('rdma_network_consensus',
                        {'networks': {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22')}})
    assert result['rdma_network'] == {'interface': 'rdma0', 'cidr': '10.247.208.0/23', 'prefix': 23, 'mtu': 9000,
                                      'excludes': ['10.247.208.0/25'], 'vipu_addresses': ['10.247.208.5']}
    assert result['changed'] is False


def test_no_fact_is_set_so_a_nodes_own_fact_survives(run_module):
    result = run_module('rdma_network_consensus', {'networks': {'ipu1': node('10.247.208.21')}})
    assert 'ansible_facts' not in result


def test_disagreeing_nodes_fail_naming_them(run_module):
    networks = {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22', interface='ens2f0')}
    with pytest.raises(ModuleFail, match='RDMA interface differs: ens2f0 on ipu2; rdma0 on ipu1'):
        run_module('rdma_network_consensus', {'networks': networks})


def test_empty_networks_fail(run_module):
    with pytest.raises(ModuleFail, match='networks is empty'):
        run_module('rdma_network_consensus', {'networks': {}})


def test_networks_is_required(run_module):
    with pytest.raises(ModuleFail, match='missing required arguments: networks'):
        run_module('rdma_network_consensus', {})


def test_networks_must_be_a_dict(run_module):
    with pytest.raises(ModuleFail, match='networks'):
        run_module('rdma_network_consensus', {'networks': ['ipu1', 'ipu2']})


def test_undefined_fact_of_a_host_fails_naming_it(run_module):
    with pytest.raises(ModuleFail, match='RDMA network of ipu2 is not a dict'):
        run_module('rdma_network_consensus', {'networks': {'ipu1': node('10.247.208.21'), 'ipu2': None}})


def test_mtu_difference_is_warned_about(run_module):
    result = run_module('rdma_network_consensus',
                        {'networks': {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22', mtu=1500)}})
    assert result['rdma_network']['mtu'] == 1500
    assert result['warnings'] == ['RDMA interface MTUs differ (1500 on ipu2; 9000 on ipu1): the MacvlanNetwork '
                                  'uses the smallest, 1500']


def test_check_mode_gives_the_same_answer(run_module):
    result = run_module('rdma_network_consensus',
                        {'networks': {'ipu1': node('10.247.208.21')}, '_ansible_check_mode': True})
    assert result['rdma_network']['cidr'] == '10.247.208.0/23'


def test_nv_ipam_adds_the_pool_values(run_module):
    result = run_module('rdma_network_consensus', {'networks': {'ipu1': node('10.247.208.201')}, 'ipam': 'nv-ipam'})
    assert result['rdma_network']['excludes'] == ['10.247.208.0/25', '10.247.208.201/32']
    assert result['rdma_network']['nv_ipam'] == {
        'exclusions': [{'startIP': '10.247.208.0', 'endIP': '10.247.208.127'},
                       {'startIP': '10.247.208.201', 'endIP': '10.247.208.201'}],
        'block_size': 510}


def test_a_block_size_that_starves_a_node_fails(run_module):
    networks = {'ipu1': node('10.247.208.201'), 'ipu2': node('10.247.208.202')}
    with pytest.raises(ModuleFail, match='rdma_network_nv_ipam_block_size 500 gives fewer than 2 blocks'):
        run_module('rdma_network_consensus', {'networks': networks, 'ipam': 'nv-ipam', 'nv_ipam_block_size': 500})


def test_unknown_ipam_is_refused_by_the_option(run_module):
    with pytest.raises(ModuleFail, match='ipam'):
        run_module('rdma_network_consensus', {'networks': {'ipu1': node('10.247.208.21')}, 'ipam': 'dhcp'})


def test_controllers_group_the_nodes_into_pods(run_module):
    pod1 = {'name': 'pod001', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001'}
    pod2 = {'name': 'pod002', 'host': '10.5.212.116', 'port': 8090, 'label': 'vipu-ctrl=pod002'}
    other = node('10.5.212.20', interface='ens2f0', cidr='10.5.212.0/24')
    other.update(excludes=['10.5.212.0/25'], vipu_address='10.5.212.116')
    result = run_module('rdma_network_consensus', {
        'networks': {'ipu1': node('10.247.208.21'), 'ipu2': other},
        'controllers': {'ipu1': pod1, 'ipu2': pod2}, 'network_name': 'rdma-net'})
    assert result['rdma_network'] is None
    assert [(p['name'], p['hosts'], p['rdma_network']['cidr'], p['pool']) for p in result['pods']] == [
        ('pod001', ['ipu1'], '10.247.208.0/23', 'rdma-net-pod001'),
        ('pod002', ['ipu2'], '10.5.212.0/24', 'rdma-net-pod002')]


def test_one_controller_returns_the_network_and_one_pod(run_module):
    pod1 = {'name': 'pod001', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001'}
    result = run_module('rdma_network_consensus', {'networks': {'ipu1': node('10.247.208.21')},
                                                   'controllers': {'ipu1': pod1}, 'network_name': 'rdma-net'})
    assert result['pods'][0]['rdma_network'] == result['rdma_network']
    assert result['pods'][0]['pool'] == 'rdma-net'
