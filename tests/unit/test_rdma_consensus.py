"""Agreeing on one RDMA network from what each IPU node derived."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, agree_rdma_networks


def node(address='10.247.208.21', interface='ens1f0', cidr='10.247.208.0/23', mtu=9000,
         excludes=('10.247.208.0/25',), vipu='10.247.208.5'):
    return {'interface': interface, 'cidr': cidr, 'prefix': int(cidr.split('/')[1]), 'node_address': address,
            'mtu': mtu, 'excludes': list(excludes), 'vipu_address': vipu}


def test_nodes_that_agree_give_their_network():
    result, warnings = agree_rdma_networks({'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22')})
    assert result == {'interface': 'ens1f0', 'cidr': '10.247.208.0/23', 'prefix': 23, 'mtu': 9000,
                      'excludes': ['10.247.208.0/25'], 'vipu_addresses': ['10.247.208.5']}
    assert warnings == []


def test_a_single_node_is_its_own_consensus():
    result, _ = agree_rdma_networks({'ipu1': node()})
    assert result['cidr'] == '10.247.208.0/23'


def test_nodes_that_disagree_on_the_subnet_are_refused_naming_the_hosts():
    networks = {'ipu1': node(), 'ipu2': node(), 'ipu3': node('10.5.212.20', cidr='10.5.212.0/22',
                                                             excludes=['10.5.212.0/25'], vipu='10.5.212.116')}
    with pytest.raises(IpuK8sError, match=r'RDMA subnet differs: 10.247.208.0/23 on ipu1, ipu2; 10.5.212.0/22 on ipu3'):
        agree_rdma_networks(networks)


def test_nodes_that_disagree_on_the_interface_are_refused_naming_the_hosts():
    networks = {'ipu1': node(interface='ens1f0'), 'ipu2': node(interface='ens2f0')}
    with pytest.raises(IpuK8sError, match=r'RDMA interface differs: ens1f0 on ipu1; ens2f0 on ipu2'):
        agree_rdma_networks(networks)


def test_both_disagreements_are_reported_together():
    networks = {'ipu1': node(), 'ipu2': node(interface='ens2f0', cidr='10.5.212.0/22', excludes=['10.5.212.0/25'],
                                             vipu='10.5.212.116')}
    with pytest.raises(IpuK8sError) as refused:
        agree_rdma_networks(networks)
    assert 'subnet differs' in str(refused.value) and 'interface differs' in str(refused.value)


def test_smallest_mtu_is_used_with_a_warning():
    result, warnings = agree_rdma_networks({'ipu1': node(mtu=9000), 'ipu2': node(mtu=4200)})
    assert result['mtu'] == 4200
    assert warnings == ['RDMA interface MTUs differ (4200 on ipu2; 9000 on ipu1): the MacvlanNetwork uses the '
                        'smallest, 4200']


def test_different_excludes_are_united_with_a_warning():
    result, warnings = agree_rdma_networks({'ipu1': node(excludes=['10.247.208.0/26']),
                                            'ipu2': node(excludes=['10.247.208.64/26', '10.247.209.0/28'])})
    assert result['excludes'] == ['10.247.208.0/25', '10.247.209.0/28']
    assert len(warnings) == 1 and 'union' in warnings[0]


def test_vipu_addresses_are_unique_and_in_address_order():
    result, _ = agree_rdma_networks({'a': node(vipu='10.247.208.10'), 'b': node(vipu='10.247.208.9'),
                                     'c': node(vipu='10.247.208.10')})
    assert result['vipu_addresses'] == ['10.247.208.9', '10.247.208.10']


def test_empty_networks_are_refused():
    with pytest.raises(IpuK8sError, match='networks is empty.*ipu_nodes'):
        agree_rdma_networks({})


def test_entry_that_is_not_a_dict_is_refused_naming_the_host():
    with pytest.raises(IpuK8sError, match='RDMA network of ipu2 is not a dict'):
        agree_rdma_networks({'ipu1': node(), 'ipu2': 'undefined'})


def test_entry_missing_keys_is_refused_naming_the_host_and_keys():
    entry = node()
    del entry['cidr']
    del entry['mtu']
    with pytest.raises(IpuK8sError, match='RDMA network of ipu2 lacks cidr, mtu'):
        agree_rdma_networks({'ipu1': node(), 'ipu2': entry})


def test_entry_with_malformed_cidr_is_refused():
    with pytest.raises(IpuK8sError, match="ipu1 has a malformed cidr '10.247.208.0/33'"):
        agree_rdma_networks({'ipu1': node(cidr='10.247.208.0/33')})


def test_entry_with_malformed_mtu_is_refused():
    with pytest.raises(IpuK8sError, match='ipu1 has a malformed mtu'):
        agree_rdma_networks({'ipu1': node(mtu='jumbo')})


def test_entry_with_malformed_vipu_address_is_refused():
    with pytest.raises(IpuK8sError, match='ipu1 has a malformed exclude or vipu_address'):
        agree_rdma_networks({'ipu1': node(vipu='vipu-ctrl')})


def test_mtu_given_as_text_is_accepted():
    result, _ = agree_rdma_networks({'ipu1': node(mtu='9000')})
    assert result['mtu'] == 9000
