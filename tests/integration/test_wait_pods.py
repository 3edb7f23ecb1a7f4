"""The waits of the operator layers, run for real through ansible-runner (connection local)
against a small stand-in of the Kubernetes API on 127.0.0.1 that serves Deployments,
DaemonSets and Pods shaped as the API server returns them. The real kubernetes.core modules
and Python client send their real requests; the stand-in answers with pods that are Ready,
in image pull back-off, crash-looping or unschedulable, and the tests read the message a
person would see (the failed event's msg): which pod, which container, and why."""

import json
import sys
from pathlib import Path

import pytest
import yaml

from json_api import JsonApi, not_found

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
RBAC_PROXY = 'gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'


def pod(name, namespace, labels, ready=True, waiting=None, phase='Running', scheduled=None, container='main',
        image='registry.example/app:1', last=None, restarts=0):
    state = {'running': {'startedAt': '2026-11-23T10:00:05Z'}} if not waiting else {'waiting': waiting}
    conditions = [{'type': 'Ready', 'status': 'True' if ready else 'False'},
                  {'type': 'PodScheduled', 'status': 'True'}]
    status = {'phase': phase, 'conditions': conditions,
              'containerStatuses': [{'name': container, 'image': image, 'ready': ready, 'restartCount': restarts,
                                     'state': state, 'lastState': {'terminated': last} if last else {}}]}
    if scheduled:
        status = {'phase': 'Pending', 'conditions': [
            {'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable', 'message': scheduled}]}
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': namespace, 'labels': labels, 'uid': 'uid-' + name},
            'spec': {'containers': [{'name': container, 'image': image}]}, 'status': status}


def workload(kind, name, namespace, labels, count):
    status = {'desiredNumberScheduled': count, 'numberReady': 0} if kind == 'DaemonSet' else {}
    spec = {'selector': {'matchLabels': labels}}
    if kind == 'Deployment':
        spec['replicas'] = count
    return {'apiVersion': 'apps/v1', 'kind': kind, 'metadata': {'name': name, 'namespace': namespace, 'uid': name},
            'spec': spec, 'status': status}


