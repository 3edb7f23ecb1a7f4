"""A test site for the API tier: the real playbooks, run through ansible-runner against the
test cluster (api_cluster.py), with every path they write pointed into a temp directory.

Inventory: control_plane=[cp1] (connection local; its kubeconfig is the test server's),
workers=ipu_nodes=[poplar-01, poplar-02]. Each host has a hollow node of the same name.
The IPU nodes run their modules inside a network namespace of their own (their
ansible_python_interpreter is a wrapper that runs the venv's python under
`ip netns exec`), where an RDMA interface and the V-IPU controller's subnet exist, so
the real rdma_network_facts module derives their facts from real routes,
as on a Poplar server. The control plane runs in the host's namespace and reaches the
API on 127.0.0.1.

Stand-ins made by the tests (and only these): the two Helm charts (a Deployment each,
the Network Operator's also Node Feature Discovery's master and workers; carrying the real
CRDs stored in tests/schemas), and the helm tarball (the npm package's
helm binary in the layout of a release tarball, with its sha256).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from playbook_runner import HostView, run_playbook, task_name  # noqa: E402  (tests/playbook_runner.py)
from testlib import client_lock_lines  # noqa: E402  (tests/testlib.py)

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / 'tests' / 'schemas'
PYTHON = sys.executable
# The system python of the control plane (creates the client virtualenv).
BASE_PYTHON = '/usr/bin/python3'
SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

CONTROL_PLANE = 'cp1'
IPU_NODES = ['poplar-01', 'poplar-02']
NODES = [CONTROL_PLANE, *IPU_NODES]
# The V-IPU controller and the RDMA network inside each IPU node's namespace.
VIPU_ADDRESS = '10.247.208.5'
RDMA_INTERFACE = 'rdma0'
NODE_RDMA_ADDRESSES = {'poplar-01': '10.247.208.21/23', 'poplar-02': '10.247.208.22/23',
                       # a node added on Day 2 (tests/api/test_scale.py)
                       'poplar-03': '10.247.208.23/23'}
VIPU_LABEL = 'vipu-ctrl=pod001'



def operator_crd(release: str, name: str) -> Path:
    """The stored CRD file of a Network Operator release (tests/schemas/network_operator)."""
    crds = yaml.safe_load((SCHEMAS / 'network_operator' / 'releases.yaml').read_text())['releases'][release]['crds']
    return SCHEMAS / 'network_operator' / crds[name]['file']


def nv_ipam_operator_state(site, api, namespace: str) -> None:
    """What the Network Operator leaves before the RDMA network layer runs on an NVIDIA IPAM
    row: its namespace, the MacvlanNetwork CRD (of chart 25.4.0, as the rest of the tier), the
    IPPool CRD of release 26.4.1, and the CNI files of its Multus and NVIDIA IPAM daemonsets."""
    api.apply({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': namespace}})
    api.apply_file(operator_crd('25.4.0', 'macvlannetworks'))
    api.apply_file(operator_crd('26.4.1', 'ippools'))
    api.wait_crd('macvlannetworks.mellanox.com')
    api.wait_crd('ippools.nv-ipam.nvidia.com')
    (site.cni_dir / '00-multus.conf').write_text('{"cniVersion": "0.3.1", "name": "multus-cni-network"}\n')
    for directory in ('multus.d', 'nv-ipam.d'):
        (site.cni_dir / directory).mkdir(exist_ok=True)

class PlaybookRun(HostView):
    """The outcome of one playbook run, read from ansible-runner's events
    (tests/playbook_runner.py); .data lays them out as the ansible.posix.json callback did."""

    def __init__(self, argv, run):
        super().__init__(run)
        self.argv = argv

    def changed_tasks(self) -> list[str]:
        """'host: task' for every task result that reported a change."""
        return ['%s: %s' % (e['event_data']['host'], task_name(e['event_data'])) for e in self.run.host_events()
                if (e['event_data'].get('res') or {}).get('changed')]

    def failures(self) -> list[str]:
        """'host: task: msg' of every failed or unreachable result (the event's msg)."""
        return ['%s: %s: %s' % (e['event_data']['host'], task_name(e['event_data']),
                                (e['event_data'].get('res') or {}).get('msg', ''))
                for e in self.run.host_events() if e['event'] in ('runner_on_failed', 'runner_on_unreachable')]

    def failed_hosts(self) -> list[str]:
        return [h for h, s in self.stats.items() if s.get('failures') or s.get('unreachable')]

    def results(self, task: str) -> dict:
        """host -> result of the task named `task` (role prefix optional)."""
        found = {}
        for play in self.run.plays():
            for entry in play['tasks']:
                name = entry['task']['name']
                if name == task or name.endswith(' : ' + task):
                    found.update(entry['hosts'])
        return found

    def explain(self) -> str:
        return 'rc=%s %s\nfailures: %s\nchanged: %s\noutput:\n%s' % (
            self.rc, ' '.join(self.argv[-4:]), self.failures(), self.changed_tasks(), self.stdout[-2000:])

    def assert_ok(self) -> 'PlaybookRun':
        assert self.rc == 0 and not self.failed_hosts(), self.explain()
        return self

    def assert_unchanged(self) -> 'PlaybookRun':
        self.assert_ok()
        assert sum(s.get('changed', 0) for s in self.stats.values()) == 0, \
            'second run reported changes: %s' % self.changed_tasks()
        return self


def _chart(directory: Path, name: str, version: str, crds: list[Path], templates: dict) -> Path:
    """helm package of a small chart: Chart.yaml, crds/ (copied files), templates/."""
    src = directory / 'src' / name
    if src.exists():
        shutil.rmtree(src)
    (src / 'templates').mkdir(parents=True)
    (src / 'Chart.yaml').write_text(yaml.safe_dump({
        'apiVersion': 'v2', 'name': name, 'version': version, 'appVersion': version,
        'description': 'Stand-in made by tests/api for the upstream chart (which cannot be downloaded '
                       'here); only its CRDs are real.'}))
    (src / 'values.yaml').write_text('{}\n')
    if crds:
        (src / 'crds').mkdir()
        for crd in crds:
            shutil.copy(crd, src / 'crds' / crd.name)
    for filename, text in templates.items():
        (src / 'templates' / filename).write_text(text)
    archive = directory / ('%s-%s.tgz' % (name, version))
    with tarfile.open(archive, 'w:gz') as tar:
        tar.add(src, arcname=name)
    return archive


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: %(name)s
  labels: {app.kubernetes.io/name: %(name)s, revision-marker: "%(marker)s"}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: %(name)s}
  template:
    metadata:
      labels: {app.kubernetes.io/name: %(name)s}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: manager
          image: registry.invalid/stand-in/%(name)s:%(marker)s
          readinessProbe:
            httpGet: {path: /readyz, port: 8081}
