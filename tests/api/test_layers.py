"""The API-facing layers, run for real (playbooks/*.yml through ansible-playbook) against a
real kube-apiserver v1.20.2 with hollow nodes, in journey order on one server: each layer
twice (the second run changes nothing), with the refusals and timeouts a site can meet.

The tests of this module build on each other (the order of a site's journey): a failure
early makes the later ones fail too; read the first one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import threading

import pytest
from kubernetes import watch

from testlib import client_lock_pins
from api_site import CONTROL_PLANE, IPU_NODES, NODES, RDMA_INTERFACE, VIPU_LABEL
from api_client import (Api, advertise_rdma_resource, helm, network_operator_run, play_macvlan_operator, releases,
                        report_rows)

NETWORK_OPERATOR_NS = 'network-operator'
IPU_OPERATOR_NS = 'ipu-operator'
RDMA_RESOURCE = 'rdma/rdma_shared_device_a'


def _client_version(python) -> str:
    return subprocess.run([str(python), '-c', 'import kubernetes; print(kubernetes.__version__)'],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope='module')
def site(site):
    """This module's site with a client virtualenv of its own (not the one the session's sites
    share, conftest.py): the first test asserts that its first run made it."""
    site.client_venv = site.dir / 'kubernetes-client'
    return site


# --- helm role + network operator ---------------------------------------------------------

def test_network_operator_installs_helm_the_release_and_the_policy(site, api):
    run = network_operator_run(site, api).assert_ok()
    assert (site.helm_install_dir / 'helm').exists(), 'the helm role installed no helm'
    # The control plane's system python has the old client (Ubuntu 22.04's 12.0.1); the
    # layer made its own virtualenv with the pinned client and its API tasks ran with it.
    assert _client_version(site.system_python) == '12.0.1'
    pinned = client_lock_pins()
    assert 'kubernetes==' + _client_version(site.client_venv / 'bin' / 'python3') in pinned
    assert any(t.startswith(f'{CONTROL_PLANE}: ') and 'Keep the Kubernetes client virtualenv' in t
               for t in run.changed_tasks()), run.changed_tasks()
    assert f'{CONTROL_PLANE}: helm : Install the helm binary' in run.changed_tasks()
    release = releases(site)[f'{NETWORK_OPERATOR_NS}/network-operator']
    assert (release['status'], release['chart']) == ('deployed', 'network-operator-25.4.0')
    # The server registered the real CRDs the chart carries and accepted the rendered policy.
    for crd in ('nicclusterpolicies.mellanox.com', 'macvlannetworks.mellanox.com'):
        assert api.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', crd), crd
    policy = api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
    assert policy['spec']['rdmaSharedDevicePlugin']['image'] == 'k8s-rdma-shared-dev-plugin'
    config = json.loads(policy['spec']['rdmaSharedDevicePlugin']['config'])
    assert config['configList'][0]['resourceName'] == 'rdma_shared_device_a'
    deployment = api.get('apps/v1', 'Deployment', 'network-operator', NETWORK_OPERATOR_NS)
    assert deployment['status']['availableReplicas'] == 1


def test_network_operator_second_run_changes_nothing(site, api):
    network_operator_run(site, api).assert_unchanged()
    assert releases(site)[f'{NETWORK_OPERATOR_NS}/network-operator']['revision'] == 1


def test_network_operator_upgrades_the_release_to_a_new_chart(site, api):
    new_chart = site.make_network_operator_chart('25.4.1', '2')
    new_chart_vars = {'network_operator_chart_local_path': str(new_chart),
                      'network_operator_chart_sha256': hashlib.sha256(new_chart.read_bytes()).hexdigest()}
    run = network_operator_run(site, api, extra_vars=new_chart_vars)
    run.assert_ok()
    assert any('Install the NVIDIA Network Operator chart' in t for t in run.changed_tasks()), run.changed_tasks()
    release = releases(site)[f'{NETWORK_OPERATOR_NS}/network-operator']
    assert (release['revision'], release['chart']) == (2, 'network-operator-25.4.1')
    deployment = api.get('apps/v1', 'Deployment', 'network-operator', NETWORK_OPERATOR_NS)
    assert deployment['metadata']['labels']['revision-marker'] == '2'
    assert deployment['status'].get('availableReplicas') == 1, 'helm --wait returned before the upgrade was up'
    site.extra_vars.update(new_chart_vars)
    network_operator_run(site, api).assert_unchanged()


def test_a_malformed_nicclusterpolicy_is_refused_by_the_server(site, api):
    # The site's table (its stand-in IPU Operator chart pinned by its own sha256), one field broken.
    table = copy.deepcopy(site.inventory()['all']['vars']['ipu_k8s_versions'])
    for row in table['network_operator'].values():
        if 'images' in row:
            row['images']['rdma_shared_device_plugin']['image'] = '!!!'
    run = network_operator_run(site, api, extra_vars={'ipu_k8s_versions': table})
    assert run.rc != 0
    failures = ' '.join(run.failures())
    assert 'spec.rdmaSharedDevicePlugin.image' in failures and '!!!' in failures, failures
    policy = api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
    assert policy['spec']['rdmaSharedDevicePlugin']['image'] == 'k8s-rdma-shared-dev-plugin', 'a refused policy changed it'


# --- RDMA network -------------------------------------------------------------------------

def test_rdma_network_without_the_operator_fails_after_its_timeout_naming_what_is_missing(site, api):
    # The shortest wait the role's 5 s tries allow: nothing answers it here.
    run = site.play('rdma_network.yml', extra_vars={'rdma_network_wait_timeout': 5})
    assert run.rc != 0
    messages = ' '.join(run.failures())
    assert 'MacvlanNetwork rdma-net was not ready after 5s' in messages, messages
    assert 'network operator' in messages.lower()
    # The facts came from the IPU nodes' own routes (their namespaces), and the object
    # the layer applied passed the real CRD's schema.
    facts = run.results('Derive the RDMA interface, subnet, MTU and excluded range')
    assert {h: r['ansible_facts']['rdma_network']['interface'] for h, r in facts.items()} == \
        {node: RDMA_INTERFACE for node in IPU_NODES}
    macvlan = api.get('mellanox.com/v1alpha1', 'MacvlanNetwork', 'rdma-net')
    assert macvlan['spec']['master'] == RDMA_INTERFACE
    assert json.loads(macvlan['spec']['ipam'])['range'] == '10.247.208.0/23'


def test_rdma_network_passes_when_the_operator_answers_and_reruns_unchanged(site, api):
    play_macvlan_operator(api, 'rdma-net', 'default', site.cni_dir)
    site.play('rdma_network.yml').assert_ok()
    site.play('rdma_network.yml').assert_unchanged()


# --- IPU operator -------------------------------------------------------------------------

def test_ipu_operator_installs_crd_release_and_labels_only_the_ipu_nodes(site, api):
    run = site.play('ipu_operator.yml').assert_ok()
    assert api.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'ipujobs.graphcore.ai')
    release = releases(site)[f'{IPU_OPERATOR_NS}/ipu-operator']
    assert (release['status'], release['chart']) == ('deployed', 'ipu-operator-1.2.0')
    key, value = VIPU_LABEL.split('=')
    labels = api.node_labels()
    assert {n for n in NODES if labels[n].get(key) == value} == set(IPU_NODES), labels
    assert key not in labels[CONTROL_PLANE], 'the control-plane node was labelled'
    assert any('Label each IPU node' in t for t in run.changed_tasks())
    site.play('ipu_operator.yml').assert_unchanged()


def test_ipu_operator_refuses_an_ipu_node_that_is_not_a_kubernetes_node(site, api):
    inventory = site.inventory()
    # poplar-09 is a Poplar server (its facts derive in poplar-01's namespace) in the inventory's
    # workers that never joined: the settings pass, the cluster has no such node.
    inventory['all']['children']['ipu_nodes']['hosts']['poplar-09'] = None
    inventory['all']['children']['k8s_cluster']['children']['workers']['hosts']['poplar-09'] = {
        'ansible_python_interpreter': str(site.interpreters['poplar-01'])}
    before = api.node_labels()
    run = site.play('ipu_operator.yml', inventory=inventory)
    assert run.rc != 0
    messages = ' '.join(run.failures())
    assert 'poplar-09' in messages and 'not Kubernetes nodes' in messages, messages
    assert api.node_labels() == before, 'a node was patched although one IPU node is missing'


# --- verify's cluster checks --------------------------------------------------------------

def test_verify_fails_the_rdma_resource_row_before_the_device_plugin_reports_it(site):
    # The test pod cannot be scheduled either (the scheduler says so at once): give it 10 s,
    # not the site's timeout.
    run = site.play('verify.yml', '--tags', 'verify_cluster', extra_vars={'verify_test_pod_timeout': 10})
    assert run.rc != 0, 'verify passed although no node advertises the RDMA resource'
    report = report_rows(site)
    rows = [r for r in report if r['check'] == RDMA_RESOURCE + ' allocatable']
    assert {r['host']: r['status'] for r in rows} == {node: 'FAIL' for node in IPU_NODES}, rows
    # The test pod's row says why the pod is not Ready: the scheduler's words.
    [pod_row] = [r for r in report if r['check'].startswith('RDMA test pod Ready')]
    assert pod_row['status'] == 'FAIL' and 'Unschedulable' in pod_row['observed'], pod_row
    assert 'Insufficient ' + RDMA_RESOURCE in pod_row['observed'], pod_row


TEST_POD = 'ipu-k8s-verify-rdma'


def _watch_pod(api, name, seen, stop):
    """Every state of the pods called name the server holds, as it served them (the verify
    run removes its test pod before it ends, so the test reads it while it lives)."""
    listed = api.core.list_pod_for_all_namespaces(field_selector='metadata.name=%s' % name)
    seen.extend(api.client.sanitize_for_serialization(pod) for pod in listed.items)
    version = listed.metadata.resource_version
    while not stop.is_set():
        for event in watch.Watch().stream(api.core.list_pod_for_all_namespaces, resource_version=version,
                                          field_selector='metadata.name=%s' % name, timeout_seconds=1):
            pod = api.client.sanitize_for_serialization(event['object'])
            version = pod['metadata']['resourceVersion']
            seen.append(pod)


def _play_watching_the_test_pod(site, api, *args):
    """site.play(*args) and the test pod's states while it ran (its own API client)."""
    seen, stop = [], threading.Event()
    watcher = threading.Thread(target=_watch_pod, args=(Api(api.kubeconfig), TEST_POD, seen, stop), daemon=True)
    watcher.start()
    try:
        return site.play(*args), seen
    finally:
        stop.set()
        watcher.join(timeout=10)


