"""The MacvlanNetwork the rdma_network role renders, judged by the code that reads it: the
Network Operator's MacvlanNetwork state, which writes the NetworkAttachmentDefinition's CNI
config as text (tests/network_operator_upstream.py restates it, citing its lines), and the
real macvlan CNI plugin (containernetworking-plugins in /usr/lib/cni, Debian's 1.1.1), which
reads that config on the node. The list of rules and the test of each:
tests/schemas/network_operator/RULES.md, section MacvlanNetwork."""

import json
import sys

import pytest
import yaml

from ipu_k8s_render import ROOT, role_validate_failures
from test_rdma_network import CHART_VERSIONS, INVENTORIES, ONE_NODE, ROWS, agreed, render_macvlan
from test_rdma_network_cni_plugin import (cni, host_local_over, namespaces, plugin, run_add_and_del,  # noqa: F401
                                          whereabouts_ranges)

sys.path.insert(0, str(ROOT / 'tests'))
import network_operator_upstream as upstream  # noqa: E402

MACVLAN_VERSIONS = [v for v in CHART_VERSIONS if ROWS[v].get('layout') == 'policy']


def operator_config(macvlan):
    """The CNI config of the NetworkAttachmentDefinition the operator makes of MACVLAN."""
    return json.loads(upstream.macvlan_network_attachment_definition(macvlan)['spec']['config'])


def meant(macvlan):
    """The CNI config the MacvlanNetwork asks for: its fields, and its IPAM as JSON."""
    spec = macvlan['spec']
    return {'cniVersion': '0.3.1', 'name': macvlan['metadata']['name'], 'type': 'macvlan', 'master': spec['master'],
            'mode': spec['mode'], 'mtu': spec['mtu'], 'ipam': json.loads(spec['ipam'])}


# --- the operator ----------------------------------------------------------------------------

@pytest.mark.parametrize('chart_version', MACVLAN_VERSIONS)
@pytest.mark.parametrize('inventory', sorted(INVENTORIES))
def test_the_operator_writes_the_cni_config_the_macvlan_network_means(inventory, chart_version):
    macvlan = render_macvlan(agreed(INVENTORIES[inventory], ROWS[chart_version]['ipam']), chart_version)
    assert operator_config(macvlan) == meant(macvlan)


@pytest.mark.parametrize('chart_version', MACVLAN_VERSIONS)
def test_the_nad_has_the_networks_name_in_the_namespace_the_site_gives(chart_version):
    macvlan = render_macvlan(agreed(ONE_NODE, ROWS[chart_version]['ipam']), chart_version,
                             ipu_k8s_rdma_network_name='ipu-rdma', ipu_k8s_rdma_network_namespace='ipu-jobs')
    nad = upstream.macvlan_network_attachment_definition(macvlan)
    assert nad['metadata'] == {'name': 'ipu-rdma', 'namespace': 'ipu-jobs'}
    assert operator_config(macvlan)['name'] == 'ipu-rdma'


def test_the_restatement_strips_whitespace_inside_ipam_strings_as_the_operator_does():
    macvlan = render_macvlan(agreed(ONE_NODE), '25.4.0',
                             rdma_network_whereabouts_log_file='/var/log/my whereabouts.log')
    assert operator_config(macvlan)['ipam']['log_file'] == '/var/log/mywhereabouts.log'
    assert operator_config(macvlan) != meant(macvlan)


def test_the_restatement_leaves_out_an_mtu_of_0_and_fails_on_a_single_quote():
    macvlan = render_macvlan(agreed(ONE_NODE), '25.4.0')
    macvlan['spec']['mtu'] = 0
    assert 'mtu' not in operator_config(macvlan)
    macvlan['spec']['master'] = "enp65s0f1'"
    with pytest.raises(yaml.YAMLError):
        upstream.macvlan_network_attachment_definition(macvlan)


# --- the real macvlan plugin ------------------------------------------------------------

