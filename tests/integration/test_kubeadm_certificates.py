"""kubeadm's certificates: the kubeadm role's certificates entry point reports the days the
soonest certificate has left and renews them when fewer than kubeadm_certificate_renew_days
are left; verify's check reports the same days as a row that FAILs under that number.

The certificates are real: a CA and an apiserver certificate this test issues with
cryptography, expiring in 10 days (renewal) or 300 days (none). `kubeadm` is a stand-in on
PATH that answers `certs check-expiration -o json` from those files in kubeadm's output API
(kind CertificateExpirationInfo, output.kubeadm.k8s.io/v1alpha3, whose fields are those of
kubernetes/kubernetes cmd/kubeadm/app/apis/output/v1alpha3/types.go: certificates[] and
certificateAuthorities[], each {name, expirationDate, residualTime in seconds,
externallyManaged, caName, missing}; fetchCertificateExpirationInfo in
cmd/kubeadm/app/cmd/certs.go lists a missing certificate with missing true and nothing else),
and re-issues the apiserver certificate for a year and rewrites admin.conf on
`certs renew all`, as kubeadm does. `kubectl` is a stand-in that answers /readyz. The
kubernetes directory (pki, manifests, admin.conf) and the admin user's home are in tmp_path.
"""
import datetime
import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ('kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd')

KUBEADM = '''#!{python}
import datetime, json, sys
from pathlib import Path
sys.path[:0] = [{here!r}, {tests!r}]
from test_kubeadm_certificates import issue, not_after
pki = Path({pki!r})
with open({log!r}, 'a') as log:
    log.write(' '.join(sys.argv[1:]) + '\\n')
now = datetime.datetime.now(datetime.timezone.utc)

def entry(name, ca_name):
    end = not_after(pki / (name + '.crt'))
    info = {{'name': name, 'expirationDate': end.strftime('%Y-%m-%dT%H:%M:%SZ'),
            'residualTime': int((end - now).total_seconds()), 'externallyManaged': False, 'missing': False}}
    return dict(info, caName=ca_name) if ca_name else info

if sys.argv[1:] == ['certs', 'check-expiration', '-o', 'json']:
    print(json.dumps({{'kind': 'CertificateExpirationInfo', 'apiVersion': 'output.kubeadm.k8s.io/v1alpha3',
                      'certificates': [entry('apiserver', 'ca'),
                                       {{'name': 'etcd-server', 'expirationDate': None, 'residualTime': 0,
                                        'externallyManaged': False, 'missing': True}}],
                      'certificateAuthorities': [entry('ca', '')]}}))
elif sys.argv[1:] == ['certs', 'renew', 'all']:
    issue(pki, 365)
    admin = Path({admin!r})
    admin.write_text(admin.read_text() + '# renewed\\n')
    print('certificate for serving the Kubernetes API renewed')
else:
    sys.exit('unexpected arguments')
'''

KUBECTL = '#!/bin/sh\necho "$@" >> {log}\necho ok\n'


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def issue(pki, days, ca_days=3650):
    """A CA (made once) and an apiserver certificate it signs, valid for `days` days and an hour."""
    pki.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    if not (pki / 'ca.key').exists():
        key = ec.generate_private_key(ec.SECP256R1())
        ca = (x509.CertificateBuilder().subject_name(_name('kubernetes')).issuer_name(_name('kubernetes'))
              .public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=ca_days))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
        (pki / 'ca.key').write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
        (pki / 'ca.crt').write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    ca_key = serialization.load_pem_private_key((pki / 'ca.key').read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name('kube-apiserver')).issuer_name(_name('kubernetes'))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=days, hours=1))
            .sign(ca_key, hashes.SHA256()))
    (pki / 'apiserver.crt').write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def not_after(path):
    return x509.load_pem_x509_certificate(Path(path).read_bytes()).not_valid_after_utc


def days_left(path):
    """What a person reads off the certificate: whole days until notAfter."""
    return (not_after(path) - datetime.datetime.now(datetime.timezone.utc)).days


@pytest.fixture
def node(tmp_path):
    kube = tmp_path / 'kubernetes'
    (kube / 'manifests').mkdir(parents=True)
    for component in COMPONENTS:
        (kube / 'manifests' / f'{component}.yaml').write_text(f'# static pod {component}\n')
    (kube / 'admin.conf').write_text('apiVersion: v1\nkind: Config\n')
    home = tmp_path / 'home'
    home.mkdir()
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fmt = dict(python=sys.executable, here=str(Path(__file__).parent), tests=str(ROOT / 'tests'), pki=str(kube / 'pki'),
               log=str(tmp_path / 'kubeadm.log'), admin=str(kube / 'admin.conf'))
    (bin_dir / 'kubeadm').write_text(KUBEADM.format(**fmt))
    (bin_dir / 'kubectl').write_text(KUBECTL.format(log=tmp_path / 'kubectl.log'))
    for tool in ('kubeadm', 'kubectl'):
        (bin_dir / tool).chmod(0o755)
    inventory = {'all': {'hosts': {'cp-1': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
                         'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {'cp-1': None}}}}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'vars.json').write_text(json.dumps({
        'ipu_k8s_kubernetes_version': '1.35.8',
        'ipu_k8s_kubernetes_dir': str(kube),
        'kubeadm_admin_user': 'root',
        # extra vars outrank the role's vars: the admin user's home is here, not /root
        '__kubeadm_admin_home': str(home),
        '__kubeadm_admin_group': '0',
        'kubeadm_certificate_restart_wait': 1,
        'kubeadm_api_server_timeout': 10,
    }))
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'hosts': 'control_plane', 'gather_facts': False,
        'tasks': [{'ansible.builtin.include_role': {'name': 'kubeadm', 'tasks_from': 'certificates'}}]}]))
    return dict(dir=tmp_path, kube=kube, pki=kube / 'pki', home=home, bin=bin_dir, log=tmp_path / 'kubeadm.log',
                kubectl_log=tmp_path / 'kubectl.log')


