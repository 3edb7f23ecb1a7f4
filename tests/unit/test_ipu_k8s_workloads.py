"""plugins/module_utils/ipu_k8s_workloads.py: the workload examples handed to users, one set per
IPU-POD, as objects. The expected objects are the Gcore guide's native examples (a training
Job and an inference Deployment, as root and as user 1000) written out by hand with one
POD's controller, network and resource filled in; tests/render/test_workload_examples.py
validates what the role writes against the Kubernetes and IPUJob schemas."""

import copy

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_workloads import dns_label, native_examples, workload_examples

POD2 = {'name': 'pod002', 'host': '10.5.212.116', 'port': 8091, 'label': 'graphcore.ai/vipu-ctrl=pod002'}
IMAGE = 'graphcore/pytorch:3.3.0'
RESOURCE = 'rdma/rdma_shared_device_a'
TRAINING_DIR = '/opt/tutorials/simple_applications/pytorch/mnist'
TRAINING_ARGS = ['-c', 'pip3 install -r requirements.txt && python3 mnist_poptorch.py --epochs=1']


def env(partition):
    return [{'name': 'IPUOF_VIPU_API_HOST', 'value': '10.5.212.116'},
            {'name': 'IPUOF_VIPU_API_PORT', 'value': '8091'},
            {'name': 'IPUOF_VIPU_API_PARTITION_ID', 'value': partition}]


LIMITS = {'limits': {RESOURCE: 1}, 'requests': {RESOURCE: 1}}
IPC_LOCK = {'capabilities': {'add': ['IPC_LOCK']}}


def training_job(name, user):
    return {'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': name, 'namespace': 'ml'},
            'spec': {'backoffLimit': 1, 'template': {
                'metadata': {'annotations': {'k8s.v1.cni.cncf.io/networks': 'rdma-net'}},
                'spec': {'securityContext': {'runAsUser': user},
                         'nodeSelector': {'graphcore.ai/vipu-ctrl': 'pod002'},
                         'containers': [{'name': 'mnist-training', 'image': IMAGE, 'env': env('training_partition'),
                                         'securityContext': IPC_LOCK, 'resources': LIMITS,
                                         'workingDir': TRAINING_DIR, 'command': ['bash'], 'args': TRAINING_ARGS}],
                         'restartPolicy': 'OnFailure'}}}}


def inference_deployment(name, user):
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': name, 'namespace': 'ml'},
            'spec': {'replicas': 1, 'selector': {'matchLabels': {'app': name}}, 'template': {
                'metadata': {'annotations': {'k8s.v1.cni.cncf.io/networks': 'rdma-net'}, 'labels': {'app': name}},
                'spec': {'securityContext': {'runAsUser': user},
                         'nodeSelector': {'graphcore.ai/vipu-ctrl': 'pod002'},
                         'containers': [{'name': 'mnist-inference', 'image': IMAGE,
                                         'env': env('inference_partition'), 'securityContext': IPC_LOCK,
                                         'resources': LIMITS, 'command': ['sleep', 'infinity']}]}}}}


EXPECTED_POD2 = {
    'training-job.yaml': training_job('simple-training-pod002', 0),
    'inference-deployment.yaml': inference_deployment('simple-inference-pod002', 0),
    'training-job-normal-user.yaml': training_job('simple-training-normal-user-pod002', 1000),
    'inference-deployment-normal-user.yaml': inference_deployment('simple-inference-normal-user-pod002', 1000),
}


def test_one_controllers_four_examples_in_full():
    examples = native_examples(POD2, 'rdma-net', RESOURCE, 'ml', IMAGE)
    assert examples == EXPECTED_POD2
    assert list(examples) == list(EXPECTED_POD2)


def test_the_port_is_written_as_a_decimal_number():
    controller = dict(POD2, port='08091')
    container = native_examples(controller, 'rdma-net', RESOURCE, 'ml', IMAGE)['training-job.yaml'][
        'spec']['template']['spec']['containers'][0]
    assert container['env'][1] == {'name': 'IPUOF_VIPU_API_PORT', 'value': '8091'}


