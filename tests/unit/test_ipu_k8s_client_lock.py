"""plugins/filter/ipu_k8s_client.py: the client lock read from the ipu_k8s
role's own files/, whichever role evaluates ipu_k8s_client_requirements."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / 'plugins' / 'filter' / 'ipu_k8s_client.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_client', PLUGIN)
client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(client)
sys.path.insert(0, str(ROOT / 'tests'))
from testlib import client_lock_lines  # noqa: E402


def test_comments_and_blank_lines_are_not_requirements():
    text = '# header\n\nsix==1.17.0 --hash=sha256:%s\n  # indented comment\nkubernetes==33.1.0\n' % ('a' * 64)
    assert client.requirement_lines(text) == ['six==1.17.0 --hash=sha256:%s' % ('a' * 64), 'kubernetes==33.1.0']


def test_the_lock_is_read_from_the_ipu_k8s_role_whatever_the_caller(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the repository, nor any role's directory
    lines = client.ipu_k8s_role_requirements('kubernetes-client.lock')
    # The lock's text read plainly (tests/testlib.py), and what its header says it pins.
    assert lines == client_lock_lines()
    assert len(lines) == 22
    assert lines[0].startswith('PyYAML==6.0.3 --hash=sha256:')
    assert any(line.startswith('kubernetes==33.1.0 --hash=sha256:') for line in lines)
    assert all(re.fullmatch(r'[A-Za-z0-9_.-]+==[^ ]+( --hash=sha256:[0-9a-f]{64})+', line) for line in lines)


def test_a_missing_lock_says_which_file():
    with pytest.raises(AnsibleFilterError, match='cannot read the client lock .*roles/ipu_k8s/files/nope.lock'):
        client.ipu_k8s_role_requirements('nope.lock')
