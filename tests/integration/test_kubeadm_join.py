"""kubeadm join, run: the real roles/kubeadm/tasks/address.yml and join.yml through
ansible-runner on this machine over the local connection, in a play set up as
playbooks/cluster.yml sets it up (any_errors_fatal), inside a network namespace of the test
where each host's ipu_k8s_cluster_interface is a veth of its own. `kubeadm` and `kubectl` are stand-ins on PATH, the one thing that
cannot exist here: kubeadm prints a join command as `kubeadm token create
--print-join-command` prints it, records its arguments and the JoinConfiguration it was
given (content and mode), and writes kubelet.conf as a finished join leaves it; kubectl
answers the Node lookups from a state directory kubeadm fills. No secret may reach anything
a run leaves: every file of ansible-runner's private data directory is searched (the
job_events/*.json of every task, the progress callback's stdout), not the printed output alone.
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

TOKEN = 'abcdef.0123456789abcdef'
CA_HASH = 'sha256:' + 'b' * 64
CERT_KEY = 'c' * 64

KUBEADM = '''#!/bin/sh
# kubeadm stand-in. FAIL_NODE: the node whose join fails; KILL_AFTER_JOIN: the whole
# ansible-playbook run is killed (SIGKILL) right after a join succeeded.
echo "$*" >> {state}/kubeadm.log
case "$1 $2" in
  "token create")
    # the one-line form `kubeadm token create --print-join-command` prints (trailing space)
    echo "kubeadm join 10.0.0.10:6443 --token {token} --discovery-token-ca-cert-hash {ca_hash} "
    ;;
  "init phase")
    echo "[upload-certs] Storing the certificates in Secret \\"kubeadm-certs\\" in the \\"kube-system\\" Namespace"
    echo "[upload-certs] Using certificate key:"
    echo "{cert_key}"
    ;;
  "join --config")
    name=$(sed -n 's/^  name: "\\(.*\\)"$/\\1/p' "$3")
    cp "$3" {state}/config-$name.yaml
    stat -c %a "$3" > {state}/mode-$name
    if [ "$name" = "$FAIL_NODE" ]; then
      echo "error execution phase preflight: couldn't validate the identity of the API Server: token {token} rejected" >&2
      exit 1
    fi
    echo kubelet > "$(dirname "$3")/kubelet.conf"
    touch {state}/node-$name
    # SKIP_MARK: a join that exits 0 before its etcd member and control-plane label exist
    grep -q '^controlPlane:' "$3" && [ -z "$SKIP_MARK" ] && touch {state}/control-plane-$name
    if [ -n "$KILL_AFTER_JOIN" ]; then
      pid=$$ top=
      while [ "$pid" -gt 1 ]; do
        tr '\\0' ' ' < /proc/$pid/cmdline | grep -q ansible-playbook && top=$pid
        pid=$(sed 's/.*) [A-Za-z] \\([0-9]*\\) .*/\\1/' /proc/$pid/stat)
      done
      kill -KILL $top
      kill -KILL 0
    fi
    ;;
esac
'''

KUBECTL = '''#!/bin/sh
# kubectl stand-in: --kubeconfig K --request-timeout=10s get node|pod NAME --ignore-not-found -o ...
# A control-plane join leaves the control-plane label and the etcd-<node> static pod.
shift 3
name=${{3#etcd-}}
label=
[ -e {state}/control-plane-$name ] && label='"node-role.kubernetes.io/control-plane": ""'
[ "$2" = node ] && [ -e {state}/node-$name ] && echo '{{"metadata": {{"name": "'$name'", "labels": {{'"$label"'}}}}}}'
[ "$2" = pod ] && [ -n "$label" ] && echo "pod/$3"
exit 0
'''


@pytest.fixture
def cluster(tmp_path, netns_factory):
    return make_cluster(tmp_path, netns_factory)


def make_cluster(tmp_path, netns_factory):
    # Each host's cluster-facing NIC, one end of a veth pair in a namespace of this test, at 10.0.0.11-14.
    netns = netns_factory('join')
    state, bin_dir = tmp_path / 'state', tmp_path / 'bin'
    state.mkdir()
    bin_dir.mkdir()
    fmt = dict(state=state, token=TOKEN, ca_hash=CA_HASH, cert_key=CERT_KEY)
    for name, text in (('kubeadm', KUBEADM), ('kubectl', KUBECTL)):
        (bin_dir / name).write_text(text.format(**fmt))
        (bin_dir / name).chmod(0o755)
    hosts = {}
    for host in ('cp1', 'cp2', 'w1', 'w2'):
        (tmp_path / host).mkdir()
        nic = 'nic-' + host
        netns.ip(f'link add {nic} type veth peer name peer-{host}', f'addr add 10.0.0.{11 + len(hosts)}/24 dev {nic}',
                 f'link set {nic} up', f'link set peer-{host} up')
        hosts[host] = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                       'ipu_k8s_cluster_interface': nic}
    # no Kubernetes client here: the wait for Ready is the API tier's business
    hosts['cp1']['ipu_k8s_client_ready'] = False
    (tmp_path / 'hosts.json').write_text(json.dumps({'all': {'hosts': hosts, 'children': {'k8s_cluster': {'children': {
        'control_plane': {'hosts': {'cp1': None, 'cp2': None}}, 'workers': {'hosts': {'w1': None, 'w2': None}}}}}}}))
    # each host's /etc/kubernetes is a directory of its own (extra vars outrank the role's vars)
    (tmp_path / 'vars.json').write_text(json.dumps({
        'ipu_k8s_kubernetes_dir': str(tmp_path) + '/{{ inventory_hostname }}'}))
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'hosts': 'all:!cp1', 'gather_facts': False, 'any_errors_fatal': True,
        'tasks': [{'ansible.builtin.include_role': {'name': 'kubeadm', 'tasks_from': step}}
                  for step in ('address', 'join')]}]))
    return dict(dir=tmp_path, state=state, bin=bin_dir, netns=netns.name)


def run(cluster, limit, **env):
    envvars = dict(env, PATH=f"{cluster['bin']}:{os.environ['PATH']}")
    return run_playbook(cluster['dir'] / 'play.yml', cluster['dir'] / 'hosts.json', cluster['dir'],
                        envvars=envvars, cmdline=['--limit', limit, '-e', f"@{cluster['dir'] / 'vars.json'}"],
                        timeout=300, netns=cluster['netns'])


def leaks(cluster, *secrets):
    """The files of every run so far (ansible-runner's private data directories: job_events/*.json,
    stdout, which the progress callback writes, command, status...) that hold one of secrets."""
    found = []
    for path in sorted(cluster['dir'].glob('runner-*/**/*')):
        if path.is_file():
            text = path.read_text(errors='replace')
            found += ['%s: %s' % (path.relative_to(cluster['dir']), secret) for secret in secrets if secret in text]
    return found


def joins(cluster):
    log = cluster['state'] / 'kubeadm.log'
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith('join')]


@pytest.fixture(scope='module')
def joined(tmp_path_factory, netns_factory):
    """A worker and a control plane joined by one run, and the same run again."""
    cluster = make_cluster(tmp_path_factory.mktemp('joined'), netns_factory)
    first = run(cluster, 'w1,cp2')
    after_first = joins(cluster)
    join_files_after_first = {host: (cluster['dir'] / host / 'ipu-k8s-join.yaml').exists() for host in ('w1', 'cp2')}
    again = run(cluster, 'w1,cp2')
    return dict(cluster=cluster, first=first, after_first=after_first, join_files_after_first=join_files_after_first,
                again=again)


@pytest.mark.parametrize('host', ['w1', 'cp2'], ids=['worker', 'control-plane'])
def test_join_hands_kubeadm_the_parsed_secrets_in_a_root_only_file(joined, host):
    cluster, result = joined['cluster'], joined['first']
    assert result.rc == 0, result.stdout[-3000:]
    join_file = cluster['dir'] / host / 'ipu-k8s-join.yaml'
    # kubeadm got the secrets through the file only, never on its command line: this host's
    # one join names its own file, the other host's join its own
    mine = [line for line in joined['after_first'] if line.startswith('join --config %s/' % (cluster['dir'] / host))]
    assert mine == ['join --config %s' % join_file], joined['after_first']
    assert len(joined['after_first']) == 2, joined['after_first']
    assert (cluster['state'] / f'mode-{host}').read_text().strip() == '600'
    config = yaml.safe_load((cluster['state'] / f'config-{host}.yaml').read_text())
    assert config['kind'] == 'JoinConfiguration'
    assert config['discovery']['bootstrapToken'] == {
        'apiServerEndpoint': '10.0.0.10:6443', 'token': TOKEN, 'caCertHashes': [CA_HASH]}
    assert config['nodeRegistration']['name'] == host
    if host == 'cp2':
        assert config['controlPlane'] == {'localAPIEndpoint': {'advertiseAddress': '10.0.0.12', 'bindPort': 6443},
                                          'certificateKey': CERT_KEY}
    else:
        assert 'controlPlane' not in config
    # the secrets are gone once the join is over, and no output carried them
    assert not joined['join_files_after_first'][host]
    again = joined['again']
    assert again.rc == 0 and again.changed() == 0, again.stdout[-3000:]
    assert [line for line in joins(cluster) if line.startswith('join --config %s/' % (cluster['dir'] / host))] == mine
    assert leaks(cluster, TOKEN, CA_HASH, CERT_KEY) == []


def test_run_killed_between_join_and_removal_leaves_no_secrets_after_the_next_run(cluster):
    killed = run(cluster, 'w1', KILL_AFTER_JOIN='1')
    assert killed.rc != 0
    join_file = cluster['dir'] / 'w1' / 'ipu-k8s-join.yaml'
    assert TOKEN in join_file.read_text()      # the kill left the secrets on disk
    again = run(cluster, 'w1')
    assert again.rc == 0, again.stdout[-3000:]
    assert not join_file.exists()
    assert len(joins(cluster)) == 1             # the finished join was not run again
    assert leaks(cluster, TOKEN, CA_HASH) == []


def test_one_failed_join_is_named_on_every_worker(cluster):
    result = run(cluster, 'w1,w2', FAIL_NODE='w2')
    assert result.rc != 0
    failures = result.failures()
    assert set(failures) == {'w1', 'w2'}, result.stdout[-3000:]
    said = "couldn't validate the identity of the API Server: token <token> rejected"
    assert 'Joining w2 failed in "Run kubeadm join"' in failures['w2'] and said in failures['w2']
    assert 'w2' in failures['w1'] and said in failures['w1'], failures['w1']
    assert 'undefined' not in ' '.join(failures.values())
    assert leaks(cluster, TOKEN, CA_HASH) == []
    for host in ('w1', 'w2'):
        assert not (cluster['dir'] / host / 'ipu-k8s-join.yaml').exists()



def test_join_stopped_half_way_stops_the_play_and_says_what_to_do(cluster):
    (cluster['dir'] / 'w1' / 'kubelet.conf').write_text('kubelet\n')   # kubelet.conf, but no Node
    result = run(cluster, 'w1')
    assert result.rc != 0
    assert result.failures()['w1'].startswith(
        'kubeadm join on w1 stopped half-way: kubelet.conf exists but the Node object do(es) not. '
        'Run `kubeadm reset -f` on w1'), result.failures()
    assert joins(cluster) == []


def test_control_plane_join_that_exits_without_its_etcd_member_and_label_stops_the_play(cluster):
    result = run(cluster, 'cp2', SKIP_MARK='1')
    assert result.rc != 0
    assert result.failures()['cp2'].startswith(
        'kubeadm join on cp2 stopped half-way: kubelet.conf exists but its etcd member (pod kube-system/etcd-<node>), '
        'the node-role.kubernetes.io/control-plane label do(es) not.'), result.failures()
    assert len(joins(cluster)) == 1
