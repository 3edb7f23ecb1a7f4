# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What verify's checks read, turned into observations of the report's rows.

An observation is {observed, ok} (roles/verify/vars/main.yml): what a check saw, and
whether that is what its row expects. The task files run the probes; these filters read
their output (iproute2 and systemd text and JSON, ib_write_bw's report, the Kubernetes
objects k8s_info returns) so that no task file branches or loops over what it read.

verify_perftest_result parses ib_write_bw's report: the table after the line of dashes,

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      5000             0.31               0.31               0.000599

(the bandwidth unit is in the heading: Gb/sec with --report_gbits, MB/sec without).
verify_network_status_ip reads the address Multus gave a pod's interface from the pod's
k8s.v1.cni.cncf.io/network-status annotation.
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError

# The address rule is module_utils' (verify_probe runs it on the nodes).
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import in_range

TERMINAL = ('Succeeded', 'Completed', 'Failed')
# One line each (blanks are spaces and tabs, never a line break).
HEADING = re.compile(r'^[ \t]*#bytes[ \t]+#iterations[ \t]+BW peak\[(?P<unit>[^\]]+)\][ \t]+'
                     r'BW average\[(?P<unit2>[^\]]+)\][ \t]+MsgRate\[(?P<rate_unit>[^\]]+)\]', re.MULTILINE)
ROW = re.compile(r'^[ \t]*(?P<bytes>\d+)[ \t]+(?P<iterations>\d+)[ \t]+(?P<peak>[\d.]+)[ \t]+(?P<average>[\d.]+)'
                 r'[ \t]+(?P<rate>[\d.]+)[ \t]*$', re.MULTILINE)
NETWORK_STATUS = 'k8s.v1.cni.cncf.io/network-status'


def _json(text, what):
    try:
        return json.loads(text or '[]')
    except ValueError as exc:
        raise AnsibleFilterError('%s is not JSON: %s' % (what, exc)) from exc


def _in_network(address, network):
    """Whether address is in the network's cidr and outside its excludes; a network without a
    CIDR, or with one that is not a CIDR, holds no address (its row FAILs, the report goes on)."""
    try:
        return bool(network) and in_range(network.get('cidr'), network.get('excludes'))(address)
    except ValueError:
        return False


def _sections(output):
    """A reading script's output cut at its '# <name>' lines: {'': what came first, name: what followed}."""
    parts = re.split(r'^# (.*)\n?', str(output or ''), flags=re.MULTILINE)
    return dict(zip([''] + parts[1::2], parts[0::2]))


def verify_rdma_links(output):
    """`rdma -j link show` (the reading's first part) as [{device, port, state, netdev}] (netdev '' when none)."""
    return [{'device': str(link.get('ifname', '?')), 'port': link.get('port', '?'),
             'state': link.get('state', '?'), 'netdev': link.get('netdev', '')}
            for link in _json(_sections(output)[''].strip(), 'rdma -j link show')]


def _ib_devices(output):
    """The reading's /sys/class/infiniband part: {device: whether it is Soft-RoCE (has a parent)}."""
    return {line.split()[0]: line.split()[1:] == ['soft-roce']
            for line in _sections(output).get('/sys/class/infiniband', '').splitlines() if line.strip()}


def verify_rdma_device(output, interface):
    """The RDMA device whose link rides on the network interface, '' when none does."""
    return next((link['device'] for link in verify_rdma_links(output) if link['netdev'] == interface and interface), '')


def verify_rdma_device_seen(output):
    """The RDMA device row: an ACTIVE link, and /sys/class/infiniband not empty."""
    links = verify_rdma_links(output)
    ib_devices = list(_ib_devices(output))
    seen = ', '.join(' '.join(('%(device)s/%(port)s %(state)s %(netdev)s' % link).split()) for link in links)
    return {'observed': 'rdma link: %s; /sys/class/infiniband: %s' % (seen or 'none', ', '.join(ib_devices) or 'empty'),
            'ok': any(link['state'] == 'ACTIVE' for link in links) and bool(ib_devices)}


