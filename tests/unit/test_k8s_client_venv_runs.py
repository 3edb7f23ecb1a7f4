"""plugins/modules/k8s_client_venv.py run through main() the whole way: the virtualenv made, the
packages read, pip run only for what is unmet, and every failure named word for word. The
base python, the virtualenv's python and pip are stood in for (FakeCommands); what the
module decides from their answers runs for real."""

import json
import socket

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from module_harness import FakeCommands, ModuleFail

PINS = ['kubernetes==33.1.0', 'PyYAML==6.0.3']
BASE = '/usr/bin/python3'


def probe_key(module_under_test):
    return ('-I', '-c', module_under_test.PROBE)


@pytest.fixture
def venv_module():
    from module_harness import load_library_module
    return load_library_module('k8s_client_venv')


def listed(**packages):
    return (0, 'a warning line\n' + json.dumps(packages) + '\n', '')


def pip_args(*tail):
    return ('-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--timeout', '60') + tail


def test_a_new_virtualenv_is_made_and_the_pins_installed(run_module, venv_module, tmp_path):
    path = str(tmp_path / 'v')
    fake = FakeCommands({('-m', 'venv', path): (0, '', ''),
                     probe_key(venv_module): [listed(), listed(kubernetes='33.1.0', pyyaml='6.0.3', six='1.17.0')],
                     pip_args(*PINS): (0, 'Successfully installed', '')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert result == {'changed': True, 'python': path + '/bin/python3', 'ready': True, 'created': True,
                      'missing': PINS, 'installed': {'kubernetes': '33.1.0', 'PyYAML': '6.0.3'},
                      'hashes_checked': False, 'warnings': []}
    assert [call[0] for call in fake.calls] == [BASE, path + '/bin/python3', path + '/bin/python3',
                                               path + '/bin/python3']


def existing(tmp_path):
    (tmp_path / 'v' / 'bin').mkdir(parents=True)
    (tmp_path / 'v' / 'bin' / 'python3').write_text('')
    return str(tmp_path / 'v')


def test_a_virtualenv_with_every_pin_changes_nothing(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): listed(kubernetes='33.1.0', pyyaml='6.0.3')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert result['changed'] is False and result['created'] is False and result['missing'] == []
    assert result['ready'] is True
    assert len(fake.calls) == 1


def test_check_mode_lists_what_an_existing_virtualenv_lacks_and_runs_no_pip(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): listed(kubernetes='32.0.0')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': PINS, '_ansible_check_mode': True}, fake)
    assert result['changed'] is True and result['missing'] == PINS
    assert result['installed'] == {'kubernetes': '32.0.0', 'PyYAML': None}
    assert result['ready'] is True   # the kubernetes package is there, at another version
    assert len(fake.calls) == 1


def test_check_mode_of_a_missing_virtualenv_reports_every_pin_unmet(run_module, tmp_path):
    result = run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': PINS,
                                            '_ansible_check_mode': True}, FakeCommands())
    assert result['installed'] == {'kubernetes': None, 'PyYAML': None}
    assert result['missing'] == PINS and result['ready'] is False


