"""Address forms accepted for the V-IPU controller, and the IPUOF_VIPU_API_* environment."""

import socket

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (
    IpuK8sError,
    parse_ipv4,
    parse_port,
    resolve_ipv4,
    split_address,
    vipu_address_from_environment,
)


def resolver_for(table):
    """A getaddrinfo stand-in answering from table (name -> list of IPv4 strings)."""
    def getaddrinfo(host, port, family=0, type=0, *args):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, 'Name or service not known')
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, '', (ip, 0)) for ip in table[host]]
    return getaddrinfo


def test_bare_ipv4_has_no_port():
    assert split_address('10.5.212.116') == ('10.5.212.116', None)


def test_ipv4_with_port_is_split():
    assert split_address('10.5.212.116:8090') == ('10.5.212.116', 8090)


@pytest.mark.parametrize('text', ['10.5.212.116\n', ' 10.5.212.116:8091', '10.5.212.116:8091\t'])
def test_whitespace_around_an_address_is_refused_not_stripped(text):
    # '10.5.212.116\n' is what a YAML block scalar (host: |) or a value read from a file gives.
    with pytest.raises(IpuK8sError) as refusal:
        split_address(text)
    assert str(refusal.value) == 'address %r has whitespace around it: write %s' % (text, text.strip())


@pytest.mark.parametrize('text', [' 8090', '8090\n'])
def test_whitespace_around_a_port_is_refused_not_stripped(text):
    with pytest.raises(IpuK8sError) as refusal:
        parse_port(text, 'port')
    assert str(refusal.value) == 'port %r has whitespace around it: write 8090' % text


def test_host_name_with_port_is_split():
    assert split_address('vipu-ctrl.pod001.example:8090') == ('vipu-ctrl.pod001.example', 8090)


def test_bare_host_name_is_kept():
    assert split_address('vipu') == ('vipu', None)


@pytest.mark.parametrize('text', ['10.5.212.256', '10.5.212', '10.1', '010.5.212.116', '10.5.212.116.7'])
def test_malformed_ipv4_is_refused_not_resolved(text):
    with pytest.raises(IpuK8sError, match='not a valid IPv4 address'):
        split_address(text)


@pytest.mark.parametrize('text', ['10.5.212.116:0', '10.5.212.116:65536', '10.5.212.116:http', '10.5.212.116:-1'])
def test_malformed_port_is_refused(text):
    with pytest.raises(IpuK8sError, match="address '%s' is malformed" % text):
        split_address(text)


def test_colon_without_port_is_refused():
    with pytest.raises(IpuK8sError, match='has no port'):
        split_address('10.5.212.116:')


def test_port_without_host_is_refused():
    with pytest.raises(IpuK8sError, match='no host'):
        split_address(':8090')


@pytest.mark.parametrize('text', ['fe80::1', '[fd00::5]:8090'])
def test_ipv6_is_refused(text):
    with pytest.raises(IpuK8sError, match='looks like IPv6'):
        split_address(text)


@pytest.mark.parametrize('text', ['', '   ', None])
def test_empty_address_is_refused(text):
    with pytest.raises(IpuK8sError, match='is empty'):
        split_address(text)


@pytest.mark.parametrize('text', ['vipu ctrl', 'http://10.5.212.116', '-vipu', 'vipu..example', 'a/b'])
def test_invalid_host_name_is_refused(text):
    with pytest.raises(IpuK8sError, match='malformed'):
        split_address(text)


def test_parse_ipv4_rejects_leading_zero():
    with pytest.raises(IpuK8sError):
        parse_ipv4('10.05.212.116')


def test_ipv4_literal_resolves_to_itself_without_a_lookup():
    def no_lookup(*args):
        raise AssertionError('an IPv4 literal must not be looked up')
    assert resolve_ipv4('10.5.212.116', resolver=no_lookup) == '10.5.212.116'


def test_host_name_resolves_to_first_ipv4_answer():
    resolver = resolver_for({'vipu-ctrl': ['10.247.208.5', '10.247.208.6']})
    assert resolve_ipv4('vipu-ctrl', resolver=resolver) == '10.247.208.5'


def test_unresolvable_name_is_refused_naming_it():
    with pytest.raises(IpuK8sError, match="cannot resolve 'no-such-vipu'"):
        resolve_ipv4('no-such-vipu', resolver=resolver_for({}))


def test_name_with_no_ipv4_answer_is_refused():
    with pytest.raises(IpuK8sError, match='has no IPv4 address'):
        resolve_ipv4('v6-only', resolver=resolver_for({'v6-only': []}))


@pytest.mark.parametrize('text', ['0.0.0.0', '224.0.0.5', '255.255.255.255', '240.0.0.1'])
def test_non_unicast_address_is_refused(text):
    with pytest.raises(IpuK8sError, match='not a unicast address'):
        resolve_ipv4(text)


def test_name_resolving_to_multicast_is_refused():
    with pytest.raises(IpuK8sError, match='not a unicast address'):
        resolve_ipv4('mcast', resolver=resolver_for({'mcast': ['239.1.1.1']}))


def test_environment_host_and_port_are_used():
    env = {'IPUOF_VIPU_API_HOST': '10.5.212.116', 'IPUOF_VIPU_API_PORT': '8091'}
    assert vipu_address_from_environment(env, 8090) == ('10.5.212.116', 8091)


def test_environment_host_without_port_takes_default_port():
    assert vipu_address_from_environment({'IPUOF_VIPU_API_HOST': 'vipu-ctrl'}, 8090) == ('vipu-ctrl', 8090)


def test_environment_host_may_carry_its_port():
    assert vipu_address_from_environment({'IPUOF_VIPU_API_HOST': '10.5.212.116:8095'}, 8090) == ('10.5.212.116', 8095)


def test_environment_without_host_gives_nothing():
    assert vipu_address_from_environment({'IPUOF_VIPU_API_PORT': '8090'}, 8090) is None


def test_environment_ports_that_disagree_are_refused():
    env = {'IPUOF_VIPU_API_HOST': '10.5.212.116:8095', 'IPUOF_VIPU_API_PORT': '8090'}
    with pytest.raises(IpuK8sError, match='make them agree'):
        vipu_address_from_environment(env, 8090)


def test_environment_malformed_port_is_refused_naming_the_variable():
    env = {'IPUOF_VIPU_API_HOST': '10.5.212.116', 'IPUOF_VIPU_API_PORT': 'eighty'}
    with pytest.raises(IpuK8sError, match='IPUOF_VIPU_API_PORT'):
        vipu_address_from_environment(env, 8090)
