"""The network_operator role's chart choice (the role's filter over its own table, and the
validate entry point's refusals run through a play), Helm values and NicClusterPolicy,
rendered through the role's real defaults, vars and templates, for every chart release the
role supports; and the static shape of the helm, network_operator and rdma_network roles."""

import importlib.util
import json
import sys

import pytest
import yaml

from ipu_k8s_render import (ROLES, ROOT, SCHEMAS, flatten_keys, load_role_yaml, render_role_template, render_role_yaml,
                      role_expression, role_variables, validate_custom_resource)

sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402

_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', ROOT / 'plugins' / 'filter' / 'ipu_k8s_checks.py')
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

SCHEMA_DIR = SCHEMAS / 'network_operator'
# What each chart release is, read from the release itself (tests/schemas/network_operator).
RELEASES = yaml.safe_load((SCHEMA_DIR / 'releases.yaml').read_text())['releases']


def release_crd(chart_version, name):
    """The CRD file stored for that release (its own CRD, as shipped at its tag)."""
    return SCHEMA_DIR / RELEASES[chart_version]['crds'][name]['file']


def minor_tuple(minor):
    return tuple(int(p) for p in minor.split('.'))
GUIDE_NODE_AFFINITY = {
    'preferredDuringSchedulingIgnoredDuringExecution': [{
        'weight': 1,
        'preference': {'matchExpressions': [
            {'key': 'node-role.kubernetes.io/master', 'operator': 'DoesNotExist'},
            {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'DoesNotExist'},
        ]},
    }],
}


