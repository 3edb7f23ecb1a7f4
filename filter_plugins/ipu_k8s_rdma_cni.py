# -*- coding: utf-8 -*-
"""Filter over the RDMA network of several IPU-PODs (module_utils/ipu_k8s_rdma.py).

- ipu_k8s_rdma_cni_config(pod, network_name, mode, ipam, whereabouts): the CNI
  configuration Multus reads on that POD's nodes for a NetworkAttachmentDefinition without
  spec.config (pod: one entry of rdma_network_consensus's pods) -> dict.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

from ansible.errors import AnsibleFilterError

# Controller-side plugins cannot import the project's module_utils as ansible.module_utils.*
# (only modules get those bundled): import them from the directory beside this one.
_MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')
if _MODULE_UTILS not in sys.path:
    sys.path.insert(0, _MODULE_UTILS)

from ipu_k8s_rdma import IpuK8sError, cni_config  # noqa: E402  (needs the sys.path entry above)


def ipu_k8s_rdma_cni_config(pod, network_name, mode='bridge', ipam='whereabouts', whereabouts=None):
    try:
        return cni_config(str(network_name), pod, str(mode), str(ipam), whereabouts)
    except (IpuK8sError, KeyError, TypeError) as e:
        raise AnsibleFilterError('ipu_k8s_rdma_cni_config: %s' % e)


class FilterModule(object):
    def filters(self):
        return {'ipu_k8s_rdma_cni_config': ipu_k8s_rdma_cni_config}
