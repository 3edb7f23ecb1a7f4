"""What kubeadm_progress (plugins/modules/kubeadm_progress.py over plugins/module_utils/ipu_k8s_kubeadm.py)
answers, whole: every field of each decision and each message word for word, read from
files the test lays out and kubectl answers it gives (the node and the cluster are the only
things replaced)."""

import os
import time

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_kubeadm import init_progress, join_progress
from module_harness import FakeCommands, ModuleFail


# kubeadm's own layout (kubeadm init phase reference, Kubernetes 1.30)
FILES = {'pki/ca.crt': 'certs', 'admin.conf': 'kubeconfig', 'manifests/etcd.yaml': 'etcd',
         'manifests/kube-apiserver.yaml': 'control-plane', 'kubelet:config.yaml': 'kubelet-start'}
OBJECTS = {('configmap', 'kube-system', 'kubeadm-config'): 'upload-config',
           ('configmap', 'kube-public', 'cluster-info'): 'bootstrap-token',
           ('deployment', 'kube-system', 'coredns'): 'addon',
           ('daemonset', 'kube-system', 'kube-proxy'): 'addon'}
ADVICE = ('Run `kubeadm reset -f` on cp1 (or playbooks/reset.yml -e reset_confirm=true --limit cp1), '
          'then run the playbook again.')
FINISH = [['upload-config', 'all'], ['mark-control-plane'], ['bootstrap-token'], ['kubelet-finalize', 'all'],
          ['addon', 'all']]
ALL_FILES = dict.fromkeys(FILES, True)


def test_no_file_means_init():
    assert init_progress('cp1', {}, None, {}) == {
        'action': 'init', 'done': [],
        'missing': ['pki/ca.crt (certs)', 'admin.conf (kubeconfig)', 'manifests/etcd.yaml (etcd)',
                    'manifests/kube-apiserver.yaml (control-plane)', '/var/lib/kubelet/config.yaml (kubelet-start)'],
        'phases': [], 'message': 'cp1 has no kubeadm state: kubeadm init runs.'}


def test_files_up_to_the_control_plane_mean_reset():
    files = dict(ALL_FILES, **{'kubelet:config.yaml': False})
    assert init_progress('cp1', files, None, {}) == {
        'action': 'reset', 'done': ['certs', 'kubeconfig', 'etcd', 'control-plane'],
        'missing': ['/var/lib/kubelet/config.yaml (kubelet-start)'], 'phases': [],
        'message': 'kubeadm init on cp1 stopped after the "control-plane" phase: pki/ca.crt, admin.conf, '
                   'manifests/etcd.yaml, manifests/kube-apiserver.yaml exist(s), '
                   '/var/lib/kubelet/config.yaml (kubelet-start) do(es) not. It cannot be resumed from there. ' + ADVICE}


def test_kubelet_config_without_the_rest_names_it_under_var_lib_kubelet():
    result = init_progress('cp1', {'kubelet:config.yaml': True}, None, {})
    assert result['done'] == ['kubelet-start']
    assert result['message'].startswith('kubeadm init on cp1 stopped after the "kubelet-start" phase: '
                                        '/var/lib/kubelet/config.yaml exist(s), pki/ca.crt (certs), ')


@pytest.mark.parametrize('api_ready', [None, False])
def test_every_file_and_no_api_server_means_reset(api_ready):
    assert init_progress('cp1', ALL_FILES, api_ready, {}) == {
        'action': 'reset', 'done': ['certs', 'kubeconfig', 'etcd', 'control-plane', 'kubelet-start'],
        'missing': [], 'phases': [],
        'message': 'kubeadm init on cp1 wrote every file, but the API server does not answer /readyz. Look at '
                   '`journalctl -u kubelet` and `crictl ps -a` on cp1; if the control plane cannot start: ' + ADVICE}


