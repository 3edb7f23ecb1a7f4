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
