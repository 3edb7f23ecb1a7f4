# -*- coding: utf-8 -*-
"""Pure logic shared by the ipu-k8s node module (rdma_network_facts) and the
site model (ipu_k8s_vipu_controllers.py).

Nothing here imports Ansible or runs a command: the modules run `ip` and `vipu`
and hand their output to these functions, so every rule (address forms, what the
V-IPU CLI prints, which routes are acceptable, which subnet and exclude follow,
when nodes agree) is unit-tested without a host. Standard library only (target
nodes have just python3); IPv4 only, like the Whereabouts range it feeds.

Every refusal raises IpuK8sError with a message an operator can act on.
"""

import ipaddress
import json
import re
import socket

# The V-IPU controller's port and the IPU node label when nothing else gives them. Modules
# and filters import these; the roles' defaults (ipu_k8s_vipu_default_port,
# ipu_k8s_ipu_node_label) hold the same values for the inventory.
DEFAULT_VIPU_PORT = 8090
DEFAULT_IPU_NODE_LABEL = 'ipunode=true'
DEFAULT_EXCLUDE_PREFIX = 25
VIPU_ENV_HOST = 'IPUOF_VIPU_API_HOST'
VIPU_ENV_PORT = 'IPUOF_VIPU_API_PORT'

# How much of a command's output goes into an error message.
_OUTPUT_LIMIT = 2000

# Matched in full (fullmatch): a '$' anchor would let a trailing newline through.
_DOTTED_NUMBERS = re.compile(r'[0-9]+(\.[0-9]+)*')
_OCTET = re.compile(r'0|[1-9][0-9]{0,2}')
_HOST_LABEL = re.compile(r'[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?')

# Route types `ip route get` may report besides unicast, and what they mean here.
_ROUTE_TYPE_REASONS = {
    'local': 'it is an address of this node itself',
    'broadcast': 'it is a broadcast address',
    'multicast': 'it is a multicast address',
    'anycast': 'it is an anycast address of this node',
    'blackhole': 'a blackhole route discards traffic to it',
    'unreachable': 'an unreachable route rejects traffic to it',
    'prohibit': 'a prohibit route rejects traffic to it',
    'throw': 'a throw route leaves no usable route to it',
    'nat': 'it is covered by a NAT route',
}


class IpuK8sError(ValueError):
    """A refusal: the message says what is wrong and what to do about it."""


def show_output(text):
    """Command output quoted for an error message (trimmed, never empty)."""
    text = (text or '').strip()
    if not text:
        return '(no output)'
    if len(text) > _OUTPUT_LIMIT:
        text = text[:_OUTPUT_LIMIT] + ' ... (truncated)'
    return text


# --- addresses -------------------------------------------------------------------------

def padding_problem(value):
    """'' unless value is text with whitespace around it (a line break a YAML block scalar or a
    file read leaves, a space from quoting), else what is wrong and the fix. Such a value is
    refused, not stripped: the same text reaches other readers (templates, the operators'
    objects) as it is written."""
    if isinstance(value, str) and value.strip() and value != value.strip():
        return 'has whitespace around it: write %s' % value.strip()
    return ''


def unpadded(text, what='value'):
    """str(text), refused with IpuK8sError naming what and the value (repr) when whitespace
    surrounds it (padding_problem)."""
    problem = padding_problem(text)
    if problem:
        raise IpuK8sError('%s %r %s' % (what, text, problem))
    return str(text)


def parse_ipv4(text):
    """A strict dotted-quad IPv4 address (no shortened forms, no leading zeros).

    Raises IpuK8sError for anything else, so '10.1' or '010.0.0.1' never reach a
    resolver that would turn them into some other address.
    """
    parts = text.split('.')
    if len(parts) != 4 or not all(_OCTET.fullmatch(p) and int(p) <= 255 for p in parts):
        raise IpuK8sError("'%s' is not a valid IPv4 address (expected four numbers 0-255, e.g. 10.5.212.116)" % text)
    return ipaddress.IPv4Address(text)


def is_host_name(text):
    """True when text is a syntactically valid host name (RFC 1123 labels, '_' tolerated)."""
    if not text or len(text) > 253:
        return False
    labels = text[:-1].split('.') if text.endswith('.') else text.split('.')
    return all(_HOST_LABEL.fullmatch(label) for label in labels)


