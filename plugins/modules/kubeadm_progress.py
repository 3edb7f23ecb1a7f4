#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module kubeadm_progress: how far kubeadm init or join got, judged on what it does last."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: kubeadm_progress
short_description: Tell whether kubeadm init or join finished, from what kubeadm does last
author: ipu-k8s contributors (!UNKNOWN)
description:
  - C(mode=init) (on the first control-plane node) looks at the files each C(kubeadm init) phase writes
    (CA certificate, admin.conf, the etcd and kube-apiserver manifests, kubelet's config.yaml), waits up to
    O(api_timeout) seconds for the API server's C(/readyz) when the control plane was written, and then
    reads back what the last phases create - the C(kubeadm-config) ConfigMap, the C(cluster-info) ConfigMap of
    the bootstrap token, the CoreDNS Deployment and the kube-proxy DaemonSet.
  - Returns C(action) C(init) (no state), C(complete), C(finish) (the control plane runs but later phases did
    not, and RV(phases) lists the C(kubeadm init phase) commands that redo them), or C(reset) with a message saying
    exactly what to do (a run stopped before the control plane existed cannot be resumed).
  - C(mode=join) (run where O(kubeconfig) is, e.g. delegated to the first control-plane node) reads the Node
    O(node_name), and for a control-plane join its etcd static pod and control-plane label; O(kubelet_conf)
    says whether the joining node has kubelet.conf. Returns C(join), C(complete) or C(reset).
  - Only reads. With O(require) it also fails, with that message, on a state the play cannot go on from.
options:
  mode:
    description: Which command to judge.
    type: str
    choices: [init, join]
    required: true
  host:
    description: The node's name in messages (its inventory name).
    type: str
    required: true
  kubeconfig:
    description: Admin kubeconfig used to read the cluster.
    type: path
    default: /etc/kubernetes/admin.conf
  kubernetes_dir:
    description: kubeadm's configuration directory (init).
    type: path
    default: /etc/kubernetes
  kubelet_dir:
    description: kubelet's state directory (init).
    type: path
    default: /var/lib/kubelet
  api_timeout:
    description: Seconds to wait for the API server's /readyz (init, once the control plane was written).
    type: int
    default: 0
  node_name:
    description: The node's name in Kubernetes (join).
    type: str
  control_plane:
    description: Whether the join is a control-plane join.
    type: bool
    default: false
  kubelet_conf:
    description: Whether the joining node has /etc/kubernetes/kubelet.conf (join).
    type: bool
    default: false
  require:
    description:
      - C(resumable) fails on C(reset); C(complete) fails on every action but C(complete).
    type: str
    choices: [nothing, resumable, complete]
    default: nothing
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same way in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
requirements:
  - kubectl where the API is read
'''

EXAMPLES = r'''
- name: Find out how far kubeadm init got
  kubeadm_progress:
    mode: init
    host: "{{ inventory_hostname }}"
    api_timeout: 300
    require: resumable
  register: progress
'''

RETURN = r'''
action:
  description: init, join, complete, finish (init only) or reset.
  returned: success
  type: str
  sample: finish
done:
  description: The phases found done (init).
  returned: mode=init
  type: list
  elements: str
missing:
  description: What is not there.
  returned: success
  type: list
  elements: str
phases:
  description: Argument lists for C(kubeadm init phase) that finish a half-done init, in order.
  returned: mode=init
  type: list
  elements: list
  sample: [[upload-config, all], [mark-control-plane], [bootstrap-token], [kubelet-finalize, all], [addon, all]]
message:
  description: One sentence on the state and, for reset, exactly what to do.
  returned: success
  type: str
'''

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_kubeadm import (
    INIT_API_PHASES, INIT_FILE_PHASES, init_file, init_progress, join_progress)


class Cluster:
    """Reads the cluster with kubectl and the admin kubeconfig."""

    def __init__(self, module):
        self.module = module
        self.kubectl = module.get_bin_path('kubectl', required=True)
        self.base = [self.kubectl, '--kubeconfig', module.params['kubeconfig'], '--request-timeout=10s']

    def ready(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            rc, out, err = self.module.run_command(self.base + ['get', '--raw=/readyz'])
            if rc == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(5)

    def get(self, kind, name, namespace=None, output='name'):
        argv = self.base + ['get', kind, name, '--ignore-not-found', '-o', output]
        if namespace:
            argv += ['-n', namespace]
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(msg='kubectl get %s %s failed: %s' % (kind, name, (err or out).strip()),
                                  rc=rc, stderr=err)
        return out.strip()


def finish(module, result):
    require = module.params['require']
    if (require != 'nothing' and result['action'] == 'reset'
            or require == 'complete' and result['action'] != 'complete'):
        module.fail_json(msg=result['message'], **result)
    module.exit_json(changed=False, **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type='str', choices=['init', 'join'], required=True),
            host=dict(type='str', required=True),
            kubeconfig=dict(type='path', default='/etc/kubernetes/admin.conf'),
            kubernetes_dir=dict(type='path', default='/etc/kubernetes'),
            kubelet_dir=dict(type='path', default='/var/lib/kubelet'),
            api_timeout=dict(type='int', default=0),
            node_name=dict(type='str'),
            control_plane=dict(type='bool', default=False),
            kubelet_conf=dict(type='bool', default=False),
            require=dict(type='str', choices=['nothing', 'resumable', 'complete'], default='nothing'),
        ),
        required_if=[('mode', 'join', ['node_name'])],
        supports_check_mode=True,
    )
    p = module.params
    if p['mode'] == 'init':
        files = {path: os.path.exists(init_file(path, p['kubernetes_dir'], p['kubelet_dir']))
                 for _phase, path in INIT_FILE_PHASES}
        api_ready, objects = None, {}
        if all(files.values()):
            cluster = Cluster(module)
            api_ready = cluster.ready(p['api_timeout'])
            if api_ready:
                objects = {(kind, ns, name): bool(cluster.get(kind, name, ns))
                           for _phase, kind, ns, name in INIT_API_PHASES}
        finish(module, init_progress(p['host'], files, api_ready, objects))
        return
    node = label = etcd = False
    if p['kubelet_conf']:
        cluster = Cluster(module)
        found = cluster.get('node', p['node_name'], output='json')
        if found:
            node = True
            labels = json.loads(found).get('metadata', {}).get('labels', {})
            label = 'node-role.kubernetes.io/control-plane' in labels
        if p['control_plane']:
            etcd = bool(cluster.get('pod', 'etcd-' + p['node_name'], 'kube-system'))
    finish(module, join_progress(p['host'], p['kubelet_conf'], p['control_plane'], node, label, etcd))


if __name__ == '__main__':
    main()
