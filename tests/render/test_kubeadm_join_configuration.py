"""Join secrets reach kubeadm through a root-only JoinConfiguration, never its command line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
JOIN = yaml.safe_load((ROOT / 'roles' / 'kubeadm' / 'tasks' / 'join.yml').read_text())
BLOCK = next(task for task in JOIN if 'block' in task)
TOKEN = 'abcdef.0123456789abcdef'
HASH = 'sha256:' + 'b' * 64
KEY = 'c' * 64


def test_kubeadm_join_command_line_carries_no_secret():
    join = next(t for t in BLOCK['block'] if t['name'] == 'Run kubeadm join')['ansible.builtin.command']
    assert join['argv'] == ['kubeadm', 'join', '--config', '{{ __kubeadm_join_config }}']


def test_join_configuration_is_root_only_and_removed_afterwards():
    written = next(t for t in BLOCK['block'] if 'ansible.builtin.template' in t)
    assert written['ansible.builtin.template']['mode'] == '0600'
    assert written['ansible.builtin.template']['owner'] == 'root' and written['no_log'] is True
    removed = BLOCK['always'][0]['ansible.builtin.file']
    assert removed == {'path': '{{ __kubeadm_join_config }}', 'state': 'absent'}


@pytest.mark.parametrize('control_plane', [False, True], ids=['worker', 'control-plane'])
def test_join_configuration_carries_the_secrets(tmp_path, control_plane):
    play = tmp_path / 'play.yml'
    out = tmp_path / 'join.yaml'
    play.write_text(yaml.safe_dump([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.template': {'src': str(ROOT / 'roles/kubeadm/templates/join-configuration.yaml.j2'),
                                      'dest': str(out), 'mode': '0600'}}]}]))
    variables = {
        '__kubeadm_api_version': 'kubeadm.k8s.io/v1beta4', '__kubeadm_join_endpoint': '10.0.0.10:6443',
        '__kubeadm_join_token': TOKEN, '__kubeadm_join_ca_hash': HASH, '__kubeadm_join_certificate_key': KEY,
        '__kubeadm_node_name': 'poplar-02', 'kubeadm_cri_socket': 'unix:///var/run/containerd/containerd.sock',
        '__kubeadm_join_control_plane': control_plane, '__kubeadm_advertise_address': '10.0.0.11',
        'kubeadm_api_server_port': 6443}
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    result = subprocess.run([str(Path(sys.executable).with_name('ansible-playbook')), '-i', 'localhost,', '-c', 'local',
                             '-e', f'ansible_python_interpreter={sys.executable}', '-e', f'@{tmp_path / "vars.json"}',
                             str(play)], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    config = yaml.safe_load(out.read_text())
    assert config['kind'] == 'JoinConfiguration'
    assert config['discovery']['bootstrapToken'] == {
        'apiServerEndpoint': '10.0.0.10:6443', 'token': TOKEN, 'caCertHashes': [HASH]}
    assert config['nodeRegistration']['name'] == 'poplar-02'
    if control_plane:
        assert config['controlPlane'] == {'localAPIEndpoint': {'advertiseAddress': '10.0.0.11', 'bindPort': 6443},
                                          'certificateKey': KEY}
    else:
        assert 'controlPlane' not in config
