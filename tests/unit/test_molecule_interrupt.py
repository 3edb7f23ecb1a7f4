"""molecule/lab/interrupt.py (the lab scenario's interrupted and re-run containerd
role) on a small localhost role of the same shape: a configuration task and a drop-in task
that notify a restart handler, then one more task. Killed as the next task starts, the run
leaves both files and no restart; a re-run that changes a file runs the handler, and the
tool reads that from the run's events."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / 'molecule' / 'lab' / 'interrupt.py'


@pytest.fixture
def project(tmp_path):
    tasks = tmp_path / 'roles' / 'demo' / 'tasks'
    handlers = tmp_path / 'roles' / 'demo' / 'handlers'
    tasks.mkdir(parents=True)
    handlers.mkdir(parents=True)
    (tasks / 'main.yml').write_text(textwrap.dedent('''\
        - name: Write the configuration
          ansible.builtin.copy: {content: "config\\n", dest: "{{ out }}/config", mode: "0644"}
          notify: Restart it
        - name: Set LimitMEMLOCK of the service to {{ 'infinity' }}
          ansible.builtin.copy: {content: "drop-in\\n", dest: "{{ out }}/drop-in", mode: "0644"}
          notify: Restart it
        - name: Take a while
          ansible.builtin.command: sleep 2
          changed_when: false
        '''))
    (handlers / 'main.yml').write_text(textwrap.dedent('''\
        - name: Restart it
          ansible.builtin.copy: {content: "restarted\\n", dest: "{{ out }}/restarted", mode: "0644"}
        '''))
    (tmp_path / 'play.yml').write_text('- name: Demo\n  hosts: all\n  gather_facts: false\n  roles: [demo]\n')
    (tmp_path / 'out').mkdir()
    return tmp_path


def run_tool(project, *options):
    command = [sys.executable, str(TOOL), *options, '--', 'ansible-playbook', '-i', 'localhost,', '-c', 'local',
               '-e', 'out=%s' % (project / 'out'), '-e', 'ansible_python_interpreter=%s' % sys.executable, 'play.yml']
    proc = subprocess.run(command, cwd=str(project), capture_output=True, text=True, timeout=300,
                          env={'PATH': '%s:/usr/bin:/bin' % Path(sys.executable).parent, 'HOME': str(project)})
    return proc, json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None


def test_killed_after_the_drop_in_task_no_handler_runs_and_a_rerun_restarts(project):
    proc, report = run_tool(project, '--after', 'demo : Set LimitMEMLOCK')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report['killed_after'] == 'demo : Set LimitMEMLOCK of the service to infinity'
    assert report['status'] == 'canceled' and report['handlers_ran'] == []
    out = project / 'out'
    assert (out / 'config').exists() and (out / 'drop-in').exists()
    assert not (out / 'restarted').exists()  # the kill came before the handler could run

    (out / 'drop-in').unlink()
    proc, report = run_tool(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report['status'] == 'successful' and report['handlers_ran'] == ['demo : Restart it']
    assert (out / 'restarted').exists()


def test_a_run_that_never_reaches_the_task_is_reported_as_not_interrupted(project):
    proc, report = run_tool(project, '--after', 'demo : No such task')
    assert proc.returncode == 1
    assert report['killed_after'] is None and report['status'] == 'successful'
    assert 'The run was not interrupted after "demo : No such task"' in proc.stderr
