"""The containerd role's config.toml rewrite, on each containerd release's default layout.

The VM runs Debian 12's containerd 1.6; these cases cover the 1.7 and 2.x layouts a
Ubuntu or Docker-repository node gets. They call the role's containerd_config filter with
the role's defaults, and template its hosts.toml with ansible-playbook on localhost (no VM
needed):
    .venv/bin/pytest tests/render/test_config_layouts.py
"""

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

ROLE = Path(__file__).resolve().parents[2] / "roles" / "containerd"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
_SPEC = importlib.util.spec_from_file_location("containerd_config", ROLE / "filter_plugins" / "containerd_config.py")
FILTER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(FILTER)

V1 = """version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.8"
    systemd_cgroup = false
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
    [plugins."io.containerd.grpc.v1.cri".containerd]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          sandbox_mode = "podsandbox"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            ShimCgroup = ""
            SystemdCgroup = false
  [plugins."io.containerd.transfer.v1.local"]
    config_path = ""
    max_concurrent_downloads = 3
"""

V2_WITHOUT_KEY = """version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          sandboxer = 'podsandbox'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            BinaryName = ''
            ShimCgroup = ''
"""

V2_WITH_KEY = V2_WITHOUT_KEY.replace("ShimCgroup = ''\n", "ShimCgroup = ''\n            SystemdCgroup = false\n")


def render(tmp_path, default_config, **overrides):
    """config.toml for one `containerd config default` output, the role's defaults overridden."""
    settings = dict(DEFAULTS, **overrides)
    return FILTER.containerd_config(default_config, settings["containerd_systemd_cgroup"],
                                    settings["containerd_sandbox_image"], settings["containerd_registry_config_dir"])


@pytest.mark.parametrize("layout", [V1, V2_WITH_KEY, V2_WITHOUT_KEY], ids=["1.x", "2.x", "2.0-2.1-without-key"])
def test_systemd_cgroup_is_true_exactly_once(tmp_path, layout):
    config = render(tmp_path, layout)
    assert config.count("SystemdCgroup = true") == 1
    assert "SystemdCgroup = false" not in config


def test_systemd_cgroup_lands_under_the_runc_options_table(tmp_path):
    lines = render(tmp_path, V2_WITHOUT_KEY).splitlines()
    table = lines.index("          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]")
    assert lines[table + 1].strip() == "SystemdCgroup = true"


def test_legacy_cri_systemd_cgroup_key_is_left_false(tmp_path):
    # systemd_cgroup = true at the CRI plugin level makes containerd refuse the CRI plugin.
    assert "    systemd_cgroup = false\n" in render(tmp_path, V1)


@pytest.mark.parametrize(
    ("layout", "line"),
    [(V1, '    sandbox_image = "registry.k8s.io/pause:3.10"'), (V2_WITH_KEY, "      sandbox = 'registry.k8s.io/pause:3.10'")],
    ids=["1.x", "2.x"],
)
def test_sandbox_image_is_the_pinned_one(tmp_path, layout, line):
    assert line in render(tmp_path, layout).splitlines()


def test_sandbox_image_and_cgroup_driver_follow_the_variables(tmp_path):
    config = render(tmp_path, V2_WITH_KEY, containerd_sandbox_image="mirror.example/pause:3.9", containerd_systemd_cgroup=False)
    assert "sandbox = 'mirror.example/pause:3.9'" in config
    assert "SystemdCgroup = false" in config


def test_only_the_three_settings_change(tmp_path):
    before = V1.splitlines()
    after = render(tmp_path, V1).splitlines()
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert [a.strip() for _, a in changed] == ['sandbox_image = "registry.k8s.io/pause:3.10"',
                                               'config_path = "/etc/containerd/certs.d"', "SystemdCgroup = true",
                                               'config_path = "/etc/containerd/certs.d"']


@pytest.mark.parametrize("layout", [V1, V2_WITH_KEY], ids=["1.x", "2.x"])
def test_registry_hosts_directory_survives_the_regeneration(tmp_path, layout):
    # A regenerated config.toml points CRI at the hosts.toml directory, so mirrors kept
    # there are never lost; 2.x's own default ('/etc/containerd/certs.d:/etc/docker/certs.d')
    # becomes the one directory the role writes.
    config = tomllib.loads(render(tmp_path, layout, containerd_registry_config_dir="/srv/certs.d"))
    cri = config["plugins"]["io.containerd.grpc.v1.cri" if layout == V1 else "io.containerd.cri.v1.images"]
    assert cri["registry"]["config_path"] == "/srv/certs.d"


@pytest.mark.parametrize("missing", ["SystemdCgroup", "sandbox_image", "config_path"])
def test_a_layout_without_a_setting_is_refused_naming_it(tmp_path, missing):
    layout = V1.replace("runc.options]", "runc.opts]") if missing == "SystemdCgroup" else V1
    layout = "\n".join(line for line in layout.splitlines() if not line.strip().startswith(missing)) + "\n"
    with pytest.raises(AnsibleFilterError, match="containerd --version"):
        render(tmp_path, layout)


def render_hosts(tmp_path, registry, entry):
    """The role's hosts.toml template for one containerd_registry_hosts entry, parsed."""
    (tmp_path / "entry.json").write_text(json.dumps({"item": {"key": registry, "value": entry}}))
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
