"""roles/ipu_operator/tasks/webhook_cert.yml: the webhook certificate's days left, from its Secret.

The tasks run through ansible-playbook on local hosts, one host per case, in one run; the
Secret comes from a stand-in kubernetes.core.k8s_info (a collection put first on the
collections path, answering from a JSON file by the Secret's name, as k8s_info returns a
Secret: data base64-encoded). The certificate is read by community.crypto's
x509_certificate_info filter as the pinned ansible package ships it. The certificates are
made here with notAfter at known offsets from now; the expected notAfter is what
`openssl x509 -enddate` reads in them, an independent reading of the same file.
"""
import base64
import datetime
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = 'ipu-operator'
STAND_IN_K8S_INFO = '''#!/usr/bin/python
import json, os
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec=dict(kubeconfig=dict(), api_version=dict(), kind=dict(), namespace=dict(),
                                          name=dict()), supports_check_mode=True)
with open(os.environ['STAND_IN_SECRETS']) as secrets:
    module.exit_json(changed=False, api_found=True, resources=json.load(secrets).get(module.params['name'], []))
'''
HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)
# host -> (notAfter from now, or None for no Secret, or the Secret's data as given; renew days)
CASES = {
    'twenty_days': (20 * DAY + 5 * HOUR, 0),
    'expired_three_days_ago': (-3 * DAY + HOUR, 0),
    'fresh_365': (365 * DAY, 0),
    'due_29': (29 * DAY + HOUR, 30),
    'kept_30': (30 * DAY + HOUR, 30),
    'due_expired': (-3 * DAY + HOUR, 30),
    'last_hour': (HOUR, 0),
    'no_secret': (None, 30),
    'no_pem': ({'cert': 'bm9wZQ=='}, 30),                  # base64 of "nope"
    'no_data': ('no data', 30),
    'not_base64': ({'cert': 'not base64!'}, 30),
    'stray_character': ('stray', 30),
}


