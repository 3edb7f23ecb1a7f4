"""site.yml never changes an installed Kubernetes release: the nodes step refuses, before
anything changes, when what runs differs from ipu_k8s_kubernetes_version, and points to
playbooks/upgrade.yml.

The real playbooks/nodes.yml runs against this machine (local connection, --tags
kubernetes_packages, so only the package layer runs). Stand-ins, and only these:
- the installed packages: a dpkg status file that the real python-apt of package_facts
  reads (APT_CONFIG names a configuration whose Dir::State::status is that file), written
  in dpkg's own format (a "Status: hold ok installed" stanza per package);
- the cluster: a kubectl on PATH that prints the kube-system/kubeadm-config ConfigMap as
  `kubectl get -o json` does (data.ClusterConfiguration holding kubeadm's YAML, whose
  kubernetesVersion kubeadm writes as v<version>) and logs its arguments.
The package source is an empty air-gapped directory: a run that got past the refusal fails
at the first check of install_local.yml, before anything is copied, and never reaches a network.
"""
import json
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import SYSTEM_PATH, run_playbook  # noqa: E402
from netns_lab import SITE_PINS  # noqa: E402
from testlib import dpkg_status  # noqa: E402

ASKED = '1.32.13'
REFUSAL = 'kubernetes_packages : Refuse to change the installed Kubernetes release outside playbooks/upgrade.yml'
INSTALL_TASKS = ('kubernetes_packages : Copy the .deb files to the node', 'kubernetes_packages : Install the local .deb files',
                 'kubernetes_packages : Install kubeadm, kubelet and kubectl at %s-1.1' % ASKED)

KUBECTL = """#!/bin/sh
echo "$@" >> {log}
cat {configmap}
"""


def configmap(version):
    cluster_configuration = 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v%s\n' % version
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'kubeadm-config', 'namespace': 'kube-system'},
            'data': {'ClusterConfiguration': cluster_configuration}}


