"""plugins/filter/ipu_k8s_site.py: what the plays hand the site model's filters (hostvars,
groups, inventory settings) and what the filters hand back; the rules themselves are tested
on module_utils (test_vipu_controllers.py, test_rdma_pod_grouping.py,
test_ipu_k8s_workloads.py). Expected values are written by hand."""

import importlib.util
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError, AnsibleUndefinedVariable
from ansible.utils.display import Display

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('ipu_k8s_site', ROOT / 'plugins' / 'filter' / 'ipu_k8s_site.py')
ipu_k8s_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ipu_k8s_site)

POD1 = {'name': 'pod001', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001',
        'address': '10.247.208.5:8090'}
POD2 = {'name': 'pod002', 'host': '10.5.212.116', 'port': 8091, 'label': 'vipu-ctrl=pod002',
        'address': '10.5.212.116:8091'}


def network(address, mtu=9000):
    return {'interface': 'ens1f0', 'cidr': '10.247.208.0/23', 'prefix': 23, 'node_address': address, 'mtu': mtu,
            'excludes': ['10.247.208.0/25'], 'vipu_address': '10.247.208.5'}


class UndefinedHost(object):
    """A host's variables as Ansible's hostvars hand them when one is undefined."""

    def __getitem__(self, key):
        raise AnsibleUndefinedVariable("'%s' is undefined" % key)


@pytest.fixture
def warnings(monkeypatch):
    said = []
    monkeypatch.setattr(Display, 'warning', lambda self, msg, *args, **kwargs: said.append(msg))
    return said


# --- ipu_k8s_site_model ----------------------------------------------------------------------

HOSTVARS = {
    # facts gathered in this run sit under ansible_facts
    'ipu1': {'ansible_facts': {'vipu_server': POD1, 'rdma_network': network('10.247.208.21')},
             'ipu_k8s_node_name': 'poplar-1'},
    # facts cached or set as plain variables are read there
    'ipu2': {'ansible_facts': {}, 'vipu_server': POD1, 'rdma_network': network('10.247.208.22', mtu=4200)},
}


def test_the_model_is_built_from_facts_and_variables_with_node_names(warnings):
    model = ipu_k8s_site.ipu_k8s_site_model(HOSTVARS, ['ipu1', 'ipu2'], 'rdma-net', 'nv-ipam', '8')
    (pod,) = model['pods']
    assert (pod['name'], pod['hosts'], pod['node_names'], pod['pool']) == (
        'pod001', ['ipu1', 'ipu2'], ['poplar-1', 'ipu2'], 'rdma-net')
    assert model['operator']['value'] == '10.247.208.5:8090:vipu-ctrl=pod001'
    assert model['ipam'] == 'nv-ipam'
    assert pod['rdma_network']['mtu'] == 4200
    assert pod['rdma_network']['nv_ipam']['block_size'] == 8
    assert model['rdma_network'] == pod['rdma_network']
    expected = ['RDMA interface MTUs differ (4200 on ipu2; 9000 on ipu1): the MacvlanNetwork uses the smallest, 4200']
    assert model['warnings'] == expected
    assert warnings == expected  # shown to the operator as Ansible warnings


def test_facts_under_ansible_facts_win_over_plain_variables():
    hostvars = {'ipu1': {'ansible_facts': {'vipu_server': POD2}, 'vipu_server': POD1}}
    model = ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1'])
    assert model['operator']['value'] == '10.5.212.116:8091:vipu-ctrl=pod002'


def test_without_ipam_only_the_operators_part_is_built(warnings):
    for ipam in (None, ''):
        model = ipu_k8s_site.ipu_k8s_site_model({'ipu1': {'vipu_server': POD1}}, ['ipu1'], 'rdma-net', ipam)
        assert (model['pods'], model['ipam'], model['rdma_network']) == (None, None, None)
        assert model['operator']['nodes'] == [{'host': 'ipu1', 'node': 'ipu1', 'controller': 'pod001',
                                               'label_key': 'vipu-ctrl', 'label_value': 'pod001'}]
    assert ipu_k8s_site.ipu_k8s_site_model({'ipu1': {'vipu_server': POD1}}, ['ipu1'])['ipam'] is None
    assert warnings == []


def test_the_defaults_name_one_pods_pool_by_the_empty_network_name():
    hostvars = {'ipu1': {'vipu_server': POD1, 'rdma_network': network('10.247.208.21')}}
    model = ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1'], ipam='nv-ipam')
    assert model['pods'][0]['pool'] == ''
    # no block size given: the largest that leaves the one node a block with free addresses,
    # all 510 host addresses of 10.247.208.0/23 (10.247.208.1-10.247.209.254)
    assert model['pods'][0]['rdma_network']['nv_ipam']['block_size'] == 510
    assert ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1'], ipam='nv-ipam', block_size='')['pods'][0][
        'rdma_network']['nv_ipam']['block_size'] == 510


