"""plugins/module_utils/ipu_k8s_files.py: a missing file reads as None, and a written file is
renamed into place whole with mode 0644 (apt reads keyrings as its unprivileged _apt user)."""

import os

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_files import read, write


class Renamer:
    """Stands in for AnsibleModule: atomic_move is a rename, keeping the staged file's mode. The
    staged file sits beside its target (a rename, not a copy across file systems), hidden and
    named after it, so one left by a killed run is never read as configuration (*.conf)."""

    def atomic_move(self, src, dest):
        assert os.path.dirname(os.path.abspath(src)) == os.path.dirname(os.path.abspath(dest))
        assert os.path.basename(src).startswith('.%s.' % os.path.basename(dest)), src
        os.replace(src, dest)


def test_a_missing_file_reads_as_none_and_an_empty_one_as_empty(tmp_path):
    (tmp_path / 'empty').write_text('')
    assert read(str(tmp_path / 'absent')) is None
    assert read(str(tmp_path / 'empty')) == ''


def test_binary_reads_bytes(tmp_path):
    (tmp_path / 'keyring.gpg').write_bytes(b'\x99\x01\x0d')
    assert read(str(tmp_path / 'keyring.gpg'), binary=True) == b'\x99\x01\x0d'


def test_a_written_file_replaces_the_old_one_whole_with_mode_0644_whatever_the_umask(tmp_path):
    target = tmp_path / 'kubernetes.gpg'
    target.write_bytes(b'old key')
    target.chmod(0o600)
    old_umask = os.umask(0o077)
    try:
        write(Renamer(), str(target), b'new key')
        write(Renamer(), str(tmp_path / '90-ipu-k8s.conf'), 'net.ipv4.ip_forward=1\n')
    finally:
        os.umask(old_umask)
    assert target.read_bytes() == b'new key'
    assert (tmp_path / '90-ipu-k8s.conf').read_text() == 'net.ipv4.ip_forward=1\n'
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()} == {
        'kubernetes.gpg': '0o644', '90-ipu-k8s.conf': '0o644'}  # and no staged file left behind


def test_a_bare_file_name_is_written_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(Renamer(), 'sources.list', 'deb http://deb.debian.org/debian bookworm main\n')
    assert (tmp_path / 'sources.list').read_text() == 'deb http://deb.debian.org/debian bookworm main\n'
