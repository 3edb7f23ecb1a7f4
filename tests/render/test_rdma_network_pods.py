"""The RDMA network of several IPU-PODs, rendered through the role's real templates and
tasks' expressions from the project's own derivation and grouping code: one
NetworkAttachmentDefinition without spec.config (checked against the NAD CRD), and on each
IPU node the CNI file Multus reads for it, with that node's POD's interface, MTU and range
outside that POD's excludes (one IPPool per POD on NVIDIA IPAM rows). And the other way: a
one-POD inventory renders byte for byte what the role rendered before PODs existed
(tests/render/golden/rdma_network/, rendered from commit ad31592 for THREE_NODES; the
IPPool's re-rendered with one nodeSelector term per node, the shape nvidia-k8s-ipam's
controller accepts, see tests/schemas/nv_ipam/README.md).

Which tasks run for one POD or several, where each node's file lands and with which
Python are shown by running the role: tests/integration/test_netns_rdma_pods.py (a file
per node, written once, in its own confDir) and the API tier's test_rdma_pods.py and
test_layers.py (one POD applies the MacvlanNetwork; several apply the NAD without config)."""

import ipaddress
import json
from pathlib import Path

import pytest
import yaml

from ipu_k8s_render import (ROOT, SCHEMAS, load_role_yaml, render_role_template, render_role_yaml, role_expression,
                            validate_custom_resource)
from test_rdma_network import (CHART_VERSIONS, ROWS, THREE_NODES, addresses, allocate, crd, node_facts,
                               pool_addresses, pool_nodes, validate_ippool)
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import site_model  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / 'golden' / 'rdma_network'
NAD_CRD = SCHEMAS / 'multus' / 'network-attachment-definitions.k8s.cni.cncf.io.yaml'
IPAMS = sorted(set(ROWS[v]['ipam'] for v in CHART_VERSIONS))


def controller(name, host, port=8090):
    return {'name': name, 'host': host, 'port': port, 'label': 'vipu-ctrl=%s' % name}


# Two IPU-PODs: a /23 on ens1f0np0 (MTU 9000, two nodes), a /24 on enp65s0f0np0 (MTU 4200).
TWO_PODS = {
    'poplar-01': node_facts('10.247.208.0/23', '10.247.208.201', mtu=9000, interface='ens1f0np0',
                            vipu='10.247.208.5'),
    'poplar-02': node_facts('10.247.208.0/23', '10.247.209.202', mtu=9000, interface='ens1f0np0',
                            vipu='10.247.208.5'),
    'poplar-11': node_facts('10.5.212.0/24', '10.5.212.201', mtu=4200, interface='enp65s0f0np0',
                            vipu='10.5.212.116'),
}
TWO_CONTROLLERS = {'poplar-01': controller('pod001', '10.247.208.5'), 'poplar-02': controller('pod001', '10.247.208.5'),
                   'poplar-11': controller('pod002', '10.5.212.116', 8091)}


def pods(networks, controllers, ipam, node_names=None):
    """The site model's pods. No controllers: each node's fact as the V-IPU CLI gives it."""
    found = dict((h, {'host': str(n['vipu_address']), 'port': 8090, 'label': 'ipunode=true'}) for h, n in networks.items())
    nodes = dict((h, {'rdma_network': n, 'vipu_server': (controllers or found)[h], 'node_name': (node_names or {}).get(h)})
                 for h, n in networks.items())
    return site_model(nodes, 'rdma-net', ipam)['pods']


def ippools_as_applied(pod_list):
    """The IPPools apply.yml renders: one per entry of ipu_k8s_site.pods, its loop."""
    return [render_role_template('rdma_network', 'ippool.yaml.j2', {'item': item}) for item in pod_list]


def node_file(pod, ipam):
    text = render_role_template('rdma_network', 'multus_cni.conf.j2',
                                {'item': [pod, pod['hosts'][0]], 'ipu_k8s_site': {'ipam': ipam}})
    return json.loads(text)


# --- one IPU-POD: exactly as before -----------------------------------------------------

@pytest.mark.parametrize('controllers', [{}, dict((h, controller('pod001', '10.247.208.116')) for h in THREE_NODES)],
                         ids=['no-controller-list', 'one-controller'])
