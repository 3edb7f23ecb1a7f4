"""What verify's checks read, as rows' observations (plugins/filter/verify_observe.py).

Inputs are the tools' own output formats: `rdma -j link show` (iproute2 rdma/link.c:
ifindex, ifname, port, state, physical_state, netdev), `ip -j addr` and `ip -j route`,
`systemctl show`, /proc/<pid>/limits, and Kubernetes Node and IPUJob objects. Every
expected value is written out by hand.
"""

import importlib.util
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_observe', ROOT / 'plugins' / 'filter' / 'verify_observe.py')
observe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(observe)

# The lab's node: rxe0 on eth1 (Soft-RoCE), plus a second NIC that is down.
LINKS = json.dumps([
    {'ifindex': 0, 'ifname': 'rxe0', 'port': 1, 'state': 'ACTIVE', 'physical_state': 'LINK_UP', 'netdev': 'eth1',
     'netdev_index': 3},
    {'ifindex': 1, 'ifname': 'mlx5_1', 'port': 1, 'state': 'DOWN', 'physical_state': 'DISABLED', 'netdev': 'ens2f1',
     'netdev_index': 5},
])


def reading(links, devices=()):
    """The RDMA device check's reading: `rdma -j link show`, then /sys/class/infiniband, one
    device a line, 'soft-roce' after a device with a parent attribute."""
    return '%s\n# /sys/class/infiniband\n%s' % (links, ''.join('%s\n' % device for device in devices))


LAB = reading(LINKS, ['rxe0 soft-roce', 'mlx5_1'])
NETWORK = {'interface': 'eth1', 'cidr': '10.247.208.0/23', 'excludes': ['10.247.208.0/25', '10.247.209.200/32'],
           'mtu': 9000, 'prefix': 23}


def test_the_rdma_device_row_lists_each_link_and_the_sysfs_devices():
    assert observe.verify_rdma_device_seen(LAB) == {
        'observed': 'rdma link: rxe0/1 ACTIVE eth1, mlx5_1/1 DOWN ens2f1; /sys/class/infiniband: rxe0, mlx5_1',
        'ok': True}


@pytest.mark.parametrize('links, devices, observed', [
    ('[]', [], 'rdma link: none; /sys/class/infiniband: empty'),
    (json.dumps([{'ifname': 'mlx5_1', 'port': 1, 'state': 'DOWN', 'netdev': 'ens2f1'}]), ['mlx5_1'],
     'rdma link: mlx5_1/1 DOWN ens2f1; /sys/class/infiniband: mlx5_1'),
    (LINKS, [], 'rdma link: rxe0/1 ACTIVE eth1, mlx5_1/1 DOWN ens2f1; /sys/class/infiniband: empty'),
])
def test_no_active_link_or_an_empty_sysfs_fails_the_rdma_device_row(links, devices, observed):
    assert observe.verify_rdma_device_seen(reading(links, devices)) == {'observed': observed, 'ok': False}


def test_the_device_of_an_interface_is_the_link_whose_netdev_it_is():
    assert observe.verify_rdma_device(LAB, 'eth1') == 'rxe0'
    assert observe.verify_rdma_device(LAB, 'ens2f1') == 'mlx5_1'
    assert observe.verify_rdma_device(LAB, 'eth0') == ''
    # a link without a network device (InfiniBand) is no interface's
    assert observe.verify_rdma_device(json.dumps([{'ifname': 'mlx5_0', 'port': 1, 'state': 'ACTIVE'}]), '') == ''


def test_output_that_is_not_json_is_refused_naming_the_command():
    with pytest.raises(AnsibleFilterError, match='rdma -j link show is not JSON'):
        observe.verify_rdma_device('link rxe0/1 state ACTIVE', 'eth1')


def test_a_reading_without_its_sysfs_part_or_without_anything_lists_no_device():
    assert observe.verify_rdma_device_seen(LINKS) == {
        'observed': 'rdma link: rxe0/1 ACTIVE eth1, mlx5_1/1 DOWN ens2f1; /sys/class/infiniband: empty', 'ok': False}
    assert observe.verify_rdma_device_seen(None) == {
        'observed': 'rdma link: none; /sys/class/infiniband: empty', 'ok': False}