%(extra)s"""


# The Node Feature Discovery subchart's workloads, named and labelled as its templates at
# chart 25.4.0 (deployment/network-operator/charts/node-feature-discovery/templates/
# master.yaml and worker.yaml: fullname <release>-node-feature-discovery, selector labels
# app.kubernetes.io/name and /instance plus role). Their real probes are grpc, which
# Kubernetes 1.20 does not know: httpGet here.
NFD = """apiVersion: apps/v1
kind: %(kind)s
metadata:
  name: '{{ .Release.Name }}-node-feature-discovery-%(role)s'
  labels: {app.kubernetes.io/name: node-feature-discovery, app.kubernetes.io/instance: '{{ .Release.Name }}', role: %(role)s}
spec:
%(replicas)s  selector:
    matchLabels: {app.kubernetes.io/name: node-feature-discovery, app.kubernetes.io/instance: '{{ .Release.Name }}', role: %(role)s}
  template:
    metadata:
      labels: {app.kubernetes.io/name: node-feature-discovery, app.kubernetes.io/instance: '{{ .Release.Name }}', role: %(role)s}
    spec:
%(node_selector)s      containers:
        - name: %(role)s
          image: registry.invalid/stand-in/node-feature-discovery:v0.17.0
          readinessProbe:
            httpGet: {path: /healthz, port: 8082}
