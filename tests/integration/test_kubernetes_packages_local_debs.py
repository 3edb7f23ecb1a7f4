"""Air-gapped .deb files (kubernetes_packages_debs_local_path) are installed only when each
file's sha256 is the one the site gives (kubernetes_packages_debs_sha256), checked before
anything reaches the node. The real install_local.yml runs on this machine over the local
connection; the accepted case runs in check mode, so nothing is installed here."""
import hashlib
import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402

VERSION = '1.35.8'
NAMES = ['kubeadm', 'kubelet', 'kubectl']


@pytest.fixture
def site(tmp_path):
    debs = tmp_path / 'debs'
    debs.mkdir()
    sums = {}
    for name in NAMES:
        deb = debs / f'{name}_{VERSION}-1.1_amd64.deb'
        deb.write_bytes(b'!<arch>\n' + name.encode())
        sums[deb.name] = hashlib.sha256(deb.read_bytes()).hexdigest()
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{'hosts': 'node', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.include_role': {'name': 'kubernetes_packages', 'tasks_from': step}}
        for step in ('validate', 'install_local')]}]))
    (tmp_path / 'hosts.json').write_text(json.dumps({'all': {'hosts': {'node': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
    return {'dir': tmp_path, 'debs': debs, 'sums': sums, 'cache': tmp_path / 'cache'}


def run(site, sums, *args):
    variables = {'ipu_k8s_kubernetes_version': VERSION, 'kubernetes_packages_names': NAMES,
                 'kubernetes_packages_debs_local_path': str(site['debs']),
                 'kubernetes_packages_debs_cache_dir': str(site['cache']),
                 'kubernetes_packages_debs_sha256': sums}
    (site['dir'] / 'vars.json').write_text(json.dumps(variables))
    return run_playbook(site['dir'] / 'play.yml', site['dir'] / 'hosts.json', site['dir'],
                        cmdline=['-e', f"@{site['dir'] / 'vars.json'}", *args], timeout=300)


def test_files_with_the_given_sha256_are_accepted(site):
    result = run(site, site['sums'], '--check')
    assert result.rc == 0, result.stdout[-3000:]


@pytest.mark.parametrize('case', ['not-given', 'differs'])
def test_a_file_without_its_sha256_is_refused_before_anything_is_copied(site, case):
    sums = dict(site['sums'])
    if case == 'not-given':
        del sums[f'kubelet_{VERSION}-1.1_amd64.deb']
    else:
        sums[f'kubelet_{VERSION}-1.1_amd64.deb'] = hashlib.sha256(b'another file').hexdigest()
    result = run(site, sums)
    assert result.rc != 0
    message = ' '.join(' '.join(result.failures().values()).split())
    assert f"kubelet_{VERSION}-1.1_amd64.deb has sha256 {site['sums'][f'kubelet_{VERSION}-1.1_amd64.deb']}" in message
    assert 'kubernetes_packages_debs_sha256' in message
    assert not site['cache'].exists()


@pytest.mark.parametrize('form', ['prefixed', 'upper-case'])
def test_a_checksum_not_in_sha256sum_form_is_refused_naming_the_fix(site, form):
    name = f'kubeadm_{VERSION}-1.1_amd64.deb'
    sums = dict(site['sums'])
    sums[name] = 'sha256:' + sums[name] if form == 'prefixed' else sums[name].upper()
    result = run(site, sums)
    assert result.rc != 0
    message = ' '.join(' '.join(result.failures().values()).split())
    assert 'kubernetes_packages_debs_sha256' in message and sums[name] in message, message
    assert 'without a "sha256:" prefix' in message, message
    assert not site['cache'].exists()


def test_a_package_without_its_file_at_the_pinned_version_is_refused_before_anything_is_copied(site):
    (site['debs'] / f'kubectl_{VERSION}-1.1_amd64.deb').rename(site['debs'] / 'kubectl_1.35.7-1.1_amd64.deb')
    result = run(site, site['sums'], '--check')
    assert result.rc != 0
    assert f"kubectl {VERSION}-1.1 is not in the package source {site['debs']}, which has 1.35.7-1.1." in ' '.join(
        result.failures().values()), result.stdout[-3000:]
    assert not site['cache'].exists()


def test_a_dependency_file_without_its_sha256_is_refused_by_preflight_alone(site):
    """cri-tools at its own version is installed too (kubernetes_packages_debs_order): the
    settings check (validate, what preflight runs) refuses it without its sha256, with no
    install step after it; a kubeadm file of another release in the directory is neither
    installed nor asked for."""
    deb = site['debs'] / 'cri-tools_1.35.0-1.1_amd64.deb'
    deb.write_bytes(b'!<arch>\ncri-tools')
    (site['debs'] / 'kubeadm_1.35.7-1.1_amd64.deb').write_bytes(b'!<arch>\nold kubeadm')
    (site['dir'] / 'validate.yml').write_text(yaml.safe_dump([{'hosts': 'node', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.include_role': {'name': 'kubernetes_packages', 'tasks_from': 'validate'}}]}]))
    site['dir'].joinpath('play.yml').rename(site['dir'] / 'both.yml')
    site['dir'].joinpath('validate.yml').rename(site['dir'] / 'play.yml')
    result = run(site, site['sums'])
    assert result.rc != 0, result.stdout[-3000:]
    message = ' '.join(' '.join(result.failures().values()).split())
    assert 'cri-tools_1.35.0-1.1_amd64.deb' in message and 'kubernetes_packages_debs_sha256' in message, message
    assert 'kubeadm_1.35.7-1.1_amd64.deb' not in message, message
    # With its sha256 given, the whole step (validate, then the install in check mode) passes.
    site['dir'].joinpath('play.yml').rename(site['dir'] / 'validate.yml')
    site['dir'].joinpath('both.yml').rename(site['dir'] / 'play.yml')
    sums = dict(site['sums'], **{deb.name: hashlib.sha256(deb.read_bytes()).hexdigest()})
    result = run(site, sums, '--check')
    assert result.rc == 0, result.stdout[-3000:]
