"""Preflight on an IPU node made of real network namespaces.

The real playbooks/preflight.yml runs inside the `lab` node namespace (RDMA NIC rdma0 on
10.247.208.0/23 at MTU 9000, cluster NIC mgmt0 with the default route): the RDMA network
is derived by the modules from the kernel's routes, then checked against the pod and
service networks. The OS checks are skipped (a CI container is not a node: the VM lab runs
them) and so is the RDMA-device check (no RDMA hardware in a namespace).

The refusals of one task that runs on every host with that host's values (the cluster
interface against the pod, service and RDMA networks) share one run, a host per case, each
case reading its own host's failure: every host is the lab node over the local connection, and
the play (any_errors_fatal) stops at that task, before the rule that compares the hosts'
cluster addresses. A run that must pass, or that fails at another task, is a run of its own.
"""

import pytest

from netns_lab import ROOT, local_host, run_playbook

PREFLIGHT = ROOT / 'playbooks' / 'preflight.yml'
VIPU = [{'name': 'pod001', 'host': '10.247.208.5', 'port': 8090}]


def preflight(lab, tmp_path, hosts=None, **overrides):
    """Preflight on hosts ({name: overrides}, the first the control plane; default poplar-01
    with `overrides`), each an IPU node."""
    hosts = hosts or {'poplar-01': overrides}
    inventory = {'all': {'hosts': {name: local_host(**{'ipu_k8s_vipu_controllers': VIPU, 'preflight_require_rdma_device': False,
                                                        **host}) for name, host in hosts.items()},
                         'children': {
        'k8s_cluster': {'children': {'control_plane': {'hosts': {list(hosts)[0]: None}},
                                     'workers': {'hosts': {name: None for name in list(hosts)[1:]}}}},
        'ipu_nodes': {'hosts': {name: None for name in hosts}}}}}
    return run_playbook(lab, PREFLIGHT, inventory, tmp_path,
                        env={'ANSIBLE_SKIP_TAGS': 'preflight_os'})


# The cases refused by the cluster interface's check, a host each (see the module's docstring).
NETWORK_CASES = {
    'pod-subnet': {'ipu_k8s_pod_subnet': '10.247.0.0/16'},         # contains the RDMA /23
    'service-subnet': {'ipu_k8s_service_subnet': '10.247.209.0/24'},  # inside the RDMA /23
    'rdma-nic': {'ipu_k8s_cluster_interface': 'rdma0'},
}


@pytest.fixture(scope='module')
def network_run(lab, tmp_path_factory):
    return preflight(lab, tmp_path_factory.mktemp('networks'), hosts=NETWORK_CASES)


def failure_messages(run):
    """The msg of every runner_on_failed event of the run."""
    return run.failure_messages()


def test_preflight_passes_and_derives_the_rdma_subnet_from_the_interface(lab, tmp_path):
    run = preflight(lab, tmp_path)
    assert run.stats['poplar-01']['failures'] == 0, failure_messages(run)
    derived = [run.result('Derive the RDMA interface, subnet, MTU and excluded range', 'poplar-01')['rdma_network']]
    assert [(d['interface'], d['cidr'], d['mtu'], d['excludes']) for d in derived] == [
        ('rdma0', '10.247.208.0/23', 9000, ['10.247.208.0/25'])]


@pytest.mark.parametrize('host', ['pod-subnet', 'service-subnet'])
def test_cluster_network_overlapping_the_rdma_subnet_is_refused(network_run, host):
    (name, value), = NETWORK_CASES[host].items()
    messages = network_run.host_failure_messages(host)
    assert network_run.stats[host]['failures'] == 1
    assert any('the RDMA subnet is 10.247.208.0/23 on rdma0' in m and f'{name}={value}' in m
               for m in messages), messages


def test_cluster_interface_that_is_the_rdma_nic_is_refused(network_run):
    messages = network_run.host_failure_messages('rdma-nic')
    assert any('the cluster-facing interface (rdma0)' in m for m in messages), messages


def test_vipu_address_behind_a_gateway_is_refused_before_anything_changes(lab, tmp_path):
    run = preflight(lab, tmp_path, ipu_k8s_vipu_controllers=[{'name': 'pod001', 'host': '10.99.0.5'}])
    messages = failure_messages(run)
    assert run.stats['poplar-01']['failures'] == 1
    assert any('10.99.0.5' in m and 'gateway' in m for m in messages), messages
    # Nothing after the failed derivation ran on the host.
    assert run.stats['poplar-01']['changed'] == 0


def test_device_plugin_ifnames_without_the_rdma_interface_are_refused(lab, tmp_path):
    run = preflight(lab, tmp_path, network_operator_rdma_ifnames=['ens1f0'])
    messages = failure_messages(run)
    assert run.stats['poplar-01']['failures'] == 1
    assert any("network_operator_rdma_ifnames is ['ens1f0'], which does not hold its interface rdma0" in m
               for m in messages), messages
    assert run.stats['poplar-01']['changed'] == 0


def test_device_plugin_ifnames_holding_the_rdma_interface_pass(lab, tmp_path):
    run = preflight(lab, tmp_path, network_operator_rdma_ifnames=['rdma0', 'rdma1'])
    assert run.stats['poplar-01']['failures'] == 0, failure_messages(run)