def parse_port(text, what='port'):
    """A TCP port from an int or a decimal string; IpuK8sError unless 1..65535."""
    if isinstance(text, bool):
        raise IpuK8sError('%s must be a number from 1 to 65535, got %r' % (what, text))
    if isinstance(text, int):
        port = text
    else:
        text = unpadded(text, what)
        if not text.isdigit():
            raise IpuK8sError("%s '%s' is not a number from 1 to 65535" % (what, text))
        port = int(text)
    if not 1 <= port <= 65535:
        raise IpuK8sError('%s %d is out of range (1-65535)' % (what, port))
    return port


def split_address(text, what='address'):
    """Split 'host' or 'host:port' into (host, port or None).

    host is either a valid IPv4 address (returned in canonical form) or a valid host
    name (returned as given). IPv6 is refused: the RDMA network and the V-IPU
    controller address are IPv4.
    """
    if text is None or not str(text).strip():
        raise IpuK8sError('%s is empty: give an IPv4 address, a host name, or either with :port' % what)
    text = unpadded(text, what)
    if text.startswith('[') or text.count(':') > 1:
        raise IpuK8sError("%s '%s' looks like IPv6; the V-IPU controller must be given as an IPv4 address "
                          "or a host name, optionally with :port" % (what, text))
    port = None
    host = text
    if ':' in text:
        host, port_text = text.split(':', 1)
        if not port_text:
            raise IpuK8sError("%s '%s' ends with ':' but has no port" % (what, text))
        try:
            port = parse_port(port_text, 'port in %s' % what)
        except IpuK8sError as e:
            raise IpuK8sError("%s '%s' is malformed: %s" % (what, text, e))
    if not host:
        raise IpuK8sError("%s '%s' has a port but no host" % (what, text))
    if _DOTTED_NUMBERS.fullmatch(host):
        try:
            return str(parse_ipv4(host)), port
        except IpuK8sError as e:
            raise IpuK8sError("%s '%s' is malformed: %s" % (what, text, e))
    if not is_host_name(host):
        raise IpuK8sError("%s '%s' is malformed: '%s' is neither an IPv4 address nor a valid host name" % (what, text, host))
    return host, port


def resolve_ipv4(host, resolver=None):
    """The IPv4 address for host: itself when it is one, else the first IPv4 answer
    of the system resolver (/etc/hosts, DNS, as nsswitch says).

    resolver has socket.getaddrinfo's signature (tests pass their own).
    """
    if _DOTTED_NUMBERS.fullmatch(host):
        address = parse_ipv4(host)
    else:
        resolver = resolver or socket.getaddrinfo
        try:
            answers = resolver(host, None, socket.AF_INET, socket.SOCK_STREAM)
        except (socket.gaierror, socket.herror, UnicodeError) as e:
            raise IpuK8sError("cannot resolve '%s' to an IPv4 address on this node (%s): fix its DNS or "
                              "/etc/hosts entry, or give the IPv4 address instead" % (host, e))
        addresses = [a[4][0] for a in answers if a and a[0] == socket.AF_INET]
        if not addresses:
            raise IpuK8sError("'%s' has no IPv4 address on this node: give the IPv4 address instead" % host)
        address = ipaddress.IPv4Address(addresses[0])
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        raise IpuK8sError("'%s' (%s) is not a unicast address a V-IPU controller can have" % (host, address))
    return str(address)


# --- V-IPU controller -------------------------------------------------------------------

