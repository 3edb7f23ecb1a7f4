"""playbooks/upgrade.yml against a real kube-apiserver (its own server, hollow nodes cp1,
poplar-01, poplar-02): cordon, drain (Eviction API, PodDisruptionBudgets), uncordon and the
Ready wait are real. Stand-ins, on each host's PATH (its ansible_python_interpreter is a
wrapper that sets PATH and APT_CONFIG, then runs the host's usual interpreter), and only
these; each logs the host and the arguments it was called with to one file:
- kubeadm: `upgrade apply --yes v<version>` writes the version into the kube-system/
  kubeadm-config ConfigMap (as kubeadm's upload-config phase does), through the real kubectl;
  `upgrade plan` and `upgrade node` only log;
- apt-get: `install <name>=<version>` (or a .deb file's path, name_version_arch.deb) sets that
  package's Version in the host's dpkg status
  file, which the real python-apt of package_facts reads (APT_CONFIG names a configuration
  whose Dir::State::status is that file);
- dpkg: --get-selections / --set-selections on a file of the host (everything else goes to
  the real /usr/bin/dpkg, which python-apt asks for the architecture);
- systemctl: answers `show` for kubelet and logs `restart`.
The cluster's version is read with the real kubectl (the tier's build, on each host's PATH
beside the stand-ins) from the kube-system/kubeadm-config ConfigMap, as the nodes step's
refusal reads it (roles/kubernetes_packages/tasks/cluster_version.yml); the drain is the
project's one drain (roles/ipu_k8s/tasks/drain.yml), remove-node.yml's too.
The package source is a Packages index served on 127.0.0.1 (read by the real availability
check); the step that points apt at the new minor's repository writes /etc/apt and fetches
its key, so it is skipped (--skip-tags kubernetes_packages_repository); so are the add-ons
(--skip-tags upgrade_addons: Kubernetes alone; test_upgrade_addons.py runs them).
Hollow nodes always report kubeletVersion v1.20.2; the node's own state is its packages.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

import pytest

from api_client import Api
from testlib import dpkg_status, served

CLUSTER = '1.32.13'
TARGET = '1.33.7'
WORKERS = ['poplar-01', 'poplar-02']
ANNOTATION = 'ipu-k8s.graphcore.ai/cordoned-for-upgrade'
# roles/ipu_k8s/tasks/drain.yml, the one drain (remove-node.yml's too)
DRAIN = 'ipu_k8s : Evict the node\'s pods, PodDisruptionBudgets respected'

STANDIN = r'''#!{python}
import json, os, re, subprocess, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
here = os.environ['STANDIN_DIR']
with open(os.environ['STANDIN_LOG'], 'a') as log:
    log.write('%s %s %s\n' % (os.environ['STANDIN_HOST'], name, ' '.join(args)))
status, selections = os.path.join(here, 'dpkg-status'), os.path.join(here, 'selections.json')
if name == 'apt-get' and args[:1] == ['install']:
    text = open(status).read()
    for spec in args[1:]:
        if spec.endswith('.deb'):  # a local file, named as apt-get download names it
            package, version = os.path.basename(spec).split('_')[:2]
            spec = '%s=%s' % (package, version)
        if '=' in spec:
            package, version = spec.split('=', 1)
            text = re.sub(r'(Package: %s\n(?:[^\n]+\n)*?Version: )[^\n]+' % re.escape(package), r'\g<1>' + version, text)
    open(status, 'w').write(text)
elif name == 'dpkg':
    chosen = json.load(open(selections)) if os.path.exists(selections) else {}
    if args[:1] == ['--get-selections']:
        print('%s\t\t\t\t%s' % (args[1], chosen.get(args[1], 'hold')))
    elif args[:1] == ['--set-selections']:
        package, selection = sys.stdin.read().split()
        chosen[package] = selection
        json.dump(chosen, open(selections, 'w'))
    else:
        os.execv('/usr/bin/dpkg', ['dpkg'] + args)
elif name == 'systemctl':
    if args[:1] == ['show']:
        print('Id=kubelet.service\nLoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled')
elif name == 'kubeadm':
    if args[:2] == ['upgrade', 'apply']:
        version = args[-1]
        configmap = {'apiVersion': 'v1', 'kind': 'ConfigMap',
                     'metadata': {'name': 'kubeadm-config', 'namespace': 'kube-system'},
                     'data': {'ClusterConfiguration': 'apiVersion: kubeadm.k8s.io/v1beta4\n'
                              'kind: ClusterConfiguration\nkubernetesVersion: %s\n' % version}}
        subprocess.run([os.environ['STANDIN_KUBECTL'], '--kubeconfig', os.environ['STANDIN_KUBECONFIG'],
                        'replace', '-f', '-'], input=json.dumps(configmap).encode(), check=True,
                       stdout=subprocess.DEVNULL)
'''

def kubeadm_config(version: str) -> dict:
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'kubeadm-config', 'namespace': 'kube-system'},
            'data': {'ClusterConfiguration': 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n'
                                             'kubernetesVersion: v%s\n' % version}}


@contextlib.contextmanager
def package_source(tmp_path_factory, *versions):
    """A Packages index of kubeadm, kubelet and kubectl at each of VERSIONS, served on 127.0.0.1."""
    root = tmp_path_factory.mktemp('k8s-repo')
    (root / 'Packages').write_text(''.join('Package: %s\nVersion: %s-1.1\nArchitecture: amd64\n\n' % (name, version)
                                           for version in versions for name in ('kubeadm', 'kubelet', 'kubectl')))
    with served(root) as url:
        yield url


@pytest.fixture(scope='module')
def repository(tmp_path_factory):
    with package_source(tmp_path_factory, CLUSTER, TARGET) as url:
        yield url


class Upgrade:
    """The site's hosts with their stand-ins, and playbooks/upgrade.yml runs."""

    def __init__(self, site, api, k8s_bin, repository, directory):
        self.site, self.api, self.dir, self.repository = site, api, directory, repository
        self.log = directory / 'calls.log'
        base = site.inventory()
        self.hosts = {}
        for group in ('control_plane', 'workers'):
            for host, hostvars in base['all']['children']['k8s_cluster']['children'][group]['hosts'].items():
                self.hosts[host] = hostvars['ansible_python_interpreter']
        self.wrappers = {host: self._host(host, interpreter, k8s_bin) for host, interpreter in self.hosts.items()}

    def _host(self, host, interpreter, k8s_bin):
        here = self.dir / host
        (here / 'bin').mkdir(parents=True, exist_ok=True)
        script = here / 'standin.py'
        script.write_text(STANDIN.replace('{python}', sys.executable))
        script.chmod(0o755)
        for name in ('kubeadm', 'apt-get', 'dpkg', 'systemctl'):
            link = here / 'bin' / name
            if not link.exists():
                link.symlink_to(script)
        # the real kubectl (the cluster's version is read with it), not a stand-in
        if not (here / 'bin' / 'kubectl').exists():
            (here / 'bin' / 'kubectl').symlink_to(k8s_bin / 'kubectl')
        (here / 'apt.conf').write_text('Dir::State::status "%s";\n' % (here / 'dpkg-status'))
        self.install(host, CLUSTER)
        wrapper = here / 'python'
        wrapper.write_text('#!/bin/sh\nexport PATH=%s:$PATH APT_CONFIG=%s STANDIN_DIR=%s STANDIN_HOST=%s STANDIN_LOG=%s '
                           'STANDIN_KUBECTL=%s STANDIN_KUBECONFIG=%s\nexec %s "$@"\n'
                           % (here / 'bin', here / 'apt.conf', here, host, self.log, k8s_bin / 'kubectl',
                              self.site.cluster.kubeconfig, interpreter))
        wrapper.chmod(0o755)
        return wrapper

    def install(self, host, version):
        (self.dir / host / 'dpkg-status').write_text(
            dpkg_status(dict.fromkeys(('kubeadm', 'kubelet', 'kubectl'), version + '-1.1')))

    def installed(self, host) -> dict:
        text = (self.dir / host / 'dpkg-status').read_text()
        return {stanza.split('\n')[0].split(': ')[1]: [line.split(': ')[1] for line in stanza.split('\n')
                                                         if line.startswith('Version: ')][0]
                for stanza in text.strip().split('\n\n')}

    def inventory(self) -> dict:
        inventory = self.site.inventory()
        groups = inventory['all']['children']['k8s_cluster']['children']
        for group in groups.values():
            for host in group['hosts']:
                group['hosts'][host] = dict(group['hosts'][host] or {}, ansible_python_interpreter=str(self.wrappers[host]))
        inventory['all']['vars'].update({'ipu_k8s_kubernetes_version': TARGET, 'kubernetes_packages_repo_url': self.repository,
                                         'upgrade_drain_timeout': 15, 'upgrade_node_ready_timeout': 60})
        return inventory

    def run(self, *args, **kwargs):
        return self.site.play('upgrade.yml', '--skip-tags', 'kubernetes_packages_repository,upgrade_addons', *args,
                              inventory=self.inventory(), **kwargs)

    def reset(self):
        """Back to the cluster before the upgrade: packages, the cluster's version, the log."""
        for host in self.hosts:
            self.install(host, CLUSTER)
        self.api.apply(kubeadm_config(CLUSTER))
        self.log.unlink(missing_ok=True)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


