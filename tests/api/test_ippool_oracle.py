"""The NVIDIA IPAM pool of the RDMA network against a real kube-apiserver v1.20.2 and its
scheduler (its own server): playbooks/rdma_network.yml on a chart row with NVIDIA IPAM
(network_operator_ipam=nv-ipam, as a site whose Network Operator is installed another way
passes it).

- Run before the Network Operator (no MacvlanNetwork CRD), the layer refuses, naming the
  step to run first, and creates nothing.
- The IPPool the layer applied: its spec.nodeSelector is a corev1.NodeSelector, which
  nvidia-k8s-ipam validates with Kubernetes core's rule (api/v1alpha1/validate_nodeselector.go
  at network-operator-v26.4.1, copied from pkg/apis/core/validation) and matches with
  Kubernetes' MatchNodeSelectorTerms. A pod's required node affinity is the same type,
  validated and matched by the same code in the apiserver and the scheduler: the pool's
  selector is accepted there and places pods only on the pool's nodes; the shape rendered
  before (one term naming every node) is refused with upstream's message.
- No NVIDIA IPAM controller runs here: the test plays it (tests/nv_ipam_upstream.py says
  which blocks it writes into status.allocations, and its events). The layer waits for
  every IPU node's block and fails naming the node without one and the pool's events; with
  every block written (and the MacvlanNetwork answered, api_client.play_macvlan_operator)
  it passes, and a second run changes nothing. verify's row of each IPU node's block passes,
  and fails naming the node once its block is gone.
"""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import dynamic

from api_client import play_macvlan_operator, report_rows
from api_site import CONTROL_PLANE, IPU_NODES, NODES, nv_ipam_operator_state
from nv_ipam_upstream import controller_allocations, validate_ippool

NETWORK = 'rdma-net'
NAMESPACE = 'network-operator'
IPPOOL = 'nv-ipam.nvidia.com/v1alpha1'
NV_IPAM = {'network_operator_ipam': 'nv-ipam'}
# upstream's message (validate_nodeselector.go:103-104), as the apiserver words it too
ONE_VALUE = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"


def _pool(api) -> dict:
    pool = api.get(IPPOOL, 'IPPool', NETWORK, NAMESPACE)
    assert pool, 'the layer applied no IPPool %s/%s' % (NAMESPACE, NETWORK)
    return pool


def _play_ipam_controller(api, nodes, events=()) -> None:
    """What nvidia-k8s-ipam's controller writes for the pool (its blocks, for `nodes` only)
    and the events it records on it (reason, message)."""
    pool = _pool(api)
    allocations = [a for a in controller_allocations(pool, NODES) if a['nodeName'] in nodes]
    api.resource(IPPOOL, 'IPPool').status.patch(body={'status': {'allocations': allocations}}, name=NETWORK,
                                                namespace=NAMESPACE, content_type='application/merge-patch+json')
    now = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    for i, (reason, message) in enumerate(events):
        api.apply({'apiVersion': 'v1', 'kind': 'Event',
                   'metadata': {'name': '%s.%d' % (NETWORK, i), 'namespace': NAMESPACE},
                   'involvedObject': {'apiVersion': IPPOOL, 'kind': 'IPPool', 'name': NETWORK, 'namespace': NAMESPACE,
                                      'uid': pool['metadata']['uid']},
                   'reason': reason, 'message': message, 'type': 'Warning',
                   'source': {'component': 'IPPoolController'}, 'count': 1,
                   'firstTimestamp': now, 'lastTimestamp': now})


def test_rdma_network_before_the_network_operator_names_the_step_to_run_first(site, api):
    run = site.play('rdma_network.yml')
    assert run.rc != 0
    messages = ' '.join(run.failures())
    assert 'no MacvlanNetwork CRD' in messages, messages
    assert 'playbooks/network_operator.yml' in messages and '--tags network_operator' in messages, messages
    assert api.names('mellanox.com/v1alpha1', 'MacvlanNetwork') == []


@pytest.fixture(scope='module')
def operator_crds(site, api):
    """What the Network Operator leaves before this layer runs on an NVIDIA IPAM row: its
    namespace, the MacvlanNetwork CRD (of chart 25.4.0, as the rest of the tier), the IPPool
    CRD of release 26.4.1 (the operator applies it for NVIDIA IPAM), Multus's NAD CRD, and
    the CNI files of its Multus and NVIDIA IPAM daemonsets."""
    nv_ipam_operator_state(site, api, NAMESPACE)
    return site


