"""The verify layer's RDMA test pod: the guide's section 6 pod, run as a normal user.

Rendered from roles/verify/templates/rdma-test-pod.yaml.j2 with the variables a play
has (shared defaults, the role's defaults, overrides) and validated against the
Kubernetes schemas (kubernetes-validate) of every supported minor it has schemas for (1.25+).
"""
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED_MINORS = [row["version"] for row in yaml.safe_load((ROOT / "roles/preflight/defaults/main.yml").read_text())[
    "preflight_kubernetes_releases"]]
SCHEMA_MINORS = [m for m in SUPPORTED_MINORS if tuple(map(int, m.split("."))) >= (1, 25)]


@pytest.fixture
def render_pod(render):
    """The pod as the role renders it, with overrides (inventory/extra vars)."""
    return lambda **overrides: render("verify", "rdma-test-pod.yaml.j2", overrides)


@pytest.mark.parametrize("minor", SCHEMA_MINORS)
def test_pod_is_valid_for_every_supported_kubernetes_minor(render_pod, minor):
    kubernetes_validate.validate(render_pod(), minor, strict=True)


def test_pod_asks_for_the_rdma_network_and_resource_by_their_shared_names(render_pod):
    pod = render_pod()
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    assert pod["metadata"]["namespace"] == "default"
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"rdma/rdma_shared_device_a": 1}, "limits": {"rdma/rdma_shared_device_a": 1}}


def test_pod_follows_renamed_network_and_resource(render_pod):
    pod = render_pod(ipu_k8s_rdma_network_name="ipu-fabric", ipu_k8s_rdma_network_namespace="ipu-jobs",
                     ipu_k8s_rdma_resource_prefix="nvidia.com", ipu_k8s_rdma_resource_name="hca_shared")
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "ipu-fabric"
    assert pod["metadata"]["namespace"] == "ipu-jobs"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/hca_shared": 1}


def test_pod_runs_as_a_normal_user_without_host_network_or_privilege(render_pod):
    pod = render_pod()
    spec = pod["spec"]
    assert spec["hostNetwork"] is False
    assert spec["securityContext"]["runAsUser"] == 1000
    assert spec["securityContext"]["runAsNonRoot"] is True
    container = spec["containers"][0]["securityContext"]
    assert container["privileged"] is False
    assert container["allowPrivilegeEscalation"] is False
    # Only IPC_LOCK is added: memory registration, nothing broader.
    assert container["capabilities"] == {"add": ["IPC_LOCK"]}


def test_pod_image_and_user_are_variables(render_pod):
    pod = render_pod(verify_test_pod_image="registry.example.com/tools/rdma:1.2", verify_test_pod_user=4242)
    assert pod["spec"]["containers"][0]["image"] == "registry.example.com/tools/rdma:1.2"
    assert pod["spec"]["securityContext"]["runAsUser"] == 4242
    assert pod["spec"]["securityContext"]["runAsGroup"] == 4242
