"""Whether the containerd a node's package source would install can run the cluster's Kubernetes.

containerd's RELEASES.md ("Kubernetes Support") lists, per Kubernetes minor, the oldest patch of
each containerd series recommended for it (the containerd field of ipu_k8s_versions.kubernetes,
roles/ipu_k8s/defaults/main/versions.yml; tests/schemas/containerd/kubernetes-support.yaml where
it was read). A minor whose row lists no
series of the candidate's major cannot run it at all (1.36 lists only 2.x: the kubelet of 1.36
no longer supports containerd 1.x), so that is refused; a candidate below the recommended patch
of its own major is a warning, as RELEASES.md words it ("recommended").

    "{{ (containerd_package_version or (__containerd_apt_policy.stdout | containerd_apt_candidate))
        | containerd_runtime_check(ipu_k8s_kubernetes_minor, ipu_k8s_versions.kubernetes, package,
                                   containerd_package_source) }}"
"""
import re

CANDIDATE_RE = re.compile(r'^\s*Candidate:\s*(\S+)\s*$', re.M)
VERSION_RE = re.compile(r'^(?:[0-9]+:)?([0-9]+)\.([0-9]+)\.([0-9]+)')
# Where each package source's containerd comes from, for the fix a message names.
SOURCES = {'distribution': "the distribution's archive", 'docker': "Docker's repository"}


def _version(text):
    match = VERSION_RE.match(str(text or ''))
    return tuple(int(part) for part in match.groups()) if match else None


def containerd_apt_candidate(policy):
    """The version `apt-cache policy PACKAGE` says apt would install; '' for none or no package."""
    match = CANDIDATE_RE.search(str(policy or ''))
    return '' if not match or match.group(1) == '(none)' else match.group(1)


def containerd_floors(kubernetes):
    """{minor: [the oldest recommended patch of each containerd series]} of the Kubernetes rows
    of ipu_k8s_versions that list one."""
    return dict((str(minor), row['containerd']) for minor, row in (kubernetes or {}).items()
                if (row or {}).get('containerd'))


def containerd_runtime_check(candidate, minor, kubernetes, package, source):
    """{'problem': '', 'warning': ''}: a problem when no series of the candidate's major is listed
    for MINOR, a warning when the candidate is below the recommendation of its major or cannot be
    read (no candidate in the package lists, or a minor the table does not list). KUBERNETES:
    ipu_k8s_versions.kubernetes."""
    support = containerd_floors(kubernetes)
    listed = [_version(v) for v in (support or {}).get(str(minor)) or []]
    where = SOURCES.get(source, source)
    recommended = ', '.join('%d.%d.%d+' % v for v in listed)
    version = _version(candidate)
    if not listed:
        return {'problem': '', 'warning': (
            "containerd's RELEASES.md recommends no containerd release for Kubernetes %s (its Kubernetes "
            'Support table lists %s); %s would install %s %s.' % (
                minor, ', '.join(sorted(support or {}, key=lambda m: [int(x) for x in m.split('.')])) or 'no minor',
                where, package, candidate or '(nothing)'))}
    if version is None:
        return {'problem': '', 'warning': (
            'The package lists name no %s to install from %s (containerd_package_source: %s) yet, so its version '
            "is not judged before the install: Kubernetes %s needs containerd %s (containerd's RELEASES.md)."
            % (package, where, source, minor, recommended))}
    same_major = [v for v in listed if v[0] == version[0]]
    if not same_major:
        majors = sorted({v[0] for v in listed})
        older = [m for m, row in (support or {}).items() if any(_version(v)[0] == version[0] for v in row)]
        newest = max(older, key=lambda m: [int(x) for x in m.split('.')], default=None)
        fix = ('Set containerd_package_source: docker (Docker\'s repository carries containerd.io %d.x)' % majors[-1]
               if source != 'docker' else 'Set containerd_package_version to a containerd.io %d.x release' % majors[-1])
        return {'problem': (
            'containerd_package_source is "%s": %s would install %s %s, but Kubernetes %s (ipu_k8s_kubernetes_version) '
            'needs containerd %s (containerd\'s RELEASES.md recommends %s). %s%s.'
            % (source, where, package, candidate, minor, ' or '.join('%d.x' % m for m in majors), recommended,
               fix, ', or choose Kubernetes %s or older for containerd %d.x' % (newest, version[0]) if newest else '')),
            'warning': ''}
    series = [v for v in same_major if v[:2] == version[:2]]
    if (series and version < series[0]) or (not series and version[:2] < max(same_major)[:2]):
        return {'problem': '', 'warning': (
            '%s would install %s %s, older than containerd recommends for Kubernetes %s (%s, containerd\'s '
            'RELEASES.md): it may run, but it is not what containerd tests with this Kubernetes. Set '
            'containerd_package_version, or containerd_package_source: docker for Docker\'s containerd.io.'
            % (where[0].upper() + where[1:], package, candidate, minor, recommended))}
    return {'problem': '', 'warning': ''}


class FilterModule:
    def filters(self):
        return {'containerd_runtime_check': containerd_runtime_check, 'containerd_apt_candidate': containerd_apt_candidate}
