"""verify reads other layers through their public interface: the entry points it runs and
the public facts and options they document, never another role's private (__<role>_*)
variables, which that role may rename at will."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / 'roles').iterdir() if p.is_dir() and p.name != 'verify')


def test_verify_reads_no_other_roles_private_variables():
    private = re.compile(r'\b__(%s)_\w+' % '|'.join(map(re.escape, ROLES)))
    found = ['%s:%d: %s' % (path.relative_to(ROOT), number, match.group(0))
             for path in sorted((ROOT / 'roles' / 'verify').rglob('*.y*ml'))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for match in private.finditer(line)]
    assert found == []
