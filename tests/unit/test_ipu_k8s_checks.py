"""The cluster-setting rules (plugins/filter/ipu_k8s_checks.py), one behaviour each."""
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


def version_problem(version):
    return checks.kubernetes_version_problem(version, SUPPORTED)


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


def test_minor_before_pkgs_k8s_io_is_refused_as_not_installable():
    message = version_problem('1.23.17')
    assert 'can no longer be installed' in message and 'pkgs.k8s.io' in message


def test_unsupported_minor_lists_the_supported_ones():
    message = version_problem('1.27.3')
    assert 'Kubernetes 1.27 is not supported' in message and '1.29, 1.30, 1.31, 1.32' in message


def test_any_patch_of_a_supported_minor_is_left_to_the_package_source():
    assert checks.kubernetes_version_problem('1.32.40', SUPPORTED) == ''


# --- support life cycle -----------------------------------------------------------------

RELEASES = [{'version': '1.34', 'end_of_support': '2026-10-28'},
            {'version': '1.35', 'end_of_support': '2027-02-28'},
            {'version': '1.36', 'end_of_support': '2027-06-28'}]


def test_minor_past_its_end_of_support_is_named_with_the_supported_ones():
    message = checks.kubernetes_support_warning('1.34.12', RELEASES, '2026-11-25')
    assert 'Kubernetes 1.34 is past its upstream end of support (2026-10-28)' in message
    assert 'supported minor (1.35, 1.36)' in message


def test_minor_on_its_last_day_of_support_is_not_warned_about():
    assert checks.kubernetes_support_warning('1.34.12', RELEASES, '2026-10-28') == ''
    assert checks.kubernetes_support_warning('1.35.8', RELEASES, '2026-11-25') == ''


def test_chart_row_that_is_not_the_supported_line_names_the_supported_release():
    table = [{'chart_version': '26.1.2', 'support': 'Deprecated'}, {'chart_version': '26.4.1', 'support': 'Supported'}]
    message = checks.chart_support_warning(table[0], table)
    assert 'network-operator 26.1.2 is "Deprecated"' in message and 'Supported release is 26.4.1' in message
    assert checks.chart_support_warning(table[1], table) == ''


# --- release for a Kubernetes minor -----------------------------------------------------
# Hand-written rows: overlapping ranges, a patch without a range, versions that sort wrong as text.
ROWS = [
    {'version': 'v3.9.2', 'kubernetes_min': '1.24', 'kubernetes_max': '1.27'},
    {'version': 'v3.10.1', 'kubernetes_min': '1.26', 'kubernetes_max': '1.29'},
    {'version': 'v3.10.3'},
    {'version': 'v3.11.0', 'kubernetes_min': '1.29', 'kubernetes_max': '1.30'},
]


@pytest.mark.parametrize('minor,version', [('1.24', 'v3.9.2'), ('1.26', 'v3.10.1'), ('1.27', 'v3.10.1'),
                                           ('1.29', 'v3.11.0'), ('1.30', 'v3.11.0')])
def test_release_for_minor_is_the_newest_whose_range_includes_it(minor, version):
    assert checks.release_for_minor(ROWS, minor)['version'] == version


@pytest.mark.parametrize('minor', ['1.23', '1.31', '1.100', '', None, 1.3])
def test_release_for_minor_is_none_outside_every_range(minor):
    assert checks.release_for_minor(ROWS, minor) == {}


def test_release_for_minor_compares_minors_and_versions_as_numbers():
    rows = [{'chart_version': '9.1.0', 'kubernetes_min': '1.9', 'kubernetes_max': '1.10'},
            {'chart_version': '25.4.0', 'kubernetes_min': '1.10', 'kubernetes_max': '1.10'}]
    assert checks.release_for_minor(rows, '1.10', 'chart_version')['chart_version'] == '25.4.0'
    assert checks.release_for_minor(rows, '1.9', 'chart_version')['chart_version'] == '9.1.0'


# --- a pinned release against its row's Kubernetes range -------------------------------
def test_pinned_release_outside_its_rows_range_names_setting_value_minor_range_and_fix():
    message = checks.pinned_release_problem(ROWS, '1.30', 'calico_version', 'v3.9.2', 'version', 'ipu_k8s_versions.calico')
    assert message == (
        'calico_version is "v3.9.2", whose row in ipu_k8s_versions.calico serves Kubernetes 1.24 to 1.27, not this '
        'cluster\'s 1.30 (ipu_k8s_kubernetes_version): Leave calico_version unset (remove it from the inventory) and the table picks v3.11.0 for '
        'Kubernetes 1.30, or choose a Kubernetes release from 1.24 to 1.27.')


def test_pinned_chart_for_a_minor_no_row_serves_asks_for_a_documented_release():
    rows = [{'chart_version': '25.4.0', 'kubernetes_min': '1.29', 'kubernetes_max': '1.32'}]
    message = checks.pinned_release_problem(rows, '1.35', 'network_operator_chart_version', '25.4.0',
                                            'chart_version', 'ipu_k8s_versions.network_operator')
    assert message == (
        'network_operator_chart_version is "25.4.0", whose row in ipu_k8s_versions.network_operator serves Kubernetes '
        '1.29 to 1.32, not this cluster\'s 1.35 (ipu_k8s_kubernetes_version): Set network_operator_chart_version '
        'to a release documented for Kubernetes 1.35 (and give its row that range), or choose a Kubernetes '
        'release from 1.29 to 1.32.')


