"""filter_plugins/ipu_operator_webhook_cert.py at its edges: the refusal word for word, a
Secret without data or name, and days left counted in whole days from the certificate the
openssl CLI made."""
import base64
import datetime
import importlib.util
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

PLUGIN = Path(__file__).resolve().parents[2] / 'filter_plugins' / 'ipu_operator_webhook_cert.py'
_spec = importlib.util.spec_from_file_location('ipu_operator_webhook_cert', PLUGIN)
webhook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(webhook)


def test_a_secret_without_data_is_refused_naming_it_and_the_command():
    with pytest.raises(AnsibleFilterError) as refused:
        webhook.ipu_operator_webhook_cert([{'metadata': {'name': 'ipu-operator-admission'}}])
    message = str(refused.value)
    assert message.startswith('Secret ipu-operator-admission has no PEM certificate under data.cert (')
    assert message.endswith('): the chart writes it there; see kubectl get secret ipu-operator-admission -o yaml')


def test_a_certificate_that_is_not_base64_is_refused():
    with pytest.raises(AnsibleFilterError, match=r'^Secret \? has no PEM certificate under data.cert'):
        webhook.ipu_operator_webhook_cert([{'data': {'cert': 'not base64!'}}])


def test_days_left_are_whole_days_before_not_after(tmp_path):
    key, cert = tmp_path / 'key.pem', tmp_path / 'cert.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', str(key), '-out', str(cert),
                    '-days', '30', '-subj', '/CN=ipu-operator'], check=True, capture_output=True)
    end = subprocess.run(['openssl', 'x509', '-noout', '-enddate', '-in', str(cert)], check=True,
                         capture_output=True, text=True).stdout.strip().split('=', 1)[1]
    not_after = datetime.datetime.strptime(end, '%b %d %H:%M:%S %Y GMT').replace(tzinfo=datetime.timezone.utc)
    secret = [{'metadata': {'name': 's'}, 'data': {'cert': base64.b64encode(cert.read_bytes()).decode()}}]
    just_before = not_after - datetime.timedelta(days=2, seconds=1)
    assert webhook.ipu_operator_webhook_cert(secret, now=just_before) == {
        'present': True, 'not_after': not_after.strftime('%Y-%m-%dT%H:%M:%SZ'), 'days_left': 2, 'renew': False,
        'summary': 'expires %s: 2 days left.' % not_after.strftime('%Y-%m-%dT%H:%M:%SZ')}
    assert webhook.ipu_operator_webhook_cert(secret, now=not_after + datetime.timedelta(seconds=1))['days_left'] == -1
    # Its last hours are day 0; without renew_days nothing is renewed before it has expired.
    last_hour = webhook.ipu_operator_webhook_cert(secret, now=not_after - datetime.timedelta(hours=1))
    assert (last_hour['days_left'], last_hour['renew']) == (0, False)


def _made(tmp_path, days=30):
    key, cert = tmp_path / 'key.pem', tmp_path / 'cert.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', str(key), '-out', str(cert),
                    '-days', str(days), '-subj', '/CN=ipu-operator'], check=True, capture_output=True)
    return base64.b64encode(cert.read_bytes()).decode()


def test_base64_with_stray_characters_is_refused_not_guessed(tmp_path):
    encoded = _made(tmp_path)
    with pytest.raises(AnsibleFilterError, match='^Secret s has no PEM certificate under data.cert'):
        webhook.ipu_operator_webhook_cert([{'metadata': {'name': 's'}, 'data': {'cert': encoded[:8] + '*' + encoded[8:]}}])


def test_the_certificate_is_read_without_deprecated_calls(tmp_path):
    import warnings
    secret = [{'metadata': {'name': 's'}, 'data': {'cert': _made(tmp_path)}}]
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert webhook.ipu_operator_webhook_cert(secret)['present'] is True


class _OldCertificate:
    """What cryptography before 42 returns: not_valid_after naive (UTC), no not_valid_after_utc."""
    not_valid_after = datetime.datetime(2027, 1, 15, 7, 43, 20)


class _OldX509:
    @staticmethod
    def load_pem_x509_certificate(data):
        return _OldCertificate()


def test_an_older_cryptography_is_read_as_utc(monkeypatch):
    monkeypatch.setattr(webhook, 'x509', _OldX509)
    now = datetime.datetime(2027, 1, 5, 7, 43, 20, tzinfo=datetime.timezone.utc)
    assert webhook.ipu_operator_webhook_cert([{'data': {'cert': 'eA=='}}], now=now) == {
        'present': True, 'not_after': '2027-01-15T07:43:20Z', 'days_left': 10, 'renew': False,
        'summary': 'expires 2027-01-15T07:43:20Z: 10 days left.'}
