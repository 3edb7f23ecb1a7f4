"""What the configured Kubernetes package source offers, and whether it has the pinned release.

The source is the site's truth: a patch this project has never heard of is fine when the
repository (or the air-gapped directory) has it, and a patch it does not have is refused
with the list of what it has.
"""
import base64
import gzip
import re

# Matched in full (fullmatch): a '$' anchor would let a trailing newline through.
DEB_NAME = re.compile(r'(?P<name>[^_/]+)_(?P<version>[^_/]+)_[^_/]+\.deb')


def _version_key(version):
    """Debian order for the versions a package source has: the epoch (0 when absent) first."""
    epoch, colon, rest = version.partition(':')
    epoch, rest = (int(epoch), rest) if colon and epoch.isdigit() else (0, version)
    return [epoch] + [int(part) if part.isdigit() else part for part in re.split(r'[.\-+~]', rest)]


def slurped_index_versions(content, package):
    """index_versions of a Packages or Packages.gz file as ansible's slurp returns it (base64)."""
    raw = base64.b64decode(content)
    if raw[:2] == b'\x1f\x8b':  # the gzip magic number
        raw = gzip.decompress(raw)
    return index_versions(raw.decode('utf-8', 'replace'), package)


def index_versions(index, package):
    """Versions of PACKAGE listed in the text of a Debian Packages index."""
    versions, name = set(), None
    for line in str(index).splitlines():
        if not line.strip():
            name = None
        elif line.startswith('Package:'):
            name = line.split(':', 1)[1].strip()
        elif line.startswith('Version:') and name == package:
            versions.add(line.split(':', 1)[1].strip())
    return sorted(versions, key=_version_key)


def _deb(path):
    """(package, version) of a .deb file named name_version_arch.deb, as apt-get download names it; else (None, None)."""
    match = DEB_NAME.fullmatch(str(path).rsplit('/', 1)[-1])
    return (match.group('name'), match.group('version').replace('%3a', ':')) if match else (None, None)


def deb_file_versions(paths, package):
    """Versions of PACKAGE among .deb file names."""
    return sorted({version for name, version in map(_deb, paths or []) if name == package}, key=_version_key)


def deb_install_order(paths, order):
    """The .deb files of the packages in ORDER (dependencies first), in that order; others left out."""
    return [path for name in order for path in sorted(str(p) for p in paths or [] if _deb(p)[0] == name)]


def deb_files_by_name(paths, packages):
    """{package: its .deb file} for each of PACKAGES among PATHS (the release's files, one each)."""
    return {name: str(path) for path in paths or [] for name in [_deb(path)[0]] if name in (packages or [])}


def version_problem(wanted, available, package, source):
    """'' when the source has PACKAGE at WANTED, else one message naming what it has and the fix."""
    if wanted in (available or []):
        return ''
    has = ', '.join(available) if available else 'no %s at all' % package
    return ('%s %s is not in the package source %s, which has %s. Set ipu_k8s_kubernetes_version to a '
            'release the source has (or kubernetes_packages_revision to its revision), or point the source '
            '(kubernetes_packages_repo_url, kubernetes_packages_debs_local_path) at one that has %s.'
            % (package, wanted, source, has, wanted))


class FilterModule:
    def filters(self):
        return {
            'kubernetes_packages_index_versions': slurped_index_versions,
            'kubernetes_packages_deb_file_versions': deb_file_versions,
            'kubernetes_packages_deb_files_by_name': deb_files_by_name,
            'kubernetes_packages_deb_install_order': deb_install_order,
            'kubernetes_packages_version_problem': version_problem,
        }
