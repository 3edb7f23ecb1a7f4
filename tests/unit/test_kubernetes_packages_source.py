"""The package source's index (or the air-gapped .deb files) decides which releases exist."""
import base64
import gzip
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    'kubernetes_packages_filters', ROOT / 'plugins/filter/kubernetes_packages.py')
packages = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(packages)

# Shaped as pkgs.k8s.io's deb/Packages: stanzas separated by blank lines, other packages
# (cri-tools, kubectl) interleaved, versions not in order.
INDEX = """Package: cri-tools
Version: 1.34.0-1.1
Architecture: amd64

Package: kubeadm
Version: 1.34.10-1.1
Architecture: amd64
Filename: amd64/kubeadm_1.34.10-1.1_amd64.deb

Package: kubeadm
Version: 1.34.9-1.1
Architecture: amd64

Package: kubectl
Version: 1.34.99-1.1

Package: kubeadm
Version: 1.34.12-1.1
Architecture: amd64

Package: kubeadm
Version: 1.34.12-1.1
Architecture: arm64
"""


def test_index_lists_the_package_versions_in_release_order_once_each():
    assert packages.index_versions(INDEX, 'kubeadm') == ['1.34.9-1.1', '1.34.10-1.1', '1.34.12-1.1']


def test_another_package_of_the_index_does_not_count():
    assert '1.34.99-1.1' not in packages.index_versions(INDEX, 'kubeadm')
    assert packages.index_versions(INDEX, 'kubectl') == ['1.34.99-1.1']


def test_gzip_index_as_slurp_returns_it_is_read():
    slurped = base64.b64encode(gzip.compress(INDEX.encode())).decode()
    assert packages.slurped_index_versions(slurped, 'kubeadm')[-1] == '1.34.12-1.1'


def test_plain_index_as_slurp_returns_it_is_read():
    slurped = base64.b64encode(INDEX.encode()).decode()
    assert packages.slurped_index_versions(slurped, 'kubeadm') == ['1.34.9-1.1', '1.34.10-1.1', '1.34.12-1.1']


def test_deb_file_names_give_their_versions():
    files = ['/srv/debs/kubeadm_1.34.12-1.1_amd64.deb', '/srv/debs/kubelet_1.34.12-1.1_amd64.deb',
             '/srv/debs/kubeadm_1.34.2-1.1_amd64.deb', '/srv/debs/README']
    assert packages.deb_file_versions(files, 'kubeadm') == ['1.34.2-1.1', '1.34.12-1.1']


def test_release_the_source_has_is_accepted_even_if_this_project_never_heard_of_it():
    assert packages.version_problem('1.34.12-1.1', ['1.34.9-1.1', '1.34.12-1.1'], 'kubeadm', 'http://m/') == ''


def test_release_the_source_lacks_is_refused_naming_what_it_has():
    message = packages.version_problem('1.34.99-1.1', ['1.34.9-1.1', '1.34.12-1.1'], 'kubeadm', 'http://m/Packages')
    assert 'kubeadm 1.34.99-1.1 is not in the package source http://m/Packages' in message
    assert 'which has 1.34.9-1.1, 1.34.12-1.1' in message
    assert 'ipu_k8s_kubernetes_version' in message


def test_empty_source_says_so():
    assert 'which has no kubeadm at all' in packages.version_problem('1.34.1-1.1', [], 'kubeadm', '/srv/debs')


def test_local_debs_install_dependencies_first_and_leave_other_files_out():
    files = ['/d/kubeadm_1.34.12-1.1_amd64.deb', '/d/notes.deb', '/d/kubelet_1.34.12-1.1_amd64.deb',
             '/d/cri-tools_1.34.0-1.1_amd64.deb', '/d/kubelet-extra_1.0_amd64.deb', '/d/kubelet_1.34.11-1.1_amd64.deb']
    assert packages.deb_install_order(files, ['cri-tools', 'kubelet', 'kubeadm']) == [
        '/d/cri-tools_1.34.0-1.1_amd64.deb', '/d/kubelet_1.34.11-1.1_amd64.deb', '/d/kubelet_1.34.12-1.1_amd64.deb',
        '/d/kubeadm_1.34.12-1.1_amd64.deb']


def test_an_upgrade_step_finds_each_packages_file_by_its_name():
    files = ['/d/cri-tools_1.34.0-1.1_amd64.deb', '/d/kubeadm_1.34.12-1.1_amd64.deb',
             '/d/kubelet_1.34.12-1.1_amd64.deb', '/d/kubelet-extra_1.0_amd64.deb', '/d/kubectl_1.34.12-1.1_amd64.deb']
    assert packages.deb_files_by_name(files, ['kubelet', 'kubectl']) == {
        'kubelet': '/d/kubelet_1.34.12-1.1_amd64.deb', 'kubectl': '/d/kubectl_1.34.12-1.1_amd64.deb'}
    assert packages.deb_files_by_name(files, ['kubeadm']) == {'kubeadm': '/d/kubeadm_1.34.12-1.1_amd64.deb'}