class NodeWatch:
    """Appends '<node> cordoned' / '<node> uncordoned' to the stand-ins' log as the server
    shows each transition (polled), so the log holds one order of events."""

    def __init__(self, api: Api, log):
        self.api, self.log, self.stop = Api(api.kubeconfig), log, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        seen = {}
        while not self.stop.is_set():
            for node in self.api.core.list_node().items:
                now = bool(node.spec.unschedulable)
                if seen.get(node.metadata.name, False) != now:
                    with open(self.log, 'a') as log:
                        log.write('%s %s\n' % (node.metadata.name, 'cordoned' if now else 'uncordoned'))
                    seen[node.metadata.name] = now
            self.stop.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture(scope='module')
def upgrade(site, api, k8s_bin, repository, tmp_path_factory):
    api.apply(kubeadm_config(CLUSTER))
    return Upgrade(site, api, k8s_bin, repository, tmp_path_factory.mktemp('upgrade'))


def deployment(name, replicas, node=None):
    labels = {'app': name}
    spec = {'containers': [{'name': 'app', 'image': 'registry.invalid/stand-in/app:1'}]}
    if node:
        spec['nodeSelector'] = {'kubernetes.io/hostname': node}
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': {'replicas': replicas, 'selector': {'matchLabels': labels},
                     'template': {'metadata': {'labels': labels}, 'spec': spec}}}


