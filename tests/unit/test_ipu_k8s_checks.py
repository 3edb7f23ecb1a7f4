"""The cluster-setting rules (roles/ipu_k8s/filter_plugins/ipu_k8s_checks.py), one behaviour each."""
import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'roles' / 'ipu_k8s' / 'filter_plugins' / 'ipu_k8s_checks.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', PLUGIN)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

SUPPORTED = ['1.29', '1.30', '1.31', '1.32']
PATCHES = {'1.29': 15, '1.30': 14, '1.31': 14, '1.32': 13}


def version_problem(version):
    return checks.kubernetes_version_problem(version, SUPPORTED, PATCHES)


# --- Kubernetes version ---------------------------------------------------------------

@pytest.mark.parametrize('version', ['1.29.0', '1.31.14', '1.32.13'])
def test_released_patch_of_supported_minor_passes(version):
    assert version_problem(version) == ''


def test_yaml_float_version_is_explained_not_crashed_on():
    message = version_problem(1.3)
    assert message.startswith('ipu_k8s_kubernetes_version is the number 1.3')
    assert 'Quote it' in message and '"1.32.0"' in message


def test_integer_version_is_refused():
    assert version_problem(1).startswith('ipu_k8s_kubernetes_version is the number 1, not a version string')


def test_null_version_is_refused():
    assert version_problem(None).startswith('ipu_k8s_kubernetes_version is the value None, not a version string')


@pytest.mark.parametrize('version', ['1.31', 'v1.31.4', '1.31.4-1.1', '', 'latest'])
def test_version_that_is_not_major_minor_patch_is_refused(version):
    assert version_problem(version).startswith('ipu_k8s_kubernetes_version=%s is not a full release' % version)


def test_patch_that_was_never_released_is_refused_with_the_newest():
    message = version_problem('1.31.99')
    assert message.startswith('ipu_k8s_kubernetes_version=1.31.99: Kubernetes 1.31 has no patch release 99')
    assert 'newest released is 1.31.14' in message
    assert 'preflight_kubernetes_newest_patch' in message


def test_minor_before_pkgs_k8s_io_is_refused_as_not_installable():
    message = version_problem('1.23.17')
    assert 'can no longer be installed' in message and 'pkgs.k8s.io' in message


def test_unsupported_minor_lists_the_supported_ones():
    message = version_problem('1.27.3')
    assert 'Kubernetes 1.27 is not supported' in message and '1.29, 1.30, 1.31, 1.32' in message


def test_minor_without_a_patch_fact_is_not_patch_checked():
    assert checks.kubernetes_version_problem('1.32.40', SUPPORTED, {}) == ''


# --- pod and service networks ---------------------------------------------------------

def test_default_networks_pass():
    assert checks.cluster_networks_problem('192.168.0.0/16', '10.96.0.0/12') == ''


@pytest.mark.parametrize('pod,service,needle', [
    ('192.168.0.1/16', '10.96.0.0/12', 'ipu_k8s_pod_subnet=192.168.0.1/16 has host bits set'),
    ('192.168.0.0', '10.96.0.0/12', 'ipu_k8s_pod_subnet=192.168.0.0 is not an IPv4 network'),
    ('fd00::/64', '10.96.0.0/12', 'ipu_k8s_pod_subnet=fd00::/64 is not an IPv4 network'),
    ('192.168.0.0/16', '10.96.0.0/33', 'ipu_k8s_service_subnet=10.96.0.0/33 is not an IPv4 network'),
    ('10.96.0.0/16', '10.96.0.0/12', 'overlap'),
    ('192.168.0.0/16', '10.0.0.0/8', 'ipu_k8s_service_subnet=10.0.0.0/8 is too large'),
    ('192.168.0.0/16', '10.96.0.0/29', 'ipu_k8s_service_subnet=10.96.0.0/29 is too small'),
])
def test_bad_network_is_refused_naming_it(pod, service, needle):
    assert needle in checks.cluster_networks_problem(pod, service)