def test_a_failing_venv_names_the_package_that_brings_it(run_module, tmp_path):
    path = str(tmp_path / 'v')
    fake = FakeCommands({('-m', 'venv', path): (1, '', ' ensurepip is not available \n')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert failed.value.result['msg'] == (
        '/usr/bin/python3 -m venv %s failed (rc 1): ensurepip is not available. On Debian and Ubuntu the venv '
        'module comes with the python3-venv package.' % path)
    assert failed.value.result['rc'] == 1


def test_a_python_that_cannot_list_its_packages_is_named_with_the_fix(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): (2, 'Fatal Python error\n', '')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert failed.value.result['msg'] == (
        '%s/bin/python3 cannot list its installed packages (rc 2): Fatal Python error. Remove the virtualenv %s '
        'so that the next run creates it afresh.' % (path, path))


@pytest.mark.parametrize('out', ['', 'not json\n'])
def test_a_python_that_prints_no_list_is_refused(run_module, venv_module, tmp_path, out):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): (0, out, '')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert failed.value.result['msg'] == '%s/bin/python3 printed no package list: %r' % (path, out)


class RecordedEnvironment(FakeCommands):
    """FakeCommands that also keeps the environment each command was given (environ_update)."""

    def __init__(self, answers):
        super().__init__(answers)
        self.environments = []

    def run_command(self, module, args, **kwargs):
        self.environments.append(kwargs.get('environ_update') or {})
        return super().run_command(module, args, **kwargs)


@pytest.mark.parametrize('options, tail, source, environment', [
    ({}, PINS, 'PyPI', {}),
    ({'index_url': 'https://mirror.example/simple'}, PINS, 'https://mirror.example/simple',
     {'PIP_INDEX_URL': 'https://mirror.example/simple'}),
    ({'index_url': 'https://ci:s3cret@mirror.example/simple'}, PINS, 'https://mirror.example/simple',
     {'PIP_INDEX_URL': 'https://ci:s3cret@mirror.example/simple'}),
    ({'wheel_dir': 'WHEELS'}, ['--no-index', '--find-links', 'WHEELS'] + PINS, 'the wheels in WHEELS', {}),
    ({'wheel_dir': 'WHEELS', 'index_url': 'https://ci:s3cret@mirror.example/simple'},
     ['--no-index', '--find-links', 'WHEELS'] + PINS, 'the wheels in WHEELS', {}),
], ids=['pypi', 'index', 'index-with-credentials', 'wheels', 'wheels-before-index'])
def test_a_failing_pip_names_the_pins_the_virtualenv_and_the_source(run_module, venv_module, tmp_path, options,
                                                                     tail, source, environment):
    path = existing(tmp_path)
    options = {key: (str(tmp_path) if value == 'WHEELS' else value) for key, value in options.items()}
    tail = [str(tmp_path) if word == 'WHEELS' else word for word in tail]
    source = source.replace('WHEELS', str(tmp_path))
    error = 'x' * 3000 + 'ERROR: No matching distribution found for kubernetes==33.1.0\n'
    fake = RecordedEnvironment({probe_key(venv_module): listed(pyyaml='6.0.3'), pip_args(*tail): (1, '', error)})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', dict(options, path=path, requirements=PINS), fake)
    assert failed.value.result['msg'] == 'Installing kubernetes==33.1.0 into %s from %s failed (rc 1): %s' % (
        path, source, error.strip()[-2000:])
    assert failed.value.result['cmd'][0] == path + '/bin/python3'
    # pip, the last command, got the index through its environment; the probe got nothing
    assert fake.environments == [{}, environment]
    assert 's3cret' not in repr(failed.value.result)


def test_a_pip_that_succeeds_without_installing_the_pins_is_refused(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): [listed(), listed(kubernetes='33.0.0')],
                     pip_args(*PINS): (0, '', '')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert failed.value.result['msg'] == (
        "pip install ended, yet %s still lacks kubernetes==33.1.0 PyYAML==6.0.3 (found {'kubernetes': '33.0.0', "
        "'PyYAML': None})" % path)


def test_the_pip_timeout_is_passed_on(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    args = ('-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--timeout', '7') + tuple(PINS)
    fake = FakeCommands({probe_key(venv_module): [listed(), listed(kubernetes='33.1.0', pyyaml='6.0.3')],
                     args: (0, '', '')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': PINS, 'pip_timeout': 7}, fake)
    assert result['changed'] is True and result['created'] is False


def test_a_missing_wheel_directory_is_refused_with_the_download_command(run_module, tmp_path):
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': PINS,
                                       'wheel_dir': str(tmp_path / 'none')})
    assert failed.value.result['msg'].endswith(
        ': copy the wheels there (pip download kubernetes==33.1.0 PyYAML==6.0.3), or leave it empty to install '
        'from the package index.')


def test_pins_without_the_client_are_refused_naming_them(run_module, tmp_path):
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['PyYAML==6.0.3', 'six==1.17.0']})
    assert failed.value.result['msg'] == (
        'ipu_k8s_client_requirements PyYAML==6.0.3 six==1.17.0 pins no kubernetes==<version>: the kubernetes.core '
        'modules import that client; add it.')