# Measured on the lab (kernel 6.1.0-50-amd64): from a macvlan on eth1 in its own network
# namespace (GID index 2 of rxe0), `ibv_rc_pingpong -d rxe0 -g 2 -n 5 10.247.208.10`.
SOFT_ROCE = ('Soft-RoCE cannot carry it: measured on the lab (Debian 12, kernel 6.1), RC traffic from a macvlan\'s '
             'GID in another network namespace fails with "Failed status local QP operation error (2)" after the '
             'address exchange over IP passed, while the same verbs from the host namespace pass; ConnectX NICs '
             'carry it (the cluster check "RDMA traffic between two pods", -e verify_rdma_perftest=true, proves it '
             'at a site)')
POD_TO_POD = 'proven pod to pod by the cluster check "RDMA traffic between two pods" (-e verify_rdma_perftest=true)'


def verify_container_rdma_traffic_seen(rdma, output):
    """Why pod RDMA traffic from net1 is not measured on the node: {skip: reason}.

    rdma: the derived RDMA network ({} when none); output: the RDMA device check's reading
    (Soft-RoCE devices, rdma_rxe, name their network device in a sysfs "parent" attribute).
    """
    if not rdma:
        return {'skip': 'skipped: no derived RDMA network'}
    device = verify_rdma_device(output, rdma['interface'])
    where = (device or 'none', rdma['interface'])
    if _ib_devices(output).get(device):
        return {'skip': 'skipped: %s is Soft-RoCE on %s. %s' % (where + (SOFT_ROCE,))}
    return {'skip': 'skipped on the node (%s on %s): %s' % (where + (POD_TO_POD,))}


def verify_memlock_seen(output):
    """Both memlock rows from the memlock check's reading: `systemctl show` of the candidate
    units (Id, LoadState, LimitMEMLOCK, MainPID; the first one installed runs the containers,
    else the last), then '# /proc/<pid>/limits' and that file for each running one."""
    sections = _sections(output)
    units = [dict(line.split('=', 1) for line in block.splitlines() if '=' in line)
             for block in sections[''].split('\n\n') if block.strip()] or [{}]
    unit = next((unit for unit in units if unit.get('LoadState') == 'loaded'), units[-1])
    pid = unit.get('MainPID', '0').strip() or '0'
    found = re.search(r'^Max locked memory\s+(\S+)\s+(\S+)', sections.get('/proc/%s/limits' % pid, ''), re.MULTILINE)
    soft, hard = found.groups() if found else ('?', '?')
    memlock = unit.get('LimitMEMLOCK', '').strip()
    return {'systemd': {'observed': memlock, 'ok': memlock == 'infinity'},
            'process': {'observed': ('soft %s, hard %s (pid %s)' % (soft, hard, pid)) if pid != '0'
                        else '%s is not running (MainPID 0)' % unit.get('Id', '?'),
                        'ok': (soft, hard) == ('unlimited', 'unlimited')}}


def verify_test_pod_seen(output, network, rdma_interface, cluster_interface, user):
    """The test pod's address, routes and memlock rows from its one reading in the pod:
    `ip -j addr`, '# routes' and `ip -j route`, '# identity' and 'uid N, ulimit -l X';
    network is the derived {cidr, excludes}."""
    sections = _sections(output)
    links = _json(sections[''].strip(), 'ip -j addr')
    routes = _json(sections.get('routes', '').strip(), 'ip -j route')
    identity = str(sections.get('identity') or '').strip()
    cidr = network.get('cidr', '?')
    inet = next((info['local'] for link in links if link.get('ifname') == rdma_interface
                 for info in link.get('addr_info') or [] if info.get('family') == 'inet'), '')

    def devices(destination):
        return sorted({route.get('dev', '?') for route in routes if route.get('dst') == destination})

    return {
        'address': {'expected': 'inet in %s, outside %s' % (cidr, ','.join(network.get('excludes') or [])),
                    'observed': '%s %s' % (rdma_interface, inet) if inet else 'no IPv4 address on %s (interfaces: %s)'
                                % (rdma_interface, ', '.join(link.get('ifname', '?') for link in links)),
                    'ok': _in_network(inet, network)},
        'routes': {'expected': '%s dev %s, default dev %s' % (cidr, rdma_interface, cluster_interface),
                   'observed': ', '.join('%s dev %s' % (route.get('dst'), route.get('dev', '?')) for route in routes),
                   'ok': devices(cidr) == [rdma_interface] and devices('default') == [cluster_interface]},
        'memlock': {'observed': identity, 'ok': identity == 'uid %s, ulimit -l unlimited' % user},
    }