def parse_vipu_server_version(stdout):
    """What `vipu --server-version --showjson` printed -> {'host': 'h:p', 'version': str or None}.

    Accepts the JSON object ({"version": "1.18.0", "host": "10.5.212.116:8090"}) and,
    for CLIs that ignore --showjson, the text form ('version: 1.18.0' / 'host: ...'
    lines). Anything else is refused, quoting the output.
    """
    text = (stdout or '').strip()
    if not text:
        raise IpuK8sError('vipu --server-version --showjson printed nothing: is the vipu CLI configured for '
                          'this node (%s, ~/.vipu.hcl)?' % VIPU_ENV_HOST)
    try:
        data = json.loads(text)
    except ValueError:
        data = _parse_vipu_text(text)
        if data is None:
            raise IpuK8sError('vipu --server-version --showjson printed neither JSON nor "host: ..." lines; '
                              'check the vipu CLI on this node or pass the address explicitly. Output: %s'
                              % show_output(text))
    if not isinstance(data, dict):
        raise IpuK8sError('vipu --server-version --showjson printed JSON that is not an object; '
                          'expected {"version": ..., "host": "ip:port"}. Output: %s' % show_output(text))
    host = data.get('host')
    if not isinstance(host, str) or not host.strip():
        raise IpuK8sError('vipu --server-version --showjson gave no "host" (the V-IPU controller address); '
                          'expected {"version": ..., "host": "ip:port"}. Output: %s' % show_output(text))
    version = data.get('version')
    return {'host': host.strip(), 'version': None if version is None else str(version).strip() or None}


def _parse_vipu_text(text):
    """The human form of `vipu --server-version`: 'key: value' lines; None unless one is host."""
    data = {}
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if sep:
            data.setdefault(key.strip().lower(), value.strip())
    return data if data.get('host') else None


def vipu_address_from_environment(environ, default_port):
    """(host, port) from IPUOF_VIPU_API_HOST / IPUOF_VIPU_API_PORT, or None when HOST is unset."""
    host_text = (environ.get(VIPU_ENV_HOST) or '').strip()
    port_text = (environ.get(VIPU_ENV_PORT) or '').strip()
    if not host_text:
        return None
    host, port = split_address(host_text, VIPU_ENV_HOST)
    if port_text:
        env_port = parse_port(port_text, VIPU_ENV_PORT)
        if port is not None and port != env_port:
            raise IpuK8sError('%s=%s carries port %d but %s=%s: make them agree or drop one'
                              % (VIPU_ENV_HOST, host_text, port, VIPU_ENV_PORT, port_text))
        port = env_port
    return host, port if port is not None else parse_port(default_port)


# --- route lookup and the connected subnet ----------------------------------------------

def parse_ip_json(stdout, command):
    """A list parsed from `ip -j ...` output; IpuK8sError if it is not one."""
    try:
        data = json.loads(stdout or '')
    except ValueError:
        raise IpuK8sError('`%s` did not print JSON (iproute2 too old? Ubuntu 22.04+/Debian 12 have it). Output: %s'
                          % (command, show_output(stdout)))
    if not isinstance(data, list):
        raise IpuK8sError('`%s` printed JSON that is not a list. Output: %s' % (command, show_output(stdout)))
    return data


def check_route(routes, address, interface=None):
    """The route `ip -j route get <address>` returned, checked -> (device, preferred source or None).

    Refuses a lookup that found nothing, a route that is not plain unicast (the node's
    own address, broadcast, blackhole ...), a route through a gateway (Macvlan pods can
    reach the V-IPU controller only on the same L2 subnet), and, when interface is
    pinned, a route through any other interface.
    """
    if not routes or not isinstance(routes[0], dict):
        raise IpuK8sError('the kernel has no route to the V-IPU address %s: give this node an address in the '
                          "V-IPU controller's subnet on its RDMA NIC" % address)
    route = routes[0]
    device = route.get('dev')
    route_type = route.get('type', 'unicast')
    if route_type in _ROUTE_TYPE_REASONS:
        raise IpuK8sError('the V-IPU address %s cannot be used on this node: %s (route type %s via %s). '
                          "Give the V-IPU controller's address, not one of this node's"
                          % (address, _ROUTE_TYPE_REASONS[route_type], route_type, device or 'no interface'))
    if route_type != 'unicast':
        raise IpuK8sError('the kernel routes the V-IPU address %s with an unexpected route type %s'
                          % (address, route_type))
    gateway = route.get('gateway') or route.get('via')
    if isinstance(gateway, dict):
        gateway = gateway.get('host')
    if gateway:
        raise IpuK8sError('the V-IPU address %s is reached through gateway %s on %s, not on a directly '
                          'connected subnet: pods on the MACVLAN network must share an L2 subnet with the '
                          "V-IPU controller. Give this node's RDMA NIC an address in that subnet, or check "
                          'that %s is the right V-IPU address' % (address, gateway, device, address))
    if not device:
        raise IpuK8sError('the kernel route to the V-IPU address %s names no interface: %s'
                          % (address, json.dumps(route)))
    if interface and device != interface:
        raise IpuK8sError('the V-IPU address %s is routed through %s, but the RDMA interface is pinned to %s '
                          '(ipu_k8s_rdma_interface): check that %s is up and has an address in the V-IPU '
                          'subnet, or unpin it' % (address, device, interface, interface))
    return device, route.get('prefsrc')


