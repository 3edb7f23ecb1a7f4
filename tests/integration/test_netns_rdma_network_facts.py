"""rdma_network_facts through ansible-playbook inside a real network namespace: the V-IPU
controller from the address, the stand-in vipu CLI (tests/fixtures/bin/vipu) on PATH or by
path, or IPUOF_VIPU_API_* from the task's environment, names from the node's own
/etc/hosts; then real route lookups on veth pairs with /22, /23, /24, /25 and /26 subnets,
MTU 9000 and 1500, a default route through a gateway; and every refusal."""

import pytest

from netns_lab import FAKE_VIPU_BIN, LAB_HOSTS, SYSTEM_PATH, local_host, run_playbook, veth

NODE_CASES = {
    # name: (module options, check mode)
    'subnet_23': ({'address': '10.247.208.5:8090'}, False),
    'subnet_23_upper_half': ({'address': '10.247.209.200'}, False),
    'subnet_22': ({'address': '10.5.212.116'}, False),
    'subnet_24_mtu_1500': ({'address': '10.193.242.7'}, False),
    'host_name': ({'address': 'vipu-ctrl.pod.test:8090'}, False),
    'second_address_on_interface': ({'address': '10.31.7.9'}, False),
    'subnet_25_exclude_26': ({'address': '10.60.0.5', 'exclude_prefix': 26}, False),
    'explicit_excludes': ({'address': '10.247.208.5', 'exclude': ['10.247.209.0/28', '10.247.208.0/26']}, False),
    'pinned_interface_agrees': ({'address': '10.247.208.5', 'interface': 'rdma0'}, False),
    'check_mode': ({'address': '10.5.212.116'}, True),
    'refuse_gateway': ({'address': '10.99.0.5'}, False),
    'refuse_own_address': ({'address': '10.247.208.21'}, False),
    'refuse_subnet_25': ({'address': '10.60.0.5'}, False),
    'refuse_subnet_26': ({'address': '10.61.0.5'}, False),
    'refuse_pinned_interface': ({'address': '10.247.208.5', 'interface': 'rdma2'}, False),
    'refuse_exclude_outside': ({'address': '10.247.208.5', 'exclude': ['10.9.0.0/25']}, False),
    'refuse_malformed': ({'address': '10.247.208.300'}, False),
    'refuse_bad_port': ({'address': '10.247.208.5:0'}, False),
    'refuse_unresolvable': ({'address': 'no-such-vipu.test'}, False),
    'refuse_blackhole': ({'address': '10.66.0.1'}, False),
    'refuse_broadcast': ({'address': '10.5.215.255'}, False),
}


def _inventory(cases):
    hosts = {}
    for name, (args, check) in cases.items():
        hosts[name] = local_host(case={'args': args, 'check': check})
    return {'all': {'hosts': hosts}}


@pytest.fixture(scope='module')
def node_run(lab, tmp_path_factory):
    return run_playbook(lab, 'module_cases.yml', _inventory(NODE_CASES), tmp_path_factory.mktemp('facts-node'))


@pytest.fixture(scope='module')
def isolated_run(isolated_node, tmp_path_factory):
    cases = {'refuse_no_route': ({'address': '10.99.0.5'}, False),
             'isolated_subnet_23': ({'address': '10.247.208.5'}, False)}
    return run_playbook(isolated_node, 'module_cases.yml', _inventory(cases), tmp_path_factory.mktemp('facts-iso'))


def network(run, case):
    result = run.result('Run rdma_network_facts', case)
    assert not result.get('failed'), result.get('msg')
    return result['rdma_network']


def refusal(run, case):
    result = run.result('Run rdma_network_facts', case)
    assert result.get('failed'), 'expected a refusal, got %r' % result.get('rdma_network')
    return result['msg']


def test_23_subnet_is_found_with_its_real_prefix(node_run):
    assert network(node_run, 'subnet_23') == {
        'interface': 'rdma0', 'cidr': '10.247.208.0/23', 'prefix': 23, 'node_address': '10.247.208.21',
        'mtu': 9000, 'excludes': ['10.247.208.0/25'], 'excludes_added': [], 'vipu_address': '10.247.208.5'}