def pods(api, app):
    return {p.metadata.name: p.spec.node_name for p in api.core.list_namespaced_pod('default', label_selector='app=' + app).items
            if not p.metadata.deletion_timestamp}


def wait_pods(api, app, count, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        running = {n: node for n, node in pods(api, app).items() if node}
        if len(running) == count:
            return running
        assert time.monotonic() < deadline, running
        time.sleep(1)


def unschedulable(api) -> dict:
    return {n.metadata.name: bool(n.spec.unschedulable) for n in api.core.list_node().items}


def test_a_pod_disruption_budget_that_blocks_stops_the_run_naming_the_pod(upgrade, api):
    # One replica on poplar-01 that its budget keeps (minAvailable 1): the drain cannot evict it.
    api.apply(deployment('guarded', 1, node='poplar-01'))
    api.apply({'apiVersion': 'policy/v1beta1', 'kind': 'PodDisruptionBudget',
               'metadata': {'name': 'guarded', 'namespace': 'default'},
               'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': 'guarded'}}}})
    [pod] = wait_pods(api, 'guarded', 1)
    run = upgrade.run()
    assert run.rc != 0, run.explain()
    message = ' '.join(' '.join(run.failures()).split())
    assert 'The drain of poplar-01 did not finish' in message, message
    # the pod, named with its owner, from the pods left on the node
    assert 'Pods still on the node: default/%s (ReplicaSet guarded-' % pod in message, message
    assert 'upgrade_drain_timeout=15' in message, message
    # the control plane went first; poplar-01 stays cordoned (marked); poplar-02 was not touched
    assert any(c.startswith('cp1 kubeadm upgrade apply --yes v%s' % TARGET) for c in upgrade.calls()), upgrade.calls()
    assert unschedulable(api) == {'cp1': False, 'poplar-01': True, 'poplar-02': False}
    assert ANNOTATION in (api.core.read_node('poplar-01').metadata.annotations or {})
    assert upgrade.installed('poplar-02') == {name: CLUSTER + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}
    assert not [c for c in upgrade.calls() if c.startswith('poplar-02')], upgrade.calls()
    assert pods(api, 'guarded') == {pod: 'poplar-01'}, 'the budget was not respected'

    # With the budget gone the next run finishes: poplar-01 drained, upgraded and uncordoned.
    api.resource('policy/v1beta1', 'PodDisruptionBudget').delete(name='guarded', namespace='default')
    upgrade.run().assert_ok()
    assert unschedulable(api) == {'cp1': False, 'poplar-01': False, 'poplar-02': False}
    assert pod not in pods(api, 'guarded'), 'the pod was not evicted'
    for host in ('cp1', *WORKERS):
        assert upgrade.installed(host) == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}, host
        assert ANNOTATION not in (api.core.read_node(host).metadata.annotations or {})
    api.resource('apps/v1', 'Deployment').delete(name='guarded', namespace='default')


