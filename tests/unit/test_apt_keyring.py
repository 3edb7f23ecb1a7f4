"""A repository signing key is installed only when its fingerprint is the documented one,
and a keyring is never left half-written: plugins/module_utils/ipu_k8s_gpg.py and plugins/modules/apt_keyring.py.

The module tests run the real gpg against keys made here (no network)."""

import os
import shutil
import tempfile

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_gpg import key_problem, normalise, primary_fingerprints
from module_harness import ModuleExit, ModuleFail, load_library_module
from testlib import make_gpg_key, require


# Docker's documented key (docker/docs engine/install/debian.md) and pkgs.k8s.io's.
DOCKER = '9DC858229FC7DD38854AE2D88D81803C0EBFCD88'
K8S = 'DE15B14486CD377B9E876E1A234654DA9A296436'
COLONS = f"""pub:-:4096:1:8D81803C0EBFCD88:1487788586:::-:::scESA::::::23::0:
fpr:::::::::{DOCKER}:
uid:-::::1487792064::4AEE18F83AFDEB23B6C5A4A09D0C1A7D9C5F1B54::Docker Release (CE deb) <docker@docker.com>::::::::::0:
sub:-:4096:1:7EA0A9C3F273FCD8:1487788586::::::s::::::23:
fpr:::::::::D3306A018370199E527AE7997EA0A9C3F273FCD8:
"""


def test_primary_fingerprint_is_read_and_subkeys_are_not():
    assert primary_fingerprints(COLONS) == [DOCKER]


def test_documented_spaced_fingerprint_is_accepted():
    assert normalise('9DC8 5822 9FC7 DD38 854A  E2D8 8D81 803C 0EBF CD88') == DOCKER
    assert key_problem([DOCKER], ['9dc8 5822 9fc7 dd38 854a e2d8 8d81 803c 0ebf cd88'], 'docker.asc') is None


def test_other_key_is_refused_naming_both():
    problem = key_problem([K8S], [DOCKER], 'docker.asc')
    assert problem == f'docker.asc holds key {K8S}, not the expected {DOCKER}.'


def test_file_without_a_key_is_refused():
    assert 'holds no OpenPGP public key' in key_problem([], [DOCKER], 'Release.key')


def test_extra_key_beside_the_expected_one_is_refused():
    assert key_problem([DOCKER, K8S], [DOCKER], 'docker.asc') is not None


# --- The module, with the real gpg ---------------------------------------------------

@pytest.fixture(scope='module')
def gpg():
    """The real gpg: skipped without it, failed under CI=true (testlib.require)."""
    require(shutil.which('gpg') is not None, 'needs gpg: apt-get install gpg')


needs_gpg = pytest.mark.usefixtures('gpg')


@pytest.fixture(scope='module')
def keys(tmp_path_factory, gpg):
    """Two armoured public keys made here: (path, fingerprint) each."""
    return [make_gpg_key(tmp_path_factory.mktemp('gnupg-' + name), name) for name in ('signing', 'other')]


def run(monkeypatch, args, check_mode=False):
    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, **kwargs):
        raise ModuleFail(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
    module = load_library_module('apt_keyring')
    with patch_module_args(dict(args, _ansible_check_mode=check_mode)):
        try:
            module.main()
        except ModuleExit as done:
            return done.result
    raise AssertionError('apt_keyring returned without exit_json or fail_json')


def downloaded(tmp_path, text, src='k.asc', dest='k.gpg'):
    """The fetched key as the apt repository step leaves it (src) and where the keyring goes."""
    (tmp_path / src).write_text(text)
    return tmp_path / src, tmp_path / dest


@needs_gpg
def test_documented_key_becomes_a_binary_keyring_once(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored)
    args = {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]}
    first = run(monkeypatch, args)
    assert first['changed'] is True and first['dearmored'] is True and first['fingerprints'] == [fingerprint]
    assert not dest.read_bytes().startswith(b'-----BEGIN')
    assert oct(dest.stat().st_mode & 0o777) == '0o644'
    assert run(monkeypatch, args)['changed'] is False