@pytest.mark.parametrize('minor,value', [
    ('1.26', 'v3.9.2'), ('1.27', 'v3.9.2'), ('1.24', 'v3.9.2'),   # inside the range, both ends included
    ('1.40', 'v9.9.9'),                                          # no row: the table's own check refuses it
    ('1.40', ''),                                                # nothing pinned
])
def test_pinned_release_within_its_range_or_of_no_row_passes(minor, value):
    assert checks.pinned_release_problem(ROWS, minor, 'calico_version', value, 'version', 'ipu_k8s_versions.calico') == ''


def test_pinned_release_whose_row_documents_no_range_is_refused():
    # A row without a Kubernetes range is not choosable: nothing says its release works with any minor.
    assert checks.pinned_release_problem(ROWS, '1.40', 'calico_version', 'v3.10.3', 'version', 'ipu_k8s_versions.calico') == (
        'calico_version is "v3.10.3", whose row in ipu_k8s_versions.calico gives no Kubernetes range its release documents, '
        'so nothing says it works with this cluster\'s 1.40 (ipu_k8s_kubernetes_version): Set calico_version to a '
        'release documented for Kubernetes 1.40 (and give its row that range), or give the row the range its '
        'release documents.')


def test_pinned_release_is_checked_against_the_range_its_row_documents_not_the_one_it_serves():
    rows = [{'chart_version': '26.4.1', 'kubernetes_min': '1.34', 'kubernetes_max': '1.35',
             'documented_min': '1.31', 'documented_max': '1.35'},
            {'chart_version': '26.1.2', 'documented_min': '1.31', 'documented_max': '1.35'}]
    assert checks.pinned_release_problem(rows, '1.31', 'network_operator_chart_version', '26.4.1', 'chart_version') == ''
    assert checks.pinned_release_problem(rows, '1.33', 'network_operator_chart_version', '26.1.2', 'chart_version') == ''
    assert 'documents Kubernetes 1.31 to 1.35, not this cluster\'s 1.36' in checks.pinned_release_problem(
        rows, '1.36', 'network_operator_chart_version', '26.1.2', 'chart_version')


def test_pinned_release_range_compares_minors_as_numbers():
    rows = [{'chart_version': '9.1.0', 'kubernetes_min': '1.9', 'kubernetes_max': '1.10'}]
    assert checks.pinned_release_problem(rows, '1.10', 'network_operator_chart_version', '9.1.0', 'chart_version') == ''
    assert 'serves Kubernetes 1.9 to 1.10, not this cluster\'s 1.11' in checks.pinned_release_problem(
        rows, '1.11', 'network_operator_chart_version', '9.1.0', 'chart_version')


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
        'ipu_k8s_problems', 'ipu_k8s_cluster_interface_problem', 'ipu_k8s_cluster_addresses_problem',
        'ipu_k8s_kubernetes_support_warning', 'ipu_k8s_chart_support_warning',
        'ipu_k8s_cluster_interface_of', 'ipu_k8s_release_for_minor', 'ipu_k8s_network_operator_chart',
        'ipu_k8s_ipu_operator_chart', 'ipu_k8s_registry_hosts_warning', 'ipu_k8s_sandbox_image_warning',
        'ipu_k8s_image_digest_warning'}


# --- the cluster networks against the node's RDMA subnet ---------------------------------
RDMA = {'cidr': '10.247.208.0/23', 'interface': 'rdma0'}
RDMA0 = dict(ETH0, ipv4={'address': '10.247.208.201', 'netmask': '255.255.254.0'})


def rdma_problem(pod, service, interface):
    """An IPU node with eth0 (10.200.0.2/24) and its RDMA NIC rdma0 (10.247.208.201/23), whose
    cluster-facing interface is interface."""
    facts = node_facts(interface, {'eth0': ETH0, 'rdma0': RDMA0, 'lo': LO})
    return checks.cluster_interface_problem('ipu1', '', facts, pod, service, RDMA)


@pytest.mark.parametrize('pod, service', [
    ('192.168.0.0/16', '10.96.0.0/12'),     # the defaults, far from 10.247.208.0/23
    ('10.247.210.0/23', '10.247.206.0/23'),  # the /23s on either side of it
    ('10.247.208.0/33', 'not-a-network'),    # refused on their own (cluster_networks_problem)
])
def test_cluster_networks_clear_of_the_rdma_subnet_pass(pod, service):
    assert rdma_problem(pod, service, 'eth0') == ''


@pytest.mark.parametrize('pod, service, interface', [
    ('10.247.0.0/16', '10.96.0.0/12', 'eth0'),      # the pod network holds the RDMA /23
    ('192.168.0.0/16', '10.247.209.0/24', 'eth0'),  # the service network lies inside it
    ('10.247.209.128/25', '10.96.0.0/12', 'eth0'),  # the last /25 of it
    ('192.168.0.0/16', '10.96.0.0/12', 'rdma0'),    # cluster traffic on the RDMA NIC
])
def test_cluster_networks_on_the_rdma_subnet_or_nic_are_refused(pod, service, interface):
    assert rdma_problem(pod, service, interface) == (
        'On ipu1 the RDMA subnet is 10.247.208.0/23 on rdma0. ipu_k8s_pod_subnet=%s and ipu_k8s_service_subnet=%s '
        'must not overlap it, and the cluster-facing interface (%s) must not be the RDMA interface: pods would '
        'route IPU traffic through the wrong network. Choose other pod/service CIDRs or set '
        'ipu_k8s_cluster_interface.' % (pod, service, interface))


def test_a_node_without_an_rdma_network_is_not_held_to_one():
    assert interface_problem(pod='10.247.0.0/16') == ''


