"""What `vipu --server-version --showjson` may print, and what is made of it."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, parse_vipu_server_version, show_output


def test_json_output_gives_host_and_version():
    out = '{"version": "1.18.0", "host": "10.5.212.116:8090"}\n'
    assert parse_vipu_server_version(out) == {'host': '10.5.212.116:8090', 'version': '1.18.0'}


def test_json_with_extra_keys_is_accepted():
    out = '{"version": "1.18.0", "host": "10.5.212.116:8090", "cluster": "pod64"}'
    assert parse_vipu_server_version(out)['host'] == '10.5.212.116:8090'


def test_json_without_version_gives_null_version():
    assert parse_vipu_server_version('{"host": "10.5.212.116:8090"}')['version'] is None


def test_json_numeric_version_becomes_text():
    assert parse_vipu_server_version('{"host": "10.5.212.116", "version": 1.18}')['version'] == '1.18'


def test_json_without_host_is_refused_showing_the_output():
    with pytest.raises(IpuK8sError, match=r'no "host".*\{"version": "1.18.0"\}'):
        parse_vipu_server_version('{"version": "1.18.0"}')


def test_json_with_empty_host_is_refused():
    with pytest.raises(IpuK8sError, match='no "host"'):
        parse_vipu_server_version('{"version": "1.18.0", "host": ""}')


def test_json_that_is_not_an_object_is_refused():
    with pytest.raises(IpuK8sError, match='not an object'):
        parse_vipu_server_version('["10.5.212.116:8090"]')


def test_text_output_of_an_older_cli_is_understood():
    out = 'version: 1.18.0\nhost: 10.5.212.116:8090\n'
    assert parse_vipu_server_version(out) == {'host': '10.5.212.116:8090', 'version': '1.18.0'}


def test_text_output_without_host_is_refused_showing_the_output():
    with pytest.raises(IpuK8sError, match='neither JSON.*Error: connection refused'):
        parse_vipu_server_version('Error: connection refused\n')


def test_garbage_output_is_refused_showing_the_output():
    with pytest.raises(IpuK8sError, match='Output: <html>'):
        parse_vipu_server_version('<html>502 Bad Gateway</html>')


def test_empty_output_is_refused():
    with pytest.raises(IpuK8sError, match='printed nothing'):
        parse_vipu_server_version('  \n')


def test_very_long_output_is_trimmed_in_the_message():
    with pytest.raises(IpuK8sError) as refused:
        parse_vipu_server_version('x' * 10000)
    assert 'truncated' in str(refused.value)
    assert len(str(refused.value)) < 3000


@pytest.mark.parametrize('text, shown', [
    (None, '(no output)'), ('  \n', '(no output)'), ('  ok \n', 'ok'),
    # 2000 characters are shown whole; one more is cut there and marked.
    ('a' * 2000, 'a' * 2000), ('a' * 2001, 'a' * 2000 + ' ... (truncated)'),
])
def test_command_output_is_quoted_trimmed_and_cut(text, shown):
    assert show_output(text) == shown
