"""Adding a node on Day 2 against the real kube-apiserver of the API tier (its own server with
a hollow node for cp1, poplar-01, poplar-02 and the added poplar-03): the site runs the RDMA
network on an NVIDIA IPAM row (network_operator_ipam=nv-ipam, as tests/api/test_ippool_oracle.py)
and the IPU Operator for poplar-01 and poplar-02; then poplar-03 is added to the inventory
(workers and ipu_nodes) and playbooks/scale.yml runs with -e scale_hosts=poplar-03.

Real here: the IPPool, the MacvlanNetwork, the Nodes, their labels and managedFields, the
facts of every IPU node (the rdma_network_facts module in each node's own namespace).
Stand-ins, and only these: poplar-03's hollow kubelet, started with the server, stands for
the node that scale.yml's nodes and join plays prepare and join (those plays install packages,
write /etc and run kubeadm join on the host: skipped here by their tags, preflight with them;
which hosts they run on is Ansible's own answer, `--list-hosts`, in the first test). The
Network Operator's answer to the MacvlanNetwork and nvidia-k8s-ipam's controller are played
by a thread (api_client.play_macvlan_operator; tests/nv_ipam_upstream.controller_allocations
writes the blocks of the nodes the pool's selector matches, as the controller does).

The tests build on each other, in a site's order: read the first failure.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from api_client import play_macvlan_operator
from api_cluster import Cluster
from api_site import CONTROL_PLANE, IPU_NODES, NODES, ROOT, VIPU_LABEL, nv_ipam_operator_state
from nv_ipam_upstream import controller_allocations


NEW = 'poplar-03'
NETWORK = 'rdma-net'
NAMESPACE = 'network-operator'
IPPOOL = 'nv-ipam.nvidia.com/v1alpha1'
MACVLAN = 'mellanox.com/v1alpha1'
NV_IPAM = {'network_operator_ipam': 'nv-ipam'}
# The node and join plays change the host (packages, /etc, kubeadm join): not here.
SKIP_NODE_PLAYS = ('--skip-tags', 'preflight,nodes,cluster')


@pytest.fixture(scope='module')
def cluster(k8s_bin):
    """The module's server, with a hollow node for the host added later (its stand-in join)."""
    made = Cluster(k8s_bin, NODES + [NEW])
    try:
        made.start()
        yield made
    finally:
        made.remove()


class Operators(threading.Thread):
    """The Network Operator's answer to the MacvlanNetwork and nvidia-k8s-ipam's controller,
    while a run goes on: the blocks of every node the IPPool selects."""

    def __init__(self, api, site):
        super().__init__(daemon=True)
        self.api, self.site, self.stop = api, site, threading.Event()

    def run(self):
        while not self.stop.wait(1):
            macvlan = self.api.get(MACVLAN, 'MacvlanNetwork', NETWORK)
            if macvlan and (macvlan.get('status') or {}).get('state') != 'ready':
                play_macvlan_operator(self.api, NETWORK, 'default', self.site.cni_dir)
            pool = self.api.get(IPPOOL, 'IPPool', NETWORK, NAMESPACE)
            if pool:
                allocations = controller_allocations(pool, NODES + [NEW])
                if (pool.get('status') or {}).get('allocations') != allocations:
                    self.api.resource(IPPOOL, 'IPPool').status.patch(
                        body={'status': {'allocations': allocations}}, name=NETWORK, namespace=NAMESPACE,
                        content_type='application/merge-patch+json')

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.join(10)


@pytest.fixture(scope='module')
def converged(site, api):
    """The site before the new node: the RDMA network and the IPU Operator for poplar-01 and -02."""
    nv_ipam_operator_state(site, api, NAMESPACE)
    with Operators(api, site):
        site.play('rdma_network.yml', extra_vars=NV_IPAM).assert_ok()
    site.play('ipu_operator.yml').assert_ok()
    assert _pool_nodes(api) == IPU_NODES
    return site


def _pool_nodes(api) -> list:
    """The node each term of the IPPool's nodeSelector names (one term per node)."""
    terms = api.get(IPPOOL, 'IPPool', NETWORK, NAMESPACE)['spec']['nodeSelector']['nodeSelectorTerms']
    return [value for term in terms for field in term['matchFields'] for value in field['values']]


def _labelled(api) -> list:
    key, value = VIPU_LABEL.split('=')
    return sorted(n for n, labels in api.node_labels().items() if labels.get(key) == value)


def _old_nodes(api) -> dict:
    """What anyone but the node's own kubelet wrote on the nodes that were there before:
    labels, annotations, spec and every managedFields entry that is not a status report.
    (Their resourceVersion moves without us: the hollow kubelet reports its status every
    few minutes, seen during this test's first runs.)"""
    nodes = {}
    for node in api.core.list_node().items:
        if node.metadata.name in NODES:
            raw = api.get('v1', 'Node', node.metadata.name)
            managed = sorted(json.dumps(entry, sort_keys=True) for entry in raw['metadata'].get('managedFields') or []
                             if 'f:status' not in (entry.get('fieldsV1') or {}))
            nodes[node.metadata.name] = (raw['metadata'].get('labels'), raw['metadata'].get('annotations'),
                                         raw.get('spec'), managed)
    return nodes


