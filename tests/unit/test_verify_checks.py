"""verify's checks are one list (roles/verify/vars/main.yml, __verify_checks), each with its rows.

The selection (filter verify_plan, plugins/filter/verify_checks.py) decides
which checks a run runs on a host and why the others do not; verify_rows turns that and
what the checks registered into the host's rows (PASS, FAIL, SKIP with the reason); the
docs/verify.md's table of checks is the list rendered (verify_checks_table), and this file fails
when they differ. Every check's task file exists; that each registers its rows is shown
by running them: the node checks in tests/integration/test_verify_datapath.py, the
cluster checks in tests/api/test_layers.py.
"""

import copy
import importlib.util
import re
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_checks', ROOT / 'plugins' / 'filter' / 'verify_checks.py')
verify_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_checks)

VARS = yaml.safe_load((ROOT / 'roles' / 'verify' / 'vars' / 'main.yml').read_text())
TABLE_START = '<!-- verify checks: generated from roles/verify/vars/main.yml -->'
TABLE_END = '<!-- end of verify checks -->'


def rendered(value):
    """The list as Ansible renders it with the roles' defaults (docs/verify.md shows these)."""
    variables = {}
    for path in ('ipu_k8s/defaults/main/main.yml', 'ipu_k8s/defaults/main/versions.yml', 'verify/defaults/main.yml'):
        variables.update(yaml.safe_load((ROOT / 'roles' / path).read_text()) or {})
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)

    def walk(node):
        if isinstance(node, str):
            return env.from_string(node).render(variables) if '{{' in node else node
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, dict):
            return {key: walk(item) for key, item in node.items()}
        return node
    return walk(value)


CHECKS = rendered(VARS['__verify_checks'])
TAG_SKIP = rendered(VARS['__verify_tag_skip'])
CLUSTER_SKIP = 'not run: the run skipped the tag verify_cluster'
NODE_SKIP = 'not run: the run skipped the tag verify_node'
GROUPS = {'control_plane': ['cp1'], 'ipu_nodes': ['ipu1', 'cp1'], 'k8s_cluster': ['cp1', 'ipu1', 'w1']}
ALL = {'verify_ipujob_smoke_test': False, 'verify_rdma_traffic': False, 'verify_rdma_perftest': False}


def plan(host, run_tags=('all',), skip_tags=(), opted_in=None, checks=None, check_mode=False):
    return verify_checks.verify_plan(CHECKS if checks is None else checks, host, GROUPS, list(run_tags),
                                     list(skip_tags), dict(ALL, **(opted_in or {})), TAG_SKIP, check_mode)


def rows(host, seen=None, checks=None, error=None, **plan_args):
    checks = CHECKS if checks is None else checks
    return verify_checks.verify_rows(checks, plan(host, checks=checks, **plan_args), seen or {}, host, error)


def ids(checks):
    return [check['id'] for check in checks]


def table(rows_):
    return [(r['check'], r['status'], r['observed']) for r in rows_]


def test_the_list_is_valid_and_every_task_file_exists():
    verify_checks.verify_checks_valid(CHECKS)
    for check in CHECKS:
        path = ROOT / 'roles' / 'verify' / 'tasks' / check['tasks']
        assert path.is_file(), '%s: no task file %s' % (check['id'], path)


def test_the_tasks_carry_no_tag_of_their_own_and_name_no_row_title():
    """A tag on a check's task would be a second place that selects it; a title, a second place that names a row."""
    def values(node):  # the strings a task file gives Ansible, task names aside
        if isinstance(node, dict):
            return [text for key, item in node.items() if key != 'name' for text in values(item)]
        if isinstance(node, list):
            return [text for item in node for text in values(item)]
        return [str(node)]

    for check in CHECKS:
        text = (ROOT / 'roles' / 'verify' / 'tasks' / check['tasks']).read_text()
        assert not re.search(r'tags:.*verify_(node|cluster)', text), check['tasks']
        given = ' '.join(values(yaml.safe_load(text)))
        for row in verify_checks.check_rows(check):
            assert row['title'] not in given, '%s names the row %r: the list holds the titles' % (check['tasks'],
                                                                                                 row['title'])


def test_main_yml_runs_the_list_and_names_no_check_file():
    main = (ROOT / 'roles' / 'verify' / 'tasks' / 'main.yml').read_text()
    for check in CHECKS:
        assert check['tasks'] not in main, '%s is run from main.yml directly, not from the list' % check['tasks']
    assert '__verify_plan.run' in main and '__verify_plan.run_client' in main and 'verify_rows' in main


