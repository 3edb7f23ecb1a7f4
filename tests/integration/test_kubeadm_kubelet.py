"""kubelet pinned to the cluster-facing address, run: the real roles/kubeadm/tasks/address.yml and
kubelet.yml, with the role's handler, through ansible-runner over the local connection, inside a
network namespace of the test whose veth is the host's ipu_k8s_cluster_interface, and a mount
namespace whose /etc/default is a directory of the test (the task writes /etc/default/kubelet).

`systemctl` is a stand-in on PATH, for no systemd runs kubelet here. It answers
`systemctl show kubelet[.service] [--property=...]` as systemd does for a running kubelet, its
ExecMainStartTimestampMonotonic (CLOCK_MONOTONIC, microseconds) read from a state file, and
refuses any other unit (LoadState=not-found); `restart kubelet` writes the current monotonic time
there, as a started process would have it; `daemon-reload` does nothing. Every call's arguments
are recorded, and the tests check the restart was asked for exactly when it had to be:
`daemon-reload` then `restart kubelet` (ansible.builtin.systemd_service's handler), each time
kubelet runs on older settings than /etc/default/kubelet, and never otherwise.
"""
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
from testlib import require  # noqa: E402

ADDRESS = '10.0.0.21'

SYSTEMCTL = '''#!{python}
import sys, time
state, log = {state!r}, {log!r}
args = sys.argv[1:]
with open(log, 'a') as f:
    f.write(' '.join(args) + '\\n')
if args[:1] == ['show']:
    if args[1] not in ('kubelet', 'kubelet.service'):
        print('LoadState=not-found\\nActiveState=inactive\\nMainPID=0\\nExecMainStartTimestampMonotonic=0')
        sys.exit(0)
    with open(state) as f:
        started = f.read().strip()
    print('Id=kubelet.service\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nMainPID=4242\\n'
          'ExecMainStartTimestampMonotonic=%s\\nNeedDaemonReload=no\\nUnitFileState=enabled' % started)
elif args == ['daemon-reload']:
    pass
elif args == ['restart', 'kubelet']:
    with open(state, 'w') as f:
        f.write('%d\\n' % (time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6))
else:
    sys.exit('systemctl stand-in: unexpected call: %s' % ' '.join(args))
'''


@pytest.fixture
def node(tmp_path, netns_factory):
    require(shutil.which('unshare') is not None, 'needs unshare (util-linux) for a private /etc/default')
    netns = netns_factory('kubelet')
    netns.ip('link add nic-node type veth peer name peer-node', f'addr add {ADDRESS}/24 dev nic-node',
             'link set nic-node up', 'link set peer-node up')
    bin_dir, etc_default = tmp_path / 'bin', tmp_path / 'etc-default'
    bin_dir.mkdir()
    etc_default.mkdir()
    state, log = tmp_path / 'kubelet-started', tmp_path / 'systemctl.log'
    # kubelet has run since before this test: it started on the settings it had then
    state.write_text('%d\n' % (time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6 - 1e6))
    (bin_dir / 'systemctl').write_text(SYSTEMCTL.format(python=sys.executable, state=str(state), log=str(log)))
    (bin_dir / 'systemctl').chmod(0o755)
    (tmp_path / 'hosts.json').write_text(json.dumps({'all': {'hosts': {'node1': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'ipu_k8s_cluster_interface': 'nic-node'}}}}))
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'hosts': 'node1', 'gather_facts': False,
        'tasks': [{'ansible.builtin.include_role': {'name': 'kubeadm', 'tasks_from': step}}
                  for step in ('address', 'kubelet')]}]))
    return dict(dir=tmp_path, bin=bin_dir, netns=netns.name, log=log, file=etc_default / 'kubelet',
                wrap=['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                      'mount --bind "$1" /etc/default && shift && exec "$@"', 'sh', str(etc_default)])


def run(node, **options):
    return run_playbook(node['dir'] / 'play.yml', node['dir'] / 'hosts.json', node['dir'],
                        envvars={'PATH': f"{node['bin']}:{os.environ['PATH']}"}, netns=node['netns'],
                        wrap=node['wrap'], timeout=300, **options)


def actions(node):
    """The systemctl calls other than `show`, in order; every `show` asked about kubelet."""
    calls = node['log'].read_text().splitlines() if node['log'].exists() else []
    shows = [call for call in calls if call.startswith('show ')]
    assert all(call.split()[1] in ('kubelet', 'kubelet.service') for call in shows), shows
    return [call for call in calls if not call.startswith('show ')]


def test_first_run_pins_the_node_ip_and_restarts_kubelet_once_and_a_second_run_changes_nothing(node):
    first = run(node)
    assert first.rc == 0, first.stdout[-3000:]
    assert f'KUBELET_EXTRA_ARGS=--node-ip={ADDRESS}' in node['file'].read_text().splitlines()
    assert actions(node) == ['daemon-reload', 'restart kubelet']
    again = run(node)
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed() == 0, again.stdout[-3000:]
    assert actions(node) == ['daemon-reload', 'restart kubelet']


def test_a_run_killed_before_the_restart_leaves_it_to_the_next_run(node):
    # Killed after the file was written, before its handler: the next run finds the file right,
    # and only the running kubelet's start time says it still runs on the old node IP.
    killed = run(node, kill_after='Pin the kubelet node IP to the cluster-facing address')
    assert killed.status == 'canceled', killed.stdout[-3000:]
    assert f'KUBELET_EXTRA_ARGS=--node-ip={ADDRESS}' in node['file'].read_text().splitlines()
    assert actions(node) == [], 'the run was killed too late: it restarted kubelet'
    again = run(node)
    assert again.rc == 0, again.stdout[-3000:]
    assert actions(node) == ['daemon-reload', 'restart kubelet']
    last = run(node)
    assert last.rc == 0 and last.changed() == 0, last.stdout[-3000:]
    assert actions(node) == ['daemon-reload', 'restart kubelet']
