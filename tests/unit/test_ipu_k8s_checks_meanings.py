"""What each setting means, checked before anything changes (plugins/filter/ipu_k8s_checks.py),
and the patterns of the shared code matched in full. One behaviour each.

The Kubernetes rules restate k8s.io/apimachinery and kubernetes at 1.20.2 (the source the API
tier builds from): staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go:42-70
(IsQualifiedName), :208-217 (IsDNS1123Subdomain), pkg/apis/core/v1/helper/helpers.go:37-61
(IsExtendedResourceName, IsNativeResource; the kubelet's device manager registers a plugin's
resource only when it is one: pkg/kubelet/cm/devicemanager/manager.go:423),
cmd/kubeadm/app/util/endpoint.go:84-112 (ParseHostPort). tests/api/test_resource_names.py holds
the resource-name cases against the real apiserver. Go's regexp '$' matches only at the end of the text, so a trailing newline
fails there.
"""
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, is_host_name, parse_ipv4
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import label_problem

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / 'plugins' / 'filter' / (name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checks = _load('ipu_k8s_checks')
kubernetes_packages = _load('kubernetes_packages')
# sha256sum of a file holding "abc" (no newline): FIPS 180-2's example digest.
ABC_SHA256 = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'


def problem(kind, setting, value):
    return ''.join(checks.problems({kind: {setting: value}}))


# --- patterns matched in full ------------------------------------------------------------

def test_an_ipv4_address_with_a_trailing_newline_is_refused():
    with pytest.raises(IpuK8sError):
        parse_ipv4('10.5.212.116\n')


def test_a_host_name_with_a_trailing_newline_is_no_host_name():
    assert is_host_name('vipu-ctrl.pod.test')
    assert not is_host_name('vipu-ctrl.pod.test\n')


@pytest.mark.parametrize('label', ['vipu-ctrl=pod001\n', 'vipu-ctrl\n=pod001', 'example.com\n/vipu=pod001'])
def test_a_label_with_a_trailing_newline_is_refused(label):
    assert label_problem(label)


def test_a_deb_file_name_with_a_trailing_newline_is_no_deb():
    assert kubernetes_packages.deb_file_versions(['kubeadm_1.31.14-1.1_amd64.deb'], 'kubeadm') == ['1.31.14-1.1']
    assert kubernetes_packages.deb_file_versions(['kubeadm_1.31.14-1.1_amd64.deb\n'], 'kubeadm') == []


@pytest.mark.parametrize('path', ['plugins/filter/ipu_k8s_checks.py', 'plugins/filter/kubernetes_packages.py',
                                  'plugins/module_utils/ipu_k8s_rdma.py', 'plugins/module_utils/ipu_k8s_vipu_controllers.py'])
def test_the_setting_patterns_carry_no_dollar_anchor(path):
    # re.match('...$') lets "value\n" through: these patterns are matched in full, unanchored.
    assert "$')" not in (ROOT / path).read_text()


# --- extended resource name ----------------------------------------------------------------

def resource(prefix, name):
    return checks.extended_resource_problem({'ipu_k8s_rdma_resource_prefix': prefix,
                                             'ipu_k8s_rdma_resource_name': name})


@pytest.mark.parametrize('prefix,name', [('rdma', 'rdma_shared_device_a'), ('nvidia.com', 'Shared_Device_1'),
                                         ('r' * 244, 'n' * 63)])
def test_an_extended_resource_name_kubernetes_and_the_plugin_accept_passes(prefix, name):
    assert resource(prefix, name) == ''


@pytest.mark.parametrize('name', ['Shared.Device-1', 'rdma-shared', 'rdma.shared'])
def test_a_name_kubernetes_accepts_and_the_rdma_plugin_refuses_is_refused_naming_the_plugins_rule(name):
    # k8s-rdma-shared-dev-plugin resources_manager.go:303-307: ^[a-zA-Z0-9_]+$ (tests/network_operator_upstream.py)
    message = resource('nvidia.com', name)
    assert message.startswith('ipu_k8s_rdma_resource_name is "%s": the RDMA shared device plugin takes only letters, '
                              'digits and "_"' % name), message
    assert message.endswith('e.g. %s.' % name.replace('.', '_').replace('-', '_')), message


@pytest.mark.parametrize('prefix,name', [
    ('rdma', 'shared/device'),          # two '/': not a qualified name
    ('Rdma', 'device'),                 # the prefix is a DNS subdomain: lower case
    ('', 'device'),                     # no prefix: a native resource
    ('kubernetes.io', 'device'),        # the kubernetes.io/ namespace is native
    ('rdma.kubernetes.io', 'device'),
    ('requests.rdma', 'device'),        # would read as a quota of requests
    ('r' * 245, 'device'),              # "requests." + prefix over 253 characters
    ('rdma', 'n' * 64),                 # the name part over 63 characters
    ('rdma', '-device'),                # starts with a letter or digit
    ('rdma', 'device\n'),
    ('rdma', ''),
    (None, 'device'),
])
def test_a_resource_name_kubernetes_refuses_is_refused_naming_both_settings(prefix, name):
    message = resource(prefix, name)
    assert message.startswith('ipu_k8s_rdma_resource_prefix "%s" and ipu_k8s_rdma_resource_name "%s"' % (prefix, name))
    assert 'e.g. rdma and rdma_shared_device_a' in message


# --- the control-plane endpoint ------------------------------------------------------------

def endpoint(value, port=6443):
    return checks.control_plane_endpoint_problem({'kubeadm_control_plane_endpoint': value,
                                                  'kubeadm_api_server_port': port, 'control_plane': ['cp1']})


@pytest.mark.parametrize('value', ['', 'k8s-api.example.com', 'k8s-api.example.com:6443', '10.0.0.10:6443',
                                   '10.0.0.10', '[fd00::10]:6443', 'fd00::10'])
def test_an_endpoint_kubeadm_parses_passes(value):
    assert endpoint(value) == ''


@pytest.mark.parametrize('value', ['k8s-api.example.com\n', 'K8s-Api.example.com', 'k8s..example.com',
                                   'k8s-api.example.com:0', 'k8s-api.example.com:65536', 'k8s-api.example.com:',
                                   'https://k8s-api.example.com', 'k8s-api.example.com/api', '[k8s-api]:6443', '[abc.def]:6443',
                                   '[fd00::10]:x', 'a' * 254, 6443])
def test_an_endpoint_kubeadm_refuses_is_refused(value):
    assert endpoint(value).startswith('kubeadm_api_server_port=6443 and kubeadm_control_plane_endpoint="%s"' % value)


# --- registry hosts ------------------------------------------------------------------------

MIRROR = {'mirrors': [{'url': 'https://mirror.example.com'}]}


@pytest.mark.parametrize('name', ['registry.k8s.io', 'registry.example.com:5000', 'localhost', '10.0.0.5:5000'])
def test_a_registry_host_name_passes(name):
    assert problem('registry_hosts', 'containerd_registry_hosts', {name: MIRROR}) == ''


@pytest.mark.parametrize('name', ['..', '.', '', 'registry..example.com', '.registry.example.com',
                                  'registry.example.com.', '-registry.example.com', 'registry.example.com:x',
                                  'registry.example.com:123456', 'registry/../x'])
def test_a_registry_host_with_an_empty_or_dotted_label_is_refused(name):
    assert problem('registry_hosts', 'containerd_registry_hosts', {name: MIRROR}).startswith(
        'containerd_registry_hosts["%s"]' % name)


def test_registry_mirrors_over_https_that_check_certificates_get_no_warning():
    assert checks.registry_hosts_warning({'registry.k8s.io': dict(MIRROR, server='https://registry.k8s.io')}) == ''
    assert checks.registry_hosts_warning({}) == ''


@pytest.mark.parametrize('entry,where', [
    ({'mirrors': [{'url': 'http://mirror.example.com:5000'}]}, 'mirror http://mirror.example.com:5000 (plain http)'),
    ({'mirrors': [{'url': 'https://mirror.example.com', 'skip_verify': True}]},
     'mirror https://mirror.example.com (skip_verify)'),
    ({'mirrors': [{'url': 'http://mirror.example.com', 'skip_verify': 'yes'}]},
     'mirror http://mirror.example.com (skip_verify and plain http)'),
    ({'server': 'http://registry.example.com', 'mirrors': []}, 'server (plain http)'),
])
def test_a_mirror_that_does_not_check_who_answers_gets_one_warning(entry, where):
    warning = checks.registry_hosts_warning({'registry.example.com': entry})
    assert 'containerd_registry_hosts["registry.example.com"] %s' % where in warning
    assert warning.count('containerd_registry_hosts[') == 1


# --- images pinned by digest ------------------------------------------------------------------

# 64 hex digits: the form of a sha256 digest (OCI image-spec descriptor.md, "sha256" algorithm).
DIGEST = 'sha256:' + '0123456789abcdef' * 4


@pytest.mark.parametrize('value', ['docker.io/nicolaka/netshoot:v0.13@' + DIGEST,
                                   'docker.io/nicolaka/netshoot@' + DIGEST])
def test_an_image_pinned_by_digest_is_an_image_reference_and_gets_no_warning(value):
    assert problem('image', 'verify_test_pod_image', value) == ''
    assert checks.image_digest_warning({'verify_test_pod_image': value}) == ''


@pytest.mark.parametrize('value', ['docker.io/nicolaka/netshoot:v0.13@sha256:' + '0' * 63,
                                   'docker.io/nicolaka/netshoot:v0.13@sha256:' + 'A' * 64,
                                   'docker.io/nicolaka/netshoot:v0.13@sha512:' + '0' * 128])
def test_a_digest_that_is_not_64_lowercase_hex_sha256_is_refused(value):
    assert problem('image', 'verify_test_pod_image', value).startswith('verify_test_pod_image is "%s", which is '
                                                                       'not an image reference' % value)


def test_images_given_by_tag_alone_get_one_warning_naming_each_setting():
    warning = checks.image_digest_warning({'verify_test_pod_image': 'docker.io/nicolaka/netshoot:v0.13',
                                           'verify_rdma_perftest_image': 'mellanox/perftest:v1',
                                           'verify_container_image': 'x@' + DIGEST})
    assert warning.startswith('verify_rdma_perftest_image is "mellanox/perftest:v1"; verify_test_pod_image is '
                              '"docker.io/nicolaka/netshoot:v0.13", by tag alone')
    assert 'name:tag@sha256:<64 hex digits>' in warning and 'verify_container_image' not in warning


def test_an_image_not_used_is_not_warned_about():
    assert checks.image_digest_warning({'verify_rdma_perftest_image': ''}) == ''
    assert checks.image_digest_warning({}) == ''


# --- file names ------------------------------------------------------------------------------

@pytest.mark.parametrize('value', ['ipu-k8s-memlock', '50-memlock', 'memlock@site.v2'])
def test_a_plain_file_name_passes(value):
    assert problem('file_name', 'containerd_systemd_dropin_name', value) == ''


@pytest.mark.parametrize('value', ['../../../../etc/cron.d/x', 'a/b', '..', '.', '.hidden', '', 'memlock\n',
                                   'x' * 201, None])
def test_a_file_name_with_a_directory_part_or_hidden_is_refused(value):
    assert problem('file_name', 'containerd_systemd_dropin_name', value).startswith(
        'containerd_systemd_dropin_name is "%s", which is not a plain file name' % value)


# --- local files, on the controller -----------------------------------------------------------

def local(value):
    return problem('local_file', 'helm_tarball_local_path', value)


@pytest.fixture
def abc(tmp_path):
    path = tmp_path / 'helm.tar.gz'
    path.write_bytes(b'abc')
    return path


def test_an_empty_local_path_downloads_instead(abc):
    assert local({'path': '', 'sha256': ABC_SHA256}) == ''


def test_a_local_file_with_the_pinned_sha256_passes(abc):
    assert local({'path': str(abc), 'sha256': ABC_SHA256, 'sha256_setting': 'helm_tarball_checksum'}) == ''


def test_a_local_file_with_another_sha256_is_refused_naming_both(abc):
    message = local({'path': str(abc), 'sha256': 'f' * 64, 'sha256_setting': 'helm_tarball_checksum'})
    assert message == ('helm_tarball_local_path is "%s": %s has sha256 %s on the controller, expected %s '
                       '(helm_tarball_checksum). Put the published file there, or correct helm_tarball_checksum.'
                       % (abc, abc, ABC_SHA256, 'f' * 64))


def test_a_key_file_without_a_sha256_is_only_required_to_be_a_file(abc):
    assert local({'path': str(abc)}) == ''


def test_a_relative_local_path_is_refused(abc):
    assert local({'path': 'helm.tar.gz'}).startswith('helm_tarball_local_path is "helm.tar.gz": give the absolute path')


@pytest.mark.parametrize('kind,needle', [('directory', 'it is a directory'), ('missing', 'nothing is there'),
                                         ('broken link', 'a broken symbolic link'),
                                         ('fifo', 'it is not a regular file')])
def test_a_local_path_that_is_no_regular_file_is_refused_naming_the_setting(tmp_path, kind, needle):
    path = tmp_path / 'x'
    if kind == 'directory':
        path.mkdir()
    elif kind == 'broken link':
        path.symlink_to(tmp_path / 'gone')
    elif kind == 'fifo':
        os.mkfifo(path)
    message = local({'path': str(path), 'sha256': ABC_SHA256})
    assert message.startswith('helm_tarball_local_path is "%s", which is not a regular file' % path), message
    assert needle in message


def directory(path, files):
    return problem('local_file', 'calico_manifests_local_path',
                   {'path': str(path), 'files': files, 'sha256_setting': 'calico_manifest_checksums'})


def test_a_local_directory_whose_files_have_their_sha256_passes(abc):
    assert directory(abc.parent, {abc.name: ABC_SHA256}) == ''


def test_a_local_directory_that_is_a_file_is_refused(abc):
    assert directory(abc, {}).startswith('calico_manifests_local_path is "%s", which is not a directory' % abc)


def test_a_local_directory_without_one_of_its_files_is_refused(abc):
    message = directory(abc.parent, {'tigera-operator.yaml': ABC_SHA256})
    assert message.startswith('calico_manifests_local_path is "%s", and tigera-operator.yaml is not a regular file'
                              % abc.parent)


def test_a_local_directory_file_without_a_sha256_is_refused(abc):
    assert directory(abc.parent, {abc.name: ''}) == (
        'calico_manifests_local_path is "%s": %s has sha256 %s on the controller, and calico_manifest_checksums gives '
        'no sha256 (64 lowercase hex digits) for it. Compare the file with its publisher\'s checksum, then set it in '
        'calico_manifest_checksums.' % (abc.parent, abc.name, ABC_SHA256))


def test_a_local_directory_file_with_another_sha256_is_refused(abc):
    assert '%s has sha256 %s on the controller, expected %s' % (abc.name, ABC_SHA256, 'e' * 64) in directory(
        abc.parent, {abc.name: 'e' * 64})


# --- settings nobody declares -------------------------------------------------------------------

@pytest.fixture
def roles(tmp_path):
    for role, options in (('ipu_k8s', ['ipu_k8s_kubernetes_version', 'ipu_k8s_pod_subnet']),
                          ('calico', ['calico_version'])):
        (tmp_path / role / 'meta').mkdir(parents=True)
        specs = {'argument_specs': {'main': {'options': {name: {'type': 'str'} for name in options[1:]}},
                                    'validate': {'options': {options[0]: {'type': 'str'}}}}}
        (tmp_path / role / 'meta' / 'argument_specs.yml').write_text(yaml.safe_dump(specs))
    (tmp_path / 'helm' / 'tasks').mkdir(parents=True)   # a role without argument specs: a prefix all the same
    (tmp_path / 'README.md').write_text('not a role')
    return tmp_path


def undeclared(hosts, roles_dir):
    return ''.join(checks.problems({'undeclared_settings': {'hosts': hosts, 'roles_dir': str(roles_dir)}}))


def test_declared_settings_of_every_entry_point_private_and_other_variables_pass(roles):
    assert undeclared({'node1': ['ipu_k8s_kubernetes_version', 'ipu_k8s_pod_subnet', 'calico_version',
                                 '__calico_private', 'ansible_host', 'readme_x', 'site_note']}, roles) == ''


def test_a_misspelt_setting_is_refused_naming_the_closest_one_and_the_hosts(roles):
    assert undeclared({'node1': ['ipu_k8s_kubernetes_verison'], 'node2': ['ipu_k8s_kubernetes_verison']}, roles) == (
        'ipu_k8s_kubernetes_verison (set for node1, node2) is no setting of any role (roles/*/meta/argument_specs.yml), '
        'so it would change nothing and the default would be used: did you mean ipu_k8s_kubernetes_version? '
        'Correct the name.')


def test_a_variable_of_a_role_without_argument_specs_is_refused(roles):
    assert undeclared({'node1': ['helm_whatever']}, roles).startswith('helm_whatever (set for node1) is no setting')


def test_an_undeclared_setting_far_from_every_one_is_to_be_removed(roles):
    assert undeclared({'node1': ['calico_zzzzzzzzzzzzzzzzzz']}, roles).endswith('no setting is close to it. Remove it.')


def test_every_undeclared_setting_is_named_in_the_one_message(roles):
    message = undeclared({'node1': ['calico_versoin', 'ipu_k8s_pod_subnett']}, roles)
    assert 'calico_versoin (set for node1)' in message and 'ipu_k8s_pod_subnett (set for node1)' in message


def test_the_projects_own_inventories_set_only_declared_settings():
    for path in (ROOT / 'inventories').rglob('*.yml'):
        names = set()

        def walk(node):
            if isinstance(node, dict):
                names.update(key for key in node if isinstance(key, str))
                for value in node.values():
                    walk(value)
        walk(yaml.safe_load(path.read_text()))
        assert undeclared({'any': sorted(names)}, ROOT / 'roles') == '', path


def test_what_the_roles_set_themselves_is_no_misspelt_setting(roles):
    (roles / 'calico' / 'vars').mkdir()
    (roles / 'calico' / 'vars' / 'main.yml').write_text('calico_release_dir: /x\n__calico_private: 1\n')
    (roles / 'calico' / 'tasks').mkdir()
    (roles / 'calico' / 'tasks' / 'main.yml').write_text(yaml.safe_dump([
        {'name': 'block', 'block': [{'ansible.builtin.set_fact': {'calico_ipam': 'x', 'cacheable': False}},
                                    {'ansible.builtin.command': 'true', 'register': 'calico_probe'}]}]))
    assert undeclared({'node1': ['calico_release_dir', 'calico_ipam', 'calico_probe']}, roles) == ''
    assert undeclared({'node1': ['calico_ipam_']}, roles).startswith('calico_ipam_ (set for node1)')


def test_libyamls_loader_and_the_pure_python_one_read_the_same_settings_from_the_roles(monkeypatch):
    with_libyaml = checks.declared_settings(ROOT / 'roles')
    monkeypatch.setattr(checks, '_SAFE_LOADER', yaml.SafeLoader)
    assert checks.declared_settings(ROOT / 'roles') == with_libyaml
    assert len(with_libyaml[1]) > 100, with_libyaml


def test_the_public_facts_an_operator_may_pass_are_no_misspelt_setting():
    # roles/rdma_network/tasks/site.yml tells an operator to pass -e network_operator_ipam=whereabouts.
    assert undeclared({'any': ['network_operator_ipam', 'ipu_k8s_site', 'ipu_k8s_kubernetes_dir']}, ROOT / 'roles') == ''


# --- a site's own sha256 ---------------------------------------------------------------------

@pytest.mark.parametrize('value', ['', ABC_SHA256])
def test_a_sites_sha256_or_none_passes(value):
    assert problem('sha256_or_empty', 'helm_tarball_checksum', value) == ''


@pytest.mark.parametrize('value', ['sha256:' + ABC_SHA256, ABC_SHA256.upper(), ABC_SHA256 + '\n', ABC_SHA256[:-1],
                                   None])
def test_a_sites_sha256_not_as_sha256sum_prints_it_is_refused(value):
    assert problem('sha256_or_empty', 'helm_tarball_checksum', value) == (
        'helm_tarball_checksum is "%s": give the file\'s sha256 as 64 lowercase hex digits without a "sha256:" '
        'prefix, as sha256sum prints it, or "" for the one this project pins.' % value)


def test_a_local_directory_file_is_checked_against_the_tables_sha256_when_the_site_gives_none(abc):
    value = {'path': str(abc.parent), 'files': {abc.name: ''}, 'sha256_setting': 'calico_manifest_checksums',
             'pinned_files': {abc.name: 'e' * 64}, 'pinned_setting': 'sha256 of %s in the v3.29.3 row of ipu_k8s_versions.calico'}
    assert problem('local_file', 'calico_manifests_local_path', value).endswith(
        'expected %s (sha256 of %s in the v3.29.3 row of ipu_k8s_versions.calico). Put the published file there, or correct '
        'sha256 of %s in the v3.29.3 row of ipu_k8s_versions.calico.' % ('e' * 64, abc.name, abc.name))
    assert problem('local_file', 'calico_manifests_local_path', dict(value, files={abc.name: ABC_SHA256})) == ''
    assert problem('local_file', 'calico_manifests_local_path', dict(value, pinned_files={abc.name: ABC_SHA256})) == ''
