"""The cluster-setting rules (plugins/filter/ipu_k8s_checks.py): every refusal and
notice written out in full, and the edges of each rule (limits, both ends of a range, empty
and non-string values, the order of what a message lists)."""
import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'ipu_k8s_checks.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', PLUGIN)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)


def setting_problem(kind, setting, value):
    """The refusal of one setting by the SETTING_RULES kind (what problems() says), '' when fine."""
    return ''.join(checks.setting_problems({setting: value}, kind))

SUPPORTED = ['1.29', '1.30', '1.31', '1.32']
MINORS = '1.29, 1.30, 1.31, 1.32'


# --- Kubernetes version ---------------------------------------------------------------

@pytest.mark.parametrize('version, kind', [(1.3, 'number'), (1, 'number'), (True, 'number'), (None, 'value'),
                                           (['1.31.0'], 'value')])
def test_a_version_that_is_not_a_string_is_refused_in_full(version, kind):
    assert checks.kubernetes_version_problem(version, SUPPORTED) == (
        'ipu_k8s_kubernetes_version is the %s %s, not a version string: YAML reads an unquoted 1.30 as the number '
        '1.3. Quote it and give the full release, e.g. ipu_k8s_kubernetes_version: "1.32.0" (supported minors: %s).'
        % (kind, version, MINORS))


def test_without_supported_minors_the_example_is_1_33():
    assert checks.kubernetes_version_problem(None, []) == (
        'ipu_k8s_kubernetes_version is the value None, not a version string: YAML reads an unquoted 1.30 as the '
        'number 1.3. Quote it and give the full release, e.g. ipu_k8s_kubernetes_version: "1.33.0" (supported '
        'minors: ).')
    assert checks.kubernetes_version_problem('1.33', []) == (
        'ipu_k8s_kubernetes_version=1.33 is not a full release: give major.minor.patch as the packages are '
        'versioned, e.g. "1.33.0" (supported minors: ).')


@pytest.mark.parametrize('version', ['1.31', ' 1.31.0', '1.31.0\n'])
def test_a_version_that_is_not_major_minor_patch_is_refused_in_full(version):
    assert checks.kubernetes_version_problem(version, SUPPORTED) == (
        'ipu_k8s_kubernetes_version=%s is not a full release: give major.minor.patch as the packages are '
        'versioned, e.g. "1.32.0" (supported minors: %s).' % (version, MINORS))


@pytest.mark.parametrize('version, minor', [('1.23.17', '1.23'), ('0.30.0', '0.30')])
def test_a_minor_before_pkgs_k8s_io_is_refused_in_full(version, minor):
    assert checks.kubernetes_version_problem(version, SUPPORTED) == (
        'ipu_k8s_kubernetes_version=%s: Kubernetes %s can no longer be installed: pkgs.k8s.io, the only package '
        'source left, starts at 1.24 (apt.kubernetes.io is gone). Choose a release of one of the supported '
        'minors: %s.' % (version, minor, MINORS))


@pytest.mark.parametrize('version, minor', [('1.33.1', '1.33'), ('2.0.0', '2.0'), ('1.24.0', '1.24')])
def test_an_unsupported_minor_is_refused_in_full(version, minor):
    assert checks.kubernetes_version_problem(version, SUPPORTED) == (
        'ipu_k8s_kubernetes_version=%s: Kubernetes %s is not supported (not every layer has a tested release for '
        'it: kubeadm configuration, Calico, Network Operator chart). Choose a release of one of: %s.'
        % (version, minor, MINORS))


def test_the_first_installable_minor_passes_when_supported():
    assert checks.kubernetes_version_problem('1.24.0', ['1.24']) == ''


def test_supported_minors_given_as_numbers_are_compared_as_written():
    assert checks.kubernetes_version_problem('1.29.1', [1.29]) == ''


RELEASES = [{'version': '1.29', 'end_of_support': '2025-02-28'},
            {'version': 1.3, 'end_of_support': '2025-06-28'},
            {'version': '1.31', 'end_of_support': '2025-10-28'},
            {'version': '1.32', 'end_of_support': '2026-02-28'}]


