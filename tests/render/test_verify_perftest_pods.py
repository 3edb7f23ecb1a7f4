"""The two pods of verify's RDMA bandwidth check (ib_write_bw between two IPU nodes).

Rendered from roles/verify/templates/rdma-perftest-pod.yaml.j2 with the variables a play
has (shared defaults, the role's defaults, overrides) and the pod the task file passes
(name, role, node, command), then validated against the Kubernetes schemas
(kubernetes-validate, strict) of every supported minor it has schemas for (1.25+).
"""
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED_MINORS = [row["version"] for row in yaml.safe_load((ROOT / "roles/preflight/defaults/main.yml").read_text())[
    "preflight_kubernetes_releases"]]
SCHEMA_MINORS = [m for m in SUPPORTED_MINORS if tuple(map(int, m.split("."))) >= (1, 25)]
SERVER = {"name": "ipu-k8s-verify-rdma-bw-server", "role": "server", "node": "ipu-node-1",
          "command": ["ib_write_bw", "-R", "-F", "--report_gbits"]}
CLIENT = {"name": "ipu-k8s-verify-rdma-bw-client", "role": "client", "node": "ipu-node-2",
          "command": ["sleep", "600"]}


@pytest.fixture
def render_pod(render):
    """A pod as the role renders it, with overrides (inventory/extra vars)."""
    return lambda pod, **overrides: render("verify", "rdma-perftest-pod.yaml.j2", dict(overrides, __verify_bw_pod=pod))


@pytest.mark.parametrize("minor", SCHEMA_MINORS)
@pytest.mark.parametrize("pod", [SERVER, CLIENT], ids=["server", "client"])
def test_both_pods_are_valid_for_every_supported_kubernetes_minor(render_pod, pod, minor):
    kubernetes_validate.validate(render_pod(pod), minor, strict=True)


def test_each_pod_is_pinned_to_its_node_and_runs_its_command(render_pod):
    server, client = render_pod(SERVER), render_pod(CLIENT)
    assert server["spec"]["nodeName"] == "ipu-node-1"
    assert client["spec"]["nodeName"] == "ipu-node-2"
    assert server["spec"]["containers"][0]["command"] == ["ib_write_bw", "-R", "-F", "--report_gbits"]
    assert client["spec"]["containers"][0]["command"] == ["sleep", "600"]


def test_pods_take_the_rdma_network_and_resource_by_their_shared_names(render_pod):
    pod = render_pod(SERVER)
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    assert pod["metadata"]["namespace"] == "default"
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"rdma/rdma_shared_device_a": 1}, "limits": {"rdma/rdma_shared_device_a": 1}}
    renamed = render_pod(SERVER, ipu_k8s_rdma_network_name="ipu-fabric", ipu_k8s_rdma_network_namespace="ipu-jobs",
                         ipu_k8s_rdma_resource_prefix="nvidia.com", ipu_k8s_rdma_resource_name="hca_shared")
    assert renamed["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "ipu-fabric"
    assert renamed["metadata"]["namespace"] == "ipu-jobs"
    assert renamed["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/hca_shared": 1}


def test_pods_run_as_a_normal_user_without_host_network_privilege_or_any_capability(render_pod):
    spec = render_pod(CLIENT)["spec"]
    assert spec["hostNetwork"] is False
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
    container = spec["containers"][0]["securityContext"]
    assert container["privileged"] is False
    assert container["allowPrivilegeEscalation"] is False
    # Not even IPC_LOCK: the unlimited memlock containerd gives every container is what
    # lets ib_write_bw register its buffers.
    assert container["capabilities"] == {"drop": ["ALL"]}


def test_the_default_image_is_a_public_perftest_image_and_a_setting(render_pod):
    assert render_pod(SERVER)["spec"]["containers"][0]["image"] == (
        "docker.io/oguzpastirmaci/mofed-perftest:5.4-3.6.8.1-ubuntu20.04-amd64")
    pod = render_pod(SERVER, verify_rdma_perftest_image="registry.example.com/rdma/perftest:24.10", verify_test_pod_user=4242)
    assert pod["spec"]["containers"][0]["image"] == "registry.example.com/rdma/perftest:24.10"
    assert pod["spec"]["securityContext"]["runAsUser"] == 4242