def test_a_full_run_runs_every_check_that_applies_in_list_order():
    api = plan('cp1')
    assert ids(api['run'] + api['run_client']) == ids(
        [c for c in CHECKS if c['id'] not in ('ipujob', 'rdma_traffic', 'rdma_perftest')])  # cp1: IPU node and API host
    assert api['not_run'] == {'rdma_traffic': ('RDMA traffic is opt-in: -e verify_rdma_traffic=true with '
                                               'verify_rdma_traffic_peer'),
                              'rdma_perftest': ('RDMA traffic between two pods is opt-in: -e verify_rdma_perftest=true '
                                                '(two IPU nodes, an image with perftest)'),
                              'ipujob': 'IPUJob smoke test is opt-in: -e verify_ipujob_smoke_test=true'}
    worker = plan('w1')
    assert ids(worker['run']) == ['memlock'] and worker['run_client'] == [] and worker['not_run'] == {}
    ipu = plan('ipu1', opted_in={'verify_ipujob_smoke_test': True, 'verify_rdma_traffic': True})
    assert ids(ipu['run']) == ['memlock', 'rdma_device', 'rdma_derived', 'datapath', 'container', 'rdma_traffic',
                               'container_rdma_traffic', 'macvlan_read', 'cni_files', 'macvlan_matches', 'pool_block']
    assert ipu['not_run'] == {}


def test_opting_in_runs_the_ipujob():
    assert ids(plan('cp1', opted_in={'verify_ipujob_smoke_test': 'true'})['run_client'])[-1] == 'ipujob'


def test_what_a_check_saw_becomes_its_rows():
    seen = {'memlock': {'systemd': {'observed': 'infinity', 'ok': True},
                        'process': {'observed': 'soft 8388608, hard 8388608 (pid 812)', 'ok': False}}}
    got = rows('w1', seen)
    assert got == [
        {'host': 'w1', 'check': 'containerd LimitMEMLOCK (systemd)', 'expected': 'infinity', 'observed': 'infinity',
         'status': 'PASS'},
        {'host': 'w1', 'check': 'containerd memlock (running process)', 'expected': 'soft unlimited, hard unlimited',
         'observed': 'soft 8388608, hard 8388608 (pid 812)', 'status': 'FAIL'}]


def test_ok_given_as_text_is_read_as_a_boolean():
    seen = {'memlock': {'systemd': {'observed': '8388608', 'ok': 'False'}, 'process': {'observed': 'x'}}}
    assert [r['status'] for r in rows('w1', seen)] == ['FAIL', 'PASS']


def test_a_failed_step_fails_the_next_row_and_skips_the_rest():
    seen = {'container': {'net1': {'observed': 'net1 10.247.209.254/23 mtu 9000'},
                          'memlock': {'observed': 'ulimit -l 8192 as uid 1000', 'ok': False},
                          'step': 'Register an RDMA memory region in the container',
                          'error': "Couldn't register MR"}}
    container = {row['title'] for row in verify_checks.check_rows(next(c for c in CHECKS if c['id'] == 'container'))}
    got = [r for r in rows('ipu1', seen, skip_tags=['verify_cluster']) if r['check'] in container]
    assert table(got) == [
        ('pod container: net1 from the macvlan CNI plugin', 'PASS', 'net1 10.247.209.254/23 mtu 9000'),
        ('pod container: memlock', 'FAIL', 'ulimit -l 8192 as uid 1000'),
        ('pod container: RDMA memory region', 'FAIL',
         "Register an RDMA memory region in the container: Couldn't register MR"),
        ('pod container: V-IPU controller answers on net1', 'SKIP',
         'not run: Register an RDMA memory region in the container failed')]


def test_a_check_that_says_why_it_did_not_look_skips_its_rows():
    got = rows('ipu1', {'datapath': {'skip': 'skipped: no derived RDMA network'}}, skip_tags=['verify_cluster'])
    assert [r for r in got if r['check'] == 'RDMA data path (macvlan to V-IPU)'] == [
        {'host': 'ipu1', 'check': 'RDMA data path (macvlan to V-IPU)', 'expected': 'reply from the V-IPU controller',
         'observed': 'skipped: no derived RDMA network', 'status': 'SKIP'}]


