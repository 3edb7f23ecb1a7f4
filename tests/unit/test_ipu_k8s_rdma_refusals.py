"""plugins/module_utils/ipu_k8s_rdma.py: every refusal as the operator reads it, in full, and the
edges of the address, port, MTU and address-count rules. The messages are the promise (one
message naming the setting, the bad value and the fix), written out by hand here; the
quoted Python texts (ipaddress's, socket's) are what CPython prints."""

import ipaddress
import socket

import pytest

from iproute_json import addr_show, addr_show_all, route_get
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (
    IpuK8sError,
    agree_rdma_networks,
    compute_excludes,
    connected_network,
    derive_rdma_network,
    exclude_own_addresses,
    is_host_name,
    nv_ipam_block_size,
    parse_interface,
    parse_ip_json,
    parse_ipv4,
    parse_port,
    parse_vipu_server_version,
    refuse_down_interface,
    resolve_ipv4,
    split_address,
    vipu_address_from_environment,
)


def refusal(function, *args, **kwargs):
    with pytest.raises(IpuK8sError) as refused:
        function(*args, **kwargs)
    return str(refused.value)


# --- addresses and ports -------------------------------------------------------------------

def test_a_short_ipv4_is_refused_in_full():
    assert refusal(parse_ipv4, '10.1') == ("'10.1' is not a valid IPv4 address (expected four numbers 0-255, "
                                           "e.g. 10.5.212.116)")


LABEL_63 = 'a' * 63


@pytest.mark.parametrize('name, valid', [
    ('', False),
    (None, False),
    ('.'.join([LABEL_63] * 3) + '.' + 'a' * 61, True),    # 253 characters
    ('.'.join([LABEL_63] * 3) + '.' + 'a' * 62, False),   # 254 characters
    ('.'.join([LABEL_63] * 3) + '.' + 'a' * 63, False),   # 255 characters
    ('ipu-1', True),
    ('vipu.example.', True),           # a fully qualified name ends with a dot
    ('vipu.pod-1.', True),
    ('vipu-.example.', False),
    ('vipu..example', False),
])
def test_host_names(name, valid):
    assert is_host_name(name) is valid


def test_ports_from_1_to_65535_are_accepted():
    assert (parse_port(1), parse_port('65535'), parse_port('8090')) == (1, 65535, 8090)


@pytest.mark.parametrize('port, message', [
    (0, 'port 0 is out of range (1-65535)'),
    (65536, 'port 65536 is out of range (1-65535)'),
    ('0', 'port 0 is out of range (1-65535)'),
    (True, 'port must be a number from 1 to 65535, got True'),
    ('eighty', "port 'eighty' is not a number from 1 to 65535"),
])
def test_port_refusals_name_the_port(port, message):
    assert refusal(parse_port, port) == message


@pytest.mark.parametrize('text, message', [
    ('', 'address is empty: give an IPv4 address, a host name, or either with :port'),
    ('[vipu]:8090', "address '[vipu]:8090' looks like IPv6; the V-IPU controller must be given as an IPv4 address "
                    "or a host name, optionally with :port"),
    ('vipu:', "address 'vipu:' ends with ':' but has no port"),
    ('vipu:0', "address 'vipu:0' is malformed: port in address 0 is out of range (1-65535)"),
    ('10.1:8090', "address '10.1:8090' is malformed: '10.1' is not a valid IPv4 address (expected four numbers "
                  "0-255, e.g. 10.5.212.116)"),
    (':8090', "address ':8090' has a port but no host"),
    ('vipu!:8090', "address 'vipu!:8090' is malformed: 'vipu!' is neither an IPv4 address nor a valid host name"),
])
def test_address_refusals_in_full(text, message):
    assert refusal(split_address, text) == message


class Resolver(object):
    """socket.getaddrinfo's signature, answering from a list and recording what it was asked."""

    def __init__(self, answers=None, error=None):
        self.answers, self.error, self.asked = answers or [], error, []

    def __call__(self, *args):
        self.asked.append(args)
        if self.error:
            raise self.error
        return self.answers


def test_the_resolver_is_asked_for_ipv4_stream_addresses_and_ipv6_answers_are_skipped():
    resolver = Resolver([(socket.AF_INET6, socket.SOCK_STREAM, 6, '', ('fe80::1', 0, 0, 0)),
                         (socket.AF_INET, socket.SOCK_STREAM, 6, '', ('10.5.212.116', 0))])
    assert resolve_ipv4('vipu-ctrl', resolver) == '10.5.212.116'
    assert resolver.asked == [('vipu-ctrl', None, socket.AF_INET, socket.SOCK_STREAM)]


