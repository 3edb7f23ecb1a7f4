#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module verify_probe: verify's data-path and pod-container probes, each in one call."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: verify_probe
short_description: Probe a node's RDMA data path from a throwaway network namespace, or from a pod container
author: ipu-k8s contributors (!UNKNOWN)
description:
  - Removes what an interrupted run left (the container and the network namespace O(netns)), runs the probe's
    steps and removes them again whatever happened. Returns the observations of the check's rows; a failed
    step ends the probe and is returned, named, with its error, beside what was observed before it.
  - The probe address is O(address) when usable, else the highest address of the subnet, below its broadcast
    address, outside its excludes and not taken (the node, the V-IPU controller, O(taken), a neighbour on the
    RDMA interface); at most 256 are tried.
  - C(datapath) pings the V-IPU controller from a macvlan O(link) on the RDMA interface, in the namespace.
  - C(container) runs O(image) (imported from O(image_archive) when missing) in containerd's k8s.io namespace
    as O(user), unprivileged, with the /dev/infiniband device nodes, in the namespace where the macvlan CNI
    plugin made net1 from O(cni_config) with a static IPAM; inside it reads net1 and C(ulimit -l), registers
    an RDMA memory region (ibv_rc_pingpong, stopped once it prints "local address") and pings the V-IPU
    controller.
