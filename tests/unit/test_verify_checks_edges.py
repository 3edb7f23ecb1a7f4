"""plugins/filter/verify_checks.py on small hand-written check lists: every refusal of a
broken entry in full, the true/false words the plan and the rows accept, the plan's and the
rows' defaults, and the rows of checks that failed, skipped or reported nothing, written
out whole. tests/unit/test_verify_checks.py runs the same filters on the role's own list."""

import copy
import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_checks', ROOT / 'plugins' / 'filter' / 'verify_checks.py')
verify_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_checks)

MEMLOCK = {'id': 'memlock', 'title': 'memlock', 'scope': 'node', 'hosts': 'k8s_cluster', 'tags': ['verify_node'],
           'tasks': 'node_memlock.yml',
           'rows': [{'id': 'systemd', 'title': 'LimitMEMLOCK', 'expected': 'infinity'},
                    {'id': 'process', 'title': 'process memlock', 'expected': 'unlimited'}]}
PROBE = {'id': 'probe', 'title': 'data path', 'scope': 'node', 'hosts': 'k8s_cluster', 'tags': ['verify_node'],
         'tasks': 'node_probe.yml', 'expected': 'a reply', 'check_mode': 'skipped: check mode'}
OPT = {'id': 'smoke', 'title': 'smoke test', 'scope': 'cluster', 'hosts': 'k8s_cluster', 'tags': ['verify_cluster'],
       'tasks': 'cluster_smoke.yml', 'expected': 'Succeeded', 'opt_in': 'verify_smoke',
       'opt_in_reason': 'the smoke test is opt-in'}
CLIENT = {'id': 'client', 'title': 'client', 'scope': 'cluster', 'hosts': 'api', 'tags': ['verify_cluster'],
          'tasks': 'cluster_client.yml', 'expected': 'ready', 'client': True, 'prerequisite': True}
NODES = {'id': 'nodes', 'title': 'nodes Ready', 'scope': 'cluster', 'hosts': 'api', 'tags': ['verify_cluster'],
         'tasks': 'cluster_nodes.yml', 'expected': 'all Ready', 'client': 'yes'}
CHECKS = [MEMLOCK, PROBE, OPT, CLIENT, NODES]
GROUPS = {'control_plane': ['cp1'], 'k8s_cluster': ['cp1', 'w1']}


def refusal(function, *args):
    with pytest.raises(AnsibleFilterError) as refused:
        function(*args)
    return refused.value.message


def plan(host='cp1', run_tags=('all',), skip_tags=(), opted=None, tag_skip=None, check_mode=False, checks=CHECKS):
    return verify_checks.verify_plan(checks, host, GROUPS, list(run_tags), list(skip_tags),
                                     {'verify_smoke': False} if opted is None else opted, tag_skip, check_mode)


def ids(checks):
    return [check['id'] for check in checks]


# --- true and false --------------------------------------------------------------------------

@pytest.mark.parametrize('value', [True, 'true', 'yes', 'on', '1', ' Yes ', 'ON'])
def test_words_for_true_opt_in(value):
    assert ids(plan(opted={'verify_smoke': value})['run']) == ['memlock', 'probe', 'smoke']


@pytest.mark.parametrize('value', [False, 'false', 'no', 'off', '0', 'none', '', None, 'NO', 'Off'])
def test_words_for_false_leave_the_check_out_with_its_reason(value):
    got = plan(opted={'verify_smoke': value})
    assert ids(got['run']) == ['memlock', 'probe'] and got['not_run'] == {'smoke': 'the smoke test is opt-in'}


@pytest.mark.parametrize('call, message', [
    (lambda: plan(opted={'verify_smoke': 'maybe'}), "verify_smoke must be true or false, got 'maybe'"),
    (lambda: plan(check_mode='maybe'), "check_mode must be true or false, got 'maybe'"),
    (lambda: plan(checks=[dict(MEMLOCK, client='maybe')]),
     "__verify_checks[0] (memlock): client must be true or false, got 'maybe'"),
    (lambda: verify_checks.verify_rows([MEMLOCK], {'run': [MEMLOCK]}, {'memlock': {'systemd': {'ok': 'maybe'}}},
                                       'w1'),
     "ok of row systemd must be true or false, got 'maybe'"),
    (lambda: verify_checks.verify_rows([dict(MEMLOCK, prerequisite='maybe')], {'not_run': {'memlock': 'why'}}, {},
                                       'w1'),
     "prerequisite must be true or false, got 'maybe'"),
    (lambda: verify_checks.verify_checks_table([dict(MEMLOCK, prerequisite='maybe')]),
     "prerequisite must be true or false, got 'maybe'"),
    (lambda: verify_checks.verify_rows([dict(MEMLOCK, one_reading='maybe')], {'run': [MEMLOCK]},
                                       {'memlock': {'error': 'boom'}}, 'w1'),
     "one_reading must be true or false, got 'maybe'"),
])
def test_a_value_that_is_neither_is_refused_naming_it(call, message):
    with pytest.raises(AnsibleFilterError) as refused:
        call()
    assert refused.value.message == message


