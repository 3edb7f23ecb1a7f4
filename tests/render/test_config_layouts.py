"""The containerd role's hosts.toml template (templates/hosts.toml.j2), rendered with
ansible-playbook on localhost (no VM needed); the config.toml rewrite on each containerd
release's layout is tests/unit/test_containerd_config.py:
    .venv/bin/pytest tests/render/test_config_layouts.py
"""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROLE = Path(__file__).resolve().parents[2] / "roles" / "containerd"


def render_hosts(tmp_path, registry, entry):
    """The role's hosts.toml template for one containerd_registry_hosts entry, parsed."""
    (tmp_path / "entry.json").write_text(json.dumps({"item": {"registry": {"key": registry, "value": entry}}}))
    (tmp_path / "hosts-play.yml").write_text(
        f"""
- hosts: localhost
  gather_facts: false
  vars_files:
    - {ROLE}/defaults/main.yml
  tasks:
    - ansible.builtin.template:
        src: {ROLE}/templates/hosts.toml.j2
        dest: {tmp_path}/hosts.toml
        mode: "0644"
"""
    )
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    playbook = Path(sys.executable).with_name("ansible-playbook")
    result = subprocess.run([str(playbook), "-e", f"@{tmp_path}/entry.json", str(tmp_path / "hosts-play.yml")],
                            capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return tomllib.loads((tmp_path / "hosts.toml").read_text())


def test_registry_mirrors_are_written_as_containerd_hosts_toml(tmp_path):
    # The layout of containerd's docs/hosts.md: server, then one [host."<url>"] table per
    # mirror with capabilities, ca and skip_verify.
    hosts = render_hosts(tmp_path, "docker.io", {
        "server": "https://registry-1.docker.io",
        "mirrors": [{"url": "https://mirror.example.com", "ca": "/usr/local/share/ca-certificates/mirror.crt"},
                    {"url": "http://10.0.0.5:5000", "capabilities": ["pull"], "skip_verify": True}]})
    assert hosts == {
        "server": "https://registry-1.docker.io",
        "host": {"https://mirror.example.com": {"capabilities": ["pull", "resolve"],
                                                "ca": "/usr/local/share/ca-certificates/mirror.crt"},
                 "http://10.0.0.5:5000": {"capabilities": ["pull"], "skip_verify": True}}}
    assert list(hosts["host"]) == ["https://mirror.example.com", "http://10.0.0.5:5000"]  # tried in this order
