"""One home per setting: meta/argument_specs.yml documents a role variable, defaults/main.yml holds its value.

Ansible applies only defaults/main.yml at run time; a `default:` in an argument spec would be a
second, unchecked copy of the value. So no spec option has one, every public option of every
entry point has its value in the role's defaults (and is not required), every default is an
option of the main spec (of validate in a role without main), and every default has the
declared type, choices and elements (a table's rows are checked field by field by Ansible's
own validator).
"""
import copy
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


def defaults(role):
    """The role's defaults as Ansible loads them: defaults/main.yml, or every file of defaults/main/."""
    found = {}
    for path in [ROOT / 'roles' / role / 'defaults' / 'main.yml'] + sorted((ROOT / 'roles' / role / 'defaults' / 'main').glob('*.yml')):
        if path.exists():
            found.update(yaml.safe_load(path.read_text()) or {})
    return found


def entry_points(role):
    spec = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
    return {name: entry.get('options') or {} for name, entry in spec['argument_specs'].items()}


def options(role):
    """(entry point, option name, option spec) for every option of every entry point."""
    return [(entry, name, option) for entry, opts in entry_points(role).items() for name, option in opts.items()]


def arguments(opts):
    """Whether an entry point's options are arguments its callers pass (it requires some), as
    ipu_k8s fetch's are, rather than settings with role defaults."""
    return any(option.get('required') for option in opts.values())


def spec_defaults(opts, path=''):
    """Every option, at any depth (a table's row fields too), that carries a `default` key."""
    found = []
    for name, option in opts.items():
        if 'default' in option:
            found.append(path + name)
        found += spec_defaults(option.get('options') or {}, f'{path}{name}.')
    return found


def _jinja(value):
    return isinstance(value, str) and '{{' in value


def type_problems(name, option, value):
    """Why `value` is not of the option's declared type, choices or elements ([] when it is)."""
    kind = option.get('type', 'str')
    if value is None or _jinja(value) and kind in ('list', 'dict', 'str', 'path', 'raw'):
        return []
    if kind in ('int', 'float') and isinstance(value, bool):
        return [f'{name}: bool for {kind}']
    if kind in ('list', 'dict') and isinstance(value, str):
        return [f'{name}: plain string for {kind}']
    if not isinstance(value, TYPES[kind]) or kind in ('str', 'path') and not isinstance(value, str):
        return [f'{name}: {type(value).__name__} for {kind}' + (' (quote it)' if kind == 'str' else '')]
    if 'choices' in option and value not in option['choices']:
        return [f'{name}: {value!r} not in choices {option["choices"]}']
    if kind == 'list' and 'elements' in option:
        element = {'type': option['elements']}
        return [problem for index, item in enumerate(value)
                for problem in type_problems(f'{name}[{index}]', element, item)]
    return []


@pytest.mark.parametrize('role', ROLES)
def test_no_argument_spec_option_has_a_default(role):
    found = sorted({name for opts in entry_points(role).values() for name in spec_defaults(opts)})
    assert not found, (f'roles/{role}/meta/argument_specs.yml has a default for {found}: the value lives only in '
                       'defaults/main.yml (the spec documents type and meaning)')


def settings_entry_point(role):
    """The entry point that documents the role's settings: main, or validate for a role that has
    no main (ipu_k8s: a dependency for its defaults, which must add no task to a play)."""
    points = entry_points(role)
    return 'main' if 'main' in points else 'validate'


@pytest.mark.parametrize('role', ROLES)
def test_every_default_is_in_the_main_argument_spec(role):
    entry = settings_entry_point(role)
    main = entry_points(role).get(entry, {})
    missing = sorted(name for name in defaults(role) if not name.startswith('__') and name not in main)
    assert not missing, f'roles/{role}/defaults/main.yml has variables the {entry} argument spec lacks: {missing}'


@pytest.mark.parametrize('role', ROLES)
def test_every_public_option_has_a_default_and_is_optional(role):
    # Private parameters (__name), and the arguments of an entry point, are passed by its caller, not role defaults.
    shown, points = defaults(role), entry_points(role)
    public = {(entry, name): option for entry, name, option in options(role)
              if not name.startswith('__') and not arguments(points[entry])}
    missing = sorted(f'{entry}:{name}' for entry, name in public if name not in shown)
    assert not missing, f'roles/{role}/defaults/main.yml lacks a value for {missing}'
    required = sorted(f'{entry}:{name}' for (entry, name), option in public.items() if option.get('required'))
    assert not required, f'roles/{role}/meta/argument_specs.yml requires {required}, which have a default'


