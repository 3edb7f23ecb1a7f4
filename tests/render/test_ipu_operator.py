"""Render tests for the ipu_operator role.

Everything here goes through the role's real tasks, vars, defaults and templates, run through
ansible-runner against localhost (connection local) with a throwaway inventory shaped
like a real site: control_plane=[cp1], workers=[w1, w2], ipu_nodes=[w1, w2]. The
vipu_server facts the rdma_network layer would set are set with set_fact (cacheable), the
way a module's ansible_facts land. Nothing contacts a cluster: only the entry points that
compute or render (validate, select, values, smoke_manifest) are run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from ipu_k8s_render import load_role_yaml, render_role_yaml, role_expression, validate_custom_resource

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "ipu_operator"
SCHEMAS = REPO / "tests" / "schemas" / "ipu_operator"
SHARED_DEFAULTS = REPO / "roles" / "ipu_k8s" / "defaults" / "main" / "main.yml"
sys.path.insert(0, str(REPO / "tests"))
from playbook_runner import PlaybookRun, run_playbook  # noqa: E402


def _role_defaults() -> dict:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def _versions() -> dict:
    return yaml.safe_load((REPO / "roles" / "ipu_k8s" / "defaults" / "main" / "versions.yml").read_text())["ipu_k8s_versions"]


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
         ipu_nodes=("w1", "w2"), check_mode: bool = False) -> PlaybookRun:
    """Run the role's entry points on cp1 after setting each node's vipu_server fact.

    host_vars may give a host `test_vipu_server`: it becomes that host's vipu_server fact.
    With extra var test_plan_wanted, the play runs the filter tasks/plan.yml runs and saves
    its result (plan.json); it also saves the smoke IPUJob (when rendered) as JSON.
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
                    "name": "Work out the operator's part of the site model from the nodes' facts (as tasks/plan.yml)",
                    "ansible.builtin.set_fact": {
                        "test_plan": "{{ (hostvars | ipu_k8s_site_model(groups['ipu_nodes'] | default([]))).operator }}"},
                    "when": "test_plan_wanted | default(false)",
                },
                {
                    "name": "Save the plan",
                    "ansible.builtin.copy": {
                        "content": "{{ test_plan | to_json }}",
                        "dest": str(out / "plan.json"),
                        "mode": "0644",
                    },
                    "when": "test_plan is defined",
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
    env = {"ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
    return run_playbook(playbook, _inventory(tmp_path, host_vars, ipu_nodes), tmp_path / "runner", envvars=env,
                        cmdline=["-e", f"@{vars_file}"] + (["--check", "--diff"] if check_mode else []), timeout=180)


def _ok(result: PlaybookRun) -> None:
    assert result.rc == 0, f"ansible-playbook failed:\n{result.stdout[-6000:]}"


def _failure_messages(result: PlaybookRun) -> list[str]:
    """The msg of every failed task (its runner_on_failed event)."""
    assert result.rc != 0, "the run was expected to fail but passed"
    messages = []
    for event in result.events:
        if event["event"] == "runner_on_failed":
            msg = (event["event_data"].get("res") or {}).get("msg", "")
            messages.extend(msg if isinstance(msg, list) else [msg])
    assert messages, f"no failed task found in:\n{result.stdout[-4000:]}"
    return messages


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
    """The keys chart `version` has: its values.yaml leaves and the paths its templates read."""
    table = yaml.safe_load((SCHEMAS / "chart-values-keys.yaml").read_text())["versions"]
    assert version in table, f"chart {version} has no key set in {SCHEMAS / 'chart-values-keys.yaml'}"
    return set(table[version]["values_keys"]) | set(table[version]["template_keys"])


# The role's own record in the release values (see templates/ipu_operator_values.yaml.j2),
# read by no chart template.
ROLE_RECORD_KEYS = {"ipuK8sImageRewrites"}


def _assert_keys_in_chart(values: dict) -> None:
    for version in _versions()["ipu_operator"]:
        unknown = _flat_keys(values) - _chart_keys(version) - ROLE_RECORD_KEYS
        assert not unknown, f"values set keys chart {version} does not have: {sorted(unknown)}"


def _fact(host, name=None, label="ipunode=true", port=8090, source="inventory"):
    """A vipu_server fact as the module returns it (host already resolved on the node)."""
    return {"host": host, "port": port, "address": f"{host}:{port}", "version": None, "source": source,
            "name": name or f"{host}:{port}", "label": label}


def _plan(tmp_path: Path, facts: dict, host_vars: dict | None = None, ipu_nodes=("w1", "w2")) -> dict:
    """What tasks/plan.yml's filter makes of the nodes' vipu_server facts, through a real play."""
    host_vars = dict((h, dict(v)) for h, v in (host_vars or {}).items())
    for host, fact in facts.items():
        host_vars.setdefault(host, {})["test_vipu_server"] = fact
    _ok(_run(tmp_path, [], {"test_plan_wanted": True}, host_vars=host_vars, ipu_nodes=ipu_nodes))
    return json.loads((tmp_path / "out" / "plan.json").read_text())


def _values(plan: dict, **overrides) -> dict:
    """The values template rendered directly, as tasks/chart.yml renders it."""
    variables = {"ipu_k8s_site": {"operator": plan}, "ansible_managed": "managed by ipu-k8s"}
    variables.update(overrides)
    return render_role_yaml("ipu_operator", "ipu_operator_values.yaml.j2", variables)


# --- global.vipuControllers and the node labels, from the nodes' facts ---------------------


def test_one_shared_controller_gives_one_entry_and_labels_every_ipu_node(tmp_path):
    plan = _plan(tmp_path, {"w1": _fact("10.5.212.116"), "w2": _fact("10.5.212.116")})
    assert plan["value"] == "10.5.212.116:8090:ipunode=true"
    assert [(n["node"], n["label_key"], n["label_value"]) for n in plan["nodes"]] == [
        ("w1", "ipunode", "true"), ("w2", "ipunode", "true")]


def test_each_node_gets_its_own_controllers_label_and_node_name(tmp_path):
    plan = _plan(tmp_path, {
        "w1": _fact("10.5.212.116", "pod001", "vipu-ctrl=pod001"),
        "w2": _fact("10.5.213.10", "pod002", "graphcore.ai/vipu-ctrl=pod002", port=8091),
    }, host_vars={"w2": {"ipu_k8s_node_name": "poplar-03.cluster.local"}})
    assert plan["value"] == "10.5.212.116:8090:vipu-ctrl=pod001,10.5.213.10:8091:graphcore.ai/vipu-ctrl=pod002"
    assert [(p["host"], p["node"], p["controller"], p["label_key"], p["label_value"]) for p in plan["nodes"]] == [
        ("w1", "w1", "pod001", "vipu-ctrl", "pod001"),
        ("w2", "poplar-03.cluster.local", "pod002", "graphcore.ai/vipu-ctrl", "pod002"),
    ]


def test_control_plane_is_labelled_only_when_it_is_an_ipu_node(tmp_path):
    plan = _plan(tmp_path, {"cp1": _fact("10.5.212.116"), "w1": _fact("10.5.212.116")}, ipu_nodes=("cp1", "w1"))
    assert [p["node"] for p in plan["nodes"]] == ["cp1", "w1"]


def test_missing_vipu_server_facts_are_refused_naming_the_nodes(tmp_path):
    result = _run(tmp_path, [], {"test_plan_wanted": True}, host_vars={"w1": {"test_vipu_server": _fact("10.5.212.116")}})
    assert any("IPU node(s) w2 have no vipu_server fact" in m for m in _failure_messages(result))


def test_nodes_reporting_different_controllers_under_one_label_are_refused(tmp_path):
    result = _run(tmp_path, [], {"test_plan_wanted": True}, host_vars={
        "w1": {"test_vipu_server": _fact("10.5.212.116")},
        "w2": {"test_vipu_server": _fact("10.5.213.10")},
    })
    assert any("one label stands for different V-IPU controllers" in m and "(w2)" in m
               for m in _failure_messages(result))


# --- chart values ----------------------------------------------------------------------


PLAN_ONE = {"value": "10.5.212.116:8090:ipunode=true", "controllers": [], "nodes": []}
REWRITE = "gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0=registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0"


def test_values_carry_the_controllers_the_host_network_off_and_the_image_rewrite():
    values = _values(PLAN_ONE)
    assert values == {"global": {"vipuControllers": "10.5.212.116:8090:ipunode=true"},
                      "worker": {"hostNetwork": False}, "ipuK8sImageRewrites": [REWRITE]}
    _assert_keys_in_chart(values)


def test_values_without_a_rewrite_when_the_image_is_left_to_the_chart():
    values = _values(PLAN_ONE, ipu_operator_kube_rbac_proxy_image="")
    assert "ipuK8sImageRewrites" not in values


def test_extra_values_are_merged_under_the_roles_values():
    extra = {"global": {"imagePullSecrets": [{"name": "regcred"}], "launcherImage": "registry.local/ipu-operator-launcher"}}
    values = _values(PLAN_ONE, ipu_operator_extra_values=extra)
    assert values["global"] == {
        "imagePullSecrets": [{"name": "regcred"}],
        "launcherImage": "registry.local/ipu-operator-launcher",
        "vipuControllers": "10.5.212.116:8090:ipunode=true",
    }
    assert values["worker"] == {"hostNetwork": False}
    _assert_keys_in_chart(values)


# --- the chart table against the facts -----------------------------------------------------


def test_chart_table_pins_the_real_archives_and_their_hardcoded_image():
    facts = yaml.safe_load((SCHEMAS / "chart-values-keys.yaml").read_text())["versions"]
    table = _versions()["ipu_operator"]
    assert set(table) == set(facts)
    for version, row in table.items():
        source = facts[version]["source"]
        assert row["sha256"] == {source["archive"].rsplit("/", 1)[1]: source["archive_sha256"]}, version
        assert row["archive"] == source["archive"], version
        image = row["images"]["kube_rbac_proxy"]
        assert [i["image"] for i in facts[version]["hardcoded_images"]] == [
            "%s/%s:%s" % (image["repository"], image["image"], image["version"])], version
    assert table["1.2.0"]["ships_crd"] is True and table["1.1.0"]["ships_crd"] is False


# --- validation refusals (the validate entry point, facts-free) ---------------------------


def test_extra_values_cannot_turn_the_host_network_on(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_operator_extra_values": {"worker": {"hostNetwork": True}}}))
    assert any("ipu_operator_extra_values sets worker.hostNetwork" in m for m in messages), messages


def test_chart_version_missing_from_the_chart_table_is_refused(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_operator_chart_version": "9.9.9"}))
    assert any('ipu_operator_chart_version is "9.9.9", which has no row in ipu_k8s_versions.ipu_operator (1.1.0, 1.2.0)' in m
               for m in messages), messages


def test_chart_without_crd_and_no_crd_source_is_refused(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {"ipu_operator_chart_version": "1.1.0"}))
    assert any("does not ship the IPUJob CRD" in m for m in messages), messages


def test_crd_without_checksum_is_refused(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {
        "ipu_operator_chart_version": "1.1.0", "ipu_operator_crd_url": "https://example.invalid/crd.yaml"}))
    assert any("ipu_operator_crd_checksum" in m and "64 lowercase hex digits" in m for m in messages), messages


def test_crd_checksum_with_a_prefix_is_refused_with_the_fix(tmp_path):
    messages = _failure_messages(_run(tmp_path, ["validate"], {
        "ipu_operator_chart_version": "1.1.0", "ipu_operator_crd_url": "https://example.invalid/crd.yaml",
        "ipu_operator_crd_checksum": "sha256:" + "a" * 64}))
    assert any('"sha256:%s"' % ("a" * 64) in m and 'without a "sha256:" prefix' in m for m in messages), messages


def test_good_settings_pass_validation(tmp_path):
    _ok(_run(tmp_path, ["validate"], {
        "ipu_operator_chart_version": "1.1.0", "ipu_operator_crd_url": "https://example.invalid/crd.yaml",
        "ipu_operator_crd_checksum": "a" * 64}))


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
    """Strictly, as an API server with strict field validation: a misspelt field fails."""
    crd_file = SCHEMAS / "ipujobs.graphcore.ai-1.2.0.yaml"
    assert yaml.safe_load(crd_file.read_text())["metadata"]["name"] == "ipujobs.graphcore.ai"
    validate_custom_resource(ipujob, crd_file)


def test_ipujob_crd_schema_refuses_a_misspelt_field(ipujob):
    wrong = json.loads(json.dumps(ipujob))
    wrong["spec"]["ipusPerJobInstances"] = wrong["spec"].pop("ipusPerJobInstance")
    with pytest.raises(AssertionError, match="ipusPerJobInstance"):
        validate_custom_resource(wrong, SCHEMAS / "ipujobs.graphcore.ai-1.2.0.yaml")


def test_stored_key_lists_are_the_real_charts():
    """Spot checks of facts read in the archives (see chart-values-keys.yaml)."""
    table = yaml.safe_load((SCHEMAS / "chart-values-keys.yaml").read_text())["versions"]
    for version in ("1.1.0", "1.2.0"):
        entry = table[version]
        assert entry["source"]["repo"] == "graphcore/helm-charts" and entry["source"]["commit"]
        assert "fullnameOverride" in entry["values_keys"] and "fullNameOverride" not in entry["values_keys"]
        assert "verified" not in entry
    assert not [k for k in _chart_keys("1.2.0") if k.startswith("admissionWebhooks.patch")]
    assert "admissionWebhooks.patch.image.repository" in _chart_keys("1.1.0")


# --- webhook certificate renewal -------------------------------------------------------------


def test_the_webhook_secret_is_the_charts_fullname_admission():
    read = next(t["kubernetes.core.k8s_info"] for t in load_role_yaml("ipu_operator", "tasks/webhook_cert.yml")
                if "kubernetes.core.k8s_info" in t)
    assert role_expression("ipu_operator", read["name"], {}) == "ipu-operator-admission"
    assert role_expression("ipu_operator", read["name"],
                           {"ipu_k8s_ipu_operator_release": "graphcore"}) == "graphcore-ipu-operator-admission"
