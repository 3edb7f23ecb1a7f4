"""The Installation the calico role renders, judged by the Tigera operator's validation of the
fields it sets (tests/calico_upstream.py restates it, citing its lines; the list of rules and the
test of each: tests/schemas/calico/README.md)."""

import sys

import pytest
import yaml

from ipu_k8s_render import ROOT, render_role_template, role_validate_failures

sys.path.insert(0, str(ROOT / 'tests'))
import calico_upstream as upstream  # noqa: E402


def installation(**overrides):
    overrides.setdefault('ansible_managed', 'Ansible managed')  # what the template module gives
    documents = yaml.safe_load_all(render_role_template('calico', 'custom-resources.yaml.j2', overrides))
    return next(d for d in documents if d['kind'] == 'Installation')


@pytest.mark.parametrize('overrides', [
    {},
    {'ipu_k8s_cluster_interface': 'eno1'},
    {'calico_encapsulation': 'IPIP', 'calico_nat_outgoing': False, 'calico_block_size': 24, 'calico_mtu': 1450},
], ids=['defaults', 'cluster-interface', 'every-setting'])
def test_the_installation_passes_the_operators_validation(overrides):
    assert upstream.installation_errors(installation(**overrides)) == []


@pytest.mark.parametrize('overrides, words', [
    ({'calico_encapsulation': 'vxlan'}, 'invalid for ipPool.encapsulation'),
    ({'calico_block_size': 19}, 'block size must be greater than 19'),
    ({'ipu_k8s_pod_subnet': '192.168.0.0/27'}, 'IP pool size is too small'),
    ({'ipu_k8s_pod_subnet': '192.168.0.0/33'}, 'CIDR'),
])
def test_the_pool_restatement_refuses_what_the_operator_refuses(overrides, words):
    assert words in ' '.join(upstream.installation_errors(installation(**overrides)))


def test_the_detection_restatement_refuses_two_methods():
    errors = upstream.node_address_detection_errors({'interface': '^eno1$', 'kubernetes': 'NodeInternalIP'})
    assert errors == ['no more than one node address autodetection method can be specified per-family']


def test_the_pool_restatement_refuses_an_unknown_nat_outgoing():
    pool = installation()['spec']['calicoNetwork']['ipPools'][0]
    assert 'invalid for natOutgoing' in upstream.pool_errors([dict(pool, natOutgoing='true')])[0]


# --- a setting the operator refuses is refused before anything changes ---------------------

def test_the_roles_encapsulation_choices_are_the_operators():
    specs = yaml.safe_load((ROOT / 'roles' / 'calico' / 'meta' / 'argument_specs.yml').read_text())
    choices = specs['argument_specs']['main']['options']['calico_encapsulation']['choices']
    assert sorted(choices) == sorted(upstream.ENCAPSULATIONS)


@pytest.fixture(scope='module')
def validate_failures(tmp_path_factory):
    """The calico validate entry point (what preflight runs), one local host per case."""
    return role_validate_failures(tmp_path_factory.mktemp('calico_rules_validate'), 'calico', {'encapsulation': {'calico_encapsulation': 'vxlan'}, 'defaults': {}})


def test_an_encapsulation_the_operator_refuses_is_refused_by_the_roles_validation(validate_failures):
    assert 'invalid for ipPool.encapsulation' in ' '.join(
        upstream.installation_errors(installation(calico_encapsulation='vxlan')))
    assert 'calico_encapsulation' in validate_failures['encapsulation'], validate_failures
