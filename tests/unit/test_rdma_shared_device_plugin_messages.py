"""plugins/filter/rdma_shared_device_plugin.py: the selector refusal word for word, vendor ids
however sysfs or an operator spells them, and a NIC with no interface."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_shared_device_plugin',
                                               ROOT / 'plugins' / 'filter' / 'rdma_shared_device_plugin.py')
plugin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plugin)

CONNECTX = {'interface': 'ens1f0', 'vendor': '0x15b3\n', 'driver': 'mlx5_core'}


def test_every_wrong_selector_in_one_message_word_for_word():
    assert plugin.rdma_plugin_selector_problem(CONNECTX, 'node-a', ['ens2f0'], ['0x8086'], ['ice'],
                                               resource='rdma/ipu_rdma') == (
        "On node-a the RDMA NIC (the interface its V-IPU address is routed through) has interface ens1f0, vendor "
        "15b3, driver mlx5_core. network_operator_rdma_ifnames is ['ens2f0'], which does not hold its interface "
        "ens1f0; network_operator_rdma_vendors is ['0x8086'], which does not hold its vendor 15b3; "
        "network_operator_rdma_drivers is ['ice'], which does not hold its driver mlx5_core: the RDMA shared device "
        "plugin would offer no device there, and the node no rdma/ipu_rdma. Put the NIC's value in the list, or "
        "leave the list empty (no filter).")


def test_the_default_resource_is_the_plugins_first():
    assert plugin.rdma_plugin_selector_problem(CONNECTX, 'n', [], [], ['ice']).endswith(
        'and the node no rdma/rdma_shared_device_a. Put the NIC\'s value in the list, or leave the list empty '
        '(no filter).')


def test_vendor_ids_match_with_or_without_0x_in_any_case():
    for vendor in (['0X15B3'], ['15b3'], [' 0x15B3 ']):
        assert plugin.rdma_plugin_selector_problem(CONNECTX, 'n', None, vendor, None) == ''
    assert plugin.rdma_plugin_selector_problem(dict(CONNECTX, vendor='15B3'), 'n', None, ['0x15b3'], None) == ''


def test_a_nic_without_an_interface_says_none():
    problem = plugin.rdma_plugin_selector_problem({'interface': None, 'vendor': None, 'driver': None}, 'n',
                                                  ['ens1f0'], ['0x15b3'], ['mlx5_core'])
    assert problem.startswith("On n the RDMA NIC (the interface its V-IPU address is routed through) has interface . "
                              "network_operator_rdma_ifnames is ['ens1f0'], which does not hold its interface (none): ")


def test_a_driver_selector_compares_as_text():
    assert plugin.rdma_plugin_selector_problem(dict(CONNECTX, driver='5'), 'n', None, None, [5]) == ''


def test_a_nic_whose_vendor_reads_empty_says_none():
    assert "which does not hold its vendor (none)" in plugin.rdma_plugin_selector_problem(
        dict(CONNECTX, vendor=''), 'n', None, ['0x15b3'], None)


def test_the_configuration_hash_is_the_same_for_its_text_and_its_parsed_value():
    # sha256sum of the canonical text '{"a":"x","b":[1]}'
    digest = '6c17667416e4e6be6ecc8334b4bf4c09e6763cb51e57a0fc3e2dfe72ec71fa81'
    assert plugin.rdma_plugin_config_sha256({'b': [1], 'a': 'x'}) == digest
    assert plugin.rdma_plugin_config_sha256('{ "b": [1],\n  "a": "x" }') == digest