def node_name(host, hostvars):
    """The Kubernetes name of an inventory host: ipu_k8s_node_name, default the host's name."""
    host_vars = hostvars[host] if host in hostvars else {}
    return str(host_vars['ipu_k8s_node_name'] if 'ipu_k8s_node_name' in host_vars else host)


def verify_perftest_nodes(pinned, ipu_hosts, hostvars):
    """The bandwidth check's server and client node: the pinned list as given, else the
    Kubernetes names of the first two IPU nodes."""
    return [str(name) for name in pinned] if pinned else [node_name(host, hostvars) for host in list(ipu_hosts or [])[:2]]


def verify_nodes_seen(nodes, cluster_hosts, ipu_hosts, hostvars, resource):
    """The nodes Ready row, and one row per IPU node for the resource it has allocatable.

    nodes: the Node objects; cluster_hosts, ipu_hosts: the inventory's k8s_cluster and
    ipu_nodes hosts.
    """
    ready, allocatable = {}, {}
    for node in nodes or []:
        name = node['metadata']['name']
        status = node.get('status') or {}
        condition = next((c for c in status.get('conditions') or [] if c.get('type') == 'Ready'), {})
        ready[name] = 'Ready' if condition.get('status') == 'True' else 'NotReady'
        allocatable[name] = status.get('allocatable') or {}
    rows = []
    for host in ipu_hosts or []:
        name = node_name(host, hostvars)
        amount = str(allocatable.get(name, {}).get(resource, '0'))
        rows.append({'host': host, 'ok': amount.isdigit() and int(amount) > 0,
                     'observed': '%s on node %s' % (amount, name) if name in allocatable else 'no node named %s' % name})
    return {'ready': {'expected': '%d nodes, all Ready' % len(cluster_hosts or []),
                      'observed': ', '.join('%s=%s' % item for item in ready.items()) or 'no nodes',
                      'ok': len(ready) >= len(cluster_hosts or []) and set(ready.values()) <= {'Ready'}},
            'resource': rows}


def verify_ipujob_done(ipujobs):
    """The terminal conditions (Succeeded, Completed, Failed) that are True on the IPUJobs."""
    return list(dict.fromkeys(condition['type'] for job in ipujobs or []
                              for condition in (job.get('status') or {}).get('conditions') or []
                              if condition.get('status') == 'True' and condition.get('type') in TERMINAL))


def verify_macvlan_seen(comparison, rdma, macvlans, error, name):
    """The "<network> matches the node" row: comparison (filter rdma_network_comparison of
    the derived network with the applied one), or why there is nothing to compare."""
    if not rdma:
        return {'observed': 'no derived RDMA network to compare (see the RDMA network derived row)', 'ok': False}
    if error:
        return {'observed': 'reading the applied network %s failed (see the read row): %s; playbooks/rdma_network.yml '
                            'makes it, and the CNI file of each node of several IPU-PODs' % (name, error), 'ok': False}
    if not macvlans:
        return {'observed': "neither MacvlanNetwork %s nor a NetworkAttachmentDefinition without config and this "
                            "node's CNI file found: run playbooks/rdma_network.yml" % name, 'ok': False}
    return {'expected': comparison['expected'], 'observed': comparison['observed'],
            'ok': comparison['status'] == 'PASS'}


