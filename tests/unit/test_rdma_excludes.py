"""Own addresses excluded automatically, across nodes; the NVIDIA IPAM pool values."""

import ipaddress

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (IpuK8sError, agree_rdma_networks, exclude_own_addresses, exclude_ranges,
                          nv_ipam_block_size, nv_ipam_blocks)


def node(address, cidr='10.247.208.0/23', excludes=('10.247.208.0/25',), added=(), vipu='10.247.208.116'):
    return {'interface': 'rdma0', 'cidr': cidr, 'prefix': int(cidr.split('/')[1]), 'node_address': address,
            'mtu': 9000, 'excludes': sorted(set(excludes) | set(added)), 'excludes_added': list(added),
            'vipu_address': vipu}


def test_own_addresses_inside_the_excludes_add_nothing():
    assert exclude_own_addresses('10.247.208.0/23', ['10.247.208.0/25'], ['10.247.208.5', '10.247.208.127']) == (
        ['10.247.208.0/25'], [])


def test_own_addresses_outside_the_excludes_are_added_once_as_host_routes():
    excludes, added = exclude_own_addresses('10.247.208.0/23', ['10.247.208.0/25'],
                                            ['10.247.208.201', '10.247.209.7', '10.247.208.201'])
    assert excludes == ['10.247.208.0/25', '10.247.208.201/32', '10.247.209.7/32']
    assert added == ['10.247.208.201/32', '10.247.209.7/32']


def test_an_address_outside_the_subnet_is_refused():
    with pytest.raises(IpuK8sError, match='10.9.0.1 is not in the RDMA subnet 10.247.208.0/23'):
        exclude_own_addresses('10.247.208.0/23', [], ['10.9.0.1'])


def test_consensus_excludes_every_nodes_address_without_a_warning():
    networks = {'poplar-01': node('10.247.208.201', added=['10.247.208.201/32']),
                'poplar-02': node('10.247.209.10', added=['10.247.209.10/32'])}
    result, warnings = agree_rdma_networks(networks)
    assert result['excludes'] == ['10.247.208.0/25', '10.247.208.201/32', '10.247.209.10/32']
    assert warnings == []


def test_consensus_excludes_node_addresses_facts_left_out():
    # Facts from before the automatic exclusion: no excludes_added, node address outside.
    entry = node('10.247.208.201')
    del entry['excludes_added']
    result, warnings = agree_rdma_networks({'poplar-01': entry})
    assert result['excludes'] == ['10.247.208.0/25', '10.247.208.201/32']
    assert warnings == []


def test_consensus_still_warns_when_configured_excludes_differ():
    networks = {'a': node('10.247.208.201', excludes=['10.247.208.0/26'], added=['10.247.208.201/32']),
                'b': node('10.247.208.202', excludes=['10.247.208.0/25'], added=['10.247.208.202/32'])}
    _, warnings = agree_rdma_networks(networks)
    assert len(warnings) == 1 and 'different excludes' in warnings[0]


def test_adjacent_node_addresses_collapse():
    networks = {'a': node('10.247.208.200', added=['10.247.208.200/32']),
                'b': node('10.247.208.201', added=['10.247.208.201/32'])}
    result, _ = agree_rdma_networks(networks)
    assert result['excludes'] == ['10.247.208.0/25', '10.247.208.200/31']


def test_exclude_ranges_are_inclusive_and_merged_when_touching():
    assert exclude_ranges(['10.247.208.0/25', '10.247.208.128/32', '10.247.209.7/32']) == [
        {'startIP': '10.247.208.0', 'endIP': '10.247.208.128'},
        {'startIP': '10.247.209.7', 'endIP': '10.247.209.7'}]


def test_blocks_start_after_the_network_address_and_stop_before_broadcast():
    blocks = nv_ipam_blocks('10.0.0.0/29', 2)
    assert [(str(ipaddress.IPv4Address(a)), str(ipaddress.IPv4Address(b))) for a, b in blocks] == [
        ('10.0.0.1', '10.0.0.2'), ('10.0.0.3', '10.0.0.4'), ('10.0.0.5', '10.0.0.6')]


@pytest.mark.parametrize('cidr, excludes, nodes, expected', [
    # One node: one block over every host address.
    ('10.247.208.0/23', ['10.247.208.0/25'], 1, 510),
    # Two nodes on a /23 without its first /25: two blocks of 255, the first partly excluded.
    ('10.247.208.0/23', ['10.247.208.0/25'], 2, 255),
    # A /24 without its first /25 for three nodes: the first block must not be all excluded.
    ('10.247.208.0/24', ['10.247.208.0/25'], 3, 50),
])
def test_block_size_is_the_largest_that_serves_every_node(cidr, excludes, nodes, expected):
    assert nv_ipam_block_size(cidr, excludes, nodes) == expected


