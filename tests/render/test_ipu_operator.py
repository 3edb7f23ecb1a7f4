"""Render tests for the ipu_operator role.

Everything here goes through the role's real tasks, vars, defaults and templates, run by
ansible-playbook against localhost (connection local) with a throwaway inventory shaped
like a real site: control_plane=[cp1], workers=[w1, w2], ipu_nodes=[w1, w2]. The
vipu_server facts the rdma_network layer would set are set with set_fact (cacheable), the
way a module's ansible_facts land. Nothing contacts a cluster: only the entry points that
compute or render (validate, select, values, smoke_manifest) are run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "ipu_operator"
SCHEMAS = REPO / "tests" / "schemas" / "ipu_operator"
SHARED_DEFAULTS = REPO / "roles" / "ipu_k8s" / "defaults" / "main.yml"


def _ansible_playbook() -> str:
    venv = REPO / ".venv" / "bin" / "ansible-playbook"
    if venv.exists():
        return str(venv)
    found = shutil.which("ansible-playbook")
    if not found:
        pytest.fail("ansible-playbook not found: run scripts/bootstrap (or install requirements.txt)")
    return found


def _role_defaults() -> dict:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def _inventory(tmp_path: Path, host_vars: dict | None = None, ipu_nodes=("w1", "w2")) -> Path:
    host_vars = host_vars or {}

    def hosts(names):
        return {name: dict(host_vars.get(name, {})) for name in names}

    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            },
            "children": {
                "k8s_cluster": {
                    "children": {
                        "control_plane": {"hosts": hosts(["cp1"])},
                        "workers": {"hosts": hosts(["w1", "w2"])},
                    }
                },
                "ipu_nodes": {"hosts": hosts(ipu_nodes)},
            },
        }
    }
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


def _run(tmp_path: Path, entry_points: list[str], extra_vars: dict, host_vars: dict | None = None,
         ipu_nodes=("w1", "w2"), check_mode: bool = False) -> subprocess.CompletedProcess:
    """Run the role's entry points on cp1 after setting each node's vipu_server fact.

    host_vars may give a host `test_vipu_server`: it becomes that host's vipu_server fact.
    The play then writes the label plan and the smoke IPUJob (when computed) as JSON files.
    """
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    plays = [
        {
            "name": "Set the vipu_server facts the rdma_network layer would set",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Set vipu_server",
                    "ansible.builtin.set_fact": {"vipu_server": "{{ test_vipu_server }}", "cacheable": True},
                    "when": "test_vipu_server is defined",
                }
            ],
        },
        {
            "name": "Run the ipu_operator entry points under test",
            "hosts": "control_plane[0]",
            "gather_facts": False,
            "tasks": [
                {
                    "name": f"ipu_operator {entry}",
                    "ansible.builtin.include_role": {"name": "ipu_operator", "tasks_from": entry},
                }
                for entry in entry_points
            ]
            + [
                {
                    "name": "Save the label plan",
                    "ansible.builtin.copy": {
                        "content": "{{ __ipu_operator_label_plan | to_json }}",
                        "dest": str(out / "label_plan.json"),
                        "mode": "0644",
                    },
                    "when": "__ipu_operator_label_plan is defined",
                },
                {
                    "name": "Save the smoke IPUJob",
                    "ansible.builtin.copy": {
                        "content": "{{ ipu_operator_smoke_ipujob | to_json }}",
                        "dest": str(out / "ipujob.json"),
                        "mode": "0644",
                    },
                    "when": "ipu_operator_smoke_ipujob is defined",
                },
            ],
        },
    ]
    playbook = tmp_path / "playbook.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    vars_file = tmp_path / "extra_vars.json"
    vars_file.write_text(json.dumps({"ipu_operator_work_dir": str(out), **extra_vars}))
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
    )
    return subprocess.run(
        [_ansible_playbook(), "-i", str(_inventory(tmp_path, host_vars, ipu_nodes)), str(playbook),
         "-e", f"@{vars_file}"] + (["--check", "--diff"] if check_mode else []),
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )


def _ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"ansible-playbook failed:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"


def _failure_messages(result: subprocess.CompletedProcess) -> list[str]:
    """The msg of every failed task in the json callback's report."""
    assert result.returncode != 0, "the run was expected to fail but passed"
    report = json.loads(result.stdout)
    messages = []
    for play in report["plays"]:
        for task in play["tasks"]:
            for host_result in task["hosts"].values():
                if host_result.get("failed"):
                    msg = host_result.get("msg", "")
                    messages.extend(msg if isinstance(msg, list) else [msg])
    assert messages, f"no failed task found in:\n{result.stdout[-4000:]}"
    return messages


