"""rdma_network_facts, the RDMA network: what it asks the kernel, and how it reports answers and refusals."""


import pytest

from iproute_json import addr_show, addr_show_all, route_get
from module_harness import FakeCommands, ModuleFail

ROUTE_GET = ('-j', '-4', 'route', 'get')
ADDR_SHOW = ('-j', 'addr', 'show', 'dev')
ADDR_SHOW_ALL = ('-j', '-4', 'addr', 'show')
MGMT = addr_show('mgmt0', 1500, '10.200.0.2/24')


def kernel(vipu='10.247.208.5', dev='rdma0', node='10.247.208.21/23', mtu=9000, **route):
    """FakeCommands answering like a node whose `dev` carries `node` and routes `vipu` directly."""
    src = node.split('/')[0]
    return FakeCommands({
        ROUTE_GET + (vipu,): (0, route_get(vipu, dev, src, **route), ''),
        ADDR_SHOW + (dev,): (0, addr_show(dev, mtu, node), ''),
        ADDR_SHOW_ALL: (0, addr_show_all(addr_show(dev, mtu, node), MGMT), ''),
    })


def nic_down(vipu='10.247.208.5', node='10.247.208.21/23', route=None):
    """A node whose RDMA NIC rdma0 (holding node) is down: route is what `ip route get` then
    answers ((rc, stdout, stderr); default: the default route through mgmt0)."""
    route = route or (0, route_get(vipu, 'mgmt0', '10.200.0.2', gateway='10.200.0.1'), '')
    return FakeCommands({
        ROUTE_GET + (vipu,): route,
        ADDR_SHOW_ALL: (0, addr_show_all(addr_show('rdma0', 9000, node, up=False), MGMT), ''),
    })


