"""The workload examples an operator hands to users, one set per IPU-POD, written by the
ipu_operator role's examples entry point, run through a play with the site model of the
V-IPU controllers the IPU nodes resolved and the settings as extra vars, and read back: the guide's native examples (8.1/8.2:
training Job, inference Deployment, root and normal user) valid for the Kubernetes minor
in use (kubernetes-validate, strict), the IPUJob valid against the IPUJob CRD's schema;
each POD's pods ask for the one network name and the RDMA resource, carry that POD's
IPUOF_VIPU_API_HOST/PORT and select that POD's nodes by its label."""

import sys

import kubernetes_validate
import pytest
import yaml

from ipu_k8s_render import ROOT, SCHEMAS, validate_custom_resource

sys.path.insert(0, str(ROOT / 'tests'))
from ansible_collections.ipu_k8s.cluster.plugins.module_utils import ipu_k8s_vipu_controllers  # noqa: E402
from ansible_collections.ipu_k8s.cluster.plugins.module_utils import ipu_k8s_rdma  # noqa: E402
from playbook_runner import run_playbook  # noqa: E402

SHARED = yaml.safe_load((ROOT / 'roles/ipu_k8s/defaults/main/main.yml').read_text())
MINOR = '.'.join(SHARED['ipu_k8s_kubernetes_version'].split('.')[:2])
IPUJOB_CRD = SCHEMAS / 'ipu_operator' / 'ipujobs.graphcore.ai-1.2.0.yaml'


def fact(host, name, label, port=8090):
    return {'host': host, 'port': port, 'name': name, 'label': label, 'address': '%s:%d' % (host, port)}


TWO_PODS = {'poplar-01': fact('10.247.208.5', 'pod001', 'vipu-ctrl=pod001'),
            'poplar-02': fact('10.247.208.5', 'pod001', 'vipu-ctrl=pod001'),
            'poplar-11': fact('10.5.212.116', 'pod002', 'graphcore.ai/vipu-ctrl=pod002', 8091)}


def examples(tmp, node_facts, **overrides):
    """{path: text} as the examples entry point writes them into ipu_operator_examples_dir."""
    plan = ipu_k8s_vipu_controllers.site_model(dict((h, {'vipu_server': f}) for h, f in node_facts.items()))['operator']
    out, play = tmp / 'workloads', tmp / 'play.yml'
    play.write_text(yaml.safe_dump([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [{
        'ansible.builtin.include_role': {'name': 'ipu_operator', 'tasks_from': 'examples'}}]}]))
    run = run_playbook(play, 'localhost,', tmp / 'runner', cmdline=['-c', 'local'], timeout=120,
                       extravars=dict(overrides, ipu_k8s_site={'operator': plan}, ipu_operator_examples_dir=str(out),
                                      ansible_python_interpreter=sys.executable),
                       envvars={'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'})
    assert run.rc == 0, run.stdout[-3000:]
    return dict((str(path.relative_to(out)), path.read_text()) for path in out.rglob('*.yaml'))


@pytest.fixture(scope='module')
def two_pods(tmp_path_factory):
    return dict((path, yaml.safe_load(text)) for path, text in examples(tmp_path_factory.mktemp('two'), TWO_PODS).items())


def test_each_pod_gets_the_four_native_examples_and_there_is_one_ipujob(two_pods):
    assert sorted(two_pods) == sorted(
        ['%s/%s' % (pod, f) for pod in ('pod001', 'pod002') for f in (
            'training-job.yaml', 'inference-deployment.yaml', 'training-job-normal-user.yaml',
            'inference-deployment-normal-user.yaml')] + ['ipujob.yaml'])


def test_native_examples_are_valid_kubernetes_objects(two_pods):
    for path, obj in two_pods.items():
        if path != 'ipujob.yaml':
            kubernetes_validate.validate(obj, MINOR, strict=True)


