# -*- coding: utf-8 -*-
"""Rules about the RDMA shared device plugin: whether its selectors match the RDMA NIC the
IPU nodes derived (rdma_plugin_selector_problem, at preflight on each IPU node). The plugin offers
a device only when it matches every non-empty selector list (any value of a list), so a
list that leaves out the node's RDMA NIC leaves the node without the RDMA resource. PCI
vendor IDs are compared as the plugin reads them: four lowercase hex digits, no 0x.

    problem: "{{ nic | rdma_plugin_selector_problem(host, ifnames, vendors, drivers, resource) }}"
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

SELECTORS = (('network_operator_rdma_ifnames', 'interface'), ('network_operator_rdma_vendors', 'vendor'),
             ('network_operator_rdma_drivers', 'driver'))


def _vendor(text):
    text = (text or '').strip().lower()
    return text[2:] if text.startswith('0x') else text


def rdma_plugin_selector_problem(nic, host, ifnames, vendors, drivers, resource='rdma/rdma_shared_device_a'):
    """'' when every non-empty selector list matches the node's RDMA NIC, else one message
    naming each setting that does not, its value, and what the node has. nic: {'interface',
    'vendor' (as /sys/class/net/<if>/device/vendor reads, e.g. 0x15b3), 'driver'}; a vendor or
    driver that could not be read is None and is not judged."""
    has = {'interface': nic.get('interface') or '', 'vendor': nic.get('vendor'), 'driver': nic.get('driver')}
    if has['vendor'] is not None:
        has['vendor'] = _vendor(has['vendor'])
    values = dict(zip((name for name, _ in SELECTORS), (ifnames or [], vendors or [], drivers or [])))
    wrong = []
    for name, field in SELECTORS:
        value = list(values[name])
        if not value or has[field] is None:
            continue
        wanted = [_vendor(v) for v in value] if field == 'vendor' else [str(v) for v in value]
        if has[field] not in wanted:
            wrong.append('%s is %s, which does not hold its %s %s' % (name, value, field, has[field] or '(none)'))
    if not wrong:
        return ''
    seen = ', '.join('%s %s' % (field, has[field]) for _, field in SELECTORS if has[field] is not None)
    return ('On %s the RDMA NIC (the interface its V-IPU address is routed through) has %s. %s: the RDMA shared '
            'device plugin would offer no device there, and the node no %s. Put the NIC\'s value in the list, or '
            'leave the list empty (no filter).' % (host, seen, '; '.join(wrong), resource))


class FilterModule(object):
    def filters(self):
        return {'rdma_plugin_selector_problem': rdma_plugin_selector_problem}