def test_pip_runs_with_its_defaults_from_pypi(venv_module):
    assert venv_module.pip_command('/v/bin/python3', [('kubernetes', '33.1.0')]) == [
        '/v/bin/python3', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--timeout', '60',
        'kubernetes==33.1.0']


def test_a_requirements_file_lists_pins_without_hashes_bare(venv_module):
    assert venv_module.requirements_text([('kubernetes', '33.1.0'), ('six', '1.17.0')], {'six': ['ab', 'cd']}) == (
        'kubernetes==33.1.0\nsix==1.17.0 --hash=sha256:ab --hash=sha256:cd\n')


def test_a_failing_package_listing_returns_what_the_python_said(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): (3, 'partial\n', 'Traceback\n')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert (failed.value.result['rc'], failed.value.result['stdout'], failed.value.result['stderr']) == (
        3, 'partial\n', 'Traceback\n')


@pytest.mark.parametrize('missing', ['path', 'requirements'])
def test_each_required_option_is_required(run_module, tmp_path, missing):
    args = {'path': str(tmp_path / 'v'), 'requirements': PINS}
    del args[missing]
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', args)
    assert failed.value.result['msg'] == 'missing required arguments: %s' % missing


def test_paths_under_the_home_directory_are_expanded(run_module, venv_module, tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    (tmp_path / 'wheels').mkdir()
    path = str(tmp_path / 'v')
    fake = FakeCommands({('-m', 'venv', path): (0, '', ''),
                         probe_key(venv_module): [listed(), listed(kubernetes='33.1.0', pyyaml='6.0.3')],
                         pip_args('--no-index', '--find-links', str(tmp_path / 'wheels'), *PINS): (0, '', '')})
    result = run_module('k8s_client_venv', {'path': '~/v', 'requirements': PINS, 'base_python': '~/py/bin/python3',
                                            'wheel_dir': '~/wheels'}, fake)
    assert result['python'] == path + '/bin/python3' and result['ready'] is True
    assert fake.calls[0][0] == str(tmp_path / 'py' / 'bin' / 'python3')


def test_a_requirement_that_is_no_string_is_refused_as_text(run_module, tmp_path):
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['kubernetes==33.1.0', 1.5]})
    assert failed.value.result['msg'].startswith("ipu_k8s_client_requirements: requirement '1.5' is not an exact pin")


def test_a_pip_timeout_that_is_no_number_is_refused_before_anything_runs(run_module, tmp_path):
    fake = FakeCommands()
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': PINS, 'pip_timeout': 'soon'},
                   fake)
    assert "pip_timeout" in failed.value.result['msg'] and "cannot be converted to an int" in failed.value.result['msg']
    assert fake.calls == []


@pytest.mark.parametrize('length, shown', [(119, 'k' * 119), (120, 'k' * 117 + '...'), (130, 'k' * 117 + '...')])
def test_a_long_requirement_is_shown_cut_to_120_characters(length, shown, venv_module):
    with pytest.raises(ValueError) as refused:
        venv_module.parse_requirements(['k' * length])
    assert str(refused.value) == (
        "requirement '%s' is not an exact pin: write it as name==version (for example kubernetes==33.1.0), "
        "optionally with --hash=sha256:<64 hex digits> options, so that every host gets the same client and a "
        "rerun changes nothing" % shown)


def test_hashes_on_some_pins_only_are_refused_naming_both_sides(venv_module):
    with pytest.raises(ValueError) as refused:
        venv_module.parse_requirements(['six==1.17.0 --hash=sha256:' + 'a' * 64, 'kubernetes==33.1.0',
                                        'PyYAML==6.0.3', 'jsonpatch==1.33 --hash=sha256:' + 'b' * 64])
    assert str(refused.value) == (
        'jsonpatch, six carry sha256 hashes but kubernetes, PyYAML do not: pip checks either every package or none '
        '(--require-hashes); give every pin its hashes (scripts/lock-k8s-client writes them)')


HASHED = ['kubernetes==33.1.0 --hash=sha256:' + 'a' * 64 + ' --hash=sha256:' + 'b' * 64,
          'PyYAML==6.0.3 --hash=sha256:' + 'c' * 64]


