"""The one versions table, ipu_k8s_versions (roles/ipu_k8s/defaults/main/versions.yml), in one shape.

component -> version -> row, every row with the same field names for the same meaning: the
range it is chosen for (kubernetes_min/_max) and the one upstream documents (documented_min/_max),
both ends or none; every checksum under sha256 as {file name: 64 hex digits}; images as
{component: {repository, image, version}}; support from NVIDIA's life-cycle words; source naming
where its facts were read. A row in an older shape (a digest under amd64_sha256 or chart_sha256,
the version inside the row, an image as one string) is refused here, before a role reads it.
The facts themselves are held by scripts/refresh-versions --check and the component tests.
"""
import copy
import sys
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml'
VERSIONS = yaml.safe_load(VERSIONS_FILE.read_text())['ipu_k8s_versions']

MINOR_RE = re.compile(r'1\.[0-9]+')
SHA256_RE = re.compile(r'[0-9a-f]{64}')
DATE_RE = re.compile(r'[0-9]{4}-[0-9]{2}-[0-9]{2}')
# How each component's versions are written (its key), and the fields only it has.
KEYS = {'kubernetes': re.compile(r'1\.[0-9]+'), 'calico': re.compile(r'v[0-9]+\.[0-9]+\.[0-9]+'),
        'network_operator': re.compile(r'[0-9]+\.[0-9]+\.[0-9]+'), 'helm': re.compile(r'[0-9]+\.[0-9]+\.[0-9]+'),
        'ipu_operator': re.compile(r'[0-9]+\.[0-9]+\.[0-9]+')}
OWN = {'kubernetes': {'released', 'end_of_support', 'pause', 'containerd'}, 'calico': set(),
       'network_operator': {'url', 'layout', 'ipam'}, 'helm': set(), 'ipu_operator': {'archive', 'ships_crd'}}
SHARED = {'kubernetes_min', 'kubernetes_max', 'documented_min', 'documented_max', 'sha256', 'images', 'support',
          'source'}
SUPPORT = {'Supported', 'Deprecated', 'End of Support', 'not listed'}
IMAGE_FIELDS = {'repository', 'image', 'version'}


def _minor(text):
    return tuple(int(part) for part in text.split('.'))


def _version(text):
    return tuple(int(part) for part in re.findall(r'[0-9]+', text))


def _files(component, version, row):
    """The files a row's sha256 must name: what the role downloads for it (helm: each Linux tarball)."""
    if component == 'helm':
        return {'helm-v%s-linux-%s.tar.gz' % (version, arch) for arch in ('amd64', 'arm64')}
    if component == 'network_operator':
        return {str(row.get('url', '')).rsplit('/', 1)[-1]}
    if component == 'ipu_operator':
        return {str(row.get('archive', '')).rsplit('/', 1)[-1]}
    return set()


