"""A throwaway Kubernetes v1.20.2 control plane and hollow nodes on 127.0.0.1.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and one kubemark hollow
kubelet per node, built by scripts/k8s-api/build. Every process listens on 127.0.0.1 only
(ports picked free at start), keeps its state in the run's temp directory and is recorded
in <run dir>/pids.json; stop() ends them by PID. sweep_stale() ends the processes of runs
whose pytest process is gone (a run killed before its finalizer).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testlib import process_alive  # noqa: E402  (tests/testlib.py)

RUN_PREFIX = 'ipu-k8s-api-'
K8S_VERSION = 'v1.20.2'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _cmdline(pid: int) -> list[str]:
    try:
        return Path('/proc/%d/cmdline' % pid).read_bytes().decode(errors='replace').split('\0')
    except OSError:
        return []


def _end(processes: list[dict]) -> None:
    """SIGTERM recorded processes ({'pid', 'binary'}) at once, give them 5 s together,
    then SIGKILL what still runs; only a PID that still runs its recorded binary (a PID
    reused by another program is left alone)."""
    ours = [p['pid'] for p in processes
            if process_alive(p['pid']) and (_cmdline(p['pid']) or [''])[0] == p['binary']]
    for pid in ours:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    while any(process_alive(pid) for pid in ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in ours:
        if process_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def sweep_stale(base: Path | None = None) -> list[str]:
    """End the processes of earlier runs whose owning pytest process is gone; remove their
    directories. Returns the directories swept."""
    base = Path(base or tempfile.gettempdir())
    swept = []
    for record in base.glob(RUN_PREFIX + '*/pids.json'):
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        if process_alive(data.get('owner', 0)):
            continue
        _end(data.get('processes', []))
        shutil.rmtree(record.parent, ignore_errors=True)
        swept.append(str(record.parent))
    return swept


class Cluster:
    """start() -> running control plane + hollow nodes; stop() ends them by PID."""

    def __init__(self, bin_dir: Path, nodes: list[str], base: Path | None = None):
        self.bin = Path(bin_dir)
        self.nodes = list(nodes)
        self.dir = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=base))
        self.pki = self.dir / 'pki'
        self.kubeconfig = self.dir / 'admin.kubeconfig'
        self.processes: list[dict] = []
        self.port = free_port()
        self.server = 'https://127.0.0.1:%d' % self.port

    # -- processes -------------------------------------------------------------------------
    def _record(self) -> None:
        (self.dir / 'pids.json').write_text(json.dumps({'owner': os.getpid(), 'processes': self.processes}))

    def _spawn(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.dir / ('%s.log' % name), 'ab')
        run_env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': str(self.dir), 'TMPDIR': str(self.dir / 'tmp')}
        run_env.update(env or {})
        Path(run_env['TMPDIR']).mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=run_env, cwd=str(self.dir), start_new_session=True)
        log.close()
        self.processes.append({'name': name, 'pid': proc.pid, 'binary': argv[0]})
        self._record()
        return proc

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The last lines of a process's log, after the lines that say why a Go program
        ended (its first `panic:` or `fatal error:` line and the 8 after it), which a
        goroutine dump would push out of the tail."""
        path = self.dir / ('%s.log' % name)
        text = path.read_text(errors='replace').splitlines() if path.exists() else []
        why = next((i for i, line in enumerate(text) if line.startswith(('panic:', 'fatal error:'))), None)
        head = text[why:why + 9] + ['...'] if why is not None and why < len(text) - lines else []
        return '\n'.join(head + text[-lines:])

    def stop(self) -> None:
        _end(self.processes)
        self.processes = []
        self._record()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- PKI and kubeconfig ----------------------------------------------------------------
    def _openssl(self, *args: str) -> None:
        subprocess.run(['openssl', *args], cwd=str(self.pki), check=True, capture_output=True)

    def _make_pki(self) -> None:
        self.pki.mkdir()
        self._openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
                      '-days', '2', '-subj', '/CN=ipu-k8s-test-ca')
        (self.pki / 'apiserver.ext').write_text(
            'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,'
            'DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n')
        (self.pki / 'client.ext').write_text('extendedKeyUsage=clientAuth\n')
        for name, subj, ext in (('apiserver', '/CN=kube-apiserver', 'apiserver.ext'),
                                ('admin', '/O=system:masters/CN=ipu-k8s-test-admin', 'client.ext')):
            self._openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', name + '.key', '-out', name + '.csr',
                          '-subj', subj)
            self._openssl('x509', '-req', '-in', name + '.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key',
                          '-CAcreateserial', '-out', name + '.crt', '-days', '2', '-extfile', ext)
        self._openssl('genrsa', '-out', 'sa.key', '2048')
        self._openssl('rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub')
        self.kubeconfig.write_text(yaml.safe_dump({
            'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'ipu-k8s-test',
            'clusters': [{'name': 'ipu-k8s-test', 'cluster': {
                'server': self.server, 'certificate-authority': str(self.pki / 'ca.crt')}}],
            'users': [{'name': 'admin', 'user': {
                'client-certificate': str(self.pki / 'admin.crt'), 'client-key': str(self.pki / 'admin.key')}}],
            'contexts': [{'name': 'ipu-k8s-test', 'context': {'cluster': 'ipu-k8s-test', 'user': 'admin'}}],
        }))

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / 'ca.crt'))
        ctx.load_cert_chain(str(self.pki / 'admin.crt'), str(self.pki / 'admin.key'))
        return ctx

    def get(self, path: str, timeout: float = 5) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.server + path, context=self.ssl_context(), timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors='replace')

    # -- start -----------------------------------------------------------------------------
    def _wait(self, what: str, ready, timeout: float, log: str, restart: dict | None = None) -> None:
        """Wait until ready() holds. A process that exits fails the wait, unless restart
        ({name: function that starts it again}) names it: that one is started again, once,
        with a warning carrying its log."""
        deadline = time.monotonic() + timeout
        restart = dict(restart or {})
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except OSError:
                pass
            dead = [p['name'] for p in self.processes if not process_alive(p['pid'])]
            if dead and all(name in restart for name in dead):
                for name in dead:
                    warnings.warn('%s exited while waiting for %s; started again:\n%s'
                                  % (name, what, self.log_tail(name)))
                    self.processes = [p for p in self.processes if p['name'] != name]
                    restart.pop(name)()
                continue
            if dead:
                raise RuntimeError('%s exited while waiting for %s:\n%s' % (dead, what, self.log_tail(dead[0])))
            time.sleep(0.5)
        raise RuntimeError('%s not ready after %ss:\n%s' % (what, timeout, self.log_tail(log)))

    def start(self) -> 'Cluster':
        self._make_pki()
        etcd_client, etcd_peer = free_port(), free_port()
        self._spawn('etcd', [
            str(self.bin / 'etcd'), '--name=test', '--data-dir=%s' % (self.dir / 'etcd'),
            '--listen-client-urls=http://127.0.0.1:%d' % etcd_client,
            '--advertise-client-urls=http://127.0.0.1:%d' % etcd_client,
            '--listen-peer-urls=http://127.0.0.1:%d' % etcd_peer,
            '--initial-advertise-peer-urls=http://127.0.0.1:%d' % etcd_peer,
            '--initial-cluster=test=http://127.0.0.1:%d' % etcd_peer])
        self._wait('etcd', lambda: socket.create_connection(('127.0.0.1', etcd_client), 1).close() is None,
                   30, 'etcd')
        pki = self.pki
        self._spawn('kube-apiserver', [
            str(self.bin / 'kube-apiserver'), '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1',
            '--secure-port=%d' % self.port, '--insecure-port=0', '--cert-dir=%s' % (self.dir / 'apiserver'),
            '--etcd-servers=http://127.0.0.1:%d' % etcd_client,
            '--client-ca-file=%s' % (pki / 'ca.crt'),
            '--tls-cert-file=%s' % (pki / 'apiserver.crt'), '--tls-private-key-file=%s' % (pki / 'apiserver.key'),
            '--kubelet-client-certificate=%s' % (pki / 'admin.crt'),
            '--kubelet-client-key=%s' % (pki / 'admin.key'),
            '--service-account-key-file=%s' % (pki / 'sa.pub'),
            '--service-account-signing-key-file=%s' % (pki / 'sa.key'),
            '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
            '--service-cluster-ip-range=10.96.0.0/12', '--authorization-mode=Node,RBAC',
            '--endpoint-reconciler-type=none', '--allow-privileged=true', '--profiling=false'])
        self._wait('kube-apiserver', lambda: self.get('/readyz')[0] == 200, 90, 'kube-apiserver')
        common = ['--kubeconfig=%s' % self.kubeconfig, '--leader-elect=false', '--port=0', '--secure-port=0']
        self._spawn('kube-controller-manager', [
            str(self.bin / 'kube-controller-manager'), *common,
            '--service-account-private-key-file=%s' % (pki / 'sa.key'), '--root-ca-file=%s' % (pki / 'ca.crt'),
            '--use-service-account-credentials=false', '--profiling=false'])
        self._spawn('kube-scheduler', [str(self.bin / 'kube-scheduler'), *common, '--profiling=false'])
        for node in self.nodes:
            self._hollow_node(node, 'first')
        # The hollow kubelet of v1.20.2 has crashed at start, rarely, with a Go runtime error
        # before any test ran (once in about 40 starts of one full run): each node is started again once.
        self._wait('hollow nodes Ready', self._nodes_ready, 120, 'node-' + self.nodes[-1],
                   restart={'node-' + node: (lambda node=node: self._hollow_node(node, 'again'))
                            for node in self.nodes})
        self._wait('default service account', self._default_sa_token, 60, 'kube-controller-manager')
        return self

    def _hollow_node(self, node: str, start: str) -> None:
        """A kubemark hollow kubelet for node, its state in a directory of this start's own."""
        node_dir = self.dir / 'nodes' / node / start
        node_dir.mkdir(parents=True)
        self._spawn('node-' + node, [
            str(self.bin / 'kubemark'), '--morph=kubelet', '--name=%s' % node,
            '--kubeconfig=%s' % self.kubeconfig, '--kubelet-port=%d' % free_port(),
            '--kubelet-read-only-port=0'],
            env={'TMPDIR': str(node_dir), 'HOLLOW_NODE_IP': '127.0.0.1', 'HOLLOW_PROBES_SUCCEED': 'true'})

    def _nodes_ready(self) -> bool:
        code, body = self.get('/api/v1/nodes')
        if code != 200:
            return False
        ready = {n['metadata']['name'] for n in json.loads(body)['items']
                 if any(c['type'] == 'Ready' and c['status'] == 'True' for c in n['status'].get('conditions', []))}
        return set(self.nodes) <= ready

    def _default_sa_token(self) -> bool:
        code, body = self.get('/api/v1/namespaces/default/serviceaccounts/default')
        return code == 200 and bool(json.loads(body).get('secrets'))