def test_api_up_without_the_addons_means_finish():
    objects = {('configmap', 'kube-system', 'kubeadm-config'): True, ('configmap', 'kube-public', 'cluster-info'): True}
    assert init_progress('cp1', ALL_FILES, True, objects) == {
        'action': 'finish',
        'done': ['certs', 'kubeconfig', 'etcd', 'control-plane', 'kubelet-start', 'wait-control-plane'],
        'missing': ['deployment kube-system/coredns (addon)', 'daemonset kube-system/kube-proxy (addon)'],
        'phases': FINISH,
        'message': 'kubeadm init on cp1 stopped after the control plane came up: deployment kube-system/coredns '
                   '(addon), daemonset kube-system/kube-proxy (addon) missing. The remaining phases run now.'}


def test_everything_there_means_complete():
    assert init_progress('cp1', ALL_FILES, True, dict.fromkeys(OBJECTS, True)) == {
        'action': 'complete',
        'done': ['certs', 'kubeconfig', 'etcd', 'control-plane', 'kubelet-start', 'wait-control-plane',
                 'upload-config', 'bootstrap-token', 'addon', 'addon'],
        'missing': [], 'phases': [], 'message': 'kubeadm init on cp1 is complete.'}


def test_no_kubelet_conf_means_join():
    assert join_progress('w1', False, True, True, True, True) == {
        'action': 'join', 'missing': [], 'message': 'w1 has not joined: kubeadm join runs.'}


@pytest.mark.parametrize('control_plane, label, etcd', [(True, True, True), (False, False, False)])
def test_a_joined_node_is_complete(control_plane, label, etcd):
    assert join_progress('w1', True, control_plane, True, label, etcd) == {
        'action': 'complete', 'missing': [], 'message': 'kubeadm join of w1 is complete.'}


def test_a_worker_without_its_node_object_is_reset():
    assert join_progress('w1', True, False, False, False, False) == {
        'action': 'reset', 'missing': ['the Node object'],
        'message': 'kubeadm join on w1 stopped half-way: kubelet.conf exists but the Node object do(es) not. '
                   'Run `kubeadm reset -f` on w1 (or playbooks/reset.yml -e reset_confirm=true --limit w1), '
                   'then run the playbook again.'}


def test_a_control_plane_missing_everything_is_reset_with_etcd_advice():
    assert join_progress('cp2', True, True, False, False, False) == {
        'action': 'reset',
        'missing': ['the Node object', 'its etcd member (pod kube-system/etcd-<node>)',
                    'the node-role.kubernetes.io/control-plane label'],
        'message': 'kubeadm join on cp2 stopped half-way: kubelet.conf exists but the Node object, its etcd member '
                   '(pod kube-system/etcd-<node>), the node-role.kubernetes.io/control-plane label do(es) not. '
                   "Run `kubeadm reset -f` on cp2 (it removes the node's etcd member when etcd answers; otherwise "
                   'remove it with etcdctl member remove on another control plane), `kubectl delete node cp2` if '
                   'the Node exists, then run the playbook again.'}


def test_a_control_plane_with_etcd_but_no_label_misses_only_the_label():
    assert join_progress('cp2', True, True, True, False, True)['missing'] == [
        'the node-role.kubernetes.io/control-plane label']


# ---- the module: files on disk, kubectl answers -------------------------------------------

KUBECONFIG = '/etc/kubernetes/admin.conf'
BASE = ('--kubeconfig', KUBECONFIG, '--request-timeout=10s')
READYZ = BASE + ('get', '--raw=/readyz')


def get(kind, name, namespace=None, output='name'):
    return BASE + ('get', kind, name, '--ignore-not-found', '-o', output) + (('-n', namespace) if namespace else ())


def lay_out(tmp_path, paths):
    kubernetes, kubelet = tmp_path / 'kubernetes', tmp_path / 'kubelet'
    for path in paths:
        target = kubelet / path[len('kubelet:'):] if path.startswith('kubelet:') else kubernetes / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text('')
    return {'kubernetes_dir': str(kubernetes), 'kubelet_dir': str(kubelet)}


