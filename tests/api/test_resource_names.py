"""The RDMA resource name rule (plugins/filter/ipu_k8s_checks.py extended_resource_problem)
against the real kube-apiserver: a Pod whose container asks for <prefix>/<name> is created
with dryRun=All (validated in full, stored nowhere). The server accepts exactly the names the
rule accepts, but for names in the kubernetes.io/ namespace: the apiserver takes those as
native resources (pkg/apis/core/validation/validation.go:4945-4958 at v1.20.2), while the
kubelet registers no device plugin under one (pkg/kubelet/cm/devicemanager/manager.go:423,
IsExtendedResourceName), so the rule refuses them; and for names the RDMA shared device
plugin refuses (only letters, digits and "_": tests/network_operator_upstream.py
PLUGIN_RESOURCE_NAME, k8s-rdma-shared-dev-plugin resources_manager.go:303-307), which the
rule refuses too, since the plugin exits on them."""
import importlib.util
import sys
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', ROOT / 'plugins' / 'filter' / 'ipu_k8s_checks.py')
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)
sys.path.insert(0, str(ROOT / 'tests'))
from network_operator_upstream import PLUGIN_RESOURCE_NAME  # noqa: E402

CASES = [('rdma', 'rdma_shared_device_a'), ('nvidia.com', 'Shared.Device-1'), ('r' * 244, 'n' * 63),
         ('rdma', 'shared/device'), ('Rdma', 'device'), ('', 'device'), ('requests.rdma', 'device'), ('r' * 245, 'device'),
         ('rdma', 'n' * 64), ('rdma', '-device'), ('rdma', 'device\n'), ('rdma', ''), ('rdma-', 'device'),
         ('rdma..x', 'device'), ('rdma', 'device_')]


def accepted(api, resource):
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'resource-name-probe', 'namespace': 'default'},
           'spec': {'containers': [{'name': 'probe', 'image': 'registry.k8s.io/pause:3.10',
                                    'resources': {'limits': {resource: '1'}, 'requests': {resource: '1'}}}]}}
    try:
        api.core.create_namespaced_pod('default', pod, dry_run='All')
    except ApiException as err:
        assert err.status == 422, err
        return False
    return True


NATIVE = [('kubernetes.io', 'device'), ('rdma.kubernetes.io', 'device')]


def rule_accepts(prefix, name):
    return checks.extended_resource_problem({'ipu_k8s_rdma_resource_prefix': prefix,
                                             'ipu_k8s_rdma_resource_name': name}) == ''


@pytest.mark.parametrize('prefix,name', CASES)
def test_the_rule_accepts_the_resource_names_the_apiserver_and_the_plugin_accept(api, prefix, name):
    assert rule_accepts(prefix, name) == (accepted(api, '%s/%s' % (prefix, name))
                                          and PLUGIN_RESOURCE_NAME.match(name) is not None)


def test_a_name_the_apiserver_accepts_and_the_plugin_refuses_is_refused(api):
    assert accepted(api, 'nvidia.com/Shared.Device-1') and not PLUGIN_RESOURCE_NAME.match('Shared.Device-1')
    assert not rule_accepts('nvidia.com', 'Shared.Device-1')


@pytest.mark.parametrize('prefix,name', NATIVE)
def test_a_native_name_the_apiserver_takes_is_refused_as_no_device_plugin_can_publish_it(api, prefix, name):
    assert accepted(api, '%s/%s' % (prefix, name))
    assert not rule_accepts(prefix, name)
