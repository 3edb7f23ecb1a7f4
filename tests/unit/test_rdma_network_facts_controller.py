"""rdma_network_facts, where the V-IPU controller comes from: option handling, the order
param -> CLI -> environment, and its failures (the derivation after it on a ConnectedNode)."""

import json

import pytest

from module_harness import ConnectedNode, ModuleFail

SERVER_VERSION = ('--server-version', '--showjson')


def vipu_cli(stdout, rc=0, stderr='', path='/opt/poplar/bin/vipu'):
    """ConnectedNode where the V-IPU CLI is installed at path and answers --server-version."""
    return ConnectedNode({SERVER_VERSION: (rc, stdout, stderr)}, binaries={'vipu': path, path: path})


def no_vipu_cli():
    return ConnectedNode()


@pytest.fixture(autouse=True)
def _clean_environment(no_vipu_environment):
    """No test sees the V-IPU variables of the shell that runs pytest."""


def test_explicit_address_with_port_is_used_as_given(run_module):
    result = run_module('rdma_network_facts', {'address': '10.5.212.116:8091'}, vipu_cli('{}'))
    assert result['vipu_server'] == {'host': '10.5.212.116', 'port': 8091, 'address': '10.5.212.116:8091',
                                     'version': None, 'source': 'param', 'name': '10.5.212.116:8091',
                                     'label': 'ipunode=true'}


def test_explicit_address_is_not_checked_against_the_cli(run_module):
    commands = vipu_cli('{"version": "1.18.0", "host": "10.9.9.9:8090"}')
    run_module('rdma_network_facts', {'address': '10.5.212.116'}, commands)
    assert commands.other_calls() == []


def test_explicit_address_without_port_takes_the_port_option(run_module):
    result = run_module('rdma_network_facts', {'address': '10.5.212.116', 'port': 8095}, no_vipu_cli())
    assert result['vipu_server']['address'] == '10.5.212.116:8095'


def test_explicit_host_name_resolves_to_ipv4(run_module, hosts_file):
    result = run_module('rdma_network_facts', {'address': 'vipu-ctrl.pod001.example:8090'}, no_vipu_cli())
    assert (result['vipu_server']['host'], result['vipu_server']['address']) == ('10.5.212.116', '10.5.212.116:8090')


def test_unresolvable_host_name_fails_naming_it(run_module, hosts_file):
    with pytest.raises(ModuleFail, match="cannot resolve 'vipu-ctrl.pod002.example'"):
        run_module('rdma_network_facts', {'address': 'vipu-ctrl.pod002.example'}, no_vipu_cli())


def test_result_is_also_a_fact_and_never_a_change(run_module):
    result = run_module('rdma_network_facts', {'address': '10.5.212.116'}, no_vipu_cli())
    assert result['changed'] is False
    assert result['ansible_facts'] == {'vipu_server': result['vipu_server'], 'rdma_network': result['rdma_network']}


def test_cli_answer_gives_host_port_and_version(run_module):
    result = run_module('rdma_network_facts', {}, vipu_cli('{"version": "1.18.0", "host": "10.5.212.116:8090"}\n'))
    assert result['vipu_server'] == {'host': '10.5.212.116', 'port': 8090, 'address': '10.5.212.116:8090',
                                     'version': '1.18.0', 'source': 'cli', 'name': '10.5.212.116:8090',
                                     'label': 'ipunode=true'}


def test_cli_runs_as_an_argument_list_under_a_timeout(run_module):
    commands = vipu_cli('{"version": "1.18.0", "host": "10.5.212.116:8090"}')
    run_module('rdma_network_facts', {'timeout': 12}, commands)
    assert commands.other_calls() == [['/usr/bin/timeout', '-k', '5', '12', '/opt/poplar/bin/vipu', '--server-version',
                                       '--showjson']]


def test_cli_host_without_port_takes_the_port_option(run_module):
    result = run_module('rdma_network_facts', {'port': 8099}, vipu_cli('{"version": "1.18.0", "host": "10.5.212.116"}'))
    assert result['vipu_server']['port'] == 8099


