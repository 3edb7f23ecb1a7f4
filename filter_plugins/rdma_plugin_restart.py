# -*- coding: utf-8 -*-
"""Which RDMA shared device plugin pods still run with an older configuration.

The plugin reads its configuration (config.json of the operator's ConfigMap rdma-devices)
once, when its pod starts; the operator rewrites the ConfigMap from the NicClusterPolicy
but does not restart the pods. So a pod needs a restart when it was created no later than
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
    Same-second creation counts as older: the API server's times have whole seconds, and a
    needless restart is harmless where a missed one keeps the old selectors."""
    running = [pod for pod in pods or [] if not (pod.get('metadata') or {}).get('deletionTimestamp')]
    if not rdma_plugin_config_written(configmap, config):
        return sorted(pod['metadata']['name'] for pod in running)
    changed = configmap_changed_at(configmap)
    return sorted(pod['metadata']['name'] for pod in running
                  if _time(pod['metadata']['creationTimestamp']) <= changed)


class FilterModule(object):
    def filters(self):
        return {'rdma_plugin_stale_pods': rdma_plugin_stale_pods,
                'rdma_plugin_config_written': rdma_plugin_config_written}