options:
  probe:
    {description: Which probe to run., type: str, choices: [datapath, container], required: true}
  network:
    {description: "The derived RDMA network (fact rdma_network of rdma_network_facts); the probes ping its
       vipu_address, the V-IPU controller.", type: dict, required: true}
  taken:
    {description: Addresses of the subnet in use elsewhere (the other nodes')., type: list, elements: str, default: []}
  address:
    {description: The pinned probe address; empty picks one., type: str, default: ""}
  netns:
    {description: Name of the network namespace and the container the probe makes., type: str, required: true}
  link:
    {description: Name of the C(datapath) probe's macvlan., type: str}
  ping_count:
    {description: Echo requests sent to the V-IPU controller; one reply passes., type: int, required: true}
  ping_timeout:
    {description: Seconds to wait for each echo reply., type: int, required: true}
  image:
    {description: Image of the C(container) probe., type: str}
  image_archive:
    {description: OCI archive on the node imported when O(image) is missing; empty imports nothing., type: str,
     default: ""}
  cni_bin_dir:
    {description: Directory of the macvlan and static CNI plugins., type: path}
  cni_config:
    {description: The RDMA network's CNI configuration (its IPAM is replaced)., type: dict}
  user:
    {description: Uid and gid the container's processes run as., type: int}
  memory_region:
    {description: Bytes of the RDMA memory region registered in the container., type: int}
attributes:
  check_mode: {support: none, description: The probe creates a namespace (verify reports SKIP in check mode).}
  diff_mode: {support: none, description: Leaves nothing behind.}
'''

EXAMPLES = r'''
- name: Ping the V-IPU controller from a macvlan on the RDMA interface
  verify_probe: {probe: datapath, network: "{{ ansible_facts['rdma_network'] }}",
                 netns: ipu-k8s-verify, link: ipuk8sverify0, ping_count: 3, ping_timeout: 3}
  register: probe
'''

RETURN = r'''
seen:
  description: "{row id: {observed, ok}} of the check's rows, and step and error when a step failed."
  returned: always
  type: dict
  sample: {datapath: {observed: "3 packets transmitted, 3 received from 10.247.208.10, macvlan on eth1 as
    10.247.209.254/23", ok: true}}
address:
  description: The probe address (empty when none could be chosen).
  returned: always
  type: str
  sample: 10.247.209.254
'''

import ipaddress
import json
import os
import re
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import in_range

TRIES = 256
PINGED = re.compile(r'\d+ packets transmitted, \d+ received')
# ibv_rc_pingpong prints this once ibv_reg_mr of its whole buffer succeeded, then waits.
REGISTERED = 'local address'
MR_TIMEOUT = 15
IPAM_STAND_IN = 'IPAM stand-in: static (Whereabouts/NVIDIA IPAM need the cluster)'


class StepFailed(Exception):
    """A step of the probe failed: args are its name and what it said."""


def probe_address(cidr, excludes=(), taken=(), pinned=''):
    """The probe's address: pinned when usable, else the highest free one from the top."""
    used = set()
    for item in taken or []:
        try:
            used.add(ipaddress.ip_address(str(item).split('/', maxsplit=1)[0]))
        except ValueError:
            continue  # not an address (a neighbour entry without one): nothing to avoid
    try:
        network = ipaddress.ip_interface(str(cidr)).network
        inside = in_range(cidr, excludes)
        if pinned:
            if inside(pinned):
                return str(pinned).strip()
        else:
            top = int(network.broadcast_address)
            for value in range(top - 1, max(top - TRIES - 1, int(network.network_address)), -1):
                candidate = ipaddress.ip_address(value)
                if candidate not in used and inside(candidate):
                    return str(candidate)
    except ValueError as exc:
        raise StepFailed('Choose the probe address', str(exc))
    raise StepFailed('Choose the probe address',
                     'No usable probe address in %s outside %s (got %r). Set verify_datapath_address to a free '
                     'address of that range.' % (cidr, ','.join(map(str, excludes or [])), str(pinned or '').strip()))


def neighbours(output):
    """The addresses of `ip -j -4 neigh show` entries."""
    try:
        return [entry.get('dst') for entry in json.loads(output or '[]')]
    except (ValueError, AttributeError) as exc:
        raise StepFailed('List the neighbours the node knows on the RDMA interface',
                         'ip -j neigh is not JSON: %s' % exc)


def pinged(output, target):
    """'N packets transmitted, M received from <target>' from ping's summary."""
    found = PINGED.search(output)
    return '%s from %s' % (found.group(0) if found else 'no ping summary', target)


def net1_seen(output, network, user):
    """The net1 row from `ip -j -4 addr show dev net1` run in the container."""
    link = (json.loads(output or '[]') or [{}])[0]
    inet = next(iter(link.get('addr_info') or []), {})
    address = inet.get('local', '')
    return {'expected': 'net1 in %s outside %s, mtu %s' % (network['cidr'], ','.join(network['excludes']),
                                                           network['mtu']),
            'observed': 'net1 %s/%s mtu %s, uid %s, %s' % (address, inet.get('prefixlen', '?'), link.get('mtu', '?'),
                                                           user, IPAM_STAND_IN),
            'ok': (str(link.get('mtu')) == str(network['mtu'])
                   and in_range(network['cidr'], network['excludes'])(address))}


def device_nodes(directory='/dev/infiniband'):
    """The RDMA device nodes (uverbsN, rdma_cm, umadN...), not the by-ibdev/ directories."""
    try:
        return sorted(entry.path for entry in os.scandir(directory) if not entry.is_dir())
    except FileNotFoundError:
        return []


def until_line(argv, marker, grace=5):
    """Run argv until it prints a line holding marker, then stop it: (that line or '', all output)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                return line.strip(), ''.join(lines)
        return '', ''.join(lines)
    finally:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


class Probe:
    """The steps of one probe on this node, each a command run with an argument list."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.netns = self.params['netns']
        self.network = self.params['network']
        self.ip = module.get_bin_path('ip', required=True)
        # ctr in the CRI namespace (the one kubelet's pods live in)
        self.ctr = [module.get_bin_path('ctr', required=True), '-n', 'k8s.io'] if self.params['probe'] == 'container' \
            else None
        self.seen = {}
        self.address = ''
        self.changed = False
        self.execs = 0

    def run(self, step, argv, ok=(0,), absent=None, **kwargs):
        """rc and stdout of argv; a failure (rc not in ok) unless its error says what it removes is absent."""
        rc, out, err = self.module.run_command(argv, expand_user_and_vars=False, **kwargs)
        if rc not in ok and not (absent and absent in err):
            raise StepFailed(step, ('%s %s' % (err, out)).strip() or 'exit status %d' % rc)
        return rc, out

    def cleanup(self):
        if self.ctr:
            rc, out = self.run('List the containers of the CRI namespace', self.ctr + ['containers', 'list', '-q'])
            if self.netns in out.split():
                self.run("Kill and delete the container's task", self.ctr + ['tasks', 'delete', '--force', self.netns],
                         absent='not found')
                self.run('Delete the container', self.ctr + ['containers', 'delete', self.netns])
        self.run("Delete the probe's network namespace", [self.ip, 'netns', 'delete', self.netns],
                 absent='No such file')

    def choose_address(self):
        rc, out = self.run('List the neighbours the node knows on the RDMA interface',
                           [self.ip, '-j', '-4', 'neigh', 'show', 'dev', self.network['interface']])
        taken = [self.network['node_address'], self.network['vipu_address']] + self.params['taken'] + neighbours(out)
        self.address = probe_address(self.network['cidr'], self.network['excludes'], taken, self.params['address'])
        return '%s/%s' % (self.address, self.network['prefix'])

    def ping(self, step, argv):
        rc, out = self.run(step, argv + ['-n', '-c', str(self.params['ping_count']), '-W',
                                         str(self.params['ping_timeout']), self.network['vipu_address']], ok=(0, 1))
        return {'observed': pinged(out, self.network['vipu_address']), 'ok': rc == 0}

    def datapath(self):
        link, ns, interface = self.params['link'], self.netns, self.network['interface']
        address = self.choose_address()
        self.run('Create the namespace', [self.ip, 'netns', 'add', ns])
        self.run('Create a macvlan on the RDMA interface inside it',
                 [self.ip, 'link', 'add', link, 'link', interface, 'netns', ns, 'type', 'macvlan', 'mode', 'bridge'])
        self.run('Give the macvlan the probe address', [self.ip, '-n', ns, 'addr', 'add', address, 'dev', link])
        self.run('Bring the macvlan up', [self.ip, '-n', ns, 'link', 'set', link, 'up'])
        seen = self.ping('Ping the V-IPU controller from the namespace', [self.ip, 'netns', 'exec', ns, 'ping'])
        seen['observed'] += ', macvlan on %s as %s' % (interface, address)
        self.seen['datapath'] = seen

    def exec_argv(self, command):
        """A process run in the container as the user (its own exec id)."""
        self.execs += 1
        user = str(self.params['user'])
        return self.ctr + ['tasks', 'exec', '--exec-id', 'probe%d' % self.execs, '--user', '%s:%s' % (user, user),
                           self.netns] + command

    def container(self):
        ns, user, image = self.netns, str(self.params['user']), self.params['image']
        rc, out = self.run('List the images of the CRI namespace', self.ctr + ['images', 'list', '-q'])
        if image not in out.splitlines() and self.params['image_archive']:
            self.run('Import the image from its archive on the node',
                     self.ctr + ['images', 'import', self.params['image_archive']])
            self.changed = True
        address = self.choose_address()
        devices = device_nodes()
        self.run("Create the container's network namespace", [self.ip, 'netns', 'add', ns])
        # What containerd's CRI does in every pod sandbox with enable_unprivileged_icmp (the
        # default since containerd 2.0): a non-root user may ping without CAP_NET_RAW.
        self.run("Let the container's users send echo requests",
                 [self.ip, 'netns', 'exec', ns, 'sysctl', '-w', 'net.ipv4.ping_group_range=0 2147483647'])
        config = dict(self.params['cni_config'], ipam={'type': 'static', 'addresses': [{'address': address}]})
        bin_dir = self.params['cni_bin_dir']
        self.run('Add net1 with the macvlan CNI plugin', [os.path.join(bin_dir, 'macvlan')], data=json.dumps(config),
                 environ_update={'CNI_COMMAND': 'ADD', 'CNI_CONTAINERID': ns, 'CNI_NETNS': '/run/netns/' + ns,
                                 'CNI_IFNAME': 'net1', 'CNI_PATH': bin_dir})
        # What kubelet asks of containerd for such a pod: the sandbox's network namespace and
        # the device plugin's device nodes; ctr adds no capability of its own. The container
        # waits while each probe is a process run in it as the user (ctr 1.6 `run` sets no
        # user: its main process drops to the user with setpriv).
        self.run('Start the container in that namespace',
                 self.ctr + ['run', '--detach', '--null-io', '--with-ns', 'network:/run/netns/' + ns]
                 + ['--device=' + path for path in devices]
                 + [image, ns, 'setpriv', '--reuid', user, '--regid', user, '--clear-groups', 'sleep', '600'])
        rc, out = self.run('Read net1 in the container',
                           self.exec_argv(['ip', '-j', '-4', 'addr', 'show', 'dev', 'net1']))
        try:
            self.seen['net1'] = net1_seen(out, self.network, user)
        except ValueError as exc:
            raise StepFailed('Read net1 in the container', 'ip -j addr is not JSON: %s' % exc)
        rc, out = self.run('Read the locked-memory limit in the container', self.exec_argv(['sh', '-c', 'ulimit -l']))
        self.seen['memlock'] = {'observed': 'ulimit -l %s as uid %s' % (out.strip(), user),
                                'ok': out.strip() == 'unlimited'}
        size = self.params['memory_region']
        line, out = until_line(self.exec_argv(['timeout', str(MR_TIMEOUT), 'stdbuf', '-oL', 'ibv_rc_pingpong',
                                               '-s', str(size)]), REGISTERED)
        if not line:
            raise StepFailed('Register an RDMA memory region in the container', out.strip() or 'no output')
        self.seen['memory_region'] = {'observed': 'ibv_reg_mr of %s MiB as uid %s on %s: registered (%s)'
                                                  % (size // 1048576, user, ', '.join(devices), line)}
        self.seen['ping'] = self.ping('Ping the V-IPU controller from net1 in the container',
                                      self.exec_argv(['ping', '-I', 'net1']))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            probe=dict(type='str', choices=['datapath', 'container'], required=True),
            network=dict(type='dict', required=True),
            taken=dict(type='list', elements='str', default=[]),
            address=dict(type='str', default=''),
            netns=dict(type='str', required=True),
            link=dict(type='str'),
            ping_count=dict(type='int', required=True),
            ping_timeout=dict(type='int', required=True),
            image=dict(type='str'),
            image_archive=dict(type='str', default=''),
            cni_bin_dir=dict(type='path'),
            cni_config=dict(type='dict'),
            user=dict(type='int'),
            memory_region=dict(type='int'),
        ),
        required_if=[('probe', 'datapath', ['link']),
                     ('probe', 'container', ['image', 'cni_bin_dir', 'cni_config', 'user', 'memory_region'])],
        supports_check_mode=False,
    )
    probe, failures = Probe(module), []
    try:
        probe.cleanup()  # what an interrupted run left
        getattr(probe, module.params['probe'])()
    except StepFailed as failed:
        failures.append(failed)
    finally:
        try:
            probe.cleanup()
        except StepFailed as failed:
            failures.append(failed)
    if failures:  # the first failure ends the probe; the row names it
        probe.seen.update(zip(('step', 'error'), failures[0].args))
    module.exit_json(changed=probe.changed, seen=probe.seen, address=probe.address)


if __name__ == '__main__':
    main()
