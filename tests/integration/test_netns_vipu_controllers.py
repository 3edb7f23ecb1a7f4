"""The V-IPU controller list, parsed once in Python, end to end in the lab namespace: each
IPU node resolves its entry's DNS name from its own /etc/hosts (vipu_server through the
rdma_network facts entry point), and the IPU Operator's global.vipuControllers carries the
very address the node resolved; preflight refuses a bad list from the inventory alone,
changing nothing."""

from netns_lab import LAB_HOSTS, ROOT, local_host, run_playbook

CONTROLLERS = [
    {'name': 'pod001', 'host': 'vipu-ctrl.pod.test', 'label': 'vipu-ctrl=pod001'},
    {'name': 'pod002', 'host': 'vipu-pod2.test', 'port': 8091, 'label': 'vipu-ctrl=pod002'},
]


def inventory(controllers, choices):
    hosts = dict((host, local_host(ipu_k8s_vipu_controller=choice)) for host, choice in choices.items())
    names = dict((host, None) for host in choices)
    first = next(iter(choices))
    return {'all': {'hosts': hosts, 'vars': {'ipu_k8s_vipu_controllers': controllers},
                    'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {first: None}},
                                                              'workers': {'hosts': names}}},
                                 'ipu_nodes': {'hosts': names}}}}


def test_operator_gets_the_addresses_the_nodes_resolved(lab, tmp_path):
    run = run_playbook(lab, 'vipu_controllers.yml',
                       inventory(CONTROLLERS, {'poplar-01': 'pod001', 'poplar-02': 'pod002'}), tmp_path)
    facts = dict((host, run.result('rdma_network : Derive the RDMA interface, subnet, MTU and excluded range', host)['vipu_server'])
                 for host in ('poplar-01', 'poplar-02'))
    assert [(f['name'], f['address'], f['label'], f['source']) for f in facts.values()] == [
        ('pod001', '10.247.208.5:8090', 'vipu-ctrl=pod001', 'inventory'),
        ('pod002', '10.5.212.116:8091', 'vipu-ctrl=pod002', 'inventory')]
    plan = run.result('Work out global.vipuControllers and the node labels', 'poplar-01')['ansible_facts']['operator_plan']
    assert plan['value'] == '10.247.208.5:8090:vipu-ctrl=pod001,10.5.212.116:8091:vipu-ctrl=pod002'
    assert [(n['node'], n['label_key'], n['label_value']) for n in plan['nodes']] == [
        ('poplar-01', 'vipu-ctrl', 'pod001'), ('poplar-02', 'vipu-ctrl', 'pod002')]


def test_node_refuses_a_host_written_with_its_port(lab, tmp_path):
    bad = [{'name': 'pod001', 'host': 'vipu-ctrl.pod.test:8090'}]
    run = run_playbook(lab, 'vipu_controllers.yml', inventory(bad, {'poplar-01': ''}), tmp_path)
    result = run.result('rdma_network : Derive the RDMA interface, subnet, MTU and excluded range', 'poplar-01')
    assert result.get('failed')
    assert result['msg'] == ("ipu_k8s_vipu_controllers[0] (pod001): host 'vipu-ctrl.pod.test:8090' carries a port: "
                             "write host: vipu-ctrl.pod.test and port: 8090")


def test_preflight_refuses_bad_controllers_from_the_inventory_alone(lab, tmp_path):
    bad = [{'name': 'pod001', 'host': '10.247.208.5', 'label': 'ipunode'},
           {'name': 'pod002', 'host': '10.247.208.9', 'label': 'vipu-ctrl=pod002'},
           {'name': 'pod003', 'host': '10.247.208.9', 'label': 'vipu-ctrl=pod003'}]
    inv = inventory(bad, {'poplar-01': 'pod009'})
    inv['all']['hosts']['poplar-01']['preflight_require_rdma_device'] = False
    run = run_playbook(lab, ROOT / 'playbooks' / 'preflight.yml', inv, tmp_path,
                       env={'ANSIBLE_SKIP_TAGS': 'preflight_os'})
    message = run.failures()['poplar-01']
    for expected in ("ipu_k8s_vipu_controllers[0] (pod001): label 'ipunode' is not key=value",
                     "the same host and port '10.247.208.9:8090': list each V-IPU controller once"):
        assert expected in message, message
    assert run.stats['poplar-01']['changed'] == 0


def pod2_node(netns_factory):
    """A node of pod002 only: its RDMA NIC is in pod002's subnet, and pod001's address is
    reached through the management gateway."""
    node = netns_factory('pod2')
    node.ip('link add rdma1 mtu 9000 type veth peer name peer1 mtu 9000', 'addr add 10.5.212.20/22 dev rdma1',
            'link set rdma1 up', 'link set peer1 up',
            'link add mgmt0 type veth peer name peer2', 'addr add 10.200.0.2/24 dev mgmt0',
            'link set mgmt0 up', 'link set peer2 up', 'route add default via 10.200.0.1 dev mgmt0')
    node.isolate_name_lookups(LAB_HOSTS)
    return node


def test_preflight_refuses_a_second_pod_node_that_names_no_controller(netns_factory, tmp_path):
    # With no ipu_k8s_vipu_controller it would take pod001, the first entry.
    node = pod2_node(netns_factory)
    inv = inventory(CONTROLLERS, {'poplar-02': ''})
    inv['all']['hosts']['poplar-02']['preflight_require_rdma_device'] = False
    run = run_playbook(node, ROOT / 'playbooks' / 'preflight.yml', inv, tmp_path,
                       env={'ANSIBLE_SKIP_TAGS': 'preflight_os'})
    result = run.result('rdma_network : Derive the RDMA interface, subnet, MTU and excluded range', 'poplar-02')
    assert result.get('failed'), result
    assert result['msg'] == (
        "ipu_k8s_vipu_controller is empty, so this node takes the first entry of ipu_k8s_vipu_controllers, pod001 "
        "(vipu-ctrl.pod.test), which it does not reach on a connected subnet, while pod002 (vipu-pod2.test) is on its own "
        "subnet: set ipu_k8s_vipu_controller: pod002 for this host (host_vars, or the group_vars of its IPU-POD)")
    assert run.stats['poplar-02']['changed'] == 0


def test_a_second_pod_node_that_names_its_controller_passes(netns_factory, tmp_path):
    node = pod2_node(netns_factory)
    run = run_playbook(node, 'vipu_controllers.yml', inventory(CONTROLLERS, {'poplar-02': 'pod002'}), tmp_path)
    fact = run.result('rdma_network : Derive the RDMA interface, subnet, MTU and excluded range', 'poplar-02')['vipu_server']
    assert (fact['name'], fact['address']) == ('pod002', '10.5.212.116:8091')


def test_one_node_module_runs_once_per_run(lab, tmp_path):
    run = run_playbook(lab, 'facts_twice.yml', inventory(CONTROLLERS, {'poplar-01': 'pod001'}), tmp_path,
                       env={'ANSIBLE_SKIP_TAGS': 'rdma_network_apply'})
    assert run.stats['poplar-01']['failures'] == 0, run.stdout[-3000:]
    modules = set(path.stem for path in (ROOT / 'plugins' / 'modules').glob('*.py'))
    ran = [e['event_data'].get('task_action') for e in run.run.host_events(host='poplar-01')
           if e['event'] != 'runner_on_skipped' and e['event_data'].get('task_action') in modules]
    assert ran == ['rdma_network_facts']
