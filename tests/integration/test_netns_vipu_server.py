"""vipu_server through ansible-playbook inside the lab node's namespace: the stand-in vipu
CLI (tests/fixtures/bin/vipu) on PATH or by path, IPUOF_VIPU_API_* from the task's
environment, names from the node's own /etc/hosts, and every failure."""

import pytest

from netns_lab import FAKE_VIPU_BIN, SYSTEM_PATH, local_host, run_playbook

WITH_CLI = '%s:%s' % (FAKE_VIPU_BIN, SYSTEM_PATH)
WITHOUT_CLI = SYSTEM_PATH
FAKE_VIPU = str(FAKE_VIPU_BIN / 'vipu')

CASES = {
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
    for name, (args, env) in CASES.items():
        env = dict((k, str(not_utf8) if v == 'NOT_UTF8_FILE' else v) for k, v in env.items())
        hosts[name] = local_host(case={'module': 'vipu_server', 'args': args, 'env': env})
    return run_playbook(lab, 'module_cases.yml', {'all': {'hosts': hosts}}, workdir)


def server(run, case):
    result = run.result('Run vipu_server', case)
    assert not result.get('failed'), result.get('msg')
    assert result['changed'] is False
    return result['vipu_server']


def failure(run, case):
    result = run.result('Run vipu_server', case)
    assert result.get('failed'), 'expected a failure, got %r' % result.get('vipu_server')
    return result['msg']


def test_explicit_name_resolves_from_the_nodes_hosts_file(vipu_run):
    assert server(vipu_run, 'param_name_and_port') == {
        'host': '10.247.208.5', 'port': 8091, 'address': '10.247.208.5:8091', 'version': None, 'source': 'param',
        'name': '10.247.208.5:8091', 'label': 'ipunode=true'}


def test_result_is_left_as_a_host_fact(vipu_run):
    recorded = vipu_run.result('Record the facts the module left on the host', 'cli_on_path')
    assert recorded['ansible_facts']['recorded_facts']['vipu_server'] == server(vipu_run, 'cli_on_path')


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
    assert 'the environment is not consulted (environment=false)' in failure(vipu_run, 'fail_env_disabled')


def test_nothing_to_go_on_says_what_to_set(vipu_run):
    message = failure(vipu_run, 'fail_nothing')
    assert 'no V-IPU controller address on this node' in message
    assert 'ipu_k8s_vipu_controllers' in message and 'IPUOF_VIPU_API_HOST is not set' in message


def test_cli_garbage_is_refused_showing_it(vipu_run):
    assert 'Output: Error: connection refused' in failure(vipu_run, 'fail_cli_garbage')


def test_cli_json_without_host_is_refused_showing_it(vipu_run):
    assert 'no "host"' in failure(vipu_run, 'fail_cli_no_host')


def test_cli_that_cannot_reach_its_controller_fails_with_its_error(vipu_run):
    message = failure(vipu_run, 'fail_cli_cannot_connect')
    assert 'failed (rc=1): Error: unable to connect to the V-IPU server' in message


def test_cli_that_hangs_is_stopped_by_the_timeout(vipu_run):
    assert 'did not answer within 1 s' in failure(vipu_run, 'fail_cli_hangs')


def test_cli_path_that_does_not_exist_fails(vipu_run):
    assert '/nonexistent/vipu does not exist' in failure(vipu_run, 'fail_cli_path_missing')


def test_malformed_address_fails(vipu_run):
    assert "address '10.5.212.116:99999' is malformed" in failure(vipu_run, 'fail_malformed')


def test_unresolvable_name_fails(vipu_run):
    assert "cannot resolve 'no-such-vipu.test'" in failure(vipu_run, 'fail_unresolvable')


def test_cli_output_that_is_not_utf8_ends_in_the_modules_own_message(vipu_run):
    message = failure(vipu_run, 'fail_cli_not_utf8')
    assert 'printed bytes that are not UTF-8' in message and '10.5.\\xff\\xfe.116' in message, message
