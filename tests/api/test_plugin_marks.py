"""The RDMA shared device plugin's configuration marks, against a real kube-apiserver (its own
server): a pod is marked with the hash of the configuration only when it is known to have
started from it.

The plugin's DaemonSet mounts the operator's ConfigMap rdma-devices, which holds the policy's
spec.rdmaSharedDevicePlugin.config as config.json (network-operator v25.4.0,
manifests/state-rdma-shared-device-plugin/0050_rdma-shared-dev-plugin-config-map.yaml:18-21
and 0060_rdma-shared-dev-plugin-ds.yaml:71-72, 101-106), and the plugin reads it when it
starts (roles/network_operator/tasks/plugin_pods.yml), so a pod holds the configuration the
ConfigMap carried when it started.
The test plays the operator with a DaemonSet whose pods carry a readiness gate that only the
test opens, so the layer's wait for Ready plugin pods holds at a chosen moment: between the
restart of the plugin and the mark. There the operator writes the previous configuration back
into the ConfigMap, a plugin pod is recreated from it, and the configuration of the policy is
written again, so the ConfigMap carries the run's configuration when the layer looks at it but
one pod started from the other. That pod must not be marked; the layer restarts again.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

from api_client import Api, rdma_plugin_daemonset
from kubernetes import dynamic
from kubernetes.client.rest import ApiException

NAMESPACE = 'network-operator'
PLUGIN = 'app=rdma-shared-dp'
CONFIG_ANNOTATION = 'ipu-k8s/rdma-plugin-config-sha256'
# The readiness gate of the stand-in plugin pods: a pod is Ready only once the test adds this
# condition (pod.spec.readinessGates, honoured by the kubelet).
GATE = 'ipu-k8s.test/released'


def canonical_sha256(config: str) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of a plugin configuration."""
    return hashlib.sha256(json.dumps(json.loads(config), sort_keys=True, separators=(',', ':')).encode()).hexdigest()


class Operator(threading.Thread):
    """The Network Operator's part, played while the layer runs: the ConfigMap rdma-devices
    follows the NicClusterPolicy's plugin configuration, the plugin's DaemonSet (with the
    readiness gate) runs, and every plugin pod's gate is opened, except that, when `race` is
    set, the pods that replaced those in `race` stay gated until the race has been played:
    the previous configuration written back, one replacement recreated from it (its uid kept
    in `stale`), the policy's configuration written again."""

    def __init__(self, api: Api, race: dict | None = None):
        super().__init__(daemon=True)
        self.api, self.race, self.stale = Api(api.kubeconfig), race, None
        self.stop = threading.Event()
        self.error = None

    def pods(self) -> list:
        return [p for p in self.api.core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN).items
                if not p.metadata.deletion_timestamp]

    def write_config(self, config: str) -> None:
        self.api.apply({'apiVersion': 'v1', 'kind': 'ConfigMap',
                        'metadata': {'name': 'rdma-devices', 'namespace': NAMESPACE},
                        'data': {'config.json': config}})

    def configmap(self) -> dict | None:
        return self.api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)

    def open_gates(self) -> None:
        for pod in self.pods():
            conditions = pod.status.conditions or []
            if conditions and not any(c.type == GATE for c in conditions):
                self.api.core.patch_namespaced_pod_status(pod.metadata.name, NAMESPACE, [
                    {'op': 'add', 'path': '/status/conditions/-', 'value': {'type': GATE, 'status': 'True'}}])

    def play_race(self, old_config: str, new_config: str) -> None:
        before = self.race['uids']
        pods = self.pods()
        if len(pods) < self.race['count'] or any(p.metadata.uid in before for p in pods):
            return  # the layer has not restarted the plugin yet
        self.write_config(old_config)
        victim = pods[0]
        self.api.core.delete_namespaced_pod(victim.metadata.name, NAMESPACE)
        deadline = time.monotonic() + 60
        while self.stale is None:
            assert time.monotonic() < deadline, 'the DaemonSet did not recreate %s' % victim.metadata.name
            for pod in self.pods():
                if pod.spec.node_name == victim.spec.node_name and pod.metadata.uid != victim.metadata.uid:
                    self.stale = pod.metadata.uid
            time.sleep(0.2)
        self.write_config(new_config)
        self.race = None

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                policy = self.api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
                if policy:
                    config = policy['spec']['rdmaSharedDevicePlugin']['config']
                    current = self.configmap()
                    if not current or json.loads(current['data']['config.json']) != json.loads(config):
                        if self.race is not None and current:
                            self.race['old'] = current['data']['config.json']
                        self.write_config(config)
                    if not self.api.get('apps/v1', 'DaemonSet', 'rdma-shared-dp-ds', NAMESPACE):
                        daemonset = rdma_plugin_daemonset(NAMESPACE)
                        daemonset['spec']['template']['spec']['readinessGates'] = [{'conditionType': GATE}]
                        self.api.apply(daemonset)
                    if self.race is not None and 'old' in self.race:
                        self.play_race(self.race['old'], config)
                    if self.race is None:
                        self.open_gates()
            except (dynamic.exceptions.ResourceNotFoundError, dynamic.exceptions.DynamicApiError, ApiException):
                self.api.dynamic.resources.invalidate_cache()
            except AssertionError as err:
                self.error = err
                return
            self.stop.wait(0.5)


def run_layer(site, api, operator: Operator, **kwargs):
    operator.start()
    try:
        return site.play('network_operator.yml', **kwargs)
    finally:
        operator.stop.set()
        operator.join(timeout=30)
        assert operator.error is None, operator.error


def plugin_pods(api) -> dict:
    """uid -> (name, mark) of the plugin pods that are not terminating."""
    return {p.metadata.uid: (p.metadata.name, (p.metadata.annotations or {}).get(CONFIG_ANNOTATION))
            for p in api.core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN).items
            if not p.metadata.deletion_timestamp}


def test_a_pod_started_while_the_configmap_held_another_configuration_is_not_marked(site, api):
    run_layer(site, api, Operator(api)).assert_ok()
    before = plugin_pods(api)
    first = canonical_sha256(api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)['data']['config.json'])
    assert len(before) == 3 and {mark for _, mark in before.values()} == {first}, before

    operator = Operator(api, race={'uids': set(before), 'count': len(before)})
    run = run_layer(site, api, operator, extra_vars={'network_operator_rdma_ifnames': ['rdma0']})
    assert operator.stale, 'the race was not played: the layer never restarted the plugin'
    run.assert_ok()
    config = api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)['data']['config.json']
    assert json.loads(config)['configList'][0]['selectors']['ifNames'] == ['rdma0'], config
    after = plugin_pods(api)
    stale = after.get(operator.stale, (None, None))
    assert stale[1] != canonical_sha256(config), \
        'the pod %s started from the previous configuration but is marked with this one' % stale[0]
    assert not set(after) & (set(before) | {operator.stale}), 'plugin pods kept from before: %s' % after
    assert len(after) == 3 and {mark for _, mark in after.values()} == {canonical_sha256(config)}, after

    run_layer(site, api, Operator(api), extra_vars={'network_operator_rdma_ifnames': ['rdma0']}).assert_unchanged()
    assert plugin_pods(api) == after, 'a rerun restarted the plugin'
