"""The kubeadm role's InitConfiguration, ClusterConfiguration and JoinConfiguration, rendered
through the role's real templates and defaults, judged by kubeadm's validation of the fields they
set (tests/kubeadm_upstream.py restates it, naming the functions; the list of rules and the test
of each: tests/schemas/kubernetes/README.md)."""

import sys

import pytest
import yaml

from ipu_k8s_render import ROOT, render_role_template, role_validate_failures

sys.path.insert(0, str(ROOT / 'tests'))
import kubeadm_upstream as upstream  # noqa: E402

KEY = '0123456789abcdef' * 4  # 32 bytes in hex, as `kubeadm init phase upload-certs` prints one
JOIN = {
    '__kubeadm_advertise_address': '10.0.0.11',
    '__kubeadm_join_command': {'stdout': 'kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef '
                                         '--discovery-token-ca-cert-hash sha256:' + KEY},
    '__kubeadm_certificate_key': {'stdout': '[upload-certs] Using certificate key:\n' + KEY},
}


def init_documents(**overrides):
    overrides.setdefault('__kubeadm_advertise_address', '10.0.0.10')  # the fact roles/kubeadm/tasks/address.yml sets
    overrides.setdefault('ansible_managed', 'Ansible managed')  # what the template module gives
    overrides.setdefault('inventory_hostname', 'poplar-01')
    documents = list(yaml.safe_load_all(render_role_template('kubeadm', 'kubeadm-config.yaml.j2', overrides)))
    return {document['kind']: document for document in documents}


def join_document(control_plane, **overrides):
    overrides = dict(JOIN, ansible_managed='Ansible managed', inventory_hostname='poplar-02', **overrides)
    overrides['groups'] = {'control_plane': ['poplar-01'] + (['poplar-02'] if control_plane else [])}
    return yaml.safe_load(render_role_template('kubeadm', 'join-configuration.yaml.j2', overrides))


def test_the_init_configuration_passes_kubeadms_validation():
    documents = init_documents()
    assert upstream.init_errors(documents['InitConfiguration'], documents['ClusterConfiguration']) == []


@pytest.mark.parametrize('control_plane', [False, True])
def test_the_join_configuration_passes_kubeadms_validation(control_plane):
    join = join_document(control_plane)
    assert ('controlPlane' in join) is control_plane
    assert upstream.join_errors(join) == []


# --- the restatement refuses what kubeadm refuses ---------------------------------------------

@pytest.mark.parametrize('overrides, words', [
    ({'ipu_k8s_node_name': 'Poplar_01'}, 'nodeRegistration.name'),
    ({'kubeadm_cri_socket': '/run/containerd/containerd.sock'}, 'only URL scheme "unix"'),
    ({'__kubeadm_advertise_address': 'poplar-01'}, 'advertiseAddress'),
    ({'kubeadm_api_server_port': 70000}, 'bindPort'),
    ({'kubeadm_dns_domain': 'Cluster.Local'}, 'dnsDomain'),
    ({'ipu_k8s_service_subnet': '10.96.0.0/29'}, 'too small'),
    ({'ipu_k8s_service_subnet': '10.0.0.0/8'}, 'too large'),
    ({'ipu_k8s_pod_subnet': '192.168.0.0/25'}, 'smaller than the size of node subnet'),
    ({'ipu_k8s_pod_subnet': '10.0.0.0/7'}, 'difference is greater than 16'),
])
def test_the_init_restatement_refuses_what_kubeadm_refuses(overrides, words):
    documents = init_documents(**overrides)
    assert words in ' '.join(upstream.init_errors(documents['InitConfiguration'], documents['ClusterConfiguration']))


@pytest.mark.parametrize('discovery, words', [
    ({'bootstrapToken': {'apiServerEndpoint': '10.0.0.10', 'token': 'abcdef.0123456789abcdef',
                         'caCertHashes': ['sha256:' + KEY]}}, 'missing port'),
    ({'bootstrapToken': {'apiServerEndpoint': '10.0.0.10:6443', 'token': 'ABCDEF.0123456789abcdef',
                         'caCertHashes': ['sha256:' + KEY]}}, 'bootstrap token is invalid'),
    ({'bootstrapToken': {'apiServerEndpoint': '10.0.0.10:6443', 'token': 'abcdef.0123456789abcdef'}},
     'without caCertHashes'),
    ({}, 'bootstrapToken or file must be set'),
])
def test_the_join_restatement_refuses_what_kubeadm_refuses(discovery, words):
    join = join_document(False)
    join['discovery'] = discovery
    assert words in ' '.join(upstream.join_errors(join))


def test_the_defaults_fill_an_unset_port_and_dns_domain_before_validation():
    documents = init_documents(kubeadm_api_server_port=0, kubeadm_dns_domain='')
    assert upstream.init_errors(documents['InitConfiguration'], documents['ClusterConfiguration']) == []


def test_a_certificate_key_of_another_size_is_refused():
    assert 'invalid certificate key size 16' in ' '.join(upstream.certificate_key_errors('00' * 16, 'certificateKey'))


# --- settings kubeadm refuses are refused before anything changes -------------------------
# kubeadm refuses these only when `kubeadm init` or `join` runs, after containerd, the
# packages and the kernel settings have been changed on every node: the kubeadm role's
# validation (plugins/filter/ipu_k8s_checks.py, dns_subdomain and cri_socket) refuses them at
# preflight, naming the setting.

KUBEADM_CASES = {
    'dns-domain': {'kubeadm_dns_domain': 'Cluster.Local'},
    'cri-socket': {'kubeadm_cri_socket': '/run/containerd/containerd.sock'},
}


@pytest.mark.parametrize('case', sorted(KUBEADM_CASES))
def test_kubeadm_refuses_these_settings(case):
    documents = init_documents(**KUBEADM_CASES[case])
    assert upstream.init_errors(documents['InitConfiguration'], documents['ClusterConfiguration'])


@pytest.fixture(scope='module')
def validate_failures(tmp_path_factory):
    """The kubeadm validate entry point (what preflight runs), one local host per case."""
    return role_validate_failures(tmp_path_factory.mktemp('kubeadm_rules_validate'), 'kubeadm', dict(KUBEADM_CASES, defaults={}))


@pytest.mark.parametrize('case', sorted(KUBEADM_CASES))
def test_a_setting_kubeadm_refuses_is_refused_by_the_roles_validation(case, validate_failures):
    assert case in validate_failures, 'the role accepts %s' % KUBEADM_CASES[case]
    assert any(name in validate_failures[case] for name in KUBEADM_CASES[case]), validate_failures[case]
