"""plugins/filter/kubeadm_join.py: each refusal and join-failure message word
for word (secrets redacted, kubeadm's text on one line), and where a token or key ends."""
import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'kubeadm_join.py'
_spec = importlib.util.spec_from_file_location('kubeadm_join', PLUGIN)
join = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(join)

TOKEN = 'abcdef.0123456789abcdef'
KEY = '0f' * 32
ADVICE = 'Fix the cause, then run `kubeadm reset -f` on %s (or playbooks/reset.yml) and run the playbook again.'


def failed(task, **result):
    facts = {'ansible_failed_result': result}
    if task is not None:
        facts['ansible_failed_task'] = {'name': task} if task else {}
    return facts


def test_a_join_command_without_its_ca_hash_is_refused_with_the_output_redacted():
    with pytest.raises(AnsibleFilterError) as refused:
        join.kubeadm_join_secrets('  kubeadm join 10.0.0.10:6443 --token %s\n' % TOKEN)
    assert str(refused.value) == ('`kubeadm token create --print-join-command` printed no join command with an '
                                  'endpoint, a token and a CA hash: kubeadm join 10.0.0.10:6443 --token <token>')


@pytest.mark.parametrize('output', [None, ''])
def test_no_output_is_refused(output):
    with pytest.raises(AnsibleFilterError, match='printed no join command'):
        join.kubeadm_join_secrets(output)


def test_a_token_or_hash_running_into_more_text_is_not_taken():
    longer = 'kubeadm join 10.0.0.10:6443 --token %sx --discovery-token-ca-cert-hash sha256:%s' % (TOKEN, KEY)
    with pytest.raises(AnsibleFilterError):
        join.kubeadm_join_secrets(longer)
    longer = 'kubeadm join 10.0.0.10:6443 --token %s --discovery-token-ca-cert-hash sha256:%s0' % (TOKEN, KEY)
    with pytest.raises(AnsibleFilterError):
        join.kubeadm_join_secrets(longer)


def test_redaction_replaces_tokens_and_64_hex_secrets_only():
    assert join.redact('token %s key %s id %s' % (TOKEN, KEY, KEY[:40])) == 'token <token> key <key> id %s' % KEY[:40]
    assert join.redact(42) == '42'


def test_a_certificate_key_refusal_shows_the_redacted_output():
    with pytest.raises(AnsibleFilterError) as refused:
        join.kubeadm_certificate_key('[upload-certs] Using certificate key:\n%s trailing\n' % KEY)
    assert str(refused.value) == ('`kubeadm init phase upload-certs --upload-certs` printed no certificate key on '
                                  'its last line: [upload-certs] Using certificate key:\n<key> trailing')


@pytest.mark.parametrize('output', [None, '', '\n'])
def test_no_certificate_key_output_is_refused(output):
    with pytest.raises(AnsibleFilterError, match='printed no certificate key'):
        join.kubeadm_certificate_key(output)


def test_the_certificate_key_line_may_carry_spaces():
    assert join.kubeadm_certificate_key('[upload-certs] Using certificate key:\n  %s  \n' % KEY) == KEY


def test_a_hosts_own_failure_names_the_task_and_what_it_said_on_one_line():
    hostvars = {'w1': failed('Run kubeadm join', stderr='error execution phase preflight:\n  token %s\texpired'
                             % TOKEN, msg='non-zero return code')}
    assert join.kubeadm_join_failure(hostvars, ['w1'], 'w1') == (
        'Joining w1 failed in "Run kubeadm join": error execution phase preflight: token <token> expired '
        + ADVICE % 'w1')


def test_without_stderr_the_failures_msg_is_said_and_a_nameless_task_is_a_question_mark():
    hostvars = {'w1': failed('', msg='Timeout (12s) waiting for privilege escalation prompt')}
    assert join.kubeadm_join_failure(hostvars, ['w1'], 'w1') == (
        'Joining w1 failed in "?": Timeout (12s) waiting for privilege escalation prompt ' + ADVICE % 'w1')


def test_a_failure_that_said_nothing_says_nothing():
    hostvars = {'w1': failed('Run kubeadm join')}
    assert join.kubeadm_join_failure(hostvars, ['w1'], 'w1') == 'Joining w1 failed in "Run kubeadm join":  ' + (
        ADVICE % 'w1')


def test_a_host_stopped_by_others_names_each_of_them():
    hostvars = {'w1': {}, 'w2': failed('Run kubeadm join', stderr='refused'), 'w3': failed('', msg='unreachable'),
                'w4': {'ansible_failed_task': {'name': 'half'}}}
    assert join.kubeadm_join_failure(hostvars, ['w1', 'w2', 'w3', 'w4'], 'w1') == (
        'Joining w1 stopped because joining w2 and w3 failed: w2 said in "Run kubeadm join": refused '
        + ADVICE % 'w2' + ' w3 said in "?": unreachable ' + ADVICE % 'w3')


def test_a_host_stopped_by_a_failure_outside_the_join_points_to_it():
    hostvars = {'w1': {}, 'w2': {}}
    assert join.kubeadm_join_failure(hostvars, ['w1', 'w2'], 'w1') == (
        'Joining w1 stopped because another host of the play failed (the play stops every host on a failure): '
        'see the first failure above.')
