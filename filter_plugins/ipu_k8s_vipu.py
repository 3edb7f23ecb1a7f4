# -*- coding: utf-8 -*-
"""Filters over the V-IPU controller list, sharing module_utils/ipu_k8s_vipu_controllers.py
with the vipu_server module, so each rule lives in one place.

- ipu_k8s_vipu_controller_problems(controllers, hostvars, hosts, default_port, default_label):
  every mistake in ipu_k8s_vipu_controllers and the hosts' ipu_k8s_vipu_controller, from the
  inventory alone (preflight) -> list of messages, empty when none.
- ipu_k8s_vipu_operator(hostvars, ipu_nodes): what the IPU Operator gets from the entries the
  IPU nodes resolved (their vipu_server facts) -> {controllers, value, nodes}; fails with
  the refusal's message.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

from ansible.errors import AnsibleFilterError, AnsibleUndefinedVariable

# Controller-side plugins cannot import the project's module_utils as ansible.module_utils.*
# (only modules get those bundled): import them from the directory beside this one.
_MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')
if _MODULE_UTILS not in sys.path:
    sys.path.insert(0, _MODULE_UTILS)

from ipu_k8s_rdma import IpuK8sError  # noqa: E402  (needs the sys.path entry above)
from ipu_k8s_vipu_controllers import inventory_problems, operator_controllers  # noqa: E402


def _host_value(hostvars, host, *path):
    """hostvars[host][path...] or None when any step is missing."""
    try:
        value = hostvars[host]
        for key in path:
            value = value[key]
    except (KeyError, TypeError, AnsibleUndefinedVariable):
        return None
    return value


def vipu_controller_problems(controllers, hostvars, hosts, default_port, default_label):
    choices = dict((host, _host_value(hostvars, host, 'ipu_k8s_vipu_controller') or '') for host in hosts or [])
    return inventory_problems(controllers, choices, default_port, default_label)


def vipu_operator(hostvars, ipu_nodes):
    facts, names = {}, {}
    for host in ipu_nodes or []:
        fact = _host_value(hostvars, host, 'ansible_facts', 'vipu_server') or _host_value(hostvars, host, 'vipu_server')
        facts[host] = dict(fact) if fact else None
        names[host] = _host_value(hostvars, host, 'ipu_k8s_node_name') or host
    try:
        return operator_controllers(facts, names)
    except IpuK8sError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {
            'ipu_k8s_vipu_controller_problems': vipu_controller_problems,
            'ipu_k8s_vipu_operator': vipu_operator,
        }
