"""playbooks/remove-node.yml against the real kube-apiserver of the API tier: the Node is
cordoned, its pods evicted and the Node deleted for real; kubeadm is a stand-in.

The stand-in is the reset role's kubeadm (reset_kubeadm_binary), a script that logs its
arguments: the test checks it was called once, with `reset --force`, on the removed node,
and never when the run is refused. Its state file (reset_kubeadm_state_files) is a file of
the test, so the reset role's own guard (kubeadm state present) lets it run.

A ReplicaSet holds one pod bound to poplar-02 (nodeName): the drain (roles/ipu_k8s/tasks/
drain.yml, upgrade.yml's too) evicts it through the Eviction API, so the pod the test saw is gone, and the Node is gone after the run. A second
run finds no Node and changes nothing. Removing cp1, the only control-plane host, is refused
before anything changes.
"""

from __future__ import annotations

import time

import pytest

NODE = 'poplar-02'
NAMESPACE = 'default'
REPLICASET = 'remove-node-probe'
DRAIN = 'ipu_k8s : Evict the node\'s pods, PodDisruptionBudgets respected'


@pytest.fixture(scope='module')
def kubeadm(site):
    log = site.dir / 'remove-node-kubeadm.log'
    stand_in = site.dir / 'remove-node-kubeadm'
    state = site.dir / 'remove-node-kubelet.conf'
    state.write_text('state\n')
    # as kubeadm reset, it removes the node's state: a second run has nothing to reset
    stand_in.write_text('#!/bin/sh\necho "$@" >> %s\nrm -f %s\n' % (log, state))
    stand_in.chmod(0o755)
    return {'log': log, 'vars': {'reset_kubeadm_binary': str(stand_in), 'reset_kubeadm_state_files': [str(state)],
                                 'ipu_k8s_join_config_path': str(site.dir / 'remove-node-join.yaml'),
                                 'remove_node_drain_timeout': 120}}


def calls(kubeadm):
    return kubeadm['log'].read_text().split('\n')[:-1] if kubeadm['log'].exists() else []


def ran(result, task):
    return sorted(host for host, res in result.results(task).items() if not res.get('skipped'))


def _replicaset(api):
    api.apply({'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'metadata': {'name': REPLICASET, 'namespace': NAMESPACE},
               'spec': {'replicas': 1, 'selector': {'matchLabels': {'app': REPLICASET}},
                        'template': {'metadata': {'labels': {'app': REPLICASET}},
                                     'spec': {'nodeName': NODE, 'terminationGracePeriodSeconds': 0,
                                              'containers': [{'name': 'c', 'image': 'probe'}]}}}})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = api.core.list_namespaced_pod(NAMESPACE, label_selector='app=' + REPLICASET).items
        if pods:
            return pods[0].metadata.uid
        time.sleep(1)
    raise AssertionError('the ReplicaSet made no pod in 60 s')


def test_the_last_control_plane_is_refused(site, api, kubeadm):
    result = site.play('remove-node.yml', extra_vars=dict(kubeadm['vars'], remove_node_host='cp1', remove_node_confirm=True))
    assert result.rc != 0, result.explain()
    assert any('the last control-plane host' in m for m in result.failures()), result.failures()
    assert api.get('v1', 'Node', 'cp1') is not None
    assert not calls(kubeadm)


def test_without_confirmation_nothing_changes(site, api, kubeadm):
    result = site.play('remove-node.yml', extra_vars=dict(kubeadm['vars'], remove_node_host=NODE))
    assert result.rc != 0
    assert any('-e remove_node_confirm=true' in m for m in result.failures()), result.failures()
    node = api.get('v1', 'Node', NODE)
    assert node is not None and not node['spec'].get('unschedulable'), node
    assert not calls(kubeadm)


def test_a_drain_a_budget_blocks_stops_naming_the_pod_before_the_reset(site, api, kubeadm):
    """The one drain's refusal (roles/ipu_k8s/tasks/drain.yml): evictions the budget refuses
    are tried again until remove_node_drain_timeout, then the run stops naming the pod left;
    kubeadm reset never ran and the Node stays (cordoned)."""
    uid = _replicaset(api)
    api.apply({'apiVersion': 'policy/v1beta1', 'kind': 'PodDisruptionBudget',
               'metadata': {'name': REPLICASET, 'namespace': NAMESPACE},
               'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': REPLICASET}}}})
    try:
        result = site.play('remove-node.yml', extra_vars=dict(kubeadm['vars'], remove_node_host=NODE,
                                                              remove_node_confirm=True, remove_node_drain_timeout=10))
        assert result.rc != 0, result.explain()
        message = ' '.join(' '.join(result.failures()).split())
        assert 'The drain of %s did not finish within remove_node_drain_timeout=10 seconds' % NODE in message, message
        pod = [p.metadata.name for p in api.core.list_namespaced_pod(NAMESPACE, label_selector='app=' + REPLICASET).items
               if p.metadata.uid == uid][0]
        assert 'Pods still on the node: %s/%s (ReplicaSet %s)' % (NAMESPACE, pod, REPLICASET) in message, message
        assert not calls(kubeadm)
        assert api.get('v1', 'Node', NODE)['spec'].get('unschedulable') is True
    finally:
        api.resource('policy/v1beta1', 'PodDisruptionBudget').delete(name=REPLICASET, namespace=NAMESPACE)


def test_a_node_is_drained_reset_and_deleted(site, api, kubeadm):
    uid = _replicaset(api)
    result = site.play('remove-node.yml', extra_vars=dict(kubeadm['vars'], remove_node_host=NODE, remove_node_confirm=True))
    assert result.rc == 0, result.stdout[-4000:]
    assert api.get('v1', 'Node', NODE) is None
    assert uid not in [p.metadata.uid for p in api.core.list_namespaced_pod(NAMESPACE).items], 'the pod was not evicted'
    # kubeadm reset ran once, on the removed node alone (the other hosts share this machine)
    assert calls(kubeadm) == ['reset --force']
    assert ran(result, 'reset : Reset the node with kubeadm') == [NODE], result.explain()
    # the one drain (roles/ipu_k8s/tasks/drain.yml, upgrade.yml's too), from cp1
    assert ran(result, DRAIN) == ['cp1'], result.explain()
    # kubernetes.core.k8s_drain's own account: the ReplicaSet's pod was evicted
    assert '1 Pod(s) deleted from node.' in result.results(DRAIN)['cp1']['result']
    assert 'run playbooks/rdma_network.yml' in result.stdout
    site.play('remove-node.yml',
              extra_vars=dict(kubeadm['vars'], remove_node_host=NODE, remove_node_confirm=True)).assert_unchanged()
    assert calls(kubeadm) == ['reset --force']