def run(node, *args, playbook=None):
    return run_playbook(playbook or node['dir'] / 'play.yml', node['dir'] / 'hosts.json', node['dir'],
                        envvars={'PATH': f"{node['bin']}:{os.environ['PATH']}"},
                        cmdline=['-e', f"@{node['dir'] / 'vars.json'}", *args], timeout=300)


def calls(path):
    return path.read_text().splitlines() if path.exists() else []


def report(result):
    return ' '.join(r.get('msg', '') for r in result.results("Report the days kubeadm's certificates have left"))


def test_certificates_with_10_days_left_are_renewed_once(node):
    issue(node['pki'], 10)
    assert days_left(node['pki'] / 'apiserver.crt') == 10
    result = run(node)
    assert result.rc == 0, result.stdout[-3000:]
    assert 'apiserver, the soonest, has 10 days left' in report(result), report(result)
    assert calls(node['log']) == ['certs check-expiration -o json', 'certs renew all']
    # renewed for a year (the stand-in re-issued it as kubeadm would)
    assert days_left(node['pki'] / 'apiserver.crt') == 365
    # every control-plane static pod was taken out and is back
    assert sorted(p.name for p in (node['kube'] / 'manifests').iterdir()) == sorted(f'{c}.yaml' for c in COMPONENTS)
    assert not (node['kube'] / 'manifests-held-for-renewal').exists()
    assert result.ran('kubeadm : Take the control-plane static pod manifests out') == ['cp-1']
    assert calls(node['kubectl_log']) == [f"--kubeconfig {node['kube'] / 'admin.conf'} get --raw /readyz"]
    # the admin user's copy is the renewed admin.conf
    assert (node['home'] / '.kube' / 'config').read_text() == (node['kube'] / 'admin.conf').read_text()
    assert '# renewed' in (node['home'] / '.kube' / 'config').read_text()

    again = run(node)
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed() == 0, again.stdout[-3000:]
    assert calls(node['log'])[2:] == ['certs check-expiration -o json']
    assert 'apiserver, the soonest, has 365 days left' in report(again), report(again)


def test_certificates_with_300_days_left_are_left_alone(node):
    # The missing etcd-server (residualTime 0) and the CA do not count.
    issue(node['pki'], 300)
    before = (node['pki'] / 'apiserver.crt').read_bytes()
    result = run(node)
    assert result.rc == 0, result.stdout[-3000:]
    assert result.changed() == 0, result.stdout[-3000:]
    assert 'apiserver, the soonest, has 300 days left' in report(result), report(result)
    assert calls(node['log']) == ['certs check-expiration -o json']
    assert (node['pki'] / 'apiserver.crt').read_bytes() == before
    assert not calls(node['kubectl_log'])


def test_check_mode_renews_nothing(node):
    issue(node['pki'], 10)
    before = (node['pki'] / 'apiserver.crt').read_bytes()
    result = run(node, '--check')
    assert result.rc == 0, result.stdout[-3000:]
    assert calls(node['log']) == ['certs check-expiration -o json']
    assert (node['pki'] / 'apiserver.crt').read_bytes() == before
    assert not (node['home'] / '.kube').exists()


def test_a_stopped_renewal_puts_the_manifests_back(node):
    # A run killed while the manifests were out: the next run, with renewed certificates,
    # still brings the control plane back.
    issue(node['pki'], 365)
    held = node['kube'] / 'manifests-held-for-renewal'
    held.mkdir()
    for component in COMPONENTS[:2]:
        (node['kube'] / 'manifests' / f'{component}.yaml').rename(held / f'{component}.yaml')
    result = run(node)
    assert result.rc == 0, result.stdout[-3000:]
    assert sorted(p.name for p in (node['kube'] / 'manifests').iterdir()) == sorted(f'{c}.yaml' for c in COMPONENTS)
    assert calls(node['log']) == ['certs check-expiration -o json']


def verify_play(node):
    """The verify check's task file, as verify's runner includes it (__verify_seen from {})."""
    path = node['dir'] / 'verify.yml'
    path.write_text(yaml.safe_dump([{
        'hosts': 'control_plane', 'gather_facts': False, 'vars': {'__verify_seen': {}},
        'tasks': [{'ansible.builtin.include_tasks': str(ROOT / 'roles' / 'verify' / 'tasks' / 'cluster_certificates.yml')},
                  {'name': 'Show what the check saw', 'ansible.builtin.debug': {'var': '__verify_seen'}}]}]))
    return path


@pytest.mark.parametrize('days, ok', [(10, False), (300, True)])
def test_verify_row_fails_under_the_renewal_days_and_renews_nothing(node, days, ok):
    issue(node['pki'], days)
    before = (node['pki'] / 'apiserver.crt').read_bytes()
    result = run(node, playbook=verify_play(node))
    assert result.rc == 0, result.stdout[-3000:]
    seen = result.results('Show what the check saw')[0]['__verify_seen']['days_left']
    assert seen['ok'] is ok, seen
    assert seen['observed'].startswith(f'{days} days left (apiserver, expires '), seen
    assert seen['expected'] == 'at least 30 days left'
    assert not seen['skip']
    assert calls(node['log']) == ['certs check-expiration -o json']
    assert (node['pki'] / 'apiserver.crt').read_bytes() == before