"""


# The real IPU Operator chart's second container (the image its role rewrites).
# The admission webhook certificate's Secret as chart 1.2.0 makes it (graphcore/helm-charts
# tag 1.2.0, charts/ipu-operator-helm-chart-1.2.0.tgz, ipu-operator/templates/admission.yaml):
# a CA from genCA and a serving certificate from genSignedCert, both for 365 days, made anew
# at every render, base64 under the keys ca, cert and key of the Opaque Secret
# <fullname>-admission (the release name here, which holds the chart name). The chart's
# webhook configurations (failurePolicy Fail) are left out: nothing serves them here.
ADMISSION_SECRET = """{{- $ca := genCA "ipu-operator-controller-manager-ca" 365 -}}
{{- $cert := genSignedCert "ipu-operator" nil (list "ipu-operator-webhook-svc") 365 $ca -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-admission
data:
  ca: '{{ $ca.Cert | b64enc }}'
  cert: '{{ $cert.Cert | b64enc }}'
  key: '{{ $cert.Key | b64enc }}'
type: Opaque
"""

KUBE_RBAC_PROXY = """        - name: kube-rbac-proxy
          image: gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0
"""


class Site:
    """Temp directories, inventory, charts, helm tarball and network namespaces of one site."""

    def __init__(self, cluster, workdir: Path, helm_binary: Path, netns_factory, wheel_dir: Path,
                 system_python: Path, client_venv: Path | None = None):
        self.cluster = cluster
        self.wheel_dir = Path(wheel_dir)
        # The control plane's "system" python: a virtualenv holding the Kubernetes client
        # 12.0.1, as Ubuntu 22.04's python3-kubernetes gives /usr/bin/python3.
        self.system_python = Path(system_python)
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.home = self.dir / 'home'
        self.helm_install_dir = self.dir / 'helm-bin'
        self.cni_dir = self.dir / 'cni'
        self.report_dir = self.dir / 'reports'
        for d in (self.home, self.helm_install_dir, self.cni_dir, self.report_dir):
            d.mkdir(exist_ok=True)
        self.helm_binary = Path(helm_binary)
        self.helm_version = subprocess.run([str(helm_binary), 'version', '--short'], capture_output=True,
                                           text=True, check=True, env=self._helm_env()).stdout.strip()
        self.helm_tarball, self.helm_sha256 = self._helm_tarball()
        self.netns_factory = netns_factory
        self.interpreters = {node: self._netns_python(netns_factory, node) for node in IPU_NODES}
        self.network_operator_chart = self.make_network_operator_chart('25.4.0', '1')
        self.ipu_operator_chart = self.make_ipu_operator_chart()
        # The Kubernetes client virtualenv of the API tasks: the site's own, or one the test
        # session's sites share (conftest.py, client_venv).
        self.client_venv = Path(client_venv) if client_venv else self.dir / 'kubernetes-client'
        self.extra_vars: dict = {}

    # -- what the site is made of ----------------------------------------------------------
    def _helm_env(self) -> dict:
        return {'PATH': SYSTEM_PATH, 'HOME': str(self.home), 'HELM_CACHE_HOME': str(self.home / 'helm-cache'),
                'HELM_CONFIG_HOME': str(self.home / 'helm-config'), 'HELM_DATA_HOME': str(self.home / 'helm-data')}

    def _helm_tarball(self) -> tuple[Path, str]:
        """The helm binary (60 MB) in a release tarball's layout, made once per test session
        beside the sites' directories (the sites of one session share it; gzip level 1:
        level 9 took 5.7 s of CPU for each site)."""
        version = self.helm_version.lstrip('v').split('+')[0]
        tarball = self.dir.parent / ('helm-v%s-linux-amd64.tar.gz' % version)
        if not tarball.exists():
            partial = tarball.with_name(tarball.name + '.partial')
            with tarfile.open(partial, 'w:gz', compresslevel=1) as tar:
                tar.add(self.helm_binary, arcname='linux-amd64/helm')
            partial.rename(tarball)
        return tarball, hashlib.sha256(tarball.read_bytes()).hexdigest()

    def _netns_python(self, netns_factory, node: str) -> Path:
        """A namespace for the IPU node (RDMA interface to the V-IPU subnet) and a python
        wrapper that runs modules inside it."""
        from netns_lab import veth  # tests/integration, on sys.path via conftest
        node_ns = netns_factory(node[-2:] + 'node')
        fabric = netns_factory(node[-2:] + 'fabric')
        mine, theirs = veth(RDMA_INTERFACE, 'fab0', fabric, 9000, NODE_RDMA_ADDRESSES[node],
                            peer_addresses=['%s/23' % VIPU_ADDRESS])
        node_ns.ip(*mine)
        fabric.ip(*theirs)
        node_ns.isolate_name_lookups({})
        wrapper = self.dir / ('python-%s' % node)
        wrapper.write_text('#!/bin/sh\nexec %s netns exec %s %s "$@"\n' % (shutil.which('ip'), node_ns.name, PYTHON))
        wrapper.chmod(0o755)
        return wrapper

    def make_network_operator_chart(self, version: str, marker: str, nfd_master_node_selector: str = '') -> Path:
        """The stand-in chart, carrying the real CRDs that chart 25.4.0 (the row the role
        picks for the default Kubernetes version) ships in its crds/ directory, the operator
        and Node Feature Discovery's master and workers. nfd_master_node_selector: a node
        label (key: value) the NFD master must run on (none has it: a master that cannot start)."""
        release = yaml.safe_load((SCHEMAS / 'network_operator' / 'releases.yaml').read_text())['releases']['25.4.0']
        crds = [SCHEMAS / 'network_operator' / crd['file'] for crd in release['crds'].values()
                if crd['path'].startswith('deployment/network-operator/crds/')]
        selector = '      nodeSelector: {%s}\n' % nfd_master_node_selector if nfd_master_node_selector else ''
        return _chart(self.dir / 'charts' / marker, 'network-operator', version, crds, {
            'deployment.yaml': DEPLOYMENT % {'name': '{{ .Release.Name }}', 'marker': marker, 'extra': ''},
            'nfd-master.yaml': NFD % {'kind': 'Deployment', 'role': 'master', 'replicas': '  replicas: 1\n',
                                      'node_selector': selector},
            'nfd-worker.yaml': NFD % {'kind': 'DaemonSet', 'role': 'worker', 'replicas': '', 'node_selector': ''}})

    def make_ipu_operator_chart(self, webhook_secret: bool = False) -> Path:
        """The stand-in IPU Operator chart; webhook_secret: with the admission webhook
        certificate's Secret, made at every render as chart 1.2.0 makes it (ADMISSION_SECRET)."""
        crd = SCHEMAS / 'ipu_operator' / 'ipujobs.graphcore.ai-1.2.0.yaml'
        templates = {'deployment.yaml': DEPLOYMENT % {'name': '{{ .Release.Name }}-controller-manager',
                                                      'marker': '1', 'extra': KUBE_RBAC_PROXY}}
        if webhook_secret:
            templates['admission.yaml'] = ADMISSION_SECRET
        return _chart(self.dir / 'charts' / ('webhook' if webhook_secret else ''), 'ipu-operator', '1.2.0', [crd],
                      templates)

    def inventory(self) -> dict:
        ipu_host = {node: {'ansible_python_interpreter': str(self.interpreters[node])} for node in IPU_NODES}
        return {'all': {
            'vars': {
                'ansible_connection': 'local',
                'ansible_become': False,
                # the site: the test server, paths in temp directories
                'ipu_k8s_kubeconfig': str(self.cluster.kubeconfig),
                # The stand-in Network Operator chart carries release 25.4.0's CRDs, so the
                # site runs a Kubernetes minor that the 25.4.0 row (Whereabouts IPAM) serves.
                'ipu_k8s_kubernetes_version': '1.32.13',
                'ipu_k8s_vipu_controllers': [{'name': 'pod001', 'host': VIPU_ADDRESS, 'label': VIPU_LABEL}],
                'helm_version': self.helm_version.lstrip('v').split('+')[0],
                'helm_tarball_local_path': str(self.helm_tarball),
                'helm_tarball_checksum': self.helm_sha256,
                'helm_install_dir': str(self.helm_install_dir),
                'helm_cache_dir': str(self.dir / 'helm-cache'),
                'network_operator_chart_local_path': str(self.network_operator_chart),
                # the stand-in chart's own sha256, as a site sets the one it checked
                'network_operator_chart_sha256': hashlib.sha256(self.network_operator_chart.read_bytes()).hexdigest(),
                'network_operator_wait_timeout': 120,
                # hollow pods are Ready within seconds: look every 2 s, not every 10
                'ipu_k8s_wait_poll_seconds': 2,
                'network_operator_chart_cache_dir': str(self.dir / 'network-operator-charts'),
                'ipu_operator_chart_local_path': str(self.ipu_operator_chart),
                # the stand-in chart's own sha256 in place of the real archive's pin
                'ipu_k8s_versions': self._versions(),
                'ipu_operator_work_dir': str(self.dir / 'ipu-operator'),
                'ipu_operator_verify_timeout': 120,
                'ipu_operator_helm_timeout': '2m',
                'rdma_network_cni_dir': str(self.cni_dir),
                'rdma_network_wait_timeout': 60,
                'verify_report_dir': str(self.report_dir),
                'verify_test_pod_timeout': 120,
                'reset_wait_timeout': 120,
                # The Kubernetes client virtualenv of the API tasks, built offline from a
                # wheel directory (scripts/k8s-api/wheels) by /usr/bin/python3.
                'ipu_k8s_client_venv': str(self.client_venv),
                'ipu_k8s_client_wheel_dir': str(self.wheel_dir),
                'ipu_k8s_client_base_python': BASE_PYTHON,
            },
            'children': {
                'k8s_cluster': {'children': {
                    'control_plane': {'hosts': {CONTROL_PLANE: {'ansible_python_interpreter': str(self.system_python)}}},
                    'workers': {'hosts': ipu_host},
                }},
                'ipu_nodes': {'hosts': {node: {} for node in IPU_NODES}},
            },
        }}

    def with_ipu_node(self, node: str) -> dict:
        """The inventory with one more IPU node among the workers, its modules running in a
        namespace of its own (NODE_RDMA_ADDRESSES), as an operator adds a host on Day 2."""
        if node not in self.interpreters:
            self.interpreters[node] = self._netns_python(self.netns_factory, node)
        inventory = self.inventory()
        inventory['all']['children']['k8s_cluster']['children']['workers']['hosts'][node] = {
            'ansible_python_interpreter': str(self.interpreters[node])}
        inventory['all']['children']['ipu_nodes']['hosts'][node] = {}
        return inventory

    def _versions(self) -> dict:
        versions = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())[
            'ipu_k8s_versions']
        versions['ipu_operator']['1.2.0']['sha256'] = {
            'ipu-operator-helm-chart-1.2.0.tgz': hashlib.sha256(self.ipu_operator_chart.read_bytes()).hexdigest()}
        return versions

    def make_client_venv(self) -> None:
        """The client virtualenv, made by the real k8s_client_venv module (an ad-hoc run on
        cp1), for runs that must find it already there (check mode on a fresh server)."""
        inventory_file = self.dir / 'hosts.yml'
        inventory_file.write_text(yaml.safe_dump(self.inventory(), sort_keys=False))
        args = {'path': str(self.client_venv), 'base_python': BASE_PYTHON, 'wheel_dir': str(self.wheel_dir),
                'requirements': client_lock_lines()}
        env = self.env()
        env['ANSIBLE_STDOUT_CALLBACK'] = 'ansible.builtin.minimal'
        proc = subprocess.run([str(Path(PYTHON).parent / 'ansible'), CONTROL_PLANE, '-i', str(inventory_file),
                               '-m', 'k8s_client_venv', '-a', json.dumps(args)],
                              cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]

    # -- running playbooks -----------------------------------------------------------------
    def env(self) -> dict:
        env = self._helm_env()
        env.update({
            # helm_install_dir first: kubernetes.core.helm runs the helm the role installed
            'PATH': '%s:%s:%s' % (self.helm_install_dir, Path(PYTHON).parent, SYSTEM_PATH),
            'LANG': 'C.UTF-8',
            'ANSIBLE_CONFIG': str(ROOT / 'ansible.cfg'),
            'ANSIBLE_HOME': str(self.home / 'ansible'),
            'ANSIBLE_LOCAL_TEMP': str(self.home / 'ansible-local'),
            'ANSIBLE_REMOTE_TEMP': str(self.home / 'ansible-remote'),
            'ANSIBLE_NOCOLOR': '1',
            'KUBECONFIG': str(self.cluster.kubeconfig),
        })
        return env

    def play(self, playbook: str, *args: str, extra_vars: dict | None = None,
             inventory: dict | None = None, timeout: int = 600, kill_after: str | None = None) -> PlaybookRun:
        inventory_file = self.dir / 'hosts.yml'
        inventory_file.write_text(yaml.safe_dump(inventory or self.inventory(), sort_keys=False))
        argv = []
        merged = {**self.extra_vars, **(extra_vars or {})}
        if merged:
            vars_file = self.dir / 'extra-vars.json'
            vars_file.write_text(json.dumps(merged))
            argv += ['-e', '@%s' % vars_file]
        argv += [*args]
        run = run_playbook(ROOT / 'playbooks' / playbook, inventory_file, self.dir / 'runs', envvars=self.env(),
                           cmdline=argv, clean_env=True, timeout=timeout, kill_after=kill_after)
        return PlaybookRun(argv + [playbook], run)