def run_nodes(tmp_path, hosts, check=False):
    """playbooks/nodes.yml on this machine for hosts ({name: (packages, cluster)}; the control
    plane is the host with a cluster, else the first; one control plane needs no endpoint): a host's `packages` ({name: version}) are in its own dpkg status file and,
    when its `cluster` is a version, its kubeadm-config ConfigMap is behind its own kubectl.

    Each host's python is a wrapper that gives the host's modules its own APT_CONFIG and PATH,
    so the cases of one run share nothing but the air-gapped source and the inventory."""
    variables = dict(SITE_PINS, ipu_k8s_kubernetes_version=ASKED)
    # The site's air-gapped source holds the asked release (the settings play checks each file).
    debs = tmp_path / 'debs'
    debs.mkdir()
    sums = {}
    for name in ('kubeadm', 'kubelet', 'kubectl'):
        deb = debs / ('%s_%s-1.1_amd64.deb' % (name, ASKED))
        deb.write_bytes(b'')
        sums[deb.name] = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'  # sha256 of nothing
    variables.update(kubernetes_packages_debs_local_path=str(debs), kubernetes_packages_debs_sha256=sums)
    inventory_hosts = {}
    for host, (packages, cluster) in hosts.items():
        home = tmp_path / host
        bin_dir = home / 'bin'
        bin_dir.mkdir(parents=True)
        status = home / 'dpkg-status'
        status.write_text(dpkg_status(packages))
        (home / 'apt.conf').write_text('Dir::State::status "%s";\n' % status)
        kubeconfig = home / 'admin.conf'
        if cluster:
            kubeconfig.write_text('apiVersion: v1\nkind: Config\n')
            (home / 'configmap.json').write_text(json.dumps(configmap(cluster)))
            kubectl = bin_dir / 'kubectl'
            kubectl.write_text(KUBECTL.format(log=home / 'kubectl.log', configmap=home / 'configmap.json'))
            kubectl.chmod(0o755)
        python = home / 'python'
        python.write_text('#!/bin/sh\nAPT_CONFIG=%s PATH=%s exec %s "$@"\n' % (
            shlex.quote(str(home / 'apt.conf')),
            shlex.quote('%s:%s:%s' % (bin_dir, Path(sys.executable).parent, SYSTEM_PATH)), shlex.quote(sys.executable)))
        python.chmod(0o755)
        inventory_hosts[host] = {'ansible_connection': 'local', 'ansible_become': False,
                                 'ansible_python_interpreter': str(python), 'ipu_k8s_kubeconfig': str(kubeconfig),
                                 'kubernetes_packages_debs_cache_dir': str(home / 'cache')}
    control_plane = [host for host, (_, cluster) in hosts.items() if cluster] or list(hosts)[:1]
    inventory = {'all': {'hosts': inventory_hosts,
                         'children': {'k8s_cluster': {'children': {
                             'control_plane': {'hosts': dict.fromkeys(control_plane)},
                             'workers': {'hosts': dict.fromkeys(h for h in hosts if h not in control_plane)}}}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    args = ['-e', '@%s' % (tmp_path / 'vars.json'), '--tags', 'kubernetes_packages']
    return run_playbook(ROOT / 'playbooks' / 'nodes.yml', tmp_path / 'hosts.json', tmp_path,
                        cmdline=args + (['--check'] if check else []), timeout=300)


def packages_at(version, names=('kubeadm', 'kubelet', 'kubectl')):
    return {name: version + '-1.1' for name in names}


# The cases, a host each, by the run they share: the refused ones stop at the refusal, a
# task that runs on every host with that host's own facts; the two that pass it run together.
BATCHES = {
    'run': {'older-minor': (packages_at('1.31.4'), None), 'older-patch': (packages_at('1.32.12'), None),
            'half-moved': ({'kubeadm': ASKED + '-1.1', 'kubelet': '1.31.4-1.1'}, None),
            'cluster-older': (packages_at(ASKED, ('kubeadm', 'kubelet')), '1.31.4')},
    'check-mode': {'older-minor': (packages_at('1.31.4'), None), 'older-patch': (packages_at('1.32.12'), None)},
    # no Kubernetes package yet on the fresh node, only the system's own (python-apt refuses an empty database)
    'passing': {'asked': (packages_at(ASKED, ('kubeadm', 'kubelet')), ASKED), 'fresh': ({'base-files': '12.4+deb12u5'}, None)},
}


@pytest.fixture(scope='module')
def batch(tmp_path_factory):
    """name -> (the directory, the run of nodes.yml on the batch's hosts), each batch run once."""
    runs = {}

    def run(name):
        if name not in runs:
            directory = tmp_path_factory.mktemp(name)
            runs[name] = directory, run_nodes(directory, BATCHES[name], check=name == 'check-mode')
        return runs[name]
    return run


def assert_refused_before_any_change(run, host, installed_text, tmp_path):
    assert run.rc != 0, run.stdout[-3000:]
    assert host in run.ran(REFUSAL), run.stdout[-3000:]
    message = ' '.join(run.failures()[host].split())
    assert 'ipu_k8s_kubernetes_version=%s' % ASKED in message, message
    assert 'and %s runs ' % host in message and installed_text in message, message
    assert 'playbooks/upgrade.yml' in message and 'ansible-playbook -i %s' % (tmp_path / 'hosts.json') in message, message
    assert 'nothing was changed' in message, message
    # the refusal is the host's one failure, and the run stopped there
    failed = [e for e in run.host_events(host=host) if e['event'] == 'runner_on_failed']
    assert len(failed) == 1, [e['event_data']['task'] for e in failed]
    for task in INSTALL_TASKS:
        assert not run.ran(task), task
    assert sum(s['changed'] for s in run.host_stats().values()) == 0, run.host_stats()
    assert not (tmp_path / host / 'cache').exists()


@pytest.mark.parametrize('check', [False, True], ids=['run', 'check-mode'])
@pytest.mark.parametrize('installed', ['1.31.4', '1.32.12'], ids=['older-minor', 'older-patch'])
def test_installed_packages_of_another_release_are_refused_before_any_change(batch, installed, check):
    host = 'older-minor' if installed == '1.31.4' else 'older-patch'
    tmp_path, run = batch('check-mode' if check else 'run')
    assert_refused_before_any_change(run, host, 'package kubeadm %s, package kubelet %s' % (installed, installed), tmp_path)


def test_a_half_moved_node_is_refused_naming_each_package(batch):
    tmp_path, run = batch('run')
    assert_refused_before_any_change(run, 'half-moved', 'package kubeadm %s, package kubelet 1.31.4' % ASKED, tmp_path)


def test_the_cluster_version_is_read_from_the_kubeadm_config_configmap(batch):
    # A control plane whose packages match (reinstalled by hand, say) while the cluster runs 1.31.4.
    tmp_path, run = batch('run')
    assert_refused_before_any_change(run, 'cluster-older', 'the cluster (kubeadm-config) 1.31.4', tmp_path)
    calls = (tmp_path / 'cluster-older' / 'kubectl.log').read_text().split()
    assert calls[-5:] == ['--namespace=kube-system', 'get', 'configmap', 'kubeadm-config', '--output=json'], calls


def test_the_installed_release_asked_for_passes_the_refusal(batch):
    _, run = batch('passing')
    assert not run.result(REFUSAL, 'asked').get('failed'), run.stdout[-3000:]


def test_a_fresh_node_passes_the_refusal(batch):
    _, run = batch('passing')
    assert not run.result(REFUSAL, 'fresh').get('failed'), run.stdout[-3000:]
    # and the run goes on to the package layer (here: the air-gapped source's stand-in files,
    # empty, which apt refuses to install)
    assert 'fresh' in run.ran('Install the local .deb files'), run.stdout[-3000:]
