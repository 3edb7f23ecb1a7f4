#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module rdma_network_facts: how does this node reach the V-IPU controller?"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_network_facts
short_description: Derive an IPU node's RDMA interface, subnet, MTU and excluded range
description:
  - Asks the kernel of the node how it reaches the V-IPU controller (C(ip -j route get)), then reads
    that interface's own IPv4 addresses and MTU (C(ip -j addr show dev)). The RDMA subnet is the
    connected subnet of the interface address that holds the controller address, with its real
    prefix length; a bare address is never assumed to be a /24.
  - The range kept from pods is the first C(/exclude_prefix) of that subnet (Gcore keeps the
    IPU infrastructure there), or the O(exclude) list when given.
  - Refuses, with a message naming the address, the interface and what to do, when the address is
    malformed or does not resolve, when there is no route, when the route goes through a gateway
    (MACVLAN pods must share the L2 subnet with the controller), when the address is the node's
    own or not unicast, when the subnet is not larger than the excluded prefix, when a pinned
    O(interface) is not the one the kernel uses, and when an O(exclude) entry is not inside the subnet.
  - Adds the controller address and the node's own RDMA address to the excludes (as /32) when
    the excluded range leaves them out, so the IPAM can never hand either to a pod.
  - When the route is refused or missing because the RDMA NIC holding the controller's subnet is
    administratively down (the kernel then drops its routes and finds the default gateway, or
    nothing), the refusal says so (C(RDMA NIC <if> is down)), read from C(ip -j -4 addr show).
  - Reads only; never changes anything.
version_added: "1.0.0"
author:
  - ipu-k8s maintainers
options:
  address:
    description:
      - The V-IPU controller as an IPv4 address, C(ip:port), or a host name (resolved on the node).
      - The port, if any, is checked and otherwise ignored.
    type: str
    required: true
  exclude_prefix:
    description:
      - Exclude the first C(/exclude_prefix) of the RDMA subnet from pod addresses (25 = the first 128).
      - The subnet must be larger (a smaller prefix length) than this.
      - Ignored when O(exclude) is given.
    type: int
    default: 25
  exclude:
    description:
      - CIDRs to exclude instead of the computed one. Each must lie inside the RDMA subnet.
      - An empty list means the computed exclude.
    type: list
    elements: str
    default: []
  interface:
    description:
      - Pin the RDMA interface name. The module fails when the kernel routes the address through
        another interface.
    type: str
attributes:
  check_mode:
    support: full
    description: Reads only; runs the same way in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to diff.
notes:
  - IPv4 only. Needs iproute2 with JSON output (C(ip -j)), as on Ubuntu 22.04+ and Debian 12.
  - The route lookup sends no packet.
seealso:
  - module: vipu_server
requirements:
  - iproute2 (C(ip)) on the node.
'''

EXAMPLES = r'''
- name: Find the V-IPU controller
  vipu_server:

- name: Derive the RDMA network towards it
  rdma_network_facts:
    address: "{{ ansible_facts.vipu_server.address }}"
    exclude_prefix: "{{ ipu_k8s_rdma_exclude_prefix }}"
    exclude: "{{ ipu_k8s_rdma_excludes }}"
    interface: "{{ ipu_k8s_rdma_interface | default(omit, true) }}"

- name: Show it
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.rdma_network.interface }} {{ ansible_facts.rdma_network.cidr }}
      mtu {{ ansible_facts.rdma_network.mtu }} excluding {{ ansible_facts.rdma_network.excludes | join(', ') }}
'''

RETURN = r'''
rdma_network:
  description: The node's RDMA network. Also set as C(ansible_facts.rdma_network).
  returned: success
  type: dict
  contains:
    interface:
      description: The interface the kernel routes the controller address through (the MACVLAN master).
      type: str
      sample: ens1f0np0
    cidr:
      description: The connected subnet holding the controller address, with its real prefix length.
      type: str
      sample: 10.247.208.0/23
    prefix:
      description: Prefix length of the subnet.
      type: int
      sample: 23
    node_address:
      description: This node's own address in that subnet.
      type: str
      sample: 10.247.208.21
    mtu:
      description: MTU of the interface.
      type: int
      sample: 9000
    excludes:
      description: CIDRs the IPAM must not hand to pods, the node's own and the controller's address included.
      type: list
      elements: str
      sample: ["10.247.208.0/25", "10.247.208.201/32"]
    excludes_added:
      description: The /32s of I(excludes) added because the excluded range left those addresses out.
      type: list
      elements: str
      sample: ["10.247.208.201/32"]
    vipu_address:
      description: The controller's IPv4 address (port dropped, host name resolved).
      type: str
      sample: 10.247.208.5
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ipu_k8s_rdma import (
    DEFAULT_EXCLUDE_PREFIX,
    IpuK8sError,
    derive_rdma_network,
    refuse_down_interface,
    resolve_ipv4,
    show_output,
    split_address,
)


def rdma_network(module, ip_bin):
    """The rdma_network of the options of this module run."""
    params = module.params
    if not 1 <= params['exclude_prefix'] <= 32:
        raise IpuK8sError('exclude_prefix %d is not a prefix length (1-32)' % params['exclude_prefix'])
    host = split_address(params['address'], 'address')[0]
    address = resolve_ipv4(host)
    def read_all_interfaces():
        rc, out, err = module.run_command([ip_bin, '-j', '-4', 'addr', 'show'], environ_update={'LC_ALL': 'C'})
        if rc != 0:
            raise IpuK8sError('cannot list the interfaces of this node (ip -j -4 addr show): %s'
                              % show_output(err or out))
        return out

    try:
        rc, route_json, err = module.run_command([ip_bin, '-j', '-4', 'route', 'get', address],
                                                 environ_update={'LC_ALL': 'C'})
        if rc != 0:
            refuse_down_interface(read_all_interfaces, address)
            raise IpuK8sError('the kernel has no route to the V-IPU address %s (%s): give this node an address in '
                              "the V-IPU controller's subnet on its RDMA NIC, and check that the NIC is up"
                              % (address, show_output(err or route_json)))

        def read_interface(device):
            rc, out, err = module.run_command([ip_bin, '-j', 'addr', 'show', 'dev', device],
                                              environ_update={'LC_ALL': 'C'})
            if rc != 0:
                raise IpuK8sError('cannot read the addresses of %s, the interface routing the V-IPU address %s: %s'
                                  % (device, address, show_output(err or out)))
            return out

        return derive_rdma_network(route_json, read_interface, address, params['exclude_prefix'],
                                   params['exclude'], params['interface'] or None, read_all_interfaces)
    except IpuK8sError as e:
        if host != address:
            raise IpuK8sError('%s [%s resolves to %s]' % (e, host, address))
        raise


def main():
    module = AnsibleModule(
        argument_spec=dict(
            address=dict(type='str', required=True),
            exclude_prefix=dict(type='int', default=DEFAULT_EXCLUDE_PREFIX),
            exclude=dict(type='list', elements='str', default=[]),
            interface=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    ip_bin = module.get_bin_path('ip', required=True)
    error = None
    try:
        network = rdma_network(module, ip_bin)
    except IpuK8sError as e:
        error = str(e)
    if error is not None:
        module.fail_json(msg=error)
    module.exit_json(changed=False, rdma_network=network, ansible_facts={'rdma_network': network})


if __name__ == '__main__':
    main()
