"""The helm role, run for real through ansible-runner on this machine (connection local,
everything under a temporary directory): installs from a local tarball, verifies its
sha256, does nothing on a second run, reports the same in check mode, and refuses a
tarball whose checksum is not the expected one.

The tarball holds a stand-in `helm` (a script answering `version --short` like Helm
3.21.4, the release the role chooses for the default Kubernetes 1.35) because the real
release cannot be downloaded here; everything else - the probe, the checksum check,
unpacking, installing - is the role's own code. Needs root (the role installs files owned
by root, as on a node)."""

import hashlib
import subprocess
import sys
import tarfile
import textwrap

import pytest

from ipu_k8s_render import ROOT

# the helm role installs root-owned files: as root (skipped otherwise, failed under CI=true)
pytestmark = pytest.mark.usefixtures('root')

sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402


@pytest.fixture
def site(tmp_path):
    stand_in = tmp_path / 'linux-amd64' / 'helm'
    stand_in.parent.mkdir()
    stand_in.write_text('#!/bin/sh\necho "v3.21.4+g56c3b1e"\n')
    stand_in.chmod(0o755)
    tarball = tmp_path / 'helm-v3.21.4-linux-amd64.tar.gz'
    with tarfile.open(tarball, 'w:gz') as archive:
        archive.add(stand_in.parent, arcname='linux-amd64')
    (tmp_path / 'hosts.yml').write_text(textwrap.dedent('''\
        all:
          hosts:
            cp-01:
              ansible_connection: local
              ansible_python_interpreter: %s
        ''' % sys.executable))
    (tmp_path / 'play.yml').write_text(textwrap.dedent('''\
        - name: Helm
          hosts: cp-01
          gather_facts: true
          gather_subset: [min]
          roles:
            - role: helm
        '''))
    (tmp_path / 'bin').mkdir()
    return {'dir': tmp_path, 'tarball': tarball, 'sha256': hashlib.sha256(tarball.read_bytes()).hexdigest()}


def run_role(site, *extra, checksum=None):
    command = ['-e', 'helm_install_dir=%s' % (site['dir'] / 'bin'),
               '-e', 'helm_cache_dir=%s' % (site['dir'] / 'cache'),
               '-e', 'helm_tarball_local_path=%s' % site['tarball'],
               '-e', 'helm_tarball_checksum=%s' % (site['sha256'] if checksum is None else checksum)] + list(extra)
    result = run_playbook(site['dir'] / 'play.yml', site['dir'] / 'hosts.yml', site['dir'] / 'runner',
                          envvars={'ANSIBLE_ROLES_PATH': str(ROOT / 'roles')}, cmdline=command, timeout=300)
    # cp-01's line of the recap, from the playbook_on_stats event
    return result, result.host_stats().get('cp-01', {})


def test_installs_then_changes_nothing_on_a_second_run(site):
    first, recap = run_role(site)
    assert first.rc == 0, first.stdout
    assert recap['changed'] > 0
    installed = subprocess.run([str(site['dir'] / 'bin' / 'helm'), 'version', '--short'],
                               capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == 'v3.21.4+g56c3b1e'
    second, recap = run_role(site)
    assert second.rc == 0, second.stdout
    assert recap['changed'] == 0, second.stdout
    checked, recap = run_role(site, '--check', '--diff')
    assert checked.rc == 0 and recap['changed'] == 0, checked.stdout


def test_check_mode_on_a_fresh_host_installs_nothing(site):
    result, recap = run_role(site, '--check')
    assert result.rc == 0, result.stdout
    assert recap['failures'] == 0
    assert not (site['dir'] / 'bin' / 'helm').exists()


def test_a_tarball_with_another_checksum_is_refused(site):
    result, recap = run_role(site, checksum='0' * 64)
    assert result.rc != 0
    assert recap['failures'] == 1
    assert any('expected %s' % ('0' * 64) in m for m in result.failure_messages()), result.stdout[-3000:]
    assert not (site['dir'] / 'bin' / 'helm').exists()


def test_a_binary_left_half_unpacked_is_replaced(site):
    # An interrupted run left a cut-off binary where the unpack goes: it must not count as unpacked.
    half = site['dir'] / 'cache' / 'helm-v3.21.4-linux-amd64' / 'linux-amd64' / 'helm'
    half.parent.mkdir(parents=True)
    half.write_text('#!/bin/sh\nech')
    half.chmod(0o755)
    result, recap = run_role(site)
    assert result.rc == 0, result.stdout
    installed = subprocess.run([str(site['dir'] / 'bin' / 'helm'), 'version', '--short'],
                               capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == 'v3.21.4+g56c3b1e'


def test_without_a_site_checksum_the_published_one_is_checked_and_named(site):
    # Linux amd64 of github.com/helm/helm/releases/tag/v3.21.4 (helm-v3.21.4-linux-amd64.tar.gz.sha256sum on
    # get.helm.sh); the stand-in tarball is not that file.
    published = '61f88ab166748cb19604d7884cb100ae9ccb13804ddeb98e08af167eacbb6a14'
    result, recap = run_role(site, '-e', 'helm_arch=amd64', checksum='')
    assert result.rc != 0 and recap['failures'] == 1
    text = ' '.join(' '.join(result.failure_messages()).split())
    assert 'expected %s (ipu_k8s_versions.helm.3.21.4.sha256.helm-v3.21.4-linux-amd64.tar.gz)' % published in text, text
    assert not (site['dir'] / 'bin' / 'helm').exists()
