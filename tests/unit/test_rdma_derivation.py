"""Deriving the RDMA interface, subnet, MTU and excludes from the kernel's answers."""

import ipaddress

import pytest
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (IpuK8sError, check_route, compute_excludes, connected_network, derive_rdma_network,
                          down_interface_holding)
from iproute_json import addr_show, route_get


def derive(route, addr, address, **kwargs):
    """derive_rdma_network with addr as the answer for whichever device the route names."""
    asked = []

    def read_interface(device):
        asked.append(device)
        return addr

    return derive_rdma_network(route, read_interface, address, **kwargs), asked


@pytest.mark.parametrize('node, vipu, cidr, excludes', [
    ('10.5.212.20/22', '10.5.212.116', '10.5.212.0/22', ['10.5.212.0/25']),
    ('10.247.208.21/23', '10.247.208.5', '10.247.208.0/23', ['10.247.208.0/25']),
    ('10.193.242.30/24', '10.193.242.7', '10.193.242.0/24', ['10.193.242.0/25']),
])
def test_subnet_has_the_interfaces_real_prefix(node, vipu, cidr, excludes):
    node_ip = node.split('/')[0]
    result, _ = derive(route_get(vipu, 'ens1f0', node_ip), addr_show('ens1f0', 9000, node), vipu)
    assert result == {
        'interface': 'ens1f0', 'cidr': cidr, 'prefix': int(cidr.split('/')[1]), 'node_address': node_ip,
        'mtu': 9000, 'excludes': excludes, 'excludes_added': [], 'vipu_address': vipu,
    }


def test_address_in_upper_half_of_a_23_gets_the_23_not_a_24():
    # ipcalc -b 10.247.209.200 would say 10.247.209.0/24 and exclude 10.247.209.0/25.
    result, _ = derive(route_get('10.247.209.200', 'ens1f0', '10.247.208.21'),
                          addr_show('ens1f0', 9000, '10.247.208.21/23'), '10.247.209.200')
    assert (result['cidr'], result['excludes']) == ('10.247.208.0/23', ['10.247.208.0/25', '10.247.209.200/32'])


def test_mtu_comes_from_the_interface():
    result, _ = derive(route_get('10.193.242.7', 'rdma2', '10.193.242.30'),
                          addr_show('rdma2', 1500, '10.193.242.30/24'), '10.193.242.7')
    assert result['mtu'] == 1500


def test_interface_address_is_read_for_the_routed_device():
    _, asked = derive(route_get('10.193.242.7', 'ens2f1np1', '10.193.242.30'),
                         addr_show('ens2f1np1', 1500, '10.193.242.30/24'), '10.193.242.7')
    assert asked == ['ens2f1np1']


def test_25_subnet_is_refused_with_the_default_exclude():
    with pytest.raises(IpuK8sError, match=r'10.60.0.0/25 is not larger than the /25'):
        derive(route_get('10.60.0.5', 'rdma3', '10.60.0.10'), addr_show('rdma3', 9000, '10.60.0.10/25'), '10.60.0.5')


def test_26_subnet_is_refused_with_the_default_exclude():
    with pytest.raises(IpuK8sError, match=r'10.61.0.0/26 is not larger than the /25.*ipu_k8s_rdma_exclude_prefix'):
        derive(route_get('10.61.0.5', 'rdma4', '10.61.0.10'), addr_show('rdma4', 9000, '10.61.0.10/26'), '10.61.0.5')


def test_25_subnet_excludes_its_first_26_when_asked():
    result, _ = derive(route_get('10.60.0.5', 'rdma3', '10.60.0.10'),
                          addr_show('rdma3', 9000, '10.60.0.10/25'), '10.60.0.5', exclude_prefix=26)
    assert (result['cidr'], result['excludes']) == ('10.60.0.0/25', ['10.60.0.0/26'])


def test_gateway_routed_address_is_refused():
    with pytest.raises(IpuK8sError, match=r'10.99.0.5 is reached through gateway 10.200.0.1 on mgmt0'):
        derive(route_get('10.99.0.5', 'mgmt0', '10.200.0.2', gateway='10.200.0.1'),
               addr_show('mgmt0', 1500, '10.200.0.2/24'), '10.99.0.5')


def test_gateway_routed_address_is_refused_before_reading_the_interface():
    asked = []
    with pytest.raises(IpuK8sError, match='gateway'):
        derive_rdma_network(route_get('10.99.0.5', 'mgmt0', gateway='10.200.0.1'), asked.append, '10.99.0.5')
    assert asked == []


def test_nodes_own_address_is_refused():
    with pytest.raises(IpuK8sError, match=r'10.247.208.21 cannot be used.*address of this node itself.*via lo'):
        derive(route_get('10.247.208.21', 'lo', '10.247.208.21', route_type='local'), '[]', '10.247.208.21')


