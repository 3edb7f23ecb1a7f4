"""The helm role, run for real with ansible-playbook on this machine (connection local,
everything under a temporary directory): installs from a local tarball, verifies its
sha256, does nothing on a second run, reports the same in check mode, and refuses a
tarball whose checksum is not the expected one.

The tarball holds a stand-in `helm` (a script answering `version --short` like Helm
3.16.3) because the real release cannot be downloaded here; everything else - the
probe, the checksum check, unpacking, installing - is the role's own code. Needs root
(the role installs files owned by root, as on a node)."""

import hashlib
import os
import subprocess
import sys
import tarfile
import textwrap

import pytest

from ipu_k8s_render import ROOT

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the helm role installs root-owned files; run as root')

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


@pytest.fixture
def site(tmp_path):
    stand_in = tmp_path / 'linux-amd64' / 'helm'
    stand_in.parent.mkdir()
    stand_in.write_text('#!/bin/sh\necho "v3.16.3+gcfd0749"\n')
    stand_in.chmod(0o755)
    tarball = tmp_path / 'helm-v3.16.3-linux-amd64.tar.gz'
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
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_ROLES_PATH=str(ROOT / 'roles'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default', ANSIBLE_NOCOLOR='1')
    command = [ANSIBLE_PLAYBOOK, '-i', str(site['dir'] / 'hosts.yml'), str(site['dir'] / 'play.yml'),
               '-e', 'helm_install_dir=%s' % (site['dir'] / 'bin'),
               '-e', 'helm_cache_dir=%s' % (site['dir'] / 'cache'),
               '-e', 'helm_tarball_local_path=%s' % site['tarball'],
               '-e', 'helm_tarball_checksum=%s' % (checksum or site['sha256'])] + list(extra)
    result = subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300)
    recap = [line for line in result.stdout.splitlines() if line.startswith('cp-01 ')]
    return result, (recap[-1] if recap else '')


def test_installs_then_changes_nothing_on_a_second_run(site):
    first, recap = run_role(site)
    assert first.returncode == 0, first.stdout + first.stderr
    assert 'changed=0' not in recap
    installed = subprocess.run([str(site['dir'] / 'bin' / 'helm'), 'version', '--short'],
                               capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == 'v3.16.3+gcfd0749'
    second, recap = run_role(site)
    assert second.returncode == 0, second.stdout + second.stderr
    assert 'changed=0' in recap, second.stdout
    checked, recap = run_role(site, '--check', '--diff')
    assert checked.returncode == 0 and 'changed=0' in recap, checked.stdout


def test_check_mode_on_a_fresh_host_installs_nothing(site):
    result, recap = run_role(site, '--check')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'failed=0' in recap
    assert not (site['dir'] / 'bin' / 'helm').exists()


def test_a_tarball_with_another_checksum_is_refused(site):
    result, recap = run_role(site, checksum='0' * 64)
    assert result.returncode != 0
    assert 'failed=1' in recap
    assert 'expected %s' % ('0' * 64) in result.stdout
    assert not (site['dir'] / 'bin' / 'helm').exists()


def test_a_binary_left_half_unpacked_is_replaced(site):
    # An interrupted run left a cut-off binary where the unpack goes: it must not count as unpacked.
    half = site['dir'] / 'cache' / 'helm-v3.16.3-linux-amd64' / 'linux-amd64' / 'helm'
    half.parent.mkdir(parents=True)
    half.write_text('#!/bin/sh\nech')
    half.chmod(0o755)
    result, recap = run_role(site)
    assert result.returncode == 0, result.stdout + result.stderr
    installed = subprocess.run([str(site['dir'] / 'bin' / 'helm'), 'version', '--short'],
                               capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == 'v3.16.3+gcfd0749'
