"""plugins/filter/pod_diagnosis.py on pod objects shaped as the API server returns them
(kubectl get pod -o json of the kubelet's and the scheduler's real reports)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('pod_diagnosis', ROOT / 'plugins' / 'filter' / 'pod_diagnosis.py')
diagnosis = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diagnosis)

RBAC_PROXY = 'gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'
MANAGER = 'graphcore/ipu-operator:1.2.0'


def pod(name, phase='Running', conditions=None, containers=None, init=None, namespace='ipu-operator', **meta):
    status = {'phase': phase, 'conditions': conditions or [], 'hostIP': '10.0.0.2', 'qosClass': 'Burstable'}
    if containers is not None:
        status['containerStatuses'] = containers
    if init is not None:
        status['initContainerStatuses'] = init
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': namespace, 'uid': 'uid-' + name, **meta},
            'spec': {'containers': [{'name': c['name'], 'image': c.get('image', '')} for c in containers or []]},
            'status': status}


def conditions(ready):
    flag = 'True' if ready else 'False'
    return [
        {'type': 'PodReadyToStartContainers', 'status': 'True', 'lastTransitionTime': '2026-11-23T10:00:03Z'},
        {'type': 'Initialized', 'status': 'True', 'lastTransitionTime': '2026-11-23T10:00:00Z'},
        {'type': 'Ready', 'status': flag, 'lastTransitionTime': '2026-11-23T10:00:00Z',
         **({} if ready else {'reason': 'ContainersNotReady',
                              'message': 'containers with unready status: [kube-rbac-proxy]'})},
        {'type': 'ContainersReady', 'status': flag, 'lastTransitionTime': '2026-11-23T10:00:00Z'},
        {'type': 'PodScheduled', 'status': 'True', 'lastTransitionTime': '2026-11-23T10:00:00Z'},
    ]


def running(name, image, ready=True, restarts=0, last=None):
    return {'name': name, 'image': image, 'imageID': 'docker.io/' + image + '@sha256:' + '0' * 64,
            'containerID': 'containerd://' + 'a' * 64, 'ready': ready, 'started': True, 'restartCount': restarts,
            'state': {'running': {'startedAt': '2026-11-23T10:00:05Z'}},
            'lastState': {'terminated': last} if last else {}}


def waiting(name, image, reason, message=None, restarts=0, last=None):
    state = {'reason': reason}
    if message:
        state['message'] = message
    return {'name': name, 'image': image, 'imageID': '', 'ready': False, 'started': False, 'restartCount': restarts,
            'state': {'waiting': state}, 'lastState': {'terminated': last} if last else {}}


PULL_MESSAGE = 'Back-off pulling image "%s"' % RBAC_PROXY
ERR_PULL_MESSAGE = ('failed to pull and unpack image "%s": failed to resolve reference "%s": %s: not found'
                    % (RBAC_PROXY, RBAC_PROXY, RBAC_PROXY))
UNSCHEDULABLE = ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: "
                 "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def controller_manager(proxy_status):
    return pod('ipu-operator-controller-manager-6d9f7c7b8-x2x5q', conditions=conditions(False),
               containers=[proxy_status, running('manager', MANAGER)])


def test_a_ready_pod_has_no_problem():
    ready = pod('ok', conditions=conditions(True), containers=[running('manager', MANAGER)])
    assert diagnosis.pods_unready([ready]) == []


def test_a_completed_job_pod_is_not_a_problem():
    done = pod('cert-gen-abcde', phase='Succeeded', containers=[{
        'name': 'create', 'image': 'x', 'ready': False, 'restartCount': 0,
        'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}])
    assert diagnosis.pods_unready([done]) == []


def test_image_pull_back_off_names_pod_container_image_and_the_kubelets_message():
    lines = diagnosis.pods_unready([controller_manager(
        waiting('kube-rbac-proxy', RBAC_PROXY, 'ImagePullBackOff', PULL_MESSAGE))])
    assert lines == ['ipu-operator/ipu-operator-controller-manager-6d9f7c7b8-x2x5q container kube-rbac-proxy: '
                     'ImagePullBackOff of image %s: %s' % (RBAC_PROXY, PULL_MESSAGE)]


def test_err_image_pull_carries_the_registrys_not_found():
    [line] = diagnosis.pods_unready([controller_manager(
        waiting('kube-rbac-proxy', RBAC_PROXY, 'ErrImagePull', ERR_PULL_MESSAGE))])
    assert 'ErrImagePull of image %s' % RBAC_PROXY in line and line.endswith(': not found')


def test_the_image_comes_from_the_spec_when_the_status_has_none():
    status = waiting('kube-rbac-proxy', RBAC_PROXY, 'ImagePullBackOff', PULL_MESSAGE)
    manager = controller_manager(status)
    del status['image']
    assert manager['spec']['containers'][0] == {'name': 'kube-rbac-proxy', 'image': RBAC_PROXY}
    [line] = diagnosis.pods_unready([manager])
    assert 'of image %s' % RBAC_PROXY in line


def test_crash_loop_gives_the_restarts_and_the_last_exit_code():
    last = {'exitCode': 1, 'reason': 'Error', 'startedAt': '2026-11-23T10:05:00Z', 'finishedAt': '2026-11-23T10:05:01Z'}
    status = waiting('manager', MANAGER, 'CrashLoopBackOff',
                     'back-off 5m0s restarting failed container=manager pod=ipu-operator-controller-manager-x',
                     restarts=7, last=last)
    crashing = pod('ipu-operator-controller-manager-x', conditions=conditions(False), containers=[status])
    assert diagnosis.pods_unready([crashing]) == [
        'ipu-operator/ipu-operator-controller-manager-x container manager: '
        'CrashLoopBackOff (7 restarts), last exit code 1 (Error)']


def test_an_oom_killed_crash_loop_says_oom_killed():
    last = {'exitCode': 137, 'reason': 'OOMKilled'}
    status = waiting('manager', MANAGER, 'CrashLoopBackOff', restarts=3, last=last)
    [line] = diagnosis.pods_unready([pod('p', conditions=conditions(False), containers=[status])])
    assert line.endswith('CrashLoopBackOff (3 restarts), last exit code 137 (OOMKilled)')


def test_unschedulable_gives_the_schedulers_message():
    pending = pod('rdma-shared-dp-ds-7x9kq', phase='Pending', namespace='network-operator', conditions=[
        {'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable', 'message': UNSCHEDULABLE,
         'lastTransitionTime': '2026-11-23T10:00:00Z'}])
    assert diagnosis.pods_unready([pending]) == [
        'network-operator/rdma-shared-dp-ds-7x9kq: Unschedulable: ' + UNSCHEDULABLE]


def test_a_failing_init_container_is_named_and_the_waiting_app_container_is_not():
    init = [{'name': 'install-cni', 'image': 'ghcr.io/k8snetworkplumbingwg/plugins:v1.6.2-update.1', 'ready': False,
             'restartCount': 4, 'started': False,
             'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 1m20s restarting failed'}},
             'lastState': {'terminated': {'exitCode': 2, 'reason': 'Error'}}}]
    app = [waiting('kube-multus', 'ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0', 'PodInitializing')]
    initialising = pod('kube-multus-ds-5jz7c', phase='Pending', namespace='network-operator',
                       conditions=conditions(False), containers=app, init=init)
    assert diagnosis.pods_unready([initialising]) == [
        'network-operator/kube-multus-ds-5jz7c init container install-cni: '
        'CrashLoopBackOff (4 restarts), last exit code 2 (Error)']


def test_a_finished_init_container_is_fine_and_the_app_container_is_reported():
    init = [{'name': 'wait', 'image': 'busybox', 'ready': True, 'restartCount': 0,
             'state': {'terminated': {'exitCode': 0, 'reason': 'Completed'}}}]
    app = [waiting('manager', MANAGER, 'ImagePullBackOff', 'Back-off pulling image "%s"' % MANAGER)]
    [line] = diagnosis.pods_unready([pod('p', conditions=conditions(False), containers=app, init=init)])
    assert line.startswith('ipu-operator/p container manager: ImagePullBackOff of image ' + MANAGER)


def test_a_running_container_that_is_not_ready_says_so():
    status = running('manager', MANAGER, ready=False, restarts=2, last={'exitCode': 2, 'reason': 'Error'})
    [line] = diagnosis.pods_unready([pod('p', conditions=conditions(False), containers=[status])])
    assert line == ('ipu-operator/p container manager: running but not Ready (readiness probe failing?), '
                    '2 restarts, last exit code 2 (Error)')


def test_an_evicted_pod_gives_the_kubelets_reason():
    evicted = pod('p', phase='Failed')
    evicted['status'].update(reason='Evicted', message='The node was low on resource: memory.')
    assert diagnosis.pods_unready([evicted]) == ['ipu-operator/p: pod Failed: Evicted: The node was low on resource: memory.']


def test_too_few_pods_is_a_problem_and_none_expected_is_not():
    assert diagnosis.pods_unready([], expected=1) == ['0 pod(s) found, 1 expected']
    assert diagnosis.pods_unready([], expected=0) == []


def test_diagnosis_lists_every_unhealthy_container_under_what_is_awaited():
    pods = [controller_manager(waiting('kube-rbac-proxy', RBAC_PROXY, 'ImagePullBackOff', PULL_MESSAGE)),
            pod('ok', conditions=conditions(True), containers=[running('manager', MANAGER)]),
            pod('pending', phase='Pending', conditions=[
                {'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable', 'message': UNSCHEDULABLE}])]
    message = diagnosis.pods_diagnosis(pods, 'IPU Operator pods in ipu-operator')
    lines = message.splitlines()
    assert lines[0] == 'IPU Operator pods in ipu-operator: 1 of 3 pod(s) Ready; not Ready:'
    assert lines[1].startswith('- ipu-operator/ipu-operator-controller-manager-6d9f7c7b8-x2x5q container '
                               'kube-rbac-proxy: ImagePullBackOff of image ' + RBAC_PROXY)
    assert lines[2] == '- ipu-operator/pending: Unschedulable: ' + UNSCHEDULABLE
    assert len(lines) == 3


def test_diagnosis_of_ready_pods_is_just_the_count():
    ready = [pod('a', conditions=conditions(True), containers=[running('m', MANAGER)])]
    assert diagnosis.pods_diagnosis(ready, 'x') == 'x: 1 of 1 pod(s) Ready'


def test_a_verify_row_passes_when_every_pod_is_ready_or_done_and_there_is_one():
    ready = pod('a', conditions=conditions(True), containers=[running('m', MANAGER)])
    done = pod('cert-gen-abcde', phase='Succeeded', conditions=conditions(False))
    assert diagnosis.pods_ready_observation([ready, done]) == {'ok': True, 'observed': '2 pods, 0 not Ready'}
    assert diagnosis.pods_ready_observation([]) == {'ok': False, 'observed': '0 pods, 0 not Ready'}


def test_a_verify_row_names_each_pod_that_is_not_ready_and_why():
    pending = pod('sched', phase='Pending', conditions=[{'type': 'PodScheduled', 'status': 'False',
                                                         'reason': 'Unschedulable', 'message': 'no node'}])
    seen = diagnosis.pods_ready_observation([controller_manager(waiting('kube-rbac-proxy', RBAC_PROXY,
                                                                       'ImagePullBackOff', PULL_MESSAGE)), pending])
    assert seen == {'ok': False, 'observed': (
        '2 pods, 2 not Ready: ipu-operator/ipu-operator-controller-manager-6d9f7c7b8-x2x5q container kube-rbac-proxy: '
        'ImagePullBackOff of image gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0: Back-off pulling image '
        '"gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0"; ipu-operator/sched: Unschedulable: no node')}


@pytest.mark.parametrize('name', ['pods_unready', 'pods_diagnosis', 'pods_ready_observation'])
def test_filters_are_registered(name):
    assert name in diagnosis.FilterModule().filters()
