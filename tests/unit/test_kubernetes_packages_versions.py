"""plugins/filter/kubernetes_packages.py: Debian Packages stanzas
as apt indexes write them (a blank line ends a stanza), .deb names with an epoch as
`apt-get download` escapes it (%3a), version order by numbers, and the refusal word for word."""
import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    'kubernetes_packages',
    Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'kubernetes_packages.py')
packages = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(packages)


def test_a_version_after_a_blank_line_belongs_to_no_package():
    index = 'Package: kubeadm\nVersion: 1.34.1-1.1\n\nVersion: 9.9.9-1.1\n  \nPackage:  kubeadm \nVersion:  1.34.2-1.1 \n'
    assert packages.index_versions(index, 'kubeadm') == ['1.34.1-1.1', '1.34.2-1.1']


def test_a_package_whose_name_starts_like_another_is_another():
    index = 'Package: kubeadm-tools\nVersion: 1.0.0\n\nPackage: kubeadm\nVersion: 1.34.1-1.1\n'
    assert packages.index_versions(index, 'kubeadm') == ['1.34.1-1.1']


def test_versions_sort_by_their_numbers_and_the_revision():
    versions = ['1.34.10-1.1', '1.34.9-1.1', '1.34.9-1.10', '1.34.9-1.2']
    index = ''.join('Package: kubelet\nVersion: %s\n\n' % version for version in versions)
    assert packages.index_versions(index, 'kubelet') == ['1.34.9-1.1', '1.34.9-1.2', '1.34.9-1.10', '1.34.10-1.1']


def test_deb_names_with_an_epoch_give_the_epoch_back_and_paths_do_not_matter():
    paths = ['/srv/debs/kubelet_1%3a1.34.2-1.1_amd64.deb', 'kubelet_1.34.1-1.1_arm64.deb', 'kubectl_1.34.3-1.1_amd64.deb',
             'kubelet_1.34.4-1.1.deb', 'notes/kubelet_1.34.5-1.1_amd64.deb.sig', 'x/kubelet_1.34.1-1.1_amd64.deb']
    assert packages.deb_file_versions(paths, 'kubelet') == ['1.34.1-1.1', '1:1.34.2-1.1']
    assert packages.deb_file_versions(None, 'kubelet') == []


def test_the_refusal_names_the_package_the_source_what_it_has_and_the_fix():
    assert packages.version_problem('1.34.99-1.1', ['1.34.9-1.1', '1.34.12-1.1'], 'kubeadm', '/srv/debs') == (
        'kubeadm 1.34.99-1.1 is not in the package source /srv/debs, which has 1.34.9-1.1, 1.34.12-1.1. Set '
        'ipu_k8s_kubernetes_version to a release the source has (or kubernetes_packages_revision to its revision), '
        'or point the source (kubernetes_packages_repo_url, kubernetes_packages_debs_local_path) at one that has '
        '1.34.99-1.1.')
    assert 'which has no kubelet at all.' in packages.version_problem('1.34.1-1.1', None, 'kubelet', '/srv/debs')


def test_an_epoch_outranks_a_higher_version_without_one():
    index = ''.join('Package: kubelet\nVersion: %s\n\n' % v for v in ('1:1.34.0-1.1', '1.35.0-1.1', '5'))
    assert packages.index_versions(index, 'kubelet') == ['1.35.0-1.1', '5', '1:1.34.0-1.1']


def test_only_the_first_colon_ends_the_epoch():
    paths = ['kubelet_1%3a2.0:3-1_amd64.deb', 'kubelet_1.0-1_amd64.deb']
    assert packages.deb_file_versions(paths, 'kubelet') == ['1.0-1', '1:2.0:3-1']


def test_a_version_with_letters_is_kept_as_written():
    assert packages.deb_file_versions(['kubeadm_1.34.0-rc.1_amd64.deb'], 'kubeadm') == ['1.34.0-rc.1']


def test_fields_without_a_space_after_the_colon_are_read():
    assert packages.index_versions('Package:kubeadm\nVersion:1:1.34.1-1.1\n', 'kubeadm') == ['1:1.34.1-1.1']


def test_a_compressed_index_with_bytes_that_are_not_utf8_is_still_read():
    import base64
    import gzip
    raw = b'Package: kubeadm\nDescription: \xff\xfe\nVersion: 1.34.1-1.1\n'
    assert packages.slurped_index_versions(base64.b64encode(gzip.compress(raw)).decode(), 'kubeadm') == [
        '1.34.1-1.1']
