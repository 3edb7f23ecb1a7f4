"""Every Calico manifest the role downloads has a pinned sha256, and a file that does not
match it is refused before anything is applied."""
import hashlib
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((ROOT / 'roles' / 'calico' / 'defaults' / 'main.yml').read_text())
VERSIONS = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())
TABLE = {version: row['sha256'] for version, row in VERSIONS['ipu_k8s_versions']['calico'].items()}
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402


def manifests_of(version):
    """What calico_manifests picks for a release (operator-crds.yaml from 3.30 on)."""
    minor = tuple(int(x) for x in version[1:].split('.')[:2])
    return (['operator-crds.yaml'] if minor >= (3, 30) else []) + ['tigera-operator.yaml']


@pytest.mark.parametrize('version', sorted(TABLE))
def test_every_release_in_the_version_table_has_a_sha256_per_manifest(version):
    assert sorted(TABLE[version]) == sorted(manifests_of(version))
    assert all(re.fullmatch(r'[0-9a-f]{64}', digest) for digest in TABLE[version].values())


def test_sums_were_taken_at_the_path_the_role_downloads():
    # The record says manifests/<file> at the tag; the role fetches exactly that path.
    assert DEFAULTS['calico_manifests_url'] == (
        'https://raw.githubusercontent.com/projectcalico/calico/{{ calico_version }}/manifests')
    tasks = yaml.safe_load((ROOT / 'roles' / 'calico' / 'tasks' / 'manifests.yml').read_text())
    fetch = next(t for t in tasks if t.get('ansible.builtin.include_role', {}).get('tasks_from') == 'fetch')['vars']
    assert fetch['ipu_k8s_fetch_url'] == '{{ calico_manifests_url }}/{{ __calico_manifest }}'
    assert fetch['ipu_k8s_fetch_pinned_sha256'] == "{{ __calico_release.sha256[__calico_manifest] | default('') }}"


def run_manifests(tmp_path, content, **overrides):
    local = tmp_path / 'local'
    local.mkdir()
    (local / 'tigera-operator.yaml').write_text(content)
    pinned = hashlib.sha256(b'kind: List\nitems: []\n').hexdigest()
    play = tmp_path / 'play.yml'
    play.write_text(yaml.safe_dump([{
        'hosts': 'localhost', 'gather_facts': False,
        'tasks': [{'ansible.builtin.include_role': {'name': 'calico', 'tasks_from': step}}
                  for step in ('validate', 'manifests')]}]))
    # v3.29.3 (one manifest) on a minor its series documents (1.29-1.32): a pin elsewhere is refused.
    extra = {'calico_version': 'v3.29.3', 'ipu_k8s_kubernetes_version': '1.32.3',
             'calico_manifests_local_path': str(local),
             'calico_manifests_dir': str(tmp_path / 'node'),
             'calico_manifest_checksums': {'tigera-operator.yaml': pinned}}
    extra.update(overrides)
    (tmp_path / 'vars.json').write_text(json.dumps(extra))
    env = {'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'}
    result = run_playbook(play, 'localhost,', tmp_path, envvars=env, timeout=120,
                          cmdline=['-c', 'local', '-e', f'ansible_python_interpreter={sys.executable}',
                                   '-e', f'@{tmp_path / "vars.json"}'])
    return result, tmp_path / 'node' / extra['calico_version'] / 'tigera-operator.yaml'


def test_local_manifest_with_the_pinned_sha256_is_copied(tmp_path):
    result, copied = run_manifests(tmp_path, 'kind: List\nitems: []\n')
    assert result.rc == 0, result.stdout[-3000:]
    assert copied.read_text() == 'kind: List\nitems: []\n'
    # The role writes the Installation and APIServer resources beside the manifests it fetched.
    assert 'kind: Installation' in (copied.parent / 'custom-resources.yaml').read_text()


def test_altered_local_manifest_is_refused_and_not_copied(tmp_path):
    result, copied = run_manifests(tmp_path, 'kind: List\nitems: [{kind: Pod}]\n')
    assert result.rc != 0
    assert 'expected ' + hashlib.sha256(b'kind: List\nitems: []\n').hexdigest() in ' '.join(' '.join(result.failure_messages()).split())
    assert not copied.exists()


def test_release_without_a_pinned_sha256_is_refused(tmp_path):
    # A release the table does not list, and no calico_manifest_checksums of the site's own.
    result, copied = run_manifests(tmp_path, 'kind: List\nitems: []\n', calico_version='v3.99.0',
                                   calico_manifest_checksums={})
    assert result.rc != 0
    message = ' '.join(' '.join(result.failure_messages()).split())
    assert 'calico_version is v3.99.0, and calico_manifest_checksums has no sha256' in message, message
    assert 'operator-crds.yaml' in message and 'tigera-operator.yaml' in message, message
    assert not copied.exists()


def test_without_a_site_checksum_the_tables_is_checked_and_named(tmp_path):
    result, copied = run_manifests(tmp_path, 'kind: List\nitems: []\n', calico_manifest_checksums={})
    assert result.rc != 0
    message = ' '.join(' '.join(result.failure_messages()).split())
    assert 'expected %s (sha256 of tigera-operator.yaml in the v3.29.3 row of ipu_k8s_versions.calico)' % (
        TABLE['v3.29.3']['tigera-operator.yaml']) in message, message
    assert not copied.exists()


def test_the_sites_checksum_wins_over_the_tables_and_is_named(tmp_path):
    result, copied = run_manifests(tmp_path, 'kind: List\nitems: [{kind: Pod}]\n')
    message = ' '.join(' '.join(result.failure_messages()).split())
    assert '(calico_manifest_checksums)' in message and 'ipu_k8s_versions' not in message, message
    assert not copied.exists()
