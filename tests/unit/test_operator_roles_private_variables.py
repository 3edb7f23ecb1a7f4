"""The operator layers' private variables (__network_operator_*, __ipu_operator_*,
__rdma_network_*) are read and set by their own role alone: other roles and the tests go
through the roles' settings, entry points and public facts (network_operator_ipam,
ipu_k8s_site, rdma_network_node_cni...), so a role may rename its private variables at will."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROLES = ('network_operator', 'ipu_operator', 'rdma_network')
PRIVATE = re.compile(r'\b__(%s)_\w+' % '|'.join(ROLES))


def readers(role):
    """Every file that may not name the role's private variables."""
    others = [p for p in (ROOT / 'roles').rglob('*') if p.is_file() and p.relative_to(ROOT / 'roles').parts[0] != role]
    tests = [p for p in (ROOT / 'tests').rglob('*') if p.suffix in ('.py', '.yml', '.yaml') and p != Path(__file__)]
    return others + tests + sorted((ROOT / 'playbooks').rglob('*.yml'))


def test_no_other_role_and_no_test_names_an_operator_roles_private_variables():
    found = ['%s:%d: %s' % (path.relative_to(ROOT), number, match.group(0))
             for role in ROLES for path in readers(role)
             for number, line in enumerate(path.read_text(errors='replace').splitlines(), 1)
             for match in PRIVATE.finditer(line) if match.group(1) == role]
    assert found == []
