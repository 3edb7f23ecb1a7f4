"""playbooks/reset.yml refuses without confirmation under every tag and start-task
combination, and removes cluster-wide objects only when the whole cluster is reset.

Runs the real playbook through ansible-runner (reading its events) on this machine over the local
connection, with everything it could touch pointed into tmp_path: kubeadm is a stand-in
that logs its calls, the CNI paths and the kubeadm state file are files made here, no
interface is listed, the kubeconfig users are none or a throwaway user made by the test (its
home a directory of the test), and the iptables pattern matches nothing. So a
broken guard shows up as a stand-in call or a deleted file, never as damage.
"""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import kubernetes
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
from testlib import require, reset_stand_ins  # noqa: E402


@pytest.fixture
def node(tmp_path):
    return reset_stand_ins(tmp_path)


def run_reset(node, *args, extra=None, workers=()):
    hosts = {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}
    hosts.update({w: {'ansible_host': '127.0.0.1', 'ansible_connection': 'local',
                      'ansible_python_interpreter': sys.executable} for w in workers})
    inventory = {'all': {'hosts': hosts, 'children': {'k8s_cluster': {'children': {
        'control_plane': {'hosts': {'localhost': None}},
        'workers': {'hosts': {w: None for w in workers}},
    }}}}}
    inv = node['dir'] / 'hosts.json'
    inv.write_text(json.dumps(inventory))
    ev = node['dir'] / 'vars.json'
    ev.write_text(json.dumps(dict(node['vars'], **(extra or {}))))
    return run_playbook(ROOT / 'playbooks' / 'reset.yml', inv, node['dir'], cmdline=['-e', f'@{ev}', *args],
                        timeout=300)


def untouched(node):
    return not node['log'].exists() and node['state'].exists() and node['cni'].exists() and node['join'].exists()


def test_reset_without_confirmation_is_refused(node):
    result = run_reset(node)
    assert result.rc != 0
    assert any('run it again with -e reset_confirm=true' in m for m in result.failures().values()), result.stdout[-3000:]
    assert untouched(node)


@pytest.mark.parametrize('args', [
    ['--skip-tags', 'always'],
    ['--start-at-task', 'Look for kubeadm and its state'],
    ['--start-at-task', 'Remove the CNI configuration and state the cluster layers created'],
    ['--skip-tags', 'always', '--start-at-task', 'Look for kubeadm and its state'],
    ['--skip-tags', 'always', '--tags', 'reset_kubeadm,reset_cni'],
    ['--tags', 'reset_cni', '--start-at-task', 'Remove the CNI configuration and state the cluster layers created'],
    ['--skip-tags', 'always', '--tags', 'reset_kubeadm', '--start-at-task', 'Look for kubeadm and its state'],
    ['--skip-tags', 'always', '--start-at-task', 'Remove the admin kubeconfig of each user'],
    ['--skip-tags', 'always,reset_cluster_objects,reset_cni,reset_netfilter'],
], ids=['skip-always', 'start-at-kubeadm', 'start-at-cni', 'skip-always+start', 'skip-always+tags',
        'tags+start', 'skip-always+tags+start', 'skip-always+start-at-last-step', 'skip-always-and-most-steps'])
def test_skipped_assert_still_refuses(node, args):
    result = run_reset(node, *args)
    assert untouched(node), result.stdout[-3000:]
    assert result.rc != 0, result.stdout[-3000:]
    assert any('run it again with -e reset_confirm=true' in m for m in result.failures().values()), result.stdout[-3000:]
    assert result.changed() == 0, result.stdout[-3000:]


@pytest.fixture
def kubeconfig_user(root, tmp_path):
    """A throwaway local user whose home (in tmp_path) holds an admin kubeconfig, deleted afterwards."""
    require(shutil.which('useradd') and shutil.which('userdel'), 'needs useradd and userdel (passwd)')
    name = 'ipuk8s-r%s' % uuid.uuid4().hex[:8]
    home = tmp_path / 'home'
    (home / '.kube').mkdir(parents=True)
    subprocess.run(['useradd', '--no-create-home', '--home-dir', str(home), '--shell', '/bin/sh', name], check=True)
    try:
        entry = pwd.getpwnam(name)
        config = home / '.kube' / 'config'
        config.write_text('apiVersion: v1\nkind: Config\n')
        os.chown(config, entry.pw_uid, entry.pw_gid)
        yield {'name': name, 'kubeconfig': config}
    finally:
        subprocess.run(['userdel', name], check=False)


@pytest.mark.parametrize('skip_always', [False, True], ids=['start-at-last-step', 'skip-always+start-at-last-step'])
def test_a_run_started_at_the_kubeconfig_step_keeps_each_users_kubeconfig(node, kubeconfig_user, skip_always):
    # The other cases list no user: here the step has a kubeconfig to remove, and only its own
    # condition stands between a run started at it and the file.
    args = ['--start-at-task', 'Remove the admin kubeconfig of each user']
    if skip_always:
        args = ['--skip-tags', 'always'] + args
    result = run_reset(node, *args, extra={'reset_kubeconfig_users': [kubeconfig_user['name']]})
    assert kubeconfig_user['kubeconfig'].exists(), result.stdout[-3000:]
    assert result.rc != 0, result.stdout[-3000:]
    assert any('run it again with -e reset_confirm=true' in m for m in result.failures().values()), result.stdout[-3000:]
    assert result.changed() == 0, result.stdout[-3000:]
    assert untouched(node)


