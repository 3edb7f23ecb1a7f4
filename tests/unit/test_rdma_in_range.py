"""plugins/module_utils/ipu_k8s_rdma.py in_range: the one rule of an address inside the RDMA subnet and
outside its excludes, read by verify's test pod row and the verify_probe module. Expected
values are worked out by hand from the CIDRs."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import in_range

CIDR, EXCLUDES = '10.247.208.9/23', ['10.247.208.3/25', '10.247.209.200/32']


@pytest.mark.parametrize('address, ok', [
    ('10.247.209.254', True),
    (' 10.247.208.128 ', True),  # the first address after the excluded first /25, trimmed
    ('10.247.208.127', False),  # the last of the first /25
    ('10.247.208.100', False),
    ('10.247.209.200', False),
    ('10.247.210.1', False),  # past the /23
    ('10.247.207.255', False),  # before it
    ('fe80::1', False),
    ('not an address', False),
    ('', False),
    (None, False),
])
def test_a_cidr_and_excludes_written_with_host_bits_are_read_as_their_networks(address, ok):
    assert in_range(CIDR, EXCLUDES)(address) is ok


def test_without_excludes_the_whole_subnet_is_in_range():
    assert in_range(CIDR, None)('10.247.208.0') is True
    assert in_range(CIDR)('10.247.209.255') is True


@pytest.mark.parametrize('cidr, excludes', [(None, []), ('10.247.208.0/33', []), (CIDR, ['10.247.208.0/25', 'x'])])
def test_a_cidr_or_exclude_that_is_not_one_is_a_value_error(cidr, excludes):
    with pytest.raises(ValueError):
        in_range(cidr, excludes)