def parse_interface(links, device):
    """`ip -j addr show dev X` -> (mtu, [IPv4Interface, ...])."""
    for link in links:
        if isinstance(link, dict) and link.get('ifname') == device:
            break
    else:
        raise IpuK8sError('interface %s (the route to the V-IPU controller) vanished while it was read' % device)
    mtu = link.get('mtu')
    if not isinstance(mtu, int) or isinstance(mtu, bool) or mtu <= 0:
        raise IpuK8sError('interface %s reports no usable MTU: %r' % (device, mtu))
    return mtu, _ipv4_addresses(link)


def _ipv4_addresses(link):
    """The IPv4 addresses of one `ip -j addr` entry -> [IPv4Interface]."""
    return [ipaddress.IPv4Interface('%s/%s' % (info['local'], info.get('prefixlen', 32)))
            for info in link.get('addr_info') or [] if info.get('family') == 'inet' and 'local' in info]


def connected_network(addresses, address, device, preferred_source=None):
    """The interface address whose subnet holds the V-IPU address (most specific wins,
    then the route's preferred source) -> IPv4Interface."""
    target = ipaddress.IPv4Address(address)
    candidates = [a for a in addresses if target in a.network]
    if not candidates:
        have = ', '.join(str(a) for a in addresses) or 'no IPv4 address'
        raise IpuK8sError('the V-IPU address %s is routed through %s, but %s has %s and none of its subnets holds '
                          '%s: give %s an address in the V-IPU subnet' % (address, device, device, have, address, device))
    # max() keeps the first of equals: the first address listed when no source is preferred.
    return max(candidates, key=lambda a: (a.network.prefixlen, str(a.ip) == preferred_source))


def compute_excludes(network, exclude_prefix=DEFAULT_EXCLUDE_PREFIX, excludes=None):
    """The ranges Whereabouts must not hand out -> sorted list of CIDR strings.

    With excludes given (CIDRs), they are used as they are, each checked to lie inside
    network (exclude_own_addresses checks that they leave addresses for pods). Otherwise
    the first /exclude_prefix of network, which must be smaller than network itself.
    """
    network = ipaddress.IPv4Network(network)
    if excludes:
        parsed = []
        for text in excludes:
            unpadded(text, 'exclude')
            try:
                exclude = ipaddress.IPv4Network(str(text))
            except ValueError as e:
                raise IpuK8sError("exclude '%s' is not an IPv4 CIDR with its host bits zero (%s): write it like %s"
                                  % (text, e, _suggest_network(text)))
            if not exclude.subnet_of(network):
                raise IpuK8sError('exclude %s is not inside the RDMA subnet %s: use ranges of %s only '
                                  '(ipu_k8s_rdma_excludes)' % (exclude, network, network))
            parsed.append(exclude)
        return [str(n) for n in sorted(set(parsed))]
    exclude_prefix = int(exclude_prefix)
    if not 1 <= exclude_prefix <= 32:
        raise IpuK8sError('exclude_prefix %d is not a prefix length (1-32)' % exclude_prefix)
    if network.prefixlen >= exclude_prefix:
        raise IpuK8sError('the RDMA subnet %s is not larger than the /%d to exclude from it (the first /%d is kept '
                          'for IPU infrastructure): raise ipu_k8s_rdma_exclude_prefix above %d, or list the ranges '
                          'to exclude in ipu_k8s_rdma_excludes'
                          % (network, exclude_prefix, exclude_prefix, network.prefixlen))
    return [str(next(network.subnets(new_prefix=exclude_prefix)))]


def _suggest_network(text):
    try:
        return str(ipaddress.IPv4Network(str(text).strip(), strict=False))
    except ValueError:
        return '10.247.208.0/25'


