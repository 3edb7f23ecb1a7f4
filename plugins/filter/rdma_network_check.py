# -*- coding: utf-8 -*-
"""Jinja filters that compare a node's freshly derived RDMA network (rdma_network_facts)
with what the cluster has: the MacvlanNetwork, and for NVIDIA IPAM the IPPool it names.

A Whereabouts MacvlanNetwork carries its range and excludes in its IPAM JSON; an NVIDIA
IPAM one only names a pool ({"type": "nv-ipam", "poolName": ...}) whose spec holds the
subnet and the exclusions as inclusive address ranges.

    __verify_macvlan.resources | first | default({}) | macvlan_ipam
    rdma | rdma_network_comparison(macvlan, ippool)  -> {ipam, expected, observed, status}
"""

import ipaddress
import json

IPAM_LABELS = {'whereabouts': 'Whereabouts', 'nv-ipam': 'NVIDIA IPAM'}


def macvlan_ipam(macvlan):
    """The IPAM of a MacvlanNetwork object as a dict ({} when absent or not JSON)."""
    ipam = ((macvlan or {}).get('spec') or {}).get('ipam') or '{}'
    if isinstance(ipam, dict):
        return ipam
    try:
        parsed = json.loads(ipam)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def ipam_label(ipam_type):
    """'Whereabouts', 'NVIDIA IPAM', or both when the IPAM is not known."""
    return IPAM_LABELS.get(ipam_type or '', 'Whereabouts or NVIDIA IPAM')


def _network(text):
    return ipaddress.IPv4Network(str(text).strip(), strict=False)


def _networks(item):
    """The networks of a CIDR, or of an inclusive {startIP, endIP} range."""
    if isinstance(item, dict):
        return ipaddress.summarize_address_range(ipaddress.IPv4Address(item['startIP']),
                                                 ipaddress.IPv4Address(item['endIP']))
    return [_network(item)]


def _not_covered(excludes, applied):
    """The excludes (CIDRs) not inside the union of the applied CIDRs or ranges, or None when
    one is malformed."""
    try:
        union = list(ipaddress.collapse_addresses(net for item in applied for net in _networks(item)))
        # The union's blocks are disjoint, and two blocks overlap only when one holds the other.
        return [exclude for exclude in excludes
                if sum(min(net.num_addresses, _network(exclude).num_addresses) for net in union
                       if net.overlaps(_network(exclude))) < _network(exclude).num_addresses]
    except (ValueError, KeyError, TypeError):
        return None


def _ranges_text(ranges):
    return ','.join('%s-%s' % (r.get('startIP', '?'), r.get('endIP', '?')) if isinstance(r, dict) else str(r)
                    for r in ranges or [])


def rdma_network_comparison(rdma, macvlan, ippool=None):
    """Compare the derived network with the applied MacvlanNetwork (and IPPool) ->
    {'ipam', 'expected', 'observed', 'status'}.

    PASS when the master is the node's RDMA interface, the range (Whereabouts) or the pool's
    subnet (NVIDIA IPAM) is the node's subnet, every exclude the node derived is excluded,
    and the applied MTU is at most the node's (the applied one is the smallest of all nodes).
    """
    rdma = rdma or {}
    spec = (macvlan or {}).get('spec') or {}
    ipam = macvlan_ipam(macvlan)
    ipam_type = ipam.get('type', '')
    excludes = list(rdma.get('excludes') or [])
    range_word = 'subnet' if ipam_type == 'nv-ipam' else 'range'
    expected = 'master=%s %s=%s exclude=%s mtu<=%s' % (
        rdma.get('interface', '?'), range_word, rdma.get('cidr', '?'), ','.join(excludes), rdma.get('mtu', '?'))
    if ipam_type == 'nv-ipam':
        pool_name = ipam.get('poolName', '?')
        pool_spec = (ippool or {}).get('spec')
        if pool_spec is None:
            return {'ipam': ipam_type, 'expected': expected, 'status': 'FAIL',
                    'observed': 'NVIDIA IPAM pool %s named by the MacvlanNetwork not found: run '
                                'playbooks/rdma_network.yml' % pool_name}
        applied_range = pool_spec.get('subnet', '?')
        exclusions = pool_spec.get('exclusions') or []
        applied_excludes = _ranges_text(exclusions)
        missing = _not_covered(excludes, exclusions)
        observed_head = 'pool=%s ' % pool_name
    elif ipam_type == 'whereabouts':
        applied_range = ipam.get('range', '?')
        applied = ipam.get('exclude') or []
        applied_excludes = ','.join(str(a) for a in applied)
        missing = _not_covered(excludes, applied)
        observed_head = ''
    else:
        return {'ipam': ipam_type, 'expected': expected, 'status': 'FAIL',
                'observed': 'MacvlanNetwork IPAM type %r is neither whereabouts nor nv-ipam' % ipam_type}
    observed = '%smaster=%s %s=%s exclude=%s mtu=%s' % (
        observed_head, spec.get('master', '?'), range_word, applied_range, applied_excludes, spec.get('mtu', '?'))
    same_range = bool(rdma.get('cidr')) and str(applied_range) == str(rdma['cidr'])
    try:
        mtu_fits = int(spec.get('mtu') or 0) <= int(rdma.get('mtu') or 0)
    except (TypeError, ValueError):
        mtu_fits = False
    passed = (spec.get('master') == rdma.get('interface') and same_range and missing == [] and mtu_fits)
    if missing:
        observed += ' (not excluded: %s)' % ','.join(missing)
    return {'ipam': ipam_type, 'expected': expected, 'observed': observed, 'status': 'PASS' if passed else 'FAIL'}


class FilterModule(object):
    def filters(self):
        return {'macvlan_ipam': macvlan_ipam, 'ipam_label': ipam_label,
                'rdma_network_comparison': rdma_network_comparison}