def test_the_control_plane_goes_first_then_one_worker_at_a_time(upgrade, api):
    upgrade.reset()
    api.apply(deployment('web', 3))
    before = wait_pods(api, 'web', 3)
    with NodeWatch(api, upgrade.log):
        upgrade.run().assert_ok()
    calls = upgrade.calls()
    apply = calls.index('cp1 kubeadm upgrade apply --yes v%s' % TARGET)
    assert calls.index('cp1 kubeadm upgrade plan v%s' % TARGET) < apply
    transitions = [c for c in calls if c.split()[-1] in ('cordoned', 'uncordoned')]
    # serial 1: each worker is uncordoned before the next is cordoned, after the control plane
    assert transitions == ['cp1 cordoned', 'cp1 uncordoned', 'poplar-01 cordoned', 'poplar-01 uncordoned',
                           'poplar-02 cordoned', 'poplar-02 uncordoned'], calls
    assert calls.index('poplar-01 cordoned') > apply
    for worker in WORKERS:
        start, end = calls.index('%s cordoned' % worker), calls.index('%s uncordoned' % worker)
        mine = [c.split(' ', 1)[1] for c in calls[start:end] if c.startswith(worker + ' ')]
        assert [c for c in mine if c.split()[0] in ('apt-get', 'kubeadm') or ' restart ' in ' %s ' % c] == [
            'apt-get install --yes --allow-change-held-packages --allow-downgrades %s=%s-1.1' % (name, TARGET)
            for name in ('kubeadm', 'kubelet', 'kubectl')] + ['kubeadm upgrade node', 'systemctl restart kubelet'], mine
        assert upgrade.installed(worker) == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}
    # the pods that ran on the workers were evicted (the Deployment made new ones)
    after = wait_pods(api, 'web', 3)
    assert not {name for name, node in before.items() if node in WORKERS} & set(after), (before, after)

    count = len(upgrade.calls())
    upgrade.run().assert_unchanged()
    assert not [c for c in upgrade.calls()[count:] if c.split()[1] in ('apt-get', 'kubeadm', 'systemctl')], upgrade.calls()[count:]
    api.resource('apps/v1', 'Deployment').delete(name='web', namespace='default')


def test_a_run_killed_after_a_drain_is_finished_by_the_next(upgrade, api):
    upgrade.reset()
    # the control plane is at the release already: the first drain is poplar-01's
    upgrade.install('cp1', TARGET)
    api.apply(kubeadm_config(TARGET))
    killed = upgrade.run(kill_after=DRAIN)
    assert killed.status == 'canceled', killed.explain()
    assert unschedulable(api) == {'cp1': False, 'poplar-01': True, 'poplar-02': False}
    assert upgrade.installed('poplar-01')['kubelet'] == CLUSTER + '-1.1'

    run = upgrade.run().assert_ok()
    assert unschedulable(api) == {'cp1': False, 'poplar-01': False, 'poplar-02': False}
    for host in ('cp1', *WORKERS):
        assert upgrade.installed(host) == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}, host
        assert ANNOTATION not in (api.core.read_node(host).metadata.annotations or {})
    # poplar-01 had nothing left to evict: its drain changed nothing; cp1 was left alone
    drains = run.results(DRAIN)
    assert not drains['poplar-01'].get('changed'), drains['poplar-01']
    assert 'cp1' not in drains, drains
    assert not [c for c in upgrade.calls() if c.startswith('cp1 kubeadm upgrade apply')], upgrade.calls()