def down_interface_holding(links, address):
    """(name, its address/prefix) of an administratively down interface whose IPv4 subnet
    holds address, from `ip -j addr show`; None when there is none.

    The kernel drops the connected routes of a down interface, so the route lookup then
    finds the default gateway (or nothing): this names the real cause.
    """
    target = ipaddress.IPv4Address(address)
    for link in links:
        if not isinstance(link, dict) or 'UP' in (link.get('flags') or []):
            continue
        for iface in _ipv4_addresses(link):
            if target in iface.network:
                return link.get('ifname'), str(iface)
    return None


def refuse_down_interface(read_all_interfaces, address):
    """Raise 'RDMA NIC <if> is down' when a down interface holds address's subnet."""
    if read_all_interfaces is None:
        return
    down = down_interface_holding(parse_ip_json(read_all_interfaces(), 'ip -j -4 addr show'), address)
    if down:
        raise IpuK8sError('RDMA NIC %s is down: it has %s, the subnet of the V-IPU address %s, but it is '
                          'administratively down, so the kernel routes nothing through it. Bring it up '
                          '(ip link set %s up, and make it come up at boot in the netplan/ifupdown '
                          'configuration), then run again' % (down[0], down[1], address, down[0]))


def derive_rdma_network(route_json, read_interface, address, exclude_prefix=DEFAULT_EXCLUDE_PREFIX,
                        excludes=None, interface=None, read_all_interfaces=None):
    """The rdma_network dict that rdma_network_facts returns.

    route_json is what `ip -j route get <address>` printed; read_interface(device) returns
    what `ip -j addr show dev <device>` prints, and is called only once the route is
    accepted. read_all_interfaces() returns what `ip -j -4 addr show` prints; it is called
    only when the route is refused, to tell a down RDMA NIC from a wrong address.
    """
    routes = parse_ip_json(route_json, 'ip -j route get %s' % address)
    try:
        device, preferred_source = check_route(routes, address, interface)
    except IpuK8sError:
        refuse_down_interface(read_all_interfaces, address)
        raise
    links = parse_ip_json(read_interface(device), 'ip -j addr show dev %s' % device)
    mtu, addresses = parse_interface(links, device)
    chosen = connected_network(addresses, address, device, preferred_source)
    network = chosen.network
    target = ipaddress.IPv4Address(address)
    if network.prefixlen <= 30 and target in (network.network_address, network.broadcast_address):
        raise IpuK8sError('the V-IPU address %s is the network or broadcast address of %s on %s: give the '
                          "V-IPU controller's address" % (address, network, device))
    exclude_list, added = exclude_own_addresses(network, compute_excludes(network, exclude_prefix, excludes),
                                                [target, chosen.ip])
    return {
        'interface': device,
        'cidr': str(network),
        'prefix': network.prefixlen,
        'node_address': str(chosen.ip),
        'mtu': mtu,
        'excludes': exclude_list,
        'excludes_added': added,
        'vipu_address': str(target),
    }


def exclude_own_addresses(network, excludes, addresses):
    """excludes (CIDRs inside network) with every address of addresses that they leave out
    added as a /32 -> (sorted CIDR strings, the /32s added).

    The V-IPU controller's address and every IPU node's own RDMA address must never be
    handed to a pod, so they are excluded automatically instead of warned about. Refuses
    an address outside network and a result that leaves pods no address.
    """
    network = ipaddress.IPv4Network(network)
    parsed = [ipaddress.IPv4Network(str(e)) for e in excludes]
    added = []
    for address in addresses:
        address = ipaddress.IPv4Address(str(address))
        if address not in network:
            raise IpuK8sError('address %s is not in the RDMA subnet %s, so it cannot be excluded from it: every '
                              'IPU node and the V-IPU controller must be on that subnet' % (address, network))
        if not any(address in e for e in parsed + added):
            added.append(ipaddress.IPv4Network(address))
    everything = list(ipaddress.collapse_addresses(parsed + added))
    if _usable_count(network, everything) == 0:
        raise IpuK8sError('the excludes %s, with the V-IPU controller and IPU node addresses, leave no address of '
                          'the RDMA subnet %s for pods: shrink ipu_k8s_rdma_excludes or raise '
                          'ipu_k8s_rdma_exclude_prefix' % (', '.join(str(e) for e in parsed), network))
    return [str(n) for n in sorted(set(parsed + added))], [str(n) for n in sorted(added)]