def test_broadcast_address_is_refused():
    with pytest.raises(IpuK8sError, match='broadcast address'):
        derive(route_get('10.5.215.255', 'rdma1', '10.5.212.20', route_type='broadcast'), '[]', '10.5.215.255')


def test_subnet_network_address_is_refused():
    with pytest.raises(IpuK8sError, match='network or broadcast address of 10.5.212.0/22'):
        derive(route_get('10.5.212.0', 'rdma1', '10.5.212.20'), addr_show('rdma1', 9000, '10.5.212.20/22'), '10.5.212.0')


def test_empty_route_answer_is_refused_as_no_route():
    with pytest.raises(IpuK8sError, match='no route to the V-IPU address 10.9.9.9'):
        derive('[]', '[]', '10.9.9.9')


def test_non_json_route_answer_is_refused_showing_it():
    with pytest.raises(IpuK8sError, match='did not print JSON.*10.9.9.9 dev eth0'):
        derive('10.9.9.9 dev eth0 src 10.9.9.1 uid 0', '[]', '10.9.9.9')


def test_pinned_interface_that_matches_the_route_is_accepted():
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'),
                          addr_show('rdma0', 9000, '10.247.208.21/23'), '10.247.208.5', interface='rdma0')
    assert result['interface'] == 'rdma0'


def test_pinned_interface_that_disagrees_with_the_route_is_refused():
    with pytest.raises(IpuK8sError, match=r'10.247.208.5 is routed through rdma0, but the RDMA interface is pinned to ens1f0'):
        derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'),
               addr_show('rdma0', 9000, '10.247.208.21/23'), '10.247.208.5', interface='ens1f0')


def test_on_link_route_without_an_address_in_the_subnet_is_refused():
    # `ip route add 10.247.208.0/23 dev rdma0` on an interface with no address there.
    with pytest.raises(IpuK8sError, match=r'rdma0 has 10.31.7.21/24 and none of its subnets holds 10.247.208.5'):
        derive(route_get('10.247.208.5', 'rdma0', '10.31.7.21'), addr_show('rdma0', 9000, '10.31.7.21/24'), '10.247.208.5')


def test_interface_without_ipv4_is_refused():
    with pytest.raises(IpuK8sError, match='rdma0 has no IPv4 address'):
        derive(route_get('10.247.208.5', 'rdma0'), addr_show('rdma0', 9000), '10.247.208.5')


def test_the_address_whose_subnet_holds_the_vipu_is_chosen_among_several():
    addr = addr_show('rdma0', 9000, '10.31.7.21/24', '10.247.208.21/23')
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'), addr, '10.247.208.5')
    assert (result['cidr'], result['node_address']) == ('10.247.208.0/23', '10.247.208.21')


def test_the_most_specific_subnet_wins_when_several_hold_the_address():
    addr = addr_show('rdma0', 9000, '10.247.208.21/22', '10.247.208.40/24')
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.208.40'), addr, '10.247.208.5')
    assert (result['cidr'], result['node_address']) == ('10.247.208.0/24', '10.247.208.40')


def test_the_routes_source_address_wins_among_equal_subnets():
    addr = addr_show('rdma0', 9000, '10.247.208.21/23', '10.247.208.22/23')
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.208.22'), addr, '10.247.208.5')
    assert result['node_address'] == '10.247.208.22'


def test_explicit_excludes_replace_the_computed_one():
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'),
                          addr_show('rdma0', 9000, '10.247.208.21/23'), '10.247.208.5',
                          excludes=['10.247.209.0/28', '10.247.208.0/26'])
    assert result['excludes'] == ['10.247.208.0/26', '10.247.209.0/28']


def test_explicit_exclude_outside_the_subnet_is_refused():
    with pytest.raises(IpuK8sError, match=r'exclude 10.9.0.0/25 is not inside the RDMA subnet 10.247.208.0/23'):
        derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'), addr_show('rdma0', 9000, '10.247.208.21/23'),
               '10.247.208.5', excludes=['10.9.0.0/25'])


def test_explicit_exclude_larger_than_the_subnet_is_refused():
    with pytest.raises(IpuK8sError, match='not inside the RDMA subnet'):
        compute_excludes('10.247.208.0/24', excludes=['10.247.208.0/23'])


def test_explicit_exclude_with_host_bits_is_refused_with_a_suggestion():
    with pytest.raises(IpuK8sError, match='write it like 10.247.208.0/25'):
        compute_excludes('10.247.208.0/23', excludes=['10.247.208.5/25'])


