"""The pods of verify's cluster checks: the RDMA test pod (the guide's section 6 pod) and
the two pods of the RDMA bandwidth check (ib_write_bw between two IPU nodes), run as a
normal user.

Each check's pods rendered from roles/verify/templates/verify-pod.yaml.j2 as the role
starts them (one per entry of the check's pod list), with the variables a play has (shared
defaults, the role's defaults, overrides), and validated against the Kubernetes schemas
(kubernetes-validate, strict) of every supported minor it has schemas for (1.25+).
"""
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from ipu_k8s_render import role_expression

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED_MINORS = list(yaml.safe_load((ROOT / "roles/ipu_k8s/defaults/main/versions.yml").read_text())[
    "ipu_k8s_versions"]["kubernetes"])
SCHEMA_MINORS = [m for m in SUPPORTED_MINORS if tuple(map(int, m.split("."))) >= (1, 25)]
# The bandwidth pods' nodes, pinned as an inventory pins them (no host is looked up).
NODES = {"verify_rdma_perftest_nodes": ["ipu-node-1", "ipu-node-2"], "hostvars": {}}


@pytest.fixture
def render_pods(render):
    """The pods of a check ('test' or 'perftest') as the role renders them, with overrides."""
    def pods(check, **overrides):
        overrides = dict(NODES, **overrides)
        specs = role_expression("verify", "{{ __verify_%s_pods }}" % check, overrides)
        return [render("verify", "verify-pod.yaml.j2", dict(overrides, __verify_pod=spec)) for spec in specs]
    return pods


@pytest.mark.parametrize("minor", SCHEMA_MINORS)
@pytest.mark.parametrize("check", ["test", "perftest"])
def test_every_pod_is_valid_for_every_supported_kubernetes_minor(render_pods, check, minor):
    for pod in render_pods(check):
        kubernetes_validate.validate(pod, minor, strict=True)


@pytest.mark.parametrize("check", ["test", "perftest"])
def test_pods_ask_for_the_rdma_network_and_resource_by_their_shared_names(render_pods, check):
    for pod in render_pods(check):
        assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
        assert pod["metadata"]["namespace"] == "default"
        resources = pod["spec"]["containers"][0]["resources"]
        assert resources == {"requests": {"rdma/rdma_shared_device_a": 1}, "limits": {"rdma/rdma_shared_device_a": 1}}


@pytest.mark.parametrize("check", ["test", "perftest"])
def test_pods_follow_renamed_network_and_resource(render_pods, check):
    for pod in render_pods(check, ipu_k8s_rdma_network_name="ipu-fabric", ipu_k8s_rdma_network_namespace="ipu-jobs",
                           ipu_k8s_rdma_resource_prefix="nvidia.com", ipu_k8s_rdma_resource_name="hca_shared"):
        assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "ipu-fabric"
        assert pod["metadata"]["namespace"] == "ipu-jobs"
        assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/hca_shared": 1}


def test_the_test_pod_runs_as_a_normal_user_without_host_network_or_privilege(render_pods):
    [pod] = render_pods("test")
    spec = pod["spec"]
    assert pod["metadata"]["name"] == "ipu-k8s-verify-rdma"
    assert spec["hostNetwork"] is False
    assert "nodeName" not in spec
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
    container = spec["containers"][0]["securityContext"]
    assert container["privileged"] is False
    assert container["allowPrivilegeEscalation"] is False
    # Only IPC_LOCK is added: memory registration, nothing broader.
    assert container["capabilities"] == {"add": ["IPC_LOCK"]}


def test_the_test_pod_image_and_user_are_variables(render_pods):
    [pod] = render_pods("test", verify_test_pod_image="registry.example.com/tools/rdma:1.2", verify_test_pod_user=4242)
    assert pod["spec"]["containers"][0]["image"] == "registry.example.com/tools/rdma:1.2"
    assert pod["spec"]["securityContext"]["runAsUser"] == 4242
    assert pod["spec"]["securityContext"]["runAsGroup"] == 4242


def test_each_bandwidth_pod_is_pinned_to_its_node_and_runs_its_command(render_pods):
    server, client = render_pods("perftest", verify_rdma_perftest_timeout=300)
    assert server["metadata"]["name"] == "ipu-k8s-verify-rdma-bw-server"
    assert client["metadata"]["name"] == "ipu-k8s-verify-rdma-bw-client"
    assert server["spec"]["nodeName"] == "ipu-node-1"
    assert client["spec"]["nodeName"] == "ipu-node-2"
    assert server["spec"]["containers"][0]["command"] == ["ib_write_bw", "-R", "-F", "--report_gbits"]
    # The client waits twice the test's timeout while verify runs the client side in it.
    assert client["spec"]["containers"][0]["command"] == ["sleep", "600"]


def test_bandwidth_pods_run_as_a_normal_user_without_host_network_privilege_or_any_capability(render_pods):
    for pod in render_pods("perftest"):
        spec = pod["spec"]
        assert spec["hostNetwork"] is False
        assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
        container = spec["containers"][0]["securityContext"]
        assert container["privileged"] is False
        assert container["allowPrivilegeEscalation"] is False
        # Not even IPC_LOCK: the unlimited memlock containerd gives every container is what
        # lets ib_write_bw register its buffers.
        assert container["capabilities"] == {"drop": ["ALL"]}


def test_the_default_bandwidth_image_is_a_public_perftest_image_and_a_setting(render_pods):
    assert {pod["spec"]["containers"][0]["image"] for pod in render_pods("perftest")} == {
        "docker.io/oguzpastirmaci/mofed-perftest:5.4-3.6.8.1-ubuntu20.04-amd64"}
    pods = render_pods("perftest", verify_rdma_perftest_image="registry.example.com/rdma/perftest:24.10",
                       verify_test_pod_user=4242)
    assert {pod["spec"]["containers"][0]["image"] for pod in pods} == {"registry.example.com/rdma/perftest:24.10"}
    assert {pod["spec"]["securityContext"]["runAsUser"] for pod in pods} == {4242}