def test_a_minor_past_its_support_is_noticed_in_full():
    assert checks.kubernetes_support_warning('1.29.3', RELEASES, '2025-07-01') == (
        'Kubernetes 1.29 is past its upstream end of support (2025-02-28): it gets no more patches, security fixes '
        'included. Move to a supported minor (1.31, 1.32) by setting ipu_k8s_kubernetes_version.')


def test_when_every_minor_has_ended_the_notice_says_so():
    assert checks.kubernetes_support_warning('1.32.0', RELEASES, '2027-01-01') == (
        'Kubernetes 1.32 is past its upstream end of support (2026-02-28): it gets no more patches, security fixes '
        'included. Move to a supported minor (none in ipu_k8s_versions.kubernetes) by setting '
        'ipu_k8s_kubernetes_version.')


@pytest.mark.parametrize('version, releases, today', [
    ('1.29.3', RELEASES, '2025-02-28'),
    ('1.28.0', RELEASES, '2027-01-01'),
    ('1.29.3', None, '2027-01-01'),
    ('1.29.3', [], '2027-01-01'),
])
def test_no_notice_within_support_or_for_a_minor_not_in_the_table(version, releases, today):
    assert checks.kubernetes_support_warning(version, releases, today) == ''


# --- Network Operator chart life cycle -----------------------------------------------------

CHARTS = [{'chart_version': '25.4.0', 'support': 'Supported'}, {'chart_version': '25.1.0', 'support': 'Maintenance'},
          {'chart_version': '25.7.0', 'support': 'Supported'}, {'chart_version': '24.7.0'}]


def test_a_chart_outside_the_supported_line_is_noticed_in_full():
    assert checks.chart_support_warning(CHARTS[1], CHARTS) == (
        'network-operator 25.1.0 is "Maintenance" in NVIDIA\'s life cycle (no fixes, or critical fixes only). The '
        'Supported release is 25.4.0, 25.7.0: choose it with a Kubernetes minor it serves, or '
        'network_operator_chart_version.')


def test_a_chart_without_a_support_line_in_a_table_without_one_is_noticed_in_full():
    assert checks.chart_support_warning(CHARTS[3], [CHARTS[3]]) == (
        'network-operator 24.7.0 is "not listed" in NVIDIA\'s life cycle (no fixes, or critical fixes only). The '
        'Supported release is not in the table: choose it with a Kubernetes minor it serves, or '
        'network_operator_chart_version.')
    assert 'The Supported release is not in the table' in checks.chart_support_warning(CHARTS[3], None)


@pytest.mark.parametrize('row', [None, {}, CHARTS[0]])
def test_no_notice_for_no_row_or_the_supported_line(row):
    assert checks.chart_support_warning(row, CHARTS) == ''


# --- releases for a minor ----------------------------------------------------------------

def test_a_row_without_a_range_is_never_chosen_and_the_key_orders_the_rows():
    rows = [{'chart_version': '30.1.0'},
            {'chart_version': '25.10.0', 'kubernetes_min': '1.29', 'kubernetes_max': '1.32', 'version': '1'},
            {'chart_version': '25.9.0', 'kubernetes_min': '1.29', 'kubernetes_max': '1.32', 'version': '2'}]
    assert checks.release_for_minor(rows, '1.30', 'chart_version') == rows[1]
    assert checks.release_for_minor(rows, '1.30') == rows[2]
    assert checks.release_for_minor(None, '1.30') == {}


@pytest.mark.parametrize('minor', ['1.30.1', 'x1.30', '1.30x'])
def test_a_minor_must_be_exactly_major_minor(minor):
    rows = [{'version': 'v1', 'kubernetes_min': '1.0', 'kubernetes_max': '1.99'}]
    assert checks.release_for_minor(rows, minor) == {}
    assert checks.pinned_release_problem(rows, minor, 'calico_version', 'v1') == ''


