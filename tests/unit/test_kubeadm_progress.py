"""kubeadm init and join count as done only when what kubeadm does last exists:
plugins/module_utils/ipu_k8s_kubeadm.py."""

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_kubeadm import INIT_API_PHASES, INIT_FILE_PHASES, init_progress, join_progress

ALL_FILES = {path: True for _, path in INIT_FILE_PHASES}
ALL_OBJECTS = {(kind, ns, name): True for _, kind, ns, name in INIT_API_PHASES}


def files_until(phase):
    names = [p for p, _ in INIT_FILE_PHASES]
    upto = names.index(phase)
    return {path: i <= upto for i, (_, path) in enumerate(INIT_FILE_PHASES)}


def test_fresh_node_gets_kubeadm_init():
    assert init_progress('cp1', {}, None, {})['action'] == 'init'


def test_init_stopped_after_kubeconfig_is_not_taken_as_done():
    # admin.conf exists (the old `creates:` guard), etcd and the control plane do not.
    result = init_progress('cp1', files_until('kubeconfig'), None, {})
    assert result['action'] == 'reset'
    assert result['done'] == ['certs', 'kubeconfig']
    assert 'stopped after the "kubeconfig" phase' in result['message']
    assert 'manifests/etcd.yaml (etcd)' in result['message']
    assert 'kubeadm reset -f` on cp1' in result['message']
    assert 'playbooks/reset.yml -e reset_confirm=true --limit cp1' in result['message']


def test_control_plane_that_never_answers_says_where_to_look():
    result = init_progress('cp1', ALL_FILES, False, {})
    assert result['action'] == 'reset'
    assert 'does not answer /readyz' in result['message'] and 'journalctl -u kubelet' in result['message']


def test_running_control_plane_without_the_last_phases_is_finished():
    objects = dict(ALL_OBJECTS)
    objects[('deployment', 'kube-system', 'coredns')] = False
    objects[('daemonset', 'kube-system', 'kube-proxy')] = False
    result = init_progress('cp1', ALL_FILES, True, objects)
    assert result['action'] == 'finish'
    assert result['missing'] == ['deployment kube-system/coredns (addon)', 'daemonset kube-system/kube-proxy (addon)']
    assert result['phases'][0] == ['upload-config', 'all'] and result['phases'][-1] == ['addon', 'all']


def test_missing_bootstrap_token_is_finished_too():
    objects = dict(ALL_OBJECTS)
    objects[('configmap', 'kube-public', 'cluster-info')] = False
    assert init_progress('cp1', ALL_FILES, True, objects)['action'] == 'finish'


def test_everything_there_is_complete():
    result = init_progress('cp1', ALL_FILES, True, ALL_OBJECTS)
    assert result['action'] == 'complete'
    assert result['done'][-1] == 'addon'


def test_node_without_kubelet_conf_joins():
    assert join_progress('w1', False, False, False, False, False)['action'] == 'join'


def test_worker_join_is_complete_when_its_node_registered():
    assert join_progress('w1', True, False, True, False, False)['action'] == 'complete'


def test_worker_with_kubelet_conf_but_no_node_is_half_done():
    result = join_progress('w1', True, False, False, False, False)
    assert result['action'] == 'reset' and result['missing'] == ['the Node object']


def test_control_plane_join_needs_its_etcd_member_and_label():
    result = join_progress('cp2', True, True, True, False, False)
    assert result['action'] == 'reset'
    assert result['missing'] == ['its etcd member (pod kube-system/etcd-<node>)',
                                 'the node-role.kubernetes.io/control-plane label']
    assert 'etcdctl member remove' in result['message'] and 'kubectl delete node cp2' in result['message']
    assert join_progress('cp2', True, True, True, True, True)['action'] == 'complete'