def node_config(chart_version, tmp_path, **changes):
    """The operator's config of the one-node site's MacvlanNetwork (changes applied to its
    spec first), its IPAM swapped for host-local over the same range (Whereabouts and
    nv-ipam are not packaged here), as the macvlan plugin gets it."""
    macvlan = render_macvlan(agreed(ONE_NODE, ROWS[chart_version]['ipam']), chart_version)
    macvlan['spec'].update(changes)
    config = operator_config(macvlan)
    ipam = config['ipam']
    if ipam['type'] == 'whereabouts':
        config['ipam'] = host_local_over(ipam['range'], whereabouts_ranges(ipam), tmp_path / 'ipam')
    else:
        # ONE_NODE's IPPool: 10.247.208.0/24 without .0/25 and the node's .201 (test_rdma_network)
        assert ipam == {'type': 'nv-ipam', 'poolName': 'rdma-net'}
        config['ipam'] = host_local_over('10.247.208.0/24', [('10.247.208.0', '10.247.208.127')], tmp_path / 'ipam')
    return config


@pytest.mark.usefixtures('root')
@pytest.mark.parametrize('chart_version', ['25.4.0', '26.4.1'])
def test_the_operators_nad_config_gives_the_pod_net1_in_the_real_plugin(plugin, namespaces, tmp_path,  # noqa: F811
                                                                         chart_version):
    made = run_add_and_del(plugin, namespaces, node_config(chart_version, tmp_path), tmp_path)
    # ONE_NODE: master enp65s0f1, MTU 1500, bridge; first free address after the excluded /25
    assert (made['result_ips'], made['mtu'], made['kind'], made['mode'], made['on_master'], made['deleted']) == \
        (['10.247.208.128/24'], 1500, 'macvlan', 'bridge', True, True)


@pytest.mark.usefixtures('root')
def test_an_mtu_of_0_gives_the_pod_the_masters_mtu(plugin, namespaces, tmp_path):  # noqa: F811
    made = run_add_and_del(plugin, namespaces, node_config('25.4.0', tmp_path, mtu=0), tmp_path)
    assert made['mtu'] == 9000  # the test's master veth (test_rdma_network_cni_plugin.namespaces)


@pytest.mark.usefixtures('root')
@pytest.mark.parametrize('change, words', [({'mtu': 9001}, 'invalid MTU 9001'),
                                           ({'mode': 'bridged'}, 'unknown macvlan mode')])
def test_the_real_plugin_refuses_an_mtu_above_the_masters_and_an_unknown_mode(
        plugin, namespaces, tmp_path, change, words):  # noqa: F811
    config = node_config('25.4.0', tmp_path, **change)
    node, pod = namespaces(config['master'])
    with pytest.raises(AssertionError, match=words):
        cni(plugin, 'ADD', config, node, pod)


# --- settings the operator changes or cannot write ---------------------------------------
# Whereabouts rows only: the IPAM setting reaches the NAD with its whitespace removed, or
# (a single quote) breaks the NAD's YAML so the operator renders nothing: the rdma_network
# role's validation (nad_path, nad_word) refuses them at preflight, naming the setting.

QUOTING_CASES = {
    'kubeconfig-space': {'rdma_network_whereabouts_kubeconfig': '/etc/cni/net.d/where abouts.d/whereabouts.kubeconfig'},
    'log-file-quote': {'rdma_network_whereabouts_log_file': "/var/log/whereabouts's.log"},
}


@pytest.mark.parametrize('case', sorted(QUOTING_CASES))
def test_the_operator_changes_or_cannot_write_these_ipam_settings(case):
    macvlan = render_macvlan(agreed(ONE_NODE), '25.4.0', **QUOTING_CASES[case])
    try:
        assert operator_config(macvlan) != meant(macvlan)
    except yaml.YAMLError:
        pass


@pytest.fixture(scope='module')
def validate_failures(tmp_path_factory):
    """The rdma_network validate entry point (what preflight runs), one local host per case."""
    return role_validate_failures(tmp_path_factory.mktemp('rdma_network_rules_validate'), 'rdma_network', dict(QUOTING_CASES, defaults={}))


@pytest.mark.parametrize('case', sorted(QUOTING_CASES))
def test_an_ipam_setting_the_operator_would_change_is_refused_by_the_roles_validation(case, validate_failures):
    assert case in validate_failures, 'the role accepts %s' % QUOTING_CASES[case]
    assert any(name in validate_failures[case] for name in QUOTING_CASES[case]), validate_failures[case]