class Api(JsonApi):
    """Discovery, Deployments, DaemonSets and Pods (label and status.phase field selectors)."""

    STATIC = {
        '/version': {'major': '1', 'minor': '33', 'gitVersion': 'v1.33.5'},
        '/api': {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []},
        '/apis': {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': [
            {'name': 'apps', 'versions': [{'groupVersion': 'apps/v1', 'version': 'v1'}],
             'preferredVersion': {'groupVersion': 'apps/v1', 'version': 'v1'}},
            {'name': 'mellanox.com', 'versions': [{'groupVersion': 'mellanox.com/v1alpha1',
                                                   'version': 'v1alpha1'}],
             'preferredVersion': {'groupVersion': 'mellanox.com/v1alpha1', 'version': 'v1alpha1'}}]},
        '/apis/mellanox.com/v1alpha1': {
            'kind': 'APIResourceList', 'groupVersion': 'mellanox.com/v1alpha1', 'resources': [
                {'name': 'macvlannetworks', 'singularName': 'macvlannetwork', 'namespaced': False,
                 'kind': 'MacvlanNetwork', 'verbs': ['get', 'list', 'watch']}]},
        '/api/v1': {'kind': 'APIResourceList', 'groupVersion': 'v1', 'resources': [
            {'name': 'pods', 'singularName': 'pod', 'namespaced': True, 'kind': 'Pod',
             'verbs': ['get', 'list', 'watch']}]},
        '/apis/apps/v1': {'kind': 'APIResourceList', 'groupVersion': 'apps/v1', 'resources': [
            {'name': 'deployments', 'singularName': 'deployment', 'namespaced': True,
             'kind': 'Deployment', 'verbs': ['get', 'list', 'watch']},
            {'name': 'daemonsets', 'singularName': 'daemonset', 'namespaced': True,
             'kind': 'DaemonSet', 'verbs': ['get', 'list', 'watch']}]},
    }

    def __init__(self):
        self.objects = []
        self.queries = []
        super().__init__()

    def answer(self, path, query, headers):
        if path in self.STATIC:
            return 200, self.STATIC[path]
        parts = path.split('/')
        if path.startswith('/apis/mellanox.com/v1alpha1/macvlannetworks/'):
            found = [o for o in self.objects if o['kind'] == 'MacvlanNetwork'
                     and o['metadata']['name'] == parts[-1]]
            if found:
                return 200, found[0]
            return not_found('not found')
        # /api/v1/namespaces/NS/pods or /apis/apps/v1/namespaces/NS/KIND[/NAME]
        if 'namespaces' in parts:
            at = parts.index('namespaces')
            namespace, plural = parts[at + 1], parts[at + 2]
            name = parts[at + 3] if len(parts) > at + 3 else None
            kind = {'pods': 'Pod', 'deployments': 'Deployment', 'daemonsets': 'DaemonSet'}[plural]
            self.queries.append((kind, namespace, name, query))
            found = [o for o in self.objects if o['kind'] == kind and o['metadata']['namespace'] == namespace]
            if name:
                match = [o for o in found if o['metadata']['name'] == name]
                if match:
                    return 200, match[0]
                return not_found('%s "%s" not found' % (plural, name))
            for selector in ','.join(query.get('labelSelector', [])).split(','):
                if selector:
                    key, value = selector.split('=')
                    found = [o for o in found if o['metadata'].get('labels', {}).get(key) == value]
            for selector in query.get('fieldSelector', []):
                if selector == 'status.phase!=Succeeded':
                    found = [o for o in found if o['status'].get('phase') != 'Succeeded']
            return 200, {'kind': kind + 'List', 'apiVersion': 'v1',
                         'metadata': {'resourceVersion': '1'}, 'items': found}
        return 404, {'kind': 'Status', 'code': 404, 'message': 'no %s here' % path}


@pytest.fixture
def api():
    stand_in = Api()
    yield stand_in
    stand_in.close()


# The failing waits time out after 1 s with one look a second apart (two looks in all):
# what they report does not depend on how long they waited.
QUICK = {'ipu_k8s_wait_poll_seconds': 1}