def row_problems(component, version, row):
    where = '%s %s' % (component, version)
    if not isinstance(row, dict):
        return ['%s: a row is a mapping of fields, not %r' % (where, row)]
    problems = ['%s: field %s is not one of the table\'s (%s)' % (where, key, ', '.join(sorted(SHARED | OWN[component])))
                for key in sorted(set(row) - SHARED - OWN[component])]
    for low, high in (('kubernetes_min', 'kubernetes_max'), ('documented_min', 'documented_max')):
        ends = [row.get(low), row.get(high)]
        if ends == [None, None]:
            continue
        if not all(isinstance(end, str) and MINOR_RE.fullmatch(end) for end in ends):
            problems.append('%s: %s/%s must both be quoted minors ("1.31"), not %r' % (where, low, high, ends))
        elif _minor(ends[0]) > _minor(ends[1]):
            problems.append('%s: %s %s is above %s %s' % (where, low, ends[0], high, ends[1]))
    if 'documented_min' in row and 'kubernetes_min' in row and not problems and not (
            _minor(row['documented_min']) <= _minor(row['kubernetes_min'])
            and _minor(row['kubernetes_max']) <= _minor(row['documented_max'])):
        problems.append('%s: chosen for minors outside the range it documents' % where)
    sums = row.get('sha256', {})
    if not isinstance(sums, dict) or not all(isinstance(name, str) and name and '/' not in name
                                             and isinstance(digest, str) and SHA256_RE.fullmatch(digest)
                                             for name, digest in sums.items()):
        problems.append('%s: sha256 must be {file name: 64 lower-case hex digits}, not %r' % (where, sums))
    elif not _files(component, version, row) <= set(sums) and (component != 'network_operator' or sums):
        problems.append('%s: sha256 names %s, not %s' % (where, sorted(sums), sorted(_files(component, version, row))))
    images = row.get('images', {})
    if not isinstance(images, dict) or not all(isinstance(image, dict) and set(image) == IMAGE_FIELDS
                                               and all(isinstance(v, str) and v for v in image.values())
                                               for image in images.values()):
        problems.append('%s: images must be {component: {repository, image, version}}, not %r' % (where, images))
    if 'support' in row and row['support'] not in SUPPORT:
        problems.append('%s: support %r is none of %s' % (where, row['support'], sorted(SUPPORT)))
    sources = str(row.get('source', '')).split(', ')
    if not all(source.startswith('tests/schemas/') and (ROOT / source).is_file() for source in sources):
        problems.append('%s: source must name the tests/schemas/ files its facts were read in, not %r'
                        % (where, row.get('source')))
    if component == 'kubernetes':
        dates = [row.get('released'), row.get('end_of_support')]
        if not all(isinstance(d, str) and DATE_RE.fullmatch(d) for d in dates) or dates[0] >= dates[1]:
            problems.append('%s: released and end_of_support must be quoted dates, in that order: %r' % (where, dates))
        if 'pause' in row and not (isinstance(row['pause'], str) and re.fullmatch(r'[0-9.]+', row['pause'])):
            problems.append('%s: pause must be a quoted tag ("3.10"), not %r' % (where, row['pause']))
        floors = row.get('containerd', [])
        if not (isinstance(floors, list) and all(isinstance(f, str) and re.fullmatch(r'[0-9]+\.[0-9]+\.[0-9]+', f)
                                                  for f in floors)):
            problems.append('%s: containerd must list quoted X.Y.Z patches, not %r' % (where, floors))
    if component == 'network_operator':
        problems += ['%s: %s is required' % (where, key) for key in ('support', 'url', 'layout', 'ipam') if key not in row]
    if component == 'ipu_operator':
        problems += ['%s: %s is required' % (where, key) for key in ('archive', 'sha256', 'ships_crd') if key not in row]
    if component in ('calico', 'helm') and 'sha256' not in row:
        problems.append('%s: a download without its sha256' % where)
    return problems


def shape_problems(versions):
    if not isinstance(versions, dict) or set(versions) != set(KEYS):
        return ['the table has components %s, not %s' % (sorted(versions or {}), sorted(KEYS))]
    problems = []
    for component, rows in versions.items():
        if not isinstance(rows, dict):
            problems.append('%s: rows keyed by version, not %s' % (component, type(rows).__name__))
            continue
        keys = list(rows)
        bad = [key for key in keys if not (isinstance(key, str) and KEYS[component].fullmatch(key))]
        if bad:
            problems.append('%s: keys must be quoted version strings like %s: %r' % (component, KEYS[component].pattern, bad))
            continue
        order = _minor if component == 'kubernetes' else _version
        if keys != sorted(keys, key=order):
            problems.append('%s: rows out of version order' % component)
        for version, row in rows.items():
            problems += row_problems(component, version, row)
    return problems


def test_the_table_is_in_one_shape():
    assert shape_problems(VERSIONS) == []


def test_the_table_is_the_only_variable_of_its_file():
    assert list(yaml.safe_load(VERSIONS_FILE.read_text())) == ['ipu_k8s_versions']