@pytest.fixture
def clock(monkeypatch):
    """time.monotonic and time.sleep on a clock that moves only when the module sleeps."""
    now = [100.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(time, 'monotonic', lambda: now[0])
    monkeypatch.setattr(time, 'sleep', sleep)
    return slept


def commands(answers):
    return FakeCommands(answers, binaries={'kubectl': '/usr/bin/kubectl'})


def test_module_init_reads_the_files_under_the_given_directories(run_module, tmp_path):
    dirs = lay_out(tmp_path, ['pki/ca.crt', 'admin.conf', 'kubelet:config.yaml'])
    fake = commands({})
    result = run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1'), fake)
    assert result['action'] == 'reset' and result['changed'] is False
    assert result['done'] == ['certs', 'kubeconfig', 'kubelet-start']
    assert fake.calls == []


def test_module_init_looks_where_kubeadm_writes_by_default(run_module, monkeypatch):
    real_exists = os.path.exists
    asked = []

    def exists(path):
        if str(path).endswith(('ca.crt', 'admin.conf', 'etcd.yaml', 'kube-apiserver.yaml', 'config.yaml')):
            asked.append(path)
            return False
        return real_exists(path)

    monkeypatch.setattr(os.path, 'exists', exists)
    result = run_module('kubeadm_progress', {'mode': 'init', 'host': 'cp1'}, commands({}))
    assert asked == ['/etc/kubernetes/pki/ca.crt', '/etc/kubernetes/admin.conf', '/etc/kubernetes/manifests/etcd.yaml',
                     '/etc/kubernetes/manifests/kube-apiserver.yaml', '/var/lib/kubelet/config.yaml']
    assert result == {'changed': False, 'action': 'init', 'done': [], 'phases': [], 'warnings': [],
                      'missing': ['pki/ca.crt (certs)', 'admin.conf (kubeconfig)', 'manifests/etcd.yaml (etcd)',
                                  'manifests/kube-apiserver.yaml (control-plane)',
                                  '/var/lib/kubelet/config.yaml (kubelet-start)'],
                      'message': 'cp1 has no kubeadm state: kubeadm init runs.'}


def test_module_init_directories_under_the_home_directory_are_expanded(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    lay_out(tmp_path, ['pki/ca.crt', 'kubelet:config.yaml'])
    result = run_module('kubeadm_progress', {'mode': 'init', 'host': 'cp1', 'kubernetes_dir': '~/kubernetes',
                                             'kubelet_dir': '~/kubelet'}, commands({}))
    assert result['done'] == ['certs', 'kubelet-start']


def test_module_init_needs_kubelets_config_file_not_only_its_directory(run_module, tmp_path):
    dirs = lay_out(tmp_path, [path for path in FILES if not path.startswith('kubelet:')])
    (tmp_path / 'kubelet').mkdir()
    fake = commands({})
    result = run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1'), fake)
    assert result['action'] == 'reset'
    assert result['missing'] == ['/var/lib/kubelet/config.yaml (kubelet-start)']
    assert fake.calls == []


def test_module_init_asks_the_cluster_for_what_kubeadm_does_last(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    answers = {READYZ: [(1, '', 'connection refused'), (1, '', 'connection refused'), (0, 'ok', '')]}
    for kind, namespace, name in OBJECTS:
        answers[get(kind, name, namespace)] = (0, '' if kind == 'daemonset' else '%s/%s\n' % (kind, name), '')
    fake = commands(answers)
    result = run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1', api_timeout=10), fake)
    assert clock == [5, 5]
    assert result['action'] == 'finish'
    assert result['missing'] == ['daemonset kube-system/kube-proxy (addon)']
    assert result['phases'] == FINISH
    assert fake.calls[0] == ['/usr/bin/kubectl'] + list(READYZ)


def test_module_init_gives_up_on_the_api_server_at_its_timeout(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    fake = commands({READYZ: (1, '', 'connection refused')})
    result = run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1', api_timeout=10), fake)
    assert clock == [5, 5]   # asked at 0, 5 and 10 seconds
    assert len(fake.calls) == 3
    assert result['action'] == 'reset' and 'does not answer /readyz' in result['message']


def test_module_init_names_a_failing_kubectl(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    answers = {READYZ: (0, 'ok', ''), get('configmap', 'kubeadm-config', 'kube-system'): (1, '', ' Forbidden \n')}
    with pytest.raises(ModuleFail) as failed:
        run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1'), commands(answers))
    assert failed.value.result['msg'] == 'kubectl get configmap kubeadm-config failed: Forbidden'
    assert failed.value.result['rc'] == 1 and failed.value.result['stderr'] == ' Forbidden \n'


def test_module_init_names_kubectls_output_when_it_printed_no_error(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    answers = {READYZ: (0, 'ok', ''), get('configmap', 'kubeadm-config', 'kube-system'): (2, 'no such context\n', '')}
    with pytest.raises(ModuleFail, match='^kubectl get configmap kubeadm-config failed: no such context$'):
        run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1'), commands(answers))


def node_json(*labels):
    return '{"metadata": {"name": "cp2", "labels": {%s}}}' % ', '.join('"%s": ""' % label for label in labels)


@pytest.mark.parametrize('labels, etcd, missing', [
    (('node-role.kubernetes.io/control-plane',), 'pod/etcd-cp2', []),
    (('kubernetes.io/os',), 'pod/etcd-cp2', ['the node-role.kubernetes.io/control-plane label']),
    (('node-role.kubernetes.io/control-plane',), '', ['its etcd member (pod kube-system/etcd-<node>)']),
])
def test_module_join_reads_the_node_its_label_and_its_etcd_pod(run_module, labels, etcd, missing):
    answers = {get('node', 'cp2', output='json'): (0, node_json(*labels), ''),
               get('pod', 'etcd-cp2', 'kube-system'): (0, etcd, '')}
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'cp2', 'node_name': 'cp2', 'kubelet_conf': True,
                                             'control_plane': True}, commands(answers))
    assert result['missing'] == missing
    assert result['action'] == ('reset' if missing else 'complete')


def test_module_join_of_a_worker_without_its_node_asks_only_for_the_node(run_module):
    fake = commands({get('node', 'w1', output='json'): (0, '\n', '')})
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'kubelet_conf': True},
                        fake)
    assert result['missing'] == ['the Node object']
    assert len(fake.calls) == 1


@pytest.mark.parametrize('node', ['{"metadata": {}}', '{"kind": "Node"}'])
def test_module_join_of_a_node_without_labels_is_a_node_without_the_label(run_module, node):
    answers = {get('node', 'cp2', output='json'): (0, node, ''),
               get('pod', 'etcd-cp2', 'kube-system'): (0, 'pod/etcd-cp2', '')}
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'cp2', 'node_name': 'cp2', 'kubelet_conf': True,
                                             'control_plane': True}, commands(answers))
    assert result['missing'] == ['the node-role.kubernetes.io/control-plane label']