def test_pod_rdma_traffic_is_skipped_with_why_soft_roce_or_the_cluster_check():
    soft = observe.verify_container_rdma_traffic_seen(NETWORK, LAB)['skip']
    assert soft.startswith('skipped: rxe0 is Soft-RoCE on eth1. Soft-RoCE cannot carry it: measured on the lab')
    assert 'Failed status local QP operation error (2)' in soft
    assert observe.verify_container_rdma_traffic_seen(dict(NETWORK, interface='ens2f1'), LAB) == {
        'skip': 'skipped on the node (mlx5_1 on ens2f1): proven pod to pod by the cluster check "RDMA traffic '
                'between two pods" (-e verify_rdma_perftest=true)'}
    assert observe.verify_container_rdma_traffic_seen({}, LAB) == {'skip': 'skipped: no derived RDMA network'}


LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max processes             unlimited            unlimited            processes
Max locked memory         {soft:<20} {hard:<20} bytes
Max address space         unlimited            unlimited            bytes
"""




def show(unit, load='loaded', memlock='infinity', pid=812, **extra):
    """One unit's block of `systemctl show --property=Id,LoadState,LimitMEMLOCK,MainPID`."""
    lines = ['Id=%s.service' % unit, 'LoadState=%s' % load, 'LimitMEMLOCK=%s' % memlock, 'MainPID=%s' % pid]
    return '\n'.join(lines + ['%s=%s' % item for item in extra.items()]) + '\n'


def memlock_reading(blocks, limits=None):
    """The memlock check's reading: the units' blocks (blank line between), then each running
    process's limits after '# /proc/<pid>/limits'."""
    return '\n'.join(blocks) + ''.join('# /proc/%s/limits\n%s' % item for item in (limits or {}).items())


NO_K3S = [show('k3s', 'not-found', '8388608', 0), show('k3s-agent', 'not-found', '8388608', 0)]


def test_memlock_unlimited_in_systemd_and_in_the_process_passes_both_rows():
    seen = observe.verify_memlock_seen(memlock_reading(NO_K3S + [show('containerd')],
                                                       {812: LIMITS.format(soft='unlimited', hard='unlimited')}))
    assert seen == {'systemd': {'observed': 'infinity', 'ok': True},
                    'process': {'observed': 'soft unlimited, hard unlimited (pid 812)', 'ok': True}}


def test_a_drop_in_not_yet_applied_fails_only_the_process_row():
    seen = observe.verify_memlock_seen(memlock_reading(NO_K3S + [show('containerd')],
                                                       {812: LIMITS.format(soft='8388608', hard='8388608')}))
    assert seen == {'systemd': {'observed': 'infinity', 'ok': True},
                    'process': {'observed': 'soft 8388608, hard 8388608 (pid 812)', 'ok': False}}


def test_a_stopped_containerd_fails_the_process_row_naming_the_unit():
    seen = observe.verify_memlock_seen(memlock_reading([show('k3s', memlock='8388608', pid=0)]))
    assert seen == {'systemd': {'observed': '8388608', 'ok': False},
                    'process': {'observed': 'k3s.service is not running (MainPID 0)', 'ok': False}}


def test_the_first_installed_unit_is_read_k3s_before_containerd():
    # A K3s agent node: k3s is not installed, k3s-agent is (its containerd runs the pods);
    # a containerd.service also installed is not the one the pods inherit from.
    seen = observe.verify_memlock_seen(memlock_reading(
        [show('k3s', 'not-found', '8388608', 0), show('k3s-agent', memlock='infinity', pid=700),
         show('containerd', memlock='8388608', pid=812)],
        {700: LIMITS.format(soft='unlimited', hard='unlimited'), 812: LIMITS.format(soft='65536', hard='65536')}))
    assert seen == {'systemd': {'observed': 'infinity', 'ok': True},
                    'process': {'observed': 'soft unlimited, hard unlimited (pid 700)', 'ok': True}}