def test_explicit_excludes_covering_the_whole_subnet_are_refused():
    with pytest.raises(IpuK8sError, match='the excludes 10.247.208.0/25, 10.247.208.128/25, with the V-IPU controller '
                                          'and IPU node addresses, leave no address of the RDMA subnet 10.247.208.0/24'):
        derive(route_get('10.247.208.5', 'rdma0', '10.247.208.21'), addr_show('rdma0', 9000, '10.247.208.21/24'),
               '10.247.208.5', excludes=['10.247.208.0/25', '10.247.208.128/25'])


@pytest.mark.parametrize('prefix', [0, 33])
def test_exclude_prefix_outside_1_to_32_is_refused(prefix):
    with pytest.raises(IpuK8sError, match='not a prefix length'):
        compute_excludes('10.247.208.0/23', exclude_prefix=prefix)


def test_exclude_prefix_32_excludes_one_address():
    assert compute_excludes('10.247.208.0/23', exclude_prefix=32) == ['10.247.208.0/32']


def test_vipu_address_outside_the_excludes_is_excluded():
    result, _ = derive(route_get('10.247.209.200', 'rdma0', '10.247.208.21'),
                                 addr_show('rdma0', 9000, '10.247.208.21/23'), '10.247.209.200')
    assert result['excludes'] == ['10.247.208.0/25', '10.247.209.200/32']
    assert result['excludes_added'] == ['10.247.209.200/32']


def test_node_address_outside_the_excludes_is_excluded():
    result, _ = derive(route_get('10.247.208.5', 'rdma0', '10.247.209.21'),
                                 addr_show('rdma0', 9000, '10.247.209.21/23'), '10.247.208.5')
    assert result['excludes'] == ['10.247.208.0/25', '10.247.209.21/32']
    assert result['excludes_added'] == ['10.247.209.21/32']


def test_both_own_addresses_outside_explicit_excludes_are_added():
    result, _ = derive(route_get('10.247.209.200', 'rdma0', '10.247.209.21'),
                          addr_show('rdma0', 9000, '10.247.209.21/23'), '10.247.209.200',
                          excludes=['10.247.208.0/26'])
    assert result['excludes'] == ['10.247.208.0/26', '10.247.209.21/32', '10.247.209.200/32']


def test_own_addresses_that_would_leave_no_pod_address_are_refused():
    # A /30 has two host addresses: the node and the controller take both.
    with pytest.raises(IpuK8sError, match='leave no address of the RDMA subnet 10.60.0.0/30 for pods'):
        derive(route_get('10.60.0.1', 'rdma0', '10.60.0.2'), addr_show('rdma0', 9000, '10.60.0.2/30'), '10.60.0.1',
               exclude_prefix=32)


def test_the_down_interface_is_found_past_up_ones_and_other_addresses():
    """`ip -j addr show` with an up NIC first, then a down one whose first address is IPv6
    and whose second is in another subnet: the third holds the V-IPU address."""
    links = [
        {'ifname': 'eth0', 'flags': ['BROADCAST', 'UP'],
         'addr_info': [{'family': 'inet', 'local': '10.247.208.9', 'prefixlen': 23}]},
        'not a link',
        {'ifname': 'ens1f0', 'flags': ['BROADCAST'],
         'addr_info': [{'family': 'inet6', 'local': 'fe80::1', 'prefixlen': 64},
                       {'family': 'inet', 'local': '192.0.2.1', 'prefixlen': 24},
                       {'family': 'inet', 'local': '10.247.208.21', 'prefixlen': 23}]},
    ]
    assert down_interface_holding(links, '10.247.208.5') == ('ens1f0', '10.247.208.21/23')
    assert down_interface_holding(links, '198.51.100.1') is None
    # An address without its prefix length is a /32: it holds only itself.
    lone = [{'ifname': 'ens2', 'flags': [], 'addr_info': [{'family': 'inet', 'local': '10.0.0.1'}]}]
    assert down_interface_holding(lone, '10.0.0.1') == ('ens2', '10.0.0.1/32')
    assert down_interface_holding(lone, '10.0.0.2') is None


@pytest.mark.parametrize('bad, suggested', [
    # The network of the address given, with its prefix (by hand: .77 is in .64/26).
    ('10.5.212.77/26', '10.5.212.64/26'),
    # Nothing to go on: an example of the form.
    ('nonsense', '10.247.208.0/25'),
])
def test_the_suggestion_for_an_exclude_with_host_bits_is_its_network(bad, suggested):
    with pytest.raises(IpuK8sError) as refused:
        compute_excludes('10.5.212.0/24', excludes=[bad])
    assert str(refused.value).endswith('write it like %s' % suggested)


V = '10.247.208.5'


