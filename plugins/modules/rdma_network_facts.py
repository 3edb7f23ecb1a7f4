#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module rdma_network_facts: which V-IPU controller does this IPU node use, and how
does the node reach it?"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_network_facts
short_description: Find an IPU node's V-IPU controller and derive its RDMA interface, subnet, MTU and excluded range
author: ipu-k8s contributors (!UNKNOWN)
description:
  - Finds the V-IPU controller an IPU node talks to (C(vipu_server)) and derives the RDMA network it reaches
    that controller on (C(rdma_network)), both returned and set as facts. Reads only; never changes anything.
  - "The controller, with where it came from: the O(address) option, or the entry of O(controllers) that
    O(controller) names (the whole list checked first by the code preflight runs,
    plugins/module_utils/ipu_k8s_vipu_controllers.py); else what C(<cli> --server-version --showjson) prints
    (C({\"version\": ..., \"host\": \"ip:port\"})) when the V-IPU CLI is installed - a CLI that fails or prints
    something else is an error, not a reason to look elsewhere; else E(IPUOF_VIPU_API_HOST) and
    E(IPUOF_VIPU_API_PORT) of the module's environment (the task keyword C(environment) sets them when the
    login profile is not read). A host name is resolved on the node to an IPv4 address."
  - The RDMA subnet is the connected subnet, with its real prefix length (never the /24 assumed for a bare
    address), of the address of the interface the kernel routes the controller address through
    (C(ip -j route get), C(ip -j addr show dev)); the MTU is that interface's.
  - The excludes are the first C(/exclude_prefix) of the subnet (Gcore keeps the IPU infrastructure there),
    or the O(exclude) list, with the controller's and the node's own address added as /32s when they are
    left out, so the IPAM can never hand either to a pod.
  - Refuses, naming the address, the interface and what to do, a malformed or unresolvable address, no route,
    a route through a gateway (MACVLAN pods must share the L2 subnet with the controller), the node's own or
    a non-unicast address, a subnet not larger than the excluded prefix, a pinned O(interface) the kernel
    does not use, an O(exclude) outside the subnet, and an RDMA NIC holding the controller's subnet that is
    administratively down (C(RDMA NIC <if> is down), read from C(ip -j -4 addr show)).
options:
  address:
    description:
      - The V-IPU controller as C(host) or C(host:port); C(host) is an IPv4 address or a host name.
      - Mutually exclusive with O(controllers).
    type: str
  controllers:
    description:
      - The V-IPU controllers of the inventory (C(ipu_k8s_vipu_controllers)), each a dict with
        C(name), C(host) (IPv4 address or DNS name, no port), optional C(port) (default O(port)) and
        optional C(label) (C(key=value), default O(label)).
    type: list
    elements: dict
    default: []
  controller:
    description:
      - Name of this node's entry in O(controllers) (C(ipu_k8s_vipu_controller)); empty means the first.
      - Empty with several controllers listed, the node looks up its route to each; it refuses when
        the first is not on one of its connected subnets but another is (a node of another IPU-POD
        that must name its controller).
    type: str
    default: ''
  label:
    description:
      - Node label (C(key=value)) of a controller that does not give its own (C(ipu_k8s_ipu_node_label)).
    type: str
    default: ipunode=true
  port:
    description:
      - Port used when the address found carries none.
    type: int
    default: 8090
  cli:
    description:
      - The V-IPU CLI, a command name looked up on E(PATH) or an absolute path.
      - A name not found is skipped (the environment is tried next); a path that does not exist is an error.
    type: str
    default: vipu
  environment:
    description:
      - Whether E(IPUOF_VIPU_API_HOST) and E(IPUOF_VIPU_API_PORT) may give the address.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the V-IPU CLI may take to answer before the module fails (uses C(timeout) from coreutils when present).
    type: int
    default: 30
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
  - The route lookups send no packet.
requirements:
  - iproute2 (C(ip)) on the node; the V-IPU CLI only when the address comes from it.
'''

EXAMPLES = r'''
- name: Find the V-IPU controller (CLI, then IPUOF_VIPU_API_HOST) and the RDMA network towards it
  rdma_network_facts:

- name: Use this node's entry of the inventory's controller list
  rdma_network_facts:
    controllers: "{{ ipu_k8s_vipu_controllers }}"
    controller: "{{ ipu_k8s_vipu_controller }}"
    label: "{{ ipu_k8s_ipu_node_label }}"
    exclude_prefix: "{{ ipu_k8s_rdma_exclude_prefix }}"

- name: Read the controller from a CLI outside PATH, with the profile's variables
  rdma_network_facts:
    cli: /opt/poplar/bin/vipu
  environment:
    IPUOF_VIPU_API_HOST: 10.5.212.116
    IPUOF_VIPU_API_PORT: "8090"

- name: Show it
  ansible.builtin.debug:
    msg: >-
      V-IPU {{ ansible_facts.vipu_server.address }} (from {{ ansible_facts.vipu_server.source }}) through
      {{ ansible_facts.rdma_network.interface }} {{ ansible_facts.rdma_network.cidr }}
      mtu {{ ansible_facts.rdma_network.mtu }} excluding {{ ansible_facts.rdma_network.excludes | join(', ') }}
'''

RETURN = r'''
vipu_server:
  description: The V-IPU controller. Also set as C(ansible_facts.vipu_server).
  returned: success
  type: dict
  contains:
    host:
      description: IPv4 address of the controller (a host name is resolved on the node).
      type: str
      sample: 10.5.212.116
    port:
      description: TCP port of the controller.
      type: int
      sample: 8090
    address:
      description: C(host:port), the form the IPU Operator's C(vipuControllers) takes.
      type: str
      sample: "10.5.212.116:8090"
    version:
      description: The controller version the CLI reported; null when the CLI was not used.
      type: str
      sample: 1.18.0
    source:
      description: Where the address came from (C(inventory) is the O(controllers) list).
      type: str
      choices: [param, inventory, cli, env]
      sample: cli
    name:
      description: The controller's name, its entry's C(name) for the O(controllers) list, else C(host:port).
      type: str
      sample: pod001
    label:
      description: The node label (C(key=value)) of the controller's IPU nodes.
      type: str
      sample: ipunode=true
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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import (
    choose_controller,
    label_problem,
    parse_controllers,
    unchosen_controller_problem,
)
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (
    DEFAULT_EXCLUDE_PREFIX,
    DEFAULT_IPU_NODE_LABEL,
    DEFAULT_VIPU_PORT,
    IpuK8sError,
    check_route,
    derive_rdma_network,
    parse_ip_json,
    parse_port,
    parse_vipu_server_version,
    refuse_down_interface,
    resolve_ipv4,
    show_output,
    split_address,
    vipu_address_from_environment,
    VIPU_ENV_HOST,
)

# Exit status of coreutils timeout(1) when the command ran out of time: 124 after
# SIGTERM, 137 when it had to follow up with SIGKILL (-k).
_TIMEOUT_RCS = (124, 137)
# Seconds timeout(1) waits after SIGTERM before it sends SIGKILL.
_KILL_AFTER = 5
# Where an address came from, for error messages.
_SOURCES = {'param': 'the address option', 'cli': 'the V-IPU CLI', 'env': VIPU_ENV_HOST,
            'inventory': 'ipu_k8s_vipu_controllers'}


def _utf8(text):
    """(text, whether it held undecodable bytes): run_command keeps bytes that are not UTF-8 as
    lone surrogates, which no module result may carry; they become \\xNN escapes here."""
    text = text or ''
    raw = text.encode('utf-8', 'surrogateescape')
    try:
        return raw.decode('utf-8'), False
    except UnicodeDecodeError:
        return raw.decode('utf-8', 'backslashreplace'), True


def _from_cli(module, cli_path):
    """(host, port or None, version) from `<cli> --server-version --showjson`."""
    command = [cli_path, '--server-version', '--showjson']
    timeout_bin = module.get_bin_path('timeout')
    if timeout_bin:
        command = [timeout_bin, '-k', str(_KILL_AFTER), str(module.params['timeout'])] + command
    rc, out, err = module.run_command(command, environ_update={'LC_ALL': 'C'})
    out, out_undecodable = _utf8(out)
    err = _utf8(err)[0]
    if timeout_bin and rc in _TIMEOUT_RCS:
        raise IpuK8sError('%s --server-version did not answer within %d s: is the V-IPU controller up and reachable '
                          'from this node? Pass the address explicitly to skip the CLI'
                          % (cli_path, module.params['timeout']))
    if rc != 0:
        raise IpuK8sError('%s --server-version --showjson failed (rc=%d): %s. The V-IPU controller did not answer '
                          'or the CLI is not configured (%s, ~/.vipu.hcl); fix that, or pass the address explicitly'
                          % (cli_path, rc, show_output(err or out), VIPU_ENV_HOST))
    if out_undecodable:
        raise IpuK8sError('%s --server-version --showjson printed bytes that are not UTF-8 (shown as \\x..): %s. '
                          'Check the V-IPU CLI and its locale on this node, or pass the address explicitly'
                          % (cli_path, show_output(out)))
    answer = parse_vipu_server_version(out)
    host, port = split_address(answer['host'], 'the host printed by %s --server-version' % cli_path)
    return host, port, answer['version']


def _connected(module, entries):
    """{entry name: whether this node reaches it on a directly connected subnet} (a real route
    lookup per entry), only when the node names no entry and there is more than one."""
    if module.params['controller'] or len(entries) < 2:
        return {}
    connected = {}
    for entry in entries:
        try:
            address = resolve_ipv4(entry['host'])
            rc, out, err = _ip(module, '-j', '-4', 'route', 'get', address)
            check_route(parse_ip_json(out, 'ip -j -4 route get %s' % address) if rc == 0 else [], address)
            connected[entry['name']] = True
        except IpuK8sError:
            connected[entry['name']] = False
    return connected


def find_vipu_server(module):
    """The controller as (host, port or None, version, source, name or None, label or None)."""
    params = module.params
    if params['controllers']:
        entries = parse_controllers(params['controllers'], params['port'], params['label'])
        entry = choose_controller(entries, params['controller'])
        why = unchosen_controller_problem(entries, params['controller'], _connected(module, entries))
        if why:
            raise IpuK8sError(why)
        return entry['host'], entry['port'], None, 'inventory', entry['name'], entry['label']
    if params['address'] is not None:
        host, port = split_address(params['address'], 'address')
        return host, port, None, 'param', None, None
    cli = params['cli']
    cli_path = module.get_bin_path(cli)
    if cli_path is None and os.sep in cli:
        raise IpuK8sError('the V-IPU CLI %s does not exist or is not executable: fix the cli option, or leave it '
                          'at vipu to look it up on PATH' % cli)
    if cli_path:
        host, port, version = _from_cli(module, cli_path)
        return host, port, version, 'cli', None, None
    found = params['environment'] and vipu_address_from_environment(os.environ, params['port'])
    if found:
        return found[0], found[1], None, 'env', None, None
    why_not_env = ('%s is not set' % VIPU_ENV_HOST if params['environment']
                   else 'the environment is not consulted (environment=false)')
    raise IpuK8sError('no V-IPU controller address on this node: no address was given, the V-IPU CLI %s is not on '
                      'PATH, and %s. Set ipu_k8s_vipu_controllers in the inventory, install the V-IPU CLI, or set '
                      '%s (task keyword environment)' % (cli, why_not_env, VIPU_ENV_HOST))


def _ip(module, *argv):
    """(rc, stdout, stderr) of the node's `ip` with argv, in the C locale (node_facts made sure
    there is one)."""
    return module.run_command([module.get_bin_path('ip')] + list(argv), environ_update={'LC_ALL': 'C'})


def rdma_network(module, host, address):
    """The rdma_network towards the controller address (host: the name it was given as)."""
    params = module.params

    def read_all_interfaces():
        rc, out, err = _ip(module, '-j', '-4', 'addr', 'show')
        if rc != 0:
            raise IpuK8sError('cannot list the interfaces of this node (ip -j -4 addr show): %s'
                              % show_output(err or out))
        return out

    def read_interface(device):
        rc, out, err = _ip(module, '-j', 'addr', 'show', 'dev', device)
        if rc != 0:
            raise IpuK8sError('cannot read the addresses of %s, the interface routing the V-IPU address %s: %s'
                              % (device, address, show_output(err or out)))
        return out

    try:
        rc, route_json, err = _ip(module, '-j', '-4', 'route', 'get', address)
        if rc != 0:
            refuse_down_interface(read_all_interfaces, address)
            raise IpuK8sError('the kernel has no route to the V-IPU address %s (%s): give this node an address in '
                              "the V-IPU controller's subnet on its RDMA NIC, and check that the NIC is up"
                              % (address, show_output(err or route_json)))
        return derive_rdma_network(route_json, read_interface, address, params['exclude_prefix'],
                                   params['exclude'], params['interface'] or None, read_all_interfaces)
    except IpuK8sError as e:
        if host != address:
            raise IpuK8sError('%s [%s resolves to %s]' % (e, host, address))
        raise


def node_facts(module):
    """{'vipu_server': ..., 'rdma_network': ...} of this node; every option is checked first."""
    params = module.params
    default_port = parse_port(params['port'], 'port')
    if params['timeout'] < 1:
        raise IpuK8sError('timeout must be at least 1 second, got %d' % params['timeout'])
    why = label_problem(params['label'])
    if why:
        raise IpuK8sError("label '%s' (ipu_k8s_ipu_node_label) %s" % (params['label'], why))
    if not 1 <= params['exclude_prefix'] <= 32:
        raise IpuK8sError('exclude_prefix %d is not a prefix length (1-32)' % params['exclude_prefix'])
    module.get_bin_path('ip', required=True)
    host, port, version, source, name, label = find_vipu_server(module)
    try:
        address = resolve_ipv4(host)
    except IpuK8sError as e:
        raise IpuK8sError('%s [the name came from %s]' % (e, _SOURCES[source]))
    port = port if port is not None else default_port
    server = {
        'host': address,
        'port': port,
        'address': '%s:%d' % (address, port),
        'version': version,
        'source': source,
        'name': name or '%s:%d' % (address, port),
        'label': label or params['label'],
    }
    return {'vipu_server': server, 'rdma_network': rdma_network(module, host, address)}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            address=dict(type='str'),
            port=dict(type='int', default=DEFAULT_VIPU_PORT),
            cli=dict(type='str', default='vipu'),
            environment=dict(type='bool', default=True),
            timeout=dict(type='int', default=30),
            controllers=dict(type='list', elements='dict', default=[]),
            controller=dict(type='str', default=''),
            label=dict(type='str', default=DEFAULT_IPU_NODE_LABEL),
            exclude_prefix=dict(type='int', default=DEFAULT_EXCLUDE_PREFIX),
            exclude=dict(type='list', elements='str', default=[]),
            interface=dict(type='str'),
        ),
        mutually_exclusive=[('address', 'controllers')],
        supports_check_mode=True,
    )
    try:
        facts = node_facts(module)
    except IpuK8sError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, ansible_facts=facts, **facts)


if __name__ == '__main__':
    main()
