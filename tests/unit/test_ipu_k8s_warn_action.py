"""roles/ipu_k8s/action_plugins/ipu_k8s_warn.py: msg, stripped, becomes the task's one
warning and its msg; an empty or missing msg warns nothing; it never reports a change."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'roles' / 'ipu_k8s' / 'action_plugins' / 'ipu_k8s_warn.py'
_spec = importlib.util.spec_from_file_location('ipu_k8s_warn', PLUGIN)
warn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(warn)


def run(args, check_mode=False):
    task = SimpleNamespace(args=args, async_val=0, check_mode=check_mode, action='ipu_k8s_warn')
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir='/tmp/unused'))
    action = warn.ActionModule(task, connection, play_context=mock.Mock(), loader=None, templar=None)
    return action.run(task_vars={})


def test_a_message_is_the_tasks_warning_and_msg_without_surrounding_space():
    notice = 'node-a: Poplar SDK 3.3 is out of support since 2025-01-01; plan the upgrade'
    assert run({'msg': '  %s\n' % notice}) == {'changed': False, 'msg': notice, 'warnings': [notice]}


@pytest.mark.parametrize('args', [{}, {'msg': ''}, {'msg': None}, {'msg': ' \n '}])
def test_no_message_warns_nothing(args):
    assert run(args) == {'changed': False, 'msg': 'nothing to report'}


def test_check_mode_reports_the_warning_too():
    assert run({'msg': 'x'}, check_mode=True) == {'changed': False, 'msg': 'x', 'warnings': ['x']}


def test_a_value_that_is_not_text_is_reported_as_its_text():
    assert run({'msg': 42})['warnings'] == ['42']


def test_the_task_variables_are_not_mistaken_for_the_retired_tmp_argument(monkeypatch):
    # Ansible calls run(task_vars=...); ActionBase warns when its tmp argument is given
    import ansible.plugins.action as action_base
    shown = []
    monkeypatch.setattr(action_base.display, 'warning', lambda message, *args, **kwargs: shown.append(message))
    task = SimpleNamespace(args={'msg': 'x'}, async_val=0, check_mode=False, action='ipu_k8s_warn')
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir='/tmp/unused'))
    action = warn.ActionModule(task, connection, play_context=mock.Mock(), loader=None, templar=None)
    assert action.run(task_vars={'inventory_hostname': 'node-a'})['warnings'] == ['x']
    assert shown == []
