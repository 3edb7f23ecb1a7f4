"""Helpers shared by the test tiers (and the tools under tests/schemas/), one copy each:

- process_alive(pid): whether a process still runs, a zombie (ended, not yet reaped) being
  dead (the stale-run sweeps of the integration and API tiers use it on the PIDs their
  names or records carry; the API tier's cluster stop waits on it for its own children).
- namespace_factory(create_netns): the body of the netns_factory fixtures: make(role)
  gives a new namespace with lo up; every one made is deleted when the block ends.
- flatten_keys(data): the dotted keys a values mapping sets (the render tests and
  tests/schemas/network_operator/refresh.py compare charts' values by these).
- CLIENT_LOCK, client_lock_lines(), client_lock_pins(): the ipu_k8s role's Kubernetes
  client lock, its text read plainly (not with the role's filter, which tests check).
- TOOLS, tool(name): the directory of the Python running the tests and a tool in it
  (ansible-playbook, ansible...): the tools installed with that Python, wherever it lives.
- require(condition, reason): skip the test with reason when condition is false; under CI
  (CI=true) fail with that reason instead, so a runner without root or a tool the tier
  needs turns the tier red rather than green with skips.
- served(directory): an HTTP server on 127.0.0.1 (a free port) serving a directory the
  test made, stopped when the block ends; yields its base URL.

Import with tests/ on sys.path (the tiers' conftests and helpers put it there).
"""

import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Not resolved: a virtualenv's python is a symlink, its tools sit beside the link.
TOOLS = Path(sys.executable).parent


def tool(name):
    """The path of a tool installed with the running Python (e.g. 'ansible-playbook')."""
    return str(TOOLS / name)


def in_ci():
    """True on a CI runner (CI=true, as GitHub Actions, GitLab CI and others set it)."""
    return os.environ.get('CI', '').lower() in ('true', '1', 'yes')


def require(condition, reason):
    """Skip with reason unless condition holds; under CI fail with it instead."""
    if condition:
        return
    if in_ci():
        pytest.fail('%s (CI=true: a test that cannot run on the CI runner fails)' % reason, pytrace=False)
    pytest.skip(reason)


def require_root(what):
    """require() that the tests run as root; what says why they need it."""
    require(os.geteuid() == 0, 'needs root: %s' % what)
CLIENT_LOCK = ROOT / 'roles' / 'ipu_k8s' / 'files' / 'kubernetes-client.lock'


def process_alive(pid):
    """True while process pid runs (also when it belongs to someone else); a zombie, which
    has ended and waits only for its parent to read its status, is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path('/proc/%d/stat' % pid).read_text()
    except OSError:
        return True
    # "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ")"
    return stat[stat.rindex(')') + 1:].split()[0] != 'Z'


@contextlib.contextmanager
def namespace_factory(create_netns):
    """with namespace_factory(create_netns) as make: make(role) -> a namespace with lo up."""
    made = []

    def make(role):
        namespace = create_netns(role)
        made.append(namespace)
        namespace.ip('link set lo up')
        return namespace

    try:
        yield make
    finally:
        for namespace in made:
            namespace.delete()


def flatten_keys(data, prefix=''):
    """Dotted keys a values mapping sets, lists marked "[]" (their items' keys below them)."""
    keys = set()
    if isinstance(data, dict):
        for key, value in data.items():
            path = '%s.%s' % (prefix, key) if prefix else str(key)
            keys.add(path)
            if isinstance(value, dict) and value:
                keys |= flatten_keys(value, path)
            elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
                keys.add(path + '[]')
                for item in value:
                    keys |= flatten_keys(item, path + '[]')
    return keys


def client_lock_lines():
    """The lock's requirements (name==version --hash=sha256:...), read plainly: every line
    that is not blank or a comment, as pip reads a requirements file (tests take their
    expected pins from here, not from the role's filter they test)."""
    lines = [line.strip() for line in CLIENT_LOCK.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith('#')]


def client_lock_pins():
    """The lock's name==version pins, without their hashes."""
    return [line.split()[0] for line in client_lock_lines()]


@contextlib.contextmanager
def served(directory):
    """with served(dir) as url: dir's files over HTTP on 127.0.0.1, url ending with "/"."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield 'http://127.0.0.1:%d/' % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def reset_stand_ins(directory):
    """What playbooks/reset.yml could touch on a host, made in DIRECTORY: a kubeadm stand-in that
    logs its arguments, a kubeadm state file, a CNI file and a join configuration; and the reset
    role's settings pointing at them (no interface, no kubeconfig user, an iptables pattern
    that matches nothing), so a broken guard shows as a stand-in call or a deleted file."""
    kubeadm, log = directory / 'kubeadm', directory / 'kubeadm.log'
    kubeadm.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    kubeadm.chmod(0o755)
    state, cni, join = directory / 'kubelet.conf', directory / '10-calico.conflist', directory / 'ipu-k8s-join.yaml'
    state.write_text('state\n')
    cni.write_text('{}\n')
    join.write_text('token: abcdef.0123456789abcdef\n')
    return {'dir': directory, 'log': log, 'state': state, 'cni': cni, 'join': join, 'vars': {
        'ipu_k8s_join_config_path': str(join),
        'ansible_become': False,
        'reset_kubeadm_binary': str(kubeadm),
        'reset_kubeadm_state_files': [str(state)],
        'reset_cni_paths': [str(cni)],
        'reset_interfaces': [],
        'reset_kubeconfig_users': [],
        'reset_iptables_chain_pattern': 'IPU-K8S-TEST-NEVER-A-CHAIN',
        'ipu_k8s_kubeconfig': str(directory / 'admin.conf'),
    }}


def dpkg_status(packages):
    """The text of a dpkg status file holding each {package: version} as installed and held."""
    return ''.join('Package: %s\nStatus: hold ok installed\nPriority: optional\nSection: admin\n'
                   'Installed-Size: 1000\nMaintainer: Kubernetes Authors <dev@kubernetes.io>\n'
                   'Architecture: amd64\nVersion: %s\nDescription: stand-in stanza\n written by the test.\n\n'
                   % (name, version) for name, version in packages.items())


def make_gpg_key(home, name):
    """A new ed25519 signing key made with the real gpg in the empty directory HOME: its armoured
    public key and its fingerprint (40 upper-case hex digits). The agent gpg starts is stopped."""
    home.chmod(0o700)
    gpg = ['gpg', '--batch', '--homedir', str(home)]
    subprocess.run(gpg + ['--passphrase', '', '--quick-gen-key', f'{name} <{name}@example.invalid>', 'ed25519', 'sign',
                          'never'], check=True, capture_output=True)
    armored = subprocess.run(gpg + ['--armor', '--export'], check=True, capture_output=True, text=True).stdout
    colons = subprocess.run(gpg + ['--with-colons', '--list-keys'], check=True, capture_output=True, text=True).stdout
    subprocess.run(['gpgconf', '--homedir', str(home), '--kill', 'all'], check=False)
    return armored, next(line.split(':')[9] for line in colons.splitlines() if line.startswith('fpr:'))
