# -*- coding: utf-8 -*-
"""Filters over the site model (plugins/module_utils/ipu_k8s_vipu_controllers.py site_model) and the
objects rendered from it; every rule lives in module_utils, shared with the modules.

- ipu_k8s_site_model(hostvars, ipu_nodes, network_name, ipam, block_size): the site from the
  IPU nodes' vipu_server and rdma_network facts (the public fact ipu_k8s_site).
- ipu_k8s_vipu_controller_problems(controllers, hostvars, hosts, default_port, default_label):
  every mistake in ipu_k8s_vipu_controllers and the hosts' ipu_k8s_vipu_controller, from the
  inventory alone (preflight) -> list of messages, empty when none.
- ipu_k8s_rdma_cni_config(pod, network_name, mode, ipam, whereabouts): the CNI configuration
  Multus reads on one POD's nodes (pod: one entry of ipu_k8s_site.pods) -> dict.
- ipu_k8s_workload_examples(controllers, network, resource, namespace, image, ipujob):
  {relative path: object} for the directory handed to users.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError, AnsibleUndefinedVariable
from ansible.utils.display import Display

# The rules are the collection's module_utils, the same files the modules carry to the nodes.
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, cni_config
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import inventory_problems, site_model
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_workloads import workload_examples


def _value(variables, *path):
    """variables[path...] or None when any step is missing."""
    try:
        for key in path:
            variables = variables[key]
    except (KeyError, TypeError, AnsibleUndefinedVariable):
        return None
    return variables


def ipu_k8s_site_model(hostvars, ipu_nodes, network_name='', ipam=None, block_size=0):
    nodes = {}
    for host in ipu_nodes or []:
        variables = _value(hostvars, host)  # a host's variables are built on each hostvars[host]: once
        facts = _value(variables, 'ansible_facts') or {}
        nodes[host] = dict((key, facts.get(key) or _value(variables, key)) for key in ('vipu_server', 'rdma_network'))
        nodes[host]['node_name'] = _value(variables, 'ipu_k8s_node_name') or host
    try:
        model = site_model(nodes, str(network_name), ipam or None, int(block_size or 0))
    except IpuK8sError as e:
        raise AnsibleFilterError(str(e))
    for warning in model['warnings']:
        Display().warning(warning)
    return model


def ipu_k8s_vipu_controller_problems(controllers, hostvars, hosts, default_port, default_label):
    choices = dict((host, _value(hostvars, host, 'ipu_k8s_vipu_controller') or '') for host in hosts or [])
    return inventory_problems(controllers, choices, default_port, default_label)


def ipu_k8s_rdma_cni_config(pod, network_name, mode='bridge', ipam='whereabouts', whereabouts=None):
    try:
        return cni_config(str(network_name), pod, str(mode), str(ipam), whereabouts)
    except (IpuK8sError, KeyError, TypeError) as e:
        raise AnsibleFilterError('ipu_k8s_rdma_cni_config: %s' % e)


def ipu_k8s_workload_examples(controllers, network, resource, namespace, image, ipujob=None):
    try:
        return workload_examples(list(controllers), str(network), str(resource), str(namespace), str(image),
                                 ipujob)
    except (IpuK8sError, KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError('ipu_k8s_workload_examples: %s' % e)


class FilterModule(object):
    def filters(self):
        return dict((f.__name__, f) for f in (ipu_k8s_site_model, ipu_k8s_vipu_controller_problems,
                                              ipu_k8s_rdma_cni_config, ipu_k8s_workload_examples))
