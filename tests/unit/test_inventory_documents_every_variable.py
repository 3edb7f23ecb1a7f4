"""The example site inventory shows every variable a site may set, once.

inventories/gcore/group_vars/all/ is the operator's map of the settings: site.yml holds the
common ones, roles.yml every other role variable with its default (the value in the role's
defaults/main.yml). A variable added to a role's meta/argument_specs.yml without a line there
fails this test.
"""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GROUP_VARS = ROOT / "inventories" / "gcore" / "group_vars" / "all"
ROLES = sorted(p.parent.parent.name for p in ROOT.glob("roles/*/meta/argument_specs.yml"))


def role_variables(role):
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    names = set()
    for entry in spec["argument_specs"].values():
        options = entry.get("options") or {}
        # An entry point that requires options takes arguments from its callers, not settings.
        if not any(option.get("required") for option in options.values()):
            names.update(options.keys())
    return sorted(n for n in names if not n.startswith("__"))


def shown_variables():
    """Names set or shown commented (`# name:`) at the start of a line."""
    shown = []
    for path in sorted(GROUP_VARS.glob("*.yml")):
        for line in path.read_text().splitlines():
            match = re.match(r"^(?:# ?)?([a-z][a-z0-9_]*):", line)
            if match:
                shown.append(match.group(1))
    return shown


@pytest.mark.parametrize("role", ROLES)
def test_every_role_variable_is_shown_in_the_example_inventory(role):
    shown = set(shown_variables())
    missing = [name for name in role_variables(role) if name not in shown]
    assert not missing, f"not in inventories/gcore/group_vars/all/: {missing}"


def test_no_variable_is_shown_twice():
    known = {name for role in ROLES for name in role_variables(role)}
    shown = [name for name in shown_variables() if name in known]
    assert sorted(shown) == sorted(set(shown)), "shown more than once: " + str(
        sorted({n for n in shown if shown.count(n) > 1}))


def role_defaults():
    """{name: value} over every role's defaults/main.yml (the one home of a default)."""
    found = {}
    for role in ROLES:
        for path in [ROOT / "roles" / role / "defaults" / "main.yml"] + sorted((ROOT / "roles" / role / "defaults" / "main").glob("*.yml")):
            if path.exists():
                found.update(yaml.safe_load(path.read_text()) or {})
    return found


SUMMARY = "(a table; its default is in roles/ defaults/main.yml)"


def shown_defaults():
    """{name: value} of the commented-out lines (`# name: value`, continued by `#   ...`)."""
    shown = {}
    for path in sorted(GROUP_VARS.glob("*.yml")):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            match = re.match(r"^# ?([a-z][a-z0-9_]*):(.*)$", line)
            if not match:
                continue
            block = [line[2:] if line.startswith("# ") else line[1:]]
            for follow in lines[index + 1:]:
                if not re.match(r"^#\s{2,}\S", follow):
                    break
                block.append(follow[2:])
            text = "\n".join(block)
            try:
                shown[match.group(1)] = yaml.safe_load(text)[match.group(1)]
            except yaml.YAMLError:
                # An abbreviated table that points at its full default: a summary, not a value.
                assert "/defaults/main" in text, f"{path.name}: cannot read the value shown: {text}"
                shown[match.group(1)] = SUMMARY
    return shown


def test_every_shown_default_is_the_role_default():
    defaults = role_defaults()
    different = [f"{name}: shown {value!r}, role default {defaults[name]!r}"
                 for name, value in sorted(shown_defaults().items())
                 if name in defaults and value != defaults[name]
                 and value != SUMMARY and not str(value).startswith("(a table; its default is in roles/")]
    assert not different, "inventories/gcore/group_vars/all/ differs from the role defaults:\n" + "\n".join(different)
