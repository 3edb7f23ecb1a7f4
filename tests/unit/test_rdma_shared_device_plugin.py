"""plugins/filter/rdma_shared_device_plugin.py: device-plugin selectors against the RDMA NIC
an IPU node derived, with the NIC's values as sysfs reads them."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_shared_device_plugin', ROOT / 'plugins' / 'filter' / 'rdma_shared_device_plugin.py')
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


def pod(name, sha256=None, terminating=False, uid=None):
    metadata = {'name': name, 'uid': uid or 'uid-' + name, 'annotations': {'kubectl.kubernetes.io/restartedAt': 'x'}}
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


# --- the mark step: only pods created after the restart step saw the ConfigMap carry it ---------

def configmap(resource_version):
    return {'metadata': {'name': 'rdma-devices', 'resourceVersion': resource_version}, 'data': {'config.json': CONFIG}}


def test_the_restart_step_records_the_configmap_version_and_every_pod_it_saw():
    restart = marks([pod('a', CONFIG_SHA256), pod('b'), pod('c', OTHER_SHA256, terminating=True)], CONFIG,
                    configmap('812'))
    assert restart['unmarked'] == ['b'] and restart['settled'] is False
    assert restart['seen'] == {'resourceVersion': '812', 'uids': ['uid-a', 'uid-b', 'uid-c']}
    assert marks([pod('a', CONFIG_SHA256)], CONFIG, configmap('812'))['settled'] is True


def test_replacements_created_after_the_restart_step_are_marked():
    seen = marks([pod('a', CONFIG_SHA256), pod('b')], CONFIG, configmap('812'))['seen']
    after = marks([pod('a', CONFIG_SHA256), pod('b2'), pod('new-node')], CONFIG, configmap('812'), seen)
    assert after['unmarked'] == ['b2', 'new-node']
    assert after['settled'] is True


def test_a_pod_the_restart_step_saw_is_never_marked():
    # Listed (unmarked) when the restart began: it may have started before the ConfigMap changed,
    # whatever it is named now and however new its creationTimestamp looks.
    seen = marks([pod('b', uid='u-1')], CONFIG, configmap('812'))['seen']
    after = marks([pod('b', uid='u-1'), pod('c')], CONFIG, configmap('812'), seen)
    assert after['unmarked'] == ['c']
    assert after['settled'] is False


def test_nothing_is_marked_once_the_configmap_was_written_after_the_restart_step():
    # Written back with the same text, too: a pod may have started from what it held meanwhile.
    seen = marks([pod('b')], CONFIG, configmap('812'))['seen']
    after = marks([pod('b2'), pod('c2')], CONFIG, configmap('815'), seen)
    assert after['unmarked'] == []
    assert after['settled'] is False


def test_a_missing_configmap_marks_nothing():
    seen = marks([pod('b')], CONFIG, configmap('812'))['seen']
    assert marks([pod('b2')], CONFIG, None, seen)['unmarked'] == []


def test_marked_pods_settle_the_mark_step_whatever_the_configmap():
    seen = marks([pod('a', CONFIG_SHA256)], CONFIG, configmap('812'))['seen']
    assert marks([pod('a', CONFIG_SHA256)], CONFIG, configmap('812'), seen)['settled'] is True