def test_resolver_refusals_in_full():
    error = socket.gaierror(socket.EAI_NONAME, 'Name or service not known')
    assert refusal(resolve_ipv4, 'vipu-gone', Resolver(error=error)) == (
        "cannot resolve 'vipu-gone' to an IPv4 address on this node ([Errno -2] Name or service not known): fix its "
        "DNS or /etc/hosts entry, or give the IPv4 address instead")
    assert refusal(resolve_ipv4, 'vipu6', Resolver([])) == (
        "'vipu6' has no IPv4 address on this node: give the IPv4 address instead")
    assert refusal(resolve_ipv4, '224.0.0.1') == (
        "'224.0.0.1' (224.0.0.1) is not a unicast address a V-IPU controller can have")


# --- the vipu CLI and the environment -------------------------------------------------------

NO_HOST = 'expected {"version": ..., "host": "ip:port"}. Output: '


@pytest.mark.parametrize('stdout, message', [
    (None, 'vipu --server-version --showjson printed nothing: is the vipu CLI configured for this node '
           '(IPUOF_VIPU_API_HOST, ~/.vipu.hcl)?'),
    ('  \n', 'vipu --server-version --showjson printed nothing: is the vipu CLI configured for this node '
             '(IPUOF_VIPU_API_HOST, ~/.vipu.hcl)?'),
    ('connection refused', 'vipu --server-version --showjson printed neither JSON nor "host: ..." lines; check the '
                           'vipu CLI on this node or pass the address explicitly. Output: connection refused'),
    ('[1, 2]', 'vipu --server-version --showjson printed JSON that is not an object; ' + NO_HOST + '[1, 2]'),
    ('{"version": "1.18.0"}', 'vipu --server-version --showjson gave no "host" (the V-IPU controller address); '
                              + NO_HOST + '{"version": "1.18.0"}'),
])
def test_vipu_cli_refusals_in_full(stdout, message):
    assert refusal(parse_vipu_server_version, stdout) == message


@pytest.mark.parametrize('environ, message', [
    ({'IPUOF_VIPU_API_HOST': 'vipu!'}, "IPUOF_VIPU_API_HOST 'vipu!' is malformed: 'vipu!' is neither an IPv4 "
                                       "address nor a valid host name"),
    ({'IPUOF_VIPU_API_HOST': '10.5.212.116:8090', 'IPUOF_VIPU_API_PORT': '8091'},
     'IPUOF_VIPU_API_HOST=10.5.212.116:8090 carries port 8090 but IPUOF_VIPU_API_PORT=8091: make them agree or '
     'drop one'),
])
def test_environment_refusals_name_the_variable(environ, message):
    assert refusal(vipu_address_from_environment, environ, 8090) == message


# --- what `ip -j` printed ---------------------------------------------------------------------

@pytest.mark.parametrize('stdout, message', [
    (None, '`ip -j route get 10.247.208.5` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 have it). '
           'Output: (no output)'),
    ('Usage: ip route', '`ip -j route get 10.247.208.5` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 '
                        'have it). Output: Usage: ip route'),
    ('{"dev": "rdma0"}', '`ip -j route get 10.247.208.5` printed JSON that is not a list. Output: {"dev": "rdma0"}'),
])
def test_ip_json_refusals_in_full(stdout, message):
    assert refusal(parse_ip_json, stdout, 'ip -j route get 10.247.208.5') == message


def link(ifname, mtu, addr_info, flags=('UP',)):
    return {'ifname': ifname, 'flags': list(flags), 'mtu': mtu, 'addr_info': addr_info}


INET = {'family': 'inet', 'local': '10.247.208.21', 'prefixlen': 23}
INET6 = {'family': 'inet6', 'local': 'fe80::1', 'prefixlen': 64}


def test_the_routed_interface_is_found_among_others_and_its_addresses_read():
    links = [link('mgmt0', 1500, []), link('rdma0', 9000, [INET6, {'family': 'inet', 'local': '10.247.210.1'},
                                                           INET])]
    assert parse_interface(links, 'rdma0') == (9000, [ipaddress.IPv4Interface('10.247.210.1/32'),
                                                      ipaddress.IPv4Interface('10.247.208.21/23')])


def test_an_mtu_of_1_is_usable():
    assert parse_interface([link('rdma0', 1, [INET])], 'rdma0')[0] == 1