# --- image references -------------------------------------------------------------------
# Cases from github.com/distribution/reference, reference_test.go (TestReferenceParse, commit
# 4894124079e525c3c3c5c8aacaa653b5499004e9), the grammar in regexp.go (commit 00a09fa3799203fc):
# inputs Parse accepts, and inputs it refuses. The digest is narrowed to sha256 here.
FFS = 'f' * 64
UPSTREAM_VALID = [
    'test_com', 'test.com:tag', 'test.com:5000', 'test.com/repo:tag', 'test:5000/repo', 'test:5000/repo:tag',
    'test:5000/repo@sha256:' + FFS, 'test:5000/repo:tag@sha256:' + FFS, 'lowercase:Uppercase',
    'a/' * 127 + 'a:tag-puts-this-over-max', 'sub-dom1.foo.com/bar/baz/quux:some-long-tag',
    'b.gcr.io/test.example.com/my-app:test.example.com', 'xn--n3h.com/myimage:xn--n3h.com', 'foo_bar.com:8080',
    'foo/foo_bar.com:8080', '192.168.1.1', '192.168.1.1:5000/repo:5050', '[2001:db8::1]/repo',
    '[2001:db8:1:2:3:4:5:6]/repo:tag', '[2001:db8::1]:5000/repo:tag@sha256:' + FFS, '[::1]:5000/repo',
]
UPSTREAM_INVALID = [
    '', ':justtag', '@sha256:' + FFS, 'repo@sha256:' + 'f' * 34, 'validname@invaliddigest:' + FFS, 'Uppercase:tag',
    'test:5000/Uppercase/lowercase:tag', 'a/' * 128 + 'a:tag', 'aa/asdf$$^/aa', '[2001:db8::1]',
    '[2001:db8::1]:5000', '[2001:db8::1]:tag', '[fe80::1%eth0]:5000/repo',
]


@pytest.mark.parametrize('reference', UPSTREAM_VALID)
def test_references_the_distribution_grammar_accepts_pass(reference):
    assert setting_problem('image', 'some_image', reference) == ''


@pytest.mark.parametrize('reference', UPSTREAM_INVALID + [
    "registry.k8s.io/x:v1'$(touch${IFS}/tmp/p)'", 'registry.k8s.io/pause:3.10\n', 'registry.k8s.io/pause:3.10 ',
    'registry.k8s.io/pause:' + 'x' * 129, 'registry.k8s.io/pause@sha512:' + 'f' * 128, None, 310])
def test_references_the_grammar_refuses_are_refused_naming_the_setting_and_the_form(reference):
    message = setting_problem('image', 'some_image', reference)
    assert message.startswith('some_image is "%s", which is not an image reference' % reference)
    assert '[registry[:port]/]path[:tag][@sha256:<64 hex digits>]' in message


def test_an_image_left_to_the_default_may_be_empty_and_says_so_when_bad():
    assert checks.setting_problems({'a': ''}, 'image_or_empty') == []
    assert checks.setting_problems({'a': 'A'}, 'image_or_empty')[0].endswith('or "" for the default.')


@pytest.mark.parametrize('value, ok', [('', True), ('registry.example.com/k8s', True), ('reg:5000', True),
                                       ('registry.example.com/k8s:v1', False), ('Registry.example.com/K8s', False)])
def test_an_image_repository_has_no_tag(value, ok):
    assert (setting_problem('repository_or_empty', 'kubeadm_image_repository', value) == '') == ok


@pytest.mark.parametrize('value, ok', [('', True), ('registry.example.com/', True), ('reg:5000/mirror/', True),
                                       ('registry.example.com', False), ('Reg.example.com/Mirror/', False)])
def test_a_registry_prefix_ends_with_a_slash(value, ok):
    assert (setting_problem('registry_prefix_or_empty', 'calico_registry', value) == '') == ok


# --- names, durations, seconds ----------------------------------------------------------

@pytest.mark.parametrize('value, ok', [('rdma-net', True), ('a', True), ('a' * 63, True), ('a' * 64, False),
                                       ('rdma_net', False), ('Rdma', False), ('-a', False), ('a.b', False),
                                       ('a\n', False), (None, False)])
def test_a_kubernetes_name_is_a_dns_1123_label(value, ok):
    assert (checks.dns_label_problem('ipu_k8s_rdma_network_name', value) == '') == ok


def test_a_bad_name_is_refused_with_a_suggestion():
    assert checks.dns_label_problem('ipu_k8s_rdma_network_name', 'RDMA_Net') == (
        'ipu_k8s_rdma_network_name is "RDMA_Net", which is not a valid Kubernetes name (DNS-1123 label): use at '
        'most 63 lower-case letters, digits and "-", starting and ending with a letter or digit, e.g. rdma-net.')


@pytest.mark.parametrize('value, ok', [('ipu-operator', True), ('a' * 53, True), ('a' * 54, False)])
def test_a_helm_release_name_has_at_most_53_characters(value, ok):
    assert (checks.setting_problems({'ipu_k8s_ipu_operator_release': value}, 'helm_release') == []) == ok


@pytest.mark.parametrize('value, ok', [('10m', True), ('90s', True), ('1h30m', True), ('1.5h', True),
                                       ('600', False), (600, False), ('0s', False), ('10 m', False), ('m', False),
                                       ('10min', False), ('', False)])
def test_a_duration_has_a_unit(value, ok):
    assert (checks.duration_problem('ipu_operator_helm_timeout', value) == '') == ok


