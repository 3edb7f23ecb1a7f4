"""Two IPU-PODs in network namespaces, through the real playbooks/rdma_network.yml facts
play and the rdma_network role: pod001 (a /23 on ens1f0np0, MTU 9000, nodes node-a and
node-b) and pod002 (a /24 on enp65s0f0np0, MTU 4200, node-c). Each node derives its own
network, the control plane groups them by V-IPU controller, and each node gets the CNI
file Multus reads for the one network name, from its own POD; re-running changes nothing,
in check mode too. A node that disagrees with its own POD is refused before anything is
written.

Each node's modules run in its namespace and in a private mount namespace where
rdma_network_multus_conf_dir (a directory of the test) is that node's own directory, so the
three "nodes" on this one machine each have their own confDir."""

import ipaddress
import json
import stat

import pytest

from netns_lab import PYTHON, local_host, run_playbook

NETWORK = 'rdma-net'
CONTROLLERS = [{'name': 'pod001', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001'},
               {'name': 'pod002', 'host': '10.5.212.116', 'port': 8091, 'label': 'vipu-ctrl=pod002'}]
NODES = {
    # host: (controller, interface, mtu, address)
    'node-a': ('pod001', 'ens1f0np0', 9000, '10.247.208.21/23'),
    'node-b': ('pod001', 'ens1f0np0', 9000, '10.247.209.22/23'),
    'node-c': ('pod002', 'enp65s0f0np0', 4200, '10.5.212.20/24'),
    # Disagrees with its POD (pod001): another interface name.
    'node-x': ('pod001', 'ens2f0', 9000, '10.247.208.30/23'),
}


def node_python(namespace, confdir, own_dir, directory):
    """An interpreter that runs the venv's python inside namespace, with confdir replaced by
    the node's own directory in a private mount namespace."""
    wrapper = directory / ('python-in-%s' % namespace.name)
    wrapper.write_text('#!/bin/sh\nexec unshare -m --propagation private sh -c '
                       '\'mount --bind "$0" "$1" && shift && exec ip netns exec %s %s "$@"\' %s %s "$@"\n'
                       % (namespace.name, PYTHON, own_dir, confdir))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def site(netns_factory, workdir, hosts):
    confdir = workdir / 'multus-net.d'
    confdir.mkdir()
    inventory_hosts, own = {}, {}
    for host in hosts:
        pod, interface, mtu, address = NODES[host]
        namespace = netns_factory(host)
        namespace.ip('link add %s mtu %d type veth peer name peer0 mtu %d' % (interface, mtu, mtu),
                     'addr add %s dev %s' % (address, interface), 'link set %s up' % interface,
                     'link set peer0 up')
        own[host] = workdir / ('confdir-%s' % host)
        own[host].mkdir()
        inventory_hosts[host] = local_host(ipu_k8s_vipu_controller=pod, ansible_become_method='su')
        inventory_hosts[host]['ansible_python_interpreter'] = node_python(namespace, confdir, own[host], workdir)
    inventory_hosts['cp'] = local_host(test_workdir=str(workdir))
    inventory = {'all': {
        'vars': {'ipu_k8s_vipu_controllers': CONTROLLERS, 'ipu_k8s_rdma_network_name': NETWORK,
                 'rdma_network_multus_conf_dir': str(confdir), 'ipu_k8s_kubernetes_version': '1.33.4',
                 # What network_operator's settings check leaves for 1.33's chart row (25.7.0); no
                 # k8s_cluster group here, so no settings play runs.
                 'network_operator_ipam': 'whereabouts'},
        'hosts': inventory_hosts,
        'children': {'ipu_nodes': {'hosts': dict((h, None) for h in hosts)},
                     'control_plane': {'hosts': {'cp': None}}}}}
    run = run_playbook(netns_factory('cp'), 'rdma_pods.yml', inventory, workdir,
                       env={'ANSIBLE_SKIP_TAGS': 'rdma_network_apply'})
    return run, own, confdir


@pytest.fixture(scope='module')
def two_pods(netns_factory, tmp_path_factory):
    return site(netns_factory, tmp_path_factory.mktemp('rdma-pods'), ['node-a', 'node-b', 'node-c'])


@pytest.fixture(scope='module')
def disagreeing(netns_factory, tmp_path_factory):
    return site(netns_factory, tmp_path_factory.mktemp('rdma-pods-x'), ['node-a', 'node-x', 'node-c'])


def play_changes(run, play_name):
    """{task name: changed} of the play named play_name (every host and loop item)."""
    found = {}
    play = next(p for p in run.data['plays'] if p['play']['name'] == play_name)
    for entry in play['tasks']:
        for result in entry['hosts'].values():
            changed = bool(result.get('changed')) or any(r.get('changed') for r in result.get('results', []))
            found[entry['task']['name']] = found.get(entry['task']['name'], False) or changed
    return found


def written_files(run, play_name):
    """How many node files the play's template task changed (one loop item per IPU node)."""
    play = next(p for p in run.data['plays'] if p['play']['name'] == play_name)
    return sum(bool(item.get('changed')) for entry in play['tasks']
               if entry['task']['name'].startswith('rdma_network : Write the CNI configuration')
               for result in entry['hosts'].values() for item in result.get('results', []))


def failures(run):
    return [(entry['task']['name'], host, result.get('msg'), result.get('module_stderr'))
            for play in run.data['plays'] for entry in play['tasks']
            for host, result in entry['hosts'].items() if result.get('failed')]


def test_each_node_derived_its_own_pods_network(two_pods):
    run, _own, _confdir = two_pods
    assert failures(run) == []
    found = dict((h, run.result('rdma_network : Derive the RDMA interface, subnet, MTU and excluded range', h)['ansible_facts']
                  ['rdma_network']) for h in ('node-a', 'node-b', 'node-c'))
    assert [(f['interface'], f['cidr'], f['mtu']) for f in found.values()] == [
        ('ens1f0np0', '10.247.208.0/23', 9000), ('ens1f0np0', '10.247.208.0/23', 9000),
        ('enp65s0f0np0', '10.5.212.0/24', 4200)]


def test_nodes_are_grouped_by_their_v_ipu_controller(two_pods):
    run, _own, _confdir = two_pods
    assert not any(s.get('failures') for s in run.stats.values()), run.stdout[-3000:]
    pods = json.loads((run_workdir(two_pods) / 'pods.json').read_text())
    assert [(p['name'], p['hosts'], p['label'], p['vipu_host'], p['vipu_port'], p['rdma_network']['cidr'],
             p['rdma_network']['interface'], p['rdma_network']['mtu']) for p in pods] == [
        ('pod001', ['node-a', 'node-b'], 'vipu-ctrl=pod001', '10.247.208.5', 8090, '10.247.208.0/23', 'ens1f0np0',
         9000),
        ('pod002', ['node-c'], 'vipu-ctrl=pod002', '10.5.212.116', 8091, '10.5.212.0/24', 'enp65s0f0np0', 4200)]


def run_workdir(fixture):
    return fixture[2].parent


def test_each_node_has_its_own_pods_cni_file(two_pods):
    _run, own, confdir = two_pods
    # Nothing landed in the shared path itself: each node wrote into its own confDir.
    assert list(confdir.iterdir()) == []
    configs = dict((h, json.loads((own[h] / ('%s.conf' % NETWORK)).read_text())) for h in own)
    for host, config in configs.items():
        _pod, interface, mtu, address = NODES[host]
        assert (config['name'], config['type'], config['master'], config['mtu']) == (NETWORK, 'macvlan', interface, mtu)
        node_address = ipaddress.IPv4Interface(address)
        assert config['ipam']['range'] == str(node_address.network)
        excluded = [ipaddress.IPv4Network(e) for e in config['ipam']['exclude']]
        assert any(node_address.ip in e for e in excluded), 'the node address is not excluded'
        assert stat.S_IMODE((own[host] / ('%s.conf' % NETWORK)).stat().st_mode) == 0o644
    assert configs['node-a'] == configs['node-b']
    # pod002's V-IPU controller (10.5.212.116) and node-c lie in its first /25 already.
    assert configs['node-c']['ipam']['exclude'] == ['10.5.212.0/25']
    assert configs['node-a']['ipam']['exclude'] == ['10.247.208.0/25', '10.247.209.22/32']


def test_the_files_are_written_once_then_left_alone_in_check_mode_too(two_pods):
    run, _own, _confdir = two_pods
    first = play_changes(run, "The role's site model and the per-node CNI files")
    again = play_changes(run, 'Again, nothing left to change')
    check = play_changes(run, 'In check mode, nothing to change either')
    assert written_files(run, "The role's site model and the per-node CNI files") == 3, first
    assert again and not any(again.values()), again
    assert check and not any(check.values()), check


def test_a_node_disagreeing_with_its_pod_is_refused_before_anything_is_written(disagreeing):
    run, own, confdir = disagreeing
    result = run.result("ipu_k8s : Build the site model from the IPU nodes' facts", 'cp')
    assert result.get('failed')
    assert ("V-IPU controller 'pod001' (IPU-POD of node-a, node-x)" in result['msg']
            and 'the RDMA interface differs: ens1f0np0 on node-a; ens2f0 on node-x' in result['msg']), result['msg']
    assert all(s.get('changed', 0) == 0 for s in run.stats.values()), run.stats
    assert [list(d.iterdir()) for d in own.values()] == [[], [], []] and list(confdir.iterdir()) == []


def test_verify_reads_back_each_nodes_own_pods_network(two_pods):
    run, _own, _confdir = two_pods
    for host in ('node-a', 'node-b', 'node-c'):
        _pod, interface, mtu, address = NODES[host]
        read = run.result('rdma_network : Keep it as the configuration Multus reads', host)['ansible_facts']
        config = read['rdma_network_node_cni']
        assert (config['master'], config['mtu'], config['ipam']['range']) == (
            interface, mtu, str(ipaddress.IPv4Interface(address).network))
