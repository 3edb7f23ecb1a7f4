"""Preflight refuses bad inventories and variables before any layer changes a node.

Runs the real playbooks/preflight.yml through ansible-runner (failures read from its
events) against this machine over the local connection. Preflight only reads (facts, /proc/meminfo), so it is
safe here; the inventory has no ipu_nodes, so no RDMA derivation runs.
"""
import json
import sys
from pathlib import Path

import pytest

from netns_lab import SITE_PINS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from playbook_runner import run_playbook  # noqa: E402


def run_preflight(tmp_path, extra_vars=None, groups=None, skip_tags=(), playbook=ROOT / "playbooks" / "preflight.yml"):
    groups = groups or {"control_plane": ["localhost"], "workers": []}
    inventory = {
        "all": {
            "hosts": {"localhost": {"ansible_connection": "local",
                                    "ansible_python_interpreter": sys.executable}},
            "children": {
                "k8s_cluster": {"children": {
                    "control_plane": {"hosts": {h: None for h in groups["control_plane"]}},
                    "workers": {"hosts": {h: None for h in groups["workers"]}},
                }},
                "ipu_nodes": {"hosts": {h: None for h in groups.get("ipu_nodes", [])}},
            },
        }
    }
    inv = tmp_path / "hosts.json"
    inv.write_text(json.dumps(inventory))
    ev = tmp_path / "vars.json"
    ev.write_text(json.dumps(dict(SITE_PINS, **(extra_vars or {}))))
    return run_playbook(playbook, inv, tmp_path,
                        cmdline=["-e", f"@{ev}", *[f"--skip-tags={t}" for t in skip_tags]], timeout=300)


def failed(run):
    """The failed tasks' messages (runner_on_failed events), whitespace collapsed."""
    return " ".join(" ".join(run.failure_messages()).split())


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """Preflight with good variables, followed by a later play of site.yml's shape, run once for
    the tests that read a passing run.

    The OS checks (distribution, systemd as PID 1) are skipped here: a CI container is not a
    node. They run for real on the VM lab and in Molecule."""
    tmp_path = tmp_path_factory.mktemp("good")
    playbook = tmp_path / "journey.yml"
    playbook.write_text(json.dumps([
        {"name": "Preflight", "ansible.builtin.import_playbook": str(ROOT / "playbooks" / "preflight.yml")},
        {"name": "A later step", "hosts": "k8s_cluster",
         "tasks": [{"name": "Read a gathered fact", "ansible.builtin.debug": {"var": "ansible_facts.distribution"}}]},
    ]))
    return run_preflight(tmp_path, skip_tags=["preflight_os"], playbook=playbook)


def test_preflight_passes_with_good_variables(good_run):
    assert good_run.rc == 0, good_run.stdout
    assert all(host["failures"] == 0 for host in good_run.host_stats().values()), good_run.host_stats()


def test_host_that_is_not_a_supported_node_os_is_refused(tmp_path):
    result = run_preflight(tmp_path, {"preflight_supported_os": [{"distribution": "Plan9", "version": "4"}]})
    assert result.rc != 0
    assert "the node roles support Plan9 4" in failed(result)


# Mistakes that the shared settings' check (roles/ipu_k8s/tasks/validate.yml, one task that
# joins every problem it finds into its one message) reports each on its own: one run carries
# them all, and each test looks for its own setting in that message.
# (The cluster networks' rule names the first bad subnet only: a bad service subnet runs alone.)
SHARED_CHECK = {"ipu_k8s_pod_subnet": "192.168.0.1/16", "ipu_k8s_node_name": "Poplar_02"}


@pytest.fixture(scope="module")
def shared_check_run(tmp_path_factory):
    return run_preflight(tmp_path_factory.mktemp("shared"), SHARED_CHECK,
                         groups={"control_plane": ["localhost"], "workers": [], "ipu_nodes": ["stray-host"]})


# The same for the check of the release and the V-IPU controller list (roles/preflight/tasks/variables.yml).
DUPLICATE_NAMES = [{"name": "pod001", "host": "10.5.212.116"}, {"name": "pod001", "host": "10.5.213.116"}]
RELEASE_AND_CONTROLLERS_CHECK = {"ipu_k8s_kubernetes_version": "1.31", "ipu_k8s_vipu_controllers": DUPLICATE_NAMES}


@pytest.fixture(scope="module")
def release_and_controllers_check_run(tmp_path_factory):
    return run_preflight(tmp_path_factory.mktemp("release-and-controllers"), RELEASE_AND_CONTROLLERS_CHECK)


@pytest.mark.parametrize("name,value,needle", [
    ("ipu_k8s_pod_subnet", "192.168.0.1/16", "has host bits set"),
    ("ipu_k8s_service_subnet", "10.96.0.0/33", "ipu_k8s_service_subnet=10.96.0.0/33"),
    ("ipu_k8s_kubernetes_version", "1.31", "ipu_k8s_kubernetes_version=1.31 is not a full release"),
    ("ipu_k8s_kubernetes_version", "1.19.2", "ipu_k8s_kubernetes_version=1.19.2: Kubernetes 1.19 can no longer"),
])
def test_bad_variable_is_refused_with_its_name(request, tmp_path, name, value, needle):
    if SHARED_CHECK.get(name) == value:
        result = request.getfixturevalue("shared_check_run")
    elif RELEASE_AND_CONTROLLERS_CHECK.get(name) == value:
        result = request.getfixturevalue("release_and_controllers_check_run")
    else:
        result = run_preflight(tmp_path, {name: value})
    assert result.rc != 0
    assert needle in failed(result)


