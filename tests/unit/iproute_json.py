"""What iproute2 6.x prints for `ip -j -4 route get` and `ip -j addr show dev`, built from
a few inputs, in the exact shapes captured from a real kernel (see the integration tests,
which run the same code against real network namespaces)."""

import ipaddress
import json


def route_get(dst, dev, prefsrc=None, gateway=None, route_type=None):
    """`ip -j -4 route get <dst>` for a unicast, gateway, or typed (local, broadcast ...) route."""
    route = {}
    if route_type:
        route['type'] = route_type
    route['dst'] = dst
    if gateway:
        route['gateway'] = gateway
    route['dev'] = dev
    if prefsrc:
        route['prefsrc'] = prefsrc
    route.update({'flags': [], 'uid': 0, 'cache': ['local'] if route_type == 'local' else []})
    return json.dumps([route])


def addr_show(ifname, mtu, *interfaces, up=True):
    """`ip -j addr show dev <ifname>` with the given IPv4 address/prefix strings (and the
    IPv6 link-local every Ethernet interface also carries); up=False for an interface that
    is administratively down (`ip link set <ifname> down`)."""
    addr_info = []
    for text in interfaces:
        iface = ipaddress.IPv4Interface(text)
        addr_info.append({
            'family': 'inet', 'local': str(iface.ip), 'prefixlen': iface.network.prefixlen,
            'broadcast': str(iface.network.broadcast_address), 'scope': 'global', 'label': ifname,
            'valid_life_time': 4294967295, 'preferred_life_time': 4294967295,
        })
    addr_info.append({'family': 'inet6', 'local': 'fe80::f869:60ff:fe79:e01a', 'prefixlen': 64, 'scope': 'link',
                      'valid_life_time': 4294967295, 'preferred_life_time': 4294967295})
    link = {
        'ifindex': 3, 'link': 'peer0', 'ifname': ifname,
        'flags': ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'] if up else ['BROADCAST', 'MULTICAST'],
        'mtu': mtu, 'qdisc': 'noqueue', 'operstate': 'UP' if up else 'DOWN', 'group': 'default', 'txqlen': 1000,
        'link_type': 'ether', 'address': 'fa:69:60:79:e0:1a', 'broadcast': 'ff:ff:ff:ff:ff:ff',
        'addr_info': addr_info,
    }
    return json.dumps([link])


def addr_show_all(*links):
    """`ip -j -4 addr show`: the links of several addr_show() answers in one list."""
    return json.dumps([link for answer in links for link in json.loads(answer)])
