#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module rdma_network_consensus: one RDMA network that every IPU node agrees on."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_network_consensus
short_description: Agree on one RDMA network from what every IPU node derived
description:
  - Takes the C(rdma_network) that M(rdma_network_facts) returned on each IPU node and returns the one
    network a single MacvlanNetwork can describe. Run it once (on the control plane) before anything
    is applied to the cluster.
  - Fails, naming which hosts have which value, when the nodes disagree on the subnet or on the
    interface name (a MacvlanNetwork has one master interface and one range).
  - The MTU is the smallest any node has (with a warning when they differ); the excludes are the
    union of every node's (with a warning when the configured ones differ) plus every node's own RDMA
    address and every V-IPU controller address, so no pod can be given one; the V-IPU addresses are
    listed once each.
  - With O(controllers) (each IPU node's C(vipu_server) fact) the nodes are grouped by the V-IPU
    controller they chose, one group per IPU-POD; the rules above hold inside each group, and groups
    may differ in subnet, interface name and MTU. Every group is returned in C(pods). With one
    group (or no O(controllers)) the result and the refusals are those of the whole set of nodes.
  - Does not set facts, so the per-node C(rdma_network) fact of a control-plane node that is also
    an IPU node is left as it is. Register the result.
version_added: "1.0.0"
author:
  - ipu-k8s maintainers
options:
  networks:
    description:
      - Inventory host name to that host's C(rdma_network) (keys C(interface), C(cidr), C(mtu),
        C(excludes), C(vipu_address); others are ignored).
    type: dict
    required: true
  ipam:
    description:
      - The IPAM the chart release uses. With C(nv-ipam) the result also carries C(nv_ipam), the
        NVIDIA IPAM pool for these nodes.
    type: str
    choices: [whereabouts, nv-ipam]
    default: whereabouts
  nv_ipam_block_size:
    description:
      - NVIDIA IPAM C(perNodeBlockSize). 0 picks the largest size that gives every node a block with
        addresses outside the excludes; another value is checked to do so.
    type: int
    default: 0
  controllers:
    description:
      - Inventory host name to that host's C(vipu_server) fact (keys C(name), C(host), C(port),
        C(label)), to group the nodes by IPU-POD. Empty puts all nodes in one group.
    type: dict
    default: {}
  network_name:
    description:
      - The network's name (C(ipu_k8s_rdma_network_name)); names each POD's NVIDIA IPAM pool.
    type: str
    default: ''
attributes:
  check_mode:
    support: full
    description: Computes only; runs the same way in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to diff.
seealso:
  - module: rdma_network_facts
'''

EXAMPLES = r'''
- name: Agree on the RDMA network of all IPU nodes
  rdma_network_consensus:
    networks: >-
      {{ dict(groups['ipu_nodes'] | zip(groups['ipu_nodes']
         | map('extract', hostvars, ['ansible_facts', 'rdma_network']))) }}
  register: rdma

- name: Use it
  ansible.builtin.debug:
    msg: "{{ rdma.rdma_network.interface }} {{ rdma.rdma_network.cidr }} mtu {{ rdma.rdma_network.mtu }}"
'''

RETURN = r'''
rdma_network:
  description: The RDMA network all IPU nodes agree on; null when they belong to several V-IPU controllers.
  returned: success
  type: dict
  contains:
    interface:
      description: The RDMA interface name, the same on every node (the MACVLAN master).
      type: str
      sample: ens1f0np0
    cidr:
      description: The RDMA subnet, the same on every node.
      type: str
      sample: 10.247.208.0/23
    prefix:
      description: Prefix length of the subnet.
      type: int
      sample: 23
    mtu:
      description: The smallest MTU of the nodes' RDMA interfaces.
      type: int
      sample: 9000
    excludes:
      description: Union of the nodes' excludes and their own and the V-IPU addresses, as few CIDRs as cover them.
      type: list
      elements: str
      sample: ["10.247.208.0/25", "10.247.208.201/32"]
    nv_ipam:
      description: With I(ipam=nv-ipam), the NVIDIA IPAM IPPool values.
      returned: when ipam is nv-ipam
      type: dict
      contains:
        exclusions:
          description: The excludes as inclusive address ranges (IPPool C(exclusions)).
          type: list
          elements: dict
          sample: [{"startIP": "10.247.208.0", "endIP": "10.247.208.127"}]
        block_size:
          description: IPPool C(perNodeBlockSize).
          type: int
          sample: 255
    vipu_addresses:
      description: The V-IPU controller addresses the nodes reported, unique, in address order.
      type: list
      elements: str
      sample: ["10.247.208.5"]
pods:
  description: One entry per V-IPU controller (IPU-POD), in the order of its first node.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The controller's name (C(vipu_server.name)); empty without O(controllers).
      type: str
      sample: pod001
    label:
      description: The node label (C(key=value)) of the controller's IPU nodes.
      type: str
      sample: vipu-ctrl=pod001
    vipu_host:
      description: The controller's IPv4 address.
      type: str
      sample: 10.247.208.5
    vipu_port:
      description: The controller's TCP port.
      type: int
      sample: 8090
    hosts:
      description: The inventory hosts of this POD, sorted.
      type: list
      elements: str
      sample: [ipu1, ipu2]
    pool:
      description: The NVIDIA IPAM IPPool name of this POD (O(network_name) itself for one POD).
      type: str
      sample: rdma-net-pod001
    rdma_network:
      description: This POD's agreed network, with the keys of the top-level C(rdma_network).
      type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ipu_k8s_rdma import IpuK8sError, agree_rdma_networks_by_pod


def main():
    module = AnsibleModule(
        argument_spec=dict(
            networks=dict(type='dict', required=True),
            ipam=dict(type='str', default='whereabouts', choices=['whereabouts', 'nv-ipam']),
            nv_ipam_block_size=dict(type='int', default=0),
            controllers=dict(type='dict', default={}),
            network_name=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    error = None
    try:
        pods, warnings = agree_rdma_networks_by_pod(module.params['networks'], module.params['controllers'],
                                                    module.params['ipam'], module.params['nv_ipam_block_size'],
                                                    module.params['network_name'])
    except IpuK8sError as e:
        error = str(e)
    if error is not None:
        module.fail_json(msg=error)
    for warning in warnings:
        module.warn(warning)
    network = pods[0]['rdma_network'] if len(pods) == 1 else None
    module.exit_json(changed=False, rdma_network=network, pods=pods)


if __name__ == '__main__':
    main()