@pytest.mark.parametrize('links, message', [
    ([link('mgmt0', 1500, [])], 'interface rdma0 (the route to the V-IPU controller) vanished while it was read'),
    ([link('rdma0', 0, [INET])], 'interface rdma0 reports no usable MTU: 0'),
    ([link('rdma0', True, [INET])], 'interface rdma0 reports no usable MTU: True'),
    ([link('rdma0', '9000', [INET])], "interface rdma0 reports no usable MTU: '9000'"),
])
def test_interface_refusals_in_full(links, message):
    assert refusal(parse_interface, links, 'rdma0') == message


def test_no_address_holding_the_controller_lists_the_interfaces_addresses():
    addresses = [ipaddress.IPv4Interface('10.0.0.1/24'), ipaddress.IPv4Interface('10.1.0.1/24')]
    assert refusal(connected_network, addresses, '10.247.208.5', 'rdma0') == (
        'the V-IPU address 10.247.208.5 is routed through rdma0, but rdma0 has 10.0.0.1/24, 10.1.0.1/24 and none of '
        'its subnets holds 10.247.208.5: give rdma0 an address in the V-IPU subnet')


MGMT = addr_show('mgmt0', 1500, '10.200.0.2/24')
DOWN = ('RDMA NIC rdma0 is down: it has 10.247.208.21/23, the subnet of the V-IPU address 10.247.208.5, but it is '
        'administratively down, so the kernel routes nothing through it. Bring it up (ip link set rdma0 up, and make '
        'it come up at boot in the netplan/ifupdown configuration), then run again')


def test_a_down_nic_holding_the_subnet_is_named_in_full():
    listing = addr_show_all(MGMT, addr_show('rdma0', 9000, '10.247.208.21/23', up=False))
    assert refusal(refuse_down_interface, lambda: listing, '10.247.208.5') == DOWN


def test_no_down_nic_or_no_listing_refuses_nothing():
    up = addr_show_all(MGMT, addr_show('rdma0', 9000, '10.247.208.21/23'))
    assert refuse_down_interface(lambda: up, '10.247.208.5') is None
    assert refuse_down_interface(None, '10.247.208.5') is None


def test_an_unreadable_interface_listing_is_refused_naming_the_command():
    assert refusal(refuse_down_interface, lambda: 'Usage: ip address', '10.247.208.5') == (
        '`ip -j -4 addr show` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 have it). Output: '
        'Usage: ip address')


# --- derive_rdma_network ----------------------------------------------------------------------

def interface_reader(*interfaces, mtu=9000):
    return lambda device: addr_show(device, mtu, *interfaces)


def test_a_gateway_route_with_the_rdma_nic_down_names_the_nic():
    listing = addr_show_all(MGMT, addr_show('rdma0', 9000, '10.247.208.21/23', up=False))
    route = route_get('10.247.208.5', 'mgmt0', '10.200.0.2', gateway='10.200.0.1')
    assert refusal(derive_rdma_network, route, interface_reader(), '10.247.208.5',
                   read_all_interfaces=lambda: listing) == DOWN


@pytest.mark.parametrize('route, reader, message', [
    ('Usage: ip route', interface_reader('10.247.208.21/23'),
     '`ip -j route get 10.247.208.5` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 have it). '
     'Output: Usage: ip route'),
    (route_get('10.247.208.5', 'rdma0', '10.247.208.21'), lambda device: 'Usage: ip address',
     '`ip -j addr show dev rdma0` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 have it). '
     'Output: Usage: ip address'),
])
def test_unreadable_ip_output_names_the_command(route, reader, message):
    assert refusal(derive_rdma_network, route, reader, '10.247.208.5') == message


def test_the_broadcast_address_of_a_30_is_refused_in_full():
    assert refusal(derive_rdma_network, route_get('10.0.0.3', 'rdma0', '10.0.0.1'), interface_reader('10.0.0.1/30'),
                   '10.0.0.3', 32) == ("the V-IPU address 10.0.0.3 is the network or broadcast address of 10.0.0.0/30 "
                                       "on rdma0: give the V-IPU controller's address")


def test_a_31_has_no_network_or_broadcast_address_but_no_room_for_pods():
    # RFC 3021: both addresses of a /31 are hosts; here the controller and the node hold them.
    assert refusal(derive_rdma_network, route_get('10.0.0.0', 'rdma0', '10.0.0.1'), interface_reader('10.0.0.1/31'),
                   '10.0.0.0', 32) == (
        'the excludes 10.0.0.0/32, with the V-IPU controller and IPU node addresses, leave no address of the RDMA '
        'subnet 10.0.0.0/31 for pods: shrink ipu_k8s_rdma_excludes or raise ipu_k8s_rdma_exclude_prefix')