def test_the_wait_fails_naming_the_ipu_node_without_a_block_and_the_pools_events(operator_crds, api):
    site = operator_crds
    run = site.play('rdma_network.yml', extra_vars={**NV_IPAM, 'rdma_network_wait_timeout': 5})
    assert run.rc != 0
    messages = ' '.join(run.failures())
    assert 'no block in its status.allocations for IPU node(s) poplar-01, poplar-02' in messages, messages
    # The controller gave poplar-01 its block; the subnet had none left for poplar-02.
    _play_ipam_controller(api, ['poplar-01'], [('NoFreeRanges', 'failed to allocate IPs on Node: poplar-02')])
    run = site.play('rdma_network.yml', extra_vars={**NV_IPAM, 'rdma_network_wait_timeout': 5})
    assert run.rc != 0
    messages = ' '.join(run.failures())
    assert 'no block in its status.allocations for IPU node(s) poplar-02 (with a block: poplar-01 ' in messages, \
        messages
    assert 'NoFreeRanges: failed to allocate IPs on Node: poplar-02' in messages, messages


def _pod(name: str, node_selector: dict) -> dict:
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': {'affinity': {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': node_selector}},
                     'containers': [{'name': 'main', 'image': 'registry.invalid/stand-in/pause:1'}]}}


def _scheduled(api, names, timeout=120) -> dict:
    """pod name -> the node the scheduler bound it to."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bound = dict((n, (api.get('v1', 'Pod', n, 'default') or {}).get('spec', {}).get('nodeName')) for n in names)
        if all(bound.values()):
            return bound
        time.sleep(1)
    raise AssertionError('pods not scheduled after %ss: %s' % (timeout, bound))


def test_the_pools_selector_is_accepted_by_the_apiserver_and_the_scheduler_keeps_to_its_nodes(operator_crds, api):
    pool = _pool(api)
    selector = pool['spec']['nodeSelector']
    assert validate_ippool(pool) == []
    terms = selector['nodeSelectorTerms']
    assert [t['matchFields'][0]['values'] for t in terms] == [[n] for n in IPU_NODES]
    names = []
    # The whole selector: every pod on one of the pool's nodes, none on the control plane.
    for i in range(4):
        names.append(api.apply(_pod('pool-selector-%d' % i, selector))['metadata']['name'])
    # Each term alone: exactly its node.
    for term, node in zip(terms, IPU_NODES):
        names.append(api.apply(_pod('pool-term-%s' % node, {'nodeSelectorTerms': [term]}))['metadata']['name'])
    try:
        bound = _scheduled(api, names)
        assert set(bound['pool-selector-%d' % i] for i in range(4)) <= set(IPU_NODES), bound
        assert CONTROL_PLANE not in bound.values()
        assert [bound['pool-term-%s' % node] for node in IPU_NODES] == IPU_NODES, bound
        # The shape rendered before: one term naming every node. Refused, with upstream's words.
        old = {'nodeSelectorTerms': [{'matchFields': [{'key': 'metadata.name', 'operator': 'In',
                                                       'values': list(IPU_NODES)}]}]}
        with pytest.raises(dynamic.exceptions.DynamicApiError) as refused:
            api.apply(_pod('pool-old-shape', old))
        message = json.loads(refused.value.body)['message']
        assert refused.value.status == 422 and ONE_VALUE in message, message
        assert api.get('v1', 'Pod', 'pool-old-shape', 'default') is None
    finally:
        for name in names:
            api.core.delete_namespaced_pod(name, 'default', grace_period_seconds=0)


def test_rdma_network_passes_when_every_ipu_node_has_its_block_and_reruns_unchanged(operator_crds, api):
    site = operator_crds
    _play_ipam_controller(api, IPU_NODES)
    play_macvlan_operator(api, NETWORK, 'default', site.cni_dir)
    site.play('rdma_network.yml', extra_vars=NV_IPAM).assert_ok()
    site.play('rdma_network.yml', extra_vars=NV_IPAM).assert_unchanged()
    assert [a['nodeName'] for a in _pool(api)['status']['allocations']] == IPU_NODES


def _block_rows(site) -> dict:
    # The other cluster checks (operators, test pod) have nothing to find on this server.
    site.play('verify.yml', '--tags', 'verify_cluster', extra_vars={'verify_test_pod_timeout': 5})
    return dict((r['host'], r) for r in report_rows(site) if r['check'] == 'NVIDIA IPAM block of the node')


def test_verify_reports_each_ipu_nodes_block_and_fails_the_node_without_one(operator_crds, api):
    site = operator_crds
    rows = _block_rows(site)
    assert {h: r['status'] for h, r in rows.items()} == {n: 'PASS' for n in IPU_NODES}, rows
    assert rows['poplar-01']['observed'].startswith('block 10.247.208.'), rows
    _play_ipam_controller(api, ['poplar-01'])
    rows = _block_rows(site)
    assert {h: r['status'] for h, r in rows.items()} == {'poplar-01': 'PASS', 'poplar-02': 'FAIL'}, rows
    assert rows['poplar-02']['observed'].startswith('no block for node poplar-02 in IPPool network-operator/rdma-net')