@pytest.mark.parametrize('value, ok', [(300, True), ('300', True), (1, True), (0, False), (-5, False),
                                       ('5m', False), (True, False), (1.5, False)])
def test_seconds_are_a_positive_whole_number(value, ok):
    assert (checks.setting_problems({'calico_wait_timeout': value}, 'seconds') == []) == ok


def test_days_are_a_positive_whole_number_named_as_days():
    assert checks.setting_problems({'ipu_operator_webhook_cert_renew_days': 30}, 'days') == []
    assert checks.setting_problems({'ipu_operator_webhook_cert_renew_days': '30d'}, 'days') == [
        'ipu_operator_webhook_cert_renew_days is "30d": give a positive whole number of days, without a unit (e.g. 30).']


def test_a_count_is_a_positive_whole_number_named_as_repetitions():
    assert checks.setting_problems({'verify_datapath_ping_count': 3}, 'count') == []
    assert checks.setting_problems({'verify_datapath_ping_count': 0}, 'count') == [
        'verify_datapath_ping_count is "0": give a positive whole number of repetitions, without a unit (e.g. 3).']


# --- every role's settings through ipu_k8s_problems ({kind: settings}) ------------------------

def test_kinds_are_checked_in_the_order_given_and_only_bad_settings_speak():
    # Settings of one kind in the order of their names; a rule on settings read together
    # that finds nothing wrong adds nothing.
    assert checks.problems({'seconds': {'c_timeout': 5, 'b_timeout': 0, 'a_timeout': -1},
                            'helm_download': {'helm_version': '3.16.3',
                                              'releases': {'3.16.3': {'kubernetes_min': '1.28',
                                                                           'kubernetes_max': '1.31'}},
                                              'ipu_k8s_kubernetes_minor': '1.31',
                                              'helm_tarball_checksum': ''},
                            'memlock': {'m': 'lots'}}) == [
        'a_timeout is "-1": give a positive whole number of seconds, without a unit (e.g. 300).',
        'b_timeout is "0": give a positive whole number of seconds, without a unit (e.g. 300).',
        'm is "lots": set it to "infinity" or a size such as 68719476736 or 64G (systemd\'s LimitMEMLOCK).']
    assert checks.problems({}) == []


def test_an_unknown_kind_is_a_programming_error_not_a_pass():
    with pytest.raises(KeyError):
        checks.problems({'no_such_kind': {'a': 1}})


@pytest.mark.parametrize('value, ok', [('infinity', True), ('64G', True), (68719476736, True), ('65536', True),
                                       ('8E', True), ('lots', False), ('64GB', False), ('64g', False),
                                       ('-1', False), ('', False), (True, False), ('infinity\n', False)])
def test_memlock_is_infinity_or_a_size(value, ok):
    expected = [] if ok else ['containerd_limit_memlock is "%s": set it to "infinity" or a size such as '
                              '68719476736 or 64G (systemd\'s LimitMEMLOCK).' % value]
    assert checks.problems({'memlock': {'containerd_limit_memlock': value}}) == expected


@pytest.mark.parametrize('value, ok', [('', True), (__file__, True), ('keys/docker.asc', False),
                                       ('~/docker.asc', False), (None, False), (0, False)])
def test_a_controller_path_is_absolute_or_empty(value, ok):
    expected = [] if ok else ['containerd_docker_gpg_key_local_path is "%s": give the absolute path of a file on '
                              'the Ansible controller, or "" to download it.' % value]
    assert checks.problems({'local_file': {'containerd_docker_gpg_key_local_path': {'path': value}}}) == expected


def test_sha256_per_file_names_only_the_bad_entries_as_json():
    good = 'a' * 64
    assert checks.problems({'sha256_by_file': {'debs': {'kubeadm.deb': good}}}) == []
    assert checks.problems({'sha256_by_file': {'debs': {}}}) == []
    assert checks.problems({'sha256_by_file': {'debs': {'kubeadm.deb': good, 'kubelet.deb': 'sha256:' + good,
                                                        'kubectl.deb': 'A' * 64}}}) == [
        'debs gives {"kubelet.deb": "sha256:%s", "kubectl.deb": "%s"}: give each file\'s sha256 as 64 lowercase hex '
        'digits without a "sha256:" prefix, as sha256sum prints it.' % (good, 'A' * 64)]


def registry_hosts_message(name, entry_json):
    return ('containerd_registry_hosts["%s"] is %s: give a registry name (host or host:port, dot-separated labels of '
            'letters, digits and "-", none empty) with server (an http(s) URL, optional) and mirrors, each with url '
            '(an http(s) URL) and optionally capabilities, ca and skip_verify.' % (name, entry_json))


@pytest.mark.parametrize('hosts', [
    {},
    {'docker.io': {'mirrors': [{'url': 'https://mirror.example.com', 'capabilities': ['pull']}]}},
    {'registry.example.com:5000': {'server': 'http://registry.example.com:5000', 'mirrors': []}},
    {'quay.io': {'server': 'https://quay.io'}},
])
def test_registry_hosts_with_names_and_http_urls_pass(hosts):
    assert checks.problems({'registry_hosts': {'containerd_registry_hosts': hosts}}) == []