def _host_range(network):
    """(first, last) host address of network as ints (network and broadcast address left out from /30 up)."""
    edge = 0 if network.prefixlen >= 31 else 1
    return int(network.network_address) + edge, int(network.broadcast_address) - edge


def _usable_count(network, excludes):
    """Host addresses of network (as _host_range says) not in excludes."""
    first, last = _host_range(network)
    covered = sum(max(0, min(last, int(e.broadcast_address)) - max(first, int(e.network_address)) + 1)
                  for e in excludes)
    return last - first + 1 - covered


def exclude_ranges(excludes):
    """CIDRs -> [{'startIP', 'endIP'}] with touching ranges merged (the NVIDIA IPAM IPPool
    exclusions form, which lists inclusive address ranges)."""
    ranges = []
    for exclude in ipaddress.collapse_addresses(ipaddress.IPv4Network(str(e)) for e in excludes):
        start, end = int(exclude.network_address), int(exclude.broadcast_address)
        if ranges and start == ranges[-1][1] + 1:
            ranges[-1][1] = end
        else:
            ranges.append([start, end])
    return [{'startIP': str(ipaddress.IPv4Address(s)), 'endIP': str(ipaddress.IPv4Address(e))} for s, e in ranges]


def nv_ipam_blocks(network, block_size):
    """The per-node blocks NVIDIA IPAM cuts an IPPool subnet into, in order -> [(first, last)].

    As nvidia-k8s-ipam's controller allocator (pkg/ipam-controller/allocator/allocator.go at
    tag network-operator-v26.1.2, which also skips blocks that are entirely excluded):
    blocks of block_size addresses from the address after the network address (the network
    address itself only for /31 and /32), a block valid while its last address is inside
    the subnet and is not the broadcast address.
    """
    first, last = _host_range(ipaddress.IPv4Network(network))
    return [(start, start + block_size - 1) for start in range(first, last - block_size + 2, block_size)]


def nv_ipam_block_size(network, excludes, nodes, block_size=0):
    """perNodeBlockSize for an IPPool over network that gives every one of nodes IPU nodes a
    block with addresses outside excludes.

    block_size 0 picks the largest size that does (blocks entirely inside the excludes are
    skipped by the allocator, so they do not count); a given size is checked. Refuses when
    no size fits.
    """
    network = ipaddress.IPv4Network(network)
    parsed = list(ipaddress.collapse_addresses(ipaddress.IPv4Network(str(e)) for e in excludes))

    def usable_blocks(size):
        return sum(1 for start, end in nv_ipam_blocks(network, size)
                   if not any(int(e.network_address) <= start and end <= int(e.broadcast_address) for e in parsed))

    nodes = int(nodes)
    if nodes < 1:
        raise IpuK8sError('no IPU nodes to give NVIDIA IPAM blocks to')
    if block_size:
        block_size = int(block_size)
        if block_size < 1 or usable_blocks(block_size) < nodes:
            raise IpuK8sError('rdma_network_nv_ipam_block_size %d gives fewer than %d blocks with free addresses in '
                              '%s outside %s: use a smaller size, or 0 to compute it'
                              % (block_size, nodes, network, ', '.join(str(e) for e in parsed)))
        return block_size
    hosts = network.num_addresses - (2 if network.prefixlen < 31 else 0)
    for size in range(hosts, 0, -1):
        if usable_blocks(size) >= nodes:
            return size
    raise IpuK8sError('the RDMA subnet %s outside %s has too few free addresses for %d IPU nodes'
                      % (network, ', '.join(str(e) for e in parsed), nodes))


# --- agreement across nodes -------------------------------------------------------------

_REQUIRED_KEYS = ('interface', 'cidr', 'mtu', 'excludes', 'vipu_address')