def test_no_role_keeps_a_version_table_of_its_own():
    # The seven tables the one table replaced, by name, anywhere a role or inventory could set them.
    old = ('preflight_kubernetes_releases', 'calico_releases', 'network_operator_chart_table', 'helm_releases',
           'ipu_operator_charts', '__containerd_kubernetes_support', '__containerd_pause_versions')
    files = list(ROOT.glob('roles/*/defaults/**/*.yml')) + list(ROOT.glob('roles/*/vars/**/*.yml')) + list(
        ROOT.glob('inventories/*/group_vars/**/*.yml'))
    found = [(str(path.relative_to(ROOT)), name) for path in files for name in old
             if re.search(r'(?m)^#? ?%s:' % name, path.read_text())]
    assert not found, found


def _broken(change):
    versions = copy.deepcopy(VERSIONS)
    change(versions)
    return shape_problems(versions)


# Each row put back in a shape the old tables had, or broken as the rules above forbid: refused.
BREAKS = {
    'helm digest per architecture': lambda v: v['helm']['3.20.0'].update(
        amd64_sha256=v['helm']['3.20.0']['sha256'].pop('helm-v3.20.0-linux-amd64.tar.gz')),
    'chart digest as chart_sha256': lambda v: v['network_operator']['1.3.0'].update(
        chart_sha256=v['network_operator']['1.3.0'].pop('sha256')['network-operator-1.3.0.tgz']),
    'ipu operator digest as a string': lambda v: v['ipu_operator']['1.2.0'].update(sha256='2' * 64),
    'ipu operator image as a string': lambda v: v['ipu_operator']['1.2.0'].update(
        kube_rbac_proxy_image='gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'),
    'version inside the row': lambda v: v['calico']['v3.31.7'].update(version='v3.31.7'),
    'rows as a list': lambda v: v.update(calico=[dict(row, version=k) for k, row in v['calico'].items()]),
    'range with one end': lambda v: v['calico']['v3.31.7'].pop('kubernetes_max'),
    'minor as a number': lambda v: v['helm']['3.20.0'].update(kubernetes_min=1.32),
    'unquoted key': lambda v: v['kubernetes'].update({1.3: v['kubernetes'].pop('1.30')}),
    'a digest not 64 hex digits': lambda v: v['calico']['v3.31.7']['sha256'].update({'tigera-operator.yaml': 'abc'}),
    'helm row without the arm64 tarball': lambda v: v['helm']['3.21.4']['sha256'].pop('helm-v3.21.4-linux-arm64.tar.gz'),
    'support outside the life cycle': lambda v: v['network_operator']['26.4.1'].update(support='EOL'),
    'image without its version': lambda v: v['network_operator']['25.7.0']['images']['multus'].pop('version'),
    'a source that is no file': lambda v: v['helm']['3.20.0'].update(source='helm.sh'),
    'pause as a number': lambda v: v['kubernetes']['1.36'].update(pause=3.1),
    'rows out of order': lambda v: v.update(helm=dict(reversed(list(v['helm'].items())))),
    'a component renamed': lambda v: v.update(helm_releases=v.pop('helm')),
}


@pytest.mark.parametrize('name', sorted(BREAKS))
def test_a_row_in_another_shape_is_refused(name):
    assert _broken(BREAKS[name]), name


OLD_TABLES = ('preflight_kubernetes_releases', 'calico_releases', 'network_operator_chart_table', 'helm_releases',
              'ipu_operator_charts')


@pytest.mark.parametrize('name', OLD_TABLES)
def test_an_inventory_still_setting_an_old_table_is_refused_by_name(name):
    # preflight's rule on settings no role declares (undeclared_settings_problem) names each one
    # once; the two containerd tables were private (__) and no inventory set them.
    sys.path.insert(0, str(ROOT / 'plugins' / 'filter'))
    import ipu_k8s_checks  # noqa: E402  (plugins/filter; needs ansible, as the roles do)
    message = ipu_k8s_checks.undeclared_settings_problem({'poplar-01': [name]}, str(ROOT / 'roles'))
    assert message.startswith('%s (set for poplar-01) is no setting of any role' % name), message
