# -*- coding: utf-8 -*-
"""Rules about the RDMA shared device plugin: whether its selectors match the RDMA NIC the
IPU nodes derived (rdma_plugin_selector_problem, at preflight on each IPU node), and which
running plugin pods may hold an older configuration (rdma_plugin_config_marks). The plugin offers
a device only when it matches every non-empty selector list (any value of a list), so a
list that leaves out the node's RDMA NIC leaves the node without the RDMA resource. PCI
vendor IDs are compared as the plugin reads them: four lowercase hex digits, no 0x.

    problem: "{{ nic | rdma_plugin_selector_problem(host, ifnames, vendors, drivers, resource) }}"
    marks: "{{ pods | rdma_plugin_config_marks(config) }}"
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json

# The pod annotation that records the plugin configuration a pod started with.
CONFIG_ANNOTATION = 'ipu-k8s/rdma-plugin-config-sha256'

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
    wrong = []
    for (name, field), value in zip(SELECTORS, (ifnames, vendors, drivers)):
        value = list(value or [])
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


def rdma_plugin_config_sha256(config):
    """sha256 (hex) of the plugin configuration as canonical JSON (keys sorted, no spaces):
    the same configuration spelt differently has the same hash. config: the JSON text of
    the NicClusterPolicy's spec.rdmaSharedDevicePlugin.config, or its parsed value."""
    value = json.loads(config) if isinstance(config, str) else config
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(',', ':')).encode('utf-8')).hexdigest()


def rdma_plugin_config_marks(pods, config):
    """What the running plugin pods say about the configuration they started with. The plugin
    reads its configuration only when it starts, so a pod is known to hold `config` only when
    its CONFIG_ANNOTATION carries the configuration's hash. Returns {'sha256': the hash,
    'unmarked': names of the pods (not terminating) whose annotation is missing or differs,
    'mark': the metadata patch that records the hash}. Before the plugin is restarted the
    unmarked pods are those to delete (they may have started before the configuration
    changed); after the restart they are those that started with it, to mark."""
    digest = rdma_plugin_config_sha256(config)
    unmarked = []
    for pod in pods or []:
        metadata = pod.get('metadata') or {}
        if metadata.get('deletionTimestamp'):
            continue
        if (metadata.get('annotations') or {}).get(CONFIG_ANNOTATION) != digest:
            unmarked.append(metadata['name'])
    return {'sha256': digest, 'unmarked': sorted(unmarked),
            'mark': {'metadata': {'annotations': {CONFIG_ANNOTATION: digest}}}}


class FilterModule(object):
    def filters(self):
        return {'rdma_plugin_selector_problem': rdma_plugin_selector_problem,
                'rdma_plugin_config_marks': rdma_plugin_config_marks}
