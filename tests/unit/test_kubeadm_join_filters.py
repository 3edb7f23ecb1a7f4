"""plugins/filter/kubeadm_join.py: the join secrets read from kubeadm's output
(the formats kubeadm prints, written out by hand here), never echoed in a refusal."""
import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'kubeadm_join.py'
_spec = importlib.util.spec_from_file_location('kubeadm_join', PLUGIN)
join = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(join)

TOKEN = 'abcdef.0123456789abcdef'
CA_HASH = 'sha256:' + '0f' * 32
SECRETS = {'endpoint': '10.0.0.10:6443', 'token': TOKEN, 'ca_cert_hash': CA_HASH}


def test_one_line_join_command_is_parsed():
    output = 'kubeadm join 10.0.0.10:6443 --token %s --discovery-token-ca-cert-hash %s \n' % (TOKEN, CA_HASH)
    assert join.kubeadm_join_secrets(output) == SECRETS


def test_join_command_with_line_continuations_is_parsed():
    output = 'kubeadm join 10.0.0.10:6443 --token %s \\\n\t--discovery-token-ca-cert-hash %s \n' % (TOKEN, CA_HASH)
    assert join.kubeadm_join_secrets(output) == SECRETS


def test_output_without_a_ca_hash_is_refused_without_the_token():
    with pytest.raises(AnsibleFilterError) as refused:
        join.kubeadm_join_secrets('kubeadm join 10.0.0.10:6443 --token %s' % TOKEN)
    assert TOKEN not in str(refused.value) and '<token>' in str(refused.value)


def test_certificate_key_is_the_last_line():
    key = 'c' * 64
    output = '[upload-certs] Storing the certificates in Secret "kubeadm-certs"\n[upload-certs] Using certificate key:\n%s\n' % key
    assert join.kubeadm_certificate_key(output) == key


def test_missing_certificate_key_is_refused():
    with pytest.raises(AnsibleFilterError, match='no certificate key'):
        join.kubeadm_certificate_key('error: etcd cluster is not healthy\n')


def test_host_stopped_by_another_names_it_and_what_it_said():
    hostvars = {'w1': {}, 'w2': {'ansible_failed_task': {'name': 'Run kubeadm join'},
                                 'ansible_failed_result': {'stderr': 'token %s rejected' % TOKEN}}}
    message = join.kubeadm_join_failure(hostvars, ['w1', 'w2'], 'w1')
    assert message.startswith('Joining w1 stopped because joining w2 failed: w2 said in "Run kubeadm join": '
                              'token <token> rejected')