def test_the_network_is_left_as_a_host_fact(node_run):
    recorded = node_run.result('Record the facts the module left on the host', 'subnet_23')
    assert recorded['ansible_facts']['recorded_facts']['rdma_network'] == network(node_run, 'subnet_23')


def test_23_subnet_is_not_mistaken_for_a_24_from_its_upper_half(node_run):
    # ipcalc -b 10.247.209.200 says 10.247.209.0/24; the interface says /23.
    found = network(node_run, 'subnet_23_upper_half')
    assert found['cidr'] == '10.247.208.0/23'


def test_vipu_outside_the_exclude_is_excluded_without_a_warning(node_run):
    found = network(node_run, 'subnet_23_upper_half')
    assert found['excludes'] == ['10.247.208.0/25', '10.247.209.200/32']
    assert not node_run.result('Run rdma_network_facts', 'subnet_23_upper_half').get('warnings')


def test_22_subnet_is_found_with_its_real_prefix(node_run):
    found = network(node_run, 'subnet_22')
    assert (found['interface'], found['cidr'], found['prefix'], found['mtu'], found['excludes']) == \
        ('rdma1', '10.5.212.0/22', 22, 9000, ['10.5.212.0/25'])


def test_24_subnet_and_its_mtu_1500(node_run):
    found = network(node_run, 'subnet_24_mtu_1500')
    assert (found['interface'], found['cidr'], found['mtu'], found['excludes']) == \
        ('rdma2', '10.193.242.0/24', 1500, ['10.193.242.0/25'])


def test_host_name_resolves_on_the_node(node_run):
    found = network(node_run, 'host_name')
    assert (found['vipu_address'], found['interface'], found['cidr']) == ('10.247.208.5', 'rdma0', '10.247.208.0/23')


def test_second_address_on_the_interface_gives_its_own_subnet(node_run):
    found = network(node_run, 'second_address_on_interface')
    assert (found['interface'], found['cidr'], found['node_address']) == ('rdma0', '10.31.7.0/24', '10.31.7.21')


def test_25_subnet_with_exclude_prefix_26(node_run):
    found = network(node_run, 'subnet_25_exclude_26')
    assert (found['interface'], found['cidr'], found['excludes']) == ('rdma3', '10.60.0.0/25', ['10.60.0.0/26'])


def test_explicit_excludes_are_returned_sorted(node_run):
    assert network(node_run, 'explicit_excludes')['excludes'] == ['10.247.208.0/26', '10.247.209.0/28']


def test_pinned_interface_that_the_kernel_uses_is_accepted(node_run):
    assert network(node_run, 'pinned_interface_agrees')['interface'] == 'rdma0'


def test_check_mode_derives_the_same_network(node_run):
    result = node_run.result('Run rdma_network_facts', 'check_mode')
    assert result['changed'] is False and result['rdma_network']['cidr'] == '10.5.212.0/22'


def test_gateway_routed_address_is_refused(node_run):
    message = refusal(node_run, 'refuse_gateway')
    assert 'the V-IPU address 10.99.0.5 is reached through gateway 10.200.0.1 on mgmt0' in message
    assert 'directly connected subnet' in message


def test_nodes_own_address_is_refused(node_run):
    message = refusal(node_run, 'refuse_own_address')
    assert '10.247.208.21 cannot be used on this node: it is an address of this node itself' in message


def test_25_subnet_is_refused_with_the_default_exclude(node_run):
    message = refusal(node_run, 'refuse_subnet_25')
    assert 'the RDMA subnet 10.60.0.0/25 is not larger than the /25' in message
    assert 'ipu_k8s_rdma_exclude_prefix' in message


def test_26_subnet_is_refused(node_run):
    assert 'the RDMA subnet 10.61.0.0/26 is not larger than the /25' in refusal(node_run, 'refuse_subnet_26')


def test_pinned_interface_that_the_kernel_does_not_use_is_refused(node_run):
    message = refusal(node_run, 'refuse_pinned_interface')
    assert 'the V-IPU address 10.247.208.5 is routed through rdma0, but the RDMA interface is pinned to rdma2' in message


def test_exclude_outside_the_subnet_is_refused(node_run):
    message = refusal(node_run, 'refuse_exclude_outside')
    assert 'exclude 10.9.0.0/25 is not inside the RDMA subnet 10.247.208.0/23' in message


