"""The Network Operator chart row and its rules (plugins/filter/ipu_k8s_checks.py,
network_operator_chart, kind network_operator_chart of ipu_k8s_problems), one behaviour
each, on a small table written here; the expected messages are written out in full."""
import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'ipu_k8s_checks.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', PLUGIN)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

SHA_A = 'a' * 64
SHA_B = 'b' * 64
IMAGES = dict((name, {'repository': 'r', 'image': name, 'version': 'v1'})
              for name in ('rdma_shared_device_plugin', 'multus', 'cni_plugins', 'whereabouts'))
# In the shape of ipu_k8s_versions.network_operator: rows keyed by chart version.
TABLE = {
    '1.4.0': {'kubernetes_min': '1.24', 'kubernetes_max': '1.25', 'support': 'End of Support',
              'url': 'https://legacy.example/network-operator-1.4.0.tgz',
              'sha256': {'network-operator-1.4.0.tgz': SHA_A}, 'layout': 'legacy', 'ipam': 'whereabouts'},
    '25.7.0': {'kubernetes_min': '1.29', 'kubernetes_max': '1.33', 'support': 'Supported',
               'url': 'https://ngc.example/network-operator-25.7.0.tgz',
               'layout': 'policy', 'ipam': 'whereabouts', 'images': IMAGES},
    '26.7.0': {'support': 'not listed',
               'url': 'https://ngc.example/network-operator-26.7.0.tgz', 'layout': 'policy', 'ipam': 'nv-ipam'},
}
# The rows as the filter returns them: each with its chart_version.
ROWS = [dict(row, chart_version=version) for version, row in TABLE.items()]


def settings(minor='1.31', version='', sha='', prefix='rdma', table=None):
    return {'releases': TABLE if table is None else table,
            'network_operator_chart_version': version, 'network_operator_chart_sha256': sha,
            'ipu_k8s_kubernetes_minor': minor, 'ipu_k8s_rdma_resource_prefix': prefix}


def chart(**kwargs):
    return checks.network_operator_chart(settings(**kwargs))


def problems(**kwargs):
    return checks.problems({'network_operator_chart': settings(**kwargs)})


@pytest.mark.parametrize('minor, version', [('1.24', '1.4.0'), ('1.25', '1.4.0'), ('1.29', '25.7.0'),
                                            ('1.33', '25.7.0')])
def test_the_row_serving_the_minor_is_chosen(minor, version):
    assert chart(minor=minor, sha=SHA_A if version != '1.4.0' else '')[0]['chart_version'] == version


def test_a_row_named_by_the_site_wins_over_the_minor():
    assert chart(minor='1.31', version='1.4.0')[0]['chart_version'] == '1.4.0'


def test_a_row_with_its_own_digest_needs_none_from_the_site():
    assert chart(minor='1.25') == (ROWS[0], '')


def test_a_row_without_a_digest_passes_with_the_sites():
    assert chart(minor='1.31', sha=SHA_B) == (ROWS[1], '')


def test_no_row_for_the_minor_is_refused_listing_the_ranges():
    assert chart(minor='1.27') == ({}, 'No network-operator chart release in ipu_k8s_versions.network_operator supports '
                                       'Kubernetes 1.27 (1.24-1.25, 1.29-1.33). Set network_operator_chart_version '
                                       'to a release NVIDIA documents for it, or add a row to the table.')


def test_an_unknown_chart_version_is_refused_listing_the_rows():
    assert problems(version='9.9.9') == [
        'network_operator_chart_version 9.9.9 is not a row of ipu_k8s_versions.network_operator (known: 1.4.0, 25.7.0, '
        '26.7.0). Add a row for it (Kubernetes range, url, layout, ipam, and images for the policy layout).']


def test_a_pinned_row_outside_the_clusters_minor_is_refused_with_the_tables_pick():
    assert problems(minor='1.31', version='1.4.0') == [
        'network_operator_chart_version is "1.4.0", whose row in ipu_k8s_versions.network_operator serves Kubernetes '
        '1.24 to 1.25, not this cluster\'s 1.31 (ipu_k8s_kubernetes_version): Leave network_operator_chart_version unset (remove it from the inventory) '
        'and the table picks 25.7.0 for Kubernetes 1.31, or choose a Kubernetes release from 1.24 to 1.25.']