def test_a_network_name_that_is_not_a_string_is_used_as_text():
    hostvars = {'ipu1': {'vipu_server': POD1, 'rdma_network': network('10.247.208.21')},
                'ipu2': {'vipu_server': POD2, 'rdma_network': network('10.247.208.22')}}
    model = ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1', 'ipu2'], 42, 'whereabouts')
    assert [p['pool'] for p in model['pods']] == ['42-pod001', '42-pod002']


@pytest.mark.parametrize('hostvars', [{}, {'ipu1': UndefinedHost()}, {'ipu1': None}, {'ipu1': 'text'}])
def test_a_host_without_facts_is_refused_naming_it(hostvars):
    with pytest.raises(AnsibleFilterError) as refused:
        ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1'])
    assert refused.value.message == (
        'IPU node(s) ipu1 have no vipu_server fact: run the rdma_network facts step on them first '
        '(playbooks/rdma_network.yml, or playbooks/ipu_operator.yml which runs it), in the same ansible-playbook run')


def test_an_undefined_node_name_falls_back_to_the_inventory_name():
    hostvars = {'ipu1': {'vipu_server': POD1, 'ipu_k8s_node_name': ''}}
    assert ipu_k8s_site.ipu_k8s_site_model(hostvars, ['ipu1'])['operator']['nodes'][0]['node'] == 'ipu1'


@pytest.mark.parametrize('nodes', [None, []])
def test_no_ipu_nodes_is_refused(nodes):
    with pytest.raises(AnsibleFilterError) as refused:
        ipu_k8s_site.ipu_k8s_site_model({'ipu1': {'vipu_server': POD1}}, nodes)
    assert refused.value.message == ('the ipu_nodes inventory group is empty: list the Poplar servers whose RDMA NIC '
                                     'reaches the IPU-Machines')


# --- ipu_k8s_vipu_controller_problems ----------------------------------------------------------

CONTROLLERS = [{'name': 'pod001', 'host': '10.247.208.5', 'label': 'vipu-ctrl=pod001'},
               {'name': 'pod002', 'host': '10.5.212.116', 'port': 8091, 'label': 'vipu-ctrl=pod002'}]


def test_each_hosts_choice_is_checked_against_the_list():
    hostvars = {'ipu1': {'ipu_k8s_vipu_controller': 'pod002'}, 'ipu2': {'ipu_k8s_vipu_controller': 'pod003'},
                'ipu3': {}, 'ipu4': UndefinedHost()}
    assert ipu_k8s_site.ipu_k8s_vipu_controller_problems(
        CONTROLLERS, hostvars, ['ipu1', 'ipu2', 'ipu3', 'ipu4', 'ipu5'], 8090, 'ipunode=true') == [
        "ipu2: ipu_k8s_vipu_controller 'pod003' names no entry of ipu_k8s_vipu_controllers (names: pod001, pod002): "
        "set it to one of those names, or leave it empty for the first"]


def test_a_choice_without_a_list_is_a_problem_and_no_hosts_none():
    hostvars = {'ipu1': {'ipu_k8s_vipu_controller': 'pod001'}}
    assert ipu_k8s_site.ipu_k8s_vipu_controller_problems([], hostvars, ['ipu1'], 8090, 'ipunode=true') == [
        "ipu1: ipu_k8s_vipu_controller is 'pod001' but ipu_k8s_vipu_controllers is empty: list the controllers, "
        "or leave ipu_k8s_vipu_controller empty"]
    assert ipu_k8s_site.ipu_k8s_vipu_controller_problems([], hostvars, None, 8090, 'ipunode=true') == []


def test_the_default_port_and_label_reach_the_list_rules():
    assert ipu_k8s_site.ipu_k8s_vipu_controller_problems(CONTROLLERS, {}, [], 0, 'ipunode=true') == [
        "ipu_k8s_vipu_controllers[0] (pod001): port '0' is not a TCP port (1-65535): give the V-IPU controller's "
        "port, usually 8090"]
    assert ipu_k8s_site.ipu_k8s_vipu_controller_problems(CONTROLLERS, {}, [], 8090, 'ipunode') == [
        "ipu_k8s_ipu_node_label 'ipunode' is not key=value (exactly one '='), e.g. vipu-ctrl=pod001"]


# --- ipu_k8s_rdma_cni_config -------------------------------------------------------------------

CNI_POD = {'pool': 'rdma-net-pod002', 'rdma_network': {
    'interface': 'enp65s0f0np0', 'cidr': '10.5.212.0/24', 'mtu': 4200, 'excludes': ['10.5.212.0/25']}}


def test_cni_config_defaults_to_bridge_and_whereabouts():
    assert ipu_k8s_site.ipu_k8s_rdma_cni_config(CNI_POD, 'rdma-net') == {
        'cniVersion': '0.3.1', 'name': 'rdma-net', 'type': 'macvlan', 'master': 'enp65s0f0np0', 'mode': 'bridge',
        'mtu': 4200,
        'ipam': {'type': 'whereabouts', 'datastore': 'kubernetes', 'kubernetes': {'kubeconfig': ''},
                 'log_file': '', 'log_level': '', 'range': '10.5.212.0/24', 'exclude': ['10.5.212.0/25']}}


