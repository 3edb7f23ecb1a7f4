"""plugins/filter/rdma_network_check.py at its edges: adjacent or overlapping exclusion ranges,
an exclude at a range's ends, malformed applied values, MTUs equal or missing, the IPAM as a
dict or a list, and each FAIL's whole observed text."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_network_check', ROOT / 'plugins' / 'filter' / 'rdma_network_check.py')
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

RDMA = {'interface': 'enp65s0f1', 'cidr': '10.247.208.0/24', 'mtu': 9000, 'excludes': ['10.247.208.0/25']}


def macvlan(ipam, master='enp65s0f1', mtu=9000):
    return {'spec': {'master': master, 'mtu': mtu, 'ipam': ipam if isinstance(ipam, dict) else json.dumps(ipam)}}


def whereabouts(exclude=('10.247.208.0/25',), **changes):
    return macvlan({'type': 'whereabouts', 'range': '10.247.208.0/24', 'exclude': list(exclude)}, **changes)


NV = macvlan({'type': 'nv-ipam', 'poolName': 'rdma-net'})


def pool(*ranges, subnet='10.247.208.0/24'):
    return {'spec': {'subnet': subnet, 'exclusions': [{'startIP': a, 'endIP': b} for a, b in ranges]}}


def status(*args):
    return check.rdma_network_comparison(*args)['status']


def test_an_ipam_given_as_a_dict_is_read_as_it_is():
    assert check.macvlan_ipam(whereabouts(mtu=1)) == {'type': 'whereabouts', 'range': '10.247.208.0/24',
                                                      'exclude': ['10.247.208.0/25']}
    ipam = {'type': 'whereabouts', 'range': '10.247.208.0/24', 'exclude': ['10.247.208.0/25']}
    assert check.macvlan_ipam(macvlan(ipam)) is not None and status(RDMA, macvlan(ipam)) == 'PASS'


@pytest.mark.parametrize('text', ['[1, 2]', '"whereabouts"', ''])
def test_an_ipam_that_is_no_json_object_is_empty(text):
    assert check.macvlan_ipam({'spec': {'ipam': text}}) == {}


def test_adjacent_exclusion_ranges_join_but_a_gap_of_one_address_does_not():
    assert status(RDMA, NV, pool(('10.247.208.0', '10.247.208.63'), ('10.247.208.64', '10.247.208.127'))) == 'PASS'
    assert status(RDMA, NV, pool(('10.247.208.0', '10.247.208.62'), ('10.247.208.64', '10.247.208.127'))) == 'FAIL'


def test_a_range_inside_an_earlier_one_does_not_shorten_it():
    assert status(RDMA, NV, pool(('10.247.208.0', '10.247.208.127'), ('10.247.208.5', '10.247.208.6'))) == 'PASS'


def test_an_exclude_on_the_last_address_of_a_range_is_covered():
    rdma = dict(RDMA, excludes=['10.247.208.127/32', '10.247.208.0/32'])
    assert status(rdma, NV, pool(('10.247.208.0', '10.247.208.127'))) == 'PASS'
    rdma = dict(RDMA, excludes=['10.247.208.128/32'])
    assert status(rdma, NV, pool(('10.247.208.0', '10.247.208.127'))) == 'FAIL'


@pytest.mark.parametrize('exclusions', [[{'startIP': '10.247.208.0'}], [{'startIP': 'x', 'endIP': 'y'}], [None]])
def test_malformed_exclusions_fail(exclusions):
    given = {'spec': {'subnet': '10.247.208.0/24', 'exclusions': exclusions}}
    assert status(RDMA, NV, given) == 'FAIL'


def test_a_malformed_whereabouts_exclude_fails():
    assert status(RDMA, whereabouts(exclude=['10.247.208.0/33'])) == 'FAIL'


def test_an_exclude_split_over_two_adjacent_applied_ones_is_covered():
    # Whereabouts excludes the union: 10.247.208.0/26 and 10.247.208.64/26 are 10.247.208.0/25.
    assert status(RDMA, whereabouts(exclude=['10.247.208.64/26', '10.247.208.0/26'])) == 'PASS'
    assert status(RDMA, whereabouts(exclude=['10.247.208.0/26', '10.247.208.65/32'])) == 'FAIL'


def test_an_exclude_inside_a_larger_applied_one_is_covered():
    assert status(RDMA, whereabouts(exclude=['10.247.208.0/24'])) == 'PASS'


@pytest.mark.parametrize('mtu, result', [(9000, 'PASS'), (8999, 'PASS'), (9001, 'FAIL'), ('jumbo', 'FAIL'),
                                         (None, 'PASS')])
def test_the_applied_mtu_may_equal_the_nodes(mtu, result):
    assert status(RDMA, whereabouts(mtu=mtu)) == result


def test_a_node_without_an_mtu_accepts_only_no_mtu():
    assert status(dict(RDMA, mtu=None), whereabouts(mtu=None)) == 'PASS'
    assert status(dict(RDMA, mtu=None), whereabouts(mtu=1500)) == 'FAIL'


def test_an_unknown_ipam_fails_with_every_field():
    assert check.rdma_network_comparison(RDMA, macvlan({'type': 'host-local'})) == {
        'ipam': 'host-local', 'status': 'FAIL',
        'expected': 'master=enp65s0f1 range=10.247.208.0/24 exclude=10.247.208.0/25 mtu<=9000',
        'observed': "MacvlanNetwork IPAM type 'host-local' is neither whereabouts nor nv-ipam"}


def test_a_missing_pool_fails_with_every_field():
    assert check.rdma_network_comparison(RDMA, NV, {}) == {
        'ipam': 'nv-ipam', 'status': 'FAIL',
        'expected': 'master=enp65s0f1 subnet=10.247.208.0/24 exclude=10.247.208.0/25 mtu<=9000',
        'observed': 'NVIDIA IPAM pool rdma-net named by the MacvlanNetwork not found: run playbooks/rdma_network.yml'}


def test_nothing_derived_and_nothing_applied_shows_question_marks():
    assert check.rdma_network_comparison(None, {'spec': {'ipam': {'type': 'whereabouts'}}}) == {
        'ipam': 'whereabouts', 'status': 'FAIL', 'expected': 'master=? range=? exclude= mtu<=?',
        'observed': 'master=? range=? exclude= mtu=?'}
    nameless = check.rdma_network_comparison(RDMA, macvlan({'type': 'nv-ipam'}), {'spec': {'exclusions': ['odd']}})
    assert nameless['observed'] == 'pool=? master=enp65s0f1 subnet=? exclude=odd mtu=9000'


def test_a_pool_exclusion_without_ends_is_shown_with_question_marks():
    given = {'spec': {'subnet': '10.247.208.0/24', 'exclusions': [{'startIP': '10.247.208.0'}]}}
    assert 'exclude=10.247.208.0-? ' in check.rdma_network_comparison(RDMA, NV, given)['observed']


def test_an_applied_exclude_written_with_host_bits_covers_its_network():
    assert status(RDMA, whereabouts(exclude=['10.247.208.1/25'])) == 'PASS'


def test_a_pool_exclusion_without_a_start_is_shown_with_a_question_mark():
    given = {'spec': {'subnet': '10.247.208.0/24', 'exclusions': [{'endIP': '10.247.208.127'}]}}
    assert 'exclude=?-10.247.208.127 ' in check.rdma_network_comparison(RDMA, NV, given)['observed']


def test_an_ipam_without_a_type_is_named_as_empty():
    assert check.rdma_network_comparison(RDMA, macvlan({'range': '10.247.208.0/24'}))['observed'] == (
        "MacvlanNetwork IPAM type '' is neither whereabouts nor nv-ipam")


def test_a_node_without_an_mtu_refuses_even_the_smallest_applied_one():
    assert status(dict(RDMA, mtu=None), whereabouts(mtu=1)) == 'FAIL'


def test_the_uncovered_excludes_follow_the_whole_observed_text():
    assert check.rdma_network_comparison(RDMA, whereabouts(exclude=[]))['observed'] == (
        'master=enp65s0f1 range=10.247.208.0/24 exclude= mtu=9000 (not excluded: 10.247.208.0/25)')


def test_a_node_without_a_subnet_never_matches_even_an_empty_range():
    given = macvlan({'type': 'whereabouts', 'range': '', 'exclude': []})
    assert status(dict(RDMA, cidr=None, excludes=[]), given) == 'FAIL'
    assert status({'interface': 'enp65s0f1', 'mtu': 9000}, given) == 'FAIL'