@pytest.mark.parametrize('ipam', IPAMS)
def test_one_pod_renders_byte_for_byte_what_it_rendered_before(ipam, controllers):
    one = pods(THREE_NODES, controllers, ipam)
    assert len(one) == 1
    macvlan = render_role_template('rdma_network', 'macvlannetwork.yaml.j2', {
        'ipu_k8s_site': {'rdma_network': one[0]['rdma_network'], 'pods': one, 'ipam': ipam}})
    assert macvlan == (GOLDEN / ('macvlannetwork-%s.yaml.golden' % ipam)).read_text()
    if ipam == 'nv-ipam':
        assert ippools_as_applied(one) == [(GOLDEN / 'ippool-nv-ipam.yaml.golden').read_text()]
        assert validate_ippool(yaml.safe_load((GOLDEN / 'ippool-nv-ipam.yaml.golden').read_text())) == []


@pytest.mark.parametrize('ipam', IPAMS)
def test_the_node_file_of_one_pod_is_the_macvlan_networks_configuration(ipam):
    """The per-node file carries what the Network Operator puts in the MacvlanNetwork's NAD."""
    one = pods(THREE_NODES, {}, ipam)[0]
    macvlan = render_role_yaml('rdma_network', 'macvlannetwork.yaml.j2', {
        'ipu_k8s_site': {'rdma_network': one['rdma_network'], 'pods': [one], 'ipam': ipam}})
    config = node_file(one, ipam)
    assert config['name'] == macvlan['metadata']['name'] and config['type'] == 'macvlan'
    assert (config['master'], config['mode'], config['mtu']) == (
        macvlan['spec']['master'], macvlan['spec']['mode'], macvlan['spec']['mtu'])
    assert config['ipam'] == json.loads(macvlan['spec']['ipam'])


# --- several IPU-PODs -------------------------------------------------------------------

@pytest.mark.parametrize('ipam', IPAMS)
def test_each_node_gets_its_own_pods_interface_mtu_and_range(ipam):
    two = pods(TWO_PODS, TWO_CONTROLLERS, ipam)
    files = dict((host, node_file(pod, ipam)) for pod in two for host in pod['hosts'])
    assert sorted(files) == sorted(TWO_PODS)
    for host, facts in TWO_PODS.items():
        config = files[host]
        assert config['name'] == 'rdma-net' and config['cniVersion'] == '0.3.1'
        assert (config['master'], config['mtu']) == (facts['interface'], facts['mtu'])
    assert files['poplar-01'] == files['poplar-02'] != files['poplar-11']
    if ipam == 'whereabouts':
        for host, facts in TWO_PODS.items():
            ipam_config = files[host]['ipam']
            assert ipam_config['range'] == facts['cidr']
            free = addresses(ipam_config['range'], ipam_config['exclude'])
            assert free and ipaddress.IPv4Address(facts['node_address']) not in free
            assert ipaddress.IPv4Address(facts['vipu_address']) not in free
            assert free <= set(ipaddress.IPv4Network(facts['cidr']).hosts())
        assert files['poplar-11']['ipam']['exclude'] == ['10.5.212.0/25', '10.5.212.201/32']
    else:
        assert [files[h]['ipam'] for h in ('poplar-01', 'poplar-11')] == [
            {'type': 'nv-ipam', 'poolName': 'rdma-net-pod001'}, {'type': 'nv-ipam', 'poolName': 'rdma-net-pod002'}]


@pytest.mark.parametrize('chart_version', [v for v in CHART_VERSIONS if ROWS[v]['ipam'] == 'nv-ipam'])
def test_each_pod_gets_an_ippool_for_its_own_nodes(chart_version):
    two = pods(TWO_PODS, TWO_CONTROLLERS, 'nv-ipam', {'poplar-02': 'node-2'})
    ippools = [yaml.safe_load(text) for text in ippools_as_applied(two)]
    for pool, pod in zip(ippools, two):
        validate_custom_resource(pool, crd(chart_version, 'ippools'))
        assert pool['metadata']['name'] == pod['pool']
        assert pool['spec']['subnet'] == pod['rdma_network']['cidr']
        assert pool_addresses(pool) == addresses(pod['rdma_network']['cidr'], pod['rdma_network']['excludes'])
    assert [pool_nodes(p) for p in ippools] == [['poplar-01', 'node-2'], ['poplar-11']]
    handed = allocate(ippools[0], ['poplar-01', 'node-2'])
    assert allocate(ippools[1], ['poplar-11'])
    assert all(handed.values())
    assert ipaddress.IPv4Address('10.247.209.202') not in handed['node-2']


def test_the_network_attachment_definition_has_no_config():
    nad = render_role_yaml('rdma_network', 'networkattachmentdefinition.yaml.j2')
    validate_custom_resource(nad, NAD_CRD)
    assert nad['metadata'] == {'name': 'rdma-net', 'namespace': 'default'}
    # Multus reads the node's file only when the spec is empty (no config at all).
    assert nad['spec'] == {}