def test_a_pinned_release_names_the_default_table():
    rows = [{'version': 'v1', 'kubernetes_min': '1.20', 'kubernetes_max': '1.21'}]
    assert checks.pinned_release_problem(rows, '1.30', 'calico_version', 'v1') == (
        'calico_version is "v1", whose row in the table serves Kubernetes 1.20 to 1.21, not this cluster\'s 1.30 '
        '(ipu_k8s_kubernetes_version): Set calico_version to a release documented for Kubernetes 1.30 (and give '
        'its row that range), or choose a Kubernetes release from 1.20 to 1.21.')
    assert checks.pinned_release_problem(None, '1.30', 'calico_version', 'v1') == ''


# --- pod and service networks ---------------------------------------------------------

def not_cidr(name, value):
    return ('%s=%s is not an IPv4 network in CIDR form: write it as address/prefix with no host bits set, e.g. '
            '192.168.0.0/16.' % (name, value))


@pytest.mark.parametrize('value', ['pods', 'fd00::/64', '192.168.0.0', '192.168.0.0/33'])
def test_a_pod_subnet_that_is_not_an_ipv4_cidr_is_refused_in_full(value):
    assert checks.cluster_networks_problem(value, '10.96.0.0/12') == not_cidr('ipu_k8s_pod_subnet', value)
    assert checks.pod_subnet_capacity_problem(value, 1, 26) == not_cidr('ipu_k8s_pod_subnet', value)


@pytest.mark.parametrize('value', ['services', 'fd00::/108', '10.96.0.0'])
def test_a_service_subnet_that_is_not_an_ipv4_cidr_is_refused_in_full(value):
    assert checks.cluster_networks_problem('192.168.0.0/16', value) == not_cidr('ipu_k8s_service_subnet', value)


def test_host_bits_are_refused_with_the_network_meant():
    assert checks.cluster_networks_problem('192.168.1.0/16', '10.96.0.0/12') == (
        'ipu_k8s_pod_subnet=192.168.1.0/16 has host bits set (no host bits may be set after the prefix): did you '
        'mean 192.168.0.0/16?')
    assert checks.cluster_networks_problem('192.168.0.0/16', '10.96.0.1/12') == (
        'ipu_k8s_service_subnet=10.96.0.1/12 has host bits set (no host bits may be set after the prefix): did you '
        'mean 10.96.0.0/12?')


def test_overlapping_networks_are_refused_in_full():
    assert checks.cluster_networks_problem('10.96.0.0/16', '10.96.0.0/12') == (
        'ipu_k8s_pod_subnet=10.96.0.0/16 and ipu_k8s_service_subnet=10.96.0.0/12 overlap: pod and service addresses '
        'must not overlap each other. Choose two disjoint networks (defaults 192.168.0.0/16 and 10.96.0.0/12).')


def test_a_service_subnet_too_large_is_refused_in_full():
    assert checks.cluster_networks_problem('192.168.0.0/16', '10.64.0.0/11') == (
        'ipu_k8s_service_subnet=10.64.0.0/11 is too large: the API server takes at most 20 host bits for Service '
        'addresses. Use a /12 or smaller network, e.g. 10.96.0.0/12.')


def test_a_service_subnet_too_small_is_refused_in_full():
    assert checks.cluster_networks_problem('192.168.0.0/16', '10.96.0.0/29') == (
        'ipu_k8s_service_subnet=10.96.0.0/29 is too small: kubeadm gives the cluster DNS the 10th address of it. '
        'Use a /28 or larger network, e.g. 10.96.0.0/12.')


@pytest.mark.parametrize('service', ['10.96.0.0/12', '10.96.0.0/28'])
def test_service_subnets_at_both_limits_pass(service):
    assert checks.cluster_networks_problem('192.168.0.0/16', service) == ''


