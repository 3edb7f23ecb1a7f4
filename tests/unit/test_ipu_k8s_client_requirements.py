"""plugins/filter/ipu_k8s_client.py: requirement lines as pip reads a
requirements file (whole-line comments and blank lines dropped, surrounding space trimmed),
and the refusal for a lock that cannot be read, with the system's reason."""
import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / 'plugins' / 'filter' / 'ipu_k8s_client.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_client', PLUGIN)
client = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(client)


def test_lines_are_trimmed_and_only_whole_line_comments_go():
    text = '\t# pinned by scripts/lock-k8s-client\n  six==1.17.0  \n \t \nkubernetes==33.1.0 # the client\n#x==1\n'
    assert client.requirement_lines(text) == ['six==1.17.0', 'kubernetes==33.1.0 # the client']


def test_an_unreadable_lock_is_refused_with_its_path_and_the_reason():
    with pytest.raises(AnsibleFilterError) as refused:
        client.ipu_k8s_role_requirements('nope.lock')
    assert str(refused.value) == 'cannot read the client lock %s: No such file or directory' % (
        ROOT / 'roles' / 'ipu_k8s' / 'files' / 'nope.lock')


def test_a_directory_is_no_lock():
    with pytest.raises(AnsibleFilterError, match=r'^cannot read the client lock .*/files: Is a directory$'):
        client.ipu_k8s_role_requirements('.')
