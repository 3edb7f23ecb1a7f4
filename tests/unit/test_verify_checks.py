"""verify's checks are one list (roles/verify/vars/main.yml, __verify_checks).

The selection (filter verify_plan, roles/verify/filter_plugins/verify_checks.py) decides
which checks a run runs on a host and which it reports as SKIP, with the reason; the
README's table of checks is the list rendered (verify_checks_table), and this file fails
when they differ. Every check's task file exists; that each records its rows is shown by
running them: the node checks in tests/integration/test_verify_datapath.py, the cluster
checks in tests/api/test_layers.py.
"""

import copy
import re
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'roles' / 'verify' / 'filter_plugins'))

import verify_checks  # noqa: E402
from ansible.errors import AnsibleFilterError  # noqa: E402

VARS = yaml.safe_load((ROOT / 'roles' / 'verify' / 'vars' / 'main.yml').read_text())
TABLE_START = '<!-- verify checks: generated from roles/verify/vars/main.yml -->'
TABLE_END = '<!-- end of verify checks -->'


def rendered(value):
    """The list as Ansible renders it with the roles' defaults (the README shows these)."""
    variables = {}
    for role in ('ipu_k8s', 'verify'):
        variables.update(yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text()) or {})
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
GROUPS = {'control_plane': ['cp1'], 'ipu_nodes': ['ipu1', 'cp1'], 'k8s_cluster': ['cp1', 'ipu1', 'w1']}
ALL = {'verify_ipujob_smoke_test': False, 'verify_rdma_traffic': False, 'verify_rdma_perftest': False}


def plan(host, run_tags=('all',), skip_tags=(), opted_in=None, checks=None):
    return verify_checks.verify_plan(CHECKS if checks is None else checks, host, GROUPS, list(run_tags),
                                     list(skip_tags), dict(ALL, **(opted_in or {})), TAG_SKIP)


def ids(checks):
    return [check['id'] for check in checks]


def test_the_list_is_valid_and_every_task_file_exists():
    verify_checks.verify_checks_valid(CHECKS)
    for check in CHECKS:
        path = ROOT / 'roles' / 'verify' / 'tasks' / check['tasks']
        assert path.is_file(), '%s: no task file %s' % (check['id'], path)


def test_the_tasks_carry_no_tag_of_their_own():
    """A tag on a check's task would be a second place that selects it."""
    for check in CHECKS:
        text = (ROOT / 'roles' / 'verify' / 'tasks' / check['tasks']).read_text()
        assert not re.search(r'tags:.*verify_(node|cluster)', text), check['tasks']


def test_main_yml_runs_the_list_and_names_no_check_file():
    main = (ROOT / 'roles' / 'verify' / 'tasks' / 'main.yml').read_text()
    for check in CHECKS:
        assert check['tasks'] not in main, '%s is run from main.yml directly, not from the list' % check['tasks']
    assert '__verify_plan.run' in main and '__verify_plan.run_client' in main


def test_a_full_run_runs_every_check_that_applies_in_list_order():
    api = plan('cp1')
    assert ids(api['run'] + api['run_client']) == ids(
        [c for c in CHECKS if c['id'] not in ('ipujob', 'rdma_traffic', 'rdma_perftest')])  # cp1: IPU node and API host
    assert [row['check'] for row in api['skipped']] == ['RDMA traffic (verbs RC, node to peer)',
                                                        'RDMA traffic between two pods (ib_write_bw over net1)',
                                                        'IPUJob smoke test (mnist)']
    assert api['skipped'][1]['observed'] == (
        'RDMA traffic between two pods is opt-in: -e verify_rdma_perftest=true (two IPU nodes, an image with perftest)')
    assert api['skipped'][2]['observed'] == 'IPUJob smoke test is opt-in: -e verify_ipujob_smoke_test=true'
    worker = plan('w1')
    assert ids(worker['run']) == ['memlock'] and worker['run_client'] == [] and worker['skipped'] == []
    ipu = plan('ipu1', opted_in={'verify_ipujob_smoke_test': True, 'verify_rdma_traffic': True})
    assert ids(ipu['run']) == ['memlock', 'rdma_device', 'rdma_derived', 'datapath', 'container', 'rdma_traffic',
                               'container_rdma_traffic', 'macvlan_read', 'cni_files', 'macvlan_matches']
    assert ipu['skipped'] == []


def test_opting_in_runs_the_ipujob():
    assert ids(plan('cp1', opted_in={'verify_ipujob_smoke_test': 'true'})['run_client'])[-1] == 'ipujob'