def verify_nad_config_seen(macvlans, nads, name, namespace):
    """Whether a NetworkAttachmentDefinition's spec.config overrides the nodes' CNI files."""
    if macvlans:
        return {'observed': 'MacvlanNetwork %s renders it (one IPU-POD)' % name}
    if not nads:
        return {'observed': 'no NetworkAttachmentDefinition %s/%s: run playbooks/rdma_network.yml' % (namespace, name),
                'ok': False}
    if (nads[0].get('spec') or {}).get('config'):
        return {'observed': "spec.config is set: Multus uses it on every node instead of each node's own CNI file; "
                            'run playbooks/rdma_network.yml, which replaces it', 'ok': False}
    return {'observed': 'no spec.config'}


def verify_pool_block_seen(pools, node, ipam):
    """Whether the node has its block in the NVIDIA IPAM pool the applied network names:
    nvidia-k8s-ipam's controller writes one per node it selected into the IPPool's
    status.allocations, and the node daemon gives pods addresses only from it
    (tests/schemas/nv_ipam/README.md)."""
    if ipam != 'nv-ipam':
        return {'skip': 'the applied network does not use NVIDIA IPAM (%s)' % (ipam or 'none read')}
    if not pools:
        return {'observed': 'no IPPool named by the applied network: run playbooks/rdma_network.yml', 'ok': False}
    pool = pools[0]
    name = '%s/%s' % (pool['metadata'].get('namespace', ''), pool['metadata']['name'])
    for allocation in (pool.get('status') or {}).get('allocations') or []:
        if allocation.get('nodeName') == node:
            return {'observed': 'block %s-%s in IPPool %s' % (allocation.get('startIP'), allocation.get('endIP'), name)}
    return {'observed': 'no block for node %s in IPPool %s status.allocations: pods there get no net1; the NVIDIA '
                        "IPAM controller's events say why (kubectl describe ippool -n %s %s: InvalidSpec, "
                        'NoFreeRanges)' % (node, name, pool['metadata'].get('namespace', ''), pool['metadata']['name']),
            'ok': False}


def verify_perftest_result(output):
    """The first result row of an ib_write_bw (or ib_read_bw, ib_send_bw) report.

    Returns {bytes, iterations, bw_peak, bw_average, bw_unit, msg_rate, msg_rate_unit};
    refuses output without a result row (the run failed: its last lines say why).
    """
    text = str(output or '')
    heading = HEADING.search(text)
    row = heading and ROW.search(text, heading.end())
    if row:
        return {'bytes': int(row['bytes']), 'iterations': int(row['iterations']), 'bw_peak': float(row['peak']),
                'bw_average': float(row['average']), 'bw_unit': heading['unit2'], 'msg_rate': float(row['rate']),
                'msg_rate_unit': heading['rate_unit']}
    tail = ' | '.join(line.strip() for line in text.splitlines()[-5:] if line.strip()) or 'no output'
    raise AnsibleFilterError('no ib_write_bw result row (#bytes #iterations BW peak ...) in the output: %s' % tail)


def verify_network_status_ip(annotations, interface):
    """The first address Multus reported for the pod's interface, '' when none."""
    networks = _json((annotations or {}).get(NETWORK_STATUS), NETWORK_STATUS)
    for network in networks if isinstance(networks, list) else []:
        if isinstance(network, dict) and network.get('interface') == interface and network.get('ips'):
            return str(network['ips'][0])
    return ''


class FilterModule:
    """Readers of what verify's checks saw."""

    def filters(self):
        return {
            'verify_perftest_result': verify_perftest_result,
            'verify_network_status_ip': verify_network_status_ip,
            'verify_rdma_device': verify_rdma_device,
            'verify_rdma_device_seen': verify_rdma_device_seen,
            'verify_container_rdma_traffic_seen': verify_container_rdma_traffic_seen,
            'verify_memlock_seen': verify_memlock_seen,
            'verify_test_pod_seen': verify_test_pod_seen,
            'verify_nodes_seen': verify_nodes_seen,
            'verify_perftest_nodes': verify_perftest_nodes,
            'verify_ipujob_done': verify_ipujob_done,
            'verify_macvlan_seen': verify_macvlan_seen,
            'verify_nad_config_seen': verify_nad_config_seen,
            'verify_pool_block_seen': verify_pool_block_seen,
        }