def test_a_step_without_rows_of_its_own_still_shows_its_failure():
    seen = {'macvlan_read': {'step': 'Read the node\'s CNI file', 'error': 'permission denied'}}
    got = [r for r in rows('ipu1', seen, skip_tags=['verify_node']) if r['status'] == 'FAIL']
    assert table(got)[0] == ('Applied MacvlanNetwork and its IPAM pool read (for the checks after it)', 'FAIL',
                             "Read the node's CNI file: permission denied")
    assert not [r for r in rows('ipu1', {'macvlan_read': {}}, skip_tags=['verify_node'])
                if r['check'].startswith('Applied')]


def test_a_row_a_check_did_not_register_fails():
    got = rows('w1', {'memlock': {'systemd': {'observed': 'infinity'}}})
    assert table(got)[1] == ('containerd memlock (running process)', 'FAIL',
                             'the check memlock registered no observation for this row')


def test_observations_may_name_their_host_title_and_expected():
    seen = {'nodes': {'ready': {'observed': 'cp1=Ready', 'expected': '3 nodes, all Ready', 'ok': False},
                      'resource': [{'host': 'ipu1', 'observed': '1 on node ipu1'},
                                   {'host': 'cp1', 'observed': '0 on node cp1', 'ok': False}]},
            'cni_files': {'cni_files': {'title': 'Multus and NVIDIA IPAM CNI files', 'observed': 'present'}}}
    got = rows('cp1', seen)
    assert [(r['host'], r['check'], r['expected'], r['status']) for r in got
            if r['check'].startswith(('nodes', 'rdma/', 'Multus'))] == [
        ('cp1', 'Multus and NVIDIA IPAM CNI files', 'multus config, multus.d, whereabouts.d in /etc/cni/net.d', 'PASS'),
        ('cp1', 'nodes Ready', '3 nodes, all Ready', 'FAIL'),
        ('ipu1', 'rdma/rdma_shared_device_a allocatable', 'at least 1', 'PASS'),
        ('cp1', 'rdma/rdma_shared_device_a allocatable', 'at least 1', 'FAIL')]


def test_check_mode_skips_the_checks_that_change_something_with_their_reason():
    got = rows('cp1', {}, check_mode=True, run_tags=['verify_node'])
    assert ('RDMA data path (macvlan to V-IPU)', 'SKIP', 'skipped: check mode (the probe creates a namespace)') in table(got)
    assert ('pod container: memlock', 'SKIP',
            'skipped: check mode (the probe creates a namespace and a container)') in table(got)
    assert 'datapath' not in ids(plan('cp1', check_mode=True)['run'])
    assert 'test_pod' not in ids(plan('cp1', check_mode=True)['run_client'])
    assert ('test pod routes', 'SKIP', 'skipped: check mode (the probe creates a pod)') in table(
        rows('cp1', {}, check_mode=True, run_tags=['verify_cluster']))


def test_skipping_the_cluster_tag_reports_the_cluster_checks_with_the_sites_reason():
    ipu = rows('ipu1', skip_tags=['verify_cluster'], seen={c: {'skip': 'x'} for c in ids(CHECKS)})
    assert [(r['check'], r['expected'], r['observed']) for r in ipu if r['observed'] != 'x'] == [
        ('RDMA traffic (verbs RC, node to peer)', 'ibv_rc_pingpong completes between the RDMA NICs',
         'RDMA traffic is opt-in: -e verify_rdma_traffic=true with verify_rdma_traffic_peer'),
        ('Multus and Whereabouts CNI files', 'multus config, multus.d, whereabouts.d in /etc/cni/net.d', CLUSTER_SKIP),
        ('rdma-net matches the node', 'the derived RDMA network', CLUSTER_SKIP),
        ('NVIDIA IPAM block of the node', "a block (startIP-endIP) for the node in its IPU-POD's IPPool "
         'status.allocations', CLUSTER_SKIP)]
    api = [r for r in rows('cp1', skip_tags=['verify_cluster']) if r['observed'] == CLUSTER_SKIP
           or r['check'].startswith('IPUJob')]
    assert [r['check'] for r in api][3:] == [
        'kubeadm certificates (soonest)', 'nodes Ready', 'rdma/rdma_shared_device_a allocatable', 'Network Operator pods Ready',
        'IPU Operator pods Ready', 'IPU Operator webhook certificate',
        "rdma-net takes each node's CNI file (several IPU-PODs)", 'RDMA test pod Ready (uid 1000, no hostNetwork)',
        'test pod net1 address in the RDMA range', 'test pod routes', 'test pod memlock unlimited',
        'IPUJob smoke test (mnist)']
    # Opt-in says so whatever the tags; opted in, the tag is the reason. The client check,
    # a prerequisite, reports nothing when it does not run.
    assert api[-1]['observed'].startswith('IPUJob smoke test is opt-in')
    opted = rows('cp1', skip_tags=['verify_cluster'], opted_in={'verify_ipujob_smoke_test': True})
    assert opted[-1]['observed'] == CLUSTER_SKIP
    assert 'Python Kubernetes client' not in [r['check'] for r in opted]


