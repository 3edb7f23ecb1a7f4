"""Preflight is a gate for the whole fleet: one host failing it stops every host.

Two inventory hosts over the local connection: node-a is this machine, node-b runs its
Python inside a network namespace with a cluster NIC of its own (preflight refuses two nodes
with one cluster address). playbooks/preflight.yml runs for real, followed by a stand-in for
step 2 that leaves a marker per host it reaches.

node-b alone fails a per-host check (its cluster interface does not exist), so only the gate
(any_errors_fatal) can stop node-a: a failing run_once task would fail every host anyway
and prove nothing. The same run against a copy of the playbook without any_errors_fatal
lets node-a through to step 2, which shows the test sees the gate.
"""
import copy
import json
import sys
from pathlib import Path

import pytest
import yaml

from netns_lab import SITE_PINS, ip_binary
from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / 'playbooks'
FLEET_GATE = ROOT / 'tests' / 'integration' / 'playbooks' / 'fleet_gate.yml'


@pytest.fixture(scope='module')
def node_b_python(netns_factory, tmp_path_factory):
    """A python that runs inside a namespace with its own cluster NIC and default route."""
    namespace = netns_factory('gate')
    namespace.ip('link add mgmt0 type veth peer name mgmt0-peer', 'addr add 10.203.0.2/24 dev mgmt0',
                 'link set mgmt0-peer up', 'link set mgmt0 up', 'route add default via 10.203.0.1 dev mgmt0')
    wrapper = tmp_path_factory.mktemp('gate') / 'python-node-b'
    wrapper.write_text('#!/bin/sh\nexec %s netns exec %s %s "$@"\n' % (ip_binary(), namespace.name, sys.executable))
    wrapper.chmod(0o755)
    return str(wrapper)


def ungated_copy(tmp_path):
    """fleet_gate.yml importing a copy of playbooks/preflight.yml without any_errors_fatal."""
    plays = yaml.safe_load((PLAYBOOKS / 'preflight.yml').read_text())
    ungated = copy.deepcopy(plays)
    for play in ungated:
        assert play.pop('any_errors_fatal') is True
    (tmp_path / 'preflight-ungated.yml').write_text(yaml.safe_dump(ungated, sort_keys=False))
    wrapper = yaml.safe_load(FLEET_GATE.read_text())
    assert wrapper[0]['ansible.builtin.import_playbook'].endswith('/playbooks/preflight.yml')
    wrapper[0]['ansible.builtin.import_playbook'] = str(tmp_path / 'preflight-ungated.yml')
    (tmp_path / 'fleet-gate-ungated.yml').write_text(yaml.safe_dump(wrapper, sort_keys=False))
    return tmp_path / 'fleet-gate-ungated.yml'


def run_gate(tmp_path, node_b_python, bad_host_vars, gated=True):
    local = dict(SITE_PINS, ansible_connection='local', ansible_python_interpreter=sys.executable)
    inventory = {'all': {
        'hosts': {'node-a': dict(local),
                  'node-b': dict(local, ansible_python_interpreter=node_b_python, **bad_host_vars)},
        'children': {'k8s_cluster': {'children': {
            'control_plane': {'hosts': {'node-a': None}},
            'workers': {'hosts': {'node-b': None}},
        }}, 'ipu_nodes': {'hosts': {}}},
    }}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    markers = tmp_path / 'markers'
    markers.mkdir()
    playbook = FLEET_GATE if gated else ungated_copy(tmp_path)
    result = run_playbook(playbook, tmp_path / 'hosts.json', tmp_path, cmdline=['-e', f'fleet_gate_marker_dir={markers}', '--skip-tags', 'preflight_os'],
                          timeout=300)
    return result, sorted(p.name for p in markers.iterdir())


def test_good_fleet_goes_on_to_step_2(tmp_path, node_b_python):
    # The stand-in marks hosts at all: the gate test below is not passing by accident.
    result, marked = run_gate(tmp_path, node_b_python, {})
    assert result.rc == 0, result.stdout[-3000:]
    assert marked == ['node-a', 'node-b']


@pytest.mark.parametrize('gated, reaches_step_2', [(True, []), (False, ['node-a'])],
                         ids=['preflight.yml', 'preflight.yml without any_errors_fatal'])
def test_one_host_failing_preflight_stops_every_host(tmp_path, node_b_python, gated, reaches_step_2):
    result, marked = run_gate(tmp_path, node_b_python, {'ipu_k8s_cluster_interface': 'eth9'}, gated=gated)
    assert result.rc != 0
    # node-b alone failed, on a check of its own (not a run_once task that fails every host)
    assert set(result.failures()) == {'node-b'}, result.stdout[-3000:]
    assert 'eth9' in result.failures()['node-b'], result.failures()
    assert marked == reaches_step_2, result.stdout[-3000:]


@pytest.mark.parametrize('playbook', ['preflight.yml', 'nodes.yml', 'cluster.yml'])
def test_every_play_of_a_first_build_step_is_a_fleet_gate(playbook):
    def plays_of(name):  # the plays of a playbook, those of the playbooks it imports included
        for entry in yaml.safe_load((PLAYBOOKS / name).read_text()):
            imported = entry.get('ansible.builtin.import_playbook')
            yield from plays_of(imported) if imported else [entry]

    plays = list(plays_of(playbook))
    assert plays and all(play.get('any_errors_fatal') is True for play in plays), playbook