def _check_entry(host, entry):
    if not isinstance(entry, dict):
        raise IpuK8sError('the RDMA network of %s is not a dict (%r): pass the rdma_network fact that '
                          'rdma_network_facts returned' % (host, entry))
    missing = [k for k in _REQUIRED_KEYS if entry.get(k) in (None, '')]
    if missing:
        raise IpuK8sError('the RDMA network of %s lacks %s: did rdma_network_facts run on it?'
                          % (host, ', '.join(missing)))
    try:
        network = ipaddress.IPv4Network(str(entry['cidr']))
    except ValueError as e:
        raise IpuK8sError('the RDMA network of %s has a malformed cidr %r (%s)' % (host, entry['cidr'], e))
    mtu = entry['mtu']
    if isinstance(mtu, str) and mtu.isdigit():
        mtu = int(mtu)
    if not isinstance(mtu, int) or isinstance(mtu, bool) or mtu <= 0:
        raise IpuK8sError('the RDMA network of %s has a malformed mtu %r' % (host, entry['mtu']))
    excludes = entry['excludes']
    if not isinstance(excludes, list):
        raise IpuK8sError('the RDMA network of %s has excludes that are not a list: %r' % (host, excludes))
    try:
        excludes = [ipaddress.IPv4Network(str(e)) for e in excludes]
        vipu = ipaddress.IPv4Address(str(entry['vipu_address']))
    except ValueError as e:
        raise IpuK8sError('the RDMA network of %s has a malformed exclude or vipu_address (%s)' % (host, e))
    try:
        added = [ipaddress.IPv4Network(str(e)) for e in entry.get('excludes_added') or []]
        node = ipaddress.IPv4Address(str(entry['node_address'])) if entry.get('node_address') else None
    except ValueError as e:
        raise IpuK8sError('the RDMA network of %s has a malformed excludes_added or node_address (%s)' % (host, e))
    return {'interface': str(entry['interface']), 'cidr': network, 'mtu': mtu, 'excludes': excludes, 'vipu': vipu,
            'added': added, 'node': node}


def _describe_split(by_value):
    return '; '.join('%s on %s' % (value, ', '.join(sorted(hosts))) for value, hosts in sorted(by_value.items()))


def agree_rdma_networks(networks, ipam='whereabouts', block_size=0):
    """{host: rdma_network} from every IPU node -> (the one agreed rdma_network, warnings).

    Nodes must agree on the subnet and on the interface name (one MacvlanNetwork has one
    master interface and one range). The MTU is the smallest any node has; excludes are
    the union of every node's, and every node's own address and every V-IPU controller
    address are excluded too. With ipam 'nv-ipam' the result also carries the NVIDIA IPAM
    pool: the excludes as address ranges and the per-node block size for these nodes.
    """
    if ipam not in ('whereabouts', 'nv-ipam'):
        raise IpuK8sError("ipam '%s' is not one this project renders: whereabouts or nv-ipam" % ipam)
    if not isinstance(networks, dict) or not networks:
        raise IpuK8sError('no RDMA network to agree on: networks is empty. Is the ipu_nodes group empty, or did '
                          'rdma_network_facts not run on those nodes?')
    entries = dict((str(host), _check_entry(host, entry)) for host, entry in networks.items())
    problems = []
    for key, label in (('cidr', 'RDMA subnet'), ('interface', 'RDMA interface')):
        by_value = {}
        for host, entry in entries.items():
            by_value.setdefault(str(entry[key]), []).append(host)
        if len(by_value) > 1:
            problems.append('the %s differs: %s' % (label, _describe_split(by_value)))
    if problems:
        raise IpuK8sError('IPU nodes disagree, and one MacvlanNetwork cannot serve them all: %s. Every IPU node '
                          'must reach the V-IPU controller through the same interface name on the same subnet '
                          '(pin ipu_k8s_rdma_interface, fix the addresses, or split the nodes into separate '
                          'clusters)' % '; '.join(problems))
    first = next(iter(entries.values()))
    warnings = []
    mtus = {}
    for host, entry in entries.items():
        mtus.setdefault(entry['mtu'], []).append(host)
    if len(mtus) > 1:
        warnings.append('RDMA interface MTUs differ (%s): the MacvlanNetwork uses the smallest, %d'
                        % (_describe_split(mtus), min(mtus)))
    # Each node excluded its own address and the controller's (excludes_added); the excludes
    # the nodes were configured with are what must agree.
    exclude_sets = set(tuple(sorted(set(e['excludes']) - set(e['added']))) for e in entries.values())
    own = [e['node'] for e in entries.values() if e['node'] is not None] + [e['vipu'] for e in entries.values()]
    united, _added = exclude_own_addresses(first['cidr'], [n for e in entries.values() for n in e['excludes']], own)
    excludes = sorted(ipaddress.collapse_addresses(ipaddress.IPv4Network(n) for n in united))
    if len(exclude_sets) > 1:
        warnings.append('IPU nodes computed different excludes; using their union %s'
                        % ', '.join(str(n) for n in excludes))
    result = {
        'interface': first['interface'],
        'cidr': str(first['cidr']),
        'prefix': first['cidr'].prefixlen,
        'mtu': min(mtus),
        'excludes': [str(n) for n in excludes],
        'vipu_addresses': [str(a) for a in sorted(set(e['vipu'] for e in entries.values()))],
    }
    if ipam == 'nv-ipam':
        result['nv_ipam'] = {
            'exclusions': exclude_ranges(result['excludes']),
            'block_size': nv_ipam_block_size(first['cidr'], excludes, len(entries), block_size),
        }
    return result, warnings