def test_wait_without_meaning_is_refused_before_anything_is_reset(node):
    result = run_reset(node, extra={'reset_confirm': True, 'reset_wait_timeout': 0})
    assert result.rc != 0
    assert 'reset_wait_timeout is "0": give a positive whole number of seconds, without a unit (e.g. 300).' in \
        result.failures().values(), result.stdout[-3000:]
    assert untouched(node)


def test_confirmed_reset_resets_the_node(node):
    # The guard is not simply "never": with the confirmation every step acts.
    # iptables is read for real by the netfilter step; this sandbox may have no ip6tables.
    result = run_reset(node, '--skip-tags', 'reset_netfilter', extra={'reset_confirm': True})
    assert result.rc == 0, result.stdout[-3000:]
    assert node['log'].read_text().split() == ['reset', '--force']
    assert not node['cni'].exists()
    assert not node['join'].exists()      # the join secrets a killed join run may leave
    assert 'stay in the cluster' not in result.text()


@pytest.mark.parametrize('missing', ['state', 'kubeadm'])
def test_kubeadm_reset_runs_only_with_kubeadm_and_node_state(node, missing):
    if missing == 'state':
        node['state'].unlink()
    else:
        node['vars']['reset_kubeadm_binary'] = str(node['dir'] / 'no-kubeadm')
        node['vars']['reset_kubeadm_state_files'].append(str(node['dir'] / 'kubeadm'))
    result = run_reset(node, '--tags', 'reset_kubeadm', extra={'reset_confirm': True})
    assert result.rc == 0, result.stdout[-3000:]
    assert not node['log'].exists()
    assert result.changed() == 1      # the join secrets file alone


def test_limited_reset_keeps_the_cluster_objects(node):
    # --limit leaves a worker out: the IPUJobs and operators belong to it too.
    result = run_reset(node, '--limit', 'localhost', '--skip-tags', 'reset_netfilter', extra={'reset_confirm': True}, workers=['worker-1'])
    assert result.rc == 0, result.stdout[-3000:]
    assert 'worker-1' not in result.host_stats()
    assert 'stay in the cluster, so its IPUJobs, RDMA network and operators are kept' in result.text()
    assert not result.ran('Look for the admin kubeconfig')
    # The node itself is still reset.
    assert node['log'].exists()


def test_whole_cluster_reset_reaches_the_cluster_objects(node):
    result = run_reset(node, '--skip-tags', 'reset_netfilter', extra={'reset_confirm': True}, workers=['worker-1'])
    assert result.rc == 0, result.stdout[-3000:]
    assert result.ran('reset : Look for the admin kubeconfig')
    assert 'stay in the cluster' not in result.text()


@pytest.fixture
def dead_client(node):
    """A whole-cluster reset whose admin kubeconfig exists but whose Kubernetes client cannot
    be set up (its base python is missing), so no cluster object can be removed."""
    (node['dir'] / 'admin.conf').write_text('apiVersion: v1\nkind: Config\n')
    return {'reset_confirm': True, 'ipu_k8s_client_base_python': str(node['dir'] / 'no-python3')}


def test_reset_refuses_on_every_host_when_cluster_objects_cannot_be_removed(node, dead_client):
    result = run_reset(node, '--skip-tags', 'reset_netfilter', extra=dead_client, workers=['worker-1'])
    assert result.rc != 0
    assert untouched(node), result.stdout[-3000:]
    message = result.failures()['localhost']
    assert 'IPUJob, MacvlanNetwork, NicClusterPolicy objects and the Helm releases' in message, message
    assert 'reset_skip_cluster_objects=true' in message


def test_reset_refuses_on_every_host_when_the_api_does_not_answer(node):
    # A working client and helm, an admin kubeconfig whose API server refuses connections.
    port = socket.socket()
    port.bind(('127.0.0.1', 0))
    (node['dir'] / 'admin.conf').write_text(yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
        'clusters': [{'name': 'c', 'cluster': {'server': 'https://127.0.0.1:%d' % port.getsockname()[1]}}],
        'users': [{'name': 'u', 'user': {'token': 'x'}}],
        'contexts': [{'name': 'c', 'context': {'cluster': 'c', 'user': 'u'}}]}))
    helm = node['dir'] / 'helm'
    helm.write_text('#!/bin/sh\necho v3.16.3\n')
    helm.chmod(0o755)
    client = {'ipu_k8s_client_venv': sys.prefix, 'ipu_k8s_client_requirements': ['kubernetes==%s' % kubernetes.__version__],
              'helm_install_dir': str(node['dir'])}
    try:
        result = run_reset(node, '--skip-tags', 'reset_netfilter', extra=dict(client, reset_confirm=True),
                           workers=['worker-1'])
    finally:
        port.close()
    assert result.rc != 0
    assert untouched(node), result.stdout[-3000:]
    message = result.failures()['localhost']
    assert 'Connection refused' in message, message  # the API's own error, not "One or more items failed"
    assert 'reset_skip_cluster_objects=true' in message


def test_reset_skip_cluster_objects_resets_the_nodes_and_says_what_stays(node, dead_client):
    result = run_reset(node, '--skip-tags', 'reset_netfilter', extra=dict(dead_client, reset_skip_cluster_objects=True),
                       workers=['worker-1'])
    assert result.rc == 0, result.stdout[-3000:]
    assert node['log'].read_text().split() == ['reset', '--force'] * 2
    assert 'the IPUJob, MacvlanNetwork, NicClusterPolicy objects and the Helm releases' in result.text()
