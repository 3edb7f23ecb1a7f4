"""Whether a Kubernetes patch exists is answered by the site's package source, at preflight.

The real playbooks/preflight.yml runs against this machine (local connection) with
kubernetes_packages_repo_url pointing at a repository index served on 127.0.0.1 by an
http.server this test starts: a hand-written Packages file listing kubeadm 1.34.9 and
1.34.12 (revision 1.1), as pkgs.k8s.io's deb/Packages does. 1.34.12 is accepted although
nothing in the project names it; 1.34.99 is refused with what the source has. The
air-gapped variant reads the .deb file names in kubernetes_packages_debs_local_path.
"""
import pytest

from test_preflight import failed, run_preflight
from testlib import served

INDEX = """Package: kubeadm
Version: 1.34.9-1.1
Architecture: amd64

Package: kubelet
Version: 1.34.99-1.1
Architecture: amd64

Package: kubeadm
Version: 1.34.12-1.1
Architecture: amd64
"""


@pytest.fixture(scope='module')
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp('repo')
    (root / 'deb').mkdir()
    (root / 'deb' / 'Packages').write_text(INDEX)
    with served(root) as url:
        yield url + 'deb/'


def test_patch_the_source_lists_is_accepted(repository, tmp_path):
    result = run_preflight(tmp_path, {'ipu_k8s_kubernetes_version': '1.34.12', 'kubernetes_packages_repo_url': repository},
                           skip_tags=['preflight_os'])
    assert result.rc == 0, failed(result) or result.stdout[-3000:]
    # 1.34 ended its upstream support on 2026-10-28 (sig-release: released 2025-08-27, +14
    # months, the 28th): one warning, repeated in the closing block, names the way out.
    warnings = [w for w in result.warnings() if 'end of support' in w]
    assert len(warnings) == 1, result.warnings()
    assert 'Kubernetes 1.34 is past its upstream end of support (2026-10-28)' in warnings[0]
    assert '1.35' in warnings[0]
    assert result.stdout.count('Kubernetes 1.34 is past its upstream end of support') == 2, result.stdout[-3000:]


def test_patch_the_source_lacks_is_refused_naming_what_it_has(repository, tmp_path):
    result = run_preflight(tmp_path, {'ipu_k8s_kubernetes_version': '1.34.99', 'kubernetes_packages_repo_url': repository},
                           skip_tags=['preflight_os'])
    assert result.rc != 0
    message = failed(result)
    assert 'ipu_k8s_kubernetes_version=1.34.99' in message
    assert 'kubeadm 1.34.99-1.1 is not in the package source %sPackages' % repository in message
    assert 'which has 1.34.9-1.1, 1.34.12-1.1' in message


def test_air_gapped_source_is_its_deb_files(tmp_path):
    debs = tmp_path / 'debs'
    debs.mkdir()
    files = ('kubeadm_1.34.12-1.1_amd64.deb', 'kubelet_1.34.12-1.1_amd64.deb', 'kubectl_1.34.12-1.1_amd64.deb')
    for name in files:
        (debs / name).write_bytes(b'')
    for run in ('a', 'b'):
        (tmp_path / run).mkdir()
    # Preflight checks each file of the release against the sha256 the site gives: sha256sum of an empty file.
    sums = dict.fromkeys(files, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
    accepted = run_preflight(tmp_path / 'a', {'ipu_k8s_kubernetes_version': '1.34.12',
                                              'kubernetes_packages_debs_local_path': str(debs),
                                              'kubernetes_packages_debs_sha256': sums}, skip_tags=['preflight_os'])
    assert accepted.rc == 0, failed(accepted)
    refused = run_preflight(tmp_path / 'b', {'ipu_k8s_kubernetes_version': '1.34.13',
                                             'kubernetes_packages_debs_local_path': str(debs)}, skip_tags=['preflight_os'])
    assert refused.rc != 0
    assert 'kubeadm 1.34.13-1.1 is not in the package source %s, which has 1.34.12-1.1' % debs in failed(refused)


def test_a_repository_that_serves_only_packages_gz_is_read(tmp_path):
    import gzip

    (tmp_path / 'deb').mkdir()
    (tmp_path / 'deb' / 'Packages.gz').write_bytes(gzip.compress(INDEX.encode()))
    (tmp_path / 'run').mkdir()
    with served(tmp_path) as url:
        result = run_preflight(tmp_path / 'run', {'ipu_k8s_kubernetes_version': '1.34.99',
                                                  'kubernetes_packages_repo_url': url + 'deb/'},
                               skip_tags=['preflight_os'])
    assert result.rc != 0
    message = failed(result)
    assert 'not in the package source %sdeb/Packages.gz, which has 1.34.9-1.1, 1.34.12-1.1' % url in message