def test_only_the_added_host_is_prepared_and_joined():
    """Ansible's own list of each play's hosts: the preflight, node and join plays run on
    the added host alone; the RDMA network and the labels from the first control-plane host."""
    proc = subprocess.run([str(ROOT / '.venv' / 'bin' / 'ansible-playbook'), '-i', 'inventories/gcore/hosts.yml',
                           'playbooks/scale.yml', '--list-hosts', '-e', 'scale_hosts=poplar-03'],
                          cwd=str(ROOT), capture_output=True, text=True, check=True, timeout=120)
    plays = {}
    for block in proc.stdout.split('\n\n'):
        lines = [line.strip() for line in block.strip().splitlines()]
        if lines and lines[0].startswith('play #'):
            plays[lines[0].split(': ', 1)[1].split('\t')[0]] = sorted(lines[3:])
    assert plays['Scale - preflight on the hosts to add'] == ['poplar-03'], plays
    assert plays['Scale - prepare the hosts to add'] == ['poplar-03'], plays
    assert plays['Scale - join the hosts to add'] == ['poplar-03'], plays
    assert plays['RDMA network - apply the MacvlanNetwork'] == ['poplar-01'], plays
    assert plays['IPU operator'] == ['poplar-01'], plays


# The old path: the apply and labelling plays had no host (ansible-playbook said "skipping: no
# hosts matched" and exited 0), the node stayed out. Each playbook that runs those plays refuses
# such a --limit in its first play, naming itself and scale.yml.
@pytest.mark.parametrize('playbook, named', [('../site.yml', 'site.yml'),
                                             ('rdma_network.yml', 'playbooks/rdma_network.yml'),
                                             ('ipu_operator.yml', 'playbooks/ipu_operator.yml'),
                                             ('upgrade.yml', 'playbooks/upgrade.yml')])
def test_a_limit_to_the_new_node_is_refused_naming_scale_yml(converged, api, playbook, named):
    site = converged
    run = site.play(playbook, '--limit', NEW, *(('--tags', 'rdma_network,ipu_operator') if named == 'site.yml' else ()),
                    extra_vars=NV_IPAM, inventory=site.with_ipu_node(NEW))
    assert run.rc != 0, run.explain()
    messages = ' '.join(run.failures())
    assert (': %s runs on the whole cluster, and --limit %s leaves out cp1, poplar-01, poplar-02:' % (named, NEW)
            in messages), messages
    assert 'playbooks/scale.yml -e scale_hosts=%s' % NEW in messages, messages
    # The refusal is the run's first task: no fact was derived, nothing was applied.
    assert not run.results('Derive the RDMA interface, subnet, MTU and excluded range'), run.explain()
    assert NEW not in _labelled(api) and NEW not in _pool_nodes(api)


def test_scale_refuses_a_limit_and_a_control_plane_host_before_anything_changes(converged, api):
    site = converged
    before = _old_nodes(api)
    run = site.play('scale.yml', '--limit', NEW, *SKIP_NODE_PLAYS, extra_vars={**NV_IPAM, 'scale_hosts': NEW},
                    inventory=site.with_ipu_node(NEW))
    assert run.rc != 0 and any('runs without --limit' in m for m in run.failures()), run.explain()
    run = site.play('scale.yml', *SKIP_NODE_PLAYS, extra_vars={**NV_IPAM, 'scale_hosts': [CONTROL_PLANE, 'poplar-09']},
                    inventory=site.with_ipu_node(NEW))
    assert run.rc != 0, run.explain()
    messages = ' '.join(run.failures())
    assert 'scale_hosts names poplar-09, not host(s) of k8s_cluster' in messages, messages
    assert 'scale_hosts names cp1, of control_plane' in messages, messages
    # No play after the refusal ran: no facts were derived, nothing was applied.
    assert not run.results('Derive the RDMA interface, subnet, MTU and excluded range'), run.explain()
    assert NEW not in _labelled(api) and NEW not in _pool_nodes(api)
    assert _old_nodes(api) == before


def test_scale_adds_the_node_to_the_pool_and_labels_it_leaving_the_others(converged, api):
    site = converged
    inventory = site.with_ipu_node(NEW)
    before = _old_nodes(api)
    macvlan = api.get(MACVLAN, 'MacvlanNetwork', NETWORK)['metadata']['resourceVersion']
    with Operators(api, site):
        started = time.monotonic()
        run = site.play('scale.yml', *SKIP_NODE_PLAYS, extra_vars={**NV_IPAM, 'scale_hosts': NEW},
                        inventory=inventory).assert_ok()
        took = time.monotonic() - started
        assert _pool_nodes(api) == IPU_NODES + [NEW]
        assert _labelled(api) == IPU_NODES + [NEW]
        # The new node's facts came from its own namespace; the others' were read again, not changed.
        facts = run.results('Derive the RDMA interface, subnet, MTU and excluded range')
        assert sorted(facts) == IPU_NODES + [NEW], facts
        # Only the new node was labelled, and the pool was the one object of the network changed.
        assert [t for t in run.changed_tasks() if 'Label each IPU node' in t] == \
            ['%s: ipu_operator : Label each IPU node with its V-IPU controller\'s label' % CONTROL_PLANE], \
            run.changed_tasks()
        assert _old_nodes(api) == before, 'a node that was there before changed'
        assert api.get(MACVLAN, 'MacvlanNetwork', NETWORK)['metadata']['resourceVersion'] == macvlan
        assert [a['nodeName'] for a in api.get(IPPOOL, 'IPPool', NETWORK, NAMESPACE)['status']['allocations']] == \
            IPU_NODES + [NEW]
        site.play('scale.yml', *SKIP_NODE_PLAYS, extra_vars={**NV_IPAM, 'scale_hosts': NEW},
                  inventory=inventory).assert_unchanged()
    print('scale.yml with -e scale_hosts=%s: %.0f s' % (NEW, took))
