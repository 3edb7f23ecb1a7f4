"""plugins/filter/helm_release.py helm_fullname: the fullname helper of the charts the roles
install, as their templates/_helpers.tpl define it (Sprig's trunc 63 | trimSuffix "-")."""
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    'helm_release', Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'helm_release.py')
helm_release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helm_release)


# templates/_helpers.tpl "ipu-operator.fullname" (charts 1.1.0 and 1.2.0), which names the webhook Secret.
@pytest.mark.parametrize('release, values, fullname', [
    ('ipu-operator', {}, 'ipu-operator'),
    ('my-ipu-operator', {}, 'my-ipu-operator'),
    ('graphcore', {}, 'graphcore-ipu-operator'),
    ('graphcore', {'nameOverride': 'ipu'}, 'graphcore-ipu'),
    ('graphcore', {'fullnameOverride': 'ops'}, 'ops'),
    ('r' * 55, {}, 'r' * 55 + '-ipu-ope'),
    ('r' * 58, {}, 'r' * 58 + '-ipu'),
    ('r' * 62, {}, 'r' * 62),
])
def test_the_secret_is_named_as_the_chart_names_it(release, values, fullname):
    assert helm_release.helm_fullname(release, 'ipu-operator', values) == fullname


@pytest.mark.parametrize('release, fullname', [
    # NFD's fullname helper (network-operator 25.4.0, charts/node-feature-discovery/templates/_helpers.tpl):
    # the release name when it contains the chart name, else <release>-node-feature-discovery, cut to 63
    # characters without a trailing dash.
    ('network-operator', 'network-operator-node-feature-discovery'),
    ('node-feature-discovery-net', 'node-feature-discovery-net'),
    ('a' * 40, 'a' * 40 + '-node-feature-discovery'[:23]),
    ('b' * 41, 'b' * 41 + '-node-feature-discover'),
    ('c' * 62, 'c' * 62),
])
def test_node_feature_discovery_workloads_are_named_as_the_subchart_names_them(release, fullname):
    assert helm_release.helm_fullname(release, 'node-feature-discovery') == fullname


@pytest.mark.parametrize('release, fullname', [
    # "network-operator.fullname" (Mellanox/network-operator deployment/network-operator/templates/_helpers.tpl).
    ('network-operator', 'network-operator'),
    ('nvidia-network-operator', 'nvidia-network-operator'),
    ('rdma', 'rdma-network-operator'),
    ('n' * 50, 'n' * 50 + '-network-oper'),
])
def test_the_operator_deployment_is_named_as_the_network_operator_chart_names_it(release, fullname):
    assert helm_release.helm_fullname(release, 'network-operator') == fullname


@pytest.mark.parametrize('override, fullname', [('o' * 70, 'o' * 63), ('o' * 62 + '-x', 'o' * 62),
                                                ('ops-', 'ops')])
def test_a_full_name_override_is_cut_as_the_chart_cuts_it(override, fullname):
    assert helm_release.helm_fullname('graphcore', 'ipu-operator', {'fullnameOverride': override}) == fullname


def test_a_release_name_holding_the_chart_name_is_the_full_name():
    assert helm_release.helm_fullname('prod-ipu-operator-2', 'ipu-operator', None) == 'prod-ipu-operator-2'