def test_the_limits_of_the_unit_read_are_found_after_those_of_other_running_processes():
    # K3s removed while it ran: both its units are gone (not-found) but still have a main
    # process, so the reading holds three /proc sections and containerd's is the third.
    seen = observe.verify_memlock_seen(memlock_reading(
        [show('k3s', 'not-found', '8388608', 600), show('k3s-agent', 'not-found', '8388608', 700),
         show('containerd', memlock='infinity', pid=812)],
        {600: LIMITS.format(soft='65536', hard='65536'), 700: LIMITS.format(soft='8388608', hard='8388608'),
         812: LIMITS.format(soft='unlimited', hard='unlimited')}))
    assert seen == {'systemd': {'observed': 'infinity', 'ok': True},
                    'process': {'observed': 'soft unlimited, hard unlimited (pid 812)', 'ok': True}}


def test_no_unit_installed_reads_the_last_one_named():
    seen = observe.verify_memlock_seen(memlock_reading(NO_K3S + [show('containerd', 'not-found', '8388608', 0)]))
    assert seen['process'] == {'observed': 'containerd.service is not running (MainPID 0)', 'ok': False}


def addr(ifname, address, prefixlen=23, mtu=9000):
    return {'ifindex': 2, 'ifname': ifname, 'mtu': mtu, 'operstate': 'UP',
            'addr_info': [{'family': 'inet', 'local': address, 'prefixlen': prefixlen, 'scope': 'global'}]}


POD_ADDR = json.dumps([addr('lo', '127.0.0.1', 8, 65536), addr('eth0', '192.168.12.7', 32, 1450),
                       addr('net1', '10.247.209.130')])
POD_ROUTES = json.dumps([{'dst': 'default', 'gateway': '169.254.1.1', 'dev': 'eth0'},
                         {'dst': '10.247.208.0/23', 'dev': 'net1', 'protocol': 'kernel', 'prefsrc': '10.247.209.130'},
                         {'dst': '169.254.1.1', 'dev': 'eth0', 'scope': 'link'}])


def pod_reading(addresses, routes, identity):
    """What the test pod's one reading prints, as the task's shell writes it."""
    return '%s\n\n# routes\n%s\n\n# identity\n%s' % (addresses, routes, identity)


def test_a_good_test_pod_passes_address_routes_and_memlock():
    seen = observe.verify_test_pod_seen(pod_reading(POD_ADDR, POD_ROUTES, 'uid 1000, ulimit -l unlimited\n'), NETWORK,
                                        'net1', 'eth0', 1000)
    assert seen == {
        'address': {'expected': 'inet in 10.247.208.0/23, outside 10.247.208.0/25,10.247.209.200/32',
                    'observed': 'net1 10.247.209.130', 'ok': True},
        'routes': {'expected': '10.247.208.0/23 dev net1, default dev eth0',
                   'observed': 'default dev eth0, 10.247.208.0/23 dev net1, 169.254.1.1 dev eth0', 'ok': True},
        'memlock': {'observed': 'uid 1000, ulimit -l unlimited', 'ok': True}}


def test_a_test_pod_without_net1_whose_default_route_left_eth0_and_with_a_limit_fails_each_row():
    routes = json.dumps([{'dst': 'default', 'dev': 'net1'}, {'dst': '10.247.208.0/23', 'dev': 'net1'}])
    links = json.dumps([addr('lo', '127.0.0.1', 8), addr('eth0', '192.168.12.7', 32)])
    seen = observe.verify_test_pod_seen(pod_reading(links, routes, 'uid 1000, ulimit -l 8192'), NETWORK, 'net1', 'eth0',
                                        1000)
    assert seen['address']['observed'] == 'no IPv4 address on net1 (interfaces: lo, eth0)'
    assert [seen[row]['ok'] for row in ('address', 'routes', 'memlock')] == [False, False, False]


def test_a_test_pod_address_in_the_excludes_fails_and_root_fails_memlock():
    seen = observe.verify_test_pod_seen(pod_reading(json.dumps([addr('net1', '10.247.208.9')]), POD_ROUTES,
                                                    'uid 0, ulimit -l unlimited'), NETWORK, 'net1', 'eth0', 1000)
    assert (seen['address']['ok'], seen['memlock']['ok']) == (False, False)