# --- excludes ----------------------------------------------------------------------------------

@pytest.mark.parametrize('network, prefix, excludes, message', [
    ('10.247.208.0/23', 25, ['10.247.208.1/25'],
     "exclude '10.247.208.1/25' is not an IPv4 CIDR with its host bits zero (10.247.208.1/25 has host bits set): "
     "write it like 10.247.208.0/25"),
    ('10.247.208.0/23', 25, ['10.9.0.0/25'],
     'exclude 10.9.0.0/25 is not inside the RDMA subnet 10.247.208.0/23: use ranges of 10.247.208.0/23 only '
     '(ipu_k8s_rdma_excludes)'),
    ('10.247.208.0/23', 40, None, 'exclude_prefix 40 is not a prefix length (1-32)'),
    ('10.247.208.0/23', 0, None, 'exclude_prefix 0 is not a prefix length (1-32)'),
    ('10.247.208.0/23', 1, None,
     'the RDMA subnet 10.247.208.0/23 is not larger than the /1 to exclude from it (the first /1 is kept for IPU '
     'infrastructure): raise ipu_k8s_rdma_exclude_prefix above 23, or list the ranges to exclude in '
     'ipu_k8s_rdma_excludes'),
    ('10.61.0.0/26', 25, None,
     'the RDMA subnet 10.61.0.0/26 is not larger than the /25 to exclude from it (the first /25 is kept for IPU '
     'infrastructure): raise ipu_k8s_rdma_exclude_prefix above 26, or list the ranges to exclude in '
     'ipu_k8s_rdma_excludes'),
])
def test_exclude_refusals_in_full(network, prefix, excludes, message):
    assert refusal(compute_excludes, network, prefix, excludes) == message


def test_an_exclude_prefix_of_1_is_a_prefix_length():
    assert compute_excludes('0.0.0.0/0', 1) == ['0.0.0.0/1']


def test_an_own_address_outside_the_subnet_is_refused_in_full():
    assert refusal(exclude_own_addresses, '10.247.208.0/23', ['10.247.208.0/25'], ['10.9.0.1']) == (
        'address 10.9.0.1 is not in the RDMA subnet 10.247.208.0/23, so it cannot be excluded from it: every IPU '
        'node and the V-IPU controller must be on that subnet')


# Pod addresses left: the subnet's host addresses (its network and broadcast address not
# counted up to /30; both addresses of a /31 and the one of a /32 are hosts) outside the
# excludes and the own addresses, counted by hand.
@pytest.mark.parametrize('network, excludes, addresses, left', [
    ('10.0.0.0/29', ['10.0.0.0/30', '10.0.0.4/31'], [], '10.0.0.6'),
    ('10.0.0.0/29', ['10.0.0.0/31', '10.0.0.4/30'], ['10.0.0.2'], '10.0.0.3'),
    ('10.0.0.0/29', ['10.0.0.0/30', '10.0.0.7/32'], ['10.0.0.4', '10.0.0.5'], '10.0.0.6'),
    ('10.0.0.0/31', ['10.0.0.0/32'], [], '10.0.0.1'),
    ('10.0.0.0/30', ['10.0.0.0/32'], ['10.0.0.1'], '10.0.0.2'),
])
def test_one_address_left_for_pods_is_enough(network, excludes, addresses, left):
    kept, _added = exclude_own_addresses(network, excludes, addresses)
    free = [str(a) for a in ipaddress.IPv4Network(network)
            if not any(a in ipaddress.IPv4Network(e) for e in kept)]
    assert left in free


@pytest.mark.parametrize('network, excludes, addresses, shown', [
    ('10.0.0.0/29', ['10.0.0.0/30', '10.0.0.4/31'], ['10.0.0.6'], '10.0.0.0/30, 10.0.0.4/31'),
    ('10.0.0.0/31', ['10.0.0.1/32'], ['10.0.0.0'], '10.0.0.1/32'),
    ('10.0.0.0/30', ['10.0.0.2/32'], ['10.0.0.1'], '10.0.0.2/32'),
])
def test_no_address_left_for_pods_is_refused_in_full(network, excludes, addresses, shown):
    assert refusal(exclude_own_addresses, network, excludes, addresses) == (
        'the excludes %s, with the V-IPU controller and IPU node addresses, leave no address of the RDMA subnet %s '
        'for pods: shrink ipu_k8s_rdma_excludes or raise ipu_k8s_rdma_exclude_prefix' % (shown, network))


# --- NVIDIA IPAM blocks ---------------------------------------------------------------------------