def test_malformed_address_is_refused(node_run):
    assert "address '10.247.208.300' is malformed" in refusal(node_run, 'refuse_malformed')


def test_address_with_port_zero_is_refused(node_run):
    assert "address '10.247.208.5:0' is malformed" in refusal(node_run, 'refuse_bad_port')


def test_unresolvable_name_is_refused(node_run):
    assert "cannot resolve 'no-such-vipu.test' to an IPv4 address" in refusal(node_run, 'refuse_unresolvable')


def test_blackholed_address_is_refused_as_unroutable(node_run):
    message = refusal(node_run, 'refuse_blackhole')
    assert 'the kernel has no route to the V-IPU address 10.66.0.1' in message


def test_subnet_broadcast_address_is_refused(node_run):
    assert 'it is a broadcast address' in refusal(node_run, 'refuse_broadcast')


def test_address_with_no_route_is_refused(isolated_run):
    message = refusal(isolated_run, 'refuse_no_route')
    assert 'the kernel has no route to the V-IPU address 10.99.0.5 (RTNETLINK answers: Network is unreachable)' \
        in message


def test_node_without_default_route_still_derives_its_rdma_subnet(isolated_run):
    found = network(isolated_run, 'isolated_subnet_23')
    assert (found['interface'], found['cidr'], found['node_address'], found['mtu']) == \
        ('rdma0', '10.247.208.0/23', '10.247.208.22', 9000)


# --- an RDMA NIC that is administratively down ----------------------------------------------

@pytest.fixture(scope='module')
def down_run(netns_factory, tmp_path_factory):
    """A node whose RDMA NIC rdma0 (10.247.208.21/23) is down while mgmt0 carries the default
    route: the kernel drops rdma0's connected route, so the lookup finds the gateway."""
    fabric = netns_factory('downfab')
    node = netns_factory('down')
    node_cmds, fabric_cmds = [], []
    for name, mine, theirs in (('rdma0', '10.247.208.21/23', '10.247.208.5/23'),
                               ('mgmt0', '10.200.0.2/24', '10.200.0.1/24')):
        mine_cmds, theirs_cmds = veth(name, 'f-' + name, fabric, 9000, mine, peer_addresses=(theirs,))
        node_cmds += mine_cmds
        fabric_cmds += theirs_cmds
    node.ip(*(node_cmds + ['route add default via 10.200.0.1 dev mgmt0', 'link set rdma0 down']))
    fabric.ip(*fabric_cmds)
    node.isolate_name_lookups(LAB_HOSTS)
    cases = {'refuse_nic_down': ({'address': '10.247.208.5'}, False),
             'refuse_nic_down_check_mode': ({'address': '10.247.208.5:8090'}, True),
             'gateway_elsewhere': ({'address': '10.99.0.5'}, False)}
    return run_playbook(node, 'module_cases.yml', _inventory(cases), tmp_path_factory.mktemp('facts-down'))


def test_down_rdma_nic_is_named_not_the_gateway(down_run):
    message = refusal(down_run, 'refuse_nic_down')
    assert message.startswith('RDMA NIC rdma0 is down: it has 10.247.208.21/23'), message
    assert 'gateway' not in message


def test_down_rdma_nic_is_named_in_check_mode_too(down_run):
    assert refusal(down_run, 'refuse_nic_down_check_mode').startswith('RDMA NIC rdma0 is down')


def test_address_of_no_down_nic_still_reports_the_gateway(down_run):
    assert 'reached through gateway 10.200.0.1 on mgmt0' in refusal(down_run, 'gateway_elsewhere')


# The V-IPU controller: where the module finds it, on the lab node (which reaches both
# 10.247.208.5 on rdma0 and 10.5.212.116 on rdma1).
WITH_CLI = '%s:%s' % (FAKE_VIPU_BIN, SYSTEM_PATH)
WITHOUT_CLI = SYSTEM_PATH
FAKE_VIPU = str(FAKE_VIPU_BIN / 'vipu')