def _values(tmp_path: Path) -> dict:
    return yaml.safe_load((tmp_path / "out" / "values.yaml").read_text())


def _flat_keys(tree: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            keys |= _flat_keys(value, path + ".")
        else:
            keys.add(path)
    return keys


def _chart_keys(version: str) -> set[str]:
    real = SCHEMAS / f"values-{version}.yaml"
    if real.exists():
        return _flat_keys(yaml.safe_load(real.read_text()) or {})
    table = yaml.safe_load((SCHEMAS / "chart-values-keys.yaml").read_text())["versions"]
    assert version in table, f"chart {version} has no key set in {SCHEMAS / 'chart-values-keys.yaml'}"
    return set(table[version]["keys"])


def _assert_keys_in_chart(values: dict) -> None:
    for version in _role_defaults()["ipu_operator_chart_ships_crd"]:
        unknown = _flat_keys(values) - _chart_keys(version)
        assert not unknown, f"values set keys chart {version} does not have: {sorted(unknown)}"


# --- chart values --------------------------------------------------------------------


def test_one_controller_takes_default_port_and_label(tmp_path):
    result = _run(tmp_path, ["values"], {"ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}]})
    _ok(result)
    values = _values(tmp_path)
    assert values == {"global": {"vipuControllers": "10.5.212.116:8090:ipunode=true"}, "worker": {"hostNetwork": False}}
    assert values["worker"]["hostNetwork"] is False
    _assert_keys_in_chart(values)


def test_two_ipu_pods_render_two_controllers_in_order(tmp_path):
    controllers = [
        {"name": "pod001", "host": "10.5.212.116", "port": 8090, "label": "vipu-ctrl=pod001"},
        {"name": "pod002", "host": "vipu.pod002.example", "port": 8091, "label": "graphcore.ai/vipu-ctrl=pod002"},
    ]
    result = _run(tmp_path, ["values"], {"ipu_k8s_vipu_controllers": controllers})
    _ok(result)
    values = _values(tmp_path)
    assert values["global"]["vipuControllers"] == (
        "10.5.212.116:8090:vipu-ctrl=pod001,vipu.pod002.example:8091:graphcore.ai/vipu-ctrl=pod002"
    )
    assert values["worker"]["hostNetwork"] is False
    _assert_keys_in_chart(values)


def test_empty_list_uses_the_nodes_shared_vipu_server_fact_once(tmp_path):
    fact = {"host": "10.5.212.116", "port": 8090, "address": "10.5.212.116:8090", "version": "1.18.0", "source": "cli"}
    result = _run(tmp_path, ["values"], {"ipu_k8s_vipu_controllers": []},
                  host_vars={"w1": {"test_vipu_server": fact}, "w2": {"test_vipu_server": fact}})
    _ok(result)
    values = _values(tmp_path)
    assert values == {"global": {"vipuControllers": "10.5.212.116:8090:ipunode=true"}, "worker": {"hostNetwork": False}}
    _assert_keys_in_chart(values)


def test_extra_values_are_merged_under_the_roles_values(tmp_path):
    extra = {"global": {"imagePullSecrets": [{"name": "regcred"}], "launcherImage": "registry.local/ipu-operator-launcher"}}
    result = _run(tmp_path, ["values"], {
        "ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}],
        "ipu_operator_extra_values": extra,
    })
    _ok(result)
    values = _values(tmp_path)
    assert values["global"] == {
        "imagePullSecrets": [{"name": "regcred"}],
        "launcherImage": "registry.local/ipu-operator-launcher",
        "vipuControllers": "10.5.212.116:8090:ipunode=true",
    }
    assert values["worker"] == {"hostNetwork": False}
    _assert_keys_in_chart(values)


def test_extra_values_cannot_turn_the_host_network_on(tmp_path):
    result = _run(tmp_path, ["values"], {
        "ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}],
        "ipu_operator_extra_values": {"worker": {"hostNetwork": True}},
    })
    assert any("ipu_operator_extra_values sets worker.hostNetwork" in m for m in _failure_messages(result))
    assert not (tmp_path / "out" / "values.yaml").exists(), "values were rendered although refused"


# --- validation refusals ---------------------------------------------------------------


BAD_LABELS = {
    # entry name: (label, what the refusal must say)
    "pod002": ("ipu node=true", "label 'ipu node=true' has an invalid Kubernetes label key 'ipu node'"),
    "pod003": ("ipunode", "label 'ipunode' is not key=value"),
    "pod004": ("ipunode=" + "x" * 64, "has an invalid Kubernetes label value '" + "x" * 64 + "'"),
    "pod005": ("Bad_Prefix/ipunode=true", "has an invalid Kubernetes label key 'Bad_Prefix/ipunode'"),
    "pod006": ("ipunode=-true", "has an invalid Kubernetes label value '-true'"),
}


def test_every_bad_label_is_refused_naming_its_entry(tmp_path):
    controllers = [{"name": "pod001", "host": "10.5.212.116", "label": "graphcore.ai/vipu-ctrl=pod001"}]
    controllers += [{"name": name, "host": "10.5.213.10", "label": label} for name, (label, _) in BAD_LABELS.items()]
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": controllers}))
    for index, (name, (_, expected)) in enumerate(BAD_LABELS.items(), start=1):
        mine = [m for m in messages if f"ipu_k8s_vipu_controllers[{index}] ({name})" in m]
        assert mine and expected in mine[0], (name, messages)
    assert not any("pod001" in m for m in messages), "a good entry was refused"


def test_every_bad_port_is_refused_naming_its_entry(tmp_path):
    ports = [0, 65536, 70000]
    controllers = [{"name": f"pod00{i}", "host": "10.5.212.116", "port": port, "label": "ipunode=true"}
                   for i, port in enumerate(ports)]
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": controllers}))
    for i, port in enumerate(ports):
        assert any(
            f"ipu_k8s_vipu_controllers[{i}] (pod00{i}): port '{port}' is not a TCP port (1-65535)" in m for m in messages
        ), (port, messages)


def test_empty_host_is_refused(tmp_path):
    controllers = [{"name": "pod001", "host": "", "label": "ipunode=true"}]
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": controllers}))
    assert any("ipu_k8s_vipu_controllers[0] (pod001): host is empty" in m for m in messages), messages


def test_missing_vipu_server_facts_are_refused_naming_the_nodes(tmp_path):
    fact = {"host": "10.5.212.116", "port": 8090}
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": []},
                                      host_vars={"w1": {"test_vipu_server": fact}}))
    assert any("IPU node(s) w2 have no vipu_server fact" in m for m in messages), messages


def test_nodes_reporting_different_controllers_are_refused(tmp_path):
    result = _run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": []}, host_vars={
        "w1": {"test_vipu_server": {"host": "10.5.212.116", "port": 8090}},
        "w2": {"test_vipu_server": {"host": "10.5.213.10", "port": 8090}},
    })
    messages = _failure_messages(result)
    assert any("report 2 different V-IPU controllers" in m and "10.5.213.10:8090 (w2)" in m for m in messages), messages