@pytest.mark.parametrize('block', [19, 33, '0'])
def test_a_calico_block_size_outside_its_range_is_refused_in_full(block):
    assert checks.pod_subnet_capacity_problem('192.168.0.0/16', 1, block) == (
        'calico_block_size=%d is outside what Calico accepts for IPv4 (20 to 32). Use the default 26 (64 addresses '
        'per block).' % int(block))


@pytest.mark.parametrize('block', [20, 32, '26'])
def test_calico_block_sizes_at_both_limits_pass(block):
    assert checks.pod_subnet_capacity_problem('192.168.0.0/16', '3', block) == ''


@pytest.mark.parametrize('pod, nodes, block, node_range, calico, prefix', [
    ('10.0.0.0/25', 2, 26, 24, 26, 23),
    ('10.0.0.0/25', 0, 26, 24, 26, 24),
    ('10.0.0.0/25', 5, 26, 24, 26, 21),
    ('10.0.0.0/24', 1, 20, 24, 20, 20),
    ('10.0.0.0/21', 3, 20, 24, 20, 18),
])
def test_a_pod_subnet_smaller_than_a_node_range_or_a_block_is_refused_in_full(pod, nodes, block, node_range, calico,
                                                                             prefix):
    assert checks.pod_subnet_capacity_problem(pod, nodes, block) == (
        "ipu_k8s_pod_subnet=%s is too small: every node takes a /%d of it (kubeadm's per-node pod range) and Calico "
        'a /%d block (calico_block_size). Use a /%d or larger network for %d node(s), e.g. 192.168.0.0/16.'
        % (pod, node_range, calico, prefix, nodes))


def test_a_pod_subnet_too_large_for_kubeadm_is_refused_in_full():
    assert checks.pod_subnet_capacity_problem('10.0.0.0/7', 1, 26) == (
        'ipu_k8s_pod_subnet=10.0.0.0/7 is too large for kubeadm: its prefix may be at most 16 bits shorter than the '
        'per-node /24. Use a /8 or smaller network, e.g. 192.168.0.0/16.')
    assert checks.pod_subnet_capacity_problem('10.0.0.0/8', 1, 26) == ''


def test_a_pod_subnet_with_fewer_ranges_than_nodes_is_refused_in_full():
    assert checks.pod_subnet_capacity_problem('10.0.0.0/22', 5, 26) == (
        'ipu_k8s_pod_subnet=10.0.0.0/22 is too small for 5 nodes: it holds only 4 per-node /24 ranges. Use a /21 or '
        'larger network.')
    assert checks.pod_subnet_capacity_problem('10.0.0.0/22', 4, 26) == ''
    assert checks.pod_subnet_capacity_problem('10.0.0.0/22', 3, 23) == (
        'ipu_k8s_pod_subnet=10.0.0.0/22 is too small for 3 nodes: it holds only 2 per-node /23 ranges. Use a /21 or '
        'larger network.')


def test_another_node_mask_is_the_per_node_range():
    assert checks.pod_subnet_capacity_problem('10.0.0.0/24', 3, 26, 25) == (
        'ipu_k8s_pod_subnet=10.0.0.0/24 is too small for 3 nodes: it holds only 2 per-node /25 ranges. Use a /23 or '
        'larger network.')


# --- hosts ------------------------------------------------------------------------------

def host(name, node_name='', version='1.31.4'):
    return {'host': name, 'node_name': node_name if node_name != '' else name, 'kubernetes_version': version}


@pytest.mark.parametrize('node_name, suggestion', [
    ('Poplar_01', 'poplar-01'), ('-a.', 'a'), ('__', 'node-1'), (None, 'none'), ('a' * 254, 'a' * 254),
    ('ipu.-1', 'ipu.-1'), (7, '7'),
])
def test_an_invalid_node_name_is_refused_in_full_with_a_suggestion(node_name, suggestion):
    assert checks.hosts_problem([host('ipu1'), host('ipu2', node_name)]) == (
        'ipu_k8s_node_name=%s on ipu2 is not a valid Kubernetes node name (lower-case letters, digits, "-" and ".", '
        'starting and ending with a letter or digit, at most 253 characters). Set ipu_k8s_node_name for this host, '
        'e.g. %s.' % (node_name, suggestion))