def test_a_31_gives_one_node_a_block_of_both_addresses():
    assert nv_ipam_block_size('10.0.0.0/31', [], 1) == 2


def test_nv_ipam_refusals_list_every_exclude():
    assert refusal(nv_ipam_block_size, '10.0.0.0/24', ['10.0.0.0/26', '10.0.0.128/26'], 2, 256) == (
        'rdma_network_nv_ipam_block_size 256 gives fewer than 2 blocks with free addresses in 10.0.0.0/24 outside '
        '10.0.0.0/26, 10.0.0.128/26: use a smaller size, or 0 to compute it')
    # blocks of 1: 10.0.0.1 and 10.0.0.2, each inside an exclude; one block of 2 serves one node only
    assert refusal(nv_ipam_block_size, '10.0.0.0/30', ['10.0.0.0/31', '10.0.0.2/32'], 2) == (
        'the RDMA subnet 10.0.0.0/30 outside 10.0.0.0/31, 10.0.0.2/32 has too few free addresses for 2 IPU nodes')


# --- agreement across nodes -------------------------------------------------------------------------

def node(address='10.247.208.21', **changes):
    entry = {'interface': 'rdma0', 'cidr': '10.247.208.0/23', 'mtu': 9000, 'excludes': ['10.247.208.0/25'],
             'vipu_address': '10.247.208.5', 'node_address': address}
    entry.update(changes)
    return entry


@pytest.mark.parametrize('entry, message', [
    ('10.247.208.0/23', "the RDMA network of ipu1 is not a dict ('10.247.208.0/23'): pass the rdma_network fact "
                        "that rdma_network_facts returned"),
    (node(interface=''), 'the RDMA network of ipu1 lacks interface: did rdma_network_facts run on it?'),
    (node(cidr='x'), "the RDMA network of ipu1 has a malformed cidr 'x' (Expected 4 octets in 'x')"),
    (node(mtu=0), 'the RDMA network of ipu1 has a malformed mtu 0'),
    (node(mtu=True), 'the RDMA network of ipu1 has a malformed mtu True'),
    (node(excludes='10.247.208.0/25'),
     "the RDMA network of ipu1 has excludes that are not a list: '10.247.208.0/25'"),
    (node(excludes=['bad']),
     "the RDMA network of ipu1 has a malformed exclude or vipu_address (Expected 4 octets in 'bad')"),
    (node(node_address='bad'),
     "the RDMA network of ipu1 has a malformed excludes_added or node_address (Expected 4 octets in 'bad')"),
])
def test_entry_refusals_in_full(entry, message):
    assert refusal(agree_rdma_networks, {'ipu1': entry}) == message


def test_an_entry_without_a_node_address_and_an_mtu_of_1_is_accepted():
    entry = node(mtu=1)
    del entry['node_address']
    network, warnings = agree_rdma_networks({'ipu1': entry})
    assert (network['mtu'], network['excludes'], warnings) == (1, ['10.247.208.0/25'], [])


@pytest.mark.parametrize('networks, ipam, message', [
    ({'ipu1': node()}, 'dhcp', "ipam 'dhcp' is not one this project renders: whereabouts or nv-ipam"),
    ({}, 'whereabouts', 'no RDMA network to agree on: networks is empty. Is the ipu_nodes group empty, or did '
                        'rdma_network_facts not run on those nodes?'),
    ({'ipu1': node(), 'ipu2': node('10.0.0.2', cidr='10.0.0.0/24', interface='ens1f0', vipu_address='10.0.0.5',
                                   excludes=['10.0.0.0/25'])}, 'whereabouts',
     'IPU nodes disagree, and one MacvlanNetwork cannot serve them all: the RDMA subnet differs: 10.0.0.0/24 on '
     'ipu2; 10.247.208.0/23 on ipu1; the RDMA interface differs: ens1f0 on ipu2; rdma0 on ipu1. Every IPU node must '
     'reach the V-IPU controller through the same interface name on the same subnet (pin ipu_k8s_rdma_interface, '
     'fix the addresses, or split the nodes into separate clusters)'),
])
def test_agreement_refusals_in_full(networks, ipam, message):
    assert refusal(agree_rdma_networks, networks, ipam) == message


def test_different_excludes_warn_with_their_whole_union():
    network, warnings = agree_rdma_networks({'ipu1': node(), 'ipu2': node('10.247.208.22',
                                                                          excludes=['10.247.209.0/26'])})
    assert network['excludes'] == ['10.247.208.0/25', '10.247.209.0/26']
    assert warnings == ['IPU nodes computed different excludes; using their union 10.247.208.0/25, 10.247.209.0/26']

