"""filter_plugins/rdma_shared_device_plugin.py: device-plugin selectors against the RDMA NIC
an IPU node derived, with the NIC's values as sysfs reads them."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_shared_device_plugin', ROOT / 'filter_plugins' / 'rdma_shared_device_plugin.py')
plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plugin)

selector = plugin.rdma_plugin_selector_problem
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


# --- which running plugin pods may hold an older configuration --------------------------------

marks = plugin.rdma_plugin_config_marks
ANNOTATION = 'ipu-k8s/rdma-plugin-config-sha256'
# The policy's config as the operator's ConfigMap may spell it (spaces, key order)...
CONFIG = ('{"configList": [{"resourceName": "rdma_shared_device_a", "rdmaHcaMax": 63, '
          '"selectors": {"ifNames": ["ens1f0"]}}]}')
# ...and the sha256 of its canonical text, from coreutils:
# printf '%s' '{"configList":[{"rdmaHcaMax":63,"resourceName":"rdma_shared_device_a",\
#   "selectors":{"ifNames":["ens1f0"]}}]}' | sha256sum   (one line)
CONFIG_SHA256 = 'eda5b816e719850d72bc8dcd87667e53795930457e5bc0e9bba1f4a5ba04b773'
# the same with ifNames ["ens1f1"]
OTHER_SHA256 = 'bed758b42d978bdb099c9c197360db9f6ee3b481e7295daa70da41899942db08'


def pod(name, sha256=None, terminating=False):
    metadata = {'name': name, 'annotations': {'kubectl.kubernetes.io/restartedAt': 'x'}}
    if sha256 is not None:
        metadata['annotations'][ANNOTATION] = sha256
    if terminating:
        metadata['deletionTimestamp'] = '2026-11-26T00:00:00Z'
    return {'metadata': metadata}


def test_the_hash_is_the_sha256_of_the_canonical_json_whatever_the_spelling():
    assert marks([], CONFIG)['sha256'] == CONFIG_SHA256
    pretty = ('{\n  "configList": [{"selectors": {"ifNames": ["ens1f0"]}, "rdmaHcaMax": 63,\n'
              '  "resourceName": "rdma_shared_device_a"}]\n}')
    assert marks([], pretty)['sha256'] == CONFIG_SHA256
    assert marks([], CONFIG.replace('ens1f0', 'ens1f1'))['sha256'] == OTHER_SHA256


def test_pods_marked_with_the_configuration_are_left_alone():
    pods = [pod('rdma-shared-dp-ds-a', CONFIG_SHA256), pod('rdma-shared-dp-ds-b', CONFIG_SHA256)]
    assert marks(pods, CONFIG)['unmarked'] == []


def test_a_pod_marked_with_another_configuration_is_unmarked():
    result = marks([pod('rdma-shared-dp-ds-a', CONFIG_SHA256), pod('rdma-shared-dp-ds-b', OTHER_SHA256)], CONFIG)
    assert result['unmarked'] == ['rdma-shared-dp-ds-b']


def test_a_pod_without_the_annotation_is_unmarked():
    # It may have started before a killed run changed the configuration: restarted once.
    assert marks([pod('rdma-shared-dp-ds-b'), {'metadata': {'name': 'rdma-shared-dp-ds-a'}}],
                 CONFIG)['unmarked'] == ['rdma-shared-dp-ds-a', 'rdma-shared-dp-ds-b']


def test_terminating_pods_are_neither_restarted_nor_marked():
    assert marks([pod('rdma-shared-dp-ds-a', OTHER_SHA256, terminating=True), pod('rdma-shared-dp-ds-b')],
                 CONFIG)['unmarked'] == ['rdma-shared-dp-ds-b']


def test_no_pods_nothing_to_do():
    assert marks(None, CONFIG)['unmarked'] == []


def test_the_mark_is_a_metadata_patch_of_the_annotation_only():
    assert marks([], CONFIG)['mark'] == {'metadata': {'annotations': {ANNOTATION: CONFIG_SHA256}}}
