"""rdma_network_facts, the V-IPU controller part: each failure word for word, where a name that does
not resolve came from, the CLI's environment and timeout(1)'s two exit codes, and what the
answer holds for each source. The CLI and name resolution are stood in for (ConnectedNode,
the hosts_file fixture); the module runs for real."""

import pytest

from iproute_json import route_get
from module_harness import ConnectedNode, ModuleFail

SERVER_VERSION = ('--server-version', '--showjson')
CLI = '/opt/poplar/bin/vipu'
ANSWER = '{"version": "1.18.0", "host": "10.5.212.116:8090"}'
NOT_CONFIGURED = ('. The V-IPU controller did not answer or the CLI is not configured (IPUOF_VIPU_API_HOST, '
                  '~/.vipu.hcl); fix that, or pass the address explicitly')


class Commands(ConnectedNode):
    """ConnectedNode that also keeps the keyword arguments of each run_command."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.options = []

    def run_command(self, module, args, **kwargs):
        self.options.append(kwargs)
        return super().run_command(module, args, **kwargs)


def vipu_cli(stdout, rc=0, stderr='', timeout=True):
    binaries = {'vipu': CLI}
    if not timeout:
        binaries['timeout'] = None
    return Commands({SERVER_VERSION: (rc, stdout, stderr)}, binaries=binaries)


@pytest.fixture(autouse=True)
def _clean_environment(no_vipu_environment):
    """No test sees the V-IPU variables of the shell that runs pytest."""


def failure(run_module, args, commands):
    with pytest.raises(ModuleFail) as failed:
        run_module('rdma_network_facts', args, commands)
    return failed.value.result['msg']


def test_the_cli_runs_in_the_c_locale_under_timeout(run_module):
    commands = vipu_cli(ANSWER)
    run_module('rdma_network_facts', {}, commands)
    assert commands.options == [{'environ_update': {'LC_ALL': 'C'}}] * len(commands.calls)
    assert commands.other_calls() == [['/usr/bin/timeout', '-k', '5', '30', CLI, '--server-version', '--showjson']]


@pytest.mark.parametrize('rc', [124, 137])
def test_a_cli_that_ran_out_of_time_is_named_with_its_timeout(run_module, rc):
    assert failure(run_module, {'timeout': 9}, vipu_cli('', rc=rc)) == (
        '%s --server-version did not answer within 9 s: is the V-IPU controller up and reachable from this node? '
        'Pass the address explicitly to skip the CLI' % CLI)


def test_without_timeout_on_the_node_the_cli_runs_alone_and_124_is_just_a_failure(run_module):
    commands = vipu_cli('', rc=124, timeout=False)
    assert failure(run_module, {}, commands) == (
        '%s --server-version --showjson failed (rc=124): (no output)' % CLI + NOT_CONFIGURED)
    assert commands.calls == [[CLI, '--server-version', '--showjson']]


def test_a_failing_cli_shows_its_stderr_or_else_its_stdout(run_module):
    assert failure(run_module, {}, vipu_cli('', rc=1, stderr=' rpc error: connection refused \n')) == (
        '%s --server-version --showjson failed (rc=1): rpc error: connection refused' % CLI + NOT_CONFIGURED)
    assert failure(run_module, {}, vipu_cli('usage: vipu [flags]\n', rc=2)) == (
        '%s --server-version --showjson failed (rc=2): usage: vipu [flags]' % CLI + NOT_CONFIGURED)


def test_undecodable_cli_output_is_refused_with_the_fix(run_module):
    stdout = b'{"host": "\xff"}'.decode('utf-8', 'surrogateescape')
    assert failure(run_module, {}, vipu_cli(stdout)) == (
        '%s --server-version --showjson printed bytes that are not UTF-8 (shown as \\x..): {"host": "\\xff"}. '
        'Check the V-IPU CLI and its locale on this node, or pass the address explicitly' % CLI)


def test_a_cli_path_that_is_not_there_is_refused_with_the_fix(run_module):
    assert failure(run_module, {'cli': '/srv/tools/vipu'}, Commands()) == (
        'the V-IPU CLI /srv/tools/vipu does not exist or is not executable: fix the cli option, or leave it at vipu '
        'to look it up on PATH')


@pytest.mark.parametrize('environment, why', [(True, 'IPUOF_VIPU_API_HOST is not set'),
                                              (False, 'the environment is not consulted (environment=false)')])
def test_nothing_to_go_on_is_refused_saying_what_to_set(run_module, environment, why):
    assert failure(run_module, {'environment': environment, 'cli': 'vipu-cli'}, Commands()) == (
        'no V-IPU controller address on this node: no address was given, the V-IPU CLI vipu-cli is not on PATH, '
        'and %s. Set ipu_k8s_vipu_controllers in the inventory, install the V-IPU CLI, or set IPUOF_VIPU_API_HOST '
        '(task keyword environment)' % why)


def test_an_empty_environment_variable_is_not_an_address(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '')
    assert 'IPUOF_VIPU_API_HOST is not set' in failure(run_module, {}, Commands())


@pytest.mark.parametrize('timeout', [0, -5])
def test_a_timeout_below_one_second_is_refused_with_its_value(run_module, timeout):
    assert failure(run_module, {'timeout': timeout}, Commands()) == (
        'timeout must be at least 1 second, got %d' % timeout)


def test_one_second_is_timeout_enough(run_module):
    assert run_module('rdma_network_facts', {'timeout': 1}, vipu_cli(ANSWER))['vipu_server']['source'] == 'cli'


def test_a_bad_label_is_refused_naming_the_setting(run_module):
    assert failure(run_module, {'label': 'no equals sign', 'address': '10.5.212.116'}, Commands()).startswith(
        "label 'no equals sign' (ipu_k8s_ipu_node_label) ")


def test_a_name_from_the_cli_that_does_not_resolve_says_it_came_from_the_cli(run_module, hosts_file):
    message = failure(run_module, {}, vipu_cli('{"version": "1.18.0", "host": "nowhere.example:8090"}'))
    assert 'nowhere.example' in message and message.endswith(' [the name came from the V-IPU CLI]')


def test_a_name_from_the_address_option_that_does_not_resolve_says_so(run_module, hosts_file):
    message = failure(run_module, {'address': 'nowhere.example'}, Commands())
    assert message.endswith(' [the name came from the address option]')


def test_a_name_from_the_environment_that_does_not_resolve_names_the_variable(run_module, hosts_file, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', 'nowhere.example')
    message = failure(run_module, {}, Commands())
    assert message.endswith(' [the name came from IPUOF_VIPU_API_HOST]')


def test_an_explicit_address_answers_with_the_labels_option(run_module, hosts_file):
    result = run_module('rdma_network_facts', {'address': 'vipu-ctrl', 'label': 'vipu-ctrl=pod001'}, Commands())
    assert result['vipu_server'] == {'host': '10.247.208.5', 'port': 8090, 'address': '10.247.208.5:8090',
                                     'version': None, 'source': 'param', 'name': '10.247.208.5:8090',
                                     'label': 'vipu-ctrl=pod001'}
    assert result['ansible_facts'] == {'vipu_server': result['vipu_server'], 'rdma_network': result['rdma_network']}


# --- several controllers and no choice: the node looks up its route to each ------------------

PODS = [{'name': 'pod001', 'host': 'vipu-ctrl.pod001.example', 'label': 'vipu-ctrl=pod001'},
        {'name': 'pod002', 'host': '10.247.208.5', 'label': 'vipu-ctrl=pod002'}]


def route(address, rc=0, gateway=None):
    """`ip -j -4 route get address` as the Commands key and its answer."""
    return ('-j', '-4', 'route', 'get', address), (rc, route_get(address, 'rdma0', '10.247.208.20', gateway), '')


def routes(*answers):
    return Commands(dict(answers))


def test_a_node_that_reaches_only_a_later_controller_must_name_it(run_module, hosts_file):
    commands = routes(route('10.5.212.116', gateway='10.247.208.1'), route('10.247.208.5'))
    assert failure(run_module, {'controllers': PODS}, commands) == (
        'ipu_k8s_vipu_controller is empty, so this node takes the first entry of ipu_k8s_vipu_controllers, pod001 '
        '(vipu-ctrl.pod001.example), which it does not reach on a connected subnet, while pod002 (10.247.208.5) is '
        'on its own subnet: set ipu_k8s_vipu_controller: pod002 for this host (host_vars, or the group_vars of its '
        'IPU-POD)')
    assert commands.calls == [['/usr/sbin/ip', '-j', '-4', 'route', 'get', '10.5.212.116'],
                              ['/usr/sbin/ip', '-j', '-4', 'route', 'get', '10.247.208.5']]
    assert commands.options == [{'environ_update': {'LC_ALL': 'C'}}] * 2


@pytest.mark.parametrize('first', [
    route('10.5.212.116', rc=2),   # the lookup failed: whatever ip printed, it is no route
    (('-j', '-4', 'route', 'get', '10.5.212.116'), (0, '[]', '')),
])
def test_a_first_controller_without_a_usable_route_is_not_reached(run_module, hosts_file, first):
    message = failure(run_module, {'controllers': PODS}, routes(first, route('10.247.208.5')))
    assert message.startswith('ipu_k8s_vipu_controller is empty, so this node takes the first entry')


def test_a_node_on_the_first_controllers_subnet_takes_it(run_module, hosts_file):
    commands = routes(route('10.5.212.116'), route('10.247.208.5'))
    result = run_module('rdma_network_facts', {'controllers': PODS}, commands)
    assert result['vipu_server']['name'] == 'pod001'


def test_a_node_that_reaches_no_controller_directly_takes_the_first_and_refuses_its_gateway(run_module, hosts_file):
    commands = routes(route('10.5.212.116', gateway='10.247.208.1'), route('10.247.208.5', gateway='10.247.208.1'))
    assert failure(run_module, {'controllers': PODS}, commands).startswith(
        'the V-IPU address 10.5.212.116 is reached through gateway 10.247.208.1 on rdma0')


def test_no_other_route_is_looked_up_when_the_node_names_its_controller(run_module, hosts_file):
    commands = Commands()
    result = run_module('rdma_network_facts', {'controller': 'pod001', 'controllers': PODS}, commands)
    assert result['vipu_server']['name'] == 'pod001'
    assert commands.calls == commands.derivation_calls('10.5.212.116')


def test_one_controller_needs_no_other_route_lookup(run_module, hosts_file):
    commands = Commands()
    assert run_module('rdma_network_facts', {'controllers': PODS[1:]}, commands)['vipu_server']['name'] == 'pod002'
    assert commands.calls == commands.derivation_calls('10.247.208.5')
