"""tests/playbook_runner.py on localhost plays:
- kill_after: the run is killed as the task after the named one starts, so nothing after it
  happens;
- clean_env: a run sees none of the caller's environment but the suite's module bytecode cache
  settings (PYTHON_CACHE_SETTINGS), so the modules of the integration and api tiers, which run
  with clean_env, read their compiled code from the cache as scripts/test means them to."""

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402


def localhost_play(tmp_path, tasks):
    """A play of TASKS (YAML, one task a line) on localhost, written to tmp_path/play.yml."""
    play = tmp_path / 'play.yml'
    play.write_text('- name: Demo\n  hosts: localhost\n  gather_facts: false\n  tasks:\n'
                    + textwrap.indent(textwrap.dedent(tasks), '    '))
    return play


def test_a_run_is_killed_as_the_task_after_the_named_one_starts(tmp_path):
    play = localhost_play(tmp_path, '''\
        - name: Write the first file
          ansible.builtin.copy: {content: "1\\n", dest: "{{ out }}/first", mode: "0644"}
        - name: Take a while
          ansible.builtin.wait_for: {timeout: 3}
        - name: Write the last file
          ansible.builtin.copy: {content: "3\\n", dest: "{{ out }}/last", mode: "0644"}
        ''')
    run = run_playbook(play, 'localhost,', tmp_path / 'runs', kill_after='Write the first file',
                       cmdline=['-c', 'local', '-e', 'out=%s' % tmp_path,
                                '-e', 'ansible_python_interpreter=%s' % sys.executable])
    assert run.status == 'canceled', run.stdout[-2000:]
    assert (tmp_path / 'first').exists()
    assert not (tmp_path / 'last').exists()
    assert run.results('Take a while') == []  # killed before it reported


def test_a_clean_run_keeps_the_module_cache_and_nothing_else_from_the_shell(tmp_path, monkeypatch):
    cache = tmp_path / 'cache'
    monkeypatch.setenv('PYTHONPATH', str(ROOT / 'scripts' / 'ansiballz-pyc'))
    monkeypatch.setenv('IPU_K8S_PYC_CACHE', str(cache))
    monkeypatch.setenv('IPU_K8S_FROM_THE_SHELL', 'leaked')
    play = localhost_play(tmp_path, '''\
        - name: Read the environment
          ansible.builtin.command: env
        ''')
    run = run_playbook(play, 'localhost,', tmp_path / 'runs', clean_env=True,
                       cmdline=['-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable])
    assert run.status == 'successful', run.stdout[-2000:]
    seen = dict(line.split('=', 1) for line in run.results('Read the environment')[0]['stdout_lines'] if '=' in line)
    assert 'IPU_K8S_FROM_THE_SHELL' not in seen, seen
    assert seen.get('IPU_K8S_PYC_CACHE') == str(cache), seen
    # the command module's payload was compiled through the cache
    assert list(cache.rglob('*')), 'nothing in the module cache %s' % cache
