"""rdma_network_facts on several IPU nodes (one network namespace each), then the site model
(filter ipu_k8s_site_model) on a control-plane host over their facts, in one ansible-playbook
run: agreement with different MTUs, and refusal when an interface name differs."""

import stat

import pytest

from netns_lab import PYTHON, local_host, run_playbook


def python_in(namespace, directory):
    """An interpreter path that runs the venv's python inside namespace, so a host of the
    inventory lives in its own network namespace while the playbook runs elsewhere."""
    wrapper = directory / ('python-in-%s' % namespace.name)
    wrapper.write_text('#!/bin/sh\nexec ip netns exec %s %s "$@"\n' % (namespace.name, PYTHON))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


@pytest.fixture(scope='module')
def consensus_run(netns_factory, tmp_path_factory):
    workdir = tmp_path_factory.mktemp('consensus')
    nodes = {}
    for host, interface, mtu, address in (('node-a', 'rdma0', 9000, '10.247.208.21/23'),
                                          ('node-b', 'rdma0', 4200, '10.247.208.22/23'),
                                          ('node-c', 'ens2f0', 9000, '10.247.208.23/23')):
        namespace = netns_factory(host)
        namespace.ip('link add %s mtu %d type veth peer name peer0 mtu %d' % (interface, mtu, mtu),
                     'addr add %s dev %s' % (address, interface), 'link set %s up' % interface, 'link set peer0 up')
        nodes[host] = namespace
    hosts = {}
    for host, namespace in nodes.items():
        hosts[host] = local_host(vipu_address='10.247.208.5:8090')
        if host != 'node-a':
            hosts[host]['ansible_python_interpreter'] = python_in(namespace, workdir)
    hosts['cp-agree'] = local_host(consensus_group='agree_nodes')
    hosts['cp-disagree'] = local_host(consensus_group='disagree_nodes')
    inventory = {'all': {'hosts': hosts, 'children': {
        'ipu_nodes': {'hosts': {'node-a': None, 'node-b': None, 'node-c': None}},
        'agree_nodes': {'hosts': {'node-a': None, 'node-b': None}},
        'disagree_nodes': {'hosts': {'node-a': None, 'node-c': None}},
        'control_plane': {'hosts': {'cp-agree': None, 'cp-disagree': None}},
    }}}
    # The playbook itself runs in node-a's namespace (a control plane that is also an IPU node).
    return run_playbook(nodes['node-a'], 'consensus.yml', inventory, workdir)


def test_each_node_derived_its_own_network(consensus_run):
    found = dict((h, consensus_run.result('Run rdma_network_facts', h)['rdma_network']) for h in ('node-a', 'node-b', 'node-c'))
    assert [(f['interface'], f['node_address'], f['mtu']) for f in found.values()] == [
        ('rdma0', '10.247.208.21', 9000), ('rdma0', '10.247.208.22', 4200), ('ens2f0', '10.247.208.23', 9000)]


def test_agreeing_nodes_give_one_network_with_the_smallest_mtu(consensus_run):
    result = consensus_run.result("Build the site model from the nodes' facts", 'cp-agree')
    assert not result.get('failed'), result.get('msg')
    assert result['ansible_facts']['site']['rdma_network'] == {'interface': 'rdma0', 'cidr': '10.247.208.0/23', 'prefix': 23, 'mtu': 4200,
                                      'excludes': ['10.247.208.0/25'], 'vipu_addresses': ['10.247.208.5']}


def test_mtu_difference_is_warned_about(consensus_run):
    assert "RDMA interface MTUs differ (4200 on node-b; 9000 on node-a): the MacvlanNetwork uses the smallest, 4200" \
        in ' '.join(consensus_run.stdout.split())


def test_nodes_with_different_interface_names_are_refused_naming_them(consensus_run):
    result = consensus_run.result("Build the site model from the nodes' facts", 'cp-disagree')
    assert result.get('failed')
    assert 'the RDMA interface differs: ens2f0 on node-c; rdma0 on node-a' in result['msg']
