# -*- coding: utf-8 -*-
"""Rules about the RDMA shared device plugin: whether its selectors match the RDMA NIC the
IPU nodes derived (rdma_plugin_selector_problem, at preflight on each IPU node), and which
running plugin pods may hold an older configuration (rdma_plugin_config_marks). The plugin offers
a device only when it matches every non-empty selector list (any value of a list), so a
list that leaves out the node's RDMA NIC leaves the node without the RDMA resource. PCI
vendor IDs are compared as the plugin reads them: four lowercase hex digits, no 0x.

    problem: "{{ nic | rdma_plugin_selector_problem(host, ifnames, vendors, drivers, resource) }}"
    restart: "{{ pods | rdma_plugin_config_marks(config, configmap) }}"
    mark: "{{ pods | rdma_plugin_config_marks(config, configmap, restart.seen) }}"
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
    seen = ', '.join('%s %s' % (field, has[field]) for setting, field in SELECTORS if has[field] is not None)
    return ('On %s the RDMA NIC (the interface its V-IPU address is routed through) has %s. %s: the RDMA shared '
            'device plugin would offer no device there, and the node no %s. Put the NIC\'s value in the list, or '
            'leave the list empty (no filter).' % (host, seen, '; '.join(wrong), resource))


def rdma_plugin_config_sha256(config):
    """sha256 (hex) of the plugin configuration as canonical JSON (keys sorted, no spaces):
    the same configuration spelt differently has the same hash. config: the JSON text of
    the NicClusterPolicy's spec.rdmaSharedDevicePlugin.config, or its parsed value."""
    value = json.loads(config) if isinstance(config, str) else config
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(',', ':')).encode('utf-8')).hexdigest()


def _configmap_version(configmap):
    return ((configmap or {}).get('metadata') or {}).get('resourceVersion')


def rdma_plugin_config_marks(pods, config, configmap=None, seen=None):
    """What the running plugin pods say about the configuration they started with, and which
    of them to restart or to mark. The plugin reads its configuration (the operator's
    ConfigMap) only when it starts, so a pod is known to hold `config` only when its
    CONFIG_ANNOTATION carries the configuration's hash.

    Restart step (`seen` not given): `configmap` is the ConfigMap as read once it carried
    `config`, `pods` the plugin pods listed after that read. 'unmarked': the pods (not
    terminating) whose annotation is missing or differs, to delete; 'seen': the record the
    mark step needs, {'resourceVersion': the ConfigMap's, 'uids': every listed pod's uid}.

    Mark step (`seen` from the restart step; `configmap` and `pods` read again once the
    replacements are Ready). A pod whose uid was not listed at the restart step was created
    after the ConfigMap was seen carrying `config` (a list is a consistent read, so every pod
    created before it is in it), and it read the ConfigMap after its creation; it holds
    `config` only if nobody wrote the ConfigMap since, which its unchanged resourceVersion
    says (any write changes it, even one that writes back the same text). So 'unmarked' is
    the unmarked pods not listed at the restart step, and none at all once the ConfigMap's
    resourceVersion moved: then a pod may have started from another configuration, and
    'settled' is false (restart again).

    Returns {'sha256': the hash, 'unmarked': sorted names, 'mark': the metadata patch that
    records the hash, 'settled': whether every pod (not terminating) is marked, or is marked
    by this step, 'seen' (restart step)}."""
    digest = rdma_plugin_config_sha256(config)
    version = _configmap_version(configmap)
    moved = seen is not None and version != seen.get('resourceVersion')
    known = set((seen or {}).get('uids') or [])
    unmarked, left = [], []
    for pod in pods or []:
        metadata = pod.get('metadata') or {}
        if metadata.get('deletionTimestamp'):
            continue
        if (metadata.get('annotations') or {}).get(CONFIG_ANNOTATION) == digest:
            continue
        if seen is None or (not moved and metadata.get('uid') not in known):
            unmarked.append(metadata['name'])
        else:
            left.append(metadata['name'])
    result = {'sha256': digest, 'unmarked': sorted(unmarked),
              'mark': {'metadata': {'annotations': {CONFIG_ANNOTATION: digest}}},
              'settled': not moved and not left and (seen is not None or not unmarked)}
    if seen is None:
        uids = ((pod.get('metadata') or {}).get('uid') for pod in pods or [])
        result['seen'] = {'resourceVersion': version, 'uids': sorted(uid for uid in uids if uid)}
    return result


class FilterModule(object):
    def filters(self):
        return {'rdma_plugin_selector_problem': rdma_plugin_selector_problem,
                'rdma_plugin_config_marks': rdma_plugin_config_marks}
