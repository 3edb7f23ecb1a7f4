"""The IPU Operator's admission webhook certificate is renewed by a run when fewer than
ipu_operator_webhook_cert_renew_days remain, and only then.

The stand-in chart of this module carries the certificate's Secret as chart 1.2.0 makes it
(api_site.ADMISSION_SECRET: genCA and genSignedCert for 365 days at every render, under
ca/cert/key of <fullname>-admission). The test ages that Secret by hand, as a release
installed 355 days ago holds it (a CA and a serving certificate it signed, both ending in
10 days), and runs playbooks/ipu_operator.yml: the run upgrades the release, the Secret
holds a new certificate ending about 365 days from now, and the next run changes nothing.
verify's row "IPU Operator webhook certificate" FAILs while the certificate is due for that
renewal and PASSes once a run renewed it. What the stand-in cannot show: the controller
reloading the certificate (nothing runs in a hollow node's pods) and the webhook
configurations' caBundle (left out of the stand-in).
"""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from api_client import releases, report_rows

NAMESPACE = 'ipu-operator'
RELEASE = 'ipu-operator'
SECRET = 'ipu-operator-admission'       # <fullname>-admission, fullname = the release name here
RENEWING = 'fewer than ipu_operator_webhook_cert_renew_days'    # what the run tells the operator


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _cert(secret: dict) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret['data']['cert']))


def _read(api) -> dict:
    secret = api.get('v1', 'Secret', SECRET, NAMESPACE)
    assert secret, 'no Secret %s/%s' % (NAMESPACE, SECRET)
    return secret


def _aged_secret_data(days_left: int) -> dict:
    """ca, cert, key as genCA/genSignedCert make them (RSA 2048, PEM), issued 365 - days_left
    days ago and ending days_left days from now."""
    now = _now()
    start, end = now - datetime.timedelta(days=365 - days_left), now + datetime.timedelta(days=days_left)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'ipu-operator-controller-manager-ca')])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'ipu-operator')]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName('ipu-operator-webhook-svc')]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return {name: base64.b64encode(data).decode() for name, data in
            (('ca', ca.public_bytes(serialization.Encoding.PEM)), ('cert', cert.public_bytes(serialization.Encoding.PEM)),
             ('key', pem_key))}


@pytest.fixture(scope='module')
def installed(site, api):
    site.ipu_operator_chart = site.make_ipu_operator_chart(webhook_secret=True)
    site.play('ipu_operator.yml').assert_ok()
    return site


def test_a_fresh_install_holds_a_certificate_for_365_days_and_is_not_renewed(installed, api):
    cert = _cert(_read(api))
    assert (cert.not_valid_after_utc - _now()).days in (364, 365), cert.not_valid_after_utc
    revision = releases(installed)['%s/%s' % (NAMESPACE, RELEASE)]['revision']
    run = installed.play('ipu_operator.yml').assert_unchanged()
    assert RENEWING not in run.run.text(), run.run.messages()
    assert _cert(_read(api)).serial_number == cert.serial_number
    assert releases(installed)['%s/%s' % (NAMESPACE, RELEASE)]['revision'] == revision


def test_a_certificate_near_its_end_is_renewed_and_the_next_run_changes_nothing(installed, api):
    secret = _read(api)
    secret['data'] = _aged_secret_data(days_left=10)
    api.core.replace_namespaced_secret(SECRET, NAMESPACE, secret)
    aged = _cert(_read(api))
    assert (aged.not_valid_after_utc - _now()).days == 9       # 10 days minus the seconds since
    revision = releases(installed)['%s/%s' % (NAMESPACE, RELEASE)]['revision']

    run = installed.play('ipu_operator.yml').assert_ok()
    said = [m for m in run.run.messages() if RENEWING in m]
    assert len(said) == 1 and 'has 9 days left, %s (30)' % RENEWING in ' '.join(said[0].split()), said
    renewed = _cert(_read(api))
    assert renewed.serial_number != aged.serial_number
    assert renewed.not_valid_after_utc > aged.not_valid_after_utc
    assert (renewed.not_valid_after_utc - _now()).days in (364, 365)
    assert releases(installed)['%s/%s' % (NAMESPACE, RELEASE)]['revision'] == revision + 1

    installed.play('ipu_operator.yml').assert_unchanged()
    assert _cert(_read(api)).serial_number == renewed.serial_number


def _verify_cert_rows(site) -> list:
    """verify's webhook certificate rows (the cluster checks; the other rows may fail here)."""
    site.play('verify.yml', '--tags', 'verify_cluster',
              extra_vars={'verify_fail_on_failed_checks': False, 'verify_test_pod_timeout': 5})
    return [(r['status'], r['observed']) for r in report_rows(site)
            if r['check'] == 'IPU Operator webhook certificate']


def test_verify_fails_the_certificate_row_while_it_is_due_for_renewal_and_passes_after(installed, api):
    secret = _read(api)
    secret['data'] = _aged_secret_data(days_left=10)
    api.core.replace_namespaced_secret(SECRET, NAMESPACE, secret)
    [(status, observed)] = _verify_cert_rows(installed)
    assert status == 'FAIL' and observed.startswith('9 days left'), observed

    installed.play('ipu_operator.yml').assert_ok()
    [(status, observed)] = _verify_cert_rows(installed)
    assert status == 'PASS' and observed.startswith(('364 days left', '365 days left')), observed
