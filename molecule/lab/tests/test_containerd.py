"""What a person would check by hand on a node after the containerd role, on containerd 1.x
(the lab's Debian 12 guests, molecule/lab) and 2.x (Debian forky, molecule/containerd2).

Every check reads the guest over SSH: the configuration file, the configuration the running
containerd parsed (`containerd config dump`), its journal, systemd and the running process.
Where the two majors differ, the places are containerd's own, read at their tags:
  config version 2 (1.3+) and 3 (2.0+): RELEASES.md, "Daemon Configuration", v2.1.9 lines 433-437;
  1.x: [plugins."io.containerd.grpc.v1.cri"] sandbox_image, registry.config_path and
       containerd.runtimes.runc.options SystemdCgroup (docs/cri/config.md, v1.6.20 lines 43, 240, 306);
  2.x: [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options] SystemdCgroup
       (docs/cri/config.md, v2.1.9 lines 33-35), [plugins.'io.containerd.cri.v1.images']
       pinned_images.sandbox and registry.config_path (the same file, lines 246-250);
  the CRI configuration logged at start: "Start cri plugin with config %+v" (1.6.20
       pkg/cri/cri.go:78), "starting cri plugin" with the config as JSON (2.1.9
       plugins/cri/runtime/plugin.go:99).
"""

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

CONFIG = "/etc/containerd/config.toml"
# The pause kubeadm expects at the lab's Kubernetes minor (the default release; the tags per minor
# come from tests/schemas/kubernetes/pause-versions.yaml, read upstream).
_ROOT = Path(__file__).resolve().parents[3]
_MINOR = ".".join(yaml.safe_load((_ROOT / "roles/ipu_k8s/defaults/main/main.yml").read_text())
                  ["ipu_k8s_kubernetes_version"].split(".")[:2])
SANDBOX_IMAGE = "registry.k8s.io/pause:" + yaml.safe_load(
    (_ROOT / "tests/schemas/kubernetes/pause-versions.yaml").read_text())["kubernetes"][_MINOR]["pause"]
REGISTRY_CONFIG_DIR = "/etc/containerd/certs.d"
# The config version each containerd major writes and reads as its own.
CONFIG_VERSION = {"1": 2, "2": 3}


def cri_settings(config):
    """(SystemdCgroup of runc, sandbox image, registry config_path) where the config's version puts them."""
    plugins = config.get("plugins", {})
    if config.get("version") == 3:
        runtime = plugins.get("io.containerd.cri.v1.runtime", {})
        images = plugins.get("io.containerd.cri.v1.images", {})
        sandbox = images.get("pinned_images", {}).get("sandbox")
    else:
        runtime = images = plugins.get("io.containerd.grpc.v1.cri", {})
        sandbox = images.get("sandbox_image")
    options = runtime.get("containerd", {}).get("runtimes", {}).get("runc", {}).get("options", {})
    return options.get("SystemdCgroup"), sandbox, images.get("registry", {}).get("config_path")


@pytest.fixture(scope="module")
def major(host):
    # `containerd --version` of Debian forky's 2.1.9+ds1-5 and Debian 12's 1.6.20~ds1-1+deb12u3:
    # "containerd github.com/containerd/containerd/v2 2.1.9+unknown " and
    # "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3"
    version = host.check_output("containerd --version").split()[2]
    assert re.match(r"\d+\.\d+\.\d+", version), version
    return version.split(".")[0]


def test_containerd_is_running_and_enabled(host):
    service = host.service("containerd")
    assert service.is_running
    assert service.is_enabled


def test_config_is_the_installed_majors_version(host, major):
    assert major in CONFIG_VERSION, f"containerd {major}.x: this check knows 1.x and 2.x"
    assert tomllib.loads(host.file(CONFIG).content_string)["version"] == CONFIG_VERSION[major]


def test_config_file_sets_the_three_settings(host):
    assert cri_settings(tomllib.loads(host.file(CONFIG).content_string)) == (True, SANDBOX_IMAGE, REGISTRY_CONFIG_DIR)