def test_a_skipped_minor_is_refused_naming_the_next_before_any_change(upgrade, api):
    upgrade.reset()
    run = upgrade.run(extra_vars={'ipu_k8s_kubernetes_version': '1.35.8'})
    assert run.rc != 0, run.explain()
    message = ' '.join(' '.join(run.failures()).split())
    assert 'ipu_k8s_kubernetes_version=1.35.8' in message and 'the cluster runs %s' % CLUSTER in message, message
    assert 'set ipu_k8s_kubernetes_version to a 1.33 release' in message, message
    assert upgrade.calls() == [], upgrade.calls()
    assert not any(unschedulable(api).values())


def test_a_node_an_operator_cordoned_is_upgraded_and_stays_cordoned(upgrade, api):
    upgrade.reset()
    upgrade.install('cp1', TARGET)
    api.apply(kubeadm_config(TARGET))
    api.core.patch_node('poplar-02', {'spec': {'unschedulable': True}})
    upgrade.run().assert_ok()
    assert unschedulable(api) == {'cp1': False, 'poplar-01': False, 'poplar-02': True}
    assert ANNOTATION not in (api.core.read_node('poplar-02').metadata.annotations or {})
    assert upgrade.installed('poplar-02') == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}
    api.core.patch_node('poplar-02', {'spec': {'unschedulable': False}})


def test_an_air_gapped_upgrade_installs_the_releases_files_by_path(upgrade, api, tmp_path):
    """kubernetes_packages_debs_local_path: the plan reads the release from the files, the
    settings play checks each file's sha256, and each node gets the release's files copied and
    installed by path (no repository)."""
    import hashlib
    debs, cache = tmp_path / 'debs', tmp_path / 'cache'
    debs.mkdir()
    sums = {}
    for version in (CLUSTER, TARGET):
        for name in ('kubeadm', 'kubelet', 'kubectl'):
            deb = debs / ('%s_%s-1.1_amd64.deb' % (name, version))
            deb.write_bytes(b'stand-in %s %s\n' % (name.encode(), version.encode()))
            sums[deb.name] = hashlib.sha256(deb.read_bytes()).hexdigest()
    upgrade.reset()
    upgrade.run(extra_vars={'kubernetes_packages_debs_local_path': str(debs), 'kubernetes_packages_debs_sha256': sums,
                            'kubernetes_packages_debs_cache_dir': str(cache)}).assert_ok()
    files = ['%s/%s_%s-1.1_amd64.deb' % (cache, name, TARGET) for name in ('kubeadm', 'kubelet', 'kubectl')]
    for host in ('cp1', *WORKERS):
        assert upgrade.installed(host) == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}, host
        installs = [c.split(' ', 2)[2] for c in upgrade.calls() if c.startswith(host + ' apt-get install')]
        assert installs == ['install --yes --allow-change-held-packages --allow-downgrades %s' % f for f in files], installs
    assert sorted(p.name for p in cache.iterdir()) == sorted(f.rsplit('/', 1)[1] for f in files)



def test_a_second_control_plane_host_runs_kubeadm_upgrade_node_after_the_first_and_before_the_workers(upgrade, api):
    """poplar-01 moved into control_plane for this run: after cp1's `kubeadm upgrade apply`, it
    takes `kubeadm upgrade node` (never `apply`) and its kubelet, before any worker is cordoned."""
    upgrade.reset()
    inventory = upgrade.inventory()
    groups = inventory['all']['children']['k8s_cluster']['children']
    groups['control_plane']['hosts']['poplar-01'] = groups['workers']['hosts'].pop('poplar-01')
    # Two control-plane hosts need a shared endpoint (preflight's rule); this one is a name only.
    inventory['all']['vars']['kubeadm_control_plane_endpoint'] = 'k8s-api.example.invalid'
    with NodeWatch(api, upgrade.log):
        upgrade.site.play('upgrade.yml', '--skip-tags', 'kubernetes_packages_repository,upgrade_addons',
                          inventory=inventory).assert_ok()
    calls = upgrade.calls()
    apply = calls.index('cp1 kubeadm upgrade apply --yes v%s' % TARGET)
    second = calls.index('poplar-01 kubeadm upgrade node')
    assert apply < second < calls.index('poplar-02 cordoned'), calls
    assert not [c for c in calls if c.startswith('poplar-01 kubeadm upgrade apply')], calls
    for host in ('cp1', *WORKERS):
        assert upgrade.installed(host) == {name: TARGET + '-1.1' for name in ('kubeadm', 'kubelet', 'kubectl')}, host
    assert not any(unschedulable(api).values())
