"""The data-path probe's address (filter_plugins/verify_observe.py)."""

import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_observe', ROOT / 'filter_plugins' / 'verify_observe.py')
verify_datapath = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_datapath)

pick = verify_datapath.verify_datapath_address


def test_the_highest_address_below_the_broadcast():
    # The integration test's /23: node .209.200, V-IPU .208.10 in the excluded first /25.
    assert pick('10.247.208.0/23', ['10.247.208.0/25'], ['10.247.209.200', '10.247.208.10']) == '10.247.209.254'


def test_taken_and_excluded_addresses_are_passed_over():
    taken = ['10.247.209.254', '10.247.209.253/23']
    excludes = ['10.247.208.0/25', '10.247.209.252/32', '10.247.209.248/30']
    assert pick('10.247.208.0/23', excludes, taken) == '10.247.209.247'
    assert pick('10.247.208.0/23', excludes + ['10.247.209.247/32'], taken) == '10.247.209.246'


def test_a_pinned_address_wins():
    assert pick('10.247.208.0/23', [], [], '10.247.209.77') == '10.247.209.77'


def refused(*args):
    with pytest.raises(AnsibleFilterError) as refusal:
        pick(*args)
    return refusal.value.message


def test_nothing_free_is_refused_with_the_fix():
    # /29: .1-.6 usable; all taken or excluded.
    assert refused('192.0.2.0/29', ['192.0.2.4/30'], ['192.0.2.1', '192.0.2.2', '192.0.2.3']) == (
        "No usable probe address in 192.0.2.0/29 outside 192.0.2.4/30 (got ''). Set verify_datapath_address to a "
        "free address of that range.")
    # Never the network address.
    assert refused('192.0.2.0/30', [], ['192.0.2.1', '192.0.2.2']).startswith('No usable probe address in 192.0.2.0/30')


@pytest.mark.parametrize('pinned', ['10.247.208.20', '10.247.210.1', 'node-a'])
def test_a_pinned_address_in_an_exclude_outside_the_subnet_or_not_an_address_is_refused(pinned):
    assert refused('10.247.208.0/23', ['10.247.208.0/25'], [], pinned) == (
        "No usable probe address in 10.247.208.0/23 outside 10.247.208.0/25 (got '%s'). Set verify_datapath_address "
        "to a free address of that range." % pinned)


def test_only_256_addresses_from_the_top_are_tried():
    # broadcast-1 down to broadcast-256: 10.1.255.254 ... 10.1.254.255.
    assert pick('10.0.0.0/15', ['10.1.255.0/24'], []) == '10.1.254.255'
    assert refused('10.0.0.0/15', ['10.1.255.0/24', '10.1.254.255/32'], []).startswith('No usable probe address')


def test_a_neighbour_entry_that_is_not_an_address_is_ignored_and_a_bad_cidr_is_refused():
    assert pick('192.0.2.0/24', [], ['fe80::1%eth0', None, '192.0.2.254']) == '192.0.2.253'
    with pytest.raises(AnsibleFilterError, match='verify_datapath_address'):
        pick('192.0.2.0/33', [], [])


def test_a_subnet_and_excludes_written_with_host_bits_are_read_as_their_networks():
    # the node's own address/prefix, as `ip addr` shows it, names the same /29 (.1-.6)
    assert pick('192.0.2.5/29', ['192.0.2.6/31'], []) == '192.0.2.5'
    assert pick('192.0.2.0/29', ['192.0.2.5/30'], []) == '192.0.2.3'


def test_a_pinned_address_is_trimmed_and_no_lists_mean_nothing_to_avoid():
    assert pick('192.0.2.0/24', None, None, ' 192.0.2.9 ') == '192.0.2.9'
    assert pick('192.0.2.0/24', None, None) == '192.0.2.254'


def test_a_bad_cidr_is_refused_quoting_python():
    with pytest.raises(AnsibleFilterError) as refused:
        pick('192.0.2.0/33', [], [])
    assert refused.value.message == "verify_datapath_address: '192.0.2.0/33' does not appear to be an IPv4 or IPv6 network"


def test_the_plugin_offers_the_filter():
    assert verify_datapath.FilterModule().filters()['verify_datapath_address'] is pick