VIPU_CASES = {
    # name: (module options, task environment)
    'param_name_and_port': ({'address': 'vipu-ctrl.pod.test:8091'}, {'PATH': WITH_CLI}),
    'cli_on_path': ({}, {'PATH': WITH_CLI, 'VIPU_FAKE_HOST': '10.5.212.116:8090', 'IPUOF_VIPU_API_HOST': '10.9.9.9'}),
    'cli_reports_configured_name': ({}, {'PATH': WITH_CLI, 'IPUOF_VIPU_API_HOST': 'vipu-ctrl.pod.test',
                                         'IPUOF_VIPU_API_PORT': '8092'}),
    'cli_by_path': ({'cli': FAKE_VIPU}, {'PATH': WITHOUT_CLI, 'VIPU_FAKE_HOST': '10.5.212.116:8090',
                                         'VIPU_FAKE_VERSION': '1.17.2'}),
    'cli_text_output': ({}, {'PATH': WITH_CLI, 'VIPU_FAKE_OUTPUT': 'version: 1.16.1\nhost: 10.5.212.116:8093'}),
    'env_only': ({}, {'PATH': WITHOUT_CLI, 'IPUOF_VIPU_API_HOST': '10.5.212.116', 'IPUOF_VIPU_API_PORT': '8095'}),
    'env_host_only': ({'port': 8097}, {'PATH': WITHOUT_CLI, 'IPUOF_VIPU_API_HOST': 'vipu-pod2.test'}),
    'fail_env_disabled': ({'environment': False}, {'PATH': WITHOUT_CLI, 'IPUOF_VIPU_API_HOST': '10.5.212.116'}),
    'fail_nothing': ({}, {'PATH': WITHOUT_CLI}),
    'fail_cli_garbage': ({}, {'PATH': WITH_CLI, 'VIPU_FAKE_OUTPUT': 'Error: connection refused'}),
    'fail_cli_no_host': ({}, {'PATH': WITH_CLI, 'VIPU_FAKE_OUTPUT': '{"version": "1.18.0"}'}),
    'fail_cli_cannot_connect': ({}, {'PATH': WITH_CLI}),
    'fail_cli_hangs': ({'timeout': 1}, {'PATH': WITH_CLI, 'VIPU_FAKE_HOST': '10.5.212.116:8090',
                                        'VIPU_FAKE_SLEEP': '20'}),
    'fail_cli_path_missing': ({'cli': '/nonexistent/vipu'}, {'PATH': WITHOUT_CLI, 'IPUOF_VIPU_API_HOST': '10.5.212.116'}),
    'fail_malformed': ({'address': '10.5.212.116:99999'}, {'PATH': WITHOUT_CLI}),
    'fail_unresolvable': ({'address': 'no-such-vipu.test'}, {'PATH': WITHOUT_CLI}),
    'fail_cli_not_utf8': ({}, {'PATH': WITH_CLI, 'VIPU_FAKE_OUTPUT_FILE': 'NOT_UTF8_FILE'}),
}

# What the CLI prints in fail_cli_not_utf8: JSON whose host holds bytes that are not UTF-8.
NOT_UTF8 = b'{"version": "1.18.0", "host": "10.5.\xff\xfe.116:8090"}\n'


@pytest.fixture(scope='module')
def vipu_run(lab, tmp_path_factory):
    workdir = tmp_path_factory.mktemp('vipu')
    not_utf8 = workdir / 'not-utf8.json'
    not_utf8.write_bytes(NOT_UTF8)
    hosts = {}
    for name, (args, env) in VIPU_CASES.items():
        env = dict((k, str(not_utf8) if v == 'NOT_UTF8_FILE' else v) for k, v in env.items())
        hosts[name] = local_host(case={'args': args, 'env': env})
    return run_playbook(lab, 'module_cases.yml', {'all': {'hosts': hosts}}, workdir)


def server(run, case):
    result = run.result('Run rdma_network_facts', case)
    assert not result.get('failed'), result.get('msg')
    assert result['changed'] is False
    return result['vipu_server']


def test_explicit_name_resolves_from_the_nodes_hosts_file(vipu_run):
    assert server(vipu_run, 'param_name_and_port') == {
        'host': '10.247.208.5', 'port': 8091, 'address': '10.247.208.5:8091', 'version': None, 'source': 'param',
        'name': '10.247.208.5:8091', 'label': 'ipunode=true'}


def test_the_controller_is_left_as_a_host_fact(vipu_run):
    recorded = vipu_run.result('Record the facts the module left on the host', 'cli_on_path')
    assert recorded['ansible_facts']['recorded_facts']['vipu_server'] == server(vipu_run, 'cli_on_path')


