"""What the RDMA network's CNI configuration means, shown by the real CNI plugin: the golden
MacvlanNetwork objects (tests/render/golden/rdma_network/, the configuration the Network
Operator turns into the NetworkAttachmentDefinition's macvlan config) and a node's own CNI
file of the network of several IPU-PODs (multus_cni.conf.j2) are handed, as JSON, to
Debian's macvlan plugin (containernetworking-plugins, /usr/lib/cni; scripts/bootstrap
installs it) with CNI_COMMAND=ADD, inside network namespaces the test makes: a "node"
holding the master NIC (a veth) and a "pod". The plugin must give the pod net1 on that
master, with the MTU and mode of the configuration and the first address the IPAM may hand
out; DEL must remove it.

Whereabouts and nv-ipam are not packaged for Debian: their IPAM section is swapped for
host-local over the same range, starting after the excluded addresses (the range and
excludes of the Whereabouts config, the IPPool's subnet and exclusions for nv-ipam). The
expected values are read by hand from the golden files, not computed by the project.
"""

import ipaddress
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from test_rdma_network_pods import TWO_CONTROLLERS, TWO_PODS, node_file, pods
from testlib import require

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'rdma_network'
CNI_PATH = Path('/usr/lib/cni')

# makes network namespaces: as root (skipped otherwise, failed under CI=true)
pytestmark = pytest.mark.usefixtures('root')


@pytest.fixture
def plugin():
    require((CNI_PATH / 'macvlan').exists() and (CNI_PATH / 'host-local').exists(),
            'needs the CNI plugins: apt-get install containernetworking-plugins (scripts/bootstrap does)')
    require(shutil.which('ip'), 'needs iproute2 (`ip`)')
    return CNI_PATH / 'macvlan'


@pytest.fixture
def namespaces():
    """make(master) -> (node, pod) namespace names; the node has master (a veth, MTU 9000) up."""
    made = []

    def make(master):
        tag = uuid.uuid4().hex[:8]
        node, pod = 'ipuk8s-cni-node-%s' % tag, 'ipuk8s-cni-pod-%s' % tag
        for name in (node, pod):
            subprocess.run(['ip', 'netns', 'add', name], check=True)
            made.append(name)
        ip(node, 'link', 'add', master, 'mtu', '9000', 'type', 'veth', 'peer', 'name', 'peer0', 'mtu', '9000')
        ip(node, 'link', 'set', master, 'up')
        ip(node, 'link', 'set', 'peer0', 'up')
        return node, pod

    yield make
    for name in made:
        subprocess.run(['ip', 'netns', 'delete', name], check=False)


def ip(namespace, *args):
    return subprocess.run(['ip', '-n', namespace, *args], check=True, capture_output=True, text=True).stdout


def link(namespace, name):
    return json.loads(ip(namespace, '-d', '-j', 'link', 'show', name))[0]


def host_local_over(subnet, excluded_ranges, data_dir):
    """host-local IPAM over subnet, from the first address after the excluded ranges (pairs
    of first and last address) to the address before the next one."""
    network = ipaddress.IPv4Network(subnet)
    excluded = set()
    for first, last in excluded_ranges:
        excluded |= set(range(int(ipaddress.IPv4Address(first)), int(ipaddress.IPv4Address(last)) + 1))
    hosts = [int(a) for a in network.hosts()]
    start = next(a for a in hosts if a not in excluded)
    end = start
    while end + 1 in hosts and end + 1 not in excluded:
        end += 1
    return {'type': 'host-local', 'dataDir': str(data_dir),
            'ranges': [[{'subnet': subnet, 'rangeStart': str(ipaddress.IPv4Address(start)),
                         'rangeEnd': str(ipaddress.IPv4Address(end))}]]}


def whereabouts_ranges(ipam):
    """Excluded ranges (first, last) of a Whereabouts IPAM config's exclude CIDRs."""
    return [(str(n.network_address), str(n.broadcast_address)) for n in map(ipaddress.IPv4Network, ipam['exclude'])]


