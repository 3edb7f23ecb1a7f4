"""One source per setting: every role's defaults/main.yml and meta/argument_specs.yml agree.

For every role, across every entry point of its argument spec: each documented default is
an option of the spec (and the reverse), with the same default value and a value of the
declared type. A variable added, renamed, retyped or re-defaulted in one file only fails here.

Pinned versions, images, checksums and version tables have one home: defaults/main.yml.
Their argument spec describes the type (and a table's row fields) without repeating the
value, so a release bump touches one production file; the value in defaults must still
pass the spec (rows with an unknown or missing field, or a wrong type, fail here).
"""
import re

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent.name for p in ROOT.glob('roles/*/meta/argument_specs.yml'))

# Python types a default of each argument-spec type may have (YAML as loaded by safe_load).
TYPES = {
    'str': (str,),
    'path': (str,),
    'raw': (object,),
    'int': (int,),
    'float': (float, int),
    'bool': (bool,),
    'list': (list, str),   # str: a Jinja expression that renders the list
    'dict': (dict, str),
}


# Options whose value is a pinned release, image, checksum or version table.
PINNED = re.compile(r'(version|image|checksum|sha256|charts?_table|_charts$|_minors$|kubernetes_releases$|^helm_releases$|^calico_releases$)')


def defaults(role):
    path = ROOT / 'roles' / role / 'defaults' / 'main.yml'
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def entry_points(role):
    spec = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
    return {name: entry.get('options') or {} for name, entry in spec['argument_specs'].items()}


def options(role):
    """(entry point, option name, option spec) for every option of every entry point."""
    return [(entry, name, option) for entry, opts in entry_points(role).items() for name, option in opts.items()]


@pytest.mark.parametrize('role', ROLES)
def test_every_default_is_in_the_main_argument_spec(role):
    main = entry_points(role).get('main', {})
    missing = sorted(name for name in defaults(role) if not name.startswith('__') and name not in main)
    assert not missing, f'roles/{role}/defaults/main.yml has variables the main argument spec lacks: {missing}'


@pytest.mark.parametrize('role', ROLES)
def test_every_spec_option_with_a_default_is_in_defaults(role):
    shown = defaults(role)
    # Private parameters (__name) of an entry point are passed by its caller, not role defaults.
    missing = sorted({f'{entry}:{name}' for entry, name, option in options(role)
                      if 'default' in option and name not in shown and not name.startswith('__')})
    assert not missing, f'roles/{role}/meta/argument_specs.yml defaults missing from defaults/main.yml: {missing}'


@pytest.mark.parametrize('role', ROLES)
def test_spec_defaults_equal_the_role_defaults(role):
    shown = defaults(role)
    different = [f'{entry}:{name}: spec {option.get("default", "(no default)")!r} != defaults {shown[name]!r}'
                 for entry, name, option in options(role)
                 if name in shown and not PINNED.search(name) and option.get('default', object()) != shown[name]]
    assert not different, '\n'.join(different)


@pytest.mark.parametrize('role', ROLES)
def test_defaults_have_the_declared_type(role):
    shown = defaults(role)
    wrong = []
    for entry, name, option in options(role):
        if name not in shown or shown[name] is None:
            continue
        kind = option.get('type', 'str')
        value = shown[name]
        allowed = TYPES[kind]
        if kind in ('int', 'float') and isinstance(value, bool):
            wrong.append(f'{entry}:{name}: bool for {kind}')
        elif kind in ('list', 'dict') and isinstance(value, str) and '{{' not in value:
            wrong.append(f'{entry}:{name}: plain string for {kind}')
        elif not isinstance(value, allowed):
            wrong.append(f'{entry}:{name}: {type(value).__name__} for {kind}')
        elif kind == 'str' and isinstance(value, (int, float, bool)):
            wrong.append(f'{entry}:{name}: {type(value).__name__} for str (quote it)')
        elif 'choices' in option and value not in option['choices'] and '{{' not in str(value):
            wrong.append(f'{entry}:{name}: {value!r} not in choices {option["choices"]}')
    assert not wrong, '\n'.join(wrong)


@pytest.mark.parametrize('role', ROLES)
def test_entry_points_describe_an_option_the_same_way(role):
    seen, different = {}, []
    for entry, name, option in options(role):
        key = {k: option.get(k) for k in ('type', 'default', 'elements', 'choices')}
        if name in seen and seen[name][1] != key:
            different.append(f'{name}: {seen[name][0]} {seen[name][1]} != {entry} {key}')
        seen.setdefault(name, (entry, key))
    assert not different, '\n'.join(different)


@pytest.mark.parametrize('role', ROLES)
def test_pinned_versions_and_images_live_only_in_defaults(role):
    shown = defaults(role)
    repeated = sorted({f'{entry}:{name}' for entry, name, option in options(role)
                       if PINNED.search(name) and 'default' in option})
    assert not repeated, (f'roles/{role}/meta/argument_specs.yml repeats the value of {repeated}: keep it in '
                          'defaults/main.yml only (the spec gives the type)')
    # Private parameters (__name) of an entry point are passed by its caller.
    missing = sorted({name for _, name, _ in options(role)
                      if PINNED.search(name) and name not in shown and not name.startswith('__')})
    assert not missing, f'roles/{role}/defaults/main.yml lacks the pinned value of {missing}'


def _literal(value):
    """False for a value (or part) that is a Jinja expression the spec cannot judge here."""
    if isinstance(value, str):
        return '{{' not in value
    if isinstance(value, list):
        return all(_literal(item) for item in value)
    if isinstance(value, dict):
        return all(_literal(item) for item in value.values())
    return True


@pytest.mark.parametrize('role', ROLES)
def test_defaults_pass_the_argument_spec(role):
    """The values in defaults/main.yml validated by Ansible's own argument-spec validator."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    shown = defaults(role)
    for entry, opts in entry_points(role).items():
        spec = {name: option for name, option in opts.items() if name in shown and _literal(shown[name])}
        params = {name: shown[name] for name in spec}
        result = ArgumentSpecValidator(spec).validate(params)
        assert not result.error_messages, f'roles/{role}/defaults/main.yml against {entry}: ' + '; '.join(
            result.error_messages)


def test_a_table_row_with_an_unknown_field_fails_the_spec():
    """The validator above can fail: a network-operator row with a misspelt field."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    spec = entry_points('network_operator')['main']
    table = [dict(row) for row in defaults('network_operator')['network_operator_chart_table']]
    table[-1]['chart_sha265'] = table[-1].pop('chart_sha256', 'x')
    result = ArgumentSpecValidator({'network_operator_chart_table': spec['network_operator_chart_table']}).validate(
        {'network_operator_chart_table': table})
    assert len(result.error_messages) == 1 and 'chart_sha265' in result.error_messages[0], result.error_messages
