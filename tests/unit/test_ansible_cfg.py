"""The project's ansible.cfg names no default inventory: a command that forgets
`-i inventories/<site>/hosts.yml` reaches no host (not the lab's, not the example site's)."""
import os
import subprocess
from pathlib import Path

from testlib import tool

ROOT = Path(__file__).resolve().parents[2]


def test_a_forgotten_inventory_reaches_no_host(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_HOME=str(tmp_path), ANSIBLE_NOCOLOR='1')
    env.pop('ANSIBLE_INVENTORY', None)
    result = subprocess.run([tool('ansible-playbook'), '--list-hosts', 'site.yml'], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    listed = [line.split('(')[1].split(')')[0] for line in result.stdout.splitlines() if 'hosts (' in line]
    assert listed and set(listed) == {'0'}, result.stdout