def test_a_control_plane_check_runs_on_each_control_plane_host_only():
    groups = dict(GROUPS, control_plane=['cp1', 'cp2'], k8s_cluster=['cp1', 'cp2', 'ipu1', 'w1'])
    checks = [{'id': 'certs', 'title': 'certs', 'hosts': 'control_plane', 'tags': ['verify_cluster'],
               'tasks': 'certs.yml', 'expected': 'x'}]

    def ran(host):
        return ids(verify_checks.verify_plan(checks, host, groups, ['all'], [], ALL, TAG_SKIP)['run'])
    assert [ran(host) for host in ('cp1', 'cp2', 'ipu1', 'w1')] == [['certs'], ['certs'], [], []]


def test_the_cluster_tag_alone_reports_the_node_checks_as_skipped():
    ipu = plan('ipu1', run_tags=['verify_cluster'])
    assert ids(ipu['run']) == ['rdma_derived', 'macvlan_read', 'cni_files', 'macvlan_matches', 'pool_block']
    seen = {c: {'skip': 'x'} for c in ids(CHECKS)}
    skipped = [r for r in rows('ipu1', seen, run_tags=['verify_cluster']) if r['status'] == 'SKIP' and r['observed'] != 'x']
    assert [r['check'] for r in skipped] == [
        'containerd LimitMEMLOCK (systemd)', 'containerd memlock (running process)', 'RDMA device',
        'RDMA data path (macvlan to V-IPU)', 'pod container: net1 from the macvlan CNI plugin',
        'pod container: memlock', 'pod container: RDMA memory region',
        'pod container: V-IPU controller answers on net1', 'RDMA traffic (verbs RC, node to peer)',
        'pod container: RDMA traffic from net1']
    assert {r['observed'] for r in skipped[:-2] + skipped[-1:]} == {NODE_SKIP}


def test_client_checks_that_could_not_run_are_reported():
    got = rows('cp1', {'client': {'client': {'skip': 'check mode: the virtualenv does not exist yet'}}},
               run_tags=['verify_cluster'])
    assert table(got)[0] == ('Python Kubernetes client', 'SKIP', 'check mode: the virtualenv does not exist yet')
    assert ('nodes Ready', 'SKIP', 'not run: the Python Kubernetes client is not ready (see its row)') in table(got)


def test_an_unexpected_error_of_the_run_is_a_failed_row():
    got = rows('w1', {'memlock': {'systemd': {'observed': 'infinity'}, 'process': {'observed': 'x'}}},
               error='Run the selected checks: boom')
    assert got[-1] == {'host': 'w1', 'check': 'verify run', 'expected': 'every check runs',
                       'observed': 'Run the selected checks: boom', 'status': 'FAIL'}


@pytest.mark.parametrize('run_tags, skip_tags, selected', [
    (['all'], [], ['verify_node', 'verify_cluster']),
    (['tagged'], [], ['verify_node', 'verify_cluster']),
    (['verify'], ['verify_node'], ['verify_cluster']),
    (['verify_node'], [], ['verify_node']),
    (['rdma_network'], [], []),
    (['all'], ['verify_node', 'verify_cluster'], []),
])
def test_the_tags_select(run_tags, skip_tags, selected):
    assert verify_checks.selected_tags(run_tags, skip_tags) == selected


def test_a_run_that_selects_no_verify_tag_runs_and_reports_nothing():
    assert plan('cp1', run_tags=['rdma_network']) == {'selected': False, 'tags': [], 'run': [], 'run_client': [],
                                                       'not_run': {}}
    assert rows('cp1', run_tags=['rdma_network']) == []


def test_without_a_control_plane_group_the_host_reads_the_api():
    solo = verify_checks.verify_plan(CHECKS, 'solo', {}, ['all'], [], ALL, TAG_SKIP)
    assert 'nodes' in ids(solo['run_client']) and 'rdma_device' not in ids(solo['run'])


