"""plugins/module_utils/ipu_k8s_vipu_controllers.py: every refusal of the controller list, the node's
choice and the site model, written out in full, and the edges of each rule (lengths, empty
values, defaults, which entry wins)."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, agree_rdma_networks
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import (
    choose_controller,
    inventory_problems,
    label_problem,
    parse_controllers,
    site_model,
    unchosen_controller_problem,
)

LABEL = 'ipunode=true'
LIST = 'ipu_k8s_vipu_controllers'
NOT_KEY_VALUE = "is not key=value (exactly one '='), e.g. vipu-ctrl=pod001"
KEY_RULE = ("(an optional lower-case DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit)")
VALUE_RULE = "(at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"


def refusal(controllers, port=8090, label=LABEL, **kwargs):
    with pytest.raises(IpuK8sError) as failure:
        parse_controllers(controllers, port, label, **kwargs)
    return str(failure.value)


# --- labels ---------------------------------------------------------------------------------

@pytest.mark.parametrize('label', [None, 5, 'ipunode', 'a=b=c'])
def test_a_label_that_is_not_one_key_value_pair_is_refused_in_full(label):
    assert label_problem(label) == NOT_KEY_VALUE


@pytest.mark.parametrize('label, key', [
    ('ipu node=true', 'ipu node'),
    ('=true', ''),
    ('/ipunode=true', '/ipunode'),
    ('Bad_Prefix/ipunode=true', 'Bad_Prefix/ipunode'),
    ('x' * 64 + '=true', 'x' * 64),
    ('a' * 254 + '/ipunode=true', 'a' * 254 + '/ipunode'),
])
def test_a_bad_label_key_is_refused_in_full(label, key):
    assert label_problem(label) == "has an invalid Kubernetes label key '%s' %s" % (key, KEY_RULE)


@pytest.mark.parametrize('label', ['x' * 63 + '=true', 'a' * 253 + '/ipunode=true', 'graphcore.ai/x=' + 'y' * 63])
def test_label_keys_and_values_at_their_length_limits_pass(label):
    assert label_problem(label) is None


@pytest.mark.parametrize('label, value', [('ipunode=-true', '-true'), ('ipunode=' + 'y' * 64, 'y' * 64),
                                          ('ipunode=a b', 'a b')])
def test_a_bad_label_value_is_refused_in_full(label, value):
    assert label_problem(label) == "has an invalid Kubernetes label value '%s' %s" % (value, VALUE_RULE)


# --- the list's entries -----------------------------------------------------------------------

def test_an_entry_that_is_not_a_mapping_is_refused_in_full():
    assert refusal(['pod001']) == ("ipu_k8s_vipu_controllers[0] is 'pod001', not a mapping: write it as "
                                   "{name: pod001, host: 10.5.212.116}")


def test_unknown_keys_are_refused_sorted_in_full():
    assert refusal([{'name': 'pod001', 'host': '10.5.212.116', 'zone': 'a', 'adress': 'b'}]) == (
        'ipu_k8s_vipu_controllers[0] (pod001) has unknown key(s) adress, zone: the keys are name, host, port, label')


@pytest.mark.parametrize('name', [None, '', '  '])
def test_an_entry_without_a_name_is_refused_in_full(name):
    assert refusal([{'name': name, 'host': '10.5.212.116'}]) == (
        'ipu_k8s_vipu_controllers[0] has no name: give each controller a name (ipu_k8s_vipu_controller refers to '
        'it), e.g. name: pod001')


def test_an_entry_without_any_key_names_every_problem_in_order():
    assert refusal([{}]) == (
        'ipu_k8s_vipu_controllers[0] has no name: give each controller a name (ipu_k8s_vipu_controller refers to '
        "it), e.g. name: pod001; ipu_k8s_vipu_controllers[0]: host is empty: give the V-IPU controller's IPv4 "
        'address or DNS name')


@pytest.mark.parametrize('host', [None, '', '   '])
def test_an_empty_host_is_refused_in_full(host):
    assert refusal([{'name': 'pod001', 'host': host}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): host is empty: give the V-IPU controller's IPv4 address or DNS name")


def test_an_ipv6_host_is_refused_in_full():
    assert refusal([{'name': 'pod001', 'host': 'fe80::1'}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): host 'fe80::1' looks like IPv6; the V-IPU controller must be given "
        'as an IPv4 address or a host name, optionally with :port: give an IPv4 address or a DNS name only')


def test_a_host_with_a_port_is_refused_with_both_settings_written_out():
    assert refusal([{'name': 'pod001', 'host': 'vipu.example.com:8091'}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): host 'vipu.example.com:8091' carries a port: write host: "
        'vipu.example.com and port: 8091')


@pytest.mark.parametrize('port, shown', [('http', 'http'), (0, '0'), (65536, '65536'), (True, 'True')])
def test_a_bad_port_is_refused_in_full(port, shown):
    assert refusal([{'name': 'pod001', 'host': '10.5.212.116', 'port': port}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): port '%s' is not a TCP port (1-65535): give the V-IPU "
        "controller's port, usually 8090" % shown)


def test_a_bad_default_port_is_refused_as_the_entrys_port():
    assert refusal([{'name': 'pod001', 'host': '10.5.212.116'}], port='') == (
        "ipu_k8s_vipu_controllers[0] (pod001): port '' is not a TCP port (1-65535): give the V-IPU "
        "controller's port, usually 8090")


def test_a_bad_label_is_refused_in_full():
    assert refusal([{'name': 'pod001', 'host': '10.5.212.116', 'label': 'pod001'}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): label 'pod001' " + NOT_KEY_VALUE)


@pytest.mark.parametrize('port, label', [(None, None), ('', ''), ('', '   ')])
def test_empty_port_and_label_take_the_defaults(port, label):
    assert parse_controllers([{'name': 'pod001', 'host': '10.5.212.116', 'port': port, 'label': label}],
                             8091, 'vipu-ctrl=x') == [
        {'name': 'pod001', 'host': '10.5.212.116', 'port': 8091, 'label': 'vipu-ctrl=x'}]


def test_given_port_and_label_are_kept():
    assert parse_controllers([{'name': 7, 'host': 'vipu.example.com', 'port': '8092', 'label': 'v=7'}],
                             8090, LABEL) == [
        {'name': '7', 'host': 'vipu.example.com', 'port': 8092, 'label': 'v=7'}]


def test_a_tuple_is_a_list():
    assert parse_controllers(({'name': 'pod001', 'host': '10.5.212.116'},), 8090, LABEL) == [
        {'name': 'pod001', 'host': '10.5.212.116', 'port': 8090, 'label': LABEL}]


def test_not_a_list_is_refused_in_full_under_the_setting_given():
    assert refusal('pod001', setting='my_controllers') == (
        "my_controllers is 'pod001', not a list: write it as a list of {name, host, port, label}, or [] to let "
        'each IPU node find its controller itself')


def test_a_bad_default_label_is_refused_in_full():
    assert refusal([], label='ipu node') == "ipu_k8s_ipu_node_label 'ipu node' " + NOT_KEY_VALUE


def test_bad_entries_and_duplicates_among_the_good_are_refused_in_one_message():
    assert refusal([
        {'name': 'pod001', 'host': '10.5.212.116', 'label': 'v=1'},
        {'name': 'pod002', 'host': '', 'label': 'v=2'},
        {'name': 'pod001', 'host': '10.5.212.117', 'label': 'v=3'},
        {'name': 'pod001', 'host': '10.5.212.118', 'label': 'v=4'},
    ], setting='sites') == (
        "sites[1] (pod002): host is empty: give the V-IPU controller's IPv4 address or DNS name; "
        "sites: sites[0] (pod001), sites[2] (pod001) and sites[3] (pod001) have the same name 'pod001': "
        'give each IPU-POD its own name')


def test_the_same_host_in_other_letters_and_the_same_label_are_duplicates_in_full():
    assert refusal([
        {'name': 'pod001', 'host': 'VIPU.example.com'},
        {'name': 'pod002', 'host': 'vipu.example.com'},
    ]) == (
        'ipu_k8s_vipu_controllers: ipu_k8s_vipu_controllers[0] (pod001) and ipu_k8s_vipu_controllers[1] (pod002) '
        "have the same host and port 'vipu.example.com:8090': list each V-IPU controller once; "
        'ipu_k8s_vipu_controllers: ipu_k8s_vipu_controllers[0] (pod001) and ipu_k8s_vipu_controllers[1] (pod002) '
        "have the same label 'ipunode=true': give each IPU-POD its own label, or the operator cannot tell their "
        'nodes apart')


# --- the node's choice ------------------------------------------------------------------------

ENTRIES = [{'name': 'pod001', 'host': '10.5.212.116', 'port': 8090, 'label': 'v=1'},
           {'name': 'pod002', 'host': '10.5.213.116', 'port': 8090, 'label': 'v=2'},
           {'name': 'pod003', 'host': '10.5.214.116', 'port': 8090, 'label': 'v=3'}]


def test_choosing_from_an_empty_list_is_refused_in_full():
    with pytest.raises(IpuK8sError) as failure:
        choose_controller([], 'pod001', 'sites')
    assert str(failure.value) == 'sites is empty: there is no controller to choose from'


@pytest.mark.parametrize('choice, name', [(None, 'pod001'), ('  ', 'pod001'), ('pod003', 'pod003')])
def test_the_choice_is_taken_and_empty_means_the_first(choice, name):
    assert choose_controller(ENTRIES, choice)['name'] == name


def test_an_unknown_choice_is_refused_in_full():
    with pytest.raises(IpuK8sError) as failure:
        choose_controller(ENTRIES[:2], 'pod009', 'sites')
    assert str(failure.value) == ("ipu_k8s_vipu_controller 'pod009' names no entry of sites (names: pod001, pod002): "
                                  'set it to one of those names, or leave it empty for the first')


@pytest.mark.parametrize('choice', [None, '', '  '])
def test_an_unchosen_node_of_the_second_pod_is_told_in_full(choice):
    assert unchosen_controller_problem(ENTRIES[:2], choice, {'pod001': False, 'pod002': True}) == (
        'ipu_k8s_vipu_controller is empty, so this node takes the first entry of ipu_k8s_vipu_controllers, pod001 '
        '(10.5.212.116), which it does not reach on a connected subnet, while pod002 (10.5.213.116) is on its own '
        'subnet: set ipu_k8s_vipu_controller: pod002 for this host (host_vars, or the group_vars of its IPU-POD)')


def test_an_unchosen_node_reaching_two_other_controllers_is_told_of_both_in_full():
    assert unchosen_controller_problem(ENTRIES, None, {'pod002': True, 'pod003': True}) == (
        'ipu_k8s_vipu_controller is empty, so this node takes the first entry of ipu_k8s_vipu_controllers, pod001 '
        '(10.5.212.116), which it does not reach on a connected subnet, while pod002 (10.5.213.116), pod003 '
        '(10.5.214.116) are on its own subnet: set ipu_k8s_vipu_controller: pod002 for this host (host_vars, or '
        'the group_vars of its IPU-POD)')


def test_an_unchosen_node_reaching_only_the_third_controller_is_told_to_take_it():
    assert unchosen_controller_problem(ENTRIES, None, {'pod003': True}).endswith(
        'while pod003 (10.5.214.116) is on its own subnet: set ipu_k8s_vipu_controller: pod003 for this host '
        '(host_vars, or the group_vars of its IPU-POD)')


@pytest.mark.parametrize('entries, choice, connected', [
    (ENTRIES[:1], None, {'pod001': False}),
    (ENTRIES, 'pod002', {'pod002': True}),
    (ENTRIES, None, {'pod001': True, 'pod002': True}),
    (ENTRIES, None, {}),
])
def test_no_problem_when_chosen_alone_reachable_or_nothing_better(entries, choice, connected):
    assert unchosen_controller_problem(entries, choice, connected) is None


def test_inventory_problems_of_a_bad_list_are_its_one_refusal():
    assert inventory_problems('pod001', {'ipu1': 'pod001'}, 8090, LABEL) == [
        "ipu_k8s_vipu_controllers is 'pod001', not a list: write it as a list of {name, host, port, label}, or [] "
        'to let each IPU node find its controller itself']


def test_inventory_problems_name_every_host_choosing_from_an_empty_list_sorted():
    assert inventory_problems(None, {'ipu2': 'pod002', 'ipu0': '', 'ipu1': 'pod001'}, 8090, LABEL) == [
        "ipu1: ipu_k8s_vipu_controller is 'pod001' but ipu_k8s_vipu_controllers is empty: list the controllers, "
        'or leave ipu_k8s_vipu_controller empty',
        "ipu2: ipu_k8s_vipu_controller is 'pod002' but ipu_k8s_vipu_controllers is empty: list the controllers, "
        'or leave ipu_k8s_vipu_controller empty']


def test_inventory_problems_name_every_host_with_an_unknown_choice():
    controllers = [{'name': 'pod001', 'host': '10.5.212.116', 'label': 'v=1'}]
    assert inventory_problems(controllers, {'ipu2': 'x', 'ipu1': 'y', 'ipu3': 'pod001'}, 8090, LABEL) == [
        "ipu1: ipu_k8s_vipu_controller 'y' names no entry of ipu_k8s_vipu_controllers (names: pod001): set it to "
        'one of those names, or leave it empty for the first',
        "ipu2: ipu_k8s_vipu_controller 'x' names no entry of ipu_k8s_vipu_controllers (names: pod001): set it to "
        'one of those names, or leave it empty for the first']


def test_inventory_problems_without_choices_are_none():
    assert inventory_problems([], None, 8090, LABEL) == []


# --- the site model ---------------------------------------------------------------------------

def vipu(host, name=None, label=LABEL, port=8090):
    return {'host': host, 'port': port, 'name': name, 'label': label}


def model_refusal(nodes, *args):
    with pytest.raises(IpuK8sError) as failure:
        site_model(nodes, *args)
    return str(failure.value)


@pytest.mark.parametrize('nodes', [None, {}])
def test_no_ipu_nodes_is_refused_in_full(nodes):
    assert model_refusal(nodes) == ('the ipu_nodes inventory group is empty: list the Poplar servers whose RDMA NIC '
                                    'reaches the IPU-Machines')


def test_nodes_without_a_usable_vipu_server_fact_are_named_in_full():
    assert model_refusal({'w1': {'vipu_server': vipu('10.5.212.116')}, 'w2': {'vipu_server': 'x'},
                          'w3': {'vipu_server': {'port': 8090}}, 'w4': None}) == (
        'IPU node(s) w2, w3, w4 have no vipu_server fact: run the rdma_network facts step on them first '
        '(playbooks/rdma_network.yml, or playbooks/ipu_operator.yml which runs it), in the same ansible-playbook run')


def test_a_fact_with_a_bad_port_is_refused_naming_the_node():
    assert model_refusal({'w1': {'vipu_server': vipu('10.5.212.116', port='http')}}) == (
        "port of the vipu_server fact of w1 'http' is not a number from 1 to 65535")


@pytest.mark.parametrize('label, shown', [(None, ''), ('ipunode', 'ipunode')])
def test_a_fact_with_a_bad_label_is_refused_in_full(label, shown):
    assert model_refusal({'w1': {'vipu_server': vipu('10.5.212.116', label=label)}}) == (
        "the vipu_server fact of w1 has label '%s', which %s: set ipu_k8s_ipu_node_label or the entry's label"
        % (shown, NOT_KEY_VALUE))


def test_the_operator_part_without_ipam():
    model = site_model({'w1': {'vipu_server': vipu('10.5.212.116', port='8091')},
                        'w2': {'vipu_server': vipu('10.5.213.116', 'pod002', 'graphcore.ai/pod=two'),
                               'node_name': 'poplar-02'}})
    assert model == {
        'operator': {
            'controllers': [{'name': '10.5.212.116:8091', 'host': '10.5.212.116', 'port': 8091, 'label': LABEL},
                            {'name': 'pod002', 'host': '10.5.213.116', 'port': 8090,
                             'label': 'graphcore.ai/pod=two'}],
            'value': '10.5.212.116:8091:ipunode=true,10.5.213.116:8090:graphcore.ai/pod=two',
            'nodes': [{'host': 'w1', 'node': 'w1', 'controller': '10.5.212.116:8091', 'label_key': 'ipunode',
                       'label_value': 'true'},
                      {'host': 'w2', 'node': 'poplar-02', 'controller': 'pod002', 'label_key': 'graphcore.ai/pod',
                       'label_value': 'two'}],
        },
        'pods': None, 'rdma_network': None, 'ipam': None, 'warnings': [],
    }


def test_conflicting_names_and_labels_are_refused_in_full():
    assert model_refusal({'w1': {'vipu_server': vipu('10.5.212.116', 'pod001', 'v=1')},
                          'w2': {'vipu_server': vipu('10.5.212.117', 'pod001', 'v=1')}}) == (
        'the IPU nodes resolved V-IPU controllers the IPU Operator cannot use: one controller name resolves to '
        "different addresses on different nodes ('pod001'): pod001 at 10.5.212.116:8090 (w1); pod001 at "
        '10.5.212.117:8090 (w2): make the name resolve to the same IPv4 address on every IPU node (DNS or '
        "/etc/hosts), or give the address in the entry's host; one label stands for different V-IPU controllers "
        "('v=1'): pod001 at 10.5.212.116:8090 (w1); pod001 at 10.5.212.117:8090 (w2): list each controller in "
        'ipu_k8s_vipu_controllers with its own label and set ipu_k8s_vipu_controller on each IPU node')


def test_one_address_under_two_names_is_refused_in_full():
    assert model_refusal({'w1': {'vipu_server': vipu('10.5.212.116', 'pod001', 'v=1')},
                          'w2': {'vipu_server': vipu('10.5.212.116', 'pod002', 'v=2')},
                          'w3': {'vipu_server': vipu('10.5.212.116', 'pod001', 'v=1')}}) == (
        'the IPU nodes resolved V-IPU controllers the IPU Operator cannot use: one V-IPU controller is listed under '
        "different names or labels ('10.5.212.116:8090'): pod001 at 10.5.212.116:8090 (w1, w3); pod002 at "
        '10.5.212.116:8090 (w2): list each controller once in ipu_k8s_vipu_controllers')


def rdma(address, interface='ens1f0', cidr='10.247.208.0/23', mtu=9000, vipu_address='10.247.208.5'):
    return {'interface': interface, 'cidr': cidr, 'prefix': int(cidr.split('/')[1]), 'node_address': address,
            'mtu': mtu, 'excludes': ['10.247.208.0/25'], 'vipu_address': vipu_address}


POD1 = vipu('10.247.208.5', 'pod001', 'v=1')
POD2 = vipu('10.247.209.5', 'pod002', 'v=2')


def test_a_node_with_an_empty_rdma_network_is_refused_in_full():
    assert model_refusal({'w1': {'vipu_server': POD1, 'rdma_network': rdma('10.247.208.21')},
                          'w3': {'vipu_server': POD1, 'rdma_network': {}}}, 'rdma-net', 'whereabouts') == (
        'the RDMA network of w3 lacks interface, cidr, mtu, excludes, vipu_address: did rdma_network_facts run on it?')


def test_one_pod_takes_the_network_name_and_the_block_size():
    networks = {'w1': rdma('10.247.208.21'), 'w2': rdma('10.247.208.22')}
    model = site_model(dict((h, {'vipu_server': POD1, 'rdma_network': n}) for h, n in networks.items()),
                       'rdma-net', 'nv-ipam', 16)
    assert model['pods'][0]['pool'] == 'rdma-net'
    assert model['rdma_network'] == agree_rdma_networks(networks, 'nv-ipam', 16)[0]
    assert model['rdma_network'] != agree_rdma_networks(networks, 'nv-ipam', 0)[0]
    assert (model['pods'][0]['hosts'], model['pods'][0]['node_names'], model['ipam']) == (
        ['w1', 'w2'], ['w1', 'w2'], 'nv-ipam')


def test_pods_that_disagree_inside_are_each_named_with_their_sorted_hosts():
    networks = {'w2': rdma('10.247.208.22', interface='ens2f0'), 'w1': rdma('10.247.208.21'),
                'w4': rdma('10.247.208.24', interface='ens2f0'), 'w3': rdma('10.247.208.23')}
    pods = {'w1': POD1, 'w2': POD1, 'w3': POD2, 'w4': POD2}
    with pytest.raises(IpuK8sError) as one:
        agree_rdma_networks({'w2': networks['w2'], 'w1': networks['w1']}, 'whereabouts', 0)
    with pytest.raises(IpuK8sError) as two:
        agree_rdma_networks({'w4': networks['w4'], 'w3': networks['w3']}, 'whereabouts', 0)
    assert model_refusal(dict((h, {'vipu_server': pods[h], 'rdma_network': n}) for h, n in networks.items()),
                         'rdma-net', 'whereabouts') == (
        "V-IPU controller 'pod001' (IPU-POD of w1, w2): %s; V-IPU controller 'pod002' (IPU-POD of w3, w4): %s"
        % (one.value, two.value))


def test_warnings_of_one_pod_stay_as_they_are_and_of_several_name_their_pod():
    differing = {'w1': rdma('10.247.208.21', mtu=9000), 'w2': rdma('10.247.208.22', mtu=4200)}
    _, warnings = agree_rdma_networks(differing, 'whereabouts', 0)
    assert warnings
    one = site_model(dict((h, {'vipu_server': POD1, 'rdma_network': n}) for h, n in differing.items()),
                     'rdma-net', 'whereabouts')
    assert one['warnings'] == warnings
    nodes = dict((h, {'vipu_server': POD1, 'rdma_network': n}) for h, n in differing.items())
    nodes['w3'] = {'vipu_server': POD2, 'rdma_network': rdma('10.247.208.23')}
    several = site_model(nodes, 'rdma-net', 'whereabouts')
    assert several['warnings'] == ["V-IPU controller 'pod001': %s" % w for w in warnings]
    assert several['rdma_network'] is None
    assert [p['pool'] for p in several['pods']] == ['rdma-net-pod001', 'rdma-net-pod002']


# --- a trailing newline (a YAML block scalar) is not part of a valid label --------------------

@pytest.mark.parametrize('label, part, shown', [
    ('ipunode=true\n', 'value', 'true\n'),
    ('ipunode\n=true', 'key', 'ipunode\n'),
    ('graphcore.ai\n/ipunode=true', 'key', 'graphcore.ai\n/ipunode'),
])
def test_a_label_with_a_newline_is_refused(label, part, shown):
    assert label_problem(label) == "has an invalid Kubernetes label %s '%s' %s" % (
        part, shown, VALUE_RULE if part == 'value' else KEY_RULE)


def test_the_site_models_defaults_are_no_network_name_and_the_ipams_default_block_size():
    networks = {'w1': rdma('10.247.208.21'), 'w2': rdma('10.247.208.22')}
    model = site_model(dict((h, {'vipu_server': POD1, 'rdma_network': n}) for h, n in networks.items()),
                       ipam='nv-ipam')
    assert model['pods'][0]['pool'] == ''
    assert model['rdma_network'] == agree_rdma_networks(networks, 'nv-ipam')[0]
    assert model['rdma_network'] != agree_rdma_networks(networks, 'nv-ipam', 1)[0]


def test_a_host_with_a_port_is_refused_with_the_address_as_it_is_read():
    assert refusal([{'name': 'pod001', 'host': '10.5.212.116:8091'}]) == (
        "ipu_k8s_vipu_controllers[0] (pod001): host '10.5.212.116:8091' carries a port: write host: "
        '10.5.212.116 and port: 8091')