def test_without_a_derived_network_the_address_cannot_pass():
    seen = observe.verify_test_pod_seen(pod_reading(POD_ADDR, POD_ROUTES, 'uid 1000, ulimit -l unlimited'), {}, 'net1',
                                        'eth0', 1000)
    assert seen['address'] == {'expected': 'inet in ?, outside ', 'observed': 'net1 10.247.209.130', 'ok': False}
    assert seen['routes']['ok'] is False


@pytest.mark.parametrize('network', [dict(NETWORK, cidr='10.247.208.0/33'), dict(NETWORK, excludes=['nonsense'])])
def test_a_malformed_network_fails_the_address_row_instead_of_stopping_the_report(network):
    seen = observe.verify_test_pod_seen(pod_reading(POD_ADDR, POD_ROUTES, 'uid 1000, ulimit -l unlimited'), network,
                                        'net1', 'eth0', 1000)
    assert seen['address']['ok'] is False


def node(name, ready='True', rdma=None):
    status = {'conditions': [{'type': 'MemoryPressure', 'status': 'False'}, {'type': 'Ready', 'status': ready}],
              'allocatable': {'cpu': '8'}}
    if rdma is not None:
        status['allocatable']['rdma/rdma_shared_device_a'] = rdma
    return {'metadata': {'name': name}, 'status': status}


def test_every_node_ready_and_the_resource_on_each_ipu_node_passes():
    seen = observe.verify_nodes_seen([node('cp1'), node('node-a', rdma='63'), node('ipu-b', rdma='1')],
                                     ['cp1', 'ipu-a', 'ipu-b'], ['ipu-a', 'ipu-b'],
                                     {'ipu-a': {'ipu_k8s_node_name': 'node-a'}, 'ipu-b': {}},
                                     'rdma/rdma_shared_device_a')
    assert seen == {'ready': {'expected': '3 nodes, all Ready', 'observed': 'cp1=Ready, node-a=Ready, ipu-b=Ready',
                              'ok': True},
                    'resource': [{'host': 'ipu-a', 'ok': True, 'observed': '63 on node node-a'},
                                 {'host': 'ipu-b', 'ok': True, 'observed': '1 on node ipu-b'}]}


def test_a_missing_or_unready_node_and_a_node_without_the_resource_fail():
    seen = observe.verify_nodes_seen([node('cp1', ready='Unknown'), node('ipu-a', rdma='0')],
                                     ['cp1', 'ipu-a', 'ipu-b'], ['ipu-a', 'ipu-b'], {}, 'rdma/rdma_shared_device_a')
    assert seen['ready'] == {'expected': '3 nodes, all Ready', 'observed': 'cp1=NotReady, ipu-a=Ready', 'ok': False}
    assert seen['resource'] == [{'host': 'ipu-a', 'ok': False, 'observed': '0 on node ipu-a'},
                                {'host': 'ipu-b', 'ok': False, 'observed': 'no node named ipu-b'}]
    assert observe.verify_nodes_seen([], ['cp1'], [], {}, 'x')['ready']['observed'] == 'no nodes'


def test_one_unready_node_among_all_of_them_fails_the_ready_row():
    seen = observe.verify_nodes_seen([node('cp1'), node('ipu-a', ready='False')], ['cp1', 'ipu-a'], [], {}, 'x')
    assert seen['ready'] == {'expected': '2 nodes, all Ready', 'observed': 'cp1=Ready, ipu-a=NotReady', 'ok': False}