def test_a_misspelt_field_fails_the_strict_validation(two_pods):
    wrong = yaml.safe_load(yaml.safe_dump(two_pods['pod001/training-job.yaml']))
    wrong['spec']['template']['spec']['nodeSelecter'] = wrong['spec']['template']['spec'].pop('nodeSelector')
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, MINOR, strict=True)


def test_the_ipujob_matches_the_crd_schema_and_is_not_pinned_to_a_pod(two_pods):
    ipujob = two_pods['ipujob.yaml']
    validate_custom_resource(ipujob, IPUJOB_CRD)
    assert ipujob['kind'] == 'IPUJob'
    assert ipujob['spec']['workers']['template']['metadata']['annotations'] == {
        'k8s.v1.cni.cncf.io/networks': 'rdma-net'}
    assert 'nodeSelector' not in ipujob['spec']['workers']['template']['spec']


@pytest.mark.parametrize('pod, host, port, label', [('pod001', '10.247.208.5', '8090', ('vipu-ctrl', 'pod001')),
                                                    ('pod002', '10.5.212.116', '8091',
                                                     ('graphcore.ai/vipu-ctrl', 'pod002'))])
def test_each_pods_examples_reach_that_pods_controller_on_its_nodes(two_pods, pod, host, port, label):
    names = set()
    for path, obj in two_pods.items():
        if not path.startswith(pod + '/'):
            continue
        names.add(obj['metadata']['name'])
        assert obj['metadata']['name'].endswith('-' + pod) and obj['metadata']['namespace'] == 'default'
        template = obj['spec']['template']
        assert template['metadata']['annotations'] == {'k8s.v1.cni.cncf.io/networks': 'rdma-net'}
        assert template['spec']['nodeSelector'] == dict([label])
        user = 1000 if 'normal-user' in path else 0
        assert template['spec']['securityContext'] == {'runAsUser': user}
        (container,) = template['spec']['containers']
        env = dict((e['name'], e['value']) for e in container['env'])
        assert (env['IPUOF_VIPU_API_HOST'], env['IPUOF_VIPU_API_PORT']) == (host, port)
        assert env['IPUOF_VIPU_API_PARTITION_ID'] == ('training_partition' if 'training' in path
                                                      else 'inference_partition')
        assert container['resources'] == {'limits': {'rdma/rdma_shared_device_a': 1},
                                          'requests': {'rdma/rdma_shared_device_a': 1}}
        assert container['securityContext'] == {'capabilities': {'add': ['IPC_LOCK']}}
    assert len(names) == 4


def test_one_pod_gets_one_set_with_the_shared_settings(tmp_path):
    one = dict((h, f) for h, f in TWO_PODS.items() if h != 'poplar-11')
    written = examples(tmp_path, one, ipu_k8s_rdma_network_name='ipu-rdma', ipu_k8s_rdma_resource_name='hca',
                       ipu_k8s_rdma_network_namespace='ml', ipu_operator_smoke_image='graphcore/pytorch:3.3.0')
    assert sorted(p.split('/')[0] for p in written if '/' in p) == ['pod001'] * 4
    job = yaml.safe_load(written['pod001/training-job.yaml'])
    assert job['metadata']['namespace'] == 'ml'
    assert job['spec']['template']['metadata']['annotations'] == {'k8s.v1.cni.cncf.io/networks': 'ipu-rdma'}
    (container,) = job['spec']['template']['spec']['containers']
    assert container['image'] == 'graphcore/pytorch:3.3.0' and 'rdma/hca' in container['resources']['limits']


def test_controller_names_that_clash_as_directories_are_refused():
    from ansible_collections.ipu_k8s.cluster.plugins.module_utils import ipu_k8s_workloads
    controllers = [{'name': 'POD_1', 'host': '10.0.0.1', 'port': 8090, 'label': 'a=b'},
                   {'name': 'pod-1', 'host': '10.0.0.2', 'port': 8090, 'label': 'a=c'}]
    with pytest.raises(ipu_k8s_rdma.IpuK8sError, match="same directory name 'pod-1'"):
        ipu_k8s_workloads.workload_examples(controllers, 'rdma-net', 'rdma/x', 'default', 'img')
