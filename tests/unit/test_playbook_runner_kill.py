"""tests/playbook_runner.py's kill_after, on a localhost play of three tasks: the run is
killed as the task after the named one starts, so nothing after it happens."""

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402


def test_a_run_is_killed_as_the_task_after_the_named_one_starts(tmp_path):
    play = tmp_path / 'play.yml'
    play.write_text(textwrap.dedent('''\
        - name: Demo
          hosts: localhost
          gather_facts: false
          tasks:
            - name: Write the first file
              ansible.builtin.copy: {content: "1\\n", dest: "{{ out }}/first", mode: "0644"}
            - name: Take a while
              ansible.builtin.wait_for: {timeout: 3}
            - name: Write the last file
              ansible.builtin.copy: {content: "3\\n", dest: "{{ out }}/last", mode: "0644"}
        '''))
    run = run_playbook(play, 'localhost,', tmp_path / 'runs', kill_after='Write the first file',
                       cmdline=['-c', 'local', '-e', 'out=%s' % tmp_path,
                                '-e', 'ansible_python_interpreter=%s' % sys.executable])
    assert run.status == 'canceled', run.stdout[-2000:]
    assert (tmp_path / 'first').exists()
    assert not (tmp_path / 'last').exists()
    assert run.results('Take a while') == []  # killed before it reported