def test_the_bandwidth_nodes_are_the_pinned_pair_or_the_first_two_ipu_nodes_by_their_kubernetes_names():
    hostvars = {'ipu-a': {'ipu_k8s_node_name': 'node-a'}, 'ipu-b': {}, 'ipu-c': {}}
    assert observe.verify_perftest_nodes([], ['ipu-a', 'ipu-b', 'ipu-c'], hostvars) == ['node-a', 'ipu-b']
    assert observe.verify_perftest_nodes(['n2', 'n1'], ['ipu-a', 'ipu-b'], hostvars) == ['n2', 'n1']
    assert observe.verify_perftest_nodes([], ['ipu-a'], hostvars) == ['node-a']
    assert observe.verify_perftest_nodes(None, ['ipu-a', 'ipu-z'], {'ipu-a': {}}) == ['ipu-a', 'ipu-z']


def test_an_ipujob_is_done_when_a_terminal_condition_is_true():
    job = {'status': {'conditions': [{'type': 'Created', 'status': 'True'}, {'type': 'Running', 'status': 'False'},
                                     {'type': 'Succeeded', 'status': 'True'}, {'type': 'Failed', 'status': 'False'}]}}
    assert observe.verify_ipujob_done([job]) == ['Succeeded']
    assert observe.verify_ipujob_done([{'status': {'conditions': [{'type': 'Running', 'status': 'True'}]}}, {}]) == []
    assert observe.verify_ipujob_done([]) == []


def test_the_nad_config_row():
    name, namespace = 'rdma-net', 'default'
    assert observe.verify_nad_config_seen([{'kind': 'MacvlanNetwork'}], [{'spec': {'config': '{}'}}], name,
                                          namespace) == {'observed': 'MacvlanNetwork rdma-net renders it (one IPU-POD)'}
    assert observe.verify_nad_config_seen([], [{'spec': {}}], name, namespace) == {'observed': 'no spec.config'}
    assert observe.verify_nad_config_seen([], [], name, namespace) == {
        'observed': 'no NetworkAttachmentDefinition default/rdma-net: run playbooks/rdma_network.yml', 'ok': False}
    assert observe.verify_nad_config_seen([], [{'spec': {'config': '{"cniVersion": "0.3.1"}'}}], name,
                                          namespace)['ok'] is False


def test_the_pool_block_row_names_the_nodes_block_or_its_absence():
    pool = {'metadata': {'name': 'rdma-net', 'namespace': 'network-operator'},
            'status': {'allocations': [{'nodeName': 'poplar-01', 'startIP': '10.247.208.151', 'endIP': '10.247.208.200'}]}}
    assert observe.verify_pool_block_seen([pool], 'poplar-01', 'nv-ipam') == {
        'observed': 'block 10.247.208.151-10.247.208.200 in IPPool network-operator/rdma-net'}
    missing = observe.verify_pool_block_seen([pool], 'poplar-02', 'nv-ipam')
    assert missing['ok'] is False and missing['observed'].startswith(
        'no block for node poplar-02 in IPPool network-operator/rdma-net status.allocations')
    # A pool the controller refused has its allocations cleared (null or []).
    assert observe.verify_pool_block_seen([dict(pool, status={'allocations': None})], 'poplar-01', 'nv-ipam')['ok'] is False
    assert observe.verify_pool_block_seen([], 'poplar-01', 'nv-ipam')['ok'] is False
    assert observe.verify_pool_block_seen([], 'poplar-01', 'whereabouts') == {
        'skip': 'the applied network does not use NVIDIA IPAM (whereabouts)'}


COMPARISON = {'ipam': 'whereabouts', 'expected': 'master=eth1 range=10.247.208.0/23 exclude=10.247.208.0/25 mtu<=9000',
              'observed': 'master=eth1 range=10.247.208.0/23 exclude=10.247.208.0/25 mtu=9000', 'status': 'PASS'}


def test_the_macvlan_row_is_the_comparison_when_both_sides_are_there():
    assert observe.verify_macvlan_seen(COMPARISON, NETWORK, [{'kind': 'MacvlanNetwork'}], '', 'rdma-net') == {
        'expected': 'master=eth1 range=10.247.208.0/23 exclude=10.247.208.0/25 mtu<=9000',
        'observed': 'master=eth1 range=10.247.208.0/23 exclude=10.247.208.0/25 mtu=9000', 'ok': True}
    failed = dict(COMPARISON, status='FAIL')
    assert observe.verify_macvlan_seen(failed, NETWORK, [{'kind': 'MacvlanNetwork'}], '', 'rdma-net')['ok'] is False