def test_cli_wins_over_the_environment(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.9.9.9')
    result = run_module('rdma_network_facts', {}, vipu_cli('{"version": "1.18.0", "host": "10.5.212.116:8090"}'))
    assert (result['vipu_server']['host'], result['vipu_server']['source']) == ('10.5.212.116', 'cli')


def test_cli_given_as_a_path_is_used(run_module):
    commands = ConnectedNode({SERVER_VERSION: (0, '{"version": "1.18.0", "host": "10.5.212.116:8090"}', '')},
                            binaries={'/srv/tools/vipu': '/srv/tools/vipu'})
    result = run_module('rdma_network_facts', {'cli': '/srv/tools/vipu'}, commands)
    assert result['vipu_server']['source'] == 'cli'


def test_cli_path_that_does_not_exist_fails(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116')
    with pytest.raises(ModuleFail, match='/srv/tools/vipu does not exist'):
        run_module('rdma_network_facts', {'cli': '/srv/tools/vipu'}, no_vipu_cli())


def test_cli_failure_fails_showing_its_error(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116')
    commands = vipu_cli('', rc=1, stderr='Error: rpc error: connection refused')
    with pytest.raises(ModuleFail, match=r'failed \(rc=1\): Error: rpc error: connection refused'):
        run_module('rdma_network_facts', {}, commands)


def test_cli_timeout_fails_saying_so(run_module):
    with pytest.raises(ModuleFail, match='did not answer within 30 s'):
        run_module('rdma_network_facts', {}, vipu_cli('', rc=124))


def test_cli_text_output_fails_showing_it(run_module):
    with pytest.raises(ModuleFail, match='Output: Unknown flag --showjson'):
        run_module('rdma_network_facts', {}, vipu_cli('Unknown flag --showjson'))


def test_cli_json_without_host_fails_showing_it(run_module):
    with pytest.raises(ModuleFail, match=r'no "host".*"version": "1.18.0"'):
        run_module('rdma_network_facts', {}, vipu_cli(json.dumps({'version': '1.18.0'})))


def test_cli_malformed_host_fails(run_module):
    with pytest.raises(ModuleFail, match="printed by /opt/poplar/bin/vipu --server-version '10.5.212.116:80900'"):
        run_module('rdma_network_facts', {}, vipu_cli('{"version": "1.18.0", "host": "10.5.212.116:80900"}'))


def test_environment_is_used_without_a_cli(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116')
    monkeypatch.setenv('IPUOF_VIPU_API_PORT', '8091')
    result = run_module('rdma_network_facts', {}, no_vipu_cli())
    assert result['vipu_server'] == {'host': '10.5.212.116', 'port': 8091, 'address': '10.5.212.116:8091',
                                     'version': None, 'source': 'env', 'name': '10.5.212.116:8091',
                                     'label': 'ipunode=true'}


def test_environment_without_port_takes_the_port_option(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116')
    result = run_module('rdma_network_facts', {'port': 8092}, no_vipu_cli())
    assert result['vipu_server']['port'] == 8092


def test_environment_is_ignored_when_disabled(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116')
    with pytest.raises(ModuleFail, match='environment=false'):
        run_module('rdma_network_facts', {'environment': False}, no_vipu_cli())


def test_malformed_environment_host_fails_naming_the_variable(run_module, monkeypatch):
    monkeypatch.setenv('IPUOF_VIPU_API_HOST', '10.5.212.116:port')
    with pytest.raises(ModuleFail, match="IPUOF_VIPU_API_HOST '10.5.212.116:port' is malformed"):
        run_module('rdma_network_facts', {}, no_vipu_cli())


def test_nothing_to_go_on_fails_saying_what_to_set(run_module):
    with pytest.raises(ModuleFail) as failed:
        run_module('rdma_network_facts', {}, no_vipu_cli())
    message = failed.value.result['msg']
    assert 'no V-IPU controller address' in message
    assert 'ipu_k8s_vipu_controllers' in message and 'IPUOF_VIPU_API_HOST is not set' in message


def test_malformed_address_fails(run_module):
    with pytest.raises(ModuleFail, match="address '10.5.212.116:0' is malformed"):
        run_module('rdma_network_facts', {'address': '10.5.212.116:0'}, no_vipu_cli())


def test_port_option_out_of_range_fails(run_module):
    with pytest.raises(ModuleFail, match='port 70000 is out of range'):
        run_module('rdma_network_facts', {'address': '10.5.212.116', 'port': 70000}, no_vipu_cli())


def test_timeout_below_one_second_fails(run_module):
    with pytest.raises(ModuleFail, match='timeout must be at least 1'):
        run_module('rdma_network_facts', {'timeout': 0}, no_vipu_cli())


def test_unknown_option_is_refused_by_the_argument_spec(run_module):
    with pytest.raises(ModuleFail, match='Unsupported parameters.*adress'):
        run_module('rdma_network_facts', {'adress': '10.5.212.116'}, no_vipu_cli())


def test_check_mode_gives_the_same_answer(run_module):
    commands = vipu_cli('{"version": "1.18.0", "host": "10.5.212.116:8090"}')
    result = run_module('rdma_network_facts', {'_ansible_check_mode': True}, commands)
    assert result['vipu_server']['source'] == 'cli' and result['changed'] is False


def _as_run_command_decodes(raw):
    """run_command's text for raw bytes: undecodable bytes become lone surrogates."""
    return raw.decode('utf-8', 'surrogateescape')


def test_cli_output_that_is_not_utf8_ends_in_the_modules_message(run_module):
    stdout = _as_run_command_decodes(b'{"version": "1.18.0", "host": "10.5.\xff\xfe.116:8090"}\n')
    with pytest.raises(ModuleFail) as failure:
        run_module('rdma_network_facts', {}, vipu_cli(stdout))
    message = failure.value.result['msg']
    assert 'printed bytes that are not UTF-8' in message and '10.5.\\xff\\xfe.116' in message
    message.encode('utf-8')  # what Ansible's controller insists on: no lone surrogates
    json.dumps(failure.value.result, ensure_ascii=False).encode('utf-8')


def test_failing_cli_with_undecodable_stderr_ends_in_the_modules_message(run_module):
    stderr = _as_run_command_decodes(b'Error: \xc3\x28 connection refused\n')
    with pytest.raises(ModuleFail, match=r'failed \(rc=1\): Error: \\xc3\( connection refused') as failure:
        run_module('rdma_network_facts', {}, vipu_cli('', rc=1, stderr=stderr))
    failure.value.result['msg'].encode('utf-8')


# --- the inventory's controller list -------------------------------------------------------

PODS = [
    {'name': 'pod001', 'host': 'vipu-ctrl.pod001.example', 'label': 'vipu-ctrl=pod001'},
    {'name': 'pod002', 'host': '10.247.208.5', 'port': 8091, 'label': 'vipu-ctrl=pod002'},
]


def test_chosen_entry_is_resolved_on_the_node_with_its_name_and_label(run_module, hosts_file):
    result = run_module('rdma_network_facts', {'controllers': PODS, 'controller': 'pod001'}, no_vipu_cli())
    assert result['vipu_server'] == {'host': '10.5.212.116', 'port': 8090, 'address': '10.5.212.116:8090',
                                     'version': None, 'source': 'inventory', 'name': 'pod001',
                                     'label': 'vipu-ctrl=pod001'}


def test_no_choice_takes_the_first_entry_and_the_default_label(run_module, hosts_file):
    pods = [{'name': 'pod001', 'host': '10.5.212.116'}]
    result = run_module('rdma_network_facts', {'controllers': pods, 'label': 'graphcore.ai/ipu=yes'}, no_vipu_cli())
    assert (result['vipu_server']['name'], result['vipu_server']['label']) == ('pod001', 'graphcore.ai/ipu=yes')


def test_the_list_wins_over_the_cli(run_module):
    commands = vipu_cli('{"version": "1.18.0", "host": "10.9.9.9:8090"}')
    result = run_module('rdma_network_facts', {'controllers': PODS, 'controller': 'pod002'}, commands)
    assert result['vipu_server']['address'] == '10.247.208.5:8091' and commands.other_calls() == []


def test_unknown_choice_is_refused_naming_the_names(run_module):
    with pytest.raises(ModuleFail, match="ipu_k8s_vipu_controller 'pod009' names no entry of "
                                         r"ipu_k8s_vipu_controllers \(names: pod001, pod002\)"):
        run_module('rdma_network_facts', {'controllers': PODS, 'controller': 'pod009'}, no_vipu_cli())


def test_bad_entry_is_refused_even_when_another_is_chosen(run_module):
    pods = PODS + [{'name': 'pod003', 'host': '10.5.213.10:8090'}]
    with pytest.raises(ModuleFail, match=r"ipu_k8s_vipu_controllers\[2\] \(pod003\): host '10.5.213.10:8090' "
                                         "carries a port: write host: 10.5.213.10 and port: 8090"):
        run_module('rdma_network_facts', {'controllers': pods, 'controller': 'pod001'}, no_vipu_cli())


def test_name_that_does_not_resolve_names_the_inventory_as_its_source(run_module, hosts_file):
    pods = [{'name': 'pod001', 'host': 'vipu-ctrl.pod009.example'}]
    with pytest.raises(ModuleFail, match=r"cannot resolve 'vipu-ctrl.pod009.example'.*\[the name came from "
                                         r"ipu_k8s_vipu_controllers\]"):
        run_module('rdma_network_facts', {'controllers': pods}, no_vipu_cli())


def test_address_and_controllers_together_are_refused(run_module):
    with pytest.raises(ModuleFail, match='mutually exclusive'):
        run_module('rdma_network_facts', {'address': '10.5.212.116', 'controllers': PODS}, no_vipu_cli())


def test_bad_default_label_is_refused(run_module):
    with pytest.raises(ModuleFail, match="label 'ipunode' \\(ipu_k8s_ipu_node_label\\) is not key=value"):
        run_module('rdma_network_facts', {'address': '10.5.212.116', 'label': 'ipunode'}, no_vipu_cli())