def test_verify_cluster_checks_pass_on_hollow_nodes_and_skip_what_needs_exec(site, api):
    for node in IPU_NODES:
        advertise_rdma_resource(api, node, RDMA_RESOURCE)
    run, pods = _play_watching_the_test_pod(site, api, 'verify.yml', '--tags', 'verify_cluster')
    run.assert_ok()
    rows = report_rows(site)
    by_check = {}
    for row in rows:
        by_check.setdefault(row['check'], []).append(row)
    assert [r['status'] for r in by_check['nodes Ready']] == ['PASS']
    assert {r['host']: r['status'] for r in by_check[RDMA_RESOURCE + ' allocatable']} == \
        {node: 'PASS' for node in IPU_NODES}
    pod_row = [r for c, rs in by_check.items() if c.startswith('RDMA test pod Ready') for r in rs]
    assert [r['status'] for r in pod_row] == ['PASS'], pod_row
    assert 'hostNetwork false' in pod_row[0]['observed']
    exec_rows = [r for r in rows if r['check'].startswith('test pod ')]
    assert len(exec_rows) == 3 and all(r['status'] == 'SKIP' for r in exec_rows), exec_rows
    assert all('fakeRuntime' in r['observed'] and 'exec' in r['observed'] for r in exec_rows), exec_rows
    # The node checks that read the cluster ran on each IPU node and recorded their rows.
    for check in ('Multus and Whereabouts CNI files', 'rdma-net matches the node'):
        assert {r['host'] for r in by_check.get(check, [])} == set(IPU_NODES), (check, by_check.get(check))
    operator_rows = [r for r in rows if r['check'] in ('Network Operator pods Ready', 'IPU Operator pods Ready')]
    assert len(operator_rows) == 2 and all(r['status'] == 'PASS' for r in operator_rows), operator_rows
    # The stand-in IPU Operator chart makes no webhook Secret (the real 1.2.0 chart does).
    cert_rows = by_check['IPU Operator webhook certificate']
    assert [r['status'] for r in cert_rows] == ['SKIP'] and 'makes no webhook certificate' in cert_rows[0]['observed']
    assert not [r for r in rows if r['status'] == 'FAIL'], rows
    # The test pod ran where the layers said, as the server held it: scheduled on an IPU
    # node, as uid 1000 (the guide's normal user), no container privileged, no hostNetwork.
    scheduled = [p for p in pods if p['spec'].get('nodeName')]
    assert scheduled, 'the server never held the test pod on a node: %s' % pods
    for pod in scheduled:
        spec = pod['spec']
        assert spec['nodeName'] in IPU_NODES, spec['nodeName']
        assert not spec.get('hostNetwork'), spec
        for container in spec['containers']:
            context = container.get('securityContext') or {}
            assert context.get('runAsUser', (spec.get('securityContext') or {}).get('runAsUser')) == 1000, spec
            assert not context.get('privileged'), container
    left = api.get('v1', 'Pod', TEST_POD, pods[-1]['metadata']['namespace'])
    assert left is None or left['metadata'].get('deletionTimestamp'), 'verify left its test pod: %s' % left
    site.play('verify.yml', '--tags', 'verify_cluster').assert_unchanged()