def test_a_node_name_of_253_characters_passes():
    assert checks.hosts_problem([host('ipu1', 'a' * 253)]) == ''


def test_differing_versions_are_refused_in_full_listing_each_sorted():
    assert checks.hosts_problem([host('ipu3'), host('ipu2', version='1.32.0'), host('ipu1')]) == (
        'ipu_k8s_kubernetes_version differs between hosts (1.31.4 on ipu1, ipu3; 1.32.0 on ipu2): every node of one '
        'cluster runs the same release. Set it once for k8s_cluster (group_vars) and remove the per-host values.')


def test_a_shared_node_name_is_refused_in_full():
    assert checks.hosts_problem([host('ipu3', 'a'), host('ipu2', 'b'), host('ipu1', 'b'), host('ipu4', 'a')]) == (
        "ipu_k8s_node_name=a is the Kubernetes node name of ipu3 and ipu4: the second would take over the first one's "
        'Node object. Give each host its own ipu_k8s_node_name (the default is its inventory name).')


def test_no_hosts_is_no_problem():
    assert checks.hosts_problem([]) == ''


# --- the cluster interface (node facts) ---------------------------------------------------

ETH0 = {'active': True, 'type': 'ether', 'ipv4': {'address': '10.200.0.2', 'netmask': '255.255.255.0'}}


def facts(default='eth0', **interfaces):
    found = {'eth0': ETH0, 'lo': {'active': True, 'type': 'loopback',
                                  'ipv4': {'address': '127.0.0.1', 'netmask': '255.0.0.0'}}}
    found.update(interfaces)
    result = dict((name.replace('-', '_').replace(':', '_'), nic) for name, nic in found.items())
    result['interfaces'] = list(found)
    if default:
        result['default_ipv4'] = {'interface': default, 'address': '10.200.0.2'}
    return result


def problem(configured, node_facts, pod='192.168.0.0/16', service='10.96.0.0/12'):
    return checks.cluster_interface_problem('ipu1', configured, node_facts, pod, service)


def test_no_default_route_and_no_setting_is_refused_in_full():
    assert problem('', facts(default='')) == (
        'ipu1 has no IPv4 default route, so its cluster-facing interface cannot be found: add a default route, or set '
        'ipu_k8s_cluster_interface for this host.')
    assert problem(None, facts(default='')).startswith('ipu1 has no IPv4 default route')


def test_a_missing_interface_is_refused_in_full_listing_the_sorted_interfaces():
    assert problem('eth9', facts(eth1=ETH0)) == (
        'ipu_k8s_cluster_interface=eth9 does not exist on ipu1 (interfaces: eth0, eth1, lo). Set it to the NIC the '
        'other nodes reach this host on.')
    assert problem('eth0', {'eth0': ETH0}) == (
        'ipu_k8s_cluster_interface=eth0 does not exist on ipu1 (interfaces: ). Set it to the NIC the other nodes '
        'reach this host on.')


def test_the_loopback_is_refused_in_full_by_name_or_by_type():
    assert problem('lo', facts()) == (
        'ipu_k8s_cluster_interface=lo on ipu1 is the loopback interface: no other node can reach the API server, '
        'kubelet or pods there. Set ipu_k8s_cluster_interface to the NIC the other nodes reach this host on.')
    assert problem('lo', facts(lo=dict(ETH0))).startswith('ipu_k8s_cluster_interface=lo on ipu1 is the loopback')
    assert problem('', facts(default='lb0', lb0=dict(ETH0, type='loopback'))) == (
        'the default route interface lb0 (ipu_k8s_cluster_interface is empty) on ipu1 is the loopback interface: no '
        'other node can reach the API server, kubelet or pods there. Set ipu_k8s_cluster_interface to the NIC the '
        'other nodes reach this host on.')