def test_node_naming_an_unknown_controller_is_refused(tmp_path):
    controllers = [{"name": "pod001", "host": "10.5.212.116"}]
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_k8s_vipu_controllers": controllers},
                                      host_vars={"w2": {"ipu_k8s_vipu_controller": "pod009"}}))
    assert any("IPU node w2: ipu_k8s_vipu_controller 'pod009' names no entry" in m for m in messages), messages


def test_chart_version_missing_from_the_crd_table_is_refused(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {
        "ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}],
        "ipu_operator_chart_version": "9.9.9",
    }))
    assert any("ipu_operator_chart_version 9.9.9 is not in ipu_operator_chart_ships_crd" in m for m in messages)


def test_chart_without_crd_and_no_crd_source_is_refused(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {
        "ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}],
        "ipu_operator_chart_version": "1.1.0",
    }))
    assert any("does not ship the IPUJob CRD" in m for m in messages), messages


# --- node label selection --------------------------------------------------------------


def _plan(tmp_path: Path) -> list[dict]:
    return json.loads((tmp_path / "out" / "label_plan.json").read_text())


def test_only_ipu_nodes_are_labelled_never_the_control_plane(tmp_path):
    result = _run(tmp_path, ["select"], {"ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}]})
    _ok(result)
    plan = _plan(tmp_path)
    assert [(p["node"], p["label_key"], p["label_value"]) for p in plan] == [
        ("w1", "ipunode", "true"),
        ("w2", "ipunode", "true"),
    ]
    assert "cp1" not in {p["node"] for p in plan}


def test_each_node_gets_its_own_controllers_label_and_node_name(tmp_path):
    controllers = [
        {"name": "pod001", "host": "10.5.212.116", "label": "vipu-ctrl=pod001"},
        {"name": "pod002", "host": "10.5.213.10", "label": "vipu-ctrl=pod002"},
    ]
    result = _run(tmp_path, ["select"], {"ipu_k8s_vipu_controllers": controllers}, host_vars={
        "w2": {"ipu_k8s_vipu_controller": "pod002", "ipu_k8s_node_name": "poplar-03.cluster.local"},
    })
    _ok(result)
    assert [(p["host"], p["node"], p["controller"], p["label_key"], p["label_value"]) for p in _plan(tmp_path)] == [
        ("w1", "w1", "pod001", "vipu-ctrl", "pod001"),
        ("w2", "poplar-03.cluster.local", "pod002", "vipu-ctrl", "pod002"),
    ]


def test_control_plane_is_labelled_when_it_is_an_ipu_node(tmp_path):
    result = _run(tmp_path, ["select"], {"ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.5.212.116"}]},
                  ipu_nodes=("cp1", "w1"))
    _ok(result)
    assert [p["node"] for p in _plan(tmp_path)] == ["cp1", "w1"]


