# -*- coding: utf-8 -*-
"""Filter building the per-IPU-POD workload examples (module_utils/ipu_k8s_workloads.py).

- ipu_k8s_workload_examples(controllers, network, resource, namespace, image, ipujob):
  {relative path: object} for the directory handed to users.
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

from ipu_k8s_rdma import IpuK8sError  # noqa: E402  (needs the sys.path entry above)
from ipu_k8s_workloads import workload_examples  # noqa: E402


def ipu_k8s_workload_examples(controllers, network, resource, namespace, image, ipujob=None):
    try:
        return workload_examples(list(controllers), str(network), str(resource), str(namespace), str(image),
                                 ipujob)
    except (IpuK8sError, KeyError, TypeError, ValueError) as e:
        raise AnsibleFilterError('ipu_k8s_workload_examples: %s' % e)


class FilterModule(object):
    def filters(self):
        return {'ipu_k8s_workload_examples': ipu_k8s_workload_examples}
