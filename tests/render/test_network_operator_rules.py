"""The NicClusterPolicy the network_operator role renders, and the RDMA shared device plugin
configuration inside it, judged by the rules of the code that reads them: the Network
Operator's reconciler, states and validating webhook, and the plugin's own config parsing
(tests/network_operator_upstream.py restates them, citing upstream's lines; the list of rules
and the test of each: tests/schemas/network_operator/RULES.md). Expected values come from
upstream (the plugin's default prefix, the project-independent resource the verify role
counts), never from the template."""

import json
import sys

import pytest
import yaml

from ipu_k8s_render import ROOT, render_role_yaml, role_validate_failures

sys.path.insert(0, str(ROOT / 'tests'))
import network_operator_upstream as upstream  # noqa: E402
from test_network_operator import POLICY_VERSIONS, checks  # noqa: E402


def render_policy(chart_version, **overrides):
    overrides['network_operator_chart_version'] = chart_version
    return render_role_yaml('network_operator', 'nicclusterpolicy.yaml.j2', overrides)


def plugin_config(chart_version, **overrides):
    return render_policy(chart_version, **overrides)['spec']['rdmaSharedDevicePlugin']['config']


def components(spec):
    """Every image-bearing component of the policy, by its path."""
    found = {'rdmaSharedDevicePlugin': spec['rdmaSharedDevicePlugin']}
    found.update(('secondaryNetwork.' + name, value) for name, value in spec['secondaryNetwork'].items())
    if 'nvIpam' in spec:
        found['nvIpam'] = spec['nvIpam']
    return found


# --- the operator ----------------------------------------------------------------------------

@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_is_the_one_instance_the_operator_reconciles(chart_version):
    assert render_policy(chart_version)['metadata']['name'] == upstream.POLICY_NAME


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_every_component_names_the_repository_and_version_the_state_requires(chart_version):
    for path, spec in components(render_policy(chart_version)['spec']).items():
        assert upstream.image_spec_errors(spec) == [], path


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_device_plugin_config_passes_the_operators_webhook(chart_version):
    assert upstream.webhook_rdma_config_errors(plugin_config(chart_version)) == []


def test_device_plugin_config_with_a_prefix_and_every_selector_passes_the_operators_webhook():
    config = plugin_config('26.4.1', ipu_k8s_rdma_resource_prefix='graphcore.ai',
                           network_operator_rdma_vendors=['15b3'], network_operator_rdma_ifnames=['ens1f0'])
    assert upstream.webhook_rdma_config_errors(config) == []


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_device_plugin_config_reaches_the_plugin_unchanged_through_the_operators_configmap(chart_version):
    config = plugin_config(chart_version, network_operator_rdma_ifnames=['ens1f0'])
    assert json.loads(upstream.configmap_config(config)) == json.loads(config)


# --- the plugin ------------------------------------------------------------------------------

@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_device_plugin_starts_with_the_config_and_offers_the_shared_resource(chart_version):
    config = plugin_config(chart_version)
    # The plugin's default prefix (resources_manager.go:59) and the resource name the guide uses;
    # rdmaHcaMax pods per node, as the role documents.
    assert upstream.plugin_resources(config) == ('', [('rdma/rdma_shared_device_a', 63)])
    assert upstream.plugin_ignored_keys(config) == []


def test_device_plugin_publishes_under_a_prefix_the_config_gives():
    config = plugin_config('26.4.1', ipu_k8s_rdma_resource_prefix='graphcore.ai', network_operator_rdma_hca_max=8)
    assert upstream.plugin_resources(config) == ('', [('graphcore.ai/rdma_shared_device_a', 8)])


# --- the restatements refuse what upstream refuses ----------------------------------------

GOOD = {'resourceName': 'rdma_shared_device_a', 'rdmaHcaMax': 63, 'selectors': {'drivers': ['mlx5_core']}}


def entry(**changes):
    value = dict(GOOD, **changes)
    return json.dumps({'configList': [{k: v for k, v in value.items() if v is not None}]})


@pytest.mark.parametrize('config, words', [
    ('{"configList": [', 'Invalid json'),
    ('{"configList": []}', 'at least 1 item'),
    (entry(rdmaHcaMax=None), 'rdmaHcaMax is required'),
    (entry(rdmaHcaMax='63'), 'rdmaHcaMax must be an integer'),
    (entry(selectors=None), 'must have selectors or devices'),
    (entry(selectors={}), 'selectors must have one of'),
    (entry(selectors={'driver': ['mlx5_core']}), 'additional property driver'),
    (entry(selectors={'drivers': ['']}), 'non-empty strings'),
    (entry(resourceName='-rdma'), 'Invalid Resource name'),
    (entry(resourcePrefix='rdma'), 'valid FQDN'),
    (entry(resourcePrefix='graphcore.a1'), 'valid FQDN'),
])
def test_the_webhook_restatement_refuses_what_upstream_refuses(config, words):
    assert words in ' '.join(upstream.webhook_rdma_config_errors(config))


