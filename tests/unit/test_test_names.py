"""Every test the suite holds runs: a test function defined twice under one name in a module
(or a class) is silently replaced by the second, and pytest never collects the first."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
MODULES = sorted([*TESTS.rglob('test_*.py'), *(ROOT / 'molecule').rglob('test_*.py')])


def repeated_test_names(source: str) -> list[str]:
    """Names of test functions defined more than once in one scope (the module or a class)."""
    repeated = []
    scopes = [ast.parse(source)]
    while scopes:
        scope = scopes.pop()
        seen = set()
        for node in scope.body:
            if isinstance(node, ast.ClassDef):
                scopes.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith('test'):
                if node.name in seen:
                    repeated.append('%s (line %d)' % (node.name, node.lineno))
                seen.add(node.name)
    return repeated


def test_a_name_defined_twice_is_found():
    source = 'def test_a():\n    pass\n\n\ndef test_b():\n    pass\n\n\ndef test_a():\n    pass\n'
    assert repeated_test_names(source) == ['test_a (line 9)']
    assert repeated_test_names('class TestX:\n    def test_a(self): pass\n    def test_a(self): pass\n') == \
        ['test_a (line 3)']
    assert not repeated_test_names('def test_a():\n    pass\n\n\nclass TestX:\n    def test_a(self): pass\n')


def test_no_test_is_shadowed_by_another_of_its_name():
    shadowed = {str(module.relative_to(ROOT)): names for module in MODULES
                if (names := repeated_test_names(module.read_text()))}
    assert len(MODULES) > 100, MODULES
    assert not shadowed, 'defined again, so pytest runs only the last of each name (rename one): %s' % shadowed