# --- pod subnet capacity --------------------------------------------------------------

def test_pod_subnet_of_one_node_range_fits_one_node():
    assert checks.pod_subnet_capacity_problem('192.168.0.0/24', 1, 26) == ''


def test_pod_subnet_smaller_than_a_node_range_is_refused():
    message = checks.pod_subnet_capacity_problem('192.168.0.0/28', 2, 26)
    assert message.startswith('ipu_k8s_pod_subnet=192.168.0.0/28 is too small')
    assert 'Use a /23 or larger' in message


def test_pod_subnet_with_fewer_node_ranges_than_nodes_is_refused():
    message = checks.pod_subnet_capacity_problem('192.168.0.0/23', 3, 26)
    assert 'too small for 3 nodes: it holds only 2 per-node /24 ranges' in message
    assert 'Use a /22 or larger' in message


def test_pod_subnet_larger_than_kubeadm_accepts_is_refused():
    assert 'too large for kubeadm' in checks.pod_subnet_capacity_problem('10.0.0.0/7', 3, 26)


@pytest.mark.parametrize('block', [19, 33])
def test_calico_block_size_outside_its_range_is_refused(block):
    assert checks.pod_subnet_capacity_problem('192.168.0.0/16', 3, block).startswith(
        'calico_block_size=%d is outside' % block)


def test_block_larger_than_the_pool_is_refused():
    message = checks.pod_subnet_capacity_problem('192.168.0.0/22', 1, 20)
    assert 'is too small' in message and 'a /20 block' in message


# --- hosts ----------------------------------------------------------------------------

def host(name, node_name=None, version='1.32.13'):
    return {'host': name, 'node_name': node_name or name, 'kubernetes_version': version}


def test_distinct_hosts_on_one_release_pass():
    assert checks.hosts_problem([host('a'), host('b')]) == ''


def test_different_releases_on_different_hosts_are_refused():
    message = checks.hosts_problem([host('a'), host('b', version='1.31.4'), host('c')])
    assert message.startswith('ipu_k8s_kubernetes_version differs between hosts')
    assert '1.31.4 on b; 1.32.13 on a, c' in message


def test_two_hosts_with_one_node_name_are_refused():
    message = checks.hosts_problem([host('poplar-01'), host('poplar-02', node_name='poplar-01')])
    assert message.startswith('ipu_k8s_node_name=poplar-01 is the Kubernetes node name of poplar-01 and poplar-02')


def test_invalid_node_name_is_refused_with_a_valid_suggestion():
    message = checks.hosts_problem([host('Poplar_02')])
    assert message.startswith('ipu_k8s_node_name=Poplar_02 on Poplar_02 is not a valid Kubernetes node name')
    assert 'e.g. poplar-02' in message


# --- cluster interface (node facts) ---------------------------------------------------

ETH0 = {'active': True, 'type': 'ether', 'ipv4': {'address': '10.200.0.2', 'netmask': '255.255.255.0'}}
LO = {'active': True, 'type': 'loopback', 'ipv4': {'address': '127.0.0.1', 'netmask': '255.0.0.0'}}


def node_facts(default='eth0', interfaces=None):
    """ansible_facts of a node: its interfaces (keyed as Ansible keys them) and default route."""
    interfaces = {'eth0': ETH0, 'lo': LO} if interfaces is None else interfaces
    facts = {name.replace('-', '_').replace(':', '_'): value for name, value in interfaces.items()}
    facts['interfaces'] = list(interfaces)
    if default:
        facts['default_ipv4'] = {'interface': default, 'address': interfaces[default]['ipv4']['address']}
    return facts


def interface_problem(configured='', default='eth0', interfaces=None, pod='192.168.0.0/16', service='10.96.0.0/12'):
    return checks.cluster_interface_problem('node1', configured, node_facts(default, interfaces), pod, service)


