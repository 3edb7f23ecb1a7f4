"""plugins/module_utils/ipu_k8s_systemd.py's answers whole: every field and each reason word for
word, the states that count as running, and `systemctl show` text as systemd prints it
(first value of a property wins, values may hold '=')."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_systemd import first_loaded, freshness, parse_show

NOW_REAL = 1_800_000_000.0   # 2027-01-15T08:00:00Z
NOW_MONO = 5_000.0


def props(**changes):
    found = {'LoadState': 'loaded', 'ActiveState': 'active', 'SubState': 'running', 'MainPID': '4242',
             'ExecMainStartTimestampMonotonic': '4000000000', 'NeedDaemonReload': 'no',
             'UnitFileState': 'enabled'}
    found.update(changes)
    return found


def test_a_fresh_service_answers_every_field():
    # started 1000 s before NOW: 1_799_999_000 = 2027-01-15T07:43:20Z
    assert freshness('containerd', props(), {'/etc/containerd/config.toml': NOW_REAL - 1001}, NOW_REAL, NOW_MONO) == {
        'loaded': True, 'enabled': True, 'running': True, 'main_pid': 4242, 'started': '2027-01-15T07:43:20+00:00',
        'restart_needed': False, 'reasons': [], 'newer_paths': []}


def test_files_changed_after_the_start_and_an_unloaded_drop_in_are_both_reasons():
    mtimes = {'/etc/b': NOW_REAL - 999, '/etc/a': NOW_REAL - 10, '/etc/old': NOW_REAL - 1000}
    assert freshness('kubelet', props(NeedDaemonReload='yes'), mtimes, NOW_REAL, NOW_MONO) == {
        'loaded': True, 'enabled': True, 'running': True, 'main_pid': 4242, 'started': '2027-01-15T07:43:20+00:00',
        'restart_needed': True,
        'reasons': ['kubelet started at 2027-01-15T07:43:20+00:00, before /etc/a, /etc/b last changed.',
                    'kubelet has unit files or drop-ins that systemd has not loaded yet.'],
        'newer_paths': ['/etc/a', '/etc/b']}


def test_a_file_written_in_the_same_second_as_the_start_is_not_newer():
    assert freshness('kubelet', props(), {'/etc/same': NOW_REAL - 1000}, NOW_REAL, NOW_MONO)['newer_paths'] == []


@pytest.mark.parametrize('state', ['active', 'activating', 'reloading', 'deactivating'])
def test_states_with_a_process_count_as_running(state):
    result = freshness('kubelet', props(ActiveState=state), {'/etc/a': NOW_REAL}, NOW_REAL, NOW_MONO)
    assert result['running'] is True and result['restart_needed'] is True


@pytest.mark.parametrize('state, shown', [('inactive', 'inactive'), ('failed', 'failed'), ('', '?')])
def test_a_service_without_a_process_needs_no_restart(state, shown):
    assert freshness('kubelet', props(ActiveState=state), {'/etc/a': NOW_REAL}, NOW_REAL, NOW_MONO) == {
        'loaded': True, 'enabled': True, 'running': False, 'main_pid': 4242, 'started': '', 'restart_needed': False,
        'reasons': ['kubelet is not running (ActiveState=%s): it reads its configuration when it starts.' % shown],
        'newer_paths': []}


@pytest.mark.parametrize('started', ['0', ''])
def test_an_active_unit_that_never_started_a_process_is_not_running(started):
    result = freshness('kubelet', props(ExecMainStartTimestampMonotonic=started, MainPID=''), {}, NOW_REAL, NOW_MONO)
    assert result['running'] is False and result['main_pid'] == 0


def test_a_unit_without_any_property_is_not_installed():
    assert freshness('k3s', {}, {'/etc/a': NOW_REAL}, NOW_REAL, NOW_MONO) == {
        'loaded': False, 'enabled': False, 'running': False, 'main_pid': 0, 'started': '', 'restart_needed': False,
        'reasons': ['k3s is not installed (LoadState=?): nothing to restart.'], 'newer_paths': []}


@pytest.mark.parametrize('state', ['disabled', 'enabled-runtime', 'masked', ''])
def test_only_a_unit_enabled_for_every_boot_counts_as_enabled(state):
    assert freshness('containerd', props(UnitFileState=state), {}, NOW_REAL, NOW_MONO)['enabled'] is False


def test_a_masked_unit_is_named_with_its_load_state():
    result = freshness('k3s', props(LoadState='masked'), {}, NOW_REAL, NOW_MONO)
    assert result['reasons'] == ['k3s is not installed (LoadState=masked): nothing to restart.']
    assert result['loaded'] is False


def test_show_text_first_value_wins_and_values_keep_their_equals_signs():
    text = 'LoadState=loaded\nLoadState=masked\nExecStart={ path=/usr/bin/containerd ; argv[]=x }\n=orphan\nnoise\nEmpty=\n'
    assert parse_show(text) == {'LoadState': 'loaded', 'ExecStart': '{ path=/usr/bin/containerd ; argv[]=x }',
                                'Empty': ''}


def test_first_loaded_is_empty_when_no_candidate_is_loaded():
    assert first_loaded([('k3s', {'LoadState': 'not-found'}), ('containerd', {})]) == ''
    assert first_loaded([('k3s', {'LoadState': 'not-found'}), ('a', props()), ('b', props())]) == 'a'


def test_a_loaded_unit_without_an_active_state_is_named_with_a_question_mark():
    properties = props()
    del properties['ActiveState']
    assert freshness('kubelet', properties, {}, NOW_REAL, NOW_MONO)['reasons'] == [
        'kubelet is not running (ActiveState=?): it reads its configuration when it starts.']


def test_an_active_unit_that_reports_no_start_time_is_not_running():
    properties = props()
    del properties['ExecMainStartTimestampMonotonic']
    assert freshness('kubelet', properties, {}, NOW_REAL, NOW_MONO)['running'] is False
