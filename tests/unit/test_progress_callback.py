"""The project's stdout callback (plugins/callback/ipu_k8s_progress.py), driven by real
ansible-playbook runs of small playbooks on localhost (tests/unit/progress/), with the
project's ansible.cfg: the output a person reads is what is asserted."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / 'progress'
sys.path.insert(0, str(ROOT / 'plugins' / 'callback'))

import ipu_k8s_progress  # noqa: E402
from testlib import TOOLS, tool  # noqa: E402  (tests/testlib.py)


def run_playbook(tmp_path, playbook='site.yml', *args, callback=None):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'),
               ANSIBLE_LIBRARY=str(FIXTURE / 'library'))
    env.pop('ANSIBLE_STDOUT_CALLBACK', None)
    if callback:
        env['ANSIBLE_STDOUT_CALLBACK'] = callback
    cmd = [tool('ansible-playbook'), '-i', 'localhost,', '-c', 'local',
           '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', 'progress_dir=%s' % tmp_path,
           playbook, *args]
    return subprocess.run(cmd, cwd=FIXTURE, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope='module')
def journey(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('progress')
    proc = run_playbook(tmp_path)
    return proc, tmp_path


def closing_block(stdout):
    assert 'finished in' in stdout, stdout
    return stdout[stdout.rindex('finished in'):]


def test_each_play_is_shown_as_its_step_of_the_journey(journey):
    proc, _ = journey
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r'^== 1/2 prepare  \(play "Prepare" on all, at \d+:\d\d\)$', proc.stdout, re.M), proc.stdout
    assert re.search(r'^== 2/2 wait  \(play "Wait" on all, at \d+:\d\d\)$', proc.stdout, re.M), proc.stdout
    assert re.search(r'^  1/2 prepare done in \d+:\d\d, 1 task\(s\) changed$', proc.stdout, re.M), proc.stdout


def test_one_compact_line_per_task_with_the_elapsed_run_time(journey):
    proc, _ = journey
    assert re.search(r'^ +\d+:\d\d  changed  Write the marker file  \[localhost\]', proc.stdout, re.M), proc.stdout
    assert re.search(r'^ +\d+:\d\d  ok       Look at the marker three times  \[localhost\](  \(\d+:\d\d\))?$', proc.stdout, re.M)
    # Identical consecutive lines fold into one with a count.
    assert re.search(r'^ +\d+:\d\d  ok       Look at the marker  \[localhost\](  \(\d+:\d\d\))? \(x2\)$', proc.stdout, re.M), proc.stdout
    # The run's own bookkeeping (set_fact, set_stats) is not shown.
    assert 'Keep a record' not in proc.stdout and 'Report where the report is' not in proc.stdout
    # No banner lines of the default callback.
    assert 'TASK [' not in proc.stdout and 'PLAY RECAP' not in proc.stdout


def test_a_debug_message_is_printed_as_it_is_under_its_task(journey):
    proc, _ = journey
    assert re.search(r'  Say something  \[localhost\]\n' + re.escape('a multi-line\nreport body\n'), proc.stdout), proc.stdout


def test_a_warning_is_shown_where_it_happened_and_again_at_the_end(journey):
    proc, _ = journey
    # Ansible's own display prints it on stderr as the task ends; the closing block repeats it.
    assert proc.stderr.count('[WARNING]: the marker is a test double') == 1, proc.stderr
    assert 'Warnings (1, also shown above where they happened):' in closing_block(proc.stdout)


def test_an_until_retry_is_shown_as_a_wait_not_a_failure(journey):
    proc, _ = journey
    waits = re.findall(r'waiting for The counter reaches 2 \((\d+) s left\) \[localhost, \d+:\d\d so far\]', proc.stdout)
    assert len(waits) == 2, proc.stdout
    assert int(waits[0]) > int(waits[1])
    assert 'RETRYING' not in proc.stdout and 'FAILED' not in proc.stdout


def test_the_closing_block_gives_steps_changes_recap_warnings_report_and_next_step(journey):
    proc, tmp_path = journey
    block = closing_block(proc.stdout)
    assert re.search(r'^  1/2 prepare +\d+:\d\d   1 changed$', block, re.M), block
    assert re.search(r'^  2/2 wait +\d+:\d\d   no change$', block, re.M), block
    assert 'Changed: 1 task(s) on 1 host(s)\n  localhost: Write the marker file\n' in block
    assert re.search(r'^localhost +: ok=\d+ changed=1 unreachable=0 failed=0 skipped=\d+ rescued=0 ignored=0$', block, re.M)
    assert '  - the marker is a test double (localhost, Note something odd)' in block
    assert 'Verify: 3 PASS, 0 FAIL, 1 SKIP' in block
    assert '  report (JSON): %s/verify.json' % tmp_path in block
    assert '  report (HTML): %s/verify.html' % tmp_path in block
    assert re.search(r'Next:\n  Run the same command again', block), block


def test_a_failure_is_printed_in_full_and_the_next_step_says_to_fix_it(tmp_path):
    proc = run_playbook(tmp_path, 'steps/wait.yml', '-e', 'progress_fail=true')
    assert proc.returncode == 2, proc.stdout
    assert re.search(r'FAILED   Fail on request  \[localhost\]', proc.stdout)
    assert 'fatal: [localhost]: FAILED! =>' in proc.stdout and 'asked to fail' in proc.stdout
    block = closing_block(proc.stdout)
    # A playbook of site.yml run alone still shows its step number.
    assert re.search(r'^  2/2 wait +\d+:\d\d', block, re.M), block
    assert 'Next:\n  Fix the error printed above for localhost' in block


def test_check_mode_says_nothing_was_changed(tmp_path):
    proc = run_playbook(tmp_path, 'steps/prepare.yml', '--check')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'in check mode (--check): nothing will be changed' in proc.stdout
    assert 'This was a dry run (--check)' in closing_block(proc.stdout)


def test_the_default_callback_remains_the_plain_fallback(tmp_path):
    proc = run_playbook(tmp_path, 'site.yml', callback='default')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'PLAY RECAP' in proc.stdout and 'TASK [Write the marker file]' in proc.stdout
    assert 'finished in' not in proc.stdout


def test_through_ansible_runner_the_events_are_structured_and_the_output_is_the_same(tmp_path):
    import ansible_runner

    (tmp_path / 'runner').mkdir()
    run = ansible_runner.run(
        private_data_dir=str(tmp_path / 'runner'), project_dir=str(FIXTURE), playbook='site.yml',
        inventory='localhost ansible_connection=local ansible_python_interpreter=%s' % sys.executable,
        extravars={'progress_dir': str(tmp_path)}, quiet=True,
        envvars={'ANSIBLE_CONFIG': str(ROOT / 'ansible.cfg'), 'ANSIBLE_STDOUT_CALLBACK': 'ipu_k8s_progress',
                 'ANSIBLE_CALLBACK_PLUGINS': str(ROOT / 'plugins' / 'callback'), 'ANSIBLE_NOCOLOR': '1',
                 'ANSIBLE_LIBRARY': str(FIXTURE / 'library'),
                 'PATH': '%s:%s' % (TOOLS, os.environ.get('PATH', ''))})
    stdout = run.stdout.read()
    assert (run.status, run.rc) == ('successful', 0), stdout
    assert run.stats['changed'] == {'localhost': 1}
    events = list(run.events)
    retries = [e for e in events if e['event'] == 'runner_retry']
    assert len(retries) == 2 and retries[0]['event_data']['task'] == 'The counter reaches 2'
    changed = [e['event_data']['task'] for e in events
               if e['event'] == 'runner_on_ok' and e['event_data']['res'].get('changed')]
    assert changed == ['Write the marker file']
    assert '== 2/2 wait' in stdout and 'RETRYING' not in stdout
    assert 'report (JSON): %s/verify.json' % tmp_path in closing_block(stdout)


@pytest.mark.parametrize('seconds, text', [(0, '0:00'), (42.4, '0:42'), (725, '12:05'), (3723, '1:02:03')])
def test_elapsed_times_read_as_minutes_and_seconds(seconds, text):
    assert ipu_k8s_progress.format_elapsed(seconds) == text


def test_unnumbered_steps_are_numbered_in_order():
    labels = [(None, 'Converge'), (None, 'Converge'), (None, 'Verify')]
    assert ipu_k8s_progress.number_steps(labels) == [(1, 2, 'Converge'), (1, 2, 'Converge'), (2, 2, 'Verify')]


def test_the_project_site_yml_gives_seven_named_steps():
    steps = ipu_k8s_progress.number_steps(ipu_k8s_progress.playbook_steps(str(ROOT / 'site.yml')))
    assert (3, 7, 'cluster') in steps and steps[-1] == (7, 7, 'verify'), steps
    assert ipu_k8s_progress.site_step(str(ROOT / 'playbooks' / 'verify.yml')) == (7, 7, 'verify')


@pytest.mark.parametrize('label, text', [((3, 7, 'cluster'), '3/7 cluster'), ((None, None, 'Converge'), 'Converge')])
def test_step_labels(label, text):
    assert ipu_k8s_progress.CallbackModule._label_text(label) == text


def test_a_failure_a_block_rescued_does_not_ask_for_a_fix(tmp_path):
    proc = run_playbook(tmp_path, 'rescued.yml')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'FAILED   Probe  [localhost]' in proc.stdout
    block = closing_block(proc.stdout)
    assert re.search(r'^localhost +: ok=\d+ changed=0 unreachable=0 failed=0 skipped=0 rescued=1', block, re.M), block
    assert 'Fix the error' not in block and 'Nothing changed.' in block


def test_hosts_of_a_task_line_are_listed_in_name_order():
    assert ipu_k8s_progress.summarise_hosts({'vipu1': 'ok', 'node1': 'ok'}) == 'node1, vipu1'
    assert ipu_k8s_progress.summarise_hosts({'vipu1': 'ok', 'node2': 'changed', 'node1': 'changed'}) == \
        'changed node1, node2; ok vipu1'
