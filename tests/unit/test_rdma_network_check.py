"""plugins/filter/rdma_network_check.py: the verify comparison of a node's derived RDMA
network with the applied MacvlanNetwork (Whereabouts IPAM) or with the NVIDIA IPAM IPPool
the MacvlanNetwork names, on objects shaped as the API server returns them."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_network_check', ROOT / 'plugins' / 'filter' / 'rdma_network_check.py')
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)

RDMA = {'interface': 'enp65s0f1', 'cidr': '10.247.208.0/24', 'mtu': 9000,
        'excludes': ['10.247.208.0/25', '10.247.208.201/32']}


def macvlan(ipam, master='enp65s0f1', mtu=1500):
    return {'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'MacvlanNetwork', 'metadata': {'name': 'rdma-net'},
            'spec': {'networkNamespace': 'default', 'master': master, 'mode': 'bridge', 'mtu': mtu,
                     'ipam': json.dumps(ipam)}}


def whereabouts(range_='10.247.208.0/24', exclude=('10.247.208.0/25', '10.247.208.200/29')):
    return macvlan({'type': 'whereabouts', 'datastore': 'kubernetes', 'range': range_, 'exclude': list(exclude)})


NV = macvlan({'type': 'nv-ipam', 'poolName': 'rdma-net'})


def ippool(subnet='10.247.208.0/24', exclusions=None):
    if exclusions is None:
        exclusions = [{'startIP': '10.247.208.0', 'endIP': '10.247.208.127'},
                      {'startIP': '10.247.208.201', 'endIP': '10.247.208.201'}]
    return {'apiVersion': 'nv-ipam.nvidia.com/v1alpha1', 'kind': 'IPPool',
            'metadata': {'name': 'rdma-net', 'namespace': 'network-operator'},
            'spec': {'subnet': subnet, 'perNodeBlockSize': 40, 'exclusions': exclusions}}


def test_whereabouts_network_that_covers_the_node_passes():
    result = check.rdma_network_comparison(RDMA, whereabouts())
    assert result['status'] == 'PASS', result
    assert result['ipam'] == 'whereabouts'
    assert result['expected'] == 'master=enp65s0f1 range=10.247.208.0/24 exclude=10.247.208.0/25,10.247.208.201/32 mtu<=9000'
    assert result['observed'] == ('master=enp65s0f1 range=10.247.208.0/24 exclude=10.247.208.0/25,10.247.208.200/29 '
                                  'mtu=1500')


def test_whereabouts_mismatches_fail_each():
    assert check.rdma_network_comparison(RDMA, whereabouts(range_='10.247.209.0/24'))['status'] == 'FAIL'
    assert check.rdma_network_comparison(RDMA, macvlan({'type': 'whereabouts', 'range': '10.247.208.0/24',
                                                        'exclude': ['10.247.208.0/25', '10.247.208.201/32']},
                                                       master='eth9'))['status'] == 'FAIL'
    bigger_mtu = whereabouts()
    bigger_mtu['spec']['mtu'] = 9000
    assert check.rdma_network_comparison(dict(RDMA, mtu=1500), bigger_mtu)['status'] == 'FAIL'
    uncovered = check.rdma_network_comparison(RDMA, whereabouts(exclude=['10.247.208.0/25']))
    assert uncovered['status'] == 'FAIL'
    assert uncovered['observed'].endswith('(not excluded: 10.247.208.201/32)')


def test_nv_ipam_reads_subnet_and_exclusions_from_the_pool():
    result = check.rdma_network_comparison(RDMA, NV, ippool())
    assert result['status'] == 'PASS', result
    assert result['ipam'] == 'nv-ipam'
    assert result['expected'].startswith('master=enp65s0f1 subnet=10.247.208.0/24 ')
    assert result['observed'] == ('pool=rdma-net master=enp65s0f1 subnet=10.247.208.0/24 '
                                  'exclude=10.247.208.0-10.247.208.127,10.247.208.201-10.247.208.201 mtu=1500')


def test_nv_ipam_exclusion_ranges_are_merged_before_covering():
    split = ippool(exclusions=[{'startIP': '10.247.208.64', 'endIP': '10.247.208.127'},
                               {'startIP': '10.247.208.0', 'endIP': '10.247.208.63'},
                               {'startIP': '10.247.208.200', 'endIP': '10.247.208.207'}])
    assert check.rdma_network_comparison(RDMA, NV, split)['status'] == 'PASS'


def test_nv_ipam_mismatches_fail():
    assert check.rdma_network_comparison(RDMA, NV, ippool(subnet='10.247.209.0/24'))['status'] == 'FAIL'
    short = check.rdma_network_comparison(RDMA, NV, ippool(exclusions=[{'startIP': '10.247.208.0',
                                                                      'endIP': '10.247.208.126'}]))
    assert short['status'] == 'FAIL'
    assert 'not excluded: 10.247.208.0/25,10.247.208.201/32' in short['observed']
    missing = check.rdma_network_comparison(RDMA, NV, None)
    assert missing['status'] == 'FAIL'
    assert missing['observed'].startswith('NVIDIA IPAM pool rdma-net named by the MacvlanNetwork not found')


def test_a_whereabouts_network_is_never_read_as_a_pool_and_back():
    # The nv-ipam MacvlanNetwork has no range of its own: without the pool it cannot pass.
    assert check.rdma_network_comparison(RDMA, NV)['status'] == 'FAIL'
    # A pool next to a Whereabouts MacvlanNetwork is not what pods use: its IPAM decides.
    assert check.rdma_network_comparison(RDMA, whereabouts(range_='10.0.0.0/24'), ippool())['status'] == 'FAIL'


def test_unknown_or_unreadable_ipam_fails_and_says_so():
    odd = check.rdma_network_comparison(RDMA, macvlan({'type': 'host-local'}))
    assert odd['status'] == 'FAIL' and "'host-local'" in odd['observed']
    broken = {'spec': {'master': 'enp65s0f1', 'mtu': 1500, 'ipam': '{not json'}}
    assert check.macvlan_ipam(broken) == {}
    assert check.rdma_network_comparison(RDMA, broken)['status'] == 'FAIL'
    assert check.macvlan_ipam(None) == {}


def test_ipam_label_names_what_was_looked_for():
    assert check.ipam_label('whereabouts') == 'Whereabouts'
    assert check.ipam_label('nv-ipam') == 'NVIDIA IPAM'
    assert check.ipam_label('') == 'Whereabouts or NVIDIA IPAM'