def test_a_legacy_row_refuses_a_resource_prefix_it_cannot_publish():
    assert problems(minor='1.25', prefix='nvidia.com') == [
        'Chart 1.4.0 (legacy layout): the layout must be legacy or policy; legacy charts (before 24.10) always '
        'publish the RDMA resource under the prefix "rdma" (ipu_k8s_rdma_resource_prefix is "nvidia.com"); a '
        'policy-layout row needs its images.']
    assert problems(minor='1.31', prefix='nvidia.com', sha=SHA_B) == []


def test_a_policy_row_without_images_is_refused():
    assert problems(version='26.7.0', minor='1.35', sha=SHA_B) == [
        'network_operator_chart_version is "26.7.0", whose row in ipu_k8s_versions.network_operator has no images: not '
        'all of its component images are published where this project could read them '
        '(tests/schemas/network_operator/published.yaml names the missing ones), so it cannot be installed until '
        'the row has them. No installable release of the table serves Kubernetes 1.35.']


@pytest.mark.parametrize('row, ipam, image', [
    (dict(ROWS[0], ipam='nv-ipam'), 'nv-ipam', 'nv_ipam'),
    (dict(ROWS[1], ipam='nv-ipam'), 'nv-ipam', 'nv_ipam'),
])
def test_an_ipam_the_row_cannot_deploy_is_refused(row, ipam, image):
    assert problems(minor=row['kubernetes_min'], table=[row], sha=SHA_B if 'sha256' not in row else '') == [
        'ipu_k8s_versions.network_operator row %s: ipam is "%s". It must be whereabouts or nv-ipam; nv-ipam needs the '
        'policy layout; a policy row needs images.%s. Fix the row.' % (row['chart_version'], ipam, image)]


@pytest.mark.parametrize('sha', ['ABC', 'sha256:' + SHA_B, SHA_B.upper()])
def test_a_site_digest_that_is_not_a_bare_sha256_is_refused(sha):
    assert problems(minor='1.31', sha=sha) == [
        'network_operator_chart_sha256 is "%s": it must be the archive\'s sha256, 64 lowercase hex digits '
        '(sha256sum network-operator-25.7.0.tgz).' % sha]


def test_a_site_digest_contradicting_the_rows_is_refused():
    assert problems(minor='1.25', sha=SHA_B) == [
        'network_operator_chart_sha256 is %s, but network-operator 1.4.0\'s archive has sha256 %s (the '
        'repository\'s index). Remove network_operator_chart_sha256.' % (SHA_B, SHA_A)]
    assert problems(minor='1.25', sha=SHA_A) == []


def test_a_row_without_a_digest_is_refused_until_the_site_gives_one():
    assert problems(minor='1.31') == [
        'network-operator 25.7.0 comes from https://ngc.example, which publishes no checksum this project could '
        'pin, and network_operator_chart_sha256 is empty. Set it to the sha256 of '
        'https://ngc.example/network-operator-25.7.0.tgz as your site verified it (on a trusted machine: curl '
        '-fsSLO https://ngc.example/network-operator-25.7.0.tgz && sha256sum network-operator-25.7.0.tgz); '
        'network_operator_chart_local_path, if set, must be that file.']


def test_a_chart_version_with_two_rows_is_refused_not_guessed():
    # Keyed by version the table cannot hold two; a list of rows (which the filter also reads) can.
    assert problems(version='1.4.0', minor='1.25', table=[ROWS[0], dict(ROWS[0], layout='policy')]) == [
        'network_operator_chart_version 1.4.0 is not a row of ipu_k8s_versions.network_operator (known: 1.4.0, 1.4.0). '
        'Add a row for it (Kubernetes range, url, layout, ipam, and images for the policy layout).']


@pytest.mark.parametrize('field, value, choices', [
    ('layout', 'helm', 'legacy, policy'), ('ipam', 'dhcp', 'whereabouts, nv-ipam'),
    ('support', 'EOL', 'Supported, Deprecated, End of Support, not listed')])
def test_a_row_field_outside_its_choices_is_refused_naming_the_row(field, value, choices):
    # Rows keyed by version are beyond an argument spec's options: the filter holds the choices.
    table = {'25.7.0': dict(TABLE['25.7.0'], **{field: value})}
    assert problems(minor='1.31', sha=SHA_B, table=table) == [
        'ipu_k8s_versions.network_operator row 25.7.0: %s is "%s", not one of %s. Fix the row.' % (field, value, choices)]
