"""The Kubernetes client lock of the ipu_k8s role, read where the role is, whichever role
evaluates ipu_k8s_client_requirements (a relative file lookup would search the files/ of
the role that happens to use the variable, e.g. verify)."""

from pathlib import Path

from ansible.errors import AnsibleFilterError

FILES = Path(__file__).resolve().parents[2] / 'roles' / 'ipu_k8s' / 'files'  # the collection's root


def requirement_lines(text):
    """The requirement lines of a pip requirements file: no comments, no blank lines."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith('#')]


def ipu_k8s_role_requirements(name):
    """Requirement lines of roles/ipu_k8s/files/<name>."""
    path = FILES / name
    try:
        return requirement_lines(path.read_text())
    except OSError as error:
        raise AnsibleFilterError('cannot read the client lock %s: %s' % (path, error.strerror))


class FilterModule:
    def filters(self):
        return {'ipu_k8s_role_requirements': ipu_k8s_role_requirements}
