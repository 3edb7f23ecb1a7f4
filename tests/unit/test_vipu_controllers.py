"""plugins/module_utils/ipu_k8s_vipu_controllers.py: the controller list's rules, the node's choice,
and what the IPU Operator gets from the entries the nodes resolved."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import DEFAULT_IPU_NODE_LABEL, DEFAULT_VIPU_PORT, IpuK8sError
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import (
    choose_controller,
    inventory_problems,
    label_problem,
    parse_controllers,
    site_model,
    unchosen_controller_problem,
)

LABEL = 'ipunode=true'


def parse(controllers, port=8090, label=LABEL):
    return parse_controllers(controllers, port, label)


def refusal(controllers, port=8090, label=LABEL):
    with pytest.raises(IpuK8sError) as failure:
        parse(controllers, port, label)
    return str(failure.value)


# --- labels ---------------------------------------------------------------------------------

@pytest.mark.parametrize('label', ['ipunode=true', 'vipu-ctrl=pod001', 'graphcore.ai/vipu-ctrl=pod_1.a',
                                   'ipunode=', 'a=' + 'x' * 63])
def test_valid_kubernetes_labels_pass(label):
    assert label_problem(label) is None


@pytest.mark.parametrize('label, says', [
    ('ipunode', 'is not key=value'),
    ('a=b=c', 'is not key=value'),
    ('ipu node=true', "invalid Kubernetes label key 'ipu node'"),
    ('Bad_Prefix/ipunode=true', "invalid Kubernetes label key 'Bad_Prefix/ipunode'"),
    ('x' * 64 + '=true', 'invalid Kubernetes label key'),
    ('ipunode=-true', "invalid Kubernetes label value '-true'"),
    ('ipunode=' + 'x' * 64, 'invalid Kubernetes label value'),
])
def test_invalid_labels_are_refused_saying_why(label, says):
    assert says in label_problem(label)


# --- the list -------------------------------------------------------------------------------

def test_defaults_fill_port_and_label():
    assert parse([{'name': 'pod001', 'host': '10.5.212.116'}]) == [
        {'name': 'pod001', 'host': '10.5.212.116', 'port': 8090, 'label': LABEL}]


def test_port_as_a_string_of_digits_is_accepted():
    assert parse([{'name': 'pod001', 'host': 'vipu.example', 'port': '8091'}])[0]['port'] == 8091


def test_empty_list_and_none_are_empty():
    assert parse([]) == [] and parse(None) == []


def test_host_written_as_host_port_is_refused_with_the_fix():
    message = refusal([{'name': 'pod001', 'host': '10.5.212.116:8090'}])
    assert message == ("ipu_k8s_vipu_controllers[0] (pod001): host '10.5.212.116:8090' carries a port: "
                       "write host: 10.5.212.116 and port: 8090")


def test_host_with_a_trailing_newline_is_refused_not_stripped():
    # What `host: |` (a YAML block scalar) or a value read from a file with lookup('file') gives;
    # stripped, it was accepted and the text with its newline went on to other readers.
    message = refusal([{'name': 'pod001', 'host': '10.5.212.116\n'}])
    assert message == "ipu_k8s_vipu_controllers[0] (pod001): host '10.5.212.116\\n' has whitespace around it: " \
                      "write 10.5.212.116"


@pytest.mark.parametrize('key, value', [('name', 'pod001 '), ('port', '8090\n'), ('label', 'vipu-ctrl=pod001\n')])
def test_any_entry_value_with_whitespace_around_it_is_refused(key, value):
    entry = {'name': 'pod001', 'host': '10.5.212.116', key: value}
    assert refusal([entry]) == "ipu_k8s_vipu_controllers[0] (pod001): %s %r has whitespace around it: write %s" % (
        key, value, value.strip())


def test_a_choice_with_whitespace_around_it_is_refused():
    entries = parse([{'name': 'pod001', 'host': '10.5.212.116'}])
    with pytest.raises(IpuK8sError) as failure:
        choose_controller(entries, 'pod001\n')
    assert str(failure.value) == "ipu_k8s_vipu_controller 'pod001\\n' has whitespace around it: write pod001"


def test_label_without_equals_is_refused_naming_entry_value_and_fix():
    message = refusal([{'name': 'pod001', 'host': '10.5.212.116', 'label': 'ipunode'}])
    assert message.startswith("ipu_k8s_vipu_controllers[0] (pod001): label 'ipunode' is not key=value")
    assert 'e.g. vipu-ctrl=pod001' in message


@pytest.mark.parametrize('port', [0, 65536, 'http', True, -1])
def test_bad_port_is_refused(port):
    message = refusal([{'name': 'pod001', 'host': '10.5.212.116', 'port': port}])
    assert "ipu_k8s_vipu_controllers[0] (pod001): port '%s' is not a TCP port (1-65535)" % port in message


def test_every_bad_entry_is_named_in_one_message():
    message = refusal([
        {'name': 'pod001', 'host': ''},
        {'name': 'pod002', 'host': '10.5.212.300'},
        {'host': '10.5.213.10'},
        'pod004',
        {'name': 'pod005', 'host': '10.5.214.10', 'lable': 'x=y'},
    ])
    for expected in ('[0] (pod001): host is empty', "[1] (pod002): host '10.5.212.300' is malformed",
                     'ipu_k8s_vipu_controllers[2] has no name', "[3] is 'pod004', not a mapping",
                     '[4] (pod005) has unknown key(s) lable: the keys are name, host, port, label'):
        assert expected in message, (expected, message)


@pytest.mark.parametrize('second, what', [
    ({'name': 'pod001', 'host': '10.5.213.10', 'label': 'vipu-ctrl=b'}, "the same name 'pod001'"),
    ({'name': 'pod002', 'host': '10.5.212.116', 'label': 'vipu-ctrl=b'}, "the same host and port '10.5.212.116:8090'"),
    ({'name': 'pod002', 'host': 'VIPU.example', 'label': 'vipu-ctrl=b'}, "the same host and port 'vipu.example:8090'"),
    ({'name': 'pod002', 'host': '10.5.213.10', 'label': 'vipu-ctrl=a'}, "the same label 'vipu-ctrl=a'"),
])
def test_duplicates_are_refused(second, what):
    first = {'name': 'pod001', 'host': '10.5.212.116' if 'VIPU' not in second['host'] else 'vipu.example',
             'label': 'vipu-ctrl=a'}
    message = refusal([first, second])
    assert 'ipu_k8s_vipu_controllers[0] (pod001) and ipu_k8s_vipu_controllers[1]' in message
    assert what in message, message


def test_same_host_on_another_port_is_another_controller():
    assert len(parse([{'name': 'a', 'host': '10.5.212.116', 'label': 'v=a'},
                      {'name': 'b', 'host': '10.5.212.116', 'port': 8091, 'label': 'v=b'}])) == 2


def test_not_a_list_is_refused():
    assert 'not a list' in refusal({'name': 'pod001'})


def test_bad_default_label_is_refused_naming_its_setting():
    assert refusal([], label='ipunode').startswith("ipu_k8s_ipu_node_label 'ipunode' is not key=value")


# --- the node's choice ----------------------------------------------------------------------

ENTRIES = [{'name': 'pod001', 'host': '10.5.212.116', 'port': 8090, 'label': 'v=1'},
           {'name': 'pod002', 'host': '10.5.213.10', 'port': 8090, 'label': 'v=2'}]


def test_empty_choice_is_the_first_entry():
    assert choose_controller(ENTRIES, '')['name'] == 'pod001'


def test_choice_by_name():
    assert choose_controller(ENTRIES, 'pod002')['name'] == 'pod002'


def test_unknown_choice_is_refused_naming_the_names():
    with pytest.raises(IpuK8sError, match=r"'pod009' names no entry of ipu_k8s_vipu_controllers \(names: pod001, "
                                          r"pod002\): set it to one of those names"):
        choose_controller(ENTRIES, 'pod009')


TWO_PODS = [{'name': 'pod001', 'host': '10.247.208.5', 'label': 'vipu-ctrl=pod001'},
            {'name': 'pod002', 'host': '10.5.212.116', 'label': 'vipu-ctrl=pod002'}]


def test_a_second_pod_node_without_a_choice_is_told_to_name_its_controller():
    assert unchosen_controller_problem(parse(TWO_PODS), '', {'pod001': False, 'pod002': True}) == (
        "ipu_k8s_vipu_controller is empty, so this node takes the first entry of ipu_k8s_vipu_controllers, "
        "pod001 (10.247.208.5), which it does not reach on a connected subnet, while pod002 (10.5.212.116) is on "
        "its own subnet: set ipu_k8s_vipu_controller: pod002 for this host (host_vars, or the group_vars of its "
        "IPU-POD)")


@pytest.mark.parametrize('choice, connected', [
    ('', {'pod001': True, 'pod002': True}),     # the first is reached: the default is right
    ('', {'pod001': False, 'pod002': False}),   # no listed controller on a subnet: the derivation says why
    ('pod002', {'pod001': False, 'pod002': True}),
    ('pod001', {'pod001': False, 'pod002': True}),  # an explicit choice is the operator's word
    ('', {}),
])
def test_a_chosen_or_reachable_first_controller_is_accepted(choice, connected):
    assert unchosen_controller_problem(parse(TWO_PODS), choice, connected) is None


def test_one_controller_needs_no_choice():
    assert unchosen_controller_problem(parse(TWO_PODS[:1]), '', {'pod001': False}) is None


def test_inventory_problems_name_each_host_with_a_bad_choice():
    problems = inventory_problems(ENTRIES, {'w1': 'pod001', 'w2': 'pod009', 'w3': ''}, 8090, LABEL)
    assert len(problems) == 1 and problems[0].startswith("w2: ipu_k8s_vipu_controller 'pod009' names no entry")


def test_inventory_problems_refuse_a_choice_without_a_list():
    problems = inventory_problems([], {'w1': 'pod001'}, 8090, LABEL)
    assert problems == ["w1: ipu_k8s_vipu_controller is 'pod001' but ipu_k8s_vipu_controllers is empty: "
                        "list the controllers, or leave ipu_k8s_vipu_controller empty"]


def test_inventory_problems_are_empty_for_a_good_inventory():
    assert inventory_problems(ENTRIES, {'w1': 'pod002'}, 8090, LABEL) == []
    assert inventory_problems([], {'w1': ''}, 8090, LABEL) == []


# --- what the operator gets: the site model's operator part -----------------------------------

def operator_controllers(facts, names=None):
    nodes = dict((h, {'vipu_server': f, 'node_name': (names or {}).get(h)}) for h, f in facts.items())
    return site_model(nodes)['operator']


def fact(host, name=None, label=LABEL, port=8090):
    return {'host': host, 'port': port, 'address': '%s:%d' % (host, port), 'version': None, 'source': 'inventory',
            'name': name or '%s:%d' % (host, port), 'label': label}


def test_controllers_in_order_of_first_use_with_one_entry_each():
    found = operator_controllers({
        'w1': fact('10.5.213.10', 'pod002', 'vipu-ctrl=pod002'),
        'w2': fact('10.5.212.116', 'pod001', 'vipu-ctrl=pod001'),
        'w3': fact('10.5.213.10', 'pod002', 'vipu-ctrl=pod002'),
    }, {'w2': 'poplar-02'})
    assert found['value'] == '10.5.213.10:8090:vipu-ctrl=pod002,10.5.212.116:8090:vipu-ctrl=pod001'
    assert [c['name'] for c in found['controllers']] == ['pod002', 'pod001']
    assert [(n['host'], n['node'], n['controller'], n['label_key'], n['label_value']) for n in found['nodes']] == [
        ('w1', 'w1', 'pod002', 'vipu-ctrl', 'pod002'),
        ('w2', 'poplar-02', 'pod001', 'vipu-ctrl', 'pod001'),
        ('w3', 'w3', 'pod002', 'vipu-ctrl', 'pod002'),
    ]


def test_one_shared_controller_found_by_the_nodes_themselves():
    found = operator_controllers({'w1': fact('10.5.212.116'), 'w2': fact('10.5.212.116')})
    assert found['value'] == '10.5.212.116:8090:ipunode=true'


def test_nodes_without_the_fact_are_refused_naming_them():
    with pytest.raises(IpuK8sError, match=r'IPU node\(s\) w2 have no vipu_server fact'):
        operator_controllers({'w1': fact('10.5.212.116'), 'w2': None})


def test_no_ipu_nodes_is_refused():
    with pytest.raises(IpuK8sError, match='the ipu_nodes inventory group is empty'):
        operator_controllers({})


def test_two_controllers_under_one_label_are_refused():
    with pytest.raises(IpuK8sError) as failure:
        operator_controllers({'w1': fact('10.5.212.116'), 'w2': fact('10.5.213.10')})
    message = str(failure.value)
    assert "one label stands for different V-IPU controllers ('ipunode=true')" in message
    assert '10.5.213.10:8090 at 10.5.213.10:8090 (w2)' in message and 'set ipu_k8s_vipu_controller' in message


def test_one_name_resolving_differently_on_two_nodes_is_refused():
    with pytest.raises(IpuK8sError, match=r"one controller name resolves to different addresses on different nodes "
                                          r"\('pod001'\): pod001 at 10.5.212.116:8090 \(w1\); pod001 at "
                                          r"10.5.212.117:8090 \(w2\)"):
        operator_controllers({'w1': fact('10.5.212.116', 'pod001', 'v=1'), 'w2': fact('10.5.212.117', 'pod001', 'v=1')})


def test_one_address_under_two_names_is_refused():
    with pytest.raises(IpuK8sError, match='one V-IPU controller is listed under different names or labels'):
        operator_controllers({'w1': fact('10.5.212.116', 'pod001', 'v=1'), 'w2': fact('10.5.212.116', 'pod002', 'v=2')})


def test_the_inventory_defaults_are_the_modules_defaults():
    # The modules' defaults (module_utils) and the inventory's (roles/ipu_k8s) name one port and label.
    defaults = yaml.safe_load((Path(__file__).resolve().parents[2] / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'main.yml').read_text())
    assert (defaults['ipu_k8s_vipu_default_port'], defaults['ipu_k8s_ipu_node_label']) == (DEFAULT_VIPU_PORT, DEFAULT_IPU_NODE_LABEL)