@needs_gpg
def test_wrong_key_is_refused_removed_and_never_reaches_the_keyring(monkeypatch, tmp_path, keys):
    (armored, _), (_, other_fingerprint) = keys
    src, dest = downloaded(tmp_path, armored)
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [other_fingerprint],
                          'setting': 'kubernetes_packages_key_fingerprints'})
    assert f'not the expected {other_fingerprint}' in failed.value.result['msg']
    assert 'set kubernetes_packages_key_fingerprints' in failed.value.result['msg']
    assert not src.exists() and not dest.exists()


@needs_gpg
def test_truncated_download_is_refused_and_removed(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored[: len(armored) // 2])
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})
    assert 'holds no OpenPGP public key' in failed.value.result['msg']
    assert 'gpg: no valid OpenPGP data found.' in failed.value.result['stderr']
    assert not src.exists()


@needs_gpg
def test_half_written_keyring_is_rewritten(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored)
    args = {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]}
    run(monkeypatch, args)
    whole = dest.read_bytes()
    dest.write_bytes(whole[:20])
    assert run(monkeypatch, args)['changed'] is True
    assert dest.read_bytes() == whole


@needs_gpg
def test_asc_keyring_is_the_verified_key_as_it_is(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored, 'docker.asc.download', 'docker.asc')
    result = run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})
    assert result['dearmored'] is False and dest.read_text() == armored


@needs_gpg
def test_check_mode_writes_and_removes_nothing(monkeypatch, tmp_path, keys):
    (armored, _), (_, other_fingerprint) = keys
    src, dest = downloaded(tmp_path, armored)
    with pytest.raises(ModuleFail):
        run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [other_fingerprint]}, check_mode=True)
    assert src.exists()
    result = run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [keys[0][1]]}, check_mode=True)
    assert result['changed'] is True and not dest.exists()


def test_check_mode_reports_a_key_not_fetched_yet_as_a_change(monkeypatch, tmp_path):
    # Check mode fetches nothing: on a new host the key is not there, and the keyring would be written.
    src, dest = tmp_path / 'k.asc', tmp_path / 'k.gpg'
    result = run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': ['A' * 40]}, check_mode=True)
    assert result['changed'] is True and not dest.exists()
    assert result['fingerprints'] == [] and result['dearmored'] is True  # a .gpg keyring is the binary form


def test_malformed_fingerprint_setting_is_refused(monkeypatch, tmp_path):
    src = tmp_path / 'k.asc'
    src.write_text('x')
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'), 'fingerprints': ['0EBFCD88'],
                          'setting': 'containerd_docker_gpg_key_fingerprints'})
    assert failed.value.result['msg'].startswith('containerd_docker_gpg_key_fingerprints must list 40-hex-digit')
    assert os.path.exists(src)


@needs_gpg
@pytest.mark.parametrize('dest', ['k.gpg', 'k.asc'])
def test_gpg_runs_in_the_c_locale_with_a_throwaway_home_that_is_removed(monkeypatch, tmp_path, keys, dest):
    armored, fingerprint = keys[0]
    (tmp_path / 'k.download').write_text(armored)
    made, environments = [], []
    real_mkdtemp, real_run_command = tempfile.mkdtemp, basic.AnsibleModule.run_command

    def mkdtemp(*args, **kwargs):
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    def run_command(self, args, **kwargs):
        environments.append(kwargs.get('environ_update'))
        return real_run_command(self, args, **kwargs)

    monkeypatch.setattr(tempfile, 'mkdtemp', mkdtemp)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    result = run(monkeypatch, {'src': str(tmp_path / 'k.download'), 'dest': str(tmp_path / dest),
                               'fingerprints': [fingerprint]})
    assert result['changed'] is True
    home = [path for path in made if os.path.basename(path).startswith('apt-keyring-')]
    assert len(home) == 1 and os.path.dirname(home[0]) == tempfile.gettempdir() and not os.path.exists(home[0])
    assert environments == [{'GNUPGHOME': home[0], 'LC_ALL': 'C'}] * (2 if dest == 'k.gpg' else 1)


