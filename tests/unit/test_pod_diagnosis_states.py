"""plugins/filter/pod_diagnosis.py: one line for each pod and container state the kubelet
reports (field names as in the Kubernetes core/v1 PodStatus and ContainerStatus), word for
word, so the line an operator reads at a timeout says exactly what the API said."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('pod_diagnosis', ROOT / 'plugins' / 'filter' / 'pod_diagnosis.py')
diagnosis = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diagnosis)


def pod(phase='Pending', containers=(), init=(), conditions=(), namespace='ns', name='p', **metadata):
    meta = dict(metadata, name=name)
    if namespace:
        meta['namespace'] = namespace
    status = {'containerStatuses': list(containers), 'initContainerStatuses': list(init),
              'conditions': list(conditions)}
    if phase:
        status['phase'] = phase
    return {'metadata': meta, 'status': status}


def container(state, name='c', ready=False, restarts=0, last=None, image='img:1'):
    found = {'name': name, 'ready': ready, 'restartCount': restarts, 'image': image, 'state': state}
    if last is not None:
        found['lastState'] = {'terminated': last}
    return found


def lines(*containers, **kwargs):
    return diagnosis.pods_unready([pod(containers=containers, **kwargs)])


@pytest.mark.parametrize('state, line', [
    ({'waiting': {}}, 'Waiting'),
    ({'waiting': None}, 'Waiting'),
    ({'waiting': {'reason': 'ContainerCreating'}}, 'ContainerCreating'),
    ({'waiting': {'reason': 'PodInitializing'}}, 'PodInitializing'),
    ({'waiting': {'reason': 'ContainerCreating', 'message': ' pulling '}}, 'ContainerCreating: pulling'),
    ({'waiting': {'reason': 'CreateContainerConfigError', 'message': 'secret "x" not found'}},
     'CreateContainerConfigError: secret "x" not found'),
    ({'waiting': {'reason': 'InvalidImageName', 'message': 'bad'}}, 'InvalidImageName of image img:1: bad'),
    ({'waiting': {'reason': 'ErrImageNeverPull'}}, 'ErrImageNeverPull of image img:1'),
    ({'terminated': {'exitCode': 2, 'reason': 'Error', 'message': 'boom '}}, 'terminated, exit code 2 (Error): boom'),
    ({'terminated': {}}, 'terminated, exit code ?'),
    ({'terminated': None}, 'terminated, exit code ?'),
    ({'running': {}}, 'running but not Ready (readiness probe failing?)'),
    ({}, 'no state reported yet'),
])
def test_each_container_state_in_one_line(state, line):
    assert lines(container(state)) == ['ns/p container c: ' + line]


def test_a_crash_loop_without_a_last_state_gives_the_kubelets_message():
    assert lines(container({'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 5m0s'}}, restarts=7)) == [
        'ns/p container c: CrashLoopBackOff (7 restarts): back-off 5m0s']


def test_a_crash_loop_with_a_last_state_gives_it_instead_of_the_message():
    last = {'exitCode': 1, 'reason': 'Error', 'message': 'cannot open /dev/infiniband'}
    assert lines(container({'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}}, restarts=3,
                           last=last)) == [
        'ns/p container c: CrashLoopBackOff (3 restarts), last exit code 1 (Error): cannot open /dev/infiniband']


def test_another_waiting_reason_after_a_crash_gives_both():
    last = {'exitCode': 137}
    assert lines(container({'waiting': {'reason': 'ContainerCreating', 'message': 'x'}}, last=last)) == [
        'ns/p container c: ContainerCreating, last exit code 137: x']


def test_a_restarted_running_container_that_is_not_ready_gives_its_restarts_and_last_exit():
    assert lines(container({'running': {}}, restarts=2, last={'exitCode': 0, 'reason': 'Completed'})) == [
        'ns/p container c: running but not Ready (readiness probe failing?), 2 restarts, last exit code 0 (Completed)']
    assert lines(container({'running': {}}, restarts=2)) == [
        'ns/p container c: running but not Ready (readiness probe failing?), 2 restarts']


def test_init_containers_running_failed_or_done():
    done = container({'terminated': {'exitCode': 0}}, name='wait', ready=False)
    running = container({'running': {}}, name='setup', ready=True)
    app = container({'waiting': {'reason': 'PodInitializing'}}, name='app')
    assert lines(app, init=[done, running]) == ['ns/p init container setup: still running']
    assert lines(container({'running': {}}, name='app'), init=[done]) == [
        'ns/p container app: running but not Ready (readiness probe failing?)']


def test_a_ready_container_beside_a_failing_one_is_not_listed():
    assert lines(container({'running': {}}, name='ok', ready=True), container({}, name='bad')) == [
        'ns/p container bad: no state reported yet']


def test_a_nameless_container_is_a_question_mark_and_a_pod_without_namespace_is_its_name():
    assert diagnosis.pods_unready([pod(containers=[{'state': {}}], namespace=None)]) == [
        'p container ?: no state reported yet']


@pytest.mark.parametrize('given, line', [
    (pod(phase='Running', conditions=[{'type': 'Ready', 'status': 'False', 'reason': 'ContainersNotReady',
                                       'message': 'containers with unready status: [c]'}]),
     'ns/p: Running, Ready=False ContainersNotReady: containers with unready status: [c]'),
    (pod(phase='Running', conditions=[{'type': 'Ready', 'status': 'False'}]), 'ns/p: Running, Ready=False'),
    (pod(phase='Pending'), 'ns/p: Pending, no container status yet'),
    (pod(phase=None), 'ns/p: Unknown, no container status yet'),
    (pod(phase='Failed'), 'ns/p: pod Failed'),
    (pod(phase='Running', deletionTimestamp='2026-11-25T23:10:04Z'), 'ns/p: terminating'),
    (pod(conditions=[{'type': 'PodScheduled', 'status': 'False'}]), 'ns/p: not scheduled'),
])
def test_pod_level_lines(given, line):
    assert diagnosis.pods_unready([given]) == [line]


def test_a_scheduled_pod_is_judged_by_its_containers():
    given = pod(conditions=[{'type': 'PodScheduled', 'status': 'True'}], containers=[container({})])
    assert diagnosis.pods_unready([given]) == ['ns/p container c: no state reported yet']


def test_a_running_pod_whose_ready_condition_is_true_is_fine_and_counted():
    ready = pod(phase='Running', conditions=[{'type': 'PodScheduled', 'status': 'True'},
                                             {'type': 'Ready', 'status': 'True'}])
    assert diagnosis.pods_unready([ready]) == []
    assert diagnosis.pods_diagnosis([ready, pod(phase='Pending')], 'RDMA pods', expected='2') == (
        'RDMA pods: 1 of 2 pod(s) Ready; not Ready:\n- ns/p: Pending, no container status yet')


def test_too_few_pods_are_counted_against_what_is_expected():
    assert diagnosis.pods_diagnosis(None, 'x', expected=2) == 'x: 0 of 0 pod(s) Ready; not Ready:\n- 0 pod(s) found, 2 expected'
    assert diagnosis.pods_unready([pod(phase='Succeeded')], expected='1') == []


@pytest.mark.parametrize('reason', ['ContainerCreating', 'PodInitializing'])
def test_a_container_still_being_created_is_just_that_even_after_an_earlier_exit(reason):
    assert lines(container({'waiting': {'reason': reason}}, last={'exitCode': 1})) == ['ns/p container c: ' + reason]


def test_a_pod_without_a_name_is_a_question_mark():
    nameless = {'metadata': {'namespace': 'ns'}, 'status': {'phase': 'Pending'}}
    assert diagnosis.pods_unready([nameless]) == ['ns/?: Pending, no container status yet']


def test_an_init_container_without_an_image_in_its_status_takes_the_one_of_its_spec():
    given = pod(init=[{'name': 'setup', 'state': {'waiting': {'reason': 'ErrImagePull'}}}])
    given['spec'] = {'initContainers': [{'name': 'setup', 'image': 'busybox:1.36'}], 'containers': []}
    assert diagnosis.pods_unready([given]) == ['ns/p init container setup: ErrImagePull of image busybox:1.36']


def test_a_container_status_is_judged_as_an_app_container_by_default():
    assert diagnosis.container_problem({'ready': True, 'state': {'running': {}}}) is None
