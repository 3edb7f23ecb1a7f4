"""filter_plugins/rdma_plugin_restart.py: which RDMA shared device plugin pods run with an
older configuration than the operator's ConfigMap holds. Objects shaped as the API server
returns them (metadata.creationTimestamp, managedFields[].time: RFC 3339, whole seconds)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_plugin_restart', ROOT / 'filter_plugins' / 'rdma_plugin_restart.py')
restart = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(restart)
stale = restart.rdma_plugin_stale_pods

NEW = {'configList': [{'resourceName': 'rdma_shared_device_a', 'rdmaHcaMax': 63,
                       'selectors': {'ifNames': ['ens1f0']}}]}
OLD = {'configList': [{'resourceName': 'rdma_shared_device_a', 'rdmaHcaMax': 63,
                       'selectors': {'drivers': ['mlx5_core']}}]}


def pod(name, created, terminating=False):
    metadata = {'name': name, 'namespace': 'network-operator', 'creationTimestamp': created}
    if terminating:
        metadata['deletionTimestamp'] = '2026-11-25T23:30:00Z'
    return {'metadata': metadata, 'status': {'phase': 'Running'}}


def configmap(config, created='2026-11-25T22:00:00Z', writes=()):
    managed = [{'manager': 'manager', 'operation': 'Update', 'time': t} for t in writes]
    return {'metadata': {'name': 'rdma-devices', 'creationTimestamp': created, 'managedFields': managed},
            'data': {'config.json': json.dumps(config)}}


def test_pods_created_before_the_configmaps_last_write_restart():
    cm = configmap(NEW, writes=['2026-11-25T22:00:00Z', '2026-11-25T23:10:04Z'])
    pods = [pod('rdma-shared-dp-ds-a', '2026-11-25T22:00:07Z'), pod('rdma-shared-dp-ds-b', '2026-11-25T23:10:09Z')]
    assert stale(pods, cm, json.dumps(NEW)) == ['rdma-shared-dp-ds-a']


def test_pods_created_after_the_last_write_stay():
    cm = configmap(NEW, writes=['2026-11-25T23:10:04Z'])
    assert stale([pod('a', '2026-11-25T23:10:05Z')], cm, NEW) == []


def test_a_pod_created_in_the_same_second_as_the_write_restarts():
    cm = configmap(NEW, writes=['2026-11-25T23:10:04Z'])
    assert stale([pod('a', '2026-11-25T23:10:04Z')], cm, NEW) == ['a']


def test_the_newest_managed_field_time_counts_whatever_its_order():
    # Entries are per writer, not in time order: the label writer came after the operator.
    cm = configmap(NEW, writes=['2026-11-25T23:50:00Z', '2026-11-25T23:10:04Z'])
    assert stale([pod('a', '2026-11-25T23:20:00Z')], cm, NEW) == ['a']


def test_without_managed_fields_the_configmaps_creation_counts():
    cm = configmap(NEW, created='2026-11-25T23:10:04Z')
    del cm['metadata']['managedFields']
    assert stale([pod('a', '2026-11-25T23:00:00Z'), pod('b', '2026-11-25T23:11:00Z')], cm, NEW) == ['a']


def test_every_pod_restarts_while_the_configmap_holds_another_configuration():
    # Check mode, or the operator has not written the policy's configuration yet.
    cm = configmap(OLD, writes=['2026-11-25T22:00:00Z'])
    assert stale([pod('b', '2026-11-25T23:00:00Z'), pod('a', '2026-11-25T23:00:00Z')], cm, NEW) == ['a', 'b']


def test_every_pod_restarts_when_there_is_no_configmap():
    assert stale([pod('a', '2026-11-25T23:00:00Z')], None, NEW) == ['a']


def test_same_configuration_spelt_otherwise_is_the_same():
    cm = configmap(NEW, writes=['2026-11-25T22:00:00Z'])
    cm['data']['config.json'] = json.dumps(NEW, indent=4, sort_keys=True)
    assert restart.rdma_plugin_config_written(cm, json.dumps(NEW))
    assert stale([pod('a', '2026-11-25T23:00:00Z')], cm, json.dumps(NEW)) == []


def test_unreadable_configmap_json_is_not_the_configuration():
    cm = configmap(NEW)
    cm['data']['config.json'] = '{not json'
    assert not restart.rdma_plugin_config_written(cm, NEW)


def test_terminating_pods_are_left_to_finish():
    cm = configmap(NEW, writes=['2026-11-25T23:10:04Z'])
    assert stale([pod('a', '2026-11-25T22:00:00Z', terminating=True)], cm, NEW) == []


def test_no_pods_nothing_to_restart():
    assert stale([], configmap(NEW), NEW) == []
    assert stale(None, None, NEW) == []
