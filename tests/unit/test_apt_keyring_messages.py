"""plugins/modules/apt_keyring.py's refusals word for word, with the real gpg and keys made here
(the fixtures of test_apt_keyring.py)."""

import pytest

from module_harness import ModuleFail
from test_apt_keyring import gpg, keys, needs_gpg, run  # noqa: F401  (gpg and keys are fixtures)


@pytest.mark.parametrize('fingerprints', [[], ['0EBFCD88'], ['9DC858229FC7DD38854AE2D88D81803C0EBFCD88', 'x']])
def test_a_fingerprint_setting_without_forty_hex_digits_is_refused_showing_it(monkeypatch, tmp_path, fingerprints):
    src = tmp_path / 'k.asc'
    src.write_text('x')
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'), 'fingerprints': fingerprints,
                          'setting': 'docker_key_fingerprints'})
    assert failed.value.result['msg'] == (
        'docker_key_fingerprints must list 40-hex-digit key fingerprints (it is %s); use the value the repository '
        'documents.' % fingerprints)


def test_a_missing_download_is_refused_with_the_fix(monkeypatch, tmp_path):
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(tmp_path / 'k.asc'), 'dest': str(tmp_path / 'k.gpg'),
                          'fingerprints': ['9DC858229FC7DD38854AE2D88D81803C0EBFCD88']})
    assert failed.value.result['msg'] == ('%s does not exist: download or copy the repository key there first.'
                                          % (tmp_path / 'k.asc'))


@needs_gpg
def test_a_wrong_key_is_refused_word_for_word_with_what_gpg_found(monkeypatch, tmp_path, keys):  # noqa: F811
    (armored, fingerprint), (_, other) = keys
    src = tmp_path / 'k.asc'
    src.write_text(armored)
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'), 'fingerprints': [other.lower()],
                          'setting': 'kubernetes_packages_key_fingerprints'})
    assert failed.value.result['msg'] == (
        '%s holds key %s, not the expected %s. It was removed so the next run fetches it again. If the repository '
        'rotated its key, set kubernetes_packages_key_fingerprints to the new fingerprint it publishes.'
        % (src, fingerprint, other))
    assert failed.value.result['fingerprints'] == [fingerprint]


@needs_gpg
def test_in_check_mode_a_wrong_key_is_refused_and_kept_and_the_message_says_nothing_was_removed(
        monkeypatch, tmp_path, keys):  # noqa: F811
    # Preflight checks a key the site gives as a file this way, on the controller: the file is the site's own.
    (armored, fingerprint), (_, other) = keys
    src = tmp_path / 'k.asc'
    src.write_text(armored)
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'), 'fingerprints': [other],
                          'setting': 'kubernetes_packages_key_fingerprints'}, check_mode=True)
    assert failed.value.result['msg'] == (
        '%s holds key %s, not the expected %s. If the repository rotated its key, set '
        'kubernetes_packages_key_fingerprints to the new fingerprint it publishes.' % (src, fingerprint, other))
    assert src.read_text() == armored and not (tmp_path / 'k.gpg').exists()



@pytest.mark.parametrize('missing', ['src', 'dest', 'fingerprints'])
def test_each_required_option_is_required(monkeypatch, tmp_path, missing):
    args = {'src': str(tmp_path / 'k.asc'), 'dest': str(tmp_path / 'k.gpg'),
            'fingerprints': ['9DC858229FC7DD38854AE2D88D81803C0EBFCD88']}
    del args[missing]
    with pytest.raises(ModuleFail, match='missing required arguments: %s' % missing):
        run(monkeypatch, args)


@needs_gpg
def test_paths_under_the_home_directory_are_expanded(monkeypatch, tmp_path, keys):  # noqa: F811
    armored, fingerprint = keys[0]
    monkeypatch.setenv('HOME', str(tmp_path))
    (tmp_path / 'k.asc').write_text(armored)
    result = run(monkeypatch, {'src': '~/k.asc', 'dest': '~/k.gpg', 'fingerprints': [fingerprint]})
    assert result['changed'] is True and (tmp_path / 'k.gpg').exists()


def test_a_fingerprint_that_is_a_number_is_read_as_text_under_the_default_setting_name(monkeypatch, tmp_path):
    src = tmp_path / 'k.asc'
    src.write_text('x')
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'), 'fingerprints': [1234]})
    assert failed.value.result['msg'] == (
        "fingerprints must list 40-hex-digit key fingerprints (it is ['1234']); use the value the repository "
        "documents.")


def test_without_gpg_on_the_node_the_module_says_so_and_keeps_the_download(monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    src = tmp_path / 'k.asc'
    src.write_text('x')
    with pytest.raises(ModuleFail) as failed:
        run(monkeypatch, {'src': str(src), 'dest': str(tmp_path / 'k.gpg'),
                          'fingerprints': ['9DC858229FC7DD38854AE2D88D81803C0EBFCD88']})
    assert failed.value.result['msg'].startswith('Failed to find required executable "gpg"')
    assert src.exists()