@pytest.mark.parametrize('rdma, macvlans, error, observed', [
    ({}, [{}], '', 'no derived RDMA network to compare (see the RDMA network derived row)'),
    (NETWORK, [], 'Forbidden', 'reading the applied network rdma-net failed (see the read row): Forbidden; '
                               'playbooks/rdma_network.yml makes it, and the CNI file of each node of several IPU-PODs'),
    (NETWORK, [], '', "neither MacvlanNetwork rdma-net nor a NetworkAttachmentDefinition without config and this "
                      "node's CNI file found: run playbooks/rdma_network.yml"),
])
def test_the_macvlan_row_fails_saying_why_there_is_nothing_to_compare(rdma, macvlans, error, observed):
    assert observe.verify_macvlan_seen(COMPARISON, rdma, macvlans, error, 'rdma-net') == {'observed': observed,
                                                                                          'ok': False}


def test_the_plugin_offers_each_filter_under_its_name():
    assert observe.FilterModule().filters() == {
        'verify_perftest_result': observe.verify_perftest_result,
        'verify_network_status_ip': observe.verify_network_status_ip,
        'verify_rdma_device': observe.verify_rdma_device,
        'verify_rdma_device_seen': observe.verify_rdma_device_seen,
        'verify_container_rdma_traffic_seen': observe.verify_container_rdma_traffic_seen,
        'verify_memlock_seen': observe.verify_memlock_seen,
        'verify_test_pod_seen': observe.verify_test_pod_seen,
        'verify_nodes_seen': observe.verify_nodes_seen,
        'verify_perftest_nodes': observe.verify_perftest_nodes,
        'verify_ipujob_done': observe.verify_ipujob_done,
        'verify_macvlan_seen': observe.verify_macvlan_seen,
        'verify_nad_config_seen': observe.verify_nad_config_seen,
        'verify_pool_block_seen': observe.verify_pool_block_seen}


def test_a_field_the_rdma_tool_left_out_shows_as_a_question_mark_and_no_netdev_as_nothing():
    # rdma/link.c prints state and netdev only when the kernel reported them
    assert observe.verify_rdma_device_seen(reading('[{}]', ['rxe0'])) == {
        'observed': 'rdma link: ?/? ?; /sys/class/infiniband: rxe0', 'ok': False}
    assert observe.verify_rdma_links(json.dumps([{'ifname': 'mlx5_0', 'port': 1}])) == [
        {'device': 'mlx5_0', 'port': 1, 'state': '?', 'netdev': ''}]


def test_pod_rdma_traffic_skipped_on_an_interface_without_an_rdma_device_says_none():
    assert observe.verify_container_rdma_traffic_seen(dict(NETWORK, interface='eth7'), LAB) == {
        'skip': 'skipped on the node (none on eth7): proven pod to pod by the cluster check "RDMA traffic '
                'between two pods" (-e verify_rdma_perftest=true)'}


def test_a_systemctl_value_holding_an_equals_sign_is_read_whole():
    # systemctl show prints Name=value; a value may itself hold '=' (Environment=...)
    containerd = show('containerd', Environment='GOGC=50 GODEBUG=madvdontneed=1')
    seen = observe.verify_memlock_seen(memlock_reading([containerd],
                                                       {812: LIMITS.format(soft='unlimited', hard='unlimited')}))
    assert seen == {'systemd': {'observed': 'infinity', 'ok': True},
                    'process': {'observed': 'soft unlimited, hard unlimited (pid 812)', 'ok': True}}


@pytest.mark.parametrize('output', ['', None, 'MainPID=\nLimitMEMLOCK=\n'])
def test_no_systemctl_output_or_empty_values_fail_both_rows_as_not_running(output):
    assert observe.verify_memlock_seen(output) == {
        'systemd': {'observed': '', 'ok': False},
        'process': {'observed': '? is not running (MainPID 0)', 'ok': False}}


