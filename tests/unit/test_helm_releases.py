"""The Helm rows of ipu_k8s_versions against the facts read upstream (tests/schemas/helm/releases.yaml),
and the choice it makes for each Kubernetes minor: a release inside Helm's documented version skew."""

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', ROOT / 'plugins' / 'filter' / 'ipu_k8s_checks.py')
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
FACTS = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'helm' / 'releases.yaml').read_text())
TABLE = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions']['helm']
checks = _module.FilterModule().filters()


@pytest.mark.parametrize('version', sorted(FACTS['releases']))
def test_each_row_carries_the_range_and_checksums_read_upstream(version):
    fact, row = FACTS['releases'][version], TABLE[version]
    assert (row['kubernetes_min'], row['kubernetes_max']) == (fact['kubernetes']['min'], fact['kubernetes']['max'])
    assert row['sha256'] == {'helm-v%s-linux-%s.tar.gz' % (version, arch): fact['sha256'][arch]
                             for arch in ('amd64', 'arm64')}


def test_the_table_has_no_row_without_its_facts():
    assert sorted(TABLE) == sorted(FACTS['releases'])


@pytest.mark.parametrize('version', sorted(FACTS['releases']))
def test_a_rows_range_is_the_skew_tables_row_for_its_minor_where_the_table_has_one(version):
    series = '.'.join(version.split('.')[:2])
    documented = FACTS['skew_policy']['table']['rows'].get(series)
    if documented is None:
        # Newer than the stored table: n-3 from the minor its release notes say it is compiled against.
        high = FACTS['releases'][version]['kubernetes']['max']
        major, minor = high.split('.')
        assert FACTS['releases'][version]['kubernetes']['min'] == '%s.%d' % (major, int(minor) - 3)
    else:
        assert [TABLE[version]['kubernetes_min'], TABLE[version]['kubernetes_max']] == documented


@pytest.mark.parametrize('minor,expected', [('1.30', '3.16.3'), ('1.31', '3.16.3'), ('1.32', '3.20.0'),
                                            ('1.33', '3.21.4'), ('1.35', '3.21.4'), ('1.36', '3.21.4'),
                                            ('1.37', None)])
def test_the_default_release_is_the_newest_serving_the_minor(minor, expected):
    assert checks['ipu_k8s_release_for_minor'](TABLE, minor).get('version') == expected


def _problem(version, minor, checksum=''):
    return checks['ipu_k8s_problems']({'helm_download': {
        'helm_version': version, 'releases': TABLE, 'helm_tarball_checksum': checksum,
        'ipu_k8s_kubernetes_minor': minor}})


def test_a_pinned_row_outside_its_skew_is_refused_naming_the_tables_pick():
    assert _problem('3.16.3', '1.35') == [
        'helm_version is "3.16.3", whose row in ipu_k8s_versions.helm serves Kubernetes 1.28 to 1.31, not this cluster\'s '
        '1.35 (ipu_k8s_kubernetes_version): Leave helm_version unset (remove it from the inventory) and the table '
        'picks 3.21.4 for Kubernetes 1.35, or choose a Kubernetes release from 1.28 to 1.31.']


def test_a_pinned_row_inside_its_skew_passes():
    assert _problem('3.20.0', '1.32') == []


def test_no_row_for_the_minor_says_what_to_set():
    [message] = _problem('', '1.37')
    assert message.startswith('No row of ipu_k8s_versions.helm documents Kubernetes 1.37'), message
    assert 'helm_tarball_checksum' in message


def test_a_release_that_is_no_row_is_the_sites_to_judge_when_it_brings_its_checksum():
    assert _problem('3.22.0', '1.37', checksum='a' * 64) == []