@needs_gpg
def test_a_throwaway_home_that_vanishes_before_its_removal_does_not_fail_the_run(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored, 'k.download', 'k.asc')
    real_run_command = basic.AnsibleModule.run_command

    def run_command(self, args, **kwargs):
        answer = real_run_command(self, args, **kwargs)
        shutil.rmtree(kwargs['environ_update']['GNUPGHOME'])  # as a cleaner of the temporary directory would
        return answer

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    assert run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})['changed'] is True
    assert dest.read_text() == armored


@needs_gpg
def test_a_failing_dearmor_is_refused_with_what_gpg_said_and_writes_nothing(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored)
    real_run_command = basic.AnsibleModule.run_command

    def run_command(self, args, **kwargs):
        if '--dearmor' in args:
            return 2, '', 'gpg: write error: No space left on device\n'
        return real_run_command(self, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})
    assert failed.value.result == {'msg': 'gpg --dearmor %s failed: gpg: write error: No space left on device' % src,
                                   'rc': 2, 'stderr': 'gpg: write error: No space left on device\n'}
    assert sorted(os.listdir(tmp_path)) == ['k.asc']


@needs_gpg
def test_the_keyring_is_staged_hidden_beside_dest_and_nothing_is_left_in_the_working_directory(monkeypatch, tmp_path,
                                                                                               keys):
    armored, fingerprint = keys[0]
    (tmp_path / 'keys').mkdir()
    (tmp_path / 'cwd').mkdir()
    src, dest = downloaded(tmp_path / 'keys', armored)
    staged = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        staged.append(real_mkstemp(*args, **kwargs)[1])
        return os.open(staged[-1], os.O_WRONLY), staged[-1]

    monkeypatch.setattr(tempfile, 'mkstemp', mkstemp)
    monkeypatch.chdir(tmp_path / 'cwd')
    assert run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})['changed'] is True
    assert len(staged) == 1 and os.path.dirname(staged[0]) == str(tmp_path / 'keys')
    assert os.path.basename(staged[0]).startswith('.k.gpg.') and len(os.path.basename(staged[0])) > len('.k.gpg.')
    assert sorted(os.listdir(tmp_path / 'keys')) == ['k.asc', 'k.gpg'] and os.listdir(tmp_path / 'cwd') == []


@needs_gpg
def test_a_keyring_named_without_a_directory_is_rewritten_in_the_working_directory(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    _src, dest = downloaded(tmp_path, armored)
    dest.write_bytes(b'an older key')
    monkeypatch.chdir(tmp_path)
    assert run(monkeypatch, {'src': 'k.asc', 'dest': 'k.gpg', 'fingerprints': [fingerprint]})['changed'] is True
    assert sorted(os.listdir(tmp_path)) == ['k.asc', 'k.gpg']


@pytest.fixture
def strict_umask():
    """A node whose login umask lets no one else read new files."""
    old = os.umask(0o077)
    yield
    os.umask(old)


@needs_gpg
@pytest.mark.parametrize('dest', ['k.gpg', 'k.asc'])
def test_a_keyring_is_readable_by_apts_sandbox_user_whatever_the_umask(monkeypatch, tmp_path, keys, strict_umask,
                                                                       dest):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored, 'k.download', dest)
    run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})
    assert oct(dest.stat().st_mode & 0o777) == '0o644'


@needs_gpg
def test_a_rewritten_keyring_that_only_root_could_read_becomes_readable(monkeypatch, tmp_path, keys):
    armored, fingerprint = keys[0]
    src, dest = downloaded(tmp_path, armored)
    dest.write_bytes(b'an older key')
    dest.chmod(0o600)
    assert run(monkeypatch, {'src': str(src), 'dest': str(dest), 'fingerprints': [fingerprint]})['changed'] is True
    assert oct(dest.stat().st_mode & 0o777) == '0o644'