def test_hashed_pins_are_installed_from_a_requirements_file_with_their_hashes(run_module, venv_module, tmp_path,
                                                                              monkeypatch):
    from ansible.module_utils import basic
    monkeypatch.setattr(basic.AnsibleModule, 'tmpdir', property(lambda self: str(tmp_path)))
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): [listed(kubernetes='33.1.0'),
                                                  listed(kubernetes='33.1.0', pyyaml='6.0.3')],
                         pip_args('--require-hashes', '-r', str(tmp_path / 'requirements.txt')): (0, '', '')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': HASHED}, fake)
    assert result['hashes_checked'] is True and result['missing'] == ['PyYAML==6.0.3']
    assert (tmp_path / 'requirements.txt').read_text() == (
        'kubernetes==33.1.0 --hash=sha256:%s --hash=sha256:%s\nPyYAML==6.0.3 --hash=sha256:%s\n'
        % ('a' * 64, 'b' * 64, 'c' * 64))


def test_a_missing_wheel_directory_with_hashed_pins_is_refused_with_the_locked_download(run_module, tmp_path):
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': HASHED,
                                       'wheel_dir': str(tmp_path / 'none')})
    assert failed.value.result['msg'] == (
        'ipu_k8s_client_wheel_dir %s is not a directory on %s: copy the wheels there (pip download --require-hashes '
        '-r roles/ipu_k8s/files/kubernetes-client.lock), or leave it empty to install from the package index.'
        % (tmp_path / 'none', socket.gethostname()))


def test_a_failing_pip_names_every_missing_pin_and_returns_what_pip_said(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): listed(), pip_args(*PINS): (2, 'Collecting\n', 'ERROR: offline\n')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert failed.value.result['msg'] == (
        'Installing kubernetes==33.1.0 PyYAML==6.0.3 into %s from PyPI failed (rc 2): ERROR: offline' % path)
    assert (failed.value.result['rc'], failed.value.result['stdout'], failed.value.result['stderr']) == (
        2, 'Collecting\n', 'ERROR: offline\n')


def test_a_failing_venv_returns_what_python_said(run_module, tmp_path):
    path = str(tmp_path / 'v')
    fake = FakeCommands({('-m', 'venv', path): (1, 'partial\n', 'ensurepip is not available\n')})
    with pytest.raises(ModuleFail) as failed:
        run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert (failed.value.result['rc'], failed.value.result['stdout'], failed.value.result['stderr']) == (
        1, 'partial\n', 'ensurepip is not available\n')


def test_a_package_list_alone_on_its_line_is_read(run_module, venv_module, tmp_path):
    path = existing(tmp_path)
    fake = FakeCommands({probe_key(venv_module): (0, json.dumps({'kubernetes': '33.1.0', 'pyyaml': '6.0.3'}), '')})
    result = run_module('k8s_client_venv', {'path': path, 'requirements': PINS}, fake)
    assert result['changed'] is False and result['installed'] == {'kubernetes': '33.1.0', 'PyYAML': '6.0.3'}


def test_an_index_url_with_credentials_is_in_no_output_of_the_module(venv_module, tmp_path, monkeypatch, capsys):
    # fail_json as Ansible runs it (not the raising stand-in of run_module): the JSON the module
    # prints, with its invocation, is what reaches the controller, its callbacks and logs.
    path = existing(tmp_path)
    url = 'https://ci:s3cret@mirror.example/simple'
    fake = RecordedEnvironment({probe_key(venv_module): listed(pyyaml='6.0.3'),
                                pip_args(*PINS): (1, '', 'ERROR: No matching distribution found\n')})
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, *a, **kw: fake.run_command(self, *a, **kw))
    with patch_module_args({'path': path, 'requirements': PINS, 'index_url': url}):
        with pytest.raises(SystemExit) as exited:
            venv_module.main()
    assert exited.value.code == 1
    printed = capsys.readouterr().out
    result = json.loads(printed)
    assert result['msg'].startswith('Installing kubernetes==33.1.0 into %s from https://mirror.example/simple failed'
                                    % path)
    assert result['invocation']['module_args']['index_url'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert 's3cret' not in printed
    assert fake.environments[-1] == {'PIP_INDEX_URL': url}
