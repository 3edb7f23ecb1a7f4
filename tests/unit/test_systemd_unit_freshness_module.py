"""plugins/modules/systemd_unit_freshness.py's refusals word for word and the systemctl command it
runs (systemctl stood in for; the module and ipu_k8s_systemd run for real)."""


import pytest

from module_harness import FakeCommands, ModuleFail


PROPERTIES = '--property=LoadState,ActiveState,SubState,MainPID,ExecMainStartTimestampMonotonic,NeedDaemonReload,UnitFileState'


def systemctl(answer):
    return FakeCommands({('show', 'containerd.service', PROPERTIES): answer}, binaries={'systemctl': '/bin/systemctl'})


def test_systemctl_show_is_asked_for_the_service_and_its_properties(run_module):
    fake = systemctl((0, 'LoadState=not-found\n', ''))
    result = run_module('systemd_unit_freshness', {'name': ['containerd']}, fake)
    assert fake.calls == [['/bin/systemctl', 'show', 'containerd.service', PROPERTIES]]
    assert result['unit'] == 'containerd' and result['changed'] is False


@pytest.mark.parametrize('answer, said', [((1, '', ' Failed to connect to bus \n'), 'Failed to connect to bus'),
                                          ((4, 'No such unit\n', ''), 'No such unit')])
def test_a_failing_systemctl_is_named_with_what_it_said(run_module, answer, said):
    with pytest.raises(ModuleFail) as failed:
        run_module('systemd_unit_freshness', {'name': ['containerd']}, systemctl(answer))
    assert failed.value.result['msg'] == 'systemctl show containerd.service failed: %s' % said
    assert failed.value.result['rc'] == answer[0] and failed.value.result['stderr'] == answer[2]


def test_an_empty_unit_list_is_refused_with_an_example(run_module):
    with pytest.raises(ModuleFail) as failed:
        run_module('systemd_unit_freshness', {'name': []}, FakeCommands())
    assert failed.value.result['msg'] == 'name must list at least one unit, e.g. name: containerd'


def show(load='loaded', active='active', started_us=1):
    return (0, 'LoadState=%s\nActiveState=%s\nMainPID=7\nExecMainStartTimestampMonotonic=%d\nNeedDaemonReload=no\n'
            % (load, active, started_us), '')


def test_check_mode_answers_the_same_question(run_module):
    result = run_module('systemd_unit_freshness', {'name': ['containerd'], '_ansible_check_mode': True},
                        systemctl(show(load='not-found')))
    assert result['reasons'] == ['containerd is not installed (LoadState=not-found): nothing to restart.']


def test_the_unit_list_is_required(run_module):
    with pytest.raises(ModuleFail, match='missing required arguments: name'):
        run_module('systemd_unit_freshness', {}, systemctl(show()))


def test_names_and_paths_are_read_as_text(run_module, tmp_path):
    fake = FakeCommands({('show', '5.service', PROPERTIES): show()}, binaries={'systemctl': '/bin/systemctl'})
    result = run_module('systemd_unit_freshness', {'name': [5], 'paths': [7]}, fake)
    assert result['unit'] == '5' and result['newer_paths'] == []


def test_a_node_without_systemctl_is_refused(run_module):
    with pytest.raises(ModuleFail, match='Failed to find required executable "systemctl"'):
        run_module('systemd_unit_freshness', {'name': ['containerd']}, FakeCommands())


def test_a_missing_path_does_not_hide_the_paths_after_it(run_module, tmp_path):
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\n')   # written now; the service started 1 microsecond after boot
    result = run_module('systemd_unit_freshness', {'name': ['containerd'],
                                                   'paths': [str(tmp_path / 'absent'), str(config)]},
                        systemctl(show()))
    assert result['newer_paths'] == [str(config)]
    assert result['reasons'][0].startswith('containerd started at ')