@pytest.mark.parametrize('name, entry, entry_json', [
    ('docker.io', {'mirrors': [{'url': 'mirror.example.com; rm -rf /'}]},
     '{"mirrors": [{"url": "mirror.example.com; rm -rf /"}]}'),
    ('docker.io', {'mirrors': [{'url': 'https://mirror.example.com/a b'}]},
     '{"mirrors": [{"url": "https://mirror.example.com/a b"}]}'),
    ('docker.io', {'mirrors': [{'ca': '/etc/ca.pem'}]}, '{"mirrors": [{"ca": "/etc/ca.pem"}]}'),
    ('docker.io', {'mirrors': 'https://mirror.example.com'}, '{"mirrors": "https://mirror.example.com"}'),
    ('docker.io', {'server': 'ftp://docker.io'}, '{"server": "ftp://docker.io"}'),
    ('docker.io', 'https://mirror.example.com', '"https://mirror.example.com"'),
    ('https://docker.io', {}, '{}'),
    ('docker.io:port', {}, '{}'),
])
def test_a_bad_registry_host_is_refused_naming_it_and_its_value(name, entry, entry_json):
    hosts = {'quay.io': {'server': 'https://quay.io'}, name: entry}
    assert checks.problems({'registry_hosts': {'containerd_registry_hosts': hosts}}) == [
        registry_hosts_message(name, entry_json)]


@pytest.mark.parametrize('value, ok', [('ipu-k8s-verify', True), ('n' * 64, True), ('a.b_c-1', True),
                                       ('n' * 65, False), ('../../etc', False), ('-force', False), ('', False),
                                       ('a b', False), (7, False)])
def test_a_netns_name_is_a_plain_name_of_at_most_64(value, ok):
    expected = [] if ok else ['verify_datapath_netns is "%s": use 1 to 64 letters, digits, "_", "." or "-", starting '
                              'with a letter or digit (a network namespace name, e.g. ipu-k8s-verify).' % value]
    assert checks.problems({'netns_name': {'verify_datapath_netns': value}}) == expected


@pytest.mark.parametrize('value, ok', [('ipuk8sverify0', True), ('l' * 15, True), ('l' * 16, False),
                                       ('-force', False), ('eth0/1', False), ('', False)])
def test_a_link_name_is_a_plain_name_of_at_most_15(value, ok):
    expected = [] if ok else ['verify_datapath_link is "%s": use 1 to 15 letters, digits, "_", "." or "-", starting '
                              'with a letter or digit (a Linux interface name, e.g. ipuk8sverify0).' % value]
    assert checks.problems({'link_name': {'verify_datapath_link': value}}) == expected


GROUPS_MESSAGE = ('The inventory must define control_plane (at least one host), workers, k8s_cluster (children: '
                  'control_plane, workers) and ipu_nodes (a subset of k8s_cluster). Found control_plane=%s, '
                  'k8s_cluster=%s, ipu_nodes=%s. See inventories/gcore/hosts.yml.')


def test_groups_with_a_control_plane_and_ipu_nodes_inside_the_cluster_pass():
    groups = {'all': ['a', 'b'], 'control_plane': ['a'], 'workers': ['b'], 'k8s_cluster': ['a', 'b'],
              'ipu_nodes': ['b']}
    assert checks.problems({'inventory_groups': groups}) == []
    assert checks.problems({'inventory_groups': {'control_plane': ['a'], 'k8s_cluster': ['a']}}) == []


@pytest.mark.parametrize('groups, found', [
    ({'k8s_cluster': ['a']}, ("[]", "['a']", "[]")),
    ({'control_plane': [], 'k8s_cluster': ['a']}, ("[]", "['a']", "[]")),
    ({'control_plane': ['a'], 'k8s_cluster': []}, ("['a']", "[]", "[]")),
    ({'control_plane': ['x'], 'k8s_cluster': ['a']}, ("['x']", "['a']", "[]")),
    ({'control_plane': ['a'], 'k8s_cluster': ['a'], 'ipu_nodes': ['stray']}, ("['a']", "['a']", "['stray']")),
])
def test_groups_the_journey_cannot_use_are_refused_listing_them(groups, found):
    assert checks.problems({'inventory_groups': groups}) == [GROUPS_MESSAGE % found]


def test_the_shared_rules_read_their_settings_by_name():
    # The rules of their own tests above, reached through their kinds.
    assert checks.problems({
        'cluster_networks': {'ipu_k8s_pod_subnet': '10.96.0.0/16', 'ipu_k8s_service_subnet': '10.96.0.0/12'},
        'kubernetes_version': {'ipu_k8s_kubernetes_version': '1.31', 'supported_minors': ['1.31']},
        'pod_subnet_capacity': {'ipu_k8s_pod_subnet': '192.168.0.0/24', 'calico_block_size': 26,
                                'nodes': ['a', 'b']},
        'hosts': [{'host': 'a', 'node_name': 'n', 'kubernetes_version': '1.31.1'},
                  {'host': 'b', 'node_name': 'n', 'kubernetes_version': '1.31.1'}]}) == [
        'ipu_k8s_pod_subnet=10.96.0.0/16 and ipu_k8s_service_subnet=10.96.0.0/12 overlap: pod and service addresses '
        'must not overlap each other. Choose two disjoint networks (defaults 192.168.0.0/16 and 10.96.0.0/12).',
        'ipu_k8s_kubernetes_version=1.31 is not a full release: give major.minor.patch as the packages are '
        'versioned, e.g. "1.31.0" (supported minors: 1.31).',
        'ipu_k8s_pod_subnet=192.168.0.0/24 is too small for 2 nodes: it holds only 1 per-node /24 ranges. Use a /23 '
        'or larger network.',
        'ipu_k8s_node_name=n is the Kubernetes node name of a and b: the second would take over the first one\'s '
        'Node object. Give each host its own ipu_k8s_node_name (the default is its inventory name).']