def test_verify_starts_the_bandwidth_pods_on_two_ipu_nodes_and_removes_them(site, api):
    # Hollow nodes run both pods without a container: they become Ready on the first two
    # IPU nodes (a pod that does not would FAIL the row with its diagnosis), and the first
    # step inside the client, an exec, fails the row, naming it.
    site.play('verify.yml', '--tags', 'verify_cluster',
              extra_vars={'verify_rdma_perftest': True, 'verify_fail_on_failed_checks': False}).assert_ok()
    [row] = [r for r in report_rows(site) if r['check'].startswith('RDMA traffic between two pods')]
    assert row['status'] == 'FAIL' and row['observed'].startswith("Read net1's link rate in the client: "), row
    left = api.core.list_pod_for_all_namespaces(label_selector='app.kubernetes.io/name=ipu-k8s-verify').items
    assert all(p.metadata.deletion_timestamp for p in left), [p.metadata.name for p in left]


# --- reset (its API part only) ------------------------------------------------------------

RESET_ARGS = ('--tags', 'reset_cluster_objects')


def _reset(site, **extra_vars):
    """Runs reset.yml with RESET_ARGS on a control-plane host whose node state is the test's own
    files (a kubeadm stand-in that logs its calls, a kubeadm state file, a CNI file, a
    JoinConfiguration), and checks that its API part left them all: never `kubeadm reset`,
    CNI or JoinConfiguration deletion on this host."""
    node = site.dir / 'reset-node'
    node.mkdir(exist_ok=True)
    kubeadm, log = node / 'kubeadm', node / 'kubeadm.log'
    kubeadm.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    kubeadm.chmod(0o755)
    state, cni, join = (node / name for name in ('kubelet.conf', '10-calico.conflist', 'ipu-k8s-join.yaml'))
    for path in (state, cni, join):
        path.write_text('left by the test\n')
    run = site.play('reset.yml', *RESET_ARGS, extra_vars={
        **extra_vars, 'reset_kubeadm_binary': str(kubeadm), 'reset_kubeadm_state_files': [str(state)],
        'reset_cni_paths': [str(cni)], 'ipu_k8s_join_config_path': str(join)})
    assert not log.exists(), log.read_text()
    assert state.exists() and cni.exists() and join.exists()
    return run