@pytest.mark.parametrize('role', ROLES)
def test_defaults_have_the_declared_type(role):
    shown = defaults(role)
    wrong = [problem for entry, name, option in options(role) if name in shown
             for problem in type_problems(f'{entry}:{name}', option, shown[name])]
    assert not wrong, f'roles/{role}/defaults/main.yml:\n' + '\n'.join(wrong)


@pytest.mark.parametrize('role', ROLES)
def test_entry_points_describe_an_option_the_same_way(role):
    seen, different = {}, []
    for entry, name, option in options(role):
        key = {k: option.get(k) for k in ('type', 'elements', 'choices', 'options')}
        if name in seen and seen[name][1] != key:
            different.append(f'{name}: {seen[name][0]} {seen[name][1]} != {entry} {key}')
        seen.setdefault(name, (entry, key))
    assert not different, '\n'.join(different)


def _literal(value):
    """False for a value (or part) that is a Jinja expression the spec cannot judge here."""
    if isinstance(value, str):
        return '{{' not in value
    if isinstance(value, list):
        return all(_literal(item) for item in value)
    if isinstance(value, dict):
        return all(_literal(item) for item in value.values())
    return True


def validator_errors(opts, shown):
    """Ansible's own argument-spec validator on the literal values of `shown`."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    spec = {name: option for name, option in opts.items() if name in shown and _literal(shown[name])}
    return ArgumentSpecValidator(spec).validate({name: shown[name] for name in spec}).error_messages


@pytest.mark.parametrize('role', ROLES)
def test_defaults_pass_the_argument_spec(role):
    shown = defaults(role)
    for entry, opts in entry_points(role).items():
        errors = validator_errors(opts, shown)
        assert not errors, f'roles/{role}/defaults/main.yml against {entry}: ' + '; '.join(errors)


# The checks above can fail: each takes a real role and breaks one thing.

def test_a_default_added_back_to_the_spec_is_found():
    opts = copy.deepcopy(entry_points('kubeadm')['main'])
    opts['kubeadm_cluster_name']['default'] = 'kubernetes'
    table = copy.deepcopy(entry_points('ipu_k8s')['validate'])
    table['ipu_k8s_versions']['options']['helm']['default'] = {}
    assert spec_defaults(opts) == ['kubeadm_cluster_name']
    assert spec_defaults(table) == ['ipu_k8s_versions.helm']


@pytest.mark.parametrize('name, value, problem', [
    ('kubeadm_api_server_port', '6443', 'str for int'),
    ('kubeadm_api_server_port', True, 'bool for int'),
    ('kubeadm_cluster_name', 5, 'int for str (quote it)'),
    ('kubeadm_untaint_control_plane', 'no', 'str for bool'),
])
def test_a_default_of_the_wrong_type_is_found(name, value, problem):
    option = entry_points('kubeadm')['main'][name]
    assert type_problems(name, option, defaults('kubeadm')[name]) == []
    assert type_problems(name, option, value) == [f'{name}: {problem}']


def test_a_default_outside_its_choices_or_elements_is_found():
    opts = entry_points('kubernetes_packages')['main']
    assert type_problems('p', opts['kubernetes_packages_names'], ['kubeadm', 1]) == ['p[1]: int for str (quote it)']
    option = entry_points('containerd')['main']['containerd_package_source']
    assert type_problems('c', option, 'ubuntu') == ["c: 'ubuntu' not in choices ['distribution', 'docker']"]


def test_a_versions_table_with_an_unknown_component_fails_the_spec():
    # A row's fields are held by tests/unit/test_versions_shape.py (rows are keyed by version,
    # which an argument spec cannot name); the spec holds the components.
    opts = entry_points('ipu_k8s')['validate']
    versions = dict(defaults('ipu_k8s')['ipu_k8s_versions'])
    versions['helm_releases'] = versions.pop('helm')
    errors = validator_errors(opts, {'ipu_k8s_versions': versions})
    assert len(errors) == 2 and any('helm_releases' in e for e in errors) and any('helm' in e for e in errors), errors