def test_derived_network_is_returned_and_set_as_fact(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5'}, kernel())
    assert result['rdma_network'] == {'interface': 'rdma0', 'cidr': '10.247.208.0/23', 'prefix': 23,
                                      'node_address': '10.247.208.21', 'mtu': 9000,
                                      'excludes': ['10.247.208.0/25'], 'excludes_added': [],
                                      'vipu_address': '10.247.208.5'}
    assert result['ansible_facts'] == {'vipu_server': result['vipu_server'], 'rdma_network': result['rdma_network']}
    assert result['changed'] is False


def test_kernel_is_asked_with_argument_lists(run_module):
    commands = kernel()
    run_module('rdma_network_facts', {'address': '10.247.208.5'}, commands)
    assert commands.calls == [['/usr/sbin/ip', '-j', '-4', 'route', 'get', '10.247.208.5'],
                              ['/usr/sbin/ip', '-j', 'addr', 'show', 'dev', 'rdma0']]


def test_address_with_port_is_looked_up_without_it(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5:8090'}, kernel())
    assert result['rdma_network']['vipu_address'] == '10.247.208.5'


def test_host_name_is_resolved_before_the_route_lookup(run_module, hosts_file):
    result = run_module('rdma_network_facts', {'address': 'vipu-ctrl:8090'}, kernel())
    assert result['rdma_network']['vipu_address'] == '10.247.208.5'


def test_refusal_for_a_host_name_says_what_it_resolved_to(run_module, hosts_file):
    with pytest.raises(ModuleFail, match=r'gateway.*\[vipu-ctrl resolves to 10.247.208.5\]'):
        run_module('rdma_network_facts', {'address': 'vipu-ctrl'}, kernel(dev='mgmt0', gateway='10.200.0.1'))


def test_unresolvable_name_fails(run_module, hosts_file):
    with pytest.raises(ModuleFail, match="cannot resolve 'vipu-gone'"):
        run_module('rdma_network_facts', {'address': 'vipu-gone'}, FakeCommands())


def test_malformed_address_fails_before_any_command(run_module):
    commands = FakeCommands()
    with pytest.raises(ModuleFail, match="address '10.247.208.5:eighty' is malformed"):
        run_module('rdma_network_facts', {'address': '10.247.208.5:eighty'}, commands)
    assert commands.calls == []


def test_no_route_fails_with_the_kernels_words(run_module):
    commands = FakeCommands({ROUTE_GET + ('10.99.0.5',): (2, '', 'RTNETLINK answers: Network is unreachable\n'),
                             ADDR_SHOW_ALL: (0, addr_show_all(MGMT), '')})
    with pytest.raises(ModuleFail, match=r'no route to the V-IPU address 10.99.0.5 \(RTNETLINK answers: Network is '
                                         r'unreachable\)'):
        run_module('rdma_network_facts', {'address': '10.99.0.5'}, commands)


def test_gateway_routed_address_is_refused(run_module):
    with pytest.raises(ModuleFail, match='reached through gateway 10.200.0.1 on mgmt0'):
        run_module('rdma_network_facts', {'address': '10.247.208.5'}, kernel(dev='mgmt0', gateway='10.200.0.1'))


def test_down_rdma_nic_is_named_instead_of_the_gateway(run_module):
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.247.208.5'}, nic_down())
    message = failure.value.result['msg']
    assert message.startswith('RDMA NIC rdma0 is down: it has 10.247.208.21/23')
    assert 'gateway' not in message and 'ip link set rdma0 up' in message


def test_down_rdma_nic_is_named_when_no_route_is_left(run_module):
    with pytest.raises(ModuleFail, match='^RDMA NIC rdma0 is down'):
        run_module('rdma_network_facts', {'address': '10.247.208.5'},
                   nic_down(route=(2, '', 'RTNETLINK answers: Network is unreachable\n')))


def test_down_interface_of_another_subnet_does_not_hide_the_gateway(run_module):
    commands = nic_down(vipu='10.99.0.5')
    with pytest.raises(ModuleFail, match='reached through gateway 10.200.0.1 on mgmt0'):
        run_module('rdma_network_facts', {'address': '10.99.0.5'}, commands)


def test_interfaces_are_listed_only_when_the_route_is_refused(run_module):
    commands = kernel()
    run_module('rdma_network_facts', {'address': '10.247.208.5'}, commands)
    assert ['/usr/sbin/ip', '-j', '-4', 'addr', 'show'] not in commands.calls


def test_own_address_is_refused(run_module):
    commands = FakeCommands({ROUTE_GET + ('10.247.208.21',): (
        0, route_get('10.247.208.21', 'lo', '10.247.208.21', route_type='local'), ''),
        ADDR_SHOW_ALL: (0, addr_show_all(addr_show('rdma0', 9000, '10.247.208.21/23'), MGMT), '')})
    with pytest.raises(ModuleFail, match='address of this node itself'):
        run_module('rdma_network_facts', {'address': '10.247.208.21'}, commands)


def test_pinned_interface_mismatch_is_refused(run_module):
    with pytest.raises(ModuleFail, match='routed through rdma0, but the RDMA interface is pinned to ens1f0'):
        run_module('rdma_network_facts', {'address': '10.247.208.5', 'interface': 'ens1f0'}, kernel())


def test_empty_pinned_interface_means_not_pinned(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5', 'interface': ''}, kernel())
    assert result['rdma_network']['interface'] == 'rdma0'


def test_small_subnet_is_refused(run_module):
    with pytest.raises(ModuleFail, match='10.61.0.0/26 is not larger than the /25'):
        run_module('rdma_network_facts', {'address': '10.61.0.5'}, kernel('10.61.0.5', 'rdma4', '10.61.0.10/26'))


def test_exclude_prefix_option_is_applied(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude_prefix': 26}, kernel())
    assert result['rdma_network']['excludes'] == ['10.247.208.0/26']


def test_exclude_option_replaces_the_computed_exclude(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude': ['10.247.208.0/27']}, kernel())
    assert result['rdma_network']['excludes'] == ['10.247.208.0/27']


def test_exclude_outside_the_subnet_is_refused(run_module):
    with pytest.raises(ModuleFail, match='exclude 10.9.0.0/25 is not inside the RDMA subnet 10.247.208.0/23'):
        run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude': ['10.9.0.0/25']}, kernel())


def test_exclude_prefix_out_of_range_fails(run_module):
    with pytest.raises(ModuleFail, match='exclude_prefix 40 is not a prefix length'):
        run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude_prefix': 40}, kernel())


def test_unreadable_interface_fails_naming_it(run_module):
    commands = FakeCommands({
        ROUTE_GET + ('10.247.208.5',): (0, route_get('10.247.208.5', 'rdma0', '10.247.208.21'), ''),
        ADDR_SHOW + ('rdma0',): (1, '', 'Device "rdma0" does not exist.'),
    })
    with pytest.raises(ModuleFail, match='cannot read the addresses of rdma0.*does not exist'):
        run_module('rdma_network_facts', {'address': '10.247.208.5'}, commands)


def test_missing_ip_command_fails(run_module):
    commands = kernel()
    commands.binaries['ip'] = None
    with pytest.raises(ModuleFail, match='required executable "ip"'):
        run_module('rdma_network_facts', {'address': '10.247.208.5'}, commands)


def test_addresses_outside_the_exclude_are_excluded_not_warned_about(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.209.200'},
                        kernel('10.247.209.200', 'rdma0', '10.247.208.21/23'))
    assert result['rdma_network']['excludes'] == ['10.247.208.0/25', '10.247.209.200/32']
    assert not result.get('warnings')


def test_check_mode_gives_the_same_answer(run_module):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5', '_ansible_check_mode': True}, kernel())
    assert result['rdma_network']['cidr'] == '10.247.208.0/23' and result['changed'] is False


class RecordingCommands(FakeCommands):
    """FakeCommands that also keeps the environment each command was given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.environments = []

    def run_command(self, module, args, **kwargs):
        self.environments.append(kwargs.get('environ_update'))
        return super().run_command(module, args, **kwargs)


def test_every_ip_command_runs_in_the_c_locale(run_module):
    # iproute2's words (and JSON keys) are read as the C locale prints them
    commands = RecordingCommands(kernel().answers)
    run_module('rdma_network_facts', {'address': '10.247.208.5'}, commands)
    refused = RecordingCommands(nic_down().answers)
    with pytest.raises(ModuleFail):
        run_module('rdma_network_facts', {'address': '10.247.208.5'}, refused)
    assert len(commands.calls) == 2 and len(refused.calls) == 2
    assert commands.environments + refused.environments == [{'LC_ALL': 'C'}] * 4


def test_an_unlistable_node_is_refused_with_the_commands_words(run_module):
    commands = FakeCommands({ROUTE_GET + ('10.99.0.5',): (2, '', 'RTNETLINK answers: Network is unreachable\n'),
                             ADDR_SHOW_ALL: (1, '', 'Cannot open netlink socket: Permission denied\n')})
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.99.0.5'}, commands)
    assert failure.value.result['msg'] == ('cannot list the interfaces of this node (ip -j -4 addr show): Cannot open '
                                           'netlink socket: Permission denied')


@pytest.mark.parametrize('prefix, excludes', [(32, ['10.247.208.0/32', '10.247.208.5/32']), (24, ['10.247.208.0/24'])])
def test_exclude_prefixes_up_to_32_are_taken(run_module, prefix, excludes):
    result = run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude_prefix': prefix}, kernel())
    assert result['rdma_network']['excludes'] == excludes + (['10.247.208.21/32'] if prefix == 32 else [])


@pytest.mark.parametrize('prefix', [0, 33])
def test_an_exclude_prefix_out_of_range_is_refused_before_any_command(run_module, prefix):
    commands = FakeCommands()
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude_prefix': prefix}, commands)
    assert failure.value.result['msg'] == 'exclude_prefix %d is not a prefix length (1-32)' % prefix
    assert commands.calls == []


def test_an_exclude_prefix_of_1_is_a_prefix_length_but_no_subnet_is_larger(run_module):
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.247.208.5', 'exclude_prefix': 1}, kernel())
    assert failure.value.result['msg'] == (
        'the RDMA subnet 10.247.208.0/23 is not larger than the /1 to exclude from it (the first /1 is kept for IPU '
        'infrastructure): raise ipu_k8s_rdma_exclude_prefix above 23, or list the ranges to exclude in '
        'ipu_k8s_rdma_excludes')


def test_no_route_is_refused_in_full_quoting_the_kernel(run_module):
    commands = FakeCommands({ROUTE_GET + ('10.99.0.5',): (2, '', 'RTNETLINK answers: Network is unreachable\n'),
                             ADDR_SHOW_ALL: (0, addr_show_all(MGMT), '')})
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.99.0.5'}, commands)
    assert failure.value.result['msg'] == (
        "the kernel has no route to the V-IPU address 10.99.0.5 (RTNETLINK answers: Network is unreachable): give "
        "this node an address in the V-IPU controller's subnet on its RDMA NIC, and check that the NIC is up")


def test_no_route_without_stderr_quotes_stdout(run_module):
    commands = FakeCommands({ROUTE_GET + ('10.99.0.5',): (2, 'no route', ''),
                             ADDR_SHOW_ALL: (0, addr_show_all(MGMT), '')})
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': '10.99.0.5'}, commands)
    assert failure.value.result['msg'].startswith('the kernel has no route to the V-IPU address 10.99.0.5 (no route): ')


def test_an_unreadable_interface_is_refused_in_full(run_module, hosts_file):
    commands = FakeCommands({
        ROUTE_GET + ('10.247.208.5',): (0, route_get('10.247.208.5', 'rdma0', '10.247.208.21'), ''),
        ADDR_SHOW + ('rdma0',): (1, '', 'Device "rdma0" does not exist.\n'),
    })
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {'address': 'vipu-ctrl:8090'}, commands)
    assert failure.value.result['msg'] == (
        'cannot read the addresses of rdma0, the interface routing the V-IPU address 10.247.208.5: Device "rdma0" does '
        'not exist. [vipu-ctrl resolves to 10.247.208.5]')