def run(tmp_path, api, role, tasks_from, **extra):
    extra = dict(QUICK, **extra)
    play = [{'name': 'Wait', 'hosts': 'cp1', 'gather_facts': False,
             'tasks': [{'name': 'Run ' + step, 'ansible.builtin.include_role': {'name': role, 'tasks_from': step}}
                       for step in ([tasks_from] if isinstance(tasks_from, str) else tasks_from)]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'cp1': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
    extra_vars = dict(ipu_k8s_kubeconfig=str(api.kubeconfig(tmp_path / 'kubeconfig')), **extra)
    (tmp_path / 'extra.json').write_text(json.dumps(extra_vars))
    return run_playbook(tmp_path / 'play.yml', tmp_path / 'hosts.yml', tmp_path,
                        envvars={'ANSIBLE_LOCAL_TEMP': str(tmp_path / 'ansible-tmp')},
                        cmdline=['-e', '@%s' % (tmp_path / 'extra.json')], timeout=600)


def failure_message(result):
    """The msg of the last failed task (its runner_on_failed event)."""
    failed = result.failure_messages()
    assert failed, result.stdout[-4000:]
    return failed[-1]


NETWORK_OPERATOR = {'app.kubernetes.io/name': 'network-operator'}
RDMA_PLUGIN = {'app': 'rdma-shared-dp'}


def network_operator_objects(rdma_pods, scheduled):
    """The operator, a crash-looping NFD worker (not awaited here), and the plugin's DaemonSet
    (its upstream name) scheduling `scheduled` pods, with `rdma_pods`."""
    return [workload('Deployment', 'network-operator', 'network-operator', NETWORK_OPERATOR, 1),
            workload('DaemonSet', 'rdma-shared-dp-ds', 'network-operator', RDMA_PLUGIN, scheduled),
            pod('network-operator-7c9f6b7d6-abcde', 'network-operator', NETWORK_OPERATOR),
            pod('nfd-worker-xyz', 'network-operator', {'app': 'nfd-worker'},
                ready=False, waiting={'reason': 'CrashLoopBackOff'}, restarts=3)] + rdma_pods


def test_network_operator_wait_names_the_device_plugin_pod_its_image_and_the_kubelets_message(tmp_path, api):
    message = 'Back-off pulling image "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2"'
    api.objects = network_operator_objects([
        pod('rdma-shared-dp-ds-7x9kq', 'network-operator', RDMA_PLUGIN, ready=False,
            waiting={'reason': 'ImagePullBackOff', 'message': message}, container='rdma-shared-dp',
            image='ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2')], 1)
    result = run(tmp_path, api, 'network_operator', 'wait', network_operator_wait_timeout=1)
    assert result.rc != 0
    msg = failure_message(result)
    assert 'Failed to gather information about Pod' not in msg
    assert msg.startswith('Not Ready after 1s - the RDMA shared device plugin (DaemonSet rdma-shared-dp-ds in '
                          'namespace network-operator): 0 of 1 pod(s) Ready; not Ready:\n'), msg
    assert ('- network-operator/rdma-shared-dp-ds-7x9kq container rdma-shared-dp: ImagePullBackOff of image '
            'ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2: ' + message) in msg
    # Only the awaited pods are diagnosed: not the crash-looping NFD worker.
    assert 'nfd-worker' not in msg


def test_network_operator_chart_wait_names_the_crash_looping_nfd_worker(tmp_path, api):
    # Names and labels of the NFD subchart at 25.4.0 for the release network-operator.
    nfd = {'app.kubernetes.io/name': 'node-feature-discovery', 'app.kubernetes.io/instance': 'network-operator'}
    master, worker = dict(nfd, role='master'), dict(nfd, role='worker')
    api.objects = [
        workload('Deployment', 'network-operator', 'network-operator', NETWORK_OPERATOR, 1),
        pod('network-operator-7c9f6b7d6-abcde', 'network-operator', NETWORK_OPERATOR),
        workload('Deployment', 'network-operator-node-feature-discovery-master', 'network-operator', master, 1),
        pod('network-operator-node-feature-discovery-master-5b8-q', 'network-operator', master),
        workload('DaemonSet', 'network-operator-node-feature-discovery-worker', 'network-operator', worker, 2),
        pod('network-operator-node-feature-discovery-worker-a', 'network-operator', worker),
        pod('network-operator-node-feature-discovery-worker-b', 'network-operator', worker, ready=False, container='worker',
            waiting={'reason': 'CrashLoopBackOff', 'message': 'back-off 5m0s restarting failed'},
            last={'exitCode': 1, 'reason': 'Error'}, restarts=7)]
    msg = failure_message(run(tmp_path, api, 'network_operator', 'wait_chart', network_operator_wait_timeout=1))
    assert msg.startswith('Not Ready after 1s - the Node Feature Discovery workers in namespace network-operator: '
                          '1 of 2 pod(s) Ready; not Ready:\n'), msg
    assert ('- network-operator/network-operator-node-feature-discovery-worker-b container worker: CrashLoopBackOff '
            '(7 restarts), last exit code 1 (Error)') in msg
    # The operator and the master were awaited first, each by its Deployment's selector.
    assert ('Pod', 'network-operator', None, {'labelSelector': ['app.kubernetes.io/name=network-operator']}) in api.queries
    assert ('Pod', 'network-operator', None, {'labelSelector': [
        'app.kubernetes.io/instance=network-operator,app.kubernetes.io/name=node-feature-discovery,role=master']}) \
        in api.queries


def test_network_operator_wait_with_no_device_plugin_pod_says_so_and_hints_at_nfd(tmp_path, api):
    api.objects = network_operator_objects([], 1)
    msg = failure_message(run(tmp_path, api, 'network_operator', 'wait', network_operator_wait_timeout=1))
    assert '0 of 0 pod(s) Ready; not Ready:\n- 0 pod(s) found, 1 expected' in msg
    assert 'feature.node.kubernetes.io/pci-15b3.present' in msg


def test_network_operator_wait_passes_when_every_awaited_pod_is_ready_and_shows_as_a_wait(tmp_path, api):
    api.objects = network_operator_objects([pod('rdma-shared-dp-ds-1', 'network-operator', RDMA_PLUGIN),
                                            pod('rdma-shared-dp-ds-2', 'network-operator', RDMA_PLUGIN)], 2)
    result = run(tmp_path, api, 'network_operator', 'wait', network_operator_wait_timeout=1)
    assert result.rc == 0, result.stdout[-4000:]
    assert any('Wait until these pods are Ready - the RDMA shared device plugin' in e['event_data']['task']
               for e in result.host_events(host='cp1') if e['event'] != 'runner_on_skipped'), result.stdout[-4000:]
    assert result.host_stats()['cp1']['changed'] == 0 and result.host_stats()['cp1']['failures'] == 0


def test_a_wait_retries_before_it_fails(tmp_path, api):
    api.objects = [workload('Deployment', 'tigera-operator', 'tigera-operator', {'name': 'tigera-operator'}, 1),
                   pod('tigera-operator-5d7f-q', 'tigera-operator', {'name': 'tigera-operator'}, ready=False,
                       waiting={'reason': 'ErrImagePull', 'message': 'failed to pull and unpack image: not found'},
                       image='quay.io/tigera/operator:v1.38.0')]
    # Every ipu_k8s_wait_poll_seconds the wait looks again, as many times as fill the timeout:
    # 3 s at 1 s apart is a first look and 3 more, 4 tries (ansible-core 2.19's until counts the
    # first run in: ansible/executor/task_executor.py lines 606-608 and 733, `retries` = 1 + task retries).
    result = run(tmp_path, api, 'calico', ['apply', 'wait'], calico_wait_timeout=3, ipu_k8s_wait_poll_seconds=1)
    retries = [e for e in result.events if e['event'] == 'runner_retry']
    assert len(retries) == 3 and all(e['event_data']['task'].startswith(
        'Wait until these pods are Ready - the Tigera operator') for e in retries), result.stdout[-4000:]
    assert [e['event_data']['res']['retries'] for e in retries] == [4] * 3
    msg = failure_message(result)
    assert ('- tigera-operator/tigera-operator-5d7f-q container main: ErrImagePull of image '
            'quay.io/tigera/operator:v1.38.0: failed to pull and unpack image: not found') in msg
    # The pod list itself is not dumped into the output: no task result carries it.
    assert '"containerStatuses"' not in json.dumps([e.get('event_data', {}).get('res') for e in result.events])


def test_calico_wait_counts_the_daemonsets_desired_pods_and_names_the_crash_looping_one(tmp_path, api):
    node = {'k8s-app': 'calico-node'}
    api.objects = [workload('Deployment', 'tigera-operator', 'tigera-operator', {'name': 'tigera-operator'}, 1),
                   pod('tigera-operator-5d7f-q', 'tigera-operator', {'name': 'tigera-operator'}),
                   workload('DaemonSet', 'calico-node', 'calico-system', node, 3),
                   pod('calico-node-a', 'calico-system', node),
                   pod('calico-node-b', 'calico-system', node, ready=False, container='calico-node',
                       waiting={'reason': 'CrashLoopBackOff', 'message': 'back-off 2m40s restarting failed'},
                       last={'exitCode': 1, 'reason': 'Error'}, restarts=5)]
    # apply.yml finds the cluster's kubeconfig (and, with no manifests fetched, applies nothing)
    msg = failure_message(run(tmp_path, api, 'calico', ['apply', 'wait'], calico_wait_timeout=1))
    assert 'calico-node on every node (DaemonSet calico-system/calico-node): 1 of 2 pod(s) Ready' in msg
    assert '- 2 pod(s) found, 3 expected' in msg
    assert '- calico-system/calico-node-b container calico-node: CrashLoopBackOff (5 restarts), last exit code 1 (Error)' in msg


def test_completed_pods_are_left_out_and_an_unschedulable_one_gives_the_schedulers_message(tmp_path, api):
    why = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    done = pod('cert-job-x', 'ipu-operator', {}, phase='Succeeded', ready=False)
    api.objects = [done, pod('ipu-operator-controller-manager-x', 'ipu-operator', {}, scheduled=why)]
    msg = failure_message(run(tmp_path, api, 'ipu_k8s', 'wait_pods', __ipu_k8s_wait_awaited='the IPU Operator pods',
                              __ipu_k8s_wait_namespace='ipu-operator', __ipu_k8s_wait_timeout=1,
                              __ipu_k8s_wait_field_selectors=['status.phase!=Succeeded']))
    assert msg.endswith('the IPU Operator pods: 0 of 1 pod(s) Ready; not Ready:\n'
                        '- ipu-operator/ipu-operator-controller-manager-x: Unschedulable: ' + why)


def test_a_workload_that_never_appears_is_named(tmp_path, api):
    # apply.yml finds the cluster's kubeconfig (and, with no manifests fetched, applies nothing)
    msg = failure_message(run(tmp_path, api, 'calico', ['apply', 'wait'], calico_wait_timeout=1))
    assert 'Deployment tigera-operator/tigera-operator' in msg and 'did not appear' in msg, msg


def test_an_api_that_does_not_answer_is_reported_as_such(tmp_path, api):
    api.url = 'http://127.0.0.1:9'  # nothing listens there
    msg = failure_message(run(tmp_path, api, 'ipu_k8s', 'wait_pods', __ipu_k8s_wait_awaited='the IPU Operator pods',
                              __ipu_k8s_wait_namespace='ipu-operator', __ipu_k8s_wait_timeout=1))
    assert msg.startswith('Could not read the IPU Operator pods: '), msg
    assert 'Connection refused' in msg or 'Max retries exceeded' in msg, msg


def test_macvlan_network_wait_gives_its_state_and_the_network_operator_pods_that_are_not_ready(tmp_path, api):
    multus = {'name': 'multus'}
    init = {'name': 'install-multus-binary', 'image': 'ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0',
            'ready': False, 'restartCount': 2,
            'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 40s restarting failed'}},
            'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error'}}}
    initialising = pod('kube-multus-ds-5jz7c', 'network-operator', multus, ready=False, phase='Pending',
                       waiting={'reason': 'PodInitializing'}, container='kube-multus')
    initialising['status']['initContainerStatuses'] = [init]
    api.objects = [{'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'MacvlanNetwork',
                    'metadata': {'name': 'rdma-net', 'uid': 'uid-rdma-net'},
                    'spec': {'master': 'ens1f0np0'},
                    'status': {'state': 'notReady', 'reason': 'NetworkAttachmentDefinition not created'}},
                   pod('network-operator-7c9f6b7d6-abcde', 'network-operator', NETWORK_OPERATOR),
                   initialising]
    # One IPU-POD (what the site model before the wait holds): the network is a MacvlanNetwork.
    msg = failure_message(run(tmp_path, api, 'rdma_network', 'wait', rdma_network_wait_timeout=5,
                              ipu_k8s_site={'pods': [{'name': 'pod001'}]}))
    assert 'MacvlanNetwork rdma-net was not ready after 5s: state "notReady", reason "NetworkAttachmentDefinition not created"' in msg
    assert 'The Network Operator pods in namespace network-operator: 1 of 2 pod(s) Ready; not Ready:' in msg
    assert ('- network-operator/kube-multus-ds-5jz7c init container install-multus-binary: '
            'CrashLoopBackOff (2 restarts), last exit code 1 (Error)') in msg