# --- the plan ----------------------------------------------------------------------------------

def test_the_plan_in_full_and_its_defaults():
    got = verify_checks.verify_plan(CHECKS, 'cp1', GROUPS, ['all'], [], {'verify_smoke': 'no'})
    assert got == {'selected': True, 'tags': ['verify_node', 'verify_cluster'], 'run': [MEMLOCK, PROBE],
                   'run_client': [CLIENT, NODES], 'not_run': {'smoke': 'the smoke test is opt-in'}}
    assert verify_checks.verify_plan([MEMLOCK], 'w1', GROUPS, ['all'], [])['run'] == [MEMLOCK]


def test_a_client_check_runs_on_the_first_control_plane_host_under_verify_cluster_unless_it_says_otherwise():
    bare = {'id': 'nodes', 'title': 'nodes Ready', 'tasks': 'cluster_nodes.yml', 'expected': 'all Ready', 'client': True}
    assert verify_checks.verify_plan([bare], 'cp1', GROUPS, ['verify_cluster'], [])['run_client'] == [NODES | {'client': True}]
    assert verify_checks.verify_plan([bare], 'w1', GROUPS, ['all'], [])['run_client'] == []
    assert verify_checks.verify_plan([bare], 'cp1', GROUPS, ['verify_node'], [])['not_run'] == {
        'nodes': 'not run: the run skipped the tag verify_cluster'}
    assert verify_checks.verify_checks_table([dict(bare, tags=['verify_node'])]).splitlines()[2].startswith(
        '| nodes Ready | nodes Ready | cluster | first control-plane host | `verify_node` |')


def test_a_check_reads_the_ipu_node_it_runs_on_under_verify_node_unless_it_says_otherwise():
    bare = {'id': 'device', 'title': 'RDMA device', 'tasks': 'node_rdma_device.yml', 'expected': 'ACTIVE'}
    groups = dict(GROUPS, ipu_nodes=['w1'])
    assert verify_checks.verify_plan([bare], 'w1', groups, ['verify_node'], [])['run'] == [
        dict(bare, scope='node', hosts='ipu_nodes', tags=['verify_node'])]
    assert verify_checks.verify_plan([bare], 'cp1', groups, ['all'], [])['run'] == []
    assert verify_checks.verify_plan([bare], 'w1', groups, ['verify_cluster'], [])['not_run'] == {
        'device': 'not run: the run skipped the tag verify_node'}


def test_a_skipped_tag_gives_the_sites_reason_or_the_default_one():
    assert plan(run_tags=['verify_node'], opted={'verify_smoke': True},
                tag_skip={'verify_cluster': 'the cluster checks were skipped'})['not_run'] == {
        'smoke': 'the cluster checks were skipped', 'client': 'the cluster checks were skipped',
        'nodes': 'the cluster checks were skipped'}
    assert plan(run_tags=['verify_node'], opted={'verify_smoke': True}, tag_skip={})['not_run']['smoke'] == (
        'not run: the run skipped the tag verify_cluster')


def test_check_mode_leaves_out_the_checks_that_change_something():
    got = plan(check_mode='yes')
    assert ids(got['run']) == ['memlock'] and got['not_run']['probe'] == 'skipped: check mode'


def test_an_opt_in_without_its_value_is_refused_in_full():
    assert refusal(plan, 'cp1', ('all',), (), {}) == 'verify_plan: no value given for verify_smoke, the opt-in of check smoke'


# --- the rows ----------------------------------------------------------------------------------

def row(title, expected, observed, status, host='w1'):
    return {'host': host, 'check': title, 'expected': expected, 'observed': observed, 'status': status}


def test_an_observation_without_observed_reads_empty():
    seen = {'memlock': {'systemd': {'ok': True}, 'process': {'ok': 'off'}}}
    assert verify_checks.verify_rows([MEMLOCK], {'run': [MEMLOCK]}, seen, 'w1') == [
        row('LimitMEMLOCK', 'infinity', '', 'PASS'), row('process memlock', 'unlimited', '', 'FAIL')]


