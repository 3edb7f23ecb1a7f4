"""Check this host's settings of several roles against the types their argument specs declare,
in one task; changes nothing.

What ansible.builtin.validate_argument_spec does for one role's entry point, for each role
named: the options of the entry point `validate` in roles/<role>/meta/argument_specs.yml (the
entry point of the role's tasks/validate.yml), this host's values of them templated as that
action templates them, ArgumentSpecValidator with validate_role_argument_spec=True. Preflight
imports each role's validate tasks with rolespec_validate: false and runs this instead: one
task per host instead of one per role and host. The specs come from Ansible's loader (what
it parsed when it loaded the roles, uncopied: nothing here changes them, and this task's
process is a fork that ends with the task), never templated as task arguments are; a
mapping is handed to the validator only as deep as its spec reads it (`as_deep_as_read`), as
the validator deep-copies what it is given (the versions table: about 0.1 s a host).

Fails with one message naming, per role, each setting's error and the file that declares its
type.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail, AnsibleError, AnsibleUndefinedVariable
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

ENTRY_POINT = 'validate'
SPEC_FILE = os.path.join('meta', 'argument_specs.yml')


def as_deep_as_read(value, option):
    """The value as far as the option's spec reads it, for the validator's verdict on it: under
    an option of type dict a mapping keeps the keys its suboptions name (each value cut the same
    way) and every other key with its value; a dict option without suboptions only checks it
    is a mapping, so its contents go. Any other value is returned as it is."""
    if not isinstance(value, Mapping) or not isinstance(option, Mapping) or option.get('type') != 'dict':
        return value
    suboptions = option.get('options')
    if not suboptions:
        return {}
    return {key: as_deep_as_read(item, suboptions.get(key)) for key, item in value.items()}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def role_options(self, roles_dir: str, role: str) -> dict:
        """The options of the role's entry point `validate`."""
        path = os.path.join(roles_dir, role, SPEC_FILE)
        try:
            specs = self._loader.load_from_file(path, unsafe=True)
            options = specs['argument_specs'][ENTRY_POINT].get('options') or {}
        except (AnsibleError, KeyError, TypeError, AttributeError) as error:
            raise AnsibleActionFail('%s: no entry point %s with options to check the settings against (%s)'
                                    % (path, ENTRY_POINT, error)) from error
        if not isinstance(options, Mapping):
            raise AnsibleActionFail('%s: the options of entry point %s are not a mapping' % (path, ENTRY_POINT))
        return options

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super().run(tmp, task_vars)
        roles, roles_dir = self._task.args.get('roles'), self._task.args.get('roles_dir')
        if not isinstance(roles, list) or not roles or not all(isinstance(role, str) for role in roles):
            raise AnsibleActionFail('roles must be a list of role names, got %r' % (roles,))
        if not isinstance(roles_dir, str) or not os.path.isdir(roles_dir):
            raise AnsibleActionFail('roles_dir must be the directory holding the roles, got %r' % (roles_dir,))
        problems, errors = [], {}
        for role in roles:
            options = self.role_options(roles_dir, role)
            values = {}
            for name, option in options.items():
                if name not in task_vars:
                    continue
                try:
                    value = self._templar.template(as_deep_as_read(task_vars[name], option))
                except AnsibleUndefinedVariable:
                    # A value made of another role's default, which this role's tasks see and
                    # preflight's do not: that role's own check templates it.
                    continue
                values[name] = as_deep_as_read(value, option)
            messages = ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True).error_messages
            if messages:
                errors[role] = list(messages)
                problems.append('%s (types in roles/%s/%s, entry point %s): %s.'
                                % (role, role, SPEC_FILE, ENTRY_POINT, '; '.join(messages)))
        result['changed'] = False
        if problems:
            result.update(failed=True, argument_errors=errors,
                          msg='Settings of the wrong type: %s' % ' '.join(problems))
        else:
            result['msg'] = 'The settings of %s have their declared types' % ', '.join(roles)
        return result