@pytest.mark.parametrize('nic', [dict(ETH0, active=False), {'type': 'ether', 'ipv4': ETH0['ipv4']}])
def test_an_interface_that_is_down_is_refused_in_full(nic):
    assert problem('eth1', facts(eth1=nic)) == (
        'ipu_k8s_cluster_interface=eth1 on ipu1 is down: the cluster cannot use it. Bring it up, or set '
        'ipu_k8s_cluster_interface to the NIC the other nodes reach this host on.')


@pytest.mark.parametrize('nic', [{'active': True}, {'active': True, 'ipv4': {'address': '10.0.0.1'}},
                                 {'active': True, 'ipv4': {'netmask': '255.0.0.0'}, 'ipv4_secondaries': None}])
def test_an_interface_without_an_ipv4_address_is_refused_in_full(nic):
    assert problem('eth1', facts(eth1=nic)) == (
        'ipu_k8s_cluster_interface=eth1 on ipu1 has no IPv4 address: kubeadm advertises and Calico detects the node '
        'address there. Give it an address, or set ipu_k8s_cluster_interface to an addressed NIC.')


def test_a_secondary_address_alone_is_an_address():
    nic = {'active': True, 'ipv4_secondaries': [{'address': '10.50.0.9', 'netmask': '255.255.0.0'}]}
    assert problem('eth1', facts(eth1=nic)) == ''
    assert problem('eth1', facts(eth1=nic), pod='10.50.128.0/17') == (
        'ipu_k8s_pod_subnet=10.50.128.0/17 overlaps the network of eth1 on ipu1 (10.50.0.9/16 on eth1): the node '
        'would route its own neighbours into the pod network. Choose a pod subnet outside 10.50.0.0/16.')


def test_a_pod_subnet_over_the_nodes_network_is_refused_in_full():
    assert problem('', facts(), pod='10.200.0.1/16') == (
        'ipu_k8s_pod_subnet=10.200.0.0/16 overlaps the network of eth0 on ipu1 (10.200.0.2/24 on eth0): the node '
        'would route its own neighbours into the pod network. Choose a pod subnet outside 10.200.0.0/24.')


def test_a_service_subnet_over_the_nodes_network_is_refused_in_full_even_after_a_bad_pod_subnet():
    assert problem('', facts(), pod='pods', service='10.200.0.0/28') == (
        'ipu_k8s_service_subnet=10.200.0.0/28 overlaps the network of eth0 on ipu1 (10.200.0.2/24 on eth0): the '
        'node would route its own neighbours into the service network. Choose a service subnet outside '
        '10.200.0.0/24.')


def test_a_configured_interface_reads_its_own_facts():
    eth1 = dict(ETH0, ipv4={'address': '10.201.0.7', 'netmask': '255.255.255.0'})
    assert problem('eth-1:0', facts(**{'eth-1:0': eth1}), pod='10.200.0.0/16') == ''
    assert checks.cluster_interface({'eth1': {}}, 'eth1') == {'interface': 'eth1', 'address': ''}
    assert checks.cluster_interface({'default_ipv4': {}}, None) == {'interface': '', 'address': ''}


def test_two_hosts_with_one_cluster_address_are_refused_in_full():
    assert checks.cluster_addresses_problem([
        {'host': 'ipu3', 'address': '10.0.0.5'}, {'host': 'ipu9', 'address': '10.0.0.9'},
        {'host': 'ipu1', 'address': '10.0.0.5'}, {'host': 'ipu2', 'address': ''}, {'host': 'ipu4'},
        {'host': 'ipu5', 'address': '10.0.0.9'}]) == (
        'ipu1 and ipu3 have the same cluster address 10.0.0.5: each node needs its own (kubeadm advertises it, '
        'Calico routes to it). Check ansible_host and ipu_k8s_cluster_interface of these hosts.')
    assert checks.cluster_addresses_problem([{'host': 'ipu2', 'address': ''}, {'host': 'ipu4', 'address': ''}]) == ''


# --- settings of one kind -------------------------------------------------------------------