def test_an_error_without_a_step_fails_the_first_row_and_skips_the_rest():
    seen = {'memlock': {'error': 'systemctl show failed'}}
    assert verify_checks.verify_rows([MEMLOCK], {'run_client': [MEMLOCK]}, seen, 'w1') == [
        row('LimitMEMLOCK', 'infinity', 'systemctl show failed', 'FAIL'),
        row('process memlock', 'unlimited', 'not run: a step before it failed', 'SKIP')]


def test_an_error_of_one_reading_fails_every_row_it_answers():
    one = dict(MEMLOCK, one_reading=True)
    seen = {'memlock': {'error': 'Failed to connect to bus', 'step': 'Read the limit'}}
    assert verify_checks.verify_rows([one], {'run': [one]}, seen, 'w1') == [
        row('LimitMEMLOCK', 'infinity', 'Read the limit: Failed to connect to bus', 'FAIL'),
        row('process memlock', 'unlimited', 'Read the limit: Failed to connect to bus', 'FAIL')]


def test_an_error_after_a_named_step_names_it():
    seen = {'memlock': {'error': 'timeout', 'step': 'Read the limit', 'systemd': {'observed': 'infinity'}}}
    assert verify_checks.verify_rows([MEMLOCK], {'run': [MEMLOCK]}, seen, 'w1') == [
        row('LimitMEMLOCK', 'infinity', 'infinity', 'PASS'),
        row('process memlock', 'unlimited', 'Read the limit: timeout', 'FAIL')]


def test_a_check_without_rows_shows_its_error_under_its_title():
    step = dict(MEMLOCK, rows=[])
    assert verify_checks.verify_rows([step], {'run': [step]}, {'memlock': {'error': 'boom'}}, 'w1') == [
        row('memlock', 'no error', 'boom', 'FAIL')]
    assert verify_checks.verify_rows([step], {'run': [step]}, {'memlock': {}}, 'w1') == []


def test_a_check_that_skipped_or_registered_nothing():
    assert verify_checks.verify_rows([MEMLOCK], {'run': [MEMLOCK]}, {'memlock': {'skip': 'no systemd'}}, 'w1') == [
        row('LimitMEMLOCK', 'infinity', 'no systemd', 'SKIP'), row('process memlock', 'unlimited', 'no systemd', 'SKIP')]
    assert verify_checks.verify_rows([MEMLOCK], {'run': [MEMLOCK]}, {'memlock': {'systemd': {}}}, 'w1')[1] == row(
        'process memlock', 'unlimited', 'the check memlock registered no observation for this row', 'FAIL')


def test_planned_checks_that_registered_nothing_are_skipped_saying_why():
    got = verify_checks.verify_rows([MEMLOCK, CLIENT, NODES], {'run': [MEMLOCK], 'run_client': [CLIENT, NODES]},
                                    {'client': {'client': {'skip': 'check mode'}}}, 'cp1')
    assert got == [
        row('LimitMEMLOCK', 'infinity', 'not run: the verify run stopped before it (see the verify run row)', 'SKIP',
            'cp1'),
        row('process memlock', 'unlimited', 'not run: the verify run stopped before it (see the verify run row)',
            'SKIP', 'cp1'),
        row('client', 'ready', 'check mode', 'SKIP', 'cp1'),
        row('nodes Ready', 'all Ready', 'not run: the Python Kubernetes client is not ready (see its row)', 'SKIP',
            'cp1')]


def test_a_plan_without_some_keys_reports_what_it_has():
    assert verify_checks.verify_rows([MEMLOCK, PROBE], {'not_run': {'probe': 'skipped: check mode'}}, None, 'w1') == [
        row('data path', 'a reply', 'skipped: check mode', 'SKIP')]
    assert verify_checks.verify_rows([MEMLOCK, PROBE], {}, {}, 'w1') == []


def test_a_not_run_prerequisite_reports_nothing():
    assert verify_checks.verify_rows([CLIENT], {'not_run': {'client': 'tag skipped'}}, {}, 'cp1') == []


def test_a_malformed_observation_is_refused_in_full():
    assert refusal(verify_checks.verify_rows, [MEMLOCK], {'run': [MEMLOCK]}, {'memlock': {'systemd': {'seen': 'x'}}},
                   'w1') == ("verify_rows: observation {'seen': 'x'} of row systemd; a mapping of expected, host, "
                             "observed, ok, skip, title")


# --- the list's own refusals ----------------------------------------------------------------------

def broken(change, index=0):
    checks = copy.deepcopy([MEMLOCK, PROBE, CLIENT])
    change(checks[index])
    return checks


