"""filter_plugins/rdma_shared_device_plugin.py: which RDMA shared device plugin pods run with an
older configuration than the operator's ConfigMap holds. Objects shaped as the API server
returns them (metadata.creationTimestamp, managedFields[].time: RFC 3339, whole seconds)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_shared_device_plugin', ROOT / 'filter_plugins' / 'rdma_shared_device_plugin.py')
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


def test_a_pod_created_in_the_second_of_the_write_stays():
    # A fresh install: the operator writes the ConfigMap and the DaemonSet together.
    cm = configmap(NEW, created='2026-11-25T23:10:04Z', writes=['2026-11-25T23:10:04Z'])
    assert stale([pod('a', '2026-11-25T23:10:04Z')], cm, NEW) == []
    assert stale([pod('a', '2026-11-25T23:10:03Z')], cm, NEW) == ['a']


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


# --- selectors against the node's RDMA NIC --------------------------------------------------

selector = restart.rdma_plugin_selector_problem
# As sysfs reads on a ConnectX NIC: device/vendor holds "0x15b3\n", device/driver links to mlx5_core.
CONNECTX = {'interface': 'ens1f0', 'vendor': '0x15b3\n', 'driver': 'mlx5_core'}


def test_selectors_that_hold_the_nics_values_pass():
    assert selector(CONNECTX, 'poplar-01', ['ens1f0', 'ens1f1'], ['15b3'], ['mlx5_core']) == ''


def test_empty_selector_lists_do_not_filter():
    assert selector(CONNECTX, 'poplar-01', [], [], []) == ''


def test_ifnames_without_the_rdma_interface_are_refused_naming_setting_value_and_nic():
    problem = selector(CONNECTX, 'poplar-01', ['enp65s0f0'], [], ['mlx5_core'])
    assert "network_operator_rdma_ifnames is ['enp65s0f0'], which does not hold its interface ens1f0" in problem
    assert problem.startswith('On poplar-01 the RDMA NIC')
    assert 'network_operator_rdma_drivers' not in problem


def test_vendor_ids_compare_as_the_plugin_reads_them():
    # The plugin's vendor IDs are "15b3": "0x15B3" in the inventory is the same NIC.
    assert selector(CONNECTX, 'poplar-01', [], ['0x15B3'], []) == ''
    problem = selector(CONNECTX, 'poplar-01', [], ['8086'], [])
    assert "network_operator_rdma_vendors is ['8086'], which does not hold its vendor 15b3" in problem


def test_a_driver_the_nic_does_not_use_is_refused():
    problem = selector(dict(CONNECTX, driver='mlx4_core'), 'poplar-02', [], [], ['mlx5_core'])
    assert "network_operator_rdma_drivers is ['mlx5_core'], which does not hold its driver mlx4_core" in problem
    assert 'rdma/rdma_shared_device_a' in problem


def test_every_wrong_setting_is_named_in_one_message():
    problem = selector(CONNECTX, 'poplar-01', ['eth9'], ['8086'], ['ice'])
    assert problem.count('which does not hold') == 3


def test_unreadable_vendor_and_driver_are_not_judged():
    nic = {'interface': 'rdma0', 'vendor': None, 'driver': None}
    assert selector(nic, 'poplar-01', ['rdma0'], ['15b3'], ['mlx5_core']) == ''
