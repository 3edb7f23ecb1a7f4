"""scripts/ipu_k8s_run.py, the ansible-runner entry point that scripts/lab site uses and the
README offers to people's own tooling: driven against the small localhost playbooks of
tests/unit/progress/, as a command and from Python."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / 'progress'
ENTRY_POINT = ROOT / 'scripts' / 'ipu_k8s_run.py'
sys.path.insert(0, str(ROOT / 'scripts'))

import ipu_k8s_run  # noqa: E402


def local_args(tmp_path):
    return ['-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', 'progress_dir=%s' % tmp_path]


def events(artifact_dir):
    return [json.loads(p.read_text()) for p in sorted(Path(artifact_dir, 'job_events').glob('*.json'))]


def test_the_command_shows_the_progress_output_and_exits_with_the_playbooks_status(tmp_path):
    env = dict(os.environ, ANSIBLE_LIBRARY=str(FIXTURE / 'library'), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'))
    env.pop('ANSIBLE_STDOUT_CALLBACK', None)
    proc = subprocess.run([sys.executable, str(ENTRY_POINT), '-i', 'localhost,', *local_args(tmp_path),
                           str(FIXTURE / 'steps' / 'prepare.yml'), '--private-data-dir', str(tmp_path / 'runner')],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the project's progress callback on the terminal, not runner's or the default one
    assert re.search(r'^== 1/\d prepare  \(play "Prepare"', proc.stdout, re.M) and 'TASK [' not in proc.stdout, proc.stdout
    assert '\x1b[' not in proc.stdout  # not a terminal here: no colour codes
    assert 'ansible-runner: successful (rc=0); events of this run: ' in proc.stderr
    artifact_dir = Path(proc.stderr.split('events of this run: ')[1].split()[0]).parent
    stats = [e for e in events(artifact_dir) if e['event'] == 'playbook_on_stats']
    assert stats and stats[-1]['event_data']['changed'] == {'localhost': 1}


def test_from_python_the_run_returns_its_status_and_structured_events(tmp_path, monkeypatch):
    monkeypatch.setenv('ANSIBLE_LIBRARY', str(FIXTURE / 'library'))
    monkeypatch.delenv('ANSIBLE_STDOUT_CALLBACK', raising=False)
    result = ipu_k8s_run.run('localhost,', FIXTURE / 'steps' / 'wait.yml', local_args(tmp_path) + ['-e', 'progress_fail=true'],
                             private_data_dir=tmp_path / 'runner', quiet=True)
    assert (result.status, result.rc) == ('failed', 2)
    failed = [e['event_data'] for e in result.events if e['event'] == 'runner_on_failed']
    assert [(f['host'], f['task'], f['res']['msg']) for f in failed] == [('localhost', 'Fail on request', 'asked to fail')]
    assert 'FAILED   Fail on request  [localhost]' in result.stdout.read()


def test_a_run_takes_its_own_environment_not_one_an_earlier_run_left_in_the_data_dir(tmp_path, monkeypatch):
    # ansible-runner keeps env/envvars in the data dir and, once there, lays it over the
    # environment of every later run: the default data dir is shared by all runs
    monkeypatch.delenv('ANSIBLE_STDOUT_CALLBACK', raising=False)
    play = tmp_path / 'env.yml'
    play.write_text('- hosts: all\n  gather_facts: false\n  tasks:\n'
                    '    - ansible.builtin.copy:\n        dest: "{{ progress_dir }}/seen"\n'
                    '        content: "{{ lookup(\'ansible.builtin.env\', \'IPU_K8S_SEEN\') }}"\n        mode: "0644"\n')
    for value in ('first', 'second'):
        result = ipu_k8s_run.run('localhost,', play, local_args(tmp_path), private_data_dir=tmp_path / 'runner',
                                 quiet=True, envvars={'IPU_K8S_SEEN': value})
        assert (result.status, (tmp_path / 'seen').read_text()) == ('successful', value)
