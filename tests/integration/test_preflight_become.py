"""A host reached as a user whose sudo refuses is stopped by preflight with the project's own
message (the user, and how to give it root), not with a raw sudo error.

The test makes a throwaway local user with no sudo rights and runs the real
playbooks/preflight.yml AS that user (runuser), over the local connection, so the connecting
user is that user and every become goes through the machine's real sudo (or finds none).
The user is deleted afterwards. Making and running as another user needs root: under CI=true
a run without root fails (tests/conftest.py's `root` fixture).

The Ansible of the test environment runs under a Python the user can read: the
environment's own, or the system python3 of the same minor with the environment's
site-packages on PYTHONPATH (a virtualenv under /root is not readable by other users).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

import pytest
import yaml

from testlib import require

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_MAIN = 'from ansible.cli.playbook import main; import sys; sys.argv[0] = "ansible-playbook"; main()'


@pytest.fixture
def user(root):
    require(shutil.which('useradd') and shutil.which('runuser'), 'needs useradd and runuser (passwd, util-linux)')
    name = 'ipuk8s-t%s' % uuid.uuid4().hex[:8]
    home = Path(tempfile.mkdtemp(prefix='ipu-k8s-become-'))
    home.chmod(0o755)
    subprocess.run(['useradd', '--no-create-home', '--home-dir', str(home), '--shell', '/bin/sh', name], check=True)
    try:
        os.chown(home, *_ids(name))
        yield {'name': name, 'home': home}
    finally:
        subprocess.run(['userdel', name], check=False)
        shutil.rmtree(home, ignore_errors=True)


def _ids(name):
    import pwd
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _runner(user):
    """(python, env) with which USER can import this environment's Ansible."""
    purelib = sysconfig.get_paths()['purelib']
    system = '/usr/bin/python3'
    candidates = [(sys.executable, {})]
    if os.path.exists(system):
        candidates.append((system, {'PYTHONPATH': purelib}))
    for python, env in candidates:
        check = subprocess.run(['runuser', '-u', user['name'], '--', 'env', '-i', 'HOME=%s' % user['home'],
                                *['%s=%s' % kv for kv in env.items()], python, '-c',
                                'import sys, ansible.cli.playbook; assert sys.version_info[:2] == %r'
                                % (sys.version_info[:2],)], capture_output=True, text=True)
        if check.returncode == 0:
            return python, env
    require(False, 'no Python of this minor that user %s can read imports Ansible' % user['name'])


# ansible_become set in the inventory (every task, fact gathering included, goes through sudo),
# or left to the playbooks' `become: true` (only the node steps would).
@pytest.mark.parametrize('become', [{'ansible_become': True}, {}], ids=['inventory-become', 'playbook-become'])
def test_user_whose_sudo_refuses_gets_preflights_message_naming_it_and_the_fix(user, become):
    python, env = _runner(user)
    inventory = user['home'] / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {
        'k8s_cluster': {'children': {
            'control_plane': {'hosts': {'node-a': dict(
                become, ansible_connection='local', ansible_python_interpreter=python)}},
            'workers': {'hosts': {}}}},
        'ipu_nodes': {'hosts': {}}}}}))
    run = subprocess.run(
        ['runuser', '-u', user['name'], '--', 'env', '-i', 'HOME=%s' % user['home'], 'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
         'ANSIBLE_CONFIG=%s' % (ROOT / 'ansible.cfg'), 'ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default',
         'ANSIBLE_CALLBACK_RESULT_FORMAT=json', 'ANSIBLE_NOCOLOR=1',
         *['%s=%s' % kv for kv in env.items()],
         python, '-c', PLAYBOOK_MAIN, '-i', str(inventory), str(ROOT / 'playbooks' / 'preflight.yml'),
         '--tags', 'preflight_access'],
        capture_output=True, text=True, cwd=user['home'], timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    failures = [json.loads(m.group(1)) for m in re.finditer(r'^fatal: \[node-a\]: FAILED! => (\{.*\})$', output, re.M)]
    # The probe's sudo error is rescued (Ansible still prints it); the failure that stops the
    # run is the project's message.
    assert failures and re.search(r'node-a\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1\s+skipped=\d+\s+rescued=1',
                                  output), output
    message = failures[-1]['msg']
    name = user['name']
    assert message.startswith('node-a is reached as %s, who cannot become root with sudo (' % name), message
    assert re.search(r'\([^)]*sudo[^)]*\):', message), message   # what sudo (or its absence) said, as the reason
    assert ('Give %s sudo on node-a (a file in /etc/sudoers.d with "%s ALL=(ALL) NOPASSWD: ALL", checked with '
            'visudo -cf), run with --ask-become-pass (-K) if sudo asks that user for a password, or connect as '
            'root (ansible_user: root).' % (name, name)) in message, message
    assert '"changed": true' not in output