def test_overlapping_pod_and_service_networks_are_refused(tmp_path):
    result = run_preflight(tmp_path, {"ipu_k8s_pod_subnet": "10.96.0.0/16",
                                      "ipu_k8s_service_subnet": "10.96.0.0/12"})
    assert result.rc != 0
    assert "must not overlap each other" in failed(result)


def test_duplicate_vipu_controller_names_are_refused(release_and_controllers_check_run):
    result = release_and_controllers_check_run
    assert result.rc != 0
    assert "have the same name 'pod001': give each IPU-POD its own name" in failed(result)


def test_unknown_vipu_controller_reference_is_refused(tmp_path):
    # alone: a list with duplicate names is not checked for the choice it holds
    controllers = [{"name": "pod001", "host": "10.5.212.116"}]
    result = run_preflight(tmp_path, {"ipu_k8s_vipu_controllers": controllers,
                                      "ipu_k8s_vipu_controller": "pod009"})
    assert result.rc != 0
    assert "ipu_k8s_vipu_controller 'pod009' names no entry of ipu_k8s_vipu_controllers (names: pod001)" in failed(result)


def test_inventory_without_control_plane_is_refused(tmp_path):
    result = run_preflight(tmp_path, groups={"control_plane": [], "workers": ["localhost"]})
    assert result.rc != 0
    assert "must define control_plane" in failed(result)


def test_ipu_node_outside_the_cluster_is_refused(shared_check_run):
    # An ipu_nodes host that is not a Kubernetes node: refused by the inventory check,
    # which runs before any RDMA derivation.
    assert shared_check_run.rc != 0
    assert "ipu_nodes (a subset of k8s_cluster)" in failed(shared_check_run)


def test_invalid_kubernetes_node_name_is_refused(shared_check_run):
    assert shared_check_run.rc != 0
    assert "ipu_k8s_node_name=Poplar_02 on localhost is not a valid Kubernetes node name" in failed(shared_check_run)


@pytest.mark.parametrize("settings", [{"ansible_become": False}, {"ansible_become_user": "ops"}],
                         ids=["become-off", "become-user-not-root"])
def test_non_root_user_without_become_to_root_is_refused(tmp_path, settings):
    result = run_preflight(tmp_path, dict(settings, ansible_user="ops"), skip_tags=["preflight_os"])
    assert result.rc != 0
    assert "localhost is reached as ops with ansible_become" in failed(result)
    assert "would not run as root" in failed(result)

def test_admin_user_missing_on_the_control_plane_is_refused(tmp_path):
    result = run_preflight(tmp_path, {"kubeadm_admin_user": "no-such-admin"}, skip_tags=["preflight_os"])
    assert result.rc != 0
    assert 'kubeadm_admin_user is "no-such-admin", a user that does not exist on localhost' in failed(result)


def test_registry_mirror_that_is_not_a_url_is_refused(tmp_path):
    hosts = {"docker.io": {"mirrors": [{"url": "mirror.example.com; rm -rf /"}]}}
    result = run_preflight(tmp_path, {"containerd_registry_hosts": hosts}, skip_tags=["preflight_os"])
    assert result.rc != 0
    assert 'containerd_registry_hosts["docker.io"]' in failed(result) and "an http(s) URL" in failed(result)


def test_swap_that_would_not_fit_in_memory_is_refused_with_both_sizes(tmp_path):
    # A headroom larger than this machine's memory stands in for swap that memory cannot take
    # back. The sizes in the message are the kernel's: the swap in use is the sum of the Used
    # column of /proc/swaps (KiB), the memory available MemAvailable of /proc/meminfo.
    # MemAvailable moves with whatever else runs here: only its range is checked.
    swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    swap_used_mib = round(sum(int(line.split()[3]) for line in swaps) / 1024)
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    total_mib = int(meminfo["MemTotal"].split()[0]) // 1024
    result = run_preflight(tmp_path, {"preflight_swap_headroom_mb": total_mib + 1024}, skip_tags=["preflight_os"])
    assert result.rc != 0
    message = failed(result)
    assert f"localhost has {swap_used_mib} MiB of swap in use but only " in message, message
    reported = int(message.split(" MiB of memory available")[0].rsplit(" ", 1)[1])
    assert 0 < reported <= total_mib, (reported, total_mib)
    assert "turning swap off (the kubelet requires it) would fail" in message


def test_facts_preflight_gathers_serve_the_later_plays_of_the_run(good_run):
    # site.yml's later plays gather facts the default way (ansible.cfg: gathering = smart): a
    # node answers one fact-gathering call per run, preflight's, and not one per play.
    assert good_run.rc == 0, good_run.stdout
    gathered = [e for e in good_run.events if e["event"] == "runner_on_ok"
                and e["event_data"].get("task_action", "").rsplit(".", 1)[-1] in ("setup", "gather_facts")]
    assert [e["event_data"]["host"] for e in gathered] == ["localhost"], [e["event_data"].get("task") for e in gathered]
