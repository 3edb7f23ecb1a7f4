"""roles/preflight/action_plugins/preflight_setting_types.py: this host's settings of the roles
named, against the types of each role's entry point `validate` in its meta/argument_specs.yml.

The roles are this repository's and small roles the tests write; the types a case expects are
read from those files here (yaml), and the errors compared with ArgumentSpecValidator's own
wording for the same spec and value, not with the plugin's output.
"""
import importlib.util
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / 'roles'
PLUGIN = ROLES / 'preflight' / 'action_plugins' / 'preflight_setting_types.py'
_spec = importlib.util.spec_from_file_location('preflight_setting_types', PLUGIN)
types = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(types)


def run(roles, task_vars, roles_dir=ROLES):
    task = SimpleNamespace(args={'roles': roles, 'roles_dir': str(roles_dir)}, async_val=0, check_mode=False,
                           action='preflight_setting_types')
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir='/tmp/unused'))
    templar = Templar(loader=DataLoader(), variables=task_vars)
    action = types.ActionModule(task, connection, play_context=mock.Mock(), loader=DataLoader(), templar=templar)
    return action.run(task_vars=task_vars)


def options(role):
    return yaml.safe_load((ROLES / role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['validate']['options']


def declared(role, kind):
    """A setting of the role's validate entry point declared of type kind."""
    return next(name for name, option in options(role).items() if option.get('type') == kind)


def validator_errors(role, name, value):
    return ArgumentSpecValidator({name: options(role)[name]}).validate(
        {name: value}, validate_role_argument_spec=True).error_messages


def test_settings_of_their_types_pass_and_change_nothing():
    calico_int, node_prep_bool = declared('calico', 'int'), declared('node_prep', 'bool')
    result = run(['calico', 'node_prep'], {calico_int: 30, node_prep_bool: True, 'unrelated': object()})
    assert result['changed'] is False and not result.get('failed'), result


def test_a_setting_of_another_type_fails_naming_the_role_the_setting_and_the_file():
    name = declared('calico', 'int')
    result = run(['node_prep', 'calico'], {name: 'abc'})
    [expected] = validator_errors('calico', name, 'abc')
    assert result['failed'] is True and result['changed'] is False
    assert result['argument_errors'] == {'calico': [expected]}
    assert name in result['msg'] and expected in result['msg'], result['msg']
    assert 'roles/calico/meta/argument_specs.yml' in result['msg'], result['msg']
    assert 'node_prep' not in result['msg'], result['msg']


def test_every_role_with_a_wrong_setting_is_named_in_one_message():
    calico_int, node_prep_list = declared('calico', 'int'), declared('node_prep', 'list')
    result = run(['calico', 'node_prep'], {calico_int: 'abc', node_prep_list: {'not': 'a list'}})
    assert set(result['argument_errors']) == {'calico', 'node_prep'}, result
    for role, name, value in (('calico', calico_int, 'abc'), ('node_prep', node_prep_list, {'not': 'a list'})):
        for error in validator_errors(role, name, value):
            assert error in result['msg'], result['msg']


def test_the_values_are_templated_first():
    name = declared('calico', 'int')
    assert not run(['calico'], {name: trust_as_template('{{ 10 * 3 }}')}).get('failed')
    failed = run(['calico'], {name: trust_as_template('{{ "ten" }}'), 'x': 1})
    assert failed['argument_errors'] == {'calico': validator_errors('calico', name, 'ten')}


def test_a_value_made_of_a_variable_this_task_does_not_see_is_left_to_its_role():
    # another role's default, which preflight's task does not see: that role's own check
    # templates it where it is defined
    name = declared('calico', 'int')
    result = run(['calico'], {name: trust_as_template('{{ calico_default_only_calico_sees }}')})
    assert not result.get('failed'), result


def test_the_entry_point_validate_is_the_spec_not_main(tmp_path):
    role = tmp_path / 'sample' / 'meta'
    role.mkdir(parents=True)
    (role / 'argument_specs.yml').write_text(yaml.safe_dump({'argument_specs': {
        'main': {'options': {'sample_count': {'type': 'str'}}},
        'validate': {'options': {'sample_count': {'type': 'int'}}}}}))
    assert run(['sample'], {'sample_count': 'many'}, tmp_path)['argument_errors']['sample']
    assert not run(['sample'], {'sample_count': 3}, tmp_path).get('failed')


@pytest.mark.parametrize('specs', [None, {'argument_specs': {'main': {'options': {}}}}, 'not: [yaml'])
def test_a_role_without_a_validate_entry_point_is_an_error_naming_the_file(tmp_path, specs):
    meta = tmp_path / 'sample' / 'meta'
    meta.mkdir(parents=True)
    if specs is not None:
        (meta / 'argument_specs.yml').write_text(specs if isinstance(specs, str) else yaml.safe_dump(specs))
    with pytest.raises(AnsibleActionFail, match='sample/meta/argument_specs.yml: no entry point validate'):
        run(['sample'], {}, tmp_path)


@pytest.mark.parametrize('roles', [[], 'calico', [1], None])
def test_roles_must_be_a_list_of_names(roles):
    with pytest.raises(AnsibleActionFail, match='roles must be a list of role names'):
        run(roles, {})


def test_roles_dir_must_be_a_directory(tmp_path):
    with pytest.raises(AnsibleActionFail, match='roles_dir must be the directory holding the roles'):
        run(['calico'], {}, tmp_path / 'missing')


def test_every_role_preflight_checks_has_a_validate_entry_point_this_reads():
    tasks = yaml.safe_load((ROLES / 'preflight' / 'tasks' / 'variables.yml').read_text())
    [task] = [t for t in tasks if 'preflight_setting_types' in t]
    action = types.ActionModule(SimpleNamespace(), None, play_context=None, loader=DataLoader(), templar=None)
    for role in task['preflight_setting_types']['roles']:
        assert action.role_options(str(ROLES), role) == options(role), role


# (option, value): the validator's verdict on the value cut to what its spec reads is its
# verdict on the whole value, errors word for word.
TABLE = {'type': 'dict', 'options': {'rows': {'type': 'dict', 'required': True},
                                     'names': {'type': 'list', 'elements': 'str'},
                                     'nested': {'type': 'dict', 'options': {'count': {'type': 'int'}}}}}
CUTS = [
    (TABLE, {'rows': {'1.35': {'pause': '3.10', 'sha256': {'a': 'b'}}}, 'names': ['x']}),
    (TABLE, {'rows': {}, 'names': [{'not': 'a str'}]}),
    (TABLE, {'names': ['x']}),  # required suboption missing
    (TABLE, {'rows': 'k=v', 'nested': {'count': 'many'}}),
    (TABLE, {'rows': ['not', 'a', 'mapping'], 'nested': {'count': 3, 'extra': {'deep': 1}}}),
    (TABLE, {'rows': {}, 'unknown': {'deep': {'er': 1}}}),
    (TABLE, 'rows=1'),
    (TABLE, ['a list']),
    ({'type': 'dict'}, {'any': {'thing': [1, 2]}}),
    ({'type': 'dict'}, 'not a mapping'),
    ({'type': 'str'}, {'a': 'mapping'}),
    ({'type': 'int'}, {'a': 'mapping'}),  # the error quotes the value: a mapping here is not cut
    ({'type': 'raw'}, {'a': {'b': 1}}),
    ({'type': 'list', 'elements': 'dict'}, [{'a': 1}, 'x']),
    ({}, {'a': 1}),
]


@pytest.mark.parametrize('option, value', CUTS)
def test_a_value_cut_to_what_its_spec_reads_gets_the_same_verdict(option, value):
    def verdict(given):
        return ArgumentSpecValidator({'setting': option}).validate(
            {'setting': given}, validate_role_argument_spec=True).error_messages
    assert verdict(types.as_deep_as_read(value, option)) == verdict(value)


def test_the_versions_table_is_cut_to_its_components():
    table = yaml.safe_load((ROLES / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions']
    option = options('ipu_k8s')['ipu_k8s_versions']
    assert types.as_deep_as_read(table, option) == {component: {} for component in table}