def test_the_node_file_is_where_and_how_multus_looks_it_up():
    """tests/schemas/multus/nad-without-config.yaml: Multus's default confDir (the thin
    plugin the Network Operator deploys never sets confDir), the extensions it reads, and
    a match on the JSON "name"."""
    facts = yaml.safe_load((SCHEMAS / 'multus' / 'nad-without-config.yaml').read_text())['multus']['values']
    written = next(t['ansible.builtin.template'] for t in load_role_yaml('rdma_network', 'tasks/pods_cni.yml')
                   if 'ansible.builtin.template' in t)
    dest = Path(role_expression('rdma_network', written['dest']))
    assert str(dest.parent) == facts['default_conf_dir']
    assert dest.suffix in facts['extensions']
    two = pods(TWO_PODS, TWO_CONTROLLERS, 'whereabouts')
    nad = render_role_yaml('rdma_network', 'networkattachmentdefinition.yaml.j2')
    assert all(node_file(pod, 'whereabouts')['name'] == nad['metadata']['name'] for pod in two)


def test_the_ipu_operator_and_the_network_agree_on_which_node_is_in_which_pod():
    """The IPU Operator's vipuControllers (each POD once) and node labels come from the same
    vipu_server facts the network is grouped by."""
    plan = site_model(dict((h, {'vipu_server': c}) for h, c in TWO_CONTROLLERS.items()))['operator']
    assert plan['value'] == '10.247.208.5:8090:vipu-ctrl=pod001,10.5.212.116:8091:vipu-ctrl=pod002'
    two = pods(TWO_PODS, TWO_CONTROLLERS, 'whereabouts')
    labelled = dict((n['host'], '%s=%s' % (n['label_key'], n['label_value'])) for n in plan['nodes'])
    assert labelled == dict((host, pod['label']) for pod in two for host in pod['hosts'])
    assert [(c['name'], c['host'], c['port']) for c in plan['controllers']] == [
        (p['name'], p['vipu_host'], p['vipu_port']) for p in two]


# --- verify: each IPU node against its own POD's network ---------------------------------

def verify_read_tasks():
    tasks = load_role_yaml('verify', 'tasks/node_macvlan_read.yml')
    return next(t for t in tasks if t['name'] == "Read this node's own network of several IPU-PODs")


def applied_from_node_file(config):
    """__verify_macvlan as node_macvlan_read.yml builds it from the node's CNI file."""
    task = next(t for t in verify_read_tasks()['block'] if t['name'] == "Use the node's CNI file as the applied network")
    variables = {'rdma_network_node_cni': config, 'ipu_k8s_rdma_network_name': 'rdma-net'}

    def template(value):
        if isinstance(value, dict):
            return dict((k, template(v)) for k, v in value.items())
        if isinstance(value, list):
            return [template(v) for v in value]
        return role_expression('verify', value, variables)
    return template(task['ansible.builtin.set_fact']['__verify_macvlan'])


def comparison():
    import importlib.util
    spec = importlib.util.spec_from_file_location('rdma_network_check', ROOT / 'plugins' / 'filter' / 'rdma_network_check.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rdma_network_comparison


@pytest.mark.parametrize('ipam', IPAMS)
def test_verify_checks_each_node_against_its_own_pods_network(ipam):
    compare = comparison()
    two = pods(TWO_PODS, TWO_CONTROLLERS, ipam)
    ippools = (dict((p['pool'], yaml.safe_load(t)) for p, t in zip(two, ippools_as_applied(two)))
               if ipam == 'nv-ipam' else {})
    by_host = dict((host, pod) for pod in two for host in pod['hosts'])
    for host, rdma in TWO_PODS.items():
        own = applied_from_node_file(node_file(by_host[host], ipam))['resources'][0]
        pool = ippools.get(by_host[host]['pool']) if ipam == 'nv-ipam' else None
        result = compare(rdma, own, pool)
        assert result['status'] == 'PASS', (host, result)
        assert result['ipam'] == ipam
        other = next(p for p in two if p is not by_host[host])
        wrong = applied_from_node_file(node_file(other, ipam))['resources'][0]
        assert compare(rdma, wrong, ippools.get(other['pool']) if ipam == 'nv-ipam' else None)['status'] == 'FAIL'


@pytest.mark.parametrize('nad, reads', [({'spec': {}}, True), ({'spec': {'config': '{"type": "macvlan"}'}}, False)])
def test_verify_reads_the_node_file_only_for_a_nad_without_config(nad, reads):
    conditions = verify_read_tasks()['when']
    variables = {'__verify_nad': {'resources': [nad]}}
    assert all(role_expression('verify', '{{ %s }}' % c, variables) for c in conditions) is reads