GRAMMAR = ('[registry[:port]/]path[:tag][@sha256:<64 hex digits>], the path in lower case, e.g. '
           'registry.k8s.io/pause:3.10 or registry.example.com/mirror/pause:3.10@sha256:<digest>')


@pytest.mark.parametrize('value', ['Busybox', 5, None, 'a' * 256, 'a' * 256 + ':1.0'])
def test_a_bad_image_is_refused_in_full(value):
    assert setting_problem('image', 'smoke_image', value) == (
        'smoke_image is "%s", which is not an image reference: write %s.' % (value, GRAMMAR))


@pytest.mark.parametrize('value', ['a' * 255, 'a' * 255 + ':1.0'])
def test_an_image_repository_of_255_characters_passes(value):
    assert setting_problem('image', 'smoke_image', value) == ''


def test_an_image_that_may_be_empty_says_so_in_full():
    assert checks.setting_problems({'smoke_image': 'Busybox', 'other_image': ''}, 'image_or_empty') == [
        'smoke_image is "Busybox", which is not an image reference: write %s, or "" for the default.' % GRAMMAR]


@pytest.mark.parametrize('value', ['Registry.example.com/K8s', 5, 'reg/pause:3.10', 'a' * 256])
def test_a_bad_image_repository_is_refused_in_full(value):
    assert setting_problem('repository_or_empty', 'repo', value) == (
        'repo is "%s", which is not an image repository: write registry[:port][/path] without tag or digest, the '
        'path in lower case (e.g. registry.example.com/k8s), or "" for the default.' % value)


def test_an_image_repository_of_255_characters_is_a_repository():
    assert setting_problem('repository_or_empty', 'repo', 'a' * 255) == ''


@pytest.mark.parametrize('value', ['registry.example.com', 5, 'registry.example.com/Mirror/', 'reg/Mirror/'])
def test_a_bad_registry_prefix_is_refused_in_full(value):
    assert setting_problem('registry_prefix_or_empty', 'prefix', value) == (
        'prefix is "%s": write a registry[:port][/path] ending with "/" (e.g. "registry.example.com/"), the path in '
        'lower case: the image path is appended to it as it is; or "" for the default.' % value)


@pytest.mark.parametrize('value, suggestion', [
    ('Rdma_Net', 'rdma-net'), ('---', 'ipu-k8s'), (None, 'none'), ('x' * 70, 'x' * 63),
    ('a' * 62 + '_bc', 'a' * 62), ('-a-', 'a'), ('a' * 62 + '-b', 'a' * 62),
])
def test_a_bad_kubernetes_name_is_refused_in_full_with_a_suggestion(value, suggestion):
    assert checks.dns_label_problem('network', value) == (
        'network is "%s", which is not a valid Kubernetes name (DNS-1123 label): use at most 63 lower-case letters, '
        'digits and "-", starting and ending with a letter or digit, e.g. %s.' % (value, suggestion))


def test_a_helm_release_name_over_53_characters_is_refused_in_full():
    assert checks.setting_problems({'release': 'a' * 54}, 'helm_release') == [
        'release is "%s", which is not a valid Helm release name: use at most 53 lower-case letters, digits and "-", '
        'starting and ending with a letter or digit, e.g. %s.' % ('a' * 54, 'a' * 54)]


@pytest.mark.parametrize('value, hint', [('10', ' (10s?)'), (10, ' (10s?)'), (True, ''), ('0s', ''), ('ten', ''),
                                         (None, ''), ('0', ' (0s?)'), ('10 m', '')])
def test_a_bad_duration_is_refused_in_full(value, hint):
    assert checks.duration_problem('timeout', value) == (
        'timeout is "%s", which is not a duration: write a positive number with its unit, as Go reads durations, '
        'e.g. "10m", "90s" or "1h30m"%s.' % (value, hint))


def test_a_kubernetes_name_of_63_characters_passes():
    assert checks.dns_label_problem('network', 'a' * 61 + '-b') == ''