def test_a_label_value_may_hold_an_equals_sign_after_the_first():
    controller = dict(POD2, label='vipu=a=b')
    template = native_examples(controller, 'rdma-net', RESOURCE, 'ml', IMAGE)['inference-deployment.yaml'][
        'spec']['template']
    assert template['spec']['nodeSelector'] == {'vipu': 'a=b'}


@pytest.mark.parametrize('text, label', [('pod002', 'pod002'), ('POD_1', 'pod-1'), ('  My Pod!! ', 'my-pod'),
                                         ('a__..b', 'a-b'), ('-x-', 'x'), (12, '12')])
def test_dns_label(text, label):
    assert dns_label(text) == label


@pytest.mark.parametrize('text', ['__', '', '!?'])
def test_a_name_without_letters_or_digits_is_refused(text):
    with pytest.raises(IpuK8sError) as refused:
        dns_label(text)
    assert str(refused.value) == ("'%s' gives no usable Kubernetes name: name the V-IPU controller with letters or "
                                  "digits in ipu_k8s_vipu_controllers" % text)


def test_names_up_to_63_characters_are_kept():
    # 'simple-inference-normal-user-' is 29 characters: a 34-character suffix makes 63.
    suffix = 'p' * 34
    examples = native_examples(dict(POD2, name=suffix), 'rdma-net', RESOURCE, 'ml', IMAGE)
    assert examples['inference-deployment-normal-user.yaml']['metadata']['name'] == \
        'simple-inference-normal-user-' + suffix


def test_a_name_longer_than_63_characters_is_refused():
    suffix = 'p' * 35
    with pytest.raises(IpuK8sError) as refused:
        native_examples(dict(POD2, name=suffix), 'rdma-net', RESOURCE, 'ml', IMAGE)
    assert str(refused.value) == (
        "the example name 'simple-inference-normal-user-%s' is longer than 63 characters: give the V-IPU "
        "controller a shorter name in ipu_k8s_vipu_controllers" % suffix)


POD1 = {'name': 'POD 1', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001'}


def test_each_controller_gets_its_directory_and_the_ipujob_is_copied():
    ipujob = {'apiVersion': 'graphcore.ai/v1alpha1', 'kind': 'IPUJob', 'spec': {'workers': {'replicas': 1}}}
    files = workload_examples([POD1, POD2], 'rdma-net', RESOURCE, 'ml', IMAGE, ipujob)
    assert list(files) == ['pod-1/training-job.yaml', 'pod-1/inference-deployment.yaml',
                           'pod-1/training-job-normal-user.yaml', 'pod-1/inference-deployment-normal-user.yaml',
                           'pod002/training-job.yaml', 'pod002/inference-deployment.yaml',
                           'pod002/training-job-normal-user.yaml', 'pod002/inference-deployment-normal-user.yaml',
                           'ipujob.yaml']
    assert dict((path.split('/')[1], obj) for path, obj in files.items() if path.startswith('pod002/')) == EXPECTED_POD2
    assert files['pod-1/training-job.yaml']['metadata']['name'] == 'simple-training-pod-1'
    assert files['ipujob.yaml'] == ipujob
    files['ipujob.yaml']['spec']['workers']['replicas'] = 2
    assert ipujob['spec']['workers']['replicas'] == 1  # the caller's IPUJob is not changed


def test_without_an_ipujob_there_is_no_ipujob_file():
    assert sorted(workload_examples([POD2], 'rdma-net', RESOURCE, 'ml', IMAGE)) == sorted(
        'pod002/' + name for name in EXPECTED_POD2)


def test_no_controllers_is_refused():
    for controllers in ([], None):
        with pytest.raises(IpuK8sError) as refused:
            workload_examples(controllers, 'rdma-net', RESOURCE, 'ml', IMAGE)
        assert str(refused.value) == ('no V-IPU controllers to render workload examples for: the IPU nodes resolved '
                                      'none')


def test_controllers_that_clash_as_directories_are_refused_naming_both():
    with pytest.raises(IpuK8sError) as refused:
        workload_examples([dict(POD2, name='POD_1'), copy.deepcopy(POD1)], 'rdma-net', RESOURCE, 'ml', IMAGE)
    assert str(refused.value) == ("V-IPU controllers 'POD_1' and 'POD 1' give the same directory name 'pod-1': "
                                  "rename one in ipu_k8s_vipu_controllers")