CRDS = 'a' * 64
OPERATOR = 'b' * 64
CALICO_RELEASES = {'v3.29.6': {'kubernetes_min': '1.29', 'kubernetes_max': '1.31',
                               'sha256': {'operator-crds.yaml': CRDS, 'tigera-operator.yaml': OPERATOR}},
                   'v3.30.2': {'documented_min': '1.30', 'documented_max': '1.35',
                               'sha256': {'operator-crds.yaml': CRDS, 'tigera-operator.yaml': OPERATOR}},
                   'v3.31.7': {'kubernetes_min': '1.32', 'kubernetes_max': '1.35',
                               'sha256': {'operator-crds.yaml': CRDS, 'tigera-operator.yaml': OPERATOR}}}


def calico(version='v3.31.7', minor='1.33', checksums=None, manifests=('operator-crds.yaml', 'tigera-operator.yaml')):
    return checks.problems({'calico_release': {
        'calico_version': version, 'releases': CALICO_RELEASES, 'calico_manifests': list(manifests),
        'calico_manifest_checksums': {'operator-crds.yaml': CRDS, 'tigera-operator.yaml': OPERATOR}
        if checksums is None else checksums, 'ipu_k8s_kubernetes_minor': minor}})


@pytest.mark.parametrize('version, minor', [('v3.31.7', '1.33'), ('v3.30.2', '1.35'), ('v3.29.6', '1.29')])
def test_a_calico_release_of_the_minor_or_pinned_within_its_documented_range_passes(version, minor):
    assert calico(version, minor) == []


@pytest.mark.parametrize('version', ['', '3.31.7', 'v3.31', 'v3.31.7-rc1', 'latest'])
def test_no_calico_release_tag_is_refused_naming_the_minor(version):
    assert calico(version, '1.40') == [
        'No Calico release for Kubernetes 1.40 ("%s"). Set calico_version (e.g. v3.31.7) to a release whose system '
        'requirements list this Kubernetes minor, or give its ipu_k8s_versions.calico row the tested range.' % version]


def test_a_pinned_calico_release_outside_its_range_is_refused():
    assert calico('v3.29.6', '1.33') == [
        'calico_version is "v3.29.6", whose row in ipu_k8s_versions.calico serves Kubernetes 1.29 to 1.31, not this '
        'cluster\'s 1.33 (ipu_k8s_kubernetes_version): Leave calico_version unset (remove it from the inventory) and the table picks v3.31.7 for '
        'Kubernetes 1.33, or choose a Kubernetes release from 1.29 to 1.31.']


@pytest.mark.parametrize('checksums, missing', [
    ({}, 'operator-crds.yaml, tigera-operator.yaml'),
    ({'operator-crds.yaml': CRDS, 'tigera-operator.yaml': 'sha256:' + OPERATOR}, 'tigera-operator.yaml'),
    ({'operator-crds.yaml': CRDS.upper(), 'tigera-operator.yaml': OPERATOR}, 'operator-crds.yaml'),
    ({'tigera-operator.yaml': OPERATOR}, 'operator-crds.yaml'),
])
def test_a_calico_manifest_without_a_sha256_is_refused_naming_it(checksums, missing):
    assert calico('v3.99.0', '1.33', checksums) == [
        'calico_version is v3.99.0, and calico_manifest_checksums has no sha256 (64 lowercase hex digits) for %s. '
        'Choose a release of ipu_k8s_versions.calico (v3.31.7 is the newest), or set calico_manifest_checksums to the '
        'files\' sha256 (git show v3.99.0:manifests/FILE | sha256sum in a clone of projectcalico/calico).' % missing]


def test_only_the_manifests_the_release_applies_need_a_sha256():
    assert calico('v3.99.0', '1.33', {'tigera-operator.yaml': OPERATOR}, ['tigera-operator.yaml']) == []


def test_a_release_of_the_table_needs_no_checksum_from_the_site():
    assert calico('v3.31.7', '1.33', {}) == []


def test_a_sites_checksum_that_is_not_one_is_refused_even_when_the_row_has_one():
    assert calico('v3.31.7', '1.33', {'tigera-operator.yaml': 'sha256:' + OPERATOR}) == [
        'calico_version is v3.31.7, and calico_manifest_checksums has no sha256 (64 lowercase hex digits) for '
        'tigera-operator.yaml. Choose a release of ipu_k8s_versions.calico (v3.31.7 is the newest), or set '
        'calico_manifest_checksums to the files\' sha256 (git show v3.31.7:manifests/FILE | sha256sum in a clone of '
        'projectcalico/calico).']


HELM_RANGE = {'kubernetes_min': '1.28', 'kubernetes_max': '1.31'}


def helm(version, checksum=''):
    return checks.problems({'helm_download': {'helm_version': version, 'helm_tarball_checksum': checksum,
                                              'ipu_k8s_kubernetes_minor': '1.31',
                                              'releases': {'3.16.3': HELM_RANGE, '3.17.0': HELM_RANGE}}})


def test_a_helm_release_of_the_table_or_with_a_checksum_passes():
    assert helm('3.17.0') == [] and helm('3.99.0', 'c' * 64) == []


def test_a_helm_release_nothing_could_check_is_refused():
    assert helm('3.99.0') == [
        'helm_version is 3.99.0, which is not a row of ipu_k8s_versions.helm (known: 3.16.3, 3.17.0), and '
        'helm_tarball_checksum is empty, so nothing could check the download. Choose a known release, or set '
        'helm_tarball_checksum to the sha256 published in https://get.helm.sh/helm-v3.99.0-linux-ARCH.tar.gz.sha256sum.']