def test_module_join_before_kubelet_conf_asks_nothing(run_module):
    fake = commands({})
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1'}, fake)
    assert result == {'changed': False, 'action': 'join', 'missing': [],
                      'message': 'w1 has not joined: kubeadm join runs.', 'warnings': []}
    assert fake.calls == []


def test_module_refuses_to_run_without_kubectl_when_it_must_ask_the_cluster(run_module):
    with pytest.raises(ModuleFail, match='Failed to find required executable "kubectl"'):
        run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'kubelet_conf': True},
                   FakeCommands())


def test_module_join_needs_the_node_name(run_module):
    with pytest.raises(ModuleFail, match='mode is join but all of the following are missing: node_name'):
        run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1'}, commands({}))


def test_module_answers_in_check_mode(run_module):
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1',
                                             '_ansible_check_mode': True}, commands({}))
    assert result['action'] == 'join'


def test_module_mode_is_required_and_one_of_init_and_join(run_module):
    with pytest.raises(ModuleFail, match='missing required arguments: mode'):
        run_module('kubeadm_progress', {'host': 'w1'}, commands({}))
    with pytest.raises(ModuleFail, match='value of mode must be one of: init, join, got: upgrade'):
        run_module('kubeadm_progress', {'mode': 'upgrade', 'host': 'w1'}, commands({}))
    with pytest.raises(ModuleFail, match='missing required arguments: host'):
        run_module('kubeadm_progress', {'mode': 'init'}, commands({}))


