"""playbooks/reset.yml is a gate for the whole fleet: every host it will reset is reached,
as root, before anything is removed, and one host that is unreachable or fails stops them all.

The first control plane cp-1 is either unreachable (SSH to a port of 127.0.0.1 that a socket
of this test holds bound but does not listen on, so the connection is refused) or reachable
but failing (its Python does not exist). worker-1 runs over the local connection with
everything it could touch pointed into tmp_path, as in test_reset_guard.py: kubeadm is a
stand-in that logs its calls. The stand-in must never be called: a worker reset while the
cluster objects stay (cp-1 never removed them) is what the gate prevents.

The same run against a copy of playbooks/reset.yml without the gate (no any_errors_fatal,
no first task that reaches every host) lets worker-1 call the stand-in, which shows the test
sees the gate. Ansible's linear strategy counts unreachable hosts for any_errors_fatal
(ansible/plugins/strategy/linear.py, ansible-core 2.19: lines 320-333).
"""
import json
import socket
import sys
from pathlib import Path

import pytest
import yaml

from playbook_runner import run_playbook
from testlib import reset_stand_ins

ROOT = Path(__file__).resolve().parents[2]
RESET = ROOT / 'playbooks' / 'reset.yml'


@pytest.fixture
def worker(tmp_path):
    stand_ins = reset_stand_ins(tmp_path)
    stand_ins['vars']['reset_confirm'] = True
    return stand_ins


@pytest.fixture
def closed_port():
    """A port of 127.0.0.1 bound (so nothing else takes it) and not listening: connections
    to it are refused."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    yield sock.getsockname()[1]
    sock.close()


def ungated_copy(tmp_path):
    """playbooks/reset.yml as it was before the gate: no any_errors_fatal, no first task."""
    plays = yaml.safe_load(RESET.read_text())
    assert len(plays) == 1 and plays[0].pop('any_errors_fatal') is True
    assert plays[0].pop('pre_tasks')[0]['ansible.builtin.ping'] is None
    plays[0]['roles'][0]['role'] = str(ROOT / 'roles' / 'reset')
    path = tmp_path / 'reset-ungated.yml'
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    return path


def run_reset(worker, cp, gated=True):
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory = {'all': {'hosts': {'cp-1': cp, 'worker-1': local}, 'children': {'k8s_cluster': {'children': {
        'control_plane': {'hosts': {'cp-1': None}},
        'workers': {'hosts': {'worker-1': None}},
    }}}}}
    inv = worker['dir'] / 'hosts.json'
    inv.write_text(json.dumps(inventory))
    ev = worker['dir'] / 'vars.json'
    ev.write_text(json.dumps(worker['vars']))
    playbook = RESET if gated else ungated_copy(worker['dir'])
    # netfilter reads iptables for real; the sandbox may lack ip6tables (as test_reset_guard does)
    return run_playbook(playbook, inv, worker['dir'], cmdline=['-e', f'@{ev}', '--skip-tags', 'reset_netfilter'],
                        timeout=300)


def unreachable_cp(port):
    return {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': port,
            'ansible_ssh_common_args': '-o ConnectTimeout=10 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
            'ansible_python_interpreter': sys.executable}


def failing_cp(tmp_path):
    return {'ansible_connection': 'local', 'ansible_python_interpreter': str(tmp_path / 'no-python3')}


@pytest.mark.parametrize('gated', [True, False], ids=['reset.yml', 'reset.yml without the gate'])
def test_unreachable_control_plane_stops_the_worker_reset(worker, closed_port, gated):
    result = run_reset(worker, unreachable_cp(closed_port), gated=gated)
    assert result.rc != 0
    assert result.host_stats()['cp-1']['unreachable'] == 1, result.stdout[-3000:]
    if gated:
        assert not worker['log'].exists(), worker['log'].read_text()
        assert worker['state'].exists() and worker['cni'].exists()
        assert result.changed() == 0, result.stdout[-3000:]
    else:   # without the gate the worker is reset while the cluster objects stay
        assert worker['log'].read_text().split() == ['reset', '--force']


@pytest.mark.parametrize('gated', [True, False], ids=['reset.yml', 'reset.yml without the gate'])
def test_failing_control_plane_stops_the_worker_reset(worker, gated):
    result = run_reset(worker, failing_cp(worker['dir']), gated=gated)
    assert result.rc != 0
    assert set(result.failures()) == {'cp-1'}, result.stdout[-3000:]
    if gated:
        assert not worker['log'].exists(), worker['log'].read_text()
        assert worker['state'].exists() and worker['cni'].exists()
        assert 'Reach every host to be reset, as root, before anything is removed' in \
            [e['event_data']['task'] for e in result.host_events(host='cp-1') if e['event'] == 'runner_on_failed']
    else:
        assert worker['log'].read_text().split() == ['reset', '--force']


def test_reachable_fleet_is_reset(worker):
    # The gate lets a fleet it reaches through: both hosts over the local connection.
    result = run_reset(worker, {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable})
    assert result.rc == 0, result.stdout[-3000:]
    # worker-1 and cp-1 share this machine and the stand-in: one reset each
    assert worker['log'].read_text().split() == ['reset', '--force'] * 2