def test_one_run_derives_the_network_towards_the_controller_it_found(vipu_run):
    # The CLI answers 10.5.212.116, which the lab node reaches on rdma1 (10.5.212.20/22).
    recorded = vipu_run.result('Record the facts the module left on the host', 'cli_on_path')
    assert recorded['ansible_facts']['recorded_facts']['rdma_network'] == {
        'interface': 'rdma1', 'cidr': '10.5.212.0/22', 'prefix': 22, 'node_address': '10.5.212.20', 'mtu': 9000,
        'excludes': ['10.5.212.0/25'], 'excludes_added': [], 'vipu_address': '10.5.212.116'}


def test_cli_on_path_wins_over_the_environment(vipu_run):
    assert server(vipu_run, 'cli_on_path') == {
        'host': '10.5.212.116', 'port': 8090, 'address': '10.5.212.116:8090', 'version': '1.18.0', 'source': 'cli',
        'name': '10.5.212.116:8090', 'label': 'ipunode=true'}


def test_cli_reporting_a_name_is_resolved(vipu_run):
    found = server(vipu_run, 'cli_reports_configured_name')
    assert (found['address'], found['source']) == ('10.247.208.5:8092', 'cli')


def test_cli_given_by_path_is_used(vipu_run):
    found = server(vipu_run, 'cli_by_path')
    assert (found['address'], found['version'], found['source']) == ('10.5.212.116:8090', '1.17.2', 'cli')


def test_cli_text_output_is_understood(vipu_run):
    found = server(vipu_run, 'cli_text_output')
    assert (found['address'], found['version']) == ('10.5.212.116:8093', '1.16.1')


def test_environment_gives_the_address_without_a_cli(vipu_run):
    assert server(vipu_run, 'env_only') == {
        'host': '10.5.212.116', 'port': 8095, 'address': '10.5.212.116:8095', 'version': None, 'source': 'env',
        'name': '10.5.212.116:8095', 'label': 'ipunode=true'}


def test_environment_host_without_port_takes_the_port_option(vipu_run):
    assert server(vipu_run, 'env_host_only')['address'] == '10.5.212.116:8097'


def test_environment_is_not_read_when_disabled(vipu_run):
    assert 'the environment is not consulted (environment=false)' in refusal(vipu_run, 'fail_env_disabled')


def test_nothing_to_go_on_says_what_to_set(vipu_run):
    message = refusal(vipu_run, 'fail_nothing')
    assert 'no V-IPU controller address on this node' in message
    assert 'ipu_k8s_vipu_controllers' in message and 'IPUOF_VIPU_API_HOST is not set' in message


def test_cli_garbage_is_refused_showing_it(vipu_run):
    assert 'Output: Error: connection refused' in refusal(vipu_run, 'fail_cli_garbage')


def test_cli_json_without_host_is_refused_showing_it(vipu_run):
    assert 'no "host"' in refusal(vipu_run, 'fail_cli_no_host')


def test_cli_that_cannot_reach_its_controller_fails_with_its_error(vipu_run):
    message = refusal(vipu_run, 'fail_cli_cannot_connect')
    assert 'failed (rc=1): Error: unable to connect to the V-IPU server' in message


def test_cli_that_hangs_is_stopped_by_the_timeout(vipu_run):
    assert 'did not answer within 1 s' in refusal(vipu_run, 'fail_cli_hangs')


def test_cli_path_that_does_not_exist_fails(vipu_run):
    assert '/nonexistent/vipu does not exist' in refusal(vipu_run, 'fail_cli_path_missing')


def test_malformed_address_fails(vipu_run):
    assert "address '10.5.212.116:99999' is malformed" in refusal(vipu_run, 'fail_malformed')


def test_unresolvable_name_fails(vipu_run):
    assert "cannot resolve 'no-such-vipu.test'" in refusal(vipu_run, 'fail_unresolvable')


def test_cli_output_that_is_not_utf8_ends_in_the_modules_own_message(vipu_run):
    message = refusal(vipu_run, 'fail_cli_not_utf8')
    assert 'printed bytes that are not UTF-8' in message and '10.5.\\xff\\xfe.116' in message, message