@pytest.mark.parametrize('checks, message', [
    ([MEMLOCK, 'x'], "__verify_checks[1] (?): each check is a mapping, got 'x'"),
    (broken(lambda c: c.update(b=1, a=2)),
     '__verify_checks[0] (memlock): unknown field(s) a, b; allowed: check_mode, client, expected, hosts, id, '
     'one_reading, opt_in, opt_in_reason, prerequisite, rows, scope, tags, tasks, title'),
    (broken(lambda c: (c.pop('id'), c.pop('title'))), '__verify_checks[0] (?): missing id, title'),
    (broken(lambda c: c.update(id='memlock'), 1), "__verify_checks[1] (memlock): id 'memlock' is used twice; each check "
                                                  "needs its own"),
    (broken(lambda c: c.update(scope='pod')), "__verify_checks[0] (memlock): scope 'pod'; use one of node, cluster"),
    (broken(lambda c: c.update(hosts='workers')),
     "__verify_checks[0] (memlock): hosts 'workers'; use one of k8s_cluster, ipu_nodes, control_plane, api"),
    (broken(lambda c: c.update(tags=['verify_nodes'])),
     "__verify_checks[0] (memlock): tags ['verify_nodes']; a non-empty list of verify_node, verify_cluster"),
    (broken(lambda c: c.update(tags='verify_node')),
     "__verify_checks[0] (memlock): tags 'verify_node'; a non-empty list of verify_node, verify_cluster"),
    (broken(lambda c: c.update(tasks='../x.yml')),
     "__verify_checks[0] (memlock): tasks '../x.yml'; the name of a task file of roles/verify/tasks"),
    (broken(lambda c: c.update(opt_in='verify_x')), '__verify_checks[0] (memlock): opt_in and opt_in_reason go together'),
    (broken(lambda c: c.update(rows=5)), '__verify_checks[0] (memlock): rows 5; a list of {id, title, expected} ([] for '
                                         'none)'),
    (broken(lambda c: c.update(rows={'id': 'x'})),
     "__verify_checks[0] (memlock): rows {'id': 'x'}; a list of {id, title, expected} ([] for none)"),
    (broken(lambda c: c.update(expected='x')),
     '__verify_checks[0] (memlock): expected belongs to each of its rows when it has rows'),
    (broken(lambda c: c.pop('expected'), 1), '__verify_checks[1] (probe): missing expected (what its one row expects), '
                                             'or rows'),
    (broken(lambda c: c['rows'].append(['id', 'title'])),
     "__verify_checks[0] (memlock): row ['id', 'title']; each row is {id, title, expected}"),
    (broken(lambda c: c['rows'].append({'id': 'step', 'title': 't', 'expected': 'e'})),
     "__verify_checks[0] (memlock): row id 'step' is used twice or reserved (skip, error, step)"),
])
def test_a_broken_entry_is_refused_in_full(checks, message):
    assert refusal(verify_checks.verify_checks_valid, checks) == message


def test_the_client_checks_come_last():
    checks = [CLIENT, MEMLOCK]
    assert refusal(verify_checks.verify_checks_valid, checks) == (
        "__verify_checks[1] (memlock): comes after the client check 'client'; checks with client: true go last")
    assert verify_checks.verify_checks_valid(iter([MEMLOCK, dict(CLIENT, client='false'), NODES])) == [
        MEMLOCK, dict(CLIENT, client='false'), NODES]


# --- the docs/verify.md table -------------------------------------------------------------------------------

def test_the_table_escapes_bars_and_gives_the_sites_or_the_default_reason():
    checks = [dict(PROBE, title='data | path', expected='a | reply'), OPT, CLIENT]
    lines = verify_checks.verify_checks_table(checks, {'verify_node': 'node checks skipped'}).splitlines()
    assert lines[2:] == [
        '| data \\| path | data \\| path | node | every node | `verify_node` | `node_probe.yml` | SKIP: node checks '
        'skipped; in check mode SKIP: skipped: check mode |',
        '| smoke test | smoke test | cluster | every node | `verify_cluster` | `cluster_smoke.yml` | SKIP: not run: the '
        'run skipped the tag verify_cluster; opt-in (`verify_smoke`), otherwise SKIP: the smoke test is opt-in |',
        '| client | client | cluster | first control-plane host | `verify_cluster` | `cluster_client.yml` | nothing '
        'reported (a step of the checks after it) |']


def test_the_plugin_offers_the_three_filters():
    assert verify_checks.FilterModule().filters() == {'verify_plan': verify_checks.verify_plan,
                                                       'verify_rows': verify_checks.verify_rows,
                                                       'verify_checks_table': verify_checks.verify_checks_table}
