"""Runs interrupted midway, against a real kube-apiserver (its own server): what the next run
of playbooks/network_operator.yml finds and finishes.

- A Helm release left pending-install (the state a helm killed during its first install
  leaves: the release secret's status, written here) is uninstalled and installed again;
  one left pending-upgrade is rolled back to its deployed revision.
- The chart's own pods are awaited by the role, not by Helm: a Node Feature Discovery
  master that cannot be scheduled fails the run naming its pod and the scheduler's reason.
- A run killed right after applying a NicClusterPolicy whose RDMA shared device plugin
  selectors changed: the next run restarts the plugin pods (which read their configuration
  only at start) and marks them with the configuration's hash; a further run changes nothing.
  The killed run has no operator beside it, so the ConfigMap the restart waits for cannot
  carry the new configuration before the kill lands: the kill comes before the restart
  whatever the machine's load. (What a race between the restart and the mark does is
  tests/api/test_plugin_marks.py.)

The module's first test installs the release (fixture `installed`); the others start from
the state that install left, checked on the server, and run the layer first only when a test
before them changed that state (at_the_install, deployed_release), so each holds alone and
in any order without a run of its own that proves nothing new.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import time

import pytest

from api_client import helm, network_operator_run, releases

NAMESPACE = 'network-operator'
RELEASE = 'network-operator'
PLUGIN = 'app=rdma-shared-dp'
CONFIG_ANNOTATION = 'ipu-k8s/rdma-plugin-config-sha256'


def plugin_pods(api, count=3, timeout=120) -> dict:
    """name -> uid of the plugin pods (one per hollow node), once `count` run and none is
    terminating."""
    deadline = time.monotonic() + timeout
    while True:
        pods = api.core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN).items
        live = {p.metadata.name: p.metadata.uid for p in pods if not p.metadata.deletion_timestamp}
        if len(live) == count == len(pods):
            return live
        assert time.monotonic() < deadline, 'plugin pods: %s' % [(p.metadata.name, p.status.phase) for p in pods]
        time.sleep(1)


def plugin_config_sha256(api) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of the configuration the
    operator wrote into its ConfigMap: what a plugin pod started now reads."""
    config = json.loads(api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)['data']['config.json'])
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(',', ':')).encode()).hexdigest()


def plugin_pod_marks(api) -> dict:
    return {p.metadata.name: (p.metadata.annotations or {}).get(CONFIG_ANNOTATION)
            for p in api.core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN).items}


@pytest.fixture(scope='module')
def installed(site, api):
    """The module's first run of the layer (the install, the operator played beside it) and the
    plugin configuration its NicClusterPolicy carries: the state every test starts from."""
    run = network_operator_run(site, api)
    run.assert_ok()
    return run, _policy_config(api)


def _policy_config(api) -> dict:
    policy = api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
    return json.loads(policy['spec']['rdmaSharedDevicePlugin']['config']) if policy else {}


def _release_deployed(site) -> bool:
    release = releases(site).get(f'{NAMESPACE}/{RELEASE}')
    return bool(release) and (release['chart'], release['status']) == ('network-operator-25.4.0', 'deployed')


def at_the_install(site, api, installed) -> None:
    """The release deployed at the module's chart and the NicClusterPolicy the install applied,
    its plugin pods marked: as the install left them, or, when a test before changed them, as
    a run of the layer with the install's settings leaves them."""
    _, config = installed
    if not (_release_deployed(site) and _policy_config(api) == config):
        network_operator_run(site, api).assert_ok()


def test_install_and_rerun_leave_the_plugin_pods_alone(site, api, installed):
    run, _ = installed
    assert any('Install the NVIDIA Network Operator chart' in t for t in run.changed_tasks()), run.changed_tasks()
    at_the_install(site, api, installed)
    # The role waited for the chart's workloads: NFD's master and a worker on every node.
    worker = api.get('apps/v1', 'DaemonSet', 'network-operator-node-feature-discovery-worker', NAMESPACE)
    assert worker['status']['numberReady'] == worker['status']['desiredNumberScheduled'] == 3, worker['status']
    master = api.get('apps/v1', 'Deployment', 'network-operator-node-feature-discovery-master', NAMESPACE)
    assert master['status'].get('availableReplicas') == 1, master['status']
    pods = plugin_pods(api)
    assert plugin_pod_marks(api) == {name: plugin_config_sha256(api) for name in pods}
    network_operator_run(site, api).assert_unchanged()
    assert plugin_pods(api) == pods, 'a rerun restarted the plugin'


def test_a_run_killed_after_the_policy_changed_restarts_the_plugin_on_the_next_run(site, api, installed):
    at_the_install(site, api, installed)
    before = plugin_pods(api)
    selectors = {'network_operator_rdma_ifnames': ['rdma0']}

    # No operator plays beside this run (site.play, not network_operator_run): nothing writes the
    # new configuration into the ConfigMap, so the run cannot get past its wait for it.
    killed = site.play('network_operator.yml', extra_vars=selectors, kill_after='Apply the NicClusterPolicy')
    assert killed.status == 'canceled', killed.explain()
    assert '"rdma0"' not in api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)['data']['config.json']
    policy = api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
    assert json.loads(policy['spec']['rdmaSharedDevicePlugin']['config'])['configList'][0]['selectors'][
        'ifNames'] == ['rdma0']
    assert plugin_pods(api) == before, 'the run was killed too late: it restarted the plugin'

    network_operator_run(site, api, extra_vars=selectors).assert_ok()
    after = plugin_pods(api)
    assert not set(after.values()) & set(before.values()), 'plugin pods kept from before the change: %s' % after
    config_json = api.get('v1', 'ConfigMap', 'rdma-devices', NAMESPACE)['data']['config.json']
    assert '"rdma0"' in config_json, config_json
    assert plugin_pod_marks(api) == {name: plugin_config_sha256(api) for name in after}

    network_operator_run(site, api, extra_vars=selectors).assert_unchanged()
    assert plugin_pods(api) == after, 'a rerun restarted the plugin'