def cni(plugin, command, config, node, pod):
    env = {'CNI_COMMAND': command, 'CNI_CONTAINERID': 'ipu-k8s-test', 'CNI_NETNS': '/run/netns/%s' % pod,
           'CNI_IFNAME': 'net1', 'CNI_PATH': str(CNI_PATH), 'PATH': os.environ.get('PATH', '/usr/bin:/bin')}
    proc = subprocess.run(['ip', 'netns', 'exec', node, str(plugin)], input=json.dumps(config), env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, '%s failed: %s %s\nconfig: %s' % (command, proc.stdout, proc.stderr, config)
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def run_add_and_del(plugin, namespaces, config, tmp_path):
    """ADD the configuration, read what it made, DEL it; what ADD made."""
    node, pod = namespaces(config['master'])
    result = cni(plugin, 'ADD', config, node, pod)
    net1 = link(pod, 'net1')
    master = link(node, config['master'])
    addresses = json.loads(ip(pod, '-j', 'addr', 'show', 'net1'))[0]['addr_info']
    made = {
        'result_ips': [i['address'] for i in result.get('ips', [])],
        'addresses': ['%s/%s' % (a['local'], a['prefixlen']) for a in addresses if a['family'] == 'inet'],
        'mtu': net1['mtu'],
        'kind': net1['linkinfo']['info_kind'],
        'mode': net1['linkinfo']['info_data']['mode'],
        # the pod's net1 sits on the node's master: its parent's index is the master's
        'on_master': int(subprocess.run(['ip', 'netns', 'exec', pod, 'cat', '/sys/class/net/net1/iflink'],
                                        check=True, capture_output=True, text=True).stdout) == master['ifindex'],
    }
    cni(plugin, 'DEL', config, node, pod)
    gone = subprocess.run(['ip', '-n', pod, 'link', 'show', 'net1'], capture_output=True, text=True)
    made['deleted'] = gone.returncode != 0
    leases = [p.name for p in Path(config['ipam']['dataDir']).rglob('*') if p.is_file() and p.name[0].isdigit()]
    made['leases_after_del'] = leases
    return made


def macvlan_config(golden_name, tmp_path, ranges_of):
    """The CNI config of a golden MacvlanNetwork as the operator renders it, IPAM swapped."""
    spec = yaml.safe_load((GOLDEN / golden_name).read_text())['spec']
    ipam = json.loads(spec['ipam'])
    subnet, excluded = ranges_of(ipam)
    return {'cniVersion': '0.3.1', 'name': 'rdma-net', 'type': 'macvlan', 'master': spec['master'],
            'mode': spec['mode'], 'mtu': spec['mtu'], 'ipam': host_local_over(subnet, excluded, tmp_path / 'ipam')}


def test_the_whereabouts_macvlan_network_gives_the_pod_net1_on_the_master(plugin, namespaces, tmp_path):
    config = macvlan_config('macvlannetwork-whereabouts.yaml.golden', tmp_path,
                            lambda ipam: (ipam['range'], whereabouts_ranges(ipam)))
    made = run_add_and_del(plugin, namespaces, config, tmp_path)
    # golden: range 10.247.208.0/24, excluded .0/25, .201/32, .202/31; master enp65s0f1, MTU 1500, bridge
    assert made == {'result_ips': ['10.247.208.128/24'], 'addresses': ['10.247.208.128/24'], 'mtu': 1500,
                    'kind': 'macvlan', 'mode': 'bridge', 'on_master': True, 'deleted': True,
                    'leases_after_del': []}


def test_the_nv_ipam_macvlan_network_gives_the_pod_net1_from_its_ippool(plugin, namespaces, tmp_path):
    pool = yaml.safe_load((GOLDEN / 'ippool-nv-ipam.yaml.golden').read_text())['spec']
    config = macvlan_config('macvlannetwork-nv-ipam.yaml.golden', tmp_path,
                            lambda ipam: (pool['subnet'], [(e['startIP'], e['endIP']) for e in pool['exclusions']]))
    assert json.loads(yaml.safe_load((GOLDEN / 'macvlannetwork-nv-ipam.yaml.golden').read_text())['spec']['ipam']) == \
        {'type': 'nv-ipam', 'poolName': 'rdma-net'}
    made = run_add_and_del(plugin, namespaces, config, tmp_path)
    # golden IPPool: 10.247.208.0/24 without .0-.127 and .201-.203
    assert (made['result_ips'], made['mtu'], made['mode'], made['on_master'], made['deleted']) == \
        (['10.247.208.128/24'], 1500, 'bridge', True, True)


def test_a_nodes_own_cni_file_of_several_pods_runs_as_it_is_written(plugin, namespaces, tmp_path):
    """The file Multus reads on poplar-11 (POD pod002): only its IPAM is swapped."""
    pod002 = next(p for p in pods(TWO_PODS, TWO_CONTROLLERS, 'whereabouts') if 'poplar-11' in p['hosts'])
    config = node_file(pod002, 'whereabouts')
    ipam = config['ipam']
    config['ipam'] = host_local_over(ipam['range'], whereabouts_ranges(ipam), tmp_path / 'ipam')
    made = run_add_and_del(plugin, namespaces, config, tmp_path)
    # TWO_PODS: pod002 is 10.5.212.0/24 on enp65s0f0np0, MTU 4200; excluded .0/25 and the node's .201
    assert (made['result_ips'], made['mtu'], made['mode'], made['on_master'], made['deleted']) == \
        (['10.5.212.128/24'], 4200, 'bridge', True, True)
    assert config['master'] == 'enp65s0f0np0'


def test_the_plugin_refuses_a_master_the_node_does_not_have(plugin, namespaces, tmp_path):
    """The check above can fail: the same configuration on a node whose NIC has another name."""
    config = macvlan_config('macvlannetwork-whereabouts.yaml.golden', tmp_path,
                            lambda ipam: (ipam['range'], whereabouts_ranges(ipam)))
    node, pod = namespaces('ens9')
    with pytest.raises(AssertionError, match='ADD failed'):
        cni(plugin, 'ADD', config, node, pod)
