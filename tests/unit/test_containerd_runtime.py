"""plugins/filter/containerd_runtime.py: the containerd a node would get, judged against the
Kubernetes minor. The table is containerd's RELEASES.md "Kubernetes Support" at v2.3.4
(commit db880954, lines 164-168), written out here as upstream has it:

    | 1.34 | 2.1.3+, 2.0.6+, 1.7.28+, 1.6.39+ | v1 |
    | 1.35 | 2.2.0+, 2.1.5+, 1.7.28+          | v1 |
    | 1.36 | 2.3.0+, 2.2.0+                   | v1 |
"""
import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('containerd_runtime', ROOT / 'plugins' / 'filter' / 'containerd_runtime.py')
runtime = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runtime)

RELEASES_MD = {'1.34': ['2.1.3', '2.0.6', '1.7.28', '1.6.39'], '1.35': ['2.2.0', '2.1.5', '1.7.28'],
               '1.36': ['2.3.0', '2.2.0']}


def check(candidate, minor, source='distribution'):
    package = {'distribution': 'containerd', 'docker': 'containerd.io'}[source]
    return runtime.containerd_runtime_check(candidate, minor, {m: {'containerd': v} for m, v in RELEASES_MD.items()},
                                            package, source)


def test_the_role_table_is_containerds_table():
    rows = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions']['kubernetes']
    table = {minor: row['containerd'] for minor, row in rows.items() if 'containerd' in row}
    facts = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'containerd' / 'kubernetes-support.yaml').read_text())
    assert {m: table[m] for m in RELEASES_MD} == RELEASES_MD
    assert table == facts['kubernetes']
    assert facts['source']['tag'] == 'v2.3.4' and facts['source']['line'] == 151


@pytest.mark.parametrize('candidate', ['1.7.28-0ubuntu1~24.04.1', '1.6.20~ds1-1+b1', '1:1.7.30-1'])
def test_containerd_1_on_kubernetes_1_36_is_refused_naming_the_source_and_the_fix(candidate):
    result = check(candidate, '1.36')
    assert result['warning'] == ''
    assert result['problem'] == (
        'containerd_package_source is "distribution": the distribution\'s archive would install containerd %s, '
        'but Kubernetes 1.36 (ipu_k8s_kubernetes_version) needs containerd 2.x (containerd\'s RELEASES.md '
        'recommends 2.3.0+, 2.2.0+). Set containerd_package_source: docker (Docker\'s repository carries '
        'containerd.io 2.x), or choose Kubernetes 1.35 or older for containerd 1.x.' % candidate)


def test_docker_source_with_containerd_1_on_1_36_asks_for_a_2_x_pin():
    assert 'Set containerd_package_version to a containerd.io 2.x release' in check('1.7.29-1', '1.36', 'docker')['problem']


@pytest.mark.parametrize('candidate,minor', [('2.2.0-1', '1.36'), ('2.3.1-1', '1.36'), ('1.7.28-1', '1.35'),
                                             ('2.1.5-1', '1.35'), ('1.6.39-1', '1.34'), ('2.4.0', '1.36')])
def test_a_recommended_containerd_passes_silently(candidate, minor):
    assert check(candidate, minor) == {'problem': '', 'warning': ''}


@pytest.mark.parametrize('candidate,minor', [('1.6.20~ds1-1+b1', '1.35'), ('1.7.27-1', '1.35'),
                                             ('2.1.4-1', '1.35'), ('2.0.5-1', '1.34')])
def test_an_older_patch_of_a_supported_major_is_a_warning_not_a_refusal(candidate, minor):
    result = check(candidate, minor)
    assert result['problem'] == '' and 'older than containerd recommends for Kubernetes %s' % minor in result['warning']


def test_no_candidate_is_a_warning_that_names_what_the_minor_needs():
    result = check('', '1.36', 'docker')
    assert result['problem'] == ''
    assert 'name no containerd.io to install from Docker\'s repository' in result['warning']
    assert '2.3.0+, 2.2.0+' in result['warning']


def test_a_minor_the_table_does_not_list_is_a_warning():
    result = check('2.3.1-1', '1.37')
    assert result['problem'] == '' and 'recommends no containerd release for Kubernetes 1.37' in result['warning']


@pytest.mark.parametrize('policy,candidate', [
    ('containerd:\n  Installed: (none)\n  Candidate: 1.7.28-0ubuntu1~24.04.1\n  Version table:\n', '1.7.28-0ubuntu1~24.04.1'),
    ('containerd.io:\n  Installed: (none)\n  Candidate: (none)\n', ''),
    ('', ''),
])
def test_apt_candidate_is_read_from_apt_cache_policy(policy, candidate):
    assert runtime.containerd_apt_candidate(policy) == candidate
