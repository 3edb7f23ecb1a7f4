# -*- coding: utf-8 -*-
"""The IPU Operator's admission webhook certificate, read from its Secret.

Chart 1.2.0 (graphcore/helm-charts, ipu-operator-helm-chart-1.2.0.tgz,
templates/admission.yaml) makes the CA and the serving certificate with Helm's genCA and
genSignedCert, valid 365 days, at every install and upgrade, and stores them in the Secret
<fullname>-admission (keys ca, cert, key; the controller mounts cert as tls.crt). Nothing
renews it in between: a release older than a year serves an expired certificate and the
API server rejects every IPUJob. Chart 1.1.0's kube-webhook-certgen jobs write the same
Secret name and keys.

- ipu_operator_webhook_cert(resources, renew_days=0, now=None): from the k8s_info resources of
  that Secret -> {'present': bool, 'not_after': ISO 8601 UTC, 'days_left': whole days, 'renew':
  whether it is there with fewer than renew_days days left (a run then upgrades the release),
  'summary': those in words}.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import datetime

from ansible.errors import AnsibleFilterError
from cryptography import x509  # a requirement of ansible-core itself


def ipu_operator_webhook_cert(resources, renew_days=0, now=None):
    """{'present', 'not_after', 'days_left', 'renew', 'summary'} of the certificate in the Secret's data.cert."""
    if not resources:
        return {'present': False, 'not_after': '', 'days_left': None, 'renew': False, 'summary': 'is not there yet.'}
    secret = resources[0]
    name = secret.get('metadata', {}).get('name', '?')
    encoded = (secret.get('data') or {}).get('cert', '')
    try:
        certificate = x509.load_pem_x509_certificate(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError) as e:
        raise AnsibleFilterError('Secret %s has no PEM certificate under data.cert (%s): the chart writes it there; '
                                 'see kubectl get secret %s -o yaml' % (name, e, name))
    not_after = getattr(certificate, 'not_valid_after_utc', None) or \
        certificate.not_valid_after.replace(tzinfo=datetime.timezone.utc)
    days_left = (not_after - (now or datetime.datetime.now(datetime.timezone.utc))).days
    stamp = not_after.strftime('%Y-%m-%dT%H:%M:%SZ')
    return {'present': True, 'not_after': stamp, 'days_left': days_left, 'renew': days_left < int(renew_days),
            'summary': 'expires %s: %d days left.' % (stamp, days_left)}


class FilterModule(object):
    """The IPU Operator webhook certificate filters."""

    def filters(self):
        return {'ipu_operator_webhook_cert': ipu_operator_webhook_cert}