def test_reset_refuses_without_confirmation(site, api):
    before = api.snapshot()
    run = _reset(site)
    assert run.rc != 0
    assert any('reset_confirm=true' in m for m in run.failures()), run.failures()
    assert api.snapshot() == before


def test_reset_removes_exactly_the_projects_releases_and_custom_resources(site, api):
    # A bystander release and MacvlanNetwork that are not the project's.
    proc = helm(site, 'install', 'bystander', str(site.ipu_operator_chart), '--namespace', 'bystander',
                '--create-namespace', '--skip-crds')
    assert proc.returncode == 0, proc.stderr
    other = api.get('mellanox.com/v1alpha1', 'MacvlanNetwork', 'rdma-net')
    other = {'apiVersion': other['apiVersion'], 'kind': other['kind'], 'metadata': {'name': 'other-net'},
             'spec': other['spec']}
    api.apply(other)
    # An IPUJob as the real CRD (ipu-operator 1.2.0) requires: instances, IPUs and a worker.
    job = {'apiVersion': 'graphcore.ai/v1alpha1', 'kind': 'IPUJob',
           'metadata': {'name': 'left-over', 'namespace': 'default'},
           'spec': {'jobInstances': 1, 'ipusPerJobInstance': '1',
                    'workers': {'template': {'spec': {'containers': [{'name': 'worker', 'image': 'busybox'}]}}}}}
    api.apply(job)
    assert api.names('graphcore.ai/v1alpha1', 'IPUJob') == ['default/left-over']

    _reset(site, reset_confirm=True).assert_ok()
    left = releases(site)
    assert set(left) == {'bystander/bystander'}, left
    assert api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy') is None
    assert api.names('mellanox.com/v1alpha1', 'MacvlanNetwork') == ['other-net']
    assert api.names('graphcore.ai/v1alpha1', 'IPUJob') == []
    _reset(site, reset_confirm=True).assert_unchanged()
