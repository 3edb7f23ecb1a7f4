"""What the tests read and write on the test server directly: their assertions, and the
parts of the Network Operator and RDMA device plugin that no controller plays here."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

ROOT = Path(__file__).resolve().parents[2]


class Api:
    def __init__(self, kubeconfig: Path):
        self.kubeconfig = Path(kubeconfig)
        self.client = config.new_client_from_config(config_file=str(kubeconfig))
        self.dynamic = dynamic.DynamicClient(self.client)
        self.core = client.CoreV1Api(self.client)

    def resource(self, api_version: str, kind: str):
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        except dynamic.exceptions.NotFoundError:
            return None

    def names(self, api_version: str, kind: str, namespace: str | None = None) -> list[str]:
        try:
            items = self.resource(api_version, kind).get(namespace=namespace).to_dict()['items']
        except dynamic.exceptions.ResourceNotFoundError:
            return []
        return sorted(('%s/%s' % (i['metadata'].get('namespace', ''), i['metadata']['name'])).lstrip('/')
                      for i in items)

    def apply(self, obj: dict) -> dict:
        resource = self.resource(obj['apiVersion'], obj['kind'])
        namespace = obj['metadata'].get('namespace')
        try:
            return resource.create(body=obj, namespace=namespace).to_dict()
        except dynamic.exceptions.ConflictError:
            return resource.patch(body=obj, name=obj['metadata']['name'], namespace=namespace,
                                  content_type='application/merge-patch+json').to_dict()

    def apply_file(self, path: Path) -> None:
        for obj in yaml.safe_load_all(Path(path).read_text()):
            if obj:
                self.apply(obj)

    def wait_crd(self, name: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            crd = self.get('apiextensions.k8s.io/v1', 'CustomResourceDefinition', name)
            if crd and any(c['type'] == 'Established' and c['status'] == 'True'
                           for c in (crd.get('status') or {}).get('conditions') or []):
                self.dynamic.resources.invalidate_cache()
                return
            time.sleep(0.5)
        raise AssertionError('CRD %s not Established' % name)

    def node_labels(self) -> dict:
        return {n.metadata.name: dict(n.metadata.labels or {}) for n in self.core.list_node().items}

    def patch_node_status(self, node: str, patch: list) -> None:
        """JSON patch of /api/v1/nodes/<node>/status (what a device plugin's kubelet does)."""
        self.client.call_api('/api/v1/nodes/{name}/status', 'PATCH', path_params={'name': node},
                             header_params={'Content-Type': 'application/json-patch+json',
                                            'Accept': 'application/json'},
                             body=patch, auth_settings=['BearerToken'], _preload_content=True)

    def snapshot(self) -> dict:
        """Everything a layer could create, by kind: used to prove check mode creates nothing."""
        snap = {
            'namespaces': self.names('v1', 'Namespace'),
            'crds': self.names('apiextensions.k8s.io/v1', 'CustomResourceDefinition'),
            'secrets': [s for s in self.names('v1', 'Secret') if 'sh.helm.release' in s],
            'deployments': self.names('apps/v1', 'Deployment'),
            'daemonsets': self.names('apps/v1', 'DaemonSet'),
            'pods': self.names('v1', 'Pod'),
            'configmaps': [c for c in self.names('v1', 'ConfigMap') if not c.endswith('kube-root-ca.crt')],
            'node_labels': self.node_labels(),
        }
        for api_version, kind in (('mellanox.com/v1alpha1', 'NicClusterPolicy'),
                                  ('mellanox.com/v1alpha1', 'MacvlanNetwork'),
                                  ('graphcore.ai/v1alpha1', 'IPUJob')):
            snap[kind] = self.names(api_version, kind)
        return snap


def helm(site, *args: str) -> subprocess.CompletedProcess:
    env = site.env()
    return subprocess.run([str(site.helm_binary), *args], env=env, capture_output=True, text=True,
                          check=False, timeout=120)


def releases(site) -> dict:
    """'namespace/name' -> {chart, status, revision} of every Helm release on the server."""
    proc = helm(site, 'list', '--all-namespaces', '--all', '-o', 'json')
    assert proc.returncode == 0, proc.stderr
    return {'%s/%s' % (r['namespace'], r['name']): {'chart': r['chart'], 'status': r['status'],
                                                   'revision': int(r['revision'])}
            for r in json.loads(proc.stdout or '[]')}


# --- the Network Operator's part, played by the test ------------------------------------

def rdma_plugin_daemonset(namespace: str) -> dict:
    """What the operator deploys from the NicClusterPolicy: the RDMA shared device plugin."""
    labels = {'app': 'rdma-shared-dp'}
    return {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet',
        'metadata': {'name': 'rdma-shared-dp-ds', 'namespace': namespace, 'labels': labels},
        'spec': {'selector': {'matchLabels': labels}, 'template': {
            'metadata': {'labels': labels},
            'spec': {'containers': [{'name': 'rdma-shared-dp', 'image': 'registry.invalid/stand-in/rdma-shared-dp:1'}]}}},
    }


def play_network_operator(api: Api, namespace: str, stop) -> None:
    """Answer the NicClusterPolicy the layer applies as the operator does, until `stop` (a
    threading.Event) is set (run in a thread while the layer runs): write the RDMA shared
    device plugin's configuration (spec.rdmaSharedDevicePlugin.config) into the ConfigMap
    rdma-devices whenever it differs, and run the plugin's DaemonSet. Like the operator, it
    never restarts the plugin's pods."""
    while not stop.is_set():
        try:
            policy = api.get('mellanox.com/v1alpha1', 'NicClusterPolicy', 'nic-cluster-policy')
            if policy:
                config = policy['spec']['rdmaSharedDevicePlugin']['config']
                current = api.get('v1', 'ConfigMap', 'rdma-devices', namespace)
                if not current or json.loads(current['data']['config.json']) != json.loads(config):
                    api.apply({'apiVersion': 'v1', 'kind': 'ConfigMap',
                               'metadata': {'name': 'rdma-devices', 'namespace': namespace},
                               'data': {'config.json': config}})
                if not api.get('apps/v1', 'DaemonSet', 'rdma-shared-dp-ds', namespace):
                    api.apply(rdma_plugin_daemonset(namespace))
        except (dynamic.exceptions.ResourceNotFoundError, dynamic.exceptions.DynamicApiError, ApiException):
            api.dynamic.resources.invalidate_cache()
        stop.wait(1)


def network_operator_run(site, api: Api, *args, namespace: str = 'network-operator', run=None, **kwargs):
    """playbooks/network_operator.yml (through site.play, or `run(site, *args, **kwargs)`)
    while the test plays the operator in a thread (play_network_operator)."""
    stop = threading.Event()
    operator = threading.Thread(target=play_network_operator, args=(Api(api.kubeconfig), namespace, stop), daemon=True)
    operator.start()
    try:
        return (run or (lambda s, *a, **k: s.play('network_operator.yml', *a, **k)))(site, *args, **kwargs)
    finally:
        stop.set()
        operator.join(timeout=10)


def report_rows(site) -> list[dict]:
    """The rows (check, status, ...) of verify's newest JSON report in site.report_dir, which
    is removed once read (the next run's report is then the newest)."""
    reports = sorted(site.report_dir.glob('*.json'), key=lambda p: p.stat().st_mtime)
    assert reports, 'verify wrote no JSON report in %s' % site.report_dir

    def rows(node):
        if isinstance(node, list):
            if node and all(isinstance(r, dict) and {'check', 'status'} <= set(r) for r in node):
                return node
            for item in node:
                found = rows(item)
                if found:
                    return found
        if isinstance(node, dict):
            for item in node.values():
                found = rows(item)
                if found:
                    return found
        return []
    found = rows(json.loads(reports[-1].read_text()))
    reports[-1].unlink()
    return found


def play_macvlan_operator(api: Api, name: str, namespace: str, cni_dir: Path) -> None:
    """The operator's answer to a MacvlanNetwork: status ready, the NetworkAttachmentDefinition,
    and (through its Multus and Whereabouts daemonsets) the CNI files on the nodes."""
    api.apply_file(ROOT / 'tests' / 'schemas' / 'multus' / 'network-attachment-definitions.k8s.cni.cncf.io.yaml')
    api.wait_crd('network-attachment-definitions.k8s.cni.cncf.io')
    macvlan = api.get('mellanox.com/v1alpha1', 'MacvlanNetwork', name)
    assert macvlan, 'no MacvlanNetwork %s to answer' % name
    spec = macvlan['spec']
    nad_config = {'cniVersion': '0.3.1', 'name': name, 'type': 'macvlan', 'master': spec['master'],
                  'mode': spec['mode'], 'mtu': spec['mtu'], 'ipam': json.loads(spec['ipam'])}
    api.apply({'apiVersion': 'k8s.cni.cncf.io/v1', 'kind': 'NetworkAttachmentDefinition',
               'metadata': {'name': name, 'namespace': namespace}, 'spec': {'config': json.dumps(nad_config)}})
    api.resource('mellanox.com/v1alpha1', 'MacvlanNetwork').status.patch(
        body={'status': {'state': 'ready'}}, name=name, content_type='application/merge-patch+json')
    (cni_dir / '00-multus.conf').write_text('{"cniVersion": "0.3.1", "name": "multus-cni-network"}\n')
    (cni_dir / 'multus.d').mkdir(exist_ok=True)
    (cni_dir / 'whereabouts.d').mkdir(exist_ok=True)


def advertise_rdma_resource(api: Api, node: str, resource: str, amount: str = '63') -> None:
    """What the RDMA shared device plugin makes the kubelet report."""
    key = resource.replace('/', '~1')
    api.patch_node_status(node, [{'op': 'add', 'path': '/status/capacity/' + key, 'value': amount},
                                 {'op': 'add', 'path': '/status/allocatable/' + key, 'value': amount}])
