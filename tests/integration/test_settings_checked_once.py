"""Every setting is checked once per run, before anything changes, whichever playbook runs.

The shared role ipu_k8s is a dependency of every role for its defaults and adds no task to a
play; preflight checks every role's settings; each step's playbook run alone checks them
itself (playbooks/settings.yml) before it changes anything, and after preflight in the same
run (site.yml) does not check them again. Runs the real playbooks through ansible-runner (events read) over the local
connection, in check mode (nothing on this machine changes).
"""
import json
import sys
from pathlib import Path

import pytest
import yaml

from netns_lab import SITE_PINS
from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / 'playbooks'
CONTAINERD_CHECK = 'Check the memlock limit, the Docker key path, the pause image and the registry mirrors'


def inventory(tmp_path):
    path = tmp_path / 'hosts.json'
    path.write_text(json.dumps({'all': {
        'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
        'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {'localhost': None}},
                                                  'workers': {'hosts': {}}}},
                     'ipu_nodes': {'hosts': {}}}}}))
    return path


def run(tmp_path, playbook, extra_vars=None, cmdline=()):
    extra = tmp_path / 'vars.json'
    extra.write_text(json.dumps(dict(SITE_PINS, **(extra_vars or {}))))
    return run_playbook(playbook, inventory(tmp_path), tmp_path,
                        cmdline=['--check', '-e', f'@{extra}', *cmdline], timeout=300)


def play_of(run, event):
    return event['event_data'].get('play')


def test_the_shared_role_adds_no_task_to_a_play(tmp_path):
    # A role that depends on ipu_k8s, as every role does: the play's only result is the role's
    # own task, which sees the shared default (written in roles/ipu_k8s/defaults/main/main.yml).
    role = tmp_path / 'roles' / 'dependent'
    (role / 'meta').mkdir(parents=True)
    (role / 'tasks').mkdir()
    (role / 'meta' / 'main.yml').write_text(yaml.safe_dump({'dependencies': [{'role': 'ipu_k8s'}]}))
    (role / 'tasks' / 'main.yml').write_text(yaml.safe_dump([
        {'name': 'Show the pod subnet', 'ansible.builtin.debug': {'msg': '{{ ipu_k8s_pod_subnet }}'}}]))
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{'name': 'Depend on the shared role', 'hosts': 'k8s_cluster',
                                         'gather_facts': False, 'roles': ['dependent']}]))
    result = run_playbook(playbook, inventory(tmp_path), tmp_path, timeout=120,
                          envvars={'ANSIBLE_ROLES_PATH': f'{tmp_path / "roles"}:{ROOT / "roles"}'})
    assert result.rc == 0, result.stdout
    assert [e['event_data']['task'] for e in result.host_events()] == ['Show the pod subnet']
    assert result.result('Show the pod subnet', 'localhost')['msg'] == '192.168.0.0/16'


GATE_PLAY = 'Check the settings (without preflight)'
# Every step of site.yml after preflight (reset.yml is no step of a build).
STEPS = ['nodes.yml', 'cluster.yml', 'network_operator.yml', 'rdma_network.yml', 'ipu_operator.yml', 'verify.yml']


@pytest.mark.parametrize('playbook', STEPS)
def test_a_step_run_alone_refuses_a_bad_setting_before_it_acts(tmp_path, playbook):
    # A shared setting, unquoted: YAML reads 1.30 as the number 1.3.
    result = run(tmp_path, PLAYBOOKS / playbook, {'ipu_k8s_kubernetes_version': 1.3})
    assert result.rc != 0
    messages = ' '.join(result.failure_messages())
    assert 'ipu_k8s_kubernetes_version is the number 1.3' in messages, messages
    later = [e['event_data']['task'] for e in result.host_events() if play_of(result, e) != GATE_PLAY]
    assert later == [], f'{playbook} ran {later} before the settings were refused'


def test_after_preflight_the_nodes_playbook_does_not_check_the_settings_again(tmp_path):
    # The first two steps of site.yml, limited to the settings checks and containerd's own
    # read-only package check (the other node steps would query this machine's packages).
    playbook = tmp_path / 'steps.yml'
    playbook.write_text(yaml.safe_dump([{'ansible.builtin.import_playbook': str(PLAYBOOKS / 'preflight.yml')},
                                        {'ansible.builtin.import_playbook': str(PLAYBOOKS / 'nodes.yml')}]))
    result = run(tmp_path, playbook, cmdline=['--tags', 'preflight_variables,containerd_preflight'])
    assert result.rc == 0, result.stdout
    assert result.host_stats()['localhost']['changed'] == 0, result.stdout
    checks = result.host_events(CONTAINERD_CHECK)
    assert [play_of(result, e) for e in checks] == ['Preflight'], 'containerd settings checked in ' + ', '.join(
        play_of(result, e) for e in checks)
    assert result.ran("containerd : Look for Docker packages that depend on one containerd package") == ['localhost']


# A setting of each kind of layer, of the wrong type: a node layer; a layer that acts once, from
# one host; a layer whose tag is skipped (its types are checked as its names are). Each is
# refused by preflight's one type check, naming the setting and the file declaring its type.
@pytest.mark.parametrize('setting, value, role, skip', [
    ('node_prep_sysctls', ['net.ipv4.ip_forward=1'], 'node_prep', ''),
    ('network_operator_wait_timeout', 'soon', 'network_operator', ''),
    ('containerd_systemd_cgroup', 'sometimes', 'containerd', 'containerd')])
def test_preflight_refuses_a_mistyped_setting_before_step_2(tmp_path, setting, value, role, skip):
    result = run(tmp_path, PLAYBOOKS / 'preflight.yml', {setting: value},
                 cmdline=['--tags', 'preflight_variables'] + (['--skip-tags', skip] if skip else []))
    assert result.rc != 0
    messages = ' '.join(result.failure_messages())
    assert setting in messages and 'roles/%s/meta/argument_specs.yml' % role in messages, messages
    assert [e['event_data']['task'] for e in result.host_events() if e['event'] == 'runner_on_failed'] == [
        'Every setting has the type its role declares'], messages