def test_running_containerd_reads_the_three_settings(host, major):
    # `containerd config dump` is the configuration containerd itself parses from the file,
    # migrated to its own version: settings under another major's plugin names are not in it.
    dump = tomllib.loads(host.check_output("containerd config dump"))
    assert dump["version"] == CONFIG_VERSION[major]
    assert cri_settings(dump) == (True, SANDBOX_IMAGE, REGISTRY_CONFIG_DIR)


def test_cri_plugin_is_serving(host):
    # The CRI plugin kubelet talks to loaded without error.
    plugins = host.check_output("ctr plugins ls")
    cri = [line for line in plugins.splitlines() if line.split()[:2] == ["io.containerd.grpc.v1", "cri"]]
    assert cri and cri[0].split()[-1] == "ok", plugins


def test_systemd_limit_memlock_is_infinity(host):
    assert host.check_output("systemctl show containerd -p LimitMEMLOCK") == "LimitMEMLOCK=infinity"


def test_running_containerd_has_unlimited_locked_memory(host):
    pid = host.check_output("systemctl show containerd -p MainPID --value")
    assert pid.isdigit() and pid != "0"
    limits = host.file(f"/proc/{pid}/limits").content_string
    line = next(line for line in limits.splitlines() if line.startswith("Max locked memory"))
    assert line.split()[3:5] == ["unlimited", "unlimited"], line


def test_docker_daemon_json_gains_unlimited_memlock_and_keeps_the_rest(host):
    config = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert config["default-ulimits"]["memlock"] == {"Name": "memlock", "Soft": -1, "Hard": -1}
    # What was there before the role ran (written by prepare.yml) is still there.
    assert config["default-ulimits"]["nofile"] == {"Name": "nofile", "Soft": 65536, "Hard": 65536}
    assert config["exec-opts"] == ["native.cgroupdriver=systemd"]
    assert config["log-opts"] == {"max-size": "100m"}


def test_registry_mirror_is_a_hosts_file_in_the_config_path(host):
    # inventories/lab/host_vars/node1.yml: docker.io with one mirror, default capabilities.
    hosts = tomllib.loads(host.file(f"{REGISTRY_CONFIG_DIR}/docker.io/hosts.toml").content_string)
    assert hosts == {"host": {"http://127.0.0.1:5000": {"capabilities": ["pull", "resolve"]}}}


def test_running_containerd_uses_the_systemd_cgroup_driver(host):
    # What the running process parsed, not what the file says: containerd logs its CRI
    # configuration once, when the CRI plugin starts (1.x as a Go struct, 2.x as JSON inside
    # the logged field, its quotes escaped). The lab's side_effect.yml interrupted a run
    # after config.toml was written and before the restart, then ran again.
    pid = host.check_output("systemctl show containerd -p MainPID --value")
    log = host.check_output(f"journalctl --no-pager -o cat _PID={pid}")
    started = [line for line in log.splitlines() if "Start cri plugin with config" in line or "starting cri plugin" in line]
    assert started, log[-2000:]
    assert re.search(r'SystemdCgroup\W{0,4}true', started[-1]), started[-1][:2000]


def test_running_containerd_started_after_its_configuration(host):
    # The same comparison the role makes, done here by hand: the main process's start
    # (monotonic clock, turned into wall-clock time) is later than every file it reads.
    script = (
        "import os, subprocess, time\n"
        "us = int(subprocess.check_output(['systemctl', 'show', 'containerd', '-p',"
        " 'ExecMainStartTimestampMonotonic', '--value']))\n"
        "started = time.time() - (time.clock_gettime(time.CLOCK_MONOTONIC) - us / 1e6)\n"
        f"files = ['{CONFIG}', '/etc/systemd/system/containerd.service.d/ipu-k8s-memlock.conf']\n"
        "print(min(started - os.stat(f).st_mtime for f in files))\n"
    )
    margin = float(host.check_output(f"python3 -c \"{script}\""))
    assert margin > 0, f"containerd started {-margin:.1f} s before its configuration last changed"
