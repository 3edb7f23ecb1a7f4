# -*- coding: utf-8 -*-
"""Rules about the RDMA shared device plugin: whether its selectors match the RDMA NIC the
IPU nodes derived, and which of its pods still run with an older configuration.

Selectors (rdma_plugin_selector_problem, at preflight on each IPU node): the plugin offers
a device only when it matches every non-empty selector list (any value of a list), so a
list that leaves out the node's RDMA NIC leaves the node without the RDMA resource. PCI
vendor IDs are compared as the plugin reads them: four lowercase hex digits, no 0x.

    problem: "{{ nic | rdma_plugin_selector_problem(host, ifnames, vendors, drivers, resource) }}"

Restarts: the plugin reads its configuration (config.json of the operator's ConfigMap rdma-devices)
once, when its pod starts; the operator rewrites the ConfigMap from the NicClusterPolicy
but does not restart the pods. So a pod needs a restart when it was created before
the ConfigMap's last change, or when the ConfigMap does not hold the configuration wanted
yet (the operator has still to write it: every pod started from an older one). The
decision reads the running state only, so a run killed after the policy was applied and
before the restart is finished by the next run.

    until: __configmap.resources | first | default(None) | rdma_plugin_config_written(config)
    loop: "{{ __pods.resources | rdma_plugin_stale_pods(__configmap.resources | first | default(None), config) }}"
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
from datetime import datetime

CONFIG_KEY = 'config.json'


def _time(text):
    """An RFC 3339 time as the API server writes it (seconds, UTC): 2026-11-25T23:10:04Z."""
    return datetime.strptime(text, '%Y-%m-%dT%H:%M:%SZ')


def _parsed(config):
    if isinstance(config, dict):
        return config
    try:
        return json.loads(config)
    except (TypeError, ValueError):
        return None


def configmap_changed_at(configmap):
    """When the ConfigMap last changed: the newest time of its managed fields (the API server
    stamps the writer's entry on every write that changes the object), else its creation."""
    metadata = configmap.get('metadata') or {}
    times = [entry['time'] for entry in metadata.get('managedFields') or [] if entry.get('time')]
    times.append(metadata['creationTimestamp'])
    return max(_time(t) for t in times)


def rdma_plugin_config_written(configmap, config):
    """The ConfigMap holds `config` (same JSON, whatever its spelling)."""
    data = (configmap or {}).get('data') or {}
    return bool(configmap) and _parsed(data.get(CONFIG_KEY)) == _parsed(config)


def rdma_plugin_stale_pods(pods, configmap, config):
    """Names of the plugin pods (not already terminating) that must be deleted so that the
    DaemonSet starts them again with `config` (the NicClusterPolicy's JSON string or dict).
    The API server's times have whole seconds; a pod created in the second of the change
    counts as newer: the kubelet mounts the ConfigMap after the pod is created, and the
    operator writes the ConfigMap and the DaemonSet together on a fresh install (counting
    them as older would restart every new plugin once)."""
    running = [pod for pod in pods or [] if not (pod.get('metadata') or {}).get('deletionTimestamp')]
    if not rdma_plugin_config_written(configmap, config):
        return sorted(pod['metadata']['name'] for pod in running)
    changed = configmap_changed_at(configmap)
    return sorted(pod['metadata']['name'] for pod in running
                  if _time(pod['metadata']['creationTimestamp']) < changed)


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
        return {'rdma_plugin_selector_problem': rdma_plugin_selector_problem,
                'rdma_plugin_stale_pods': rdma_plugin_stale_pods,
                'rdma_plugin_config_written': rdma_plugin_config_written}
