#!/usr/bin/env python3
"""Regenerate the facts in this directory from bare clones of the upstream repositories.

    tests/schemas/network_operator/refresh.py NETWORK_OPERATOR_GIT_DIR DOCS_GIT_DIR

NETWORK_OPERATOR_GIT_DIR is a clone (bare is fine) of github.com/Mellanox/network-operator
with its tags and its gh-pages branch. For every chart release the role has a row for it
reads, at that release's tag:
  - deployment/network-operator/values.yaml          -> chart-values-keys.yaml (key list)
  - deployment/network-operator/templates/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml
    (legacy layout only: the values its template reads that values.yaml leaves out)
  - deployment/network-operator/crds/mellanox.com_{nicclusterpolicies,macvlannetworks}.yaml
  - manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml (the IPPool CRD the
    operator installs with nvIpam)                    -> crds/<tag>/... (one file per blob)
  - hack/release.yaml                                 -> releases.yaml (component images)
and from gh-pages release/index.yaml the chart digests, checked against the .tgz files
stored next to it. DOCS_GIT_DIR is github.com/Mellanox/network-operator-docs: the
Kubernetes range each release documents (docs/platform-support.rst, "Kubernetes" row) at
the ref named in DOCS below. CRDs are stored with their field descriptions left out; everything
else (names, types, patterns, enums, required lists) is as upstream.
Nothing here runs in the tests: they read only the files it writes.
"""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from testlib import flatten_keys  # noqa: E402  (tests/testlib.py)

HERE = Path(__file__).resolve().parent
REPO = 'github.com/Mellanox/network-operator'
CHART = 'deployment/network-operator'
NCP_TEMPLATE = CHART + '/templates/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml'
CRDS = {
    'nicclusterpolicies': CHART + '/crds/mellanox.com_nicclusterpolicies.yaml',
    'macvlannetworks': CHART + '/crds/mellanox.com_macvlannetworks.yaml',
    'ippools': 'manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml',
}
RELEASES = ['1.3.0', '1.4.0', '25.4.0', '25.7.0', '26.1.2']
DOCS_REPO = 'github.com/Mellanox/network-operator-docs'
DOCS_PATH = 'docs/platform-support.rst'
# Which docs ref documents each release. The 25.7.x branch was updated after the 25.7.0 tag
# (commit a484b0e, "chore: update kubernetes version": <=1.32 -> <=1.33); the docs have no
# 26.1.2 tag, the v26.1.x branch is that line's. 1.3.0 and 1.4.0 predate the docs repository:
# their ranges are the release notes' (docs.nvidia.com, "Network Operator Application Notes",
# Release Notes: "1.4.0 Added support for Kubernetes >= 1.21 and <=1.25", "1.3.0 Added
# support for Kubernetes >= 1.17 and <=1.24").
DOCS = {'25.4.0': 'v25.4.0', '25.7.0': 'v25.7.x', '26.1.2': 'v26.1.x'}
RELEASE_NOTES = {'1.3.0': ('1.17', '1.24'), '1.4.0': ('1.21', '1.25')}
COMPONENTS = {'RdmaSharedDevicePlugin': 'rdma_shared_device_plugin', 'Multus': 'multus',
              'CniPlugins': 'cni_plugins', 'IpamPlugin': 'whereabouts', 'nvIpam': 'nv_ipam'}


