"""filter_plugins/ipu_operator_webhook_cert.py: the webhook certificate's days left, from its Secret.

The certificates are made by the openssl CLI, and the expected notAfter is what
`openssl x509 -enddate` reads in them: an independent reading of the same file.
"""
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


def _certificate(tmp_path, days):
    key, cert = tmp_path / 'key.pem', tmp_path / 'cert.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', str(key), '-out', str(cert),
                    '-days', str(days), '-subj', '/CN=ipu-operator'], check=True, capture_output=True)
    end = subprocess.run(['openssl', 'x509', '-noout', '-enddate', '-in', str(cert)], check=True,
                         capture_output=True, text=True).stdout.strip().split('=', 1)[1]
    not_after = datetime.datetime.strptime(end, '%b %d %H:%M:%S %Y GMT').replace(tzinfo=datetime.timezone.utc)
    return cert.read_bytes(), not_after


def _secret(pem):
    # As k8s_info returns a Secret: data values base64-encoded; the chart's key is "cert".
    return [{'metadata': {'name': 'ipu-operator-admission'},
             'data': {'ca': '', 'cert': base64.b64encode(pem).decode(), 'key': ''}}]


def test_days_left_and_not_after_are_read_from_the_certificate(tmp_path):
    pem, not_after = _certificate(tmp_path, 365)
    now = not_after - datetime.timedelta(days=20, hours=5)
    result = webhook.ipu_operator_webhook_cert(_secret(pem), now=now)
    assert result == {'present': True, 'not_after': not_after.strftime('%Y-%m-%dT%H:%M:%SZ'), 'days_left': 20,
                      'renew': False, 'summary': 'expires %s: 20 days left.' % not_after.strftime('%Y-%m-%dT%H:%M:%SZ')}


def test_an_expired_certificate_has_negative_days_left(tmp_path):
    pem, not_after = _certificate(tmp_path, 1)
    result = webhook.ipu_operator_webhook_cert(_secret(pem), now=not_after + datetime.timedelta(days=3))
    assert result['days_left'] == -3


def test_a_fresh_certificate_counts_from_now(tmp_path):
    pem, _ = _certificate(tmp_path, 365)
    assert webhook.ipu_operator_webhook_cert(_secret(pem))['days_left'] == 364


def test_no_secret_yet_is_not_an_error():
    assert webhook.ipu_operator_webhook_cert([], 30) == {'present': False, 'not_after': '', 'days_left': None,
                                                          'renew': False, 'summary': 'is not there yet.'}


@pytest.mark.parametrize('days_left, renew', [(29, True), (30, False), (-3, True)])
def test_the_release_is_upgraded_when_the_certificate_has_fewer_days_than_the_setting(tmp_path, days_left, renew):
    pem, not_after = _certificate(tmp_path, 365)
    now = not_after - datetime.timedelta(days=days_left, hours=1)
    result = webhook.ipu_operator_webhook_cert(_secret(pem), 30, now=now)
    assert (result['days_left'], result['renew']) == (days_left, renew)


def test_a_secret_without_a_certificate_is_refused_naming_it():
    with pytest.raises(AnsibleFilterError, match='Secret ipu-operator-admission has no PEM certificate under data.cert'):
        webhook.ipu_operator_webhook_cert([{'metadata': {'name': 'ipu-operator-admission'}, 'data': {'cert': 'bm9wZQ=='}}])