def test_a_minor_without_a_kubeadm_configuration_api_is_refused():
    settings = {'ipu_k8s_kubernetes_version': '1.21.4', 'ipu_k8s_kubernetes_minor': '1.21'}
    assert checks.problems({'kubeadm_api': dict(settings, kubeadm_api_version='kubeadm.k8s.io/v1beta4')}) == []
    assert checks.problems({'kubeadm_api': dict(settings, kubeadm_api_version='')}) == [
        'ipu_k8s_kubernetes_version is 1.21.4: no kubeadm configuration API in __kubeadm_api_versions '
        '(roles/kubeadm/vars/main.yml) covers Kubernetes 1.21. Choose a release preflight_supported_kubernetes_minors '
        'lists, or add the API version kubeadm 1.21 reads to that table.']


def endpoint(value='', port=6443, control_plane=('cp1',)):
    return checks.problems({'control_plane_endpoint': {
        'kubeadm_control_plane_endpoint': value, 'kubeadm_api_server_port': port, 'control_plane': list(control_plane)}})


@pytest.mark.parametrize('value, port, control_plane', [
    ('', 6443, ['cp1']), ('k8s-api.example.com:6443', 6443, ['cp1', 'cp2', 'cp3']), ('10.0.0.10', 1, ['cp1']),
    ('', 65535, ['cp1']), ('', '8443', ['cp1'])])
def test_an_endpoint_and_port_kubeadm_can_write_pass(value, port, control_plane):
    assert endpoint(value, port, control_plane) == []


def test_several_control_planes_without_a_shared_endpoint_are_refused():
    assert endpoint('', 6443, ['cp1', 'cp2']) == [
        'The control_plane group has 2 hosts. Set kubeadm_control_plane_endpoint to a DNS name or load-balancer '
        'address that reaches all of them (port 6443) before the first run: kubeadm writes it into the certificates.']


@pytest.mark.parametrize('value, port', [('https://k8s-api.example.com:6443', 6443), ('k8s-api.example.com/api', 6443),
                                         ('', 0), ('', 65536), ('', 70000), ('', '64 43'), ('', True), ('', -1)])
def test_an_endpoint_with_a_scheme_or_path_or_a_port_outside_1_65535_is_refused(value, port):
    assert endpoint(value, port) == [
        'kubeadm_api_server_port=%s and kubeadm_control_plane_endpoint="%s": the port must be 1-65535 and the '
        'endpoint a bare lower-case DNS name or IP address with an optional ":port" (e.g. k8s-api.example.com:6443), '
        'without a '
        'scheme or path: kubeadm writes it into the certificates and kubeconfigs as it is.' % (port, value)]


CHARTS = {'1.1.0': {'archive': 'ipu-operator-helm-chart-1.1.0.tgz',
                    'sha256': {'ipu-operator-helm-chart-1.1.0.tgz': 'c' * 64}, 'ships_crd': False},
          '1.2.0': {'archive': 'charts/ipu-operator-helm-chart-1.2.0.tgz',
                    'sha256': {'ipu-operator-helm-chart-1.2.0.tgz': 'd' * 64}, 'ships_crd': True},
          '1.3.0': {'archive': 'ipu-operator-helm-chart-1.3.0.tgz', 'ships_crd': 'no',
                    'sha256': {'ipu-operator-helm-chart-1.3.0.tgz': 'e' * 64, 'graphcore_ai_ipujobs.yaml': 'f' * 64}}}


def ipu_operator(version='1.2.0', url='', local_path='', checksum='', charts=None):
    return checks.problems({'ipu_operator_chart': {
        'ipu_operator_chart_version': version, 'releases': CHARTS if charts is None else charts,
        'ipu_operator_crd_url': url, 'ipu_operator_crd_local_path': local_path,
        'ipu_operator_crd_checksum': checksum}})


@pytest.mark.parametrize('settings', [
    {}, {'version': '1.1.0', 'url': 'https://example.invalid/crd.yaml', 'checksum': 'a' * 64},
    {'version': '1.1.0', 'local_path': '/srv/crd.yaml', 'checksum': 'a' * 64},
    {'version': '1.3.0', 'url': 'https://example.invalid/crd.yaml'}])
def test_a_chart_row_that_can_be_verified_passes(settings):
    assert ipu_operator(**settings) == []


def test_a_chart_version_without_a_row_is_refused_listing_the_rows():
    assert ipu_operator('9.9.9') == [
        'ipu_operator_chart_version is "9.9.9", which has no row in ipu_k8s_versions.ipu_operator (1.1.0, 1.2.0, 1.3.0): '
        'pick one of those, or add a row with the facts read in that chart (archive, sha256 of the archive and of a '
        'CRD it does not ship, ships_crd, images.kube_rbac_proxy).']


@pytest.mark.parametrize('row, archive, digest', [
    ({'archive': 'x.tgz', 'sha256': {'x.tgz': 'sha256:' + 'c' * 64}, 'ships_crd': True}, 'x.tgz', 'sha256:' + 'c' * 64),
    ({'archive': 'x.tgz', 'sha256': {'y.tgz': 'c' * 64}, 'ships_crd': True}, 'x.tgz', ''),
    ({'archive': '', 'sha256': {'x.tgz': 'c' * 64}, 'ships_crd': True}, '', ''),
    ({'ships_crd': True}, '', '')])
def test_a_chart_row_without_its_archive_or_sha256_is_refused(row, archive, digest):
    assert ipu_operator('2.0.0', charts={'2.0.0': row}) == [
        'ipu_k8s_versions.ipu_operator["2.0.0"] has archive "%s" and sha256 "%s" for it: give the archive\'s path in '
        'the repository and its sha256 under its file name (64 lower-case hex digits, the digest in the repository\'s '
        'index.yaml).' % (archive, digest)]


