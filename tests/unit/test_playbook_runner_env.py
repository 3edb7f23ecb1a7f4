"""tests/playbook_runner.py's clean_env: a run sees none of the caller's environment but the
suite's module bytecode cache settings (PYTHON_CACHE_SETTINGS), so the modules of the
integration and api tiers, which run with clean_env, read their compiled code from the cache
as scripts/test means them to."""

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402


def test_a_clean_run_keeps_the_module_cache_and_nothing_else_from_the_shell(tmp_path, monkeypatch):
    cache = tmp_path / 'cache'
    monkeypatch.setenv('PYTHONPATH', str(ROOT / 'scripts' / 'ansiballz-pyc'))
    monkeypatch.setenv('IPU_K8S_PYC_CACHE', str(cache))
    monkeypatch.setenv('IPU_K8S_FROM_THE_SHELL', 'leaked')
    play = tmp_path / 'play.yml'
    play.write_text(textwrap.dedent('''\
        - name: Demo
          hosts: localhost
          gather_facts: false
          tasks:
            - name: Read the environment
              ansible.builtin.command: env
        '''))
    run = run_playbook(play, 'localhost,', tmp_path / 'runs', clean_env=True,
                       cmdline=['-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable])
    assert run.status == 'successful', run.stdout[-2000:]
    seen = dict(line.split('=', 1) for line in run.results('Read the environment')[0]['stdout_lines'] if '=' in line)
    assert 'IPU_K8S_FROM_THE_SHELL' not in seen, seen
    assert seen.get('IPU_K8S_PYC_CACHE') == str(cache), seen
    # the command module's payload was compiled through the cache
    assert list(cache.rglob('*')), 'nothing in the module cache %s' % cache