VERSIONS = yaml.safe_load((ROLES / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions']


def chart_table():
    """The rows of ipu_k8s_versions.network_operator, each carrying its chart_version."""
    return [dict(row, chart_version=version) for version, row in VERSIONS['network_operator'].items()]


# Rows whose release could be read upstream (tests/schemas/network_operator/releases.yaml
# records a release that could not, e.g. no tag yet, with not_readable).
CHART_VERSIONS = [row['chart_version'] for row in chart_table() if 'crds' in RELEASES.get(row['chart_version'], {})]
UNREADABLE_VERSIONS = [row['chart_version'] for row in chart_table() if row['chart_version'] not in CHART_VERSIONS]
POLICY_VERSIONS = [row['chart_version'] for row in chart_table() if row['layout'] == 'policy'
                   and row['chart_version'] in CHART_VERSIONS]
ROWS = dict((row['chart_version'], row) for row in chart_table())


def chosen_chart(kubernetes_version, chart_version='', sha256=''):
    """The row the role's filter picks from the role's own table for these settings."""
    return checks.network_operator_chart_row({
        'releases': VERSIONS['network_operator'], 'network_operator_chart_version': chart_version,
        'network_operator_chart_sha256': sha256, 'ipu_k8s_rdma_resource_prefix': 'rdma',
        'ipu_k8s_kubernetes_minor': '.'.join(kubernetes_version.split('.')[:2])})


class ValidateCases:
    """The validate entry point (what preflight runs) run once through a play, one local host
    per case with the case's settings as host variables: refusal(case) is the message the
    host failed with, passes(case) asserts it did not fail."""

    SHA = 'ab' * 32

    def __init__(self):
        self._failures = None

    def cases(self):
        def served_by(row):
            return {'ipu_k8s_kubernetes_version': row['kubernetes_min'] + '.0'} if 'kubernetes_min' in row else {}
        legacy = {'ipu_k8s_kubernetes_version': '1.25.16', 'network_operator_chart_version': '1.4.0'}
        cases = {'kubernetes-%s' % version: {'ipu_k8s_kubernetes_version': version}
                 for version in ('1.16.15', '1.27.4', '1.36.0')}
        for version in NO_DIGEST_VERSIONS:
            pinned = dict(served_by(ROWS[version]), network_operator_chart_version=version)
            cases['no-digest-' + version] = pinned
            cases['no-digest-local-' + version] = dict(pinned, network_operator_chart_local_path='/srv/no.tgz')
            cases['site-digest-' + version] = dict(pinned, network_operator_chart_sha256=self.SHA)
        cases.update({'unreadable-' + version: {'network_operator_chart_version': version}
                      for version in UNREADABLE_VERSIONS})
        cases.update({
            'bad-digest': dict(legacy, network_operator_chart_sha256='ABC'),
            'other-digest': dict(legacy, network_operator_chart_sha256=self.SHA),
            'same-digest': dict(legacy, network_operator_chart_sha256=RELEASES['1.4.0']['chart_archive']['sha256']),
            'unknown-version': {'network_operator_chart_version': '9.9.9'},
            'legacy-prefix': {'ipu_k8s_kubernetes_version': '1.25.16', 'ipu_k8s_rdma_resource_prefix': 'nvidia.com'},
            'policy-prefix': {'ipu_k8s_kubernetes_version': '1.31.4', 'ipu_k8s_rdma_resource_prefix': 'nvidia.com',
                              'network_operator_chart_sha256': self.SHA},
            'ipam-dhcp': {'ipu_k8s_versions': dict(VERSIONS, network_operator={
                              '26.1.2': dict(VERSIONS['network_operator']['26.1.2'], ipam='dhcp')}),
                          'network_operator_chart_version': '26.1.2', 'network_operator_chart_sha256': self.SHA},
        })
        return cases

    def failures(self, tmp):
        if self._failures is None:
            inventory, play = tmp / 'hosts.yml', tmp / 'play.yml'
            inventory.write_text(yaml.safe_dump({'all': {
                'hosts': self.cases(),
                'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
            play.write_text(yaml.safe_dump([{'hosts': 'all', 'gather_facts': False, 'tasks': [{
                'ansible.builtin.include_role': {'name': 'network_operator', 'tasks_from': 'validate'}}]}]))
            run = run_playbook(play, inventory, tmp / 'runner', timeout=300)
            assert run.status in ('successful', 'failed'), run.stdout[-3000:]
            self._failures = dict((host, ' '.join(text.split())) for host, text in run.failures().items())
        return self._failures

    def refusal(self, case):
        assert case in self.cases(), case
        return self.failures(self.tmp)[case]

    def passes(self, case):
        assert case in self.cases(), case
        assert case not in self.failures(self.tmp), self.failures(self.tmp)[case]


NO_DIGEST_VERSIONS = [row['chart_version'] for row in chart_table() if not row.get('sha256')]
VALIDATE_CASES = ValidateCases()


@pytest.fixture(autouse=True, scope='module')
def _validate_cases_dir(tmp_path_factory):
    VALIDATE_CASES.tmp = tmp_path_factory.mktemp('network_operator_validate')


# --- chart release table ----------------------------------------------------------------

# Every minor each row serves, from the table itself: the row is what the role picks.
SERVED = [(f'{major}.{minor}.0', row['chart_version']) for row in chart_table() if 'kubernetes_min' in row
          for major, low in [map(int, row['kubernetes_min'].split('.'))]
          for minor in range(low, int(row['kubernetes_max'].split('.')[1]) + 1)]


@pytest.mark.parametrize('kubernetes_version, chart_version', SERVED)
def test_chart_release_follows_the_kubernetes_minor(kubernetes_version, chart_version):
    assert chosen_chart(kubernetes_version)['chart_version'] == chart_version


@pytest.mark.parametrize('chart_version', [row['chart_version'] for row in chart_table() if 'kubernetes_min' not in row])
def test_row_without_a_range_is_chosen_only_by_name(chart_version):
    assert all(chosen_chart(f'1.{minor}.0').get('chart_version') != chart_version for minor in range(24, 40))
    assert chosen_chart('1.35.0', chart_version)['chart_version'] == chart_version


def test_shared_default_kubernetes_version_gets_a_current_chart():
    default = role_variables('network_operator')['ipu_k8s_kubernetes_version']
    assert chosen_chart(str(default))['layout'] == 'policy'


@pytest.mark.parametrize('chart_version', UNREADABLE_VERSIONS)
def test_row_of_a_release_that_could_not_be_read_is_never_installed(chart_version):
    assert RELEASES[chart_version]['source']['not_readable']
    assert 'kubernetes_min' not in ROWS[chart_version] and 'images' not in ROWS[chart_version]
    assert 'whose row in ipu_k8s_versions.network_operator has no images' in VALIDATE_CASES.refusal('unreadable-' + chart_version)


@pytest.mark.parametrize('chart_version', [row['chart_version'] for row in chart_table() if 'kubernetes_min' in row])
def test_row_serves_only_minors_the_release_documents(chart_version):
    row, documented = ROWS[chart_version], RELEASES[chart_version]['kubernetes']
    assert minor_tuple(documented['min']) <= minor_tuple(row['kubernetes_min'])
    assert minor_tuple(row['kubernetes_max']) <= minor_tuple(documented['max'])
    assert documented['source'], chart_version


# 25.7.0 is the last release whose NicClusterPolicy has ipamPlugin (Whereabouts); 25.10.0
# removed it (commit "Remove ipamPlugin from NicClusterPolicy"): each release's own CRD says.
@pytest.mark.parametrize('chart_version', [v for v in CHART_VERSIONS if v in RELEASES])
def test_ipam_follows_the_chart_row(chart_version):
    ipam = ROWS[chart_version]['ipam']
    has_ipam_plugin = 'ipamPlugin' in yaml.safe_load(release_crd(chart_version, 'nicclusterpolicies').read_text())[
        'spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties'][
        'secondaryNetwork']['properties']
    assert has_ipam_plugin == (ipam == 'whereabouts')


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_row_images_are_those_of_the_release(chart_version):
    wanted = dict(RELEASES[chart_version]['images'])
    wanted.pop('whereabouts' if ROWS[chart_version]['ipam'] == 'nv-ipam' else 'nv_ipam', None)
    assert ROWS[chart_version]['images'] == wanted


def test_cni_plugins_of_25_4_0_are_the_release_files_not_the_24_x_matrix():
    assert ROWS['25.4.0']['images']['cni_plugins']['version'] == 'v1.6.2-update.1'


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
def test_chart_archive_digest_is_the_repositorys_where_it_publishes_one(chart_version):
    archive = RELEASES[chart_version].get('chart_archive')
    row = ROWS[chart_version]
    if archive is None:
        # NGC publishes the archive at <repo>/charts/<name>-<version>.tgz (network-operator-docs,
        # docs/life-cycle-management.rst: `helm fetch .../charts/network-operator-|helm-chart-version|.tgz`)
        # but no digest readable here: the row carries none and the site must give one.
        assert 'sha256' not in row
        assert row['url'] == 'https://helm.ngc.nvidia.com/nvidia/charts/network-operator-%s.tgz' % chart_version
    else:
        assert (row['url'], row['sha256']) == (archive['url'], {archive['url'].rsplit('/', 1)[1]: archive['sha256']})


def test_every_fact_names_its_upstream_source():
    for version, release in RELEASES.items():
        assert release['source']['repo'] == 'github.com/Mellanox/network-operator'
        assert release['source']['tag'] == 'v' + version
        if version not in CHART_VERSIONS:
            assert release['source']['not_readable'] and 'crds' not in release
            continue
        assert len(release['source']['commit']) == 40
        for crd in release['crds'].values():
            assert (SCHEMA_DIR / crd['file']).is_file() and len(crd['blob']) == 40
            assert crd['blob'] in (SCHEMA_DIR / crd['file']).read_text().splitlines()[0]
    keys = yaml.safe_load((SCHEMA_DIR / 'chart-values-keys.yaml').read_text())['versions']
    assert set(keys) == set(CHART_VERSIONS)
    for version, entry in keys.items():
        assert entry['verified'] is True
        assert entry['source']['tag'] == 'v' + version
        assert entry['source']['path'] == 'deployment/network-operator/values.yaml'


@pytest.mark.parametrize('kubernetes_version', ['1.16.15', '1.27.4', '1.36.0'])
def test_unsupported_kubernetes_minor_is_refused_with_a_way_out(kubernetes_version):
    assert chosen_chart(kubernetes_version) == {}
    message = VALIDATE_CASES.refusal('kubernetes-' + kubernetes_version)
    minor = '.'.join(kubernetes_version.split('.')[:2])
    assert 'supports Kubernetes %s' % minor in message
    assert 'network_operator_chart_version' in message
    assert ', '.join('%s-%s' % (row['kubernetes_min'], row['kubernetes_max'])
                     for row in chart_table() if 'kubernetes_min' in row) in message


def test_every_row_names_the_archive_of_its_release():
    for row in chart_table():
        assert row['url'].endswith('/network-operator-%s.tgz' % row['chart_version'])


SITE_SHA = 'ab' * 32
@pytest.mark.parametrize('chart_version', NO_DIGEST_VERSIONS)
def test_release_without_a_published_digest_is_refused_until_the_site_gives_one(chart_version):
    message = VALIDATE_CASES.refusal('no-digest-' + chart_version)
    if 'images' not in ROWS[chart_version]:  # a row that could not be read is refused for that first
        assert 'whose row in ipu_k8s_versions.network_operator has no images' in message
        return
    assert 'network_operator_chart_sha256 is empty' in message
    assert 'sha256sum network-operator-%s.tgz' % chart_version in message
    assert ROWS[chart_version]['url'] in message
    # A local copy is checked like a download: it needs the sha256 too.
    assert 'network_operator_chart_sha256 is empty' in VALIDATE_CASES.refusal('no-digest-local-' + chart_version)
    VALIDATE_CASES.passes('site-digest-' + chart_version)


def archive_fetch():
    """The arguments release.yml gives the shared chart install (roles/ipu_k8s/tasks/helm_chart.yml),
    which fetches the archive with them (fetch.yml) and installs the release from it."""
    tasks = load_role_yaml('network_operator', 'tasks/release.yml')
    return next(t for t in tasks if t.get('ansible.builtin.include_role', {}).get('tasks_from') == 'helm_chart')['vars']


def test_site_digest_is_the_one_the_archive_is_checked_against():
    fetch = archive_fetch()
    variables = {'network_operator_chart_version': '26.1.2', 'network_operator_chart_sha256': SITE_SHA}
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_sha256'], variables) == SITE_SHA
    assert fetch['ipu_k8s_fetch_sha256_setting'] == 'network_operator_chart_sha256'
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_pinned_sha256'], variables) == ''
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_url'], variables) == ROWS['26.1.2']['url']


@pytest.mark.parametrize('case, expected', [
    ('bad-digest', 'network_operator_chart_sha256 is "ABC": it must be the archive\'s sha256, 64 lowercase hex digits'),
    ('other-digest', 'archive has sha256 ' + RELEASES['1.4.0']['chart_archive']['sha256']),
])
def test_bad_or_contradicting_site_digest_is_refused(case, expected):
    assert expected in VALIDATE_CASES.refusal(case)
    VALIDATE_CASES.passes('same-digest')


def test_chart_version_override_wins_over_the_kubernetes_minor():
    assert chosen_chart('1.31.4', '1.4.0')['chart_version'] == '1.4.0'


def test_unknown_chart_version_override_is_refused():
    assert chosen_chart('1.31.4', '9.9.9') == {}
    assert '9.9.9 is not a row of ipu_k8s_versions.network_operator' in VALIDATE_CASES.refusal('unknown-version')


def test_legacy_chart_refuses_a_resource_prefix_it_cannot_publish():
    assert 'prefix "rdma"' in VALIDATE_CASES.refusal('legacy-prefix')
    VALIDATE_CASES.passes('policy-prefix')


# --- Helm values --------------------------------------------------------------------------

def allowed_value_keys(chart_version):
    """Keys of the release's own values.yaml (and, legacy layout, its policy template)."""
    return set(yaml.safe_load((SCHEMA_DIR / 'chart-values-keys.yaml').read_text())['versions'][chart_version]['keys'])


def key_is_allowed(key, allowed):
    """Listed, a parent of a listed key, or inside a free-form ("x.*") key."""
    parts = key.split('.')
    return (key in allowed
            or any(a.startswith(key + '.') or a.startswith(key + '[]') for a in allowed)
            or any('.'.join(parts[:i]) + '.*' in allowed for i in range(1, len(parts))))


def render_values(chart_version, **overrides):
    overrides['network_operator_chart_version'] = chart_version
    return render_role_yaml('network_operator', 'values.yaml.j2', overrides)


@pytest.mark.parametrize('chart_version', CHART_VERSIONS)
def test_values_set_only_keys_the_chart_version_reads(chart_version):
    values = render_values(chart_version)
    allowed = allowed_value_keys(chart_version)
    unknown = sorted(k for k in flatten_keys(values) if not key_is_allowed(k, allowed))
    assert unknown == [], 'chart %s does not read %s' % (chart_version, unknown)


@pytest.mark.parametrize('chart_version', [v for v in CHART_VERSIONS if v not in POLICY_VERSIONS])
def test_legacy_values_have_the_chart_render_the_guide_policy(chart_version):
    values = render_values(chart_version)
    assert values['nfd'] == {'enabled': True}
    assert values['deployCR'] is True
    assert values['ofedDriver'] == {'deploy': False}
    assert values['nvPeerDriver'] == {'deploy': False}
    assert values['rdmaSharedDevicePlugin'] == {
        'deploy': True, 'resources': [{'name': 'rdma_shared_device_a', 'drivers': ['mlx5_core']}]}
    assert values['secondaryNetwork'] == {
        'deploy': True, 'cniPlugins': {'deploy': True}, 'multus': {'deploy': True}, 'ipamPlugin': {'deploy': True}}
    assert values['nodeAffinity'] == GUIDE_NODE_AFFINITY


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_values_leave_the_policy_to_the_role(chart_version):
    values = render_values(chart_version)
    assert values == {'nfd': {'enabled': True, 'deployNodeFeatureRules': True},
                      'sriovNetworkOperator': {'enabled': False}}


def test_legacy_values_carry_the_selector_variables():
    values = render_values('1.4.0', ipu_k8s_rdma_resource_name='rdma_ipu',
                           network_operator_rdma_vendors=['15b3'], network_operator_rdma_drivers=[],
                           network_operator_rdma_ifnames=['enp65s0f0'])
    assert values['rdmaSharedDevicePlugin']['resources'] == [
        {'name': 'rdma_ipu', 'vendors': ['15b3'], 'ifNames': ['enp65s0f0']}]


# --- NicClusterPolicy (chart 24.10 and later) ---------------------------------------------------

def render_policy(chart_version, **overrides):
    overrides['network_operator_chart_version'] = chart_version
    return render_role_yaml('network_operator', 'nicclusterpolicy.yaml.j2', overrides)


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_matches_the_releases_nicclusterpolicy_crd(chart_version):
    validate_custom_resource(render_policy(chart_version), release_crd(chart_version, 'nicclusterpolicies'))


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_deploys_the_rows_ipam(chart_version):
    spec = render_policy(chart_version)['spec']
    if ROWS[chart_version]['ipam'] == 'nv-ipam':
        assert 'ipamPlugin' not in spec['secondaryNetwork']
        assert spec['nvIpam'] == dict(RELEASES[chart_version]['images']['nv_ipam'], enableWebhook=False)
    else:
        assert 'nvIpam' not in spec
        assert spec['secondaryNetwork']['ipamPlugin'] == RELEASES[chart_version]['images']['whereabouts']


def test_nv_ipam_webhook_is_a_setting():
    assert render_policy('26.1.2', network_operator_nv_ipam_webhook=True)['spec']['nvIpam']['enableWebhook'] is True


def test_whereabouts_policy_is_refused_by_a_crd_without_ipam_plugin():
    """The 26.1.2 CRD has no ipamPlugin: a Whereabouts policy would not pass it."""
    with pytest.raises(AssertionError, match='ipamPlugin'):
        validate_custom_resource(render_policy('25.7.0'), release_crd('26.1.2', 'nicclusterpolicies'))


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_uses_the_images_the_chart_release_documents(chart_version):
    policy = render_policy(chart_version)
    images = RELEASES[chart_version]['images']
    spec = policy['spec']
    assert policy['metadata'] == {'name': 'nic-cluster-policy'}
    for component, image in [(spec['rdmaSharedDevicePlugin'], images['rdma_shared_device_plugin']),
                             (spec['secondaryNetwork']['multus'], images['multus']),
                             (spec['secondaryNetwork']['cniPlugins'], images['cni_plugins']),
                             (spec['secondaryNetwork'].get('ipamPlugin') or spec['nvIpam'],
                              images['whereabouts' if ROWS[chart_version]['ipam'] == 'whereabouts' else 'nv_ipam'])]:
        assert {k: component[k] for k in ('repository', 'image', 'version')} == image
    assert spec['nodeAffinity'] == GUIDE_NODE_AFFINITY
    assert 'ofedDriver' not in spec


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_device_plugin_config_is_json_for_the_shared_resource(chart_version):
    config = json.loads(render_policy(chart_version)['spec']['rdmaSharedDevicePlugin']['config'])
    assert config == {'configList': [{
        'resourceName': 'rdma_shared_device_a', 'rdmaHcaMax': 63, 'selectors': {'drivers': ['mlx5_core']}}]}


def test_policy_carries_a_non_default_resource_prefix_and_selectors():
    config = json.loads(render_policy('25.4.0', ipu_k8s_rdma_resource_prefix='graphcore.ai',
                                      network_operator_rdma_vendors=['15b3'],
                                      network_operator_rdma_ifnames=['ens1f0'])['spec']['rdmaSharedDevicePlugin']['config'])
    entry = config['configList'][0]
    assert entry['resourcePrefix'] == 'graphcore.ai'
    assert entry['selectors'] == {'vendors': ['15b3'], 'drivers': ['mlx5_core'], 'ifNames': ['ens1f0']}


def test_policy_with_a_misspelt_field_fails_the_crd_check():
    policy = render_policy('25.4.0')
    policy['spec']['secondaryNetwork']['multus']['verison'] = 'v4.1.0'
    with pytest.raises(AssertionError, match='verison'):
        validate_custom_resource(policy, release_crd('25.4.0', 'nicclusterpolicies'))


# --- role shape: modules with state, no hidden failures, check mode by design ------------

MY_ROLES = ['helm', 'network_operator', 'rdma_network']
COMMAND_MODULES = {'ansible.builtin.command', 'ansible.builtin.shell', 'ansible.builtin.raw', 'ansible.builtin.script'}


def all_tasks(role):
    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ('block', 'rescue', 'always'):
                yield from walk(task.get(key))
    for path in sorted((ROLES / role / 'tasks').glob('*.yml')):
        for task in walk(yaml.safe_load(path.read_text())):
            yield path.name, task


@pytest.mark.parametrize('role', MY_ROLES)
def test_role_commands_are_read_only_probes(role):
    for name, task in all_tasks(role):
        used = COMMAND_MODULES & set(task)
        if used:
            assert task.get('changed_when') is False and task.get('check_mode') is False, (name, task['name'])
        assert 'ignore_errors' not in task, (name, task['name'])
        assert task.get('failed_when') is not False, (name, task['name'])


@pytest.mark.parametrize('role', MY_ROLES)
def test_role_entry_points_have_argument_specs(role):
    # Defaults against the spec (names, values, types): tests/unit/test_role_defaults_match_argument_specs.py.
    specs = yaml.safe_load((ROLES / role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    for entry, spec in specs.items():
        assert (ROLES / role / 'tasks' / ('%s.yml' % entry)).is_file(), entry
        for option, details in (spec.get('options') or {}).items():
            assert details.get('type') and details.get('description'), (entry, option)


def test_values_template_renders_for_the_site_defaults_without_overrides():
    text = render_role_template('network_operator', 'values.yaml.j2')
    default = role_variables('network_operator')['ipu_k8s_kubernetes_version']
    assert 'chart %s' % chosen_chart(str(default))['chart_version'] in text.splitlines()[0]


# --- verified chart archives ---------------------------------------------------------------

def release_task():
    """The shared install's helm task (roles/ipu_k8s/tasks/helm_chart.yml)."""
    block = next(t for t in load_role_yaml('ipu_k8s', 'tasks/helm_chart.yml') if 'block' in t)['block']
    return next(t for t in block if 'kubernetes.core.helm' in t)


@pytest.mark.parametrize('chart_version, local_path, expected_ref', [
    ('1.4.0', '', '/var/cache/ipu-k8s/charts/network-operator-1.4.0.tgz'),
    ('25.4.0', '', '/var/cache/ipu-k8s/charts/network-operator-25.4.0.tgz'),
    # A copy from the controller lands in the same place, checked like a download.
    ('1.4.0', '/srv/network-operator-1.4.0.tgz', '/var/cache/ipu-k8s/charts/network-operator-1.4.0.tgz'),
])
def test_chart_comes_from_a_checked_file(chart_version, local_path, expected_ref):
    task = release_task()['kubernetes.core.helm']
    assert task['chart_ref'] == '{{ ipu_k8s_fetch_dest }}'
    variables = {'network_operator_chart_version': chart_version, 'network_operator_chart_local_path': local_path}
    dest = role_expression('network_operator', archive_fetch()['ipu_k8s_fetch_dest'], variables)
    assert ' '.join(dest.split()) == expected_ref
    # A file carries its version: nothing is asked of a repository.
    assert 'chart_version' not in task and 'update_repo_cache' not in task


def test_archive_download_checks_the_rows_sha256():
    fetch = archive_fetch()
    variables = {'network_operator_chart_version': '1.3.0'}
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_pinned_sha256'], variables) == (
        RELEASES['1.3.0']['chart_archive']['sha256'])
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_pinned_setting'], variables) == (
        'ipu_k8s_versions.network_operator.1.3.0.sha256.network-operator-1.3.0.tgz')
    assert role_expression('network_operator', fetch['ipu_k8s_fetch_url'], variables) == RELEASES['1.3.0']['chart_archive']['url']


def test_row_with_an_unknown_ipam_is_refused():
    # The chart filter holds a row's choices (rows keyed by version are beyond an argument spec).
    assert ('ipu_k8s_versions.network_operator row 26.1.2: ipam is "dhcp", not one of whereabouts, nv-ipam. Fix the '
            'row.') in VALIDATE_CASES.refusal('ipam-dhcp')
    VALIDATE_CASES.passes('site-digest-26.1.2')


# --- an IPU node that is a control plane keeping kubeadm's taint -----------------------------

# The taint kubeadm keeps on the control planes of a cluster of more than one node; from 1.25
# the only one (kubernetes/kubernetes pull request 110095 stopped setting, and on upgrade
# removed, node-role.kubernetes.io/master), and every policy-layout row serves 1.29 or later.
CONTROL_PLANE_TOLERATION = {'key': 'node-role.kubernetes.io/control-plane', 'operator': 'Exists',
                            'effect': 'NoSchedule'}


def inventory_groups(control_plane, workers, ipu_nodes):
    """The groups of an inventory laid out as inventories/gcore/hosts.yml is."""
    return {'all': control_plane + workers, 'ungrouped': [], 'k8s_cluster': control_plane + workers,
            'control_plane': control_plane, 'workers': workers, 'ipu_nodes': ipu_nodes}


# poplar-01 is both control plane and IPU node on a 3-node cluster.
TAINTED_IPU_CONTROL_PLANE = inventory_groups(['poplar-01'], ['poplar-02', 'poplar-03'],
                                             ['poplar-01', 'poplar-02', 'poplar-03'])
ONE_NODE = inventory_groups(['poplar-01'], [], ['poplar-01'])
NO_OVERLAP = inventory_groups(['cp1'], ['poplar-01', 'poplar-02'], ['poplar-01', 'poplar-02'])


def crd_spec_properties(chart_version):
    return yaml.safe_load(release_crd(chart_version, 'nicclusterpolicies').read_text())['spec']['versions'][0][
        'schema']['openAPIV3Schema']['properties']['spec']['properties']


@pytest.mark.parametrize('chart_version', POLICY_VERSIONS)
def test_policy_tolerates_the_control_plane_taint_only_where_an_ipu_node_keeps_it(chart_version):
    # Each release's CRD has spec.tolerations, a list of core Tolerations; the operator hands
    # it to every DaemonSet of the policy (pkg/state/state_rdma_shared_device_plugin.go,
    # state_multus_cni.go, state_cni_plugins.go, state_whereabouts_cni.go, state_nv_ipam_cni.go:
    # Tolerations: cr.Spec.Tolerations; v26.4.1 state_rdma_shared_device_plugin.go:165
    # cr.GetTolerations(), api/v1alpha1/nicclusterpolicy_types.go:511 returning Spec.Tolerations),
    # whose templates add only nvidia.com/gpu (e.g. v26.4.1
    # manifests/state-multus-cni/0050-multus-ds.yml:38-44).
    tolerations = crd_spec_properties(chart_version)['tolerations']
    assert tolerations['type'] == 'array'
    assert {'key', 'operator', 'effect'} <= set(tolerations['items']['properties'])
    policy = render_policy(chart_version, groups=TAINTED_IPU_CONTROL_PLANE)
    validate_custom_resource(policy, release_crd(chart_version, 'nicclusterpolicies'))
    assert policy['spec']['tolerations'] == [CONTROL_PLANE_TOLERATION]
    # Everything else is the policy of any other site.
    del policy['spec']['tolerations']
    assert policy == render_policy(chart_version)
    # A cluster of one node (kubeadm removes the taint), control planes untainted by the
    # kubeadm role, and no IPU node on a control plane: the policy of today, to the byte.
    today = render_role_template('network_operator', 'nicclusterpolicy.yaml.j2',
                                 {'network_operator_chart_version': chart_version})
    for groups, untaint in ((ONE_NODE, False), (NO_OVERLAP, False), (TAINTED_IPU_CONTROL_PLANE, True)):
        text = render_role_template('network_operator', 'nicclusterpolicy.yaml.j2', {
            'network_operator_chart_version': chart_version, 'groups': groups,
            'kubeadm_untaint_control_plane': untaint})
        assert text == today, (groups['control_plane'], untaint)
    # The setting overrides the inventory either way.
    assert render_policy(chart_version, groups=NO_OVERLAP, network_operator_tolerate_control_plane='always')[
        'spec']['tolerations'] == [CONTROL_PLANE_TOLERATION]


def test_preflight_refuses_a_tainted_ipu_control_plane_the_policy_may_not_or_cannot_tolerate(tmp_path):
    """The validate entry point (what preflight runs) on the 3-node inventory: a legacy row, and
    never, are refused with the host and the ways out; auto on a policy row passes."""
    # What the legacy refusal rests on: the legacy releases' NicClusterPolicy has no
    # tolerations (and at v1.3.0/v1.4.0 manifests/stage-multus-cni/0050-multus-ds.yml,
    # stage-container-networking-plugins/0010-*.yml and stage-whereabouts-cni/0050-*.yaml
    # carry no toleration at all).
    for chart_version in [v for v in CHART_VERSIONS if ROWS[v]['layout'] == 'legacy']:
        assert 'tolerations' not in crd_spec_properties(chart_version), chart_version
    cases = {
        'poplar-01': {'network_operator_tolerate_control_plane': 'never',
                      'ipu_k8s_kubernetes_version': '1.31.4', 'network_operator_chart_sha256': SITE_SHA},
        'poplar-02': {'ipu_k8s_kubernetes_version': '1.25.16'},
        'poplar-03': {'ipu_k8s_kubernetes_version': '1.31.4', 'network_operator_chart_sha256': SITE_SHA},
    }
    inventory, play = tmp_path / 'hosts.yml', tmp_path / 'play.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
        'children': {
            'k8s_cluster': {'children': {'control_plane': {'hosts': {'poplar-01': cases['poplar-01']}},
                                         'workers': {'hosts': {h: cases[h] for h in ('poplar-02', 'poplar-03')}}}},
            'ipu_nodes': {'hosts': {h: {} for h in cases}}}}}))
    play.write_text(yaml.safe_dump([{'hosts': 'all', 'gather_facts': False, 'tasks': [{
        'ansible.builtin.include_role': {'name': 'network_operator', 'tasks_from': 'validate'}}]}]))
    run = run_playbook(play, inventory, tmp_path / 'runner', timeout=300)
    assert run.status == 'failed', run.stdout[-3000:]
    failures = dict((host, ' '.join(text.split())) for host, text in run.failures().items())
    assert set(failures) == {'poplar-01', 'poplar-02'}, failures
    assert failures['poplar-01'].startswith('network_operator_tolerate_control_plane is never, but poplar-01 is in '
                                            'control_plane and ipu_nodes'), failures['poplar-01']
    assert 'network-operator chart 1.4.0 (legacy layout) cannot tolerate that taint' in failures['poplar-02']
    for message in failures.values():
        assert 'Set kubeadm_untaint_control_plane: true' in message
        assert 'take poplar-01 out of ipu_nodes' in message