def test_cluster_interface_is_the_configured_one():
    eth1 = dict(ETH0, ipv4={'address': '10.201.0.7', 'netmask': '255.255.255.0'})
    facts = node_facts(interfaces={'eth0': ETH0, 'eth-1:0': eth1, 'lo': LO})
    assert checks.cluster_interface(facts, 'eth-1:0') == {'interface': 'eth-1:0', 'address': '10.201.0.7'}


def test_cluster_interface_is_the_default_routes_when_none_is_configured():
    assert checks.cluster_interface(node_facts(), '') == {'interface': 'eth0', 'address': '10.200.0.2'}


def test_no_cluster_interface_without_a_default_route_or_a_setting():
    assert checks.cluster_interface(node_facts(default=''), '') == {'interface': '', 'address': ''}
    assert checks.cluster_interface(node_facts(), 'eth9') == {'interface': 'eth9', 'address': ''}


def test_default_route_interface_with_an_address_passes():
    assert interface_problem() == ''


def test_loopback_cluster_interface_is_refused():
    assert interface_problem('lo').startswith('ipu_k8s_cluster_interface=lo on node1 is the loopback interface')


def test_interface_of_loopback_type_under_another_name_is_refused():
    assert 'loopback' in interface_problem('lo2', interfaces={'lo2': LO, 'eth0': ETH0})


def test_interface_that_is_down_is_refused():
    assert 'is down' in interface_problem('eth1', interfaces={'eth0': ETH0, 'eth1': dict(ETH0, active=False)})


def test_interface_without_ipv4_is_refused():
    assert 'has no IPv4 address' in interface_problem('eth1', interfaces={'eth0': ETH0, 'eth1': {'active': True}})


def test_missing_interface_is_refused_listing_the_real_ones():
    assert 'ipu_k8s_cluster_interface=eth9 does not exist on node1 (interfaces: eth0, lo)' in interface_problem('eth9')


def test_no_default_route_and_no_interface_is_refused():
    assert 'has no IPv4 default route' in interface_problem(default='')


@pytest.mark.parametrize('pod,service,variable', [
    ('10.200.0.0/16', '10.96.0.0/12', 'ipu_k8s_pod_subnet=10.200.0.0/16'),
    ('192.168.0.0/16', '10.192.0.0/12', 'ipu_k8s_service_subnet=10.192.0.0/12'),
])
def test_cluster_network_overlapping_the_nodes_network_is_refused(pod, service, variable):
    message = interface_problem(pod=pod, service=service)
    assert message.startswith(variable + ' overlaps the network of eth0 on node1 (10.200.0.2/24 on eth0)')


def test_secondary_address_network_counts_too():
    eth0 = dict(ETH0, ipv4_secondaries=[{'address': '172.16.5.1', 'netmask': '255.255.255.0'}])
    assert '172.16.5.1/24' in interface_problem(interfaces={'eth0': eth0}, pod='172.16.0.0/16')


def test_two_hosts_with_one_cluster_address_are_refused():
    message = checks.cluster_addresses_problem([{'host': 'a', 'address': '10.0.0.5'},
                                                {'host': 'b', 'address': '10.0.0.5'},
                                                {'host': 'c', 'address': '10.0.0.6'}])
    assert message.startswith('a and b have the same cluster address 10.0.0.5')
    assert checks.cluster_addresses_problem([{'host': 'a', 'address': '10.0.0.5'}]) == ''


def test_every_filter_is_registered():
    assert set(checks.FilterModule().filters()) == {
        'ipu_k8s_kubernetes_version_problem', 'ipu_k8s_cluster_networks_problem',
        'ipu_k8s_pod_subnet_capacity_problem', 'ipu_k8s_hosts_problem',
        'ipu_k8s_cluster_interface_problem', 'ipu_k8s_cluster_addresses_problem', 'ipu_k8s_cluster_interface_of'}