# --- several IPU-PODs: one agreement per V-IPU controller -------------------------------

def name_fragment(text):
    """text as a part of a Kubernetes name (DNS label): lower case, other characters as '-'."""
    return re.sub(r'[^a-z0-9-]+', '-', str(text).lower()).strip('-')


def pod_object_name(network_name, pod_name):
    """A Kubernetes object name (DNS label) for one POD's part of the network, e.g. the
    NVIDIA IPAM IPPool of POD pod001 of network rdma-net: rdma-net-pod001."""
    return ('%s-%s' % (network_name, name_fragment(pod_name) or 'pod'))[:63].rstrip('-')


def cni_config(network_name, pod, mode='bridge', ipam='whereabouts', whereabouts=None):
    """The CNI configuration (a dict, written as JSON) of one IPU-POD's part of the network,
    for Multus to read on that POD's nodes when the NetworkAttachmentDefinition has no
    spec.config (the file in its confDir whose "name" is the network's).

    The same plugin chain the Network Operator renders into a MacvlanNetwork's
    NetworkAttachmentDefinition (manifests/state-macvlan-network/0010-macvlan-net-cr.yml):
    macvlan on the POD's interface with its MTU, and the IPAM over the POD's range outside
    its excludes (Whereabouts), or the POD's NVIDIA IPAM pool. whereabouts: the kubeconfig,
    log_file and log_level of the Whereabouts IPAM.
    """
    network = pod['rdma_network']
    if ipam == 'nv-ipam':
        ipam_config = {'type': 'nv-ipam', 'poolName': pod['pool']}
    elif ipam == 'whereabouts':
        whereabouts = whereabouts or {}
        ipam_config = {
            'type': 'whereabouts',
            'datastore': 'kubernetes',
            'kubernetes': {'kubeconfig': whereabouts.get('kubeconfig', '')},
            'log_file': whereabouts.get('log_file', ''),
            'log_level': whereabouts.get('log_level', ''),
            'range': network['cidr'],
            'exclude': list(network['excludes']),
        }
    else:
        raise IpuK8sError("ipam '%s' is not one this project renders: whereabouts or nv-ipam" % ipam)
    return {
        'cniVersion': '0.3.1',
        'name': network_name,
        'type': 'macvlan',
        'master': network['interface'],
        'mode': mode,
        'mtu': int(network['mtu']),
        'ipam': ipam_config,
    }


def in_range(cidr, excludes=()):
    """The rule of an address inside cidr and outside each of excludes, as a predicate taking the
    address (str or ipaddress), so a caller testing many addresses parses the CIDRs once. The
    CIDRs may carry host bits, as `ip addr` writes them. ValueError when cidr or an exclude is
    not a CIDR; an address that is not one is outside."""
    network = ipaddress.ip_interface(str(cidr)).network
    excluded = [ipaddress.ip_interface(str(item)).network for item in excludes or []]

    def inside(address):
        try:
            address = ipaddress.ip_address(str(address).strip())
        except ValueError:
            return False
        return address in network and not any(address in item for item in excluded)
    return inside