def test_a_running_process_whose_limits_were_not_read_shows_question_marks():
    assert observe.verify_memlock_seen(memlock_reading([show('containerd')])) == {
        'systemd': {'observed': 'infinity', 'ok': True},
        'process': {'observed': 'soft ?, hard ? (pid 812)', 'ok': False}}


def test_the_limits_read_are_those_of_the_chosen_units_process():
    # Another unit's running process (pid 900) has unlimited; the chosen one's were not read.
    assert observe.verify_memlock_seen(memlock_reading(
        NO_K3S + [show('containerd')], {900: LIMITS.format(soft='unlimited', hard='unlimited')}))['process'] == {
        'observed': 'soft ?, hard ? (pid 812)', 'ok': False}


def test_the_nad_config_row_when_spec_config_is_set():
    assert observe.verify_nad_config_seen([], [{'spec': {'config': '{"cniVersion": "0.3.1"}'}}], 'rdma-net',
                                          'default') == {
        'observed': "spec.config is set: Multus uses it on every node instead of each node's own CNI file; "
                    'run playbooks/rdma_network.yml, which replaces it', 'ok': False}


def test_ip_output_that_is_not_json_is_refused_naming_the_command():
    with pytest.raises(AnsibleFilterError, match=r'^ip -j addr is not JSON'):
        observe.verify_test_pod_seen(pod_reading('1: lo: <LOOPBACK>', '[]', ''), NETWORK, 'net1', 'eth0', 1000)
    with pytest.raises(AnsibleFilterError, match=r'^ip -j route is not JSON'):
        observe.verify_test_pod_seen(pod_reading('[]', 'default via 169.254.1.1 dev eth0', ''), NETWORK, 'net1', 'eth0',
                                     1000)


def test_a_second_default_route_without_a_device_fails_the_routes_row():
    # `ip route add unreachable default metric 100`: ip -j route prints it without "dev"
    routes = json.loads(POD_ROUTES) + [{'type': 'unreachable', 'dst': 'default', 'metric': 100, 'flags': []}]
    seen = observe.verify_test_pod_seen(pod_reading(POD_ADDR, json.dumps(routes), 'uid 1000, ulimit -l unlimited'),
                                        NETWORK, 'net1', 'eth0', 1000)
    assert seen['routes'] == {
        'expected': '10.247.208.0/23 dev net1, default dev eth0',
        'observed': 'default dev eth0, 10.247.208.0/23 dev net1, 169.254.1.1 dev eth0, default dev ?', 'ok': False}


def test_a_reading_cut_short_after_the_addresses_fails_the_routes_and_memlock_rows():
    seen = observe.verify_test_pod_seen(POD_ADDR + '\n', NETWORK, 'net1', 'eth0', 1000)
    assert seen['address']['ok'] is True
    assert seen['routes'] == {'expected': '10.247.208.0/23 dev net1, default dev eth0', 'observed': '', 'ok': False}
    assert seen['memlock'] == {'observed': '', 'ok': False}


def test_no_identity_from_the_pod_fails_memlock_with_nothing_observed_and_unnamed_links_show_as_question_marks():
    reading = '%s\n# routes\n%s' % (json.dumps([{}, addr('eth0', '192.168.12.7', 32)]), POD_ROUTES)
    seen = observe.verify_test_pod_seen(reading, NETWORK, 'net1', 'eth0', 1000)
    assert seen['memlock'] == {'observed': '', 'ok': False}
    assert seen['address']['observed'] == 'no IPv4 address on net1 (interfaces: ?, eth0)'


def test_a_node_without_a_ready_condition_is_not_ready_and_without_the_resource_has_none():
    bare = {'metadata': {'name': 'ipu-a'}, 'status': {'conditions': [], 'allocatable': {'cpu': '8'}}}
    seen = observe.verify_nodes_seen([bare], ['ipu-a'], ['ipu-a'], {}, 'rdma/rdma_shared_device_a')
    assert seen == {'ready': {'expected': '1 nodes, all Ready', 'observed': 'ipu-a=NotReady', 'ok': False},
                    'resource': [{'host': 'ipu-a', 'ok': False, 'observed': '0 on node ipu-a'}]}