# --- smoke-test IPUJob -----------------------------------------------------------------

# Listing 8.7 of Graphcore's guide to Kubernetes with RDMA (MACVLAN) on Gcore, verbatim
# apart from comments.
GUIDE_IPUJOB = yaml.safe_load(
    """
apiVersion: graphcore.ai/v1alpha1
kind: IPUJob
metadata:
  name: mnist-training
spec:
  jobInstances: 1
  ipusPerJobInstance: "1"
  workers:
    template:
      metadata:
        annotations:
          k8s.v1.cni.cncf.io/networks: rdma-net
      spec:
        securityContext:
          runAsUser: 0
        containers:
        - name: mnist-training
          image: graphcore/pytorch-tutorials:latest
          workingDir: "/opt/tutorials/simple_applications/pytorch/mnist"
          command: ["bash"]
          args: ["-c", "pip3 install -r requirements.txt && python3 mnist_poptorch.py --epochs=1"]
          securityContext:
            capabilities:
              add: [ "IPC_LOCK" ]
          resources:
            limits:
              rdma/rdma_shared_device_a: 1
            requests:
              rdma/rdma_shared_device_a: 1
        restartPolicy: Never
"""
)


@pytest.fixture(name="ipujob")
def fixture_ipujob(tmp_path):
    _ok(_run(tmp_path, ["smoke_manifest"], {}))
    return json.loads((tmp_path / "out" / "ipujob.json").read_text())


def test_smoke_ipujob_is_the_guides_job(ipujob):
    expected = json.loads(json.dumps(GUIDE_IPUJOB))
    expected["metadata"]["namespace"] = "default"
    expected["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = _role_defaults()["ipu_operator_smoke_image"]
    assert ipujob == expected


def test_smoke_ipujob_asks_for_neither_host_network_nor_privilege(ipujob):
    pod = ipujob["spec"]["workers"]["template"]["spec"]
    assert not pod.get("hostNetwork", False)
    for container in pod["containers"]:
        security = container.get("securityContext", {})
        assert not security.get("privileged", False)
        assert security["capabilities"]["add"] == ["IPC_LOCK"]


def test_smoke_ipujob_worker_template_is_a_valid_pod_template(ipujob):
    minor = ".".join(yaml.safe_load(SHARED_DEFAULTS.read_text())["ipu_k8s_kubernetes_version"].split(".")[:2])
    pod_template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "mnist-training-worker", "namespace": "default"},
        "template": ipujob["spec"]["workers"]["template"],
    }
    kubernetes_validate.validate(pod_template, minor, strict=True)


def test_smoke_ipujob_matches_the_ipujob_crd_schema(ipujob):
    version = _role_defaults()["ipu_operator_chart_version"]
    crd_file = SCHEMAS / f"ipujobs.graphcore.ai-{version}.yaml"
    if not crd_file.exists():
        pytest.skip(f"the IPUJob CRD of chart {version} is not in {SCHEMAS} (see README.md there: "
                    "it could not be obtained, and none is invented)")
    crd = yaml.safe_load(crd_file.read_text())
    assert crd["metadata"]["name"] == "ipujobs.graphcore.ai"
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    group_version = ipujob["apiVersion"].split("/")
    assert crd["spec"]["group"] == group_version[0]
    assert group_version[1] in served, f"CRD does not serve {group_version[1]}: {sorted(served)}"
    schema = served[group_version[1]]["schema"]["openAPIV3Schema"]
    jsonschema.validate(ipujob, schema)