@pytest.mark.parametrize('version', ['1.1.0', '1.3.0'])
def test_a_chart_without_its_crd_and_no_crd_source_is_refused(version):
    assert ipu_operator(version) == [
        'Chart %s does not ship the IPUJob CRD and ipu_operator_crd_url and ipu_operator_crd_local_path are empty: '
        'set ipu_operator_crd_url to the graphcore.ai_ipujobs_*.yaml asset of the matching graphcore/helm-charts '
        'release, or ipu_operator_crd_local_path to a copy of it on the Ansible control node.' % version]


@pytest.mark.parametrize('checksum', ['', 'sha256:' + 'a' * 64, 'A' * 64])
def test_a_separate_crd_without_a_bare_sha256_is_refused(checksum):
    assert ipu_operator('1.1.0', url='https://example.invalid/crd.yaml', checksum=checksum) == [
        'Chart 1.1.0 needs its IPUJob CRD applied first, and ipu_operator_crd_checksum is "%s": set it to the CRD '
        'file\'s sha256, 64 lowercase hex digits without a "sha256:" prefix (sha256sum graphcore.ai_ipujobs_*.yaml), '
        'so a changed or truncated file is refused before it reaches the cluster.' % checksum]


@pytest.mark.parametrize('values, owned', [
    ({'global': {'vipuControllers': 'pod1'}}, 'global.vipuControllers'),
    ({'worker': {'hostNetwork': True}}, 'worker.hostNetwork'),
    ({'global': {'vipuControllers': 'pod1'}, 'worker': {'hostNetwork': False}}, 'global.vipuControllers')])
def test_extra_values_that_set_what_the_role_owns_are_refused(values, owned):
    assert checks.problems({'ipu_operator_values': {'ipu_operator_extra_values': values}}) == [
        'ipu_operator_extra_values sets %s: the role builds global.vipuControllers from the V-IPU controllers the IPU '
        'nodes resolved, and IPUJob workers never use the host network here. Remove it from '
        'ipu_operator_extra_values.' % owned]


@pytest.mark.parametrize('values', [{}, None, {'global': None, 'worker': None},
                                    {'global': {'imagePullSecrets': []}, 'worker': {'resources': {}}}])
def test_extra_values_of_the_charts_own_settings_pass(values):
    assert checks.problems({'ipu_operator_values': {'ipu_operator_extra_values': values}}) == []


def become(user='root', become_on=True, become_user='root'):
    return checks.problems({'become_root': {'host': 'node-a', 'ansible_user': user, 'ansible_become': become_on,
                                            'ansible_become_user': become_user}})


@pytest.mark.parametrize('user, become_on, become_user', [
    ('root', False, 'ops'), ('ops', True, 'root'), ('ops', 'yes', 'root'), ('ops', 'True', 'root'), ('ops', 1, 'root')])
def test_a_host_reached_as_root_or_becoming_root_passes(user, become_on, become_user):
    assert become(user, become_on, become_user) == []


@pytest.mark.parametrize('become_on, become_user', [(False, 'root'), ('no', 'root'), ('false', 'root'),
                                                    (True, 'ops'), (0, 'root')])
def test_a_host_whose_node_steps_would_not_run_as_root_is_refused(become_on, become_user):
    assert become('ops', become_on, become_user) == [
        'node-a is reached as ops with ansible_become %s and ansible_become_user %s: the node steps (packages, kernel '
        'modules, sysctls, kubeadm) would not run as root. Remove ansible_become and ansible_become_user for this '
        'host (the playbooks become root), or connect as root.' % (become_on, become_user)]


@pytest.mark.parametrize('become_on', [None, '', 'sometimes'])
def test_an_ansible_become_that_is_no_boolean_does_not_become_root(become_on):
    # `ansible_become:` left empty in YAML is None; Ansible reads only its true words as true
    assert become('ops', become_on, 'root') == [
        'node-a is reached as ops with ansible_become %s and ansible_become_user root: the node steps (packages, '
        'kernel modules, sysctls, kubeadm) would not run as root. Remove ansible_become and ansible_become_user for '
        'this host (the playbooks become root), or connect as root.' % become_on]


def test_a_chart_row_that_does_not_say_it_ships_the_crd_needs_a_crd_source():
    assert ipu_operator('2.0.0', charts={'2.0.0': {'archive': 'x.tgz', 'sha256': {'x.tgz': 'c' * 64}}}) == [
        'Chart 2.0.0 does not ship the IPUJob CRD and ipu_operator_crd_url and ipu_operator_crd_local_path are empty: '
        'set ipu_operator_crd_url to the graphcore.ai_ipujobs_*.yaml asset of the matching graphcore/helm-charts '
        'release, or ipu_operator_crd_local_path to a copy of it on the Ansible control node.']


@pytest.mark.parametrize('releases', [[], None])
def test_no_calico_release_tag_and_an_empty_table_give_a_tag_pattern_as_the_example(releases):
    assert checks.problems({'calico_release': {
        'calico_version': '', 'releases': releases, 'calico_manifests': ['tigera-operator.yaml'],
        'calico_manifest_checksums': {}, 'ipu_k8s_kubernetes_minor': '1.33'}}) == [
        'No Calico release for Kubernetes 1.33 (""). Set calico_version (e.g. vX.Y.Z) to a release whose system '
        'requirements list this Kubernetes minor, or give its ipu_k8s_versions.calico row the tested range.']