def test_a_new_check_is_one_entry_and_its_rows_come_from_what_it_registered():
    """An entry the filter has never seen, with hand-written observations: no code changes."""
    checks = copy.deepcopy(CHECKS)
    checks.insert(2, {'id': 'hugepages', 'title': 'hugepages reserved', 'scope': 'node', 'hosts': 'k8s_cluster',
                      'tags': ['verify_node'], 'tasks': 'node_hugepages.yml', 'check_mode': 'skipped: check mode',
                      'rows': [{'id': 'count', 'title': 'hugepages 2 MiB reserved', 'expected': 'at least 512'},
                               {'id': 'mounted', 'title': 'hugetlbfs mounted', 'expected': '/dev/hugepages'}]})
    assert ids(plan('w1', checks=checks)['run']) == ['memlock', 'hugepages']
    seen = {'hugepages': {'count': {'observed': '128 pages', 'ok': False}, 'mounted': {'observed': '/dev/hugepages'}}}
    assert table(rows('w1', seen, checks=checks))[2:] == [('hugepages 2 MiB reserved', 'FAIL', '128 pages'),
                                                          ('hugetlbfs mounted', 'PASS', '/dev/hugepages')]
    assert table(rows('w1', {}, checks=checks, skip_tags=['verify_node'])) == [
        ('containerd LimitMEMLOCK (systemd)', 'SKIP', NODE_SKIP), ('containerd memlock (running process)', 'SKIP', NODE_SKIP),
        ('hugepages 2 MiB reserved', 'SKIP', NODE_SKIP), ('hugetlbfs mounted', 'SKIP', NODE_SKIP)]
    assert table(rows('w1', {}, checks=checks, check_mode=True))[2:] == [
        ('hugepages 2 MiB reserved', 'SKIP', 'skipped: check mode'), ('hugetlbfs mounted', 'SKIP', 'skipped: check mode')]
    assert ('| hugepages reserved | hugepages 2 MiB reserved; hugetlbfs mounted | node | every node | `verify_node` '
            '| `node_hugepages.yml` |') in verify_checks.verify_checks_table(checks, TAG_SKIP)


@pytest.mark.parametrize('change, message', [
    (lambda c: c[1].update(id='client'), "id 'client' is used twice"),
    (lambda c: c[1].update(scope='pod'), "scope 'pod'"),
    (lambda c: c[1].update(hosts='workers'), "hosts 'workers'"),
    (lambda c: c[1].update(tags='verify_node'), 'tags'),
    (lambda c: c[1].update(tags=['verify_nodes']), 'tags'),
    (lambda c: c[1].update(tasks='../x.yml'), 'tasks'),
    (lambda c: c[1].update(rows='containerd'), 'rows'),
    (lambda c: c[1]['rows'].append({'id': 'systemd', 'title': 'again', 'expected': 'x'}), "row id 'systemd'"),
    (lambda c: c[1]['rows'][0].pop('expected'), 'each row is {id, title, expected}'),
    (lambda c: c[2].pop('expected'), 'missing expected'),
    (lambda c: c[1].update(skip_rows=['x']), 'unknown field(s) skip_rows'),
    (lambda c: c[1].pop('title'), 'missing title'),
    (lambda c: c[-1].pop('opt_in_reason'), 'opt_in and opt_in_reason go together'),
    (lambda c: c.append(dict(c[1], id='late')), "comes after the client check 'nodes'"),
])
def test_a_broken_entry_is_refused_naming_it(change, message):
    checks = copy.deepcopy(CHECKS)
    change(checks)
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        verify_checks.verify_plan(checks, 'cp1', GROUPS, ['all'], [], ALL, TAG_SKIP)


def test_a_malformed_observation_is_refused_naming_its_row():
    with pytest.raises(AnsibleFilterError, match='row systemd'):
        rows('w1', {'memlock': {'systemd': {'seen': 'infinity'}}})


def test_an_opt_in_without_its_value_is_refused():
    with pytest.raises(AnsibleFilterError, match='verify_ipujob_smoke_test'):
        verify_checks.verify_plan(CHECKS, 'cp1', GROUPS, ['all'], [],
                                  {'verify_rdma_traffic': False, 'verify_rdma_perftest': False}, TAG_SKIP)


def test_the_readme_table_is_the_list():
    readme = (ROOT / 'docs' / 'verify.md').read_text()
    assert TABLE_START in readme and TABLE_END in readme, 'docs/verify.md lacks the verify checks table markers'
    shown = readme.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    expected = verify_checks.verify_checks_table(CHECKS, TAG_SKIP)
    assert shown == expected, 'docs/verify.md verify table differs from roles/verify/vars/main.yml; it should read:\n' + expected
