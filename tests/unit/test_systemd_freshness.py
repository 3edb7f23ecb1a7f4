"""A running service is restarted when it is older than its configuration, whatever
happened to the handler: plugins/module_utils/ipu_k8s_systemd.py and plugins/modules/systemd_unit_freshness.py."""

import os
import time

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_systemd import first_loaded, freshness, parse_show
from module_harness import FakeCommands, ModuleFail


NOW_REAL = 1_800_000_000.0   # wall clock at the question
NOW_MONO = 5_000.0           # seconds since boot at the same moment
SHOW = ('--property=LoadState,ActiveState,SubState,MainPID,ExecMainStartTimestampMonotonic,NeedDaemonReload,UnitFileState',)


def props(started_mono_s=4_000.0, active='active', load='loaded', reload='no', pid='4242'):
    return {'LoadState': load, 'ActiveState': active, 'SubState': 'running', 'MainPID': pid,
            'ExecMainStartTimestampMonotonic': str(int(started_mono_s * 1e6)), 'NeedDaemonReload': reload}


def real(mono_s):
    """The wall-clock time of a monotonic instant, in this test's frame."""
    return NOW_REAL - (NOW_MONO - mono_s)


def test_service_started_after_its_files_changed_needs_nothing():
    result = freshness('containerd', props(4_000), {'/etc/containerd/config.toml': real(3_999)}, NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is False
    assert result['running'] is True and result['main_pid'] == 4242


def test_file_written_after_the_service_started_needs_a_restart():
    # The lost-handler case: config.toml written at 4010 s, containerd still the one from 4000 s.
    result = freshness('containerd', props(4_000),
                       {'/etc/containerd/config.toml': real(4_010), '/etc/other': real(3_000)}, NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is True
    assert result['newer_paths'] == ['/etc/containerd/config.toml']
    assert 'before /etc/containerd/config.toml last changed' in result['reasons'][0]


def test_a_fraction_of_a_second_counts():
    result = freshness('kubelet', props(4_000.25), {'/etc/default/kubelet': real(4_000.5)}, NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is True


def test_started_time_is_reported_in_utc():
    result = freshness('containerd', props(4_000), {}, NOW_REAL, NOW_MONO)
    assert result['started'] == '2027-01-15T07:43:20+00:00'


def test_unloaded_drop_in_needs_a_restart_even_with_old_files():
    result = freshness('containerd', props(4_000, reload='yes'), {}, NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is True
    assert 'not loaded yet' in result['reasons'][0]


@pytest.mark.parametrize('active', ['inactive', 'failed'])
def test_stopped_service_needs_no_restart(active):
    result = freshness('containerd', props(4_000, active=active, pid='0'), {'/x': real(4_500)}, NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is False and result['running'] is False
    assert 'reads its configuration when it starts' in result['reasons'][0]


def test_crash_looping_service_is_judged_on_its_last_start():
    # kubelet before kubeadm init: activating (auto-restart) between attempts.
    result = freshness('kubelet', props(4_000, active='activating', pid='0'), {'/etc/default/kubelet': real(4_001)},
                       NOW_REAL, NOW_MONO)
    assert result['restart_needed'] is True


def test_missing_unit_needs_no_restart():
    result = freshness('k3s', props(0, active='inactive', load='not-found', pid='0'), {}, NOW_REAL, NOW_MONO)
    assert result['loaded'] is False and result['restart_needed'] is False
    assert 'not installed' in result['reasons'][0]


def test_show_output_is_parsed_into_properties():
    assert parse_show('LoadState=loaded\nMainPID=12\nExecMainStartTimestampMonotonic=99\n\n') == {
        'LoadState': 'loaded', 'MainPID': '12', 'ExecMainStartTimestampMonotonic': '99'}


def test_first_installed_runtime_unit_wins():
    assert first_loaded([('k3s', {'LoadState': 'not-found'}), ('k3s-agent', {'LoadState': 'loaded'}),
                         ('containerd', {'LoadState': 'loaded'})]) == 'k3s-agent'
    assert first_loaded([('k3s', {'LoadState': 'not-found'})]) == ''


# --- The module, with systemctl answered and real files in tmp_path -------------------

def show_text(started_ago_s, load='loaded', active='active'):
    started_us = int((time.clock_gettime(time.CLOCK_MONOTONIC) - started_ago_s) * 1e6)
    return ('LoadState=%s\nActiveState=%s\nSubState=running\nMainPID=77\n'
            'ExecMainStartTimestampMonotonic=%d\nNeedDaemonReload=no\n' % (load, active, started_us))


def commands(answers):
    return FakeCommands({('show', unit + '.service') + SHOW: (0, text, '') for unit, text in answers.items()},
                        binaries={'systemctl': '/usr/bin/systemctl'})


def test_module_finds_a_config_written_after_the_start(run_module, tmp_path):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')   # written now, the service started 60 s ago
    old = tmp_path / 'old.conf'
    old.write_text('x')
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    result = run_module('systemd_unit_freshness', {'name': ['containerd'], 'paths': [str(config), str(old),
                                                                                      str(tmp_path / 'absent')]},
                        commands({'containerd': show_text(60)}))
    assert result['changed'] is False
    assert result['restart_needed'] is True
    assert result['newer_paths'] == [str(config)]


def test_module_leaves_a_service_started_after_its_files(run_module, tmp_path):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')
    os.utime(config, (time.time() - 120, time.time() - 120))
    result = run_module('systemd_unit_freshness', {'name': ['containerd'], 'paths': [str(config)]},
                        commands({'containerd': show_text(60)}))
    assert result['restart_needed'] is False


def test_module_picks_the_first_installed_unit(run_module, tmp_path):
    dropin = tmp_path / 'k3s-agent.conf'
    dropin.write_text('[Service]\nLimitMEMLOCK=infinity\n')
    result = run_module('systemd_unit_freshness', {
        'name': ['k3s', 'k3s-agent', 'containerd'], 'paths': [str(dropin)]},
        commands({'k3s': show_text(0, load='not-found', active='inactive'), 'k3s-agent': show_text(60),
                  'containerd': show_text(60)}))
    assert result['unit'] == 'k3s-agent'
    assert result['newer_paths'] == [str(dropin)]


def test_module_reports_a_failing_systemctl(run_module):
    fake = FakeCommands({('show', 'containerd.service') + SHOW: (1, '', 'Failed to connect to bus')},
                        binaries={'systemctl': '/usr/bin/systemctl'})
    with pytest.raises(ModuleFail) as failed:
        run_module('systemd_unit_freshness', {'name': ['containerd']}, fake)
    assert 'Failed to connect to bus' in failed.value.result['msg']


def test_module_falls_back_to_the_last_name_when_none_is_installed(run_module):
    absent = show_text(0, load='not-found', active='inactive')
    result = run_module('systemd_unit_freshness', {'name': ['k3s', 'containerd']},
                        commands({'k3s': absent, 'containerd': absent}))
    assert result['unit'] == 'containerd' and result['loaded'] is False and result['restart_needed'] is False


def test_module_returns_the_text_of_the_files_to_read_that_exist(run_module, tmp_path):
    dropin = tmp_path / 'containerd.conf'
    dropin.write_text('[Service]\nLimitMEMLOCK=infinity\n')
    result = run_module('systemd_unit_freshness', {
        'name': ['k3s', 'containerd'], 'read': [str(dropin), str(tmp_path / 'absent.json')]},
        commands({'k3s': show_text(0, load='not-found', active='inactive'), 'containerd': show_text(60)}))
    assert result['contents'] == {str(dropin): '[Service]\nLimitMEMLOCK=infinity\n'}
