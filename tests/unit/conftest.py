"""Unit-test plumbing: load the modules in plugins/modules/ (their module_utils import as on a
node, ansible_collections.ipu_k8s.cluster.plugins.module_utils.*, one module object shared with
the tests; tests/conftest.py puts the collection on sys.path) and run their main() the way
Ansible's own unit tests do (module args patched in, exit_json/fail_json raising). The kernel and
the V-IPU CLI are the only things replaced (see FakeCommands); the code under test always runs
for real."""

import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / 'tests'))  # tests/testlib.py

from ansible.module_utils import basic  # noqa: E402
from ansible.module_utils.testing import patch_module_args  # noqa: E402

from module_harness import FakeCommands, ModuleExit, ModuleFail, load_library_module  # noqa: E402,F401


@pytest.fixture
def run_module(monkeypatch):
    """run_module(name, args, commands=FakeCommands(...)) -> result dict (with the module's
    warnings under 'warnings'), or raises ModuleFail."""

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, **kwargs):
        raise ModuleFail(kwargs)

    def run(name, args, commands=None):
        commands = commands or FakeCommands()
        warnings = []
        monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning: warnings.append(warning))
        monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
        monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                            lambda self, *a, **kw: commands.get_bin_path(self, *a, **kw))
        monkeypatch.setattr(basic.AnsibleModule, 'run_command',
                            lambda self, *a, **kw: commands.run_command(self, *a, **kw))
        module = load_library_module(name)
        with patch_module_args(args):
            try:
                module.main()
            except ModuleExit as done:
                done.result['warnings'] = warnings
                return done.result
        raise AssertionError('%s returned without exit_json or fail_json' % name)

    return run


@pytest.fixture
def no_vipu_environment(monkeypatch):
    """The test's own environment must not leak a V-IPU address into the module."""
    monkeypatch.delenv('IPUOF_VIPU_API_HOST', raising=False)
    monkeypatch.delenv('IPUOF_VIPU_API_PORT', raising=False)


# The names the module tests resolve, as a node's /etc/hosts or DNS would answer them.
HOSTS = {'vipu-ctrl': '10.247.208.5', 'vipu-ctrl.pod001.example': '10.5.212.116'}


@pytest.fixture
def hosts_file(monkeypatch):
    """Name resolution from HOSTS (the node's /etc/hosts or DNS is not under test here)."""

    def getaddrinfo(host, port, family=0, type=0, *args):
        if host not in HOSTS:
            raise socket.gaierror(socket.EAI_NONAME, 'Name or service not known')
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, '', (HOSTS[host], 0))]

    monkeypatch.setattr(socket, 'getaddrinfo', getaddrinfo)