def test_skipping_the_cluster_tag_reports_the_cluster_checks_with_the_sites_reason():
    ipu = plan('ipu1', skip_tags=['verify_cluster'])
    assert ids(ipu['run']) == ['memlock', 'rdma_device', 'rdma_derived', 'datapath', 'container',
                               'container_rdma_traffic']
    assert [(r['check'], r['expected'], r['observed'], r['status'], r['host']) for r in ipu['skipped']] == [
        ('RDMA traffic (verbs RC, node to peer)', 'runs on the node',
         'RDMA traffic is opt-in: -e verify_rdma_traffic=true with verify_rdma_traffic_peer', 'SKIP', 'ipu1'),
        ('Multus and Whereabouts CNI files', 'needs the cluster', 'not run: the run skipped the tag verify_cluster',
         'SKIP', 'ipu1'),
        ('rdma-net matches the node', 'needs the cluster', 'not run: the run skipped the tag verify_cluster',
         'SKIP', 'ipu1')]
    api = plan('cp1', skip_tags=['verify_cluster'])
    assert [r['check'] for r in api['skipped']][3:] == [
        'nodes Ready', 'rdma/rdma_shared_device_a allocatable', 'Network Operator pods Ready',
        'IPU Operator pods Ready', 'IPU Operator webhook certificate',
        "rdma-net takes each node's CNI file (several IPU-PODs)", 'RDMA test pod (net1, routes, memlock)',
        'RDMA traffic between two pods (ib_write_bw over net1)', 'IPUJob smoke test (mnist)']
    # Opt-in says so whatever the tags; opted in, the tag is the reason.
    assert api['skipped'][-1]['observed'].startswith('IPUJob smoke test is opt-in')
    opted = plan('cp1', skip_tags=['verify_cluster'], opted_in={'verify_ipujob_smoke_test': True})
    assert opted['skipped'][-1]['observed'] == 'not run: the run skipped the tag verify_cluster'
    assert 'client' not in ids(opted['run'])


def test_the_cluster_tag_alone_reports_the_node_checks_as_skipped():
    ipu = plan('ipu1', run_tags=['verify_cluster'])
    assert ids(ipu['run']) == ['rdma_derived', 'macvlan_read', 'cni_files', 'macvlan_matches']
    assert [r['check'] for r in ipu['skipped']] == [
        'containerd LimitMEMLOCK (systemd)', 'containerd memlock (running process)', 'RDMA device',
        'RDMA data path (macvlan to V-IPU)', 'pod container: net1 from the macvlan CNI plugin',
        'pod container: memlock', 'pod container: RDMA memory region',
        'pod container: V-IPU controller answers on net1', 'RDMA traffic (verbs RC, node to peer)',
        'pod container: RDMA traffic from net1']
    assert {r['observed'] for r in ipu['skipped'][:-2] + ipu['skipped'][-1:]} == {
        'not run: the run skipped the tag verify_node'}


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
                                                       'skipped': []}


def test_without_a_control_plane_group_the_host_reads_the_api():
    solo = verify_checks.verify_plan(CHECKS, 'solo', {}, ['all'], [], ALL, TAG_SKIP)
    assert 'nodes' in ids(solo['run_client']) and 'rdma_device' not in ids(solo['run'])


def test_a_new_check_is_one_entry():
    checks = copy.deepcopy(CHECKS)
    checks.insert(2, {'id': 'hugepages', 'title': 'hugepages reserved', 'scope': 'node', 'hosts': 'k8s_cluster',
                      'tags': ['verify_node'], 'tasks': 'node_hugepages.yml'})
    assert ids(plan('w1', checks=checks)['run']) == ['memlock', 'hugepages']
    skipped = plan('w1', skip_tags=['verify_node'], checks=checks)['skipped']
    assert [(r['check'], r['observed']) for r in skipped][-1] == (
        'hugepages reserved', 'not run: the run skipped the tag verify_node')
    assert '| hugepages reserved | node | every node | `verify_node` | `node_hugepages.yml` |' in \
        verify_checks.verify_checks_table(checks, TAG_SKIP)


@pytest.mark.parametrize('change, message', [
    (lambda c: c[1].update(id='client'), "id 'client' is used twice"),
    (lambda c: c[1].update(scope='pod'), "scope 'pod'"),
    (lambda c: c[1].update(hosts='workers'), "hosts 'workers'"),
    (lambda c: c[1].update(tags='verify_node'), 'tags'),
    (lambda c: c[1].update(tags=['verify_nodes']), 'tags'),
    (lambda c: c[1].update(tasks='../x.yml'), 'tasks'),
    (lambda c: c[1].update(skip_rows='containerd'), 'skip_rows'),
    (lambda c: c[1].update(colour='red'), 'unknown field(s) colour'),
    (lambda c: c[1].pop('title'), 'missing title'),
    (lambda c: c[-1].pop('opt_in_reason'), 'opt_in and opt_in_reason go together'),
    (lambda c: c.append(dict(c[1], id='late')), "comes after the client check 'nodes'"),
])
def test_a_broken_entry_is_refused_naming_it(change, message):
    checks = copy.deepcopy(CHECKS)
    change(checks)
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        verify_checks.verify_plan(checks, 'cp1', GROUPS, ['all'], [], ALL, TAG_SKIP)


def test_an_opt_in_without_its_value_is_refused():
    with pytest.raises(AnsibleFilterError, match='verify_ipujob_smoke_test'):
        verify_checks.verify_plan(CHECKS, 'cp1', GROUPS, ['all'], [],
                                  {'verify_rdma_traffic': False, 'verify_rdma_perftest': False}, TAG_SKIP)


def test_the_readme_table_is_the_list():
    readme = (ROOT / 'README.md').read_text()
    assert TABLE_START in readme and TABLE_END in readme, 'README.md lacks the verify checks table markers'
    shown = readme.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    expected = verify_checks.verify_checks_table(CHECKS, TAG_SKIP)
    assert shown == expected, 'README.md verify table differs from roles/verify/vars/main.yml; it should read:\n' + expected
