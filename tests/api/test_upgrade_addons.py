"""The add-ons after an upgrade (playbooks/upgrade.yml, tag upgrade_addons), against a real
kube-apiserver with the stand-ins of tests/api/test_upgrade.py (kubeadm, apt-get, dpkg,
systemctl; the Packages index served on 127.0.0.1). The Network Operator row of the target
minor may run another IPAM than the NicClusterPolicy the cluster runs: Whereabouts up to chart
25.7 (secondaryNetwork.ipamPlugin), NVIDIA IPAM from 25.10 (nvIpam). Kubernetes 1.33's row is
25.7.0 and 1.34's is 26.4.1, so 1.33 -> 1.34 is such a move: the plan refuses it before any
node changes, naming the steps; with the same IPAM on both sides the check passes and the
upgrade goes on. The policy is applied with release 25.7.0's own CRD
(tests/schemas/network_operator/crds/). test_upgrade.py runs Kubernetes alone
(--skip-tags upgrade_addons, the move's step 2)."""

from __future__ import annotations

import pytest

from api_site import CONTROL_PLANE, operator_crd
from test_upgrade import Upgrade, kubeadm_config, package_source

CLUSTER = '1.33.7'
TARGET = '1.34.4'
CHECK = 'Refuse to move a running RDMA network to another IPAM'
WHEREABOUTS = {'secondaryNetwork': {'ipamPlugin': {'image': 'whereabouts', 'repository': 'ghcr.io/k8snetworkplumbingwg',
                                                   'version': 'v0.7.0'}}}
NV_IPAM = {'nvIpam': {'image': 'nvidia-k8s-ipam', 'repository': 'nvcr.io/nvidia/mellanox',
                      'version': 'network-operator-v25.7.0', 'enableWebhook': False}}


@pytest.fixture(scope='module')
def repository(tmp_path_factory):
    with package_source(tmp_path_factory, CLUSTER, TARGET) as url:
        yield url


@pytest.fixture(scope='module')
def upgrade(site, api, k8s_bin, repository, tmp_path_factory):
    made = Upgrade(site, api, k8s_bin, repository, tmp_path_factory.mktemp('upgrade'))
    api.apply_file(operator_crd('25.7.0', 'nicclusterpolicies'))
    api.wait_crd('nicclusterpolicies.mellanox.com')
    return made


def start(upgrade, api, spec):
    """The cluster at CLUSTER on every host, running a NicClusterPolicy with SPEC."""
    for host in upgrade.hosts:
        upgrade.install(host, CLUSTER)
    api.apply(kubeadm_config(CLUSTER))
    if api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy'):
        api.resource('mellanox.com/v1alpha1', 'NicClusterPolicy').delete(name='nic-cluster-policy')
    api.apply({'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
               'metadata': {'name': 'nic-cluster-policy'}, 'spec': spec})
    upgrade.log.unlink(missing_ok=True)


def run(upgrade, *args, **kwargs):
    """upgrade.yml with its add-ons (test_upgrade.py's runs skip them)."""
    return upgrade.site.play('upgrade.yml', '--skip-tags', ','.join(('kubernetes_packages_repository', *args)),
                             inventory=upgrade.inventory(), **kwargs)


def cluster_version(api) -> str:
    config = api.get('v1', 'ConfigMap', 'kubeadm-config', 'kube-system')
    return config['data']['ClusterConfiguration'].split('kubernetesVersion: v')[1].split()[0]


def test_a_move_to_another_ipam_is_refused_before_any_node_changes(upgrade, api):
    start(upgrade, api, WHEREABOUTS)
    result = run(upgrade, extra_vars={'ipu_k8s_kubernetes_version': TARGET})
    assert result.rc != 0, result.explain()
    message = ' '.join(' '.join(result.failures()).split())
    assert ("The cluster's NicClusterPolicy runs Whereabouts, and Kubernetes 1.34's Network Operator row "
            "(chart 26.4.1) runs NVIDIA IPAM instead") in message, message
    assert 'Nothing was changed' in message and 'playbooks/upgrade.yml --skip-tags upgrade_addons' in message, message
    assert upgrade.calls() == [], upgrade.calls()
    assert cluster_version(api) == CLUSTER
    assert all(upgrade.installed(host)['kubeadm'] == CLUSTER + '-1.1' for host in upgrade.hosts)


def test_the_same_ipam_on_both_sides_passes_and_the_upgrade_goes_on(upgrade, api):
    start(upgrade, api, NV_IPAM)
    # The add-on layers themselves need the real charts of the new rows; their roles are
    # skipped here, the check and the plays around it run.
    result = run(upgrade, 'calico', 'helm', 'network_operator', 'ipu_operator',
                 extra_vars={'ipu_k8s_kubernetes_version': TARGET}).assert_ok()
    assert CONTROL_PLANE in result.results(CHECK), result.explain()
    assert cluster_version(api) == TARGET
    assert all(upgrade.installed(host)['kubeadm'] == TARGET + '-1.1' for host in upgrade.hosts)
