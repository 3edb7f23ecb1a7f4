"""plugins/callback/ipu_k8s_preload.py, as ansible.cfg enables it: the filter plugins are
loaded once, in ansible-playbook's own process, not again by each task's forked process.

A filter plugin of the test's own notes the process that imports it; a play of three tasks,
each templating that filter, runs with the project's settings (one import, by the process
that started the play) and with another callback enabled in its place (one import in each
task's process)."""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from testlib import tool  # tests/testlib.py

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize('callbacks, imports', [(None, 1), ('ansible.posix.timer', 3)])
def test_the_filters_are_loaded_once_before_the_tasks_fork(tmp_path, callbacks, imports):
    filters = tmp_path / 'filters'
    filters.mkdir()
    noted = tmp_path / 'imported-by'
    (filters / 'noting.py').write_text(textwrap.dedent('''\
        import os
        with open(%r, 'a') as out:
            out.write('%%d\\n' %% os.getpid())


        class FilterModule:
            def filters(self):
                return {'noted': lambda value: 'noted %%s' %% value}
        ''' % str(noted)))
    play = tmp_path / 'play.yml'
    play.write_text(textwrap.dedent('''\
        - name: Three tasks that template one filter
          hosts: localhost
          gather_facts: false
          tasks:
            - {name: One, ansible.builtin.debug: {msg: "{{ 1 | noted }}"}}
            - {name: Two, ansible.builtin.debug: {msg: "{{ 2 | noted }}"}}
            - {name: Three, ansible.builtin.debug: {msg: "{{ 3 | noted }}"}}
        '''))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='default',
               ANSIBLE_FILTER_PLUGINS='%s:%s' % (ROOT / 'plugins' / 'filter', filters),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'))
    if callbacks is not None:
        env['ANSIBLE_CALLBACKS_ENABLED'] = callbacks
    proc = subprocess.run([tool('ansible-playbook'), '-i', 'localhost,', '-c', 'local', str(play)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count('noted ') == 3, proc.stdout
    pids = noted.read_text().split()
    assert len(pids) == imports, pids
