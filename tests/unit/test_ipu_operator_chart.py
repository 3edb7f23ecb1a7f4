"""The IPU Operator chart row and what the role installs from it (plugins/filter/ipu_k8s_checks.py,
ipu_operator_chart), one behaviour each, on a table written here in the shape of
ipu_k8s_versions.ipu_operator."""
import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'ipu_k8s_checks.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', PLUGIN)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

CHART_IMAGE = 'gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'
IMAGES = {'kube_rbac_proxy': {'repository': 'gcr.io/kubebuilder', 'image': 'kube-rbac-proxy', 'version': 'v0.8.0'}}
CHARTS = {'1.1.0': {'archive': 'charts/ipu-operator-helm-chart-1.1.0.tgz', 'ships_crd': False, 'images': IMAGES,
                    'sha256': {'ipu-operator-helm-chart-1.1.0.tgz': '1' * 64, 'graphcore_ai_ipujobs.yaml': 'c' * 64}},
          '1.2.0': {'archive': 'charts/ipu-operator-helm-chart-1.2.0.tgz', 'ships_crd': True, 'images': IMAGES,
                    'sha256': {'ipu-operator-helm-chart-1.2.0.tgz': '2' * 64}}}


def chart(version='1.2.0', repo='https://helm-charts.graphcore.ai/', crd_checksum='', image=''):
    return checks.ipu_operator_chart({
        'ipu_operator_chart_version': version, 'releases': CHARTS, 'ipu_operator_chart_repo_url': repo,
        'ipu_operator_crd_url': 'https://example.invalid/crd.yaml', 'ipu_operator_crd_local_path': '',
        'ipu_operator_crd_checksum': crd_checksum, 'ipu_operator_kube_rbac_proxy_image': image})


@pytest.mark.parametrize('repo', ['https://helm-charts.graphcore.ai', 'https://helm-charts.graphcore.ai/',
                                  'https://helm-charts.graphcore.ai//'])
def test_the_archive_is_under_the_repository_with_one_slash(repo):
    assert chart(repo=repo)['url'] == 'https://helm-charts.graphcore.ai/charts/ipu-operator-helm-chart-1.2.0.tgz'


@pytest.mark.parametrize('image, rewrites', [
    ('registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0',
     {CHART_IMAGE: 'registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0'}),
    ('', {}),              # empty keeps the chart's image
    (CHART_IMAGE, {}),     # the same image: nothing to rewrite
])
def test_the_post_renderer_rewrites_the_charts_image_only_to_another(image, rewrites):
    assert chart(image=image)['image_rewrites'] == rewrites


def test_a_version_without_a_row_has_no_row():
    assert chart('9.9.9') == {}


def test_the_archive_and_crd_sha256_are_read_from_the_rows_sha256_by_file_name():
    assert (chart('1.1.0')['archive_sha256'], chart('1.1.0')['crd_sha256']) == ('1' * 64, 'c' * 64)
    assert (chart('1.2.0')['archive_sha256'], chart('1.2.0')['crd_sha256']) == ('2' * 64, '')
    assert chart('1.2.0')['kube_rbac_proxy_image'] == CHART_IMAGE
