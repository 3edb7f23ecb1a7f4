# -*- coding: utf-8 -*-
"""What an IPU node lacks of the CNI files the Network Operator's Multus and IPAM daemonsets
leave in its CNI directory (guide, section 5.2): a Multus configuration, multus.d, and the
IPAM's directory (whereabouts.d, or nv-ipam.d on NVIDIA IPAM chart rows; either when the
IPAM is not known).

    find_result.files | rdma_network_cni_missing(ipam)
    ipam | rdma_network_cni_ipam_dir      # the IPAM's directory, in the words of the message
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import posixpath

MULTUS_CONFIGS = ('*multus*.conf', '*multus*.conflist')
IPAM_DIRS = {'whereabouts': ('whereabouts.d',), 'nv-ipam': ('nv-ipam.d',)}


def rdma_network_cni_missing(files, ipam):
    """What is missing, in the words of the check's message, from the entries ansible.builtin.find
    reported (path, isdir, isreg): [] when the node has everything. ipam: whereabouts, nv-ipam, or ''
    (not known: either directory will do)."""
    entries = [(posixpath.basename(f['path']), f.get('isdir'), f.get('isreg')) for f in files or []]
    dirs = set(name for name, isdir, isreg in entries if isdir)
    missing = []
    if not any(isreg and any(fnmatch.fnmatchcase(name, p) for p in MULTUS_CONFIGS) for name, isdir, isreg in entries):
        missing.append('a Multus configuration (00-multus.conf)')
    if 'multus.d' not in dirs:
        missing.append('multus.d')
    wanted = _ipam_dirs(ipam)
    if not dirs.intersection(wanted):
        missing.append(' or '.join(wanted))
    return missing


def _ipam_dirs(ipam):
    return IPAM_DIRS.get(ipam, IPAM_DIRS['whereabouts'] + IPAM_DIRS['nv-ipam'])


def rdma_network_cni_ipam_dir(ipam):
    return ' or '.join(_ipam_dirs(ipam))


class FilterModule(object):
    def filters(self):
        return {'rdma_network_cni_missing': rdma_network_cni_missing,
                'rdma_network_cni_ipam_dir': rdma_network_cni_ipam_dir}
