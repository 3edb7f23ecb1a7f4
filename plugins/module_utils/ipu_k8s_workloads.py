# -*- coding: utf-8 -*-
"""The workload examples an operator hands to users, one set per IPU-POD.

The Gcore guide's native examples (section 8.1, root; 8.2, normal user: a training Job and
an inference Deployment) leave IPUOF_VIPU_API_HOST as "localhost" for the user to fix.
Here they are built per IPU-POD from what the nodes derived: the one RDMA network name,
the RDMA resource, that POD's V-IPU controller address and port, and a nodeSelector on
that POD's node label, so the pod lands where that controller's IPUs are reachable. The
IPUJob of section 8.3 is not pinned: the IPU Operator picks the POD (its vipuControllers
entries carry the labels) and the one network name works on every POD's nodes.

Pure Python, standard library only; used through plugins/filter/ipu_k8s_site.py.
"""

import copy

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, name_fragment

# (file name, kind, runAsUser) of the guide's Listings 8.1 to 8.4
NATIVE_EXAMPLES = (
    ('training-job.yaml', 'Job', 0),
    ('inference-deployment.yaml', 'Deployment', 0),
    ('training-job-normal-user.yaml', 'Job', 1000),
    ('inference-deployment-normal-user.yaml', 'Deployment', 1000),
)


def dns_label(text):
    """text as a DNS label fragment (lower case, [a-z0-9-])."""
    label = name_fragment(text)
    if not label:
        raise IpuK8sError("'%s' gives no usable Kubernetes name: name the V-IPU controller with letters or digits "
                          "in ipu_k8s_vipu_controllers" % text)
    return label


def _container(name, image, controller, partition, resource, training):
    container = {
        'name': name,
        'image': image,
        'env': [
            {'name': 'IPUOF_VIPU_API_HOST', 'value': str(controller['host'])},
            {'name': 'IPUOF_VIPU_API_PORT', 'value': str(int(controller['port']))},
            {'name': 'IPUOF_VIPU_API_PARTITION_ID', 'value': partition},
        ],
        'securityContext': {'capabilities': {'add': ['IPC_LOCK']}},
        'resources': {'limits': {resource: 1}, 'requests': {resource: 1}},
    }
    if training:
        container.update(workingDir='/opt/tutorials/simple_applications/pytorch/mnist', command=['bash'],
                         args=['-c', 'pip3 install -r requirements.txt && python3 mnist_poptorch.py --epochs=1'])
    else:
        container['command'] = ['sleep', 'infinity']
    return container


def _pod_template(network, controller, user, container, labels=None):
    key, value = controller['label'].split('=', 1)
    metadata = {'annotations': {'k8s.v1.cni.cncf.io/networks': network}}
    if labels:
        metadata['labels'] = labels
    return {'metadata': metadata,
            'spec': {'securityContext': {'runAsUser': user}, 'nodeSelector': {key: value},
                     'containers': [container]}}


def native_examples(controller, network, resource, namespace, image):
    """{file name: object} of the guide's four native examples for one V-IPU controller
    ({name, host, port, label})."""
    suffix = dns_label(controller['name'])
    examples = {}
    for filename, kind, user in NATIVE_EXAMPLES:
        normal = '-normal-user' if user else ''
        if kind == 'Job':
            name = 'simple-training%s-%s' % (normal, suffix)
            container = _container('mnist-training', image, controller, 'training_partition', resource, True)
            template = _pod_template(network, controller, user, container)
            template['spec']['restartPolicy'] = 'OnFailure'
            obj = {'apiVersion': 'batch/v1', 'kind': 'Job',
                   'metadata': {'name': name, 'namespace': namespace},
                   'spec': {'backoffLimit': 1, 'template': template}}
        else:
            name = 'simple-inference%s-%s' % (normal, suffix)
            container = _container('mnist-inference', image, controller, 'inference_partition', resource, False)
            obj = {'apiVersion': 'apps/v1', 'kind': 'Deployment',
                   'metadata': {'name': name, 'namespace': namespace},
                   'spec': {'replicas': 1, 'selector': {'matchLabels': {'app': name}},
                            'template': _pod_template(network, controller, user, container, {'app': name})}}
        if len(name) > 63:
            raise IpuK8sError("the example name '%s' is longer than 63 characters: give the V-IPU controller a "
                              "shorter name in ipu_k8s_vipu_controllers" % name)
        examples[filename] = obj
    return examples


def workload_examples(controllers, network, resource, namespace, image, ipujob=None):
    """{relative path: object}: <pod>/<example> for each controller, and ipujob.yaml (the
    IPUJob given, unpinned) when one is given."""
    if not controllers:
        raise IpuK8sError('no V-IPU controllers to render workload examples for: the IPU nodes resolved none')
    files = {}
    seen = {}
    for controller in controllers:
        directory = dns_label(controller['name'])
        if directory in seen:
            raise IpuK8sError("V-IPU controllers '%s' and '%s' give the same directory name '%s': rename one in "
                              "ipu_k8s_vipu_controllers" % (seen[directory], controller['name'], directory))
        seen[directory] = controller['name']
        for filename, obj in native_examples(controller, network, resource, namespace, image).items():
            files['%s/%s' % (directory, filename)] = obj
    if ipujob:
        files['ipujob.yaml'] = copy.deepcopy(ipujob)
    return files