def test_cni_config_passes_every_setting_as_text():
    whereabouts = {'kubeconfig': '/k', 'log_file': '/l', 'log_level': 'debug'}
    config = ipu_k8s_site.ipu_k8s_rdma_cni_config(CNI_POD, 7, 'private', 'whereabouts', whereabouts)
    assert (config['name'], config['mode'], config['ipam']['kubernetes'], config['ipam']['log_file'],
            config['ipam']['log_level']) == ('7', 'private', {'kubeconfig': '/k'}, '/l', 'debug')
    assert ipu_k8s_site.ipu_k8s_rdma_cni_config(CNI_POD, 'rdma-net', 'vepa', 'nv-ipam')['ipam'] == {
        'type': 'nv-ipam', 'poolName': 'rdma-net-pod002'}


@pytest.mark.parametrize('pod, ipam, says', [
    (CNI_POD, 'host-local', "ipam 'host-local' is not one this project renders: whereabouts or nv-ipam"),
    ({'pool': 'p'}, 'whereabouts', "'rdma_network'"),
    (None, 'whereabouts', "'NoneType' object is not subscriptable"),
])
def test_cni_config_refusals_name_the_filter(pod, ipam, says):
    with pytest.raises(AnsibleFilterError) as refused:
        ipu_k8s_site.ipu_k8s_rdma_cni_config(pod, 'rdma-net', 'bridge', ipam)
    assert refused.value.message == 'ipu_k8s_rdma_cni_config: ' + says


# --- ipu_k8s_workload_examples -----------------------------------------------------------------

def test_workload_examples_take_any_sequence_and_text_settings():
    controllers = (c for c in [{'name': 'pod002', 'host': '10.5.212.116', 'port': 8091, 'label': 'vipu-ctrl=pod2'}])
    files = ipu_k8s_site.ipu_k8s_workload_examples(controllers, 1, 2, 3, 4, {'kind': 'IPUJob'})
    job = files['pod002/training-job.yaml']
    (container,) = job['spec']['template']['spec']['containers']
    assert job['metadata']['namespace'] == '3'
    assert job['spec']['template']['metadata']['annotations'] == {'k8s.v1.cni.cncf.io/networks': '1'}
    assert (container['image'], container['resources']) == ('4', {'limits': {'2': 1}, 'requests': {'2': 1}})
    assert files['ipujob.yaml'] == {'kind': 'IPUJob'}
    assert 'ipujob.yaml' not in ipu_k8s_site.ipu_k8s_workload_examples(
        [{'name': 'p', 'host': 'h', 'port': 1, 'label': 'a=b'}], 'n', 'r', 'ns', 'i')


@pytest.mark.parametrize('controllers, says', [
    ([], 'no V-IPU controllers to render workload examples for: the IPU nodes resolved none'),
    ([{'name': 'p', 'port': 1, 'label': 'a=b'}], "'host'"),
    ([{'name': 'p', 'host': 'h', 'port': 'http', 'label': 'a=b'}], "invalid literal for int() with base 10: 'http'"),
    ([{'name': 'p', 'host': 'h', 'port': None, 'label': 'a=b'}],
     "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"),
])
def test_workload_example_refusals_name_the_filter(controllers, says):
    with pytest.raises(AnsibleFilterError) as refused:
        ipu_k8s_site.ipu_k8s_workload_examples(controllers, 'n', 'r', 'ns', 'i')
    assert refused.value.message == 'ipu_k8s_workload_examples: ' + says


def test_the_plugin_offers_the_four_filters():
    assert ipu_k8s_site.FilterModule().filters() == {
        'ipu_k8s_site_model': ipu_k8s_site.ipu_k8s_site_model,
        'ipu_k8s_vipu_controller_problems': ipu_k8s_site.ipu_k8s_vipu_controller_problems,
        'ipu_k8s_rdma_cni_config': ipu_k8s_site.ipu_k8s_rdma_cni_config,
        'ipu_k8s_workload_examples': ipu_k8s_site.ipu_k8s_workload_examples}


def test_the_site_entry_point_takes_public_typed_arguments_its_callers_pass():
    spec = yaml.safe_load((ROOT / 'roles/ipu_k8s/meta/argument_specs.yml').read_text())['argument_specs']['site']
    arguments = {name: option['type'] for name, option in spec['options'].items()}
    assert arguments == {'ipu_k8s_site_ipam': 'str', 'ipu_k8s_site_nv_ipam_block_size': 'int'}
    for caller in ('roles/rdma_network/tasks/site.yml', 'roles/ipu_operator/tasks/plan.yml'):
        call = next(task for task in yaml.safe_load((ROOT / caller).read_text())
                    if task.get('ansible.builtin.import_role', {}).get('tasks_from') == 'site')
        assert sorted(call['vars']) == sorted(arguments), caller