def certificate(tmp_path, host, offset):
    """A self-signed certificate (PEM) ending offset from now, and its notAfter as openssl reads it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'ipu-operator')])
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - 400 * DAY)
            .not_valid_after(now + offset).sign(key, hashes.SHA256()))
    pem = tmp_path / (host + '.pem')
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    end = subprocess.run(['openssl', 'x509', '-noout', '-enddate', '-in', str(pem)], check=True,
                         capture_output=True, text=True).stdout.strip().split('=', 1)[1]
    not_after = datetime.datetime.strptime(end, '%b %d %H:%M:%S %Y GMT')
    return pem.read_bytes(), not_after.strftime('%Y-%m-%dT%H:%M:%SZ')


def secret_of(host):
    return 'ipu-operator-%s-admission' % host.replace('_', '-')


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """The tasks' run over CASES -> (run, {host: openssl's notAfter})."""
    tmp_path = tmp_path_factory.mktemp('webhook_cert')
    module = tmp_path / 'collections' / 'ansible_collections' / 'kubernetes' / 'core' / 'plugins' / 'modules'
    module.mkdir(parents=True)
    (module / 'k8s_info.py').write_text(STAND_IN_K8S_INFO)
    secrets, not_after, hosts = {}, {}, {}
    for host, (given, renew_days) in CASES.items():
        # The chart names the Secret <fullname>-admission; fullnameOverride gives each host its own.
        secret = secret_of(host)
        hosts[host] = {'ipu_operator_extra_values': {'fullnameOverride': secret[:-len('-admission')]},
                       'ipu_operator_webhook_cert_renew_days': renew_days}
        if given is None:
            continue
        if isinstance(given, datetime.timedelta):
            pem, not_after[host] = certificate(tmp_path, host, given)
            data = {'ca': '', 'cert': base64.b64encode(pem).decode(), 'key': ''}
        elif given == 'stray':
            encoded = base64.b64encode(certificate(tmp_path, host, 30 * DAY)[0]).decode()
            data = {'cert': encoded[:8] + '*' + encoded[8:]}
        else:
            data = given if isinstance(given, dict) else None
        secrets[secret] = [{'metadata': {'name': secret, 'namespace': NAMESPACE}, 'data': data}]
    (tmp_path / 'secrets.json').write_text(json.dumps(secrets))
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': hosts, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}',
        'ipu_k8s_kubeconfig': str(tmp_path / 'no-kubeconfig'), 'ipu_k8s_ipu_operator_namespace': NAMESPACE}}}))
    playbook = tmp_path / 'webhook_cert.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Read the webhook certificate', 'hosts': 'all', 'gather_facts': False,
                                         'tasks': [{'name': 'Run the role entry point',
                                                    'ansible.builtin.include_role': {
                                                        'name': 'ipu_operator', 'tasks_from': 'webhook_cert'}}]}]))
    done = run_playbook(playbook, inventory, tmp_path, envvars={
        'ANSIBLE_COLLECTIONS_PATH': str(tmp_path / 'collections'), 'STAND_IN_SECRETS': str(tmp_path / 'secrets.json'),
        'ANSIBLE_ROLES_PATH': str(ROOT / 'roles'), 'ANSIBLE_FILTER_PLUGINS': str(ROOT / 'plugins' / 'filter')})
    return done, not_after


def read(run, host):
    done, _ = run
    return done.result('Work out the days the webhook certificate has left', host)['ansible_facts'][
        'ipu_operator_webhook_cert']


def test_days_left_and_not_after_are_read_from_the_certificate(run):
    not_after = run[1]['twenty_days']
    assert read(run, 'twenty_days') == {'present': True, 'not_after': not_after, 'days_left': 20, 'renew': False,
                                        'summary': 'expires %s: 20 days left.' % not_after}


def test_the_days_left_are_reported(run):
    done, not_after = run
    assert done.result("Report the webhook certificate's days left", 'twenty_days')['msg'] == (
        'The IPU Operator webhook certificate (Secret ipu-operator/ipu-operator-twenty-days-admission) expires %s: '
        '20 days left.' % not_after['twenty_days'])


def test_an_expired_certificate_has_negative_days_left(run):
    assert read(run, 'expired_three_days_ago')['days_left'] == -3


def test_a_fresh_certificate_counts_from_now(run):
    assert read(run, 'fresh_365')['days_left'] == 364


def test_no_secret_yet_is_not_an_error(run):
    assert read(run, 'no_secret') == {'present': False, 'not_after': '', 'days_left': None, 'renew': False,
                                      'summary': 'is not there yet.'}


@pytest.mark.parametrize('host, days_left, renew', [('due_29', 29, True), ('kept_30', 30, False),
                                                    ('due_expired', -3, True)])
def test_the_release_is_upgraded_when_the_certificate_has_fewer_days_than_the_setting(run, host, days_left, renew):
    result = read(run, host)
    assert (result['days_left'], result['renew']) == (days_left, renew)


def test_its_last_hours_are_day_0_and_nothing_is_renewed_before_it_expires_without_renew_days(run):
    result = read(run, 'last_hour')
    assert (result['days_left'], result['renew']) == (0, False)


@pytest.mark.parametrize('host', ['no_pem', 'no_data', 'not_base64', 'stray_character'])
def test_a_secret_without_a_pem_certificate_is_refused_naming_it_and_the_command(run, host):
    done, _ = run
    secret = secret_of(host)
    assert done.failures()[host] == (
        'Secret ipu-operator/%s has no PEM certificate under data.cert: the chart writes it there; see kubectl -n '
        'ipu-operator get secret %s -o yaml' % (secret, secret))


def test_only_the_secrets_without_a_certificate_fail(run):
    assert sorted(run[0].failures()) == ['no_data', 'no_pem', 'not_base64', 'stray_character']


def test_the_secret_with_its_private_key_is_not_logged(run):
    done, _ = run
    result = done.result("Read the admission webhook certificate's Secret", 'twenty_days')
    assert 'resources' not in result and result.get('censored'), result