def test_given_block_size_that_starves_a_node_is_refused():
    with pytest.raises(IpuK8sError, match='rdma_network_nv_ipam_block_size 127 gives fewer than 2 blocks'):
        nv_ipam_block_size('10.247.208.0/24', ['10.247.208.0/25'], 2, 127)


def test_consensus_carries_the_nv_ipam_pool_only_when_asked():
    networks = {'a': node('10.247.208.201', added=['10.247.208.201/32'])}
    assert 'nv_ipam' not in agree_rdma_networks(networks)[0]
    result, _ = agree_rdma_networks(networks, 'nv-ipam')
    assert result['nv_ipam'] == {
        'exclusions': [{'startIP': '10.247.208.0', 'endIP': '10.247.208.127'},
                       {'startIP': '10.247.208.201', 'endIP': '10.247.208.201'}],
        'block_size': 510}


def test_unknown_ipam_is_refused():
    with pytest.raises(IpuK8sError, match="ipam 'dhcp'"):
        agree_rdma_networks({'a': node('10.247.208.201')}, 'dhcp')


@pytest.mark.parametrize('cidr, size, expected', [
    # /31 and /32 have no network or broadcast address to leave out.
    ('10.0.0.0/31', 1, [('10.0.0.0', '10.0.0.0'), ('10.0.0.1', '10.0.0.1')]),
    ('10.0.0.7/32', 1, [('10.0.0.7', '10.0.0.7')]),
    # A /30 gives its two host addresses; a block reaching the broadcast address is none.
    ('10.0.0.0/30', 1, [('10.0.0.1', '10.0.0.1'), ('10.0.0.2', '10.0.0.2')]),
    ('10.0.0.0/30', 3, []),
])
def test_blocks_of_the_smallest_subnets(cidr, size, expected):
    assert [(str(ipaddress.IPv4Address(a)), str(ipaddress.IPv4Address(b)))
            for a, b in nv_ipam_blocks(cidr, size)] == expected


def test_a_block_exactly_inside_an_exclude_does_not_count():
    # 10.0.0.0/29 in blocks of 1: .1 to .6; the block .1 is the whole exclude .1/32.
    assert nv_ipam_block_size('10.0.0.0/29', ['10.0.0.1/32'], 5, 1) == 1
    with pytest.raises(IpuK8sError) as refused:
        nv_ipam_block_size('10.0.0.0/29', ['10.0.0.1/32'], 6, 1)
    assert str(refused.value) == ('rdma_network_nv_ipam_block_size 1 gives fewer than 6 blocks with free addresses '
                                  'in 10.0.0.0/29 outside 10.0.0.1/32: use a smaller size, or 0 to compute it')
    # The last block, .6, ending exactly where an exclude ends, does not count either.
    assert nv_ipam_block_size('10.0.0.0/29', ['10.0.0.6/32'], 5, 1) == 1
    with pytest.raises(IpuK8sError):
        nv_ipam_block_size('10.0.0.0/29', ['10.0.0.6/32'], 6, 1)


@pytest.mark.parametrize('nodes, expected', [(5, 1), (3, 2), (2, 3), (1, 6)])
def test_computed_block_size_counts_the_blocks_an_exclude_leaves(nodes, expected):
    # Hosts .1 to .6 without .1: size 2 gives (.1-.2), (.3-.4), (.5-.6); size 3 (.1-.3), (.4-.6).
    assert nv_ipam_block_size('10.0.0.0/29', ['10.0.0.1/32'], nodes) == expected


def test_no_size_fits_and_no_nodes_are_refused_with_their_messages():
    with pytest.raises(IpuK8sError) as refused:
        nv_ipam_block_size('10.0.0.0/30', ['10.0.0.0/30'], 1)
    assert str(refused.value) == ('the RDMA subnet 10.0.0.0/30 outside 10.0.0.0/30 has too few free addresses '
                                  'for 1 IPU nodes')
    with pytest.raises(IpuK8sError) as refused:
        nv_ipam_block_size('10.0.0.0/29', [], 0)
    assert str(refused.value) == 'no IPU nodes to give NVIDIA IPAM blocks to'
    with pytest.raises(IpuK8sError) as refused:
        nv_ipam_block_size('10.0.0.0/29', [], 1, -1)
    assert str(refused.value).startswith('rdma_network_nv_ipam_block_size -1 gives fewer than 1 blocks')
