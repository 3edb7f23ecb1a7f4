"""kubeadm init interrupted after its kubeconfig phase is never taken as done, one
whose control plane came up is finished with kubeadm's own phases, and a failed one is
reported without the secrets kubeadm printed.

The real roles/kubeadm/tasks/init.yml runs through ansible-runner (its events read) on this machine over
the local connection, every path under tmp_path. `kubeadm` and `kubectl` are stand-ins
on PATH: kubeadm writes what each phase writes (files, or cluster objects recorded as
files in a state directory) and logs its arguments; kubectl answers /readyz and `get`
from that state directory.
"""
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402

KUBEADM = '''#!/bin/sh
# kubeadm stand-in. STOP_AFTER names the init phase after which `kubeadm init` dies.
echo "$*" >> {log}
K={k}
case "$1 $2" in
  "init --config")
    [ "$STOP_AFTER" = preflight ] && {{ echo "error execution phase preflight: token abcdef.0123456789abcdef," \
      "certificate key $(printf 'a%.0s' $(seq 64))" >&2; exit 1; }}
    mkdir -p $K/pki $K/manifests {kubelet}
    echo ca > $K/pki/ca.crt
    echo admin > $K/admin.conf
    [ "$STOP_AFTER" = kubeconfig ] && {{ echo "killed" >&2; exit 137; }}
    echo etcd > $K/manifests/etcd.yaml
    echo apiserver > $K/manifests/kube-apiserver.yaml
    echo kubelet > {kubelet}/config.yaml
    [ "$STOP_AFTER" = kubelet-start ] && {{ echo "killed" >&2; exit 137; }}
    [ "$STOP_AFTER" = wait-control-plane ] && exit 0
    touch {state}/configmap-kubeadm-config {state}/configmap-cluster-info \\
          {state}/deployment-coredns {state}/daemonset-kube-proxy
    ;;
  "init phase")
    case "$3" in
      upload-config) touch {state}/configmap-kubeadm-config ;;
      bootstrap-token) touch {state}/configmap-cluster-info ;;
      addon) touch {state}/deployment-coredns {state}/daemonset-kube-proxy ;;
    esac
    ;;
esac
'''

KUBECTL = '''#!/bin/sh
# kubectl stand-in: --kubeconfig K --request-timeout=10s get ...
shift 3
[ "$2" = --raw=/readyz ] && exit 0
[ -e {state}/$2-$3 ] && echo "$2/$3"
exit 0
'''


@pytest.fixture
def node(tmp_path):
    paths = {name: tmp_path / name for name in ('k', 'kubelet', 'state', 'bin')}
    for name in ('state', 'bin'):
        paths[name].mkdir()
    log = tmp_path / 'kubeadm.log'
    fmt = dict(log=log, k=paths['k'], kubelet=paths['kubelet'], state=paths['state'])
    for name, text in (('kubeadm', KUBEADM), ('kubectl', KUBECTL)):
        (paths['bin'] / name).write_text(text.format(**fmt))
        (paths['bin'] / name).chmod(0o755)
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'hosts': 'cp1', 'gather_facts': False,
        'tasks': [{'ansible.builtin.include_role': {'name': 'kubeadm', 'tasks_from': 'init'}}]}]))
    (tmp_path / 'hosts.json').write_text(json.dumps({'all': {'hosts': {'cp1': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
        'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {'cp1': None}}}}}}}))
    (tmp_path / 'vars.json').write_text(json.dumps({
        'ipu_k8s_kubernetes_dir': str(paths['k']), 'ipu_k8s_kubelet_dir': str(paths['kubelet']),
        'kubeadm_config_path': str(tmp_path / 'kubeadm-config.yaml'), 'kubeadm_api_server_timeout': 0}))
    return dict(paths, dir=tmp_path, log=log)


def run(node, stop_after=''):
    env = {'STOP_AFTER': stop_after, 'PATH': f"{node['bin']}:{os.environ['PATH']}"}
    result = run_playbook(node['dir'] / 'play.yml', node['dir'] / 'hosts.json', node['dir'], envvars=env,
                          cmdline=['-e', f"@{node['dir'] / 'vars.json'}"], timeout=300)
    return result, result.text()


def calls(node):
    return node['log'].read_text().splitlines() if node['log'].exists() else []


def test_init_killed_after_kubeconfig_is_reported_not_skipped(node):
    first, _ = run(node, stop_after='kubeconfig')
    assert first.rc != 0
    assert (node['k'] / 'admin.conf').exists()          # what the old `creates:` guard looked for
    again, text = run(node)
    assert again.rc != 0, again.stdout[-3000:]
    assert 'kubeadm init on cp1 stopped after the "kubeconfig" phase' in text
    assert 'Run `kubeadm reset -f` on cp1' in text
    # The re-run neither re-ran init over the half state nor went on as if it were done.
    assert [c.split()[0:2] for c in calls(node)] == [['init', '--config']]


def test_init_killed_after_the_control_plane_started_is_finished_with_phases(node):
    first, _ = run(node, stop_after='kubelet-start')
    assert first.rc != 0
    again, text = run(node)
    assert again.rc == 0, again.stdout[-3000:]
    assert 'stopped after the control plane came up' in text
    phases = [c.split('--config')[0].split()[2:] for c in calls(node)[1:]]
    assert phases == [['upload-config', 'all'], ['mark-control-plane'], ['bootstrap-token'],
                      ['kubelet-finalize', 'all'], ['addon', 'all']]
    # And now complete: a third run runs nothing.
    third, _ = run(node)
    assert third.rc == 0 and third.changed() == 0, third.stdout[-3000:]
    assert len(calls(node)) == 6


def test_init_that_says_it_succeeded_without_its_last_phases_stops_the_play(node):
    result, text = run(node, stop_after='wait-control-plane')
    assert result.rc != 0, result.stdout[-3000:]
    assert ('kubeadm init on cp1 stopped after the control plane came up: configmap kube-system/kubeadm-config '
            '(upload-config), configmap kube-public/cluster-info (bootstrap-token)') in text, text
    assert [c.split()[0:2] for c in calls(node)] == [['init', '--config']]


def test_complete_init_runs_once(node):
    first, _ = run(node)
    assert first.rc == 0, first.stdout[-3000:]
    second, _ = run(node)
    assert second.rc == 0 and second.changed() == 0, second.stdout[-3000:]
    assert len(calls(node)) == 1


def test_failed_init_is_reported_without_its_secrets(node):
    result, text = run(node, stop_after='preflight')
    assert result.rc != 0
    # Nothing of the run's output carries the bootstrap token or the certificate key...
    assert 'abcdef.0123456789abcdef' not in result.stdout and 'a' * 64 not in result.stdout
    # ...and the failure still says what went wrong and what to do.
    assert 'kubeadm init failed on cp1 (rc 1): error execution phase preflight: token <token>' in text, text
    assert 'certificate key <key>' in text and 'kubeadm reset -f' in text