# --- Helm releases left pending -------------------------------------------------------------

def _release_secret(api, revision):
    return api.core.read_namespaced_secret('sh.helm.release.v1.%s.v%d' % (RELEASE, revision), NAMESPACE)


def _decode(secret) -> dict:
    # The API's base64 of helm's base64 of the gzipped release JSON.
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret.data['release']))))


def _encode(release: dict) -> str:
    return base64.b64encode(base64.b64encode(gzip.compress(json.dumps(release).encode()))).decode()


def _write_release(api, release: dict, create: bool) -> None:
    """Store `release` (decoded) as helm's secrets driver does: data and labels."""
    name = 'sh.helm.release.v1.%s.v%d' % (release['name'], release['version'])
    body = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'helm.sh/release.v1',
            'metadata': {'name': name, 'namespace': NAMESPACE,
                         'labels': {'name': release['name'], 'owner': 'helm', 'status': release['info']['status'],
                                    'version': str(release['version'])}},
            'data': {'release': _encode(release)}}
    if create:
        api.core.create_namespaced_secret(NAMESPACE, body)
    else:
        api.core.replace_namespaced_secret(name, NAMESPACE, body)


def deployed_release(site, api, first: bool = False) -> dict:
    """The release deployed at the module's chart, as the install left it or, when a test
    before changed it, as a run of the layer leaves it (every test of this file stands alone);
    its deployed revision, decoded. first: the release's only revision (1), as a first install
    leaves it: a release with a history is uninstalled and installed again by a run first."""
    if not _release_deployed(site):
        network_operator_run(site, api).assert_ok()
    release = releases(site)[f'{NAMESPACE}/{RELEASE}']
    if first and release['revision'] != 1:
        proc = helm(site, 'uninstall', RELEASE, '--namespace', NAMESPACE, '--wait')
        assert proc.returncode == 0, proc.stderr
        network_operator_run(site, api).assert_ok()
        release = releases(site)[f'{NAMESPACE}/{RELEASE}']
        assert release['revision'] == 1, release
    assert (release['chart'], release['status']) == ('network-operator-25.4.0', 'deployed'), release
    return _decode(_release_secret(api, release['revision']))


def test_a_release_left_pending_install_is_installed_afresh(site, api, installed):
    release = deployed_release(site, api, first=True)
    release['info']['status'] = 'pending-install'
    _write_release(api, release, create=False)
    assert releases(site)[f'{NAMESPACE}/{RELEASE}']['status'] == 'pending-install'

    run = network_operator_run(site, api).assert_ok()
    assert 'no revision was ever deployed, so it is uninstalled and installed again' in run.stdout, run.explain()
    assert releases(site)[f'{NAMESPACE}/{RELEASE}'] == {'chart': 'network-operator-25.4.0', 'status': 'deployed',
                                                       'revision': 1}
    assert api.get('apps/v1', 'Deployment', RELEASE, NAMESPACE)


def test_a_release_left_pending_upgrade_is_rolled_back_to_its_deployed_revision(site, api, installed):
    release = deployed_release(site, api)
    deployed = release['version']
    release['version'] = deployed + 1
    release['info']['status'] = 'pending-upgrade'
    release['info']['description'] = 'Preparing upgrade'
    _write_release(api, release, create=True)
    assert releases(site)[f'{NAMESPACE}/{RELEASE}']['status'] == 'pending-upgrade'

    run = network_operator_run(site, api).assert_ok()
    assert 'rolling back to revision %d, the last deployed' % deployed in run.stdout, run.explain()
    assert releases(site)[f'{NAMESPACE}/{RELEASE}']['status'] == 'deployed'
    network_operator_run(site, api).assert_unchanged()


# --- the chart's own pods: the role's diagnosing waits, not Helm's ---------------------------

def test_a_node_feature_discovery_master_that_cannot_start_is_named_with_the_reason(site, api):
    chart = site.make_network_operator_chart('25.4.1', 'nfd-stuck',
                                             nfd_master_node_selector='ipu-k8s-test/absent: "true"')
    run = network_operator_run(site, api, extra_vars={
        'network_operator_chart_local_path': str(chart), 'network_operator_wait_timeout': 20,
        'network_operator_chart_sha256': hashlib.sha256(chart.read_bytes()).hexdigest()})
    assert run.rc != 0
    failures = ' '.join(run.failures())
    assert 'Node Feature Discovery master' in failures, failures
    assert 'network-operator-node-feature-discovery-master-' in failures and "didn't match Pod's node affinity" in failures, \
        failures
