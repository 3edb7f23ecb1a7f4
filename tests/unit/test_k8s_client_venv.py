"""plugins/modules/k8s_client_venv.py: the pins it accepts, what it finds unmet, the pip command it
builds, and its refusals (run through main() with module args, as Ansible runs it)."""

import pytest

from module_harness import ModuleFail, load_library_module
from testlib import client_lock_lines

venv = load_library_module('k8s_client_venv')


def test_exact_pins_are_parsed():
    assert venv.parse_requirements(['kubernetes==33.1.0', 'PyYAML == 6.0.3']) == (
        [('kubernetes', '33.1.0'), ('PyYAML', '6.0.3')], {})


@pytest.mark.parametrize('requirement', ['kubernetes', 'kubernetes>=24.2.0', 'kubernetes==', 'kubernetes~=33.1'])
def test_a_requirement_that_is_not_an_exact_pin_is_refused(requirement):
    with pytest.raises(ValueError, match='not an exact pin: write it as name==version'):
        venv.parse_requirements([requirement])


def test_names_compare_as_pep_503_names():
    installed = {'pyyaml': '6.0.3', 'requests-oauthlib': '2.0.0'}
    assert venv.unmet([('PyYAML', '6.0.3'), ('requests_oauthlib', '2.0.0')], installed) == []


def test_a_missing_or_other_version_is_unmet():
    installed = {'kubernetes': '12.0.1'}
    assert venv.unmet([('kubernetes', '33.1.0'), ('jsonpatch', '1.33')], installed) == [
        'kubernetes==33.1.0', 'jsonpatch==1.33']


def test_pip_installs_from_the_wheel_directory_alone_when_one_is_given():
    command = venv.pip_command('/v/bin/python3', [('kubernetes', '33.1.0')], wheel_dir='/srv/wheels')
    assert command[:4] == ['/v/bin/python3', '-m', 'pip', 'install']
    assert command[-4:] == ['--no-index', '--find-links', '/srv/wheels', 'kubernetes==33.1.0']
    assert venv.source_environment('/srv/wheels', 'https://mirror/simple') == {}


def test_the_index_url_reaches_pip_through_its_environment_not_its_command_line():
    # pip reads every option from PIP_<OPTION> (pip's docs, "Environment Variables"); argv is
    # readable by every user of the host (ps) and is what results and errors show.
    command = venv.pip_command('/v/bin/python3', [('kubernetes', '33.1.0')])
    assert command[-1] == 'kubernetes==33.1.0'
    assert '--no-index' not in command and not [word for word in command if 'mirror' in word]
    assert venv.source_environment('', 'https://ci:t0ken@mirror/simple') == {
        'PIP_INDEX_URL': 'https://ci:t0ken@mirror/simple'}
    assert venv.source_environment('', '') == {}


@pytest.mark.parametrize('url, shown', [
    ('https://mirror.example/simple', 'https://mirror.example/simple'),
    ('https://ci:t0ken@mirror.example:8443/pypi/simple/', 'https://mirror.example:8443/pypi/simple/'),
    ('https://t0ken@mirror.example/simple?key=t0ken#t0ken', 'https://mirror.example/simple'),
    ('https://ci:p@ss@mirror.example/simple', 'https://mirror.example/simple'),
])
def test_a_url_is_shown_without_its_credentials(url, shown):
    assert venv.shown_url(url) == shown



def test_an_unpinned_requirement_is_refused_naming_the_setting(run_module, tmp_path):
    with pytest.raises(ModuleFail) as failure:
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['kubernetes>=24']})
    assert failure.value.result['msg'].startswith("ipu_k8s_client_requirements: requirement 'kubernetes>=24'")


def test_pins_without_the_kubernetes_client_are_refused(run_module, tmp_path):
    with pytest.raises(ModuleFail, match='pins no kubernetes==<version>'):
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['PyYAML==6.0.3']})


def test_a_wheel_directory_that_does_not_exist_is_refused(run_module, tmp_path):
    with pytest.raises(ModuleFail, match='ipu_k8s_client_wheel_dir .*/nowhere is not a directory'):
        run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['kubernetes==33.1.0'],
                                       'wheel_dir': str(tmp_path / 'nowhere')})


def test_check_mode_reports_a_missing_virtualenv_without_creating_it(run_module, tmp_path):
    result = run_module('k8s_client_venv', {'path': str(tmp_path / 'v'), 'requirements': ['kubernetes==33.1.0'],
                                            '_ansible_check_mode': True})
    assert result['changed'] and result['created'] and not result['ready']
    assert result['missing'] == ['kubernetes==33.1.0']
    assert not (tmp_path / 'v').exists()


A, B = 'a' * 64, 'b' * 64


def test_pins_with_hashes_are_parsed_with_their_hashes():
    pins, hashes = venv.parse_requirements(['kubernetes==33.1.0 --hash=sha256:%s --hash=sha256:%s' % (A, B),
                                            'six==1.17.0 --hash=sha256:%s' % A])
    assert pins == [('kubernetes', '33.1.0'), ('six', '1.17.0')]
    assert hashes == {'kubernetes': [A, B], 'six': [A]}
    assert venv.requirements_text(pins, hashes) == (
        'kubernetes==33.1.0 --hash=sha256:%s --hash=sha256:%s\nsix==1.17.0 --hash=sha256:%s\n' % (A, B, A))


def test_hashes_on_some_pins_only_are_refused():
    with pytest.raises(ValueError, match='kubernetes carry sha256 hashes but six do not'):
        venv.parse_requirements(['kubernetes==33.1.0 --hash=sha256:%s' % A, 'six==1.17.0'])


@pytest.mark.parametrize('option', ['--hash=md5:%s' % A, '--hash=sha256:abc', '--index-url=http://x'])
def test_an_option_other_than_a_sha256_hash_is_refused(option):
    with pytest.raises(ValueError, match='not an exact pin'):
        venv.parse_requirements(['kubernetes==33.1.0 %s' % option])


def test_hashed_pins_install_from_a_requirements_file_in_require_hashes_mode():
    command = venv.pip_command('/v/bin/python3', [('kubernetes', '33.1.0')], wheel_dir='/srv/wheels',
                               requirements_file='/tmp/r.txt')
    assert command[-6:] == ['--no-index', '--find-links', '/srv/wheels', '--require-hashes', '-r', '/tmp/r.txt']
    assert 'kubernetes==33.1.0' not in command


def test_the_roles_lock_pins_every_package_with_hashes_and_the_client():
    pins, hashes = venv.parse_requirements(client_lock_lines())
    assert ('kubernetes', '33.1.0') in pins and len(hashes) == len(pins) >= 20
    assert len({venv.normalise(name) for name, _ in pins}) == len(pins)
