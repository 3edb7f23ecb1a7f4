"""Preflight is a gate for the whole fleet: one host failing it stops every host.

Two inventory hosts over the local connection: node-a is this machine, node-b runs its
Python inside a network namespace with a cluster NIC of its own (preflight refuses two nodes
with one cluster address); one host carries a setting preflight refuses. playbooks/preflight.yml runs for real, followed by a stand-in for
step 2 that leaves a marker per host it reaches: with the gate, no host gets one.
"""
import json
import sys
from pathlib import Path

import pytest
import yaml

from netns_lab import SITE_PINS, ip_binary
from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / 'playbooks'


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


def run_gate(tmp_path, node_b_python, bad_host_vars):
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
    result = run_playbook(ROOT / 'tests' / 'integration' / 'playbooks' / 'fleet_gate.yml', tmp_path / 'hosts.json',
                          tmp_path, cmdline=['-e', f'fleet_gate_marker_dir={markers}', '--skip-tags', 'preflight_os'],
                          timeout=300)
    return result, sorted(p.name for p in markers.iterdir())


def test_good_fleet_goes_on_to_step_2(tmp_path, node_b_python):
    # The stand-in marks hosts at all: the gate test below is not passing by accident.
    result, marked = run_gate(tmp_path, node_b_python, {})
    assert result.rc == 0, result.stdout[-3000:]
    assert marked == ['node-a', 'node-b']


def test_one_host_failing_preflight_stops_every_host(tmp_path, node_b_python):
    result, marked = run_gate(tmp_path, node_b_python, {'ipu_k8s_node_name': 'Poplar_02'})
    assert result.rc != 0
    assert any('ipu_k8s_node_name=Poplar_02 on node-b is not a valid Kubernetes node name' in m
               for m in result.failure_messages()), result.stdout[-3000:]
    assert marked == [], result.stdout[-3000:]
    assert not [e for e in result.events if 'Step 2 stand-in' in (e['event_data'].get('play') or '')]


@pytest.mark.parametrize('playbook', ['preflight.yml', 'nodes.yml', 'cluster.yml'])
def test_every_play_of_a_first_build_step_is_a_fleet_gate(playbook):
    plays = yaml.safe_load((PLAYBOOKS / playbook).read_text())
    assert plays and all(play.get('any_errors_fatal') is True for play in plays), playbook
