# -*- coding: utf-8 -*-
"""kubeadm's control-plane taint and the NicClusterPolicy's DaemonSets.

- ipu_k8s_tainted_control_planes(groups, untaint): the control-plane hosts that keep kubeadm's
  NoSchedule taint (the kubeadm role removes it from the others).
- ipu_k8s_control_plane_tolerations(groups, untaint, setting, chart): which IPU nodes are
  control planes that keep kubeadm's NoSchedule taint, the tolerations the NicClusterPolicy
  gives its DaemonSets for it, and the refusal when they cannot or may not ->
  {'hosts': [...], 'tolerations': [...], 'problem': ''}.

What the Network Operator does with them (Mellanox/network-operator):
- policy layout (24.10 and later; read at v25.4.0, v25.7.0, v26.1.2, v26.4.1): the
  NicClusterPolicy's spec.tolerations (api/v1alpha1/nicclusterpolicy_types.go, "Tolerations to
  inject to the DaemonSets objects that are managed by the operator") reaches the RDMA shared
  device plugin, Multus, CNI plugins, Whereabouts and nv-ipam-node DaemonSets
  (pkg/state/state_*.go: Tolerations: cr.Spec.Tolerations), whose manifests/state-*/ templates
  put them before their only fixed toleration, nvidia.com/gpu. Without them none of these runs
  on a node tainted node-role.kubernetes.io/control-plane:NoSchedule, and pods there get no
  RDMA network.
- legacy layout (1.3.0, 1.4.0): the NicClusterPolicy has no tolerations field and the
  Multus, CNI plugins and Whereabouts DaemonSets (manifests/stage-*/) tolerate nothing: no
  setting can put them on a tainted control plane.

kubeadm taints control planes node-role.kubernetes.io/control-plane:NoSchedule; from 1.25 it no
longer sets node-role.kubernetes.io/master and removes it on `kubeadm upgrade apply`
(kubernetes/kubernetes pull request 110095), and every policy-layout row serves 1.29 or later,
so the control-plane key is the one to tolerate. The kubeadm role removes the taint on a
one-node cluster or with kubeadm_untaint_control_plane (roles/kubeadm/tasks/main.yml, by
ipu_k8s_tainted_control_planes).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

CONTROL_PLANE_TOLERATION = {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Exists',
                            'effect': 'NoSchedule'}
SETTING = 'network_operator_tolerate_control_plane'


def tainted_control_planes(groups, untaint):
    """The control_plane hosts that keep kubeadm's NoSchedule taint: every one of them, unless
    the kubeadm role removes it (a cluster of one node, or kubeadm_untaint_control_plane)."""
    cluster = groups.get('k8s_cluster') or []
    if boolean(untaint, strict=False) or len(cluster) == 1:
        return []
    return list(groups.get('control_plane') or [])


def control_plane_tolerations(groups, untaint, setting, chart):
    """{'hosts': IPU nodes that are tainted control planes, 'tolerations': the NicClusterPolicy's
    spec.tolerations ([] leaves the field out), 'problem': '' or the one refusal}.

    setting (network_operator_tolerate_control_plane): auto tolerates the taint exactly when
    an IPU node keeps it, always whatever the inventory says (taints it does not know of),
    never refuses such a node. chart is the ipu_k8s_versions.network_operator row in use: a
    legacy-layout row cannot tolerate the taint at all."""
    ipu_nodes = set(groups.get('ipu_nodes') or [])
    hosts = [host for host in tainted_control_planes(groups, untaint) if host in ipu_nodes]
    result = {'hosts': hosts, 'tolerations': [], 'problem': ''}
    if not (setting == 'always' or (hosts and setting in ('auto', 'never'))):
        return result
    named = ', '.join(hosts)
    tainted = ('%s %s in control_plane and ipu_nodes and keep%s kubeadm\'s node-role.kubernetes.io/control-plane:'
               'NoSchedule taint (a cluster of %d nodes, kubeadm_untaint_control_plane false)'
               % (named, 'is' if len(hosts) == 1 else 'are', 's' if len(hosts) == 1 else '',
                  len(groups.get('k8s_cluster') or [])))
    ways_out = 'Set kubeadm_untaint_control_plane: true (the control planes then take any workload), or take %s out ' \
        'of ipu_nodes.' % named
    if setting == 'never':
        result['problem'] = ('%s is never, but %s: the Network Operator\'s DaemonSets (RDMA shared device plugin, '
                             'Multus, CNI plugins, IPAM) would not run there and its IPU pods would get no RDMA '
                             'network. %s Or set %s to auto.' % (SETTING, tainted, ways_out, SETTING))
    elif (chart or {}).get('layout') == 'legacy':
        cannot = ('network-operator chart %s (legacy layout) cannot tolerate that taint: its NicClusterPolicy has no '
                  'tolerations field and its Multus, CNI plugins and Whereabouts DaemonSets tolerate no control-plane '
                  'taint' % chart.get('chart_version'))
        result['problem'] = ('%s, but %s, so the RDMA network would not reach %s. %s' % (tainted, cannot, named, ways_out)
                             if hosts else '%s is always, but %s. Set it to auto.' % (SETTING, cannot))
    else:
        result['tolerations'] = [dict(CONTROL_PLANE_TOLERATION)]
    return result


class FilterModule(object):
    """kubeadm's control-plane taint: where it stays, and the NicClusterPolicy's tolerations of it."""

    def filters(self):
        return {'ipu_k8s_tainted_control_planes': tainted_control_planes,
                'ipu_k8s_control_plane_tolerations': control_plane_tolerations}