class Dumper(yaml.SafeDumper):
    """Block sequences indented under their key, as yamllint --strict wants."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def dump(data):
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=150)


def git(git_dir, *args, binary=False):
    out = subprocess.run(['git', '--git-dir', str(git_dir)] + list(args), check=True, capture_output=True).stdout
    return out if binary else out.decode()


def exists(git_dir, tag, path):
    return subprocess.run(['git', '--git-dir', str(git_dir), 'cat-file', '-e', '%s:%s' % (tag, path)],
                          capture_output=True).returncode == 0


def strip_descriptions(node):
    if isinstance(node, dict):
        return dict((k, strip_descriptions(v)) for k, v in node.items() if k != 'description')
    if isinstance(node, list):
        return [strip_descriptions(v) for v in node]
    return node


def kubernetes_range(docs_dir, version):
    if version in RELEASE_NOTES:
        low, high = RELEASE_NOTES[version]
        return {'min': low, 'max': high, 'source': {
            'url': 'https://docs.nvidia.com/networking/display/COKAN10/Release+Notes',
            'text': 'Added support for Kubernetes >= %s and <=%s' % (low, high)}}
    ref = DOCS[version]
    text = git(docs_dir, 'show', '%s:%s' % (ref, DOCS_PATH))
    match = re.search(r'\* - Kubernetes\n\s+- >=(1\.[0-9]+) and <=(1\.[0-9]+)', text)
    return {'min': match.group(1), 'max': match.group(2), 'source': {
        'repo': DOCS_REPO, 'ref': ref, 'commit': git(docs_dir, 'rev-parse', ref + '^{commit}').strip(),
        'path': DOCS_PATH, 'text': match.group(0).split('- ', 2)[-1].strip()}}


def main(git_dir, docs_dir):
    git_dir = Path(git_dir)
    values_out = {}
    crd_out = {}
    release_out = {}
    for version in RELEASES:
        tag = 'v' + version
        commit = git(git_dir, 'rev-parse', tag + '^{commit}').strip()
        values_path = CHART + '/values.yaml'
        values = yaml.safe_load(git(git_dir, 'show', '%s:%s' % (tag, values_path)))
        keys = flatten_keys(values)
        entry = {'verified': True,
                 'source': {'repo': REPO, 'tag': tag, 'commit': commit, 'path': values_path,
                            'blob': git(git_dir, 'rev-parse', '%s:%s' % (tag, values_path)).strip()}}
        if exists(git_dir, tag, NCP_TEMPLATE):
            template = git(git_dir, 'show', '%s:%s' % (tag, NCP_TEMPLATE))
            read = set(re.findall(r'\.Values\.([A-Za-z0-9_.]+)', template))
            items = set(re.findall(r'\$element\.([A-Za-z0-9_]+)', template))
            added = sorted(k for k in read if k not in keys)
            if 'rdmaSharedDevicePlugin.resources' in read:
                added += sorted('rdmaSharedDevicePlugin.resources[].' + i for i in items
                                if 'rdmaSharedDevicePlugin.resources[].' + i not in keys)
                if 'rdmaSharedDevicePlugin.resources[]' not in keys:
                    added.append('rdmaSharedDevicePlugin.resources[]')
            # Kubernetes types the template passes through as a whole (toYaml).
            if 'nodeAffinity' in read:
                added.append('nodeAffinity.*')
            entry['template_source'] = {'path': NCP_TEMPLATE, 'adds': sorted(set(added))}
            keys |= set(added)
        entry['keys'] = sorted(keys)
        values_out[version] = entry

        crd_out[version] = {}
        for name, path in CRDS.items():
            if not exists(git_dir, tag, path):
                continue
            blob = git(git_dir, 'rev-parse', '%s:%s' % (tag, path)).strip()
            target = HERE / 'crds' / ('%s-%s.yaml' % (name, blob[:12]))
            crd = strip_descriptions(yaml.safe_load(git(git_dir, 'show', '%s:%s' % (tag, path))))
            header = ('# Upstream blob %s of %s,\n# %s,\n# read at tag %s (commit %s); releases.yaml lists every tag with this blob.\n'
                      '# Field descriptions left out; everything else as upstream. Written by ../refresh.py.\n'
                      % (blob, REPO, path, tag, commit))
            target.parent.mkdir(exist_ok=True)
            target.write_text(header + '---\n' + dump(crd))
            crd_out[version][name] = {'file': 'crds/' + target.name, 'path': path, 'blob': blob}

        release = {'source': {'repo': REPO, 'tag': tag, 'commit': commit}}
        if exists(git_dir, tag, 'hack/release.yaml'):
            data = yaml.safe_load(git(git_dir, 'show', '%s:hack/release.yaml' % tag))
            release['source']['path'] = 'hack/release.yaml'
            release['images'] = dict(
                (ours, {'repository': data[theirs]['repository'], 'image': data[theirs]['image'],
                        'version': data[theirs]['version']})
                for theirs, ours in COMPONENTS.items() if theirs in data)
        chart = yaml.safe_load(git(git_dir, 'show', '%s:%s/Chart.yaml' % (tag, CHART)))
        release['chart_kube_version'] = chart.get('kubeVersion')
        release['kubernetes'] = kubernetes_range(docs_dir, version)
        release['crds'] = crd_out[version]
        release_out[version] = release

    index = yaml.safe_load(git(git_dir, 'show', 'gh-pages:release/index.yaml'))
    pages_commit = git(git_dir, 'rev-parse', 'gh-pages').strip()
    for entry in index['entries']['network-operator']:
        if entry['version'] in release_out:
            tgz = git(git_dir, 'show', 'gh-pages:release/network-operator-%s.tgz' % entry['version'], binary=True)
            digest = hashlib.sha256(tgz).hexdigest()
            if digest != entry['digest']:
                raise SystemExit('%s: index digest %s but the stored .tgz hashes to %s'
                                 % (entry['version'], entry['digest'], digest))
            release_out[entry['version']]['chart_archive'] = {
                'url': entry['urls'][0], 'sha256': digest,
                'source': {'repo': REPO, 'branch': 'gh-pages', 'commit': pages_commit,
                           'path': 'release/index.yaml', 'checked_against': 'release/network-operator-%s.tgz'
                           % entry['version']}}

    (HERE / 'chart-values-keys.yaml').write_text(
        '---\n# Value keys of the network-operator chart per release, read from the real values.yaml at\n'
        '# the release tag (and, for the legacy layout, the keys its NicClusterPolicy template reads).\n'
        '# A key ending in "[]" is a list whose items have the keys below it; "x.*" is a free-form\n'
        '# Kubernetes object. Written by refresh.py; see README.md.\n'
        + dump({'versions': values_out}))
    (HERE / 'releases.yaml').write_text(
        '---\n# Per chart release: tag and commit read, component images from hack/release.yaml,\n'
        '# Chart.yaml kubeVersion, the CRD files stored for it, and the chart archive digest (gh-pages\n'
        '# index.yaml, checked against the archive). Written by refresh.py; see README.md.\n'
        + dump({'releases': release_out}))


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