@pytest.mark.parametrize('routes, interface, message', [
    ([], None, "the kernel has no route to the V-IPU address 10.247.208.5: give this node an address in the "
               "V-IPU controller's subnet on its RDMA NIC"),
    (['not a route'], None, "the kernel has no route to the V-IPU address 10.247.208.5: give this node an "
                            "address in the V-IPU controller's subnet on its RDMA NIC"),
    ([{'type': 'local', 'dev': 'lo'}], None,
     "the V-IPU address 10.247.208.5 cannot be used on this node: it is an address of this node itself "
     "(route type local via lo). Give the V-IPU controller's address, not one of this node's"),
    ([{'type': 'blackhole'}], None,
     "the V-IPU address 10.247.208.5 cannot be used on this node: a blackhole route discards traffic to it "
     "(route type blackhole via no interface). Give the V-IPU controller's address, not one of this node's"),
    ([{'type': 'strange', 'dev': 'rdma0'}], None,
     'the kernel routes the V-IPU address 10.247.208.5 with an unexpected route type strange'),
    ([{'dev': 'eth0', 'gateway': '10.0.0.1'}], None,
     'the V-IPU address 10.247.208.5 is reached through gateway 10.0.0.1 on eth0, not on a directly connected '
     'subnet: pods on the MACVLAN network must share an L2 subnet with the V-IPU controller. Give this '
     "node's RDMA NIC an address in that subnet, or check that 10.247.208.5 is the right V-IPU address"),
    ([{'dev': 'eth0', 'via': {'family': 'inet', 'host': '10.0.0.2'}}], None,
     'the V-IPU address 10.247.208.5 is reached through gateway 10.0.0.2 on eth0, not on a directly connected '
     'subnet: pods on the MACVLAN network must share an L2 subnet with the V-IPU controller. Give this '
     "node's RDMA NIC an address in that subnet, or check that 10.247.208.5 is the right V-IPU address"),
    ([{'type': 'unicast', 'dst': V}], None,
     'the kernel route to the V-IPU address 10.247.208.5 names no interface: {"type": "unicast", "dst": '
     '"10.247.208.5"}'),
    ([{'dev': 'rdma1'}], 'rdma0',
     'the V-IPU address 10.247.208.5 is routed through rdma1, but the RDMA interface is pinned to rdma0 '
     '(ipu_k8s_rdma_interface): check that rdma0 is up and has an address in the V-IPU subnet, or unpin it'),
])
def test_each_route_refusal_says_exactly_what_and_what_to_do(routes, interface, message):
    with pytest.raises(IpuK8sError) as refused:
        check_route(routes, V, interface)
    assert str(refused.value) == message


def test_a_direct_route_gives_its_device_and_source():
    assert check_route([{'dev': 'rdma0', 'prefsrc': '10.247.208.21', 'type': 'unicast'}], V, 'rdma0') == \
        ('rdma0', '10.247.208.21')
    assert check_route([{'dev': 'rdma0', 'gateway': ''}], V) == ('rdma0', None)


def test_the_connected_address_is_the_most_specific_then_the_first_without_a_preferred_source():
    addresses = [ipaddress.IPv4Interface(a) for a in ('10.247.208.21/23', '10.247.208.22/23', '10.31.7.21/24')]
    assert connected_network(addresses, V, 'rdma0') == ipaddress.IPv4Interface('10.247.208.21/23')
    assert connected_network(addresses, V, 'rdma0', '10.247.208.22') == ipaddress.IPv4Interface('10.247.208.22/23')
    # The subnet closest to the V-IPU address wins over the route's preferred source on a wider one.
    nested = [ipaddress.IPv4Interface(a) for a in ('10.247.208.22/22', '10.247.208.21/24')]
    assert connected_network(nested, V, 'rdma0', '10.247.208.22') == ipaddress.IPv4Interface('10.247.208.21/24')
    with pytest.raises(IpuK8sError) as refused:
        connected_network(addresses[2:], V, 'rdma0')
    assert str(refused.value) == ('the V-IPU address 10.247.208.5 is routed through rdma0, but rdma0 has '
                                  '10.31.7.21/24 and none of its subnets holds 10.247.208.5: give rdma0 an address '
                                  'in the V-IPU subnet')
    with pytest.raises(IpuK8sError, match='but rdma0 has no IPv4 address and none'):
        connected_network([], V, 'rdma0')


def test_an_exclude_with_whitespace_around_it_is_refused_not_stripped():
    with pytest.raises(IpuK8sError) as refusal:
        compute_excludes('10.247.208.0/23', excludes=['10.247.208.0/25\n'])
    assert str(refusal.value) == "exclude '10.247.208.0/25\\n' has whitespace around it: write 10.247.208.0/25"