@pytest.mark.parametrize('config, words', [
    ('{"configList": [', 'Expecting'),
    ('{"configList": []}', 'no resources configuration found'),
    (json.dumps({'configList': [GOOD, GOOD]}), 'already exists'),
    (entry(resourceName='rdma-shared'), 'contains invalid characters'),
    (entry(resourceName='rdma.shared'), 'contains invalid characters'),
    (entry(rdmaHcaMax=-1), 'rdmaHcaMax < 0'),
    (entry(rdmaHcaMax='63'), 'cannot unmarshal'),
    (entry(selectors={}), 'neither "selectors" nor "devices"'),
    (entry(selectors={'drivers': []}), 'neither "selectors" nor "devices"'),
    (entry(devices=['ens1f0']), 'Cannot specify both'),
    (json.dumps({'periodicUpdateInterval': -1, 'configList': [GOOD]}), 'periodicUpdateInterval'),
])
def test_the_plugin_restatement_exits_where_the_plugin_exits(config, words):
    error, resources = upstream.plugin_resources(config)
    assert words in error and resources == []


def test_the_plugin_reads_keys_without_regard_to_case_and_drops_unknown_ones():
    config = json.dumps({'configList': [{'ResourceName': 'a', 'rdmaHcaMax': 2, 'selector': {'drivers': ['x']},
                                         'selectors': {'Drivers': ['mlx5_core']}}]})
    assert upstream.plugin_resources(config) == ('', [('rdma/a', 2)])
    assert upstream.plugin_ignored_keys(config) == ['configList.0.selector']


def test_a_single_quote_in_the_config_breaks_the_operators_configmap():
    with pytest.raises(yaml.YAMLError):
        upstream.configmap_config(entry(selectors={'ifNames': ["it's"]}))


def test_the_image_spec_restatement_refuses_a_component_without_a_version():
    spec = {'repository': 'nvcr.io/nvidia/mellanox', 'image': 'k8s-rdma-shared-dev-plugin'}
    assert upstream.image_spec_errors(spec) == ['version is required']


# --- settings the plugin refuses are refused before anything changes --------------------
# Each case is a setting the role's documented interface accepts and the plugin exits on (or
# offers no device with): preflight refuses it, naming the setting (extended_resource_problem for
# the name, rdma_plugin_selectors_problem through the network_operator role's validation).


NAMES_THE_PLUGIN_REFUSES = ['rdma-shared', 'rdma.shared']
PLUGIN_CASES = {
    'hca-negative': ({'network_operator_rdma_hca_max': -1}, 'rdmaHcaMax < 0'),
    'hca-zero': ({'network_operator_rdma_hca_max': 0}, ''),
    'no-selector': ({'network_operator_rdma_drivers': [], 'network_operator_rdma_vendors': [],
                     'network_operator_rdma_ifnames': []}, 'neither "selectors" nor "devices"'),
}


@pytest.mark.parametrize('name', NAMES_THE_PLUGIN_REFUSES)
def test_the_plugin_exits_on_a_resource_name_kubernetes_accepts_with_a_dash_or_dot(name):
    assert upstream.webhook_rdma_config_errors(plugin_config('26.4.1', ipu_k8s_rdma_resource_name=name)) == []
    error, _ = upstream.plugin_resources(plugin_config('26.4.1', ipu_k8s_rdma_resource_name=name))
    assert 'contains invalid characters' in error


@pytest.mark.parametrize('case', sorted(PLUGIN_CASES))
def test_the_plugin_exits_or_offers_nothing_on_these_device_plugin_settings(case):
    settings, words = PLUGIN_CASES[case]
    error, resources = upstream.plugin_resources(plugin_config('26.4.1', **settings))
    if words:
        assert words in error
    else:
        assert (error, resources) == ('', [('rdma/rdma_shared_device_a', 0)])  # starts, offers no device


@pytest.mark.parametrize('name', NAMES_THE_PLUGIN_REFUSES)
def test_a_resource_name_the_plugin_refuses_is_refused_by_the_resource_name_rule(name):
    assert checks.extended_resource_problem({'ipu_k8s_rdma_resource_prefix': 'rdma',
                                             'ipu_k8s_rdma_resource_name': name}) != '', (
        'ipu_k8s_rdma_resource_name %r passes the project\'s check, and the plugin exits on it' % name)


@pytest.fixture(scope='module')
def validate_failures(tmp_path_factory):
    """The network_operator validate entry point (what preflight runs), one local host per case."""
    # The 26.4.1 row, with a site digest (NGC publishes none): the rest is the role's defaults.
    row = {'ipu_k8s_kubernetes_version': '1.34.2', 'network_operator_chart_sha256': 'ab' * 32}
    hosts = {case: dict(settings, **row) for case, (settings, _) in PLUGIN_CASES.items()}
    hosts['defaults'] = row
    return role_validate_failures(tmp_path_factory.mktemp('network_operator_rules_validate'), 'network_operator', hosts)


@pytest.mark.parametrize('case', sorted(PLUGIN_CASES))
def test_a_device_plugin_setting_the_plugin_refuses_is_refused_by_the_roles_validation(case, validate_failures):
    settings, _ = PLUGIN_CASES[case]
    assert case in validate_failures, 'the role accepts %s' % settings
    assert any(name in validate_failures[case] for name in settings), validate_failures[case]