def test_module_asks_the_api_server_once_by_default(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    fake = commands({READYZ: (1, '', 'connection refused')})
    assert run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1'), fake)['action'] == 'reset'
    assert clock == [] and len(fake.calls) == 1


def test_module_kubeconfig_under_the_home_directory_is_expanded(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    kubeconfig = str(tmp_path / 'admin.conf')
    fake = FakeCommands({('--kubeconfig', kubeconfig, '--request-timeout=10s', 'get', 'node', 'w1', '--ignore-not-found',
                     '-o', 'json'): (0, '', '')}, binaries={'kubectl': '/usr/bin/kubectl'})
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'kubelet_conf': True,
                                             'kubeconfig': '~/admin.conf'}, fake)
    assert result['missing'] == ['the Node object']


@pytest.mark.parametrize('require', ['resumable', 'complete'])
def test_module_required_to_go_on_fails_on_a_half_done_init_with_its_message(run_module, tmp_path, require):
    dirs = lay_out(tmp_path, ['pki/ca.crt', 'admin.conf'])
    with pytest.raises(ModuleFail) as failed:
        run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1', require=require), commands({}))
    assert failed.value.result['action'] == 'reset'
    assert failed.value.result['msg'] == failed.value.result['message']
    assert failed.value.result['msg'].startswith('kubeadm init on cp1 stopped after the "kubeconfig" phase: ')


@pytest.mark.parametrize('require, fails', [('nothing', False), ('resumable', False), ('complete', True)])
def test_module_required_to_be_complete_fails_on_a_join_still_to_run(run_module, require, fails):
    args = {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'require': require}
    if not fails:
        assert run_module('kubeadm_progress', args, commands({}))['action'] == 'join'
        return
    with pytest.raises(ModuleFail, match=r'^w1 has not joined: kubeadm join runs\.$'):
        run_module('kubeadm_progress', args, commands({}))


def test_module_required_to_be_complete_passes_a_complete_join(run_module):
    fake = commands({get('node', 'w1', output='json'): (0, node_json(), '')})
    result = run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'kubelet_conf': True,
                                             'require': 'complete'}, fake)
    assert result['action'] == 'complete' and result['changed'] is False


def test_module_required_to_be_resumable_passes_an_init_that_can_be_finished(run_module, tmp_path, clock):
    dirs = lay_out(tmp_path, FILES)
    fake = commands({READYZ: (0, 'ok', ''), **{get(kind, name, namespace): (0, '', '') for kind, namespace, name in OBJECTS}})
    result = run_module('kubeadm_progress', dict(dirs, mode='init', host='cp1', require='resumable'), fake)
    assert result['action'] == 'finish' and result['phases'] == FINISH


def test_module_require_is_one_of_nothing_resumable_and_complete(run_module):
    with pytest.raises(ModuleFail, match='value of require must be one of: nothing, resumable, complete, got: done'):
        run_module('kubeadm_progress', {'mode': 'join', 'host': 'w1', 'node_name': 'w1', 'require': 'done'},
                   commands({}))