@pytest.mark.parametrize('value', ['0.5s', '1h0m', '100ms'])
def test_durations_with_a_non_zero_digit_pass(value):
    assert checks.duration_problem('timeout', value) == ''


@pytest.mark.parametrize('value', [0, '0', -5, '5m', True, None, 1.5, ''])
def test_seconds_and_days_that_are_not_positive_whole_numbers_are_refused_in_full(value):
    assert checks.setting_problems({'wait': value}, 'seconds') == [
        'wait is "%s": give a positive whole number of seconds, without a unit (e.g. 300).' % value]
    assert checks.setting_problems({'keep': value}, 'days') == [
        'keep is "%s": give a positive whole number of days, without a unit (e.g. 30).' % value]


def test_setting_problems_lists_only_the_bad_settings_sorted_by_name():
    assert checks.setting_problems({'z_wait': 0, 'a_wait': 'x', 'm_wait': 5}, 'seconds') == [
        'a_wait is "x": give a positive whole number of seconds, without a unit (e.g. 300).',
        'z_wait is "0": give a positive whole number of seconds, without a unit (e.g. 300).']


# --- a trailing newline (a YAML block scalar) is not part of a valid value ------------------

def test_a_node_name_ending_in_a_newline_is_refused():
    assert checks.hosts_problem([host('ipu1', 'ipu1\n')]) == (
        'ipu_k8s_node_name=ipu1\n on ipu1 is not a valid Kubernetes node name (lower-case letters, digits, "-" and '
        '".", starting and ending with a letter or digit, at most 253 characters). Set ipu_k8s_node_name for this '
        'host, e.g. ipu1.')


def test_a_minor_ending_in_a_newline_is_no_minor():
    rows = [{'version': 'v1', 'kubernetes_min': '1.20', 'kubernetes_max': '1.21'}]
    assert checks.release_for_minor(rows, '1.20\n') == {}
    assert checks.pinned_release_problem(rows, '1.30\n', 'calico_version', 'v1') == ''


# --- edges the messages above do not reach ---------------------------------------------------

def test_a_minor_whose_support_ends_today_is_still_offered():
    assert checks.kubernetes_support_warning('1.29.3', RELEASES, '2025-10-28') == (
        'Kubernetes 1.29 is past its upstream end of support (2025-02-28): it gets no more patches, security fixes '
        'included. Move to a supported minor (1.31, 1.32) by setting ipu_k8s_kubernetes_version.')


def test_a_pinned_chart_names_the_chart_the_table_would_pick():
    rows = [{'chart_version': '25.1.0', 'kubernetes_min': '1.26', 'kubernetes_max': '1.28'},
            {'chart_version': '25.4.0', 'kubernetes_min': '1.29', 'kubernetes_max': '1.32'}]
    assert checks.pinned_release_problem(rows, '1.30', 'network_operator_chart_version', '25.1.0', 'chart_version',
                                         'charts') == (
        'network_operator_chart_version is "25.1.0", whose row in charts serves Kubernetes 1.26 to 1.28, not this '
        'cluster\'s 1.30 (ipu_k8s_kubernetes_version): Leave network_operator_chart_version unset (remove it from the inventory) and the table picks '
        '25.4.0 for Kubernetes 1.30, or choose a Kubernetes release from 1.26 to 1.28.')


def test_a_pod_subnet_of_exactly_one_calico_block_fits_one_node():
    assert checks.pod_subnet_capacity_problem('10.0.0.0/22', 1, 22) == ''


def test_a_valid_image_that_may_be_empty_passes():
    assert checks.setting_problems({'smoke_image': 'busybox:1.36', 'other_image': ''}, 'image_or_empty') == []


def test_a_suggested_name_drops_leading_dashes_before_it_is_cut_to_63():
    assert checks.dns_label_problem('network', '_' + 'a' * 63).endswith('e.g. %s.' % ('a' * 63))


@pytest.mark.parametrize('value', [300, '300', 1])
def test_positive_whole_seconds_pass(value):
    assert checks.setting_problems({'wait': value}, 'seconds') == []
