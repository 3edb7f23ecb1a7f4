# -*- coding: utf-8 -*-
"""How far did `kubeadm init` or `kubeadm join` get? Pure logic, no Ansible.

kubeadm writes admin.conf in its third phase (kubeconfig), long before etcd, the control
plane, the kubeadm-config ConfigMap, the bootstrap token and the addons exist; a join
writes kubelet.conf before the node's etcd member and control-plane label. A file is
therefore no proof that the command finished: completeness is judged on what kubeadm
does LAST, read back from the cluster.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

# `kubeadm init` phases that leave a file on the node, in the order kubeadm runs them.
INIT_FILE_PHASES = (
    ('certs', 'pki/ca.crt'),
    ('kubeconfig', 'admin.conf'),
    ('etcd', 'manifests/etcd.yaml'),
    ('control-plane', 'manifests/kube-apiserver.yaml'),
    ('kubelet-start', 'kubelet:config.yaml'),
)

# What the phases after wait-control-plane leave in the cluster, in kubeadm's order:
# (phase, kind, namespace, name).
INIT_API_PHASES = (
    ('upload-config', 'configmap', 'kube-system', 'kubeadm-config'),
    ('bootstrap-token', 'configmap', 'kube-public', 'cluster-info'),
    ('addon', 'deployment', 'kube-system', 'coredns'),
    ('addon', 'daemonset', 'kube-system', 'kube-proxy'),
)

# `kubeadm init phase ...` commands that redo everything after wait-control-plane; each
# creates what is missing and updates what is there.
INIT_FINISH_PHASES = (
    ['upload-config', 'all'],
    ['mark-control-plane'],
    ['bootstrap-token'],
    ['kubelet-finalize', 'all'],
    ['addon', 'all'],
)


def init_file(path, kubernetes_dir='', kubelet_dir='/var/lib/kubelet'):
    """Where an INIT_FILE_PHASES path is: NAME under kubernetes_dir, kubelet:NAME under kubelet_dir (by
    default as the messages name them: relative to kubeadm's directory, kubelet's files in full)."""
    return (os.path.join(kubelet_dir, path[len('kubelet:'):]) if path.startswith('kubelet:')
            else os.path.join(kubernetes_dir, path))


def _reset_advice(host):
    return ('Run `kubeadm reset -f` on {0} (or playbooks/reset.yml -e reset_confirm=true --limit {0}), '
            'then run the playbook again.'.format(host))


def init_progress(host, files, api_ready, objects):
    """Decide what to do about `kubeadm init` on the first control-plane node.

    files: INIT_FILE_PHASES path -> exists. api_ready: whether the API server answered
    /readyz (None when not asked: no control-plane manifest). objects: INIT_API_PHASES
    (kind, namespace, name) -> exists (empty when the API was not asked).

    Returns a dict: action (init | complete | finish | reset), done (phases seen),
    missing (what is not there), phases (argument lists for `kubeadm init phase`), message.
    """
    done = [phase for phase, path in INIT_FILE_PHASES if files.get(path)]
    missing = ['%s (%s)' % (init_file(path), phase) for phase, path in INIT_FILE_PHASES if not files.get(path)]
    result = {'done': done, 'missing': missing, 'phases': []}
    if not done:
        return dict(result, action='init', message='%s has no kubeadm state: kubeadm init runs.' % host)
    if missing:
        return dict(result, action='reset', message=(
            'kubeadm init on {0} stopped after the "{1}" phase: {2} exist(s), {3} do(es) not. '
            'It cannot be resumed from there. {4}').format(
            host, done[-1], ', '.join(init_file(path) for phase, path in INIT_FILE_PHASES if files.get(path)),
            ', '.join(missing), _reset_advice(host)))
    if not api_ready:
        return dict(result, action='reset', message=(
            'kubeadm init on {0} wrote every file, but the API server does not answer /readyz. '
            'Look at `journalctl -u kubelet` and `crictl ps -a` on {0}; if the control plane '
            'cannot start: {1}').format(host, _reset_advice(host)))
    absent = ['%s %s/%s (%s)' % (kind, namespace, name, phase) for phase, kind, namespace, name in INIT_API_PHASES
              if not objects.get((kind, namespace, name))]
    if absent:
        return dict(action='finish', done=done + ['wait-control-plane'], missing=absent,
                    phases=[list(p) for p in INIT_FINISH_PHASES],
                    message=('kubeadm init on {0} stopped after the control plane came up: {1} missing. '
                             'The remaining phases run now.').format(host, ', '.join(absent)))
    return dict(result, action='complete', done=done + ['wait-control-plane'] + [p[0] for p in INIT_API_PHASES],
                message='kubeadm init on %s is complete.' % host)


def join_progress(host, kubelet_conf, control_plane, node, control_plane_label, etcd_pod):
    """Decide what to do about `kubeadm join` of one node.

    kubelet_conf: /etc/kubernetes/kubelet.conf exists on the node. node: the Node object
    exists. control_plane_label: it carries node-role.kubernetes.io/control-plane.
    etcd_pod: the etcd-<node> static pod is in kube-system (the node's etcd member runs).

    Returns a dict: action (join | complete | reset), missing, message.
    """
    if not kubelet_conf:
        return {'action': 'join', 'missing': [], 'message': '%s has not joined: kubeadm join runs.' % host}
    missing = []
    if not node:
        missing.append('the Node object')
    if control_plane and not etcd_pod:
        missing.append('its etcd member (pod kube-system/etcd-<node>)')
    if control_plane and not control_plane_label:
        missing.append('the node-role.kubernetes.io/control-plane label')
    if not missing:
        return {'action': 'complete', 'missing': [], 'message': 'kubeadm join of %s is complete.' % host}
    advice = _reset_advice(host)
    if control_plane:
        advice = ('Run `kubeadm reset -f` on {0} (it removes the node\'s etcd member when etcd answers; '
                  'otherwise remove it with etcdctl member remove on another control plane), '
                  '`kubectl delete node {0}` if the Node exists, then run the playbook again.').format(host)
    return {'action': 'reset', 'missing': missing,
            'message': 'kubeadm join on {0} stopped half-way: kubelet.conf exists but {1} do(es) not. {2}'.format(
                host, ', '.join(missing), advice)}
