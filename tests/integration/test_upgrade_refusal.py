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


def run_nodes(tmp_path, packages, cluster=None, check=False):
    """playbooks/nodes.yml on this machine, with `packages` ({name: version}) in the dpkg
    status file and, when `cluster` is a version, the kubeadm-config ConfigMap behind kubectl."""
    status = tmp_path / 'dpkg-status'
    status.write_text(dpkg_status(packages))
    (tmp_path / 'apt.conf').write_text('Dir::State::status "%s";\n' % status)
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    kubeconfig = tmp_path / 'admin.conf'
    if cluster:
        kubeconfig.write_text('apiVersion: v1\nkind: Config\n')
        (tmp_path / 'configmap.json').write_text(json.dumps(configmap(cluster)))
        kubectl = bin_dir / 'kubectl'
        kubectl.write_text(KUBECTL.format(log=tmp_path / 'kubectl.log', configmap=tmp_path / 'configmap.json'))
        kubectl.chmod(0o755)
    # The site's air-gapped source holds the asked release (the settings play checks each file).
    debs = tmp_path / 'debs'
    debs.mkdir()
    sums = {}
    for name in ('kubeadm', 'kubelet', 'kubectl'):
        deb = debs / ('%s_%s-1.1_amd64.deb' % (name, ASKED))
        deb.write_bytes(b'')
        sums[deb.name] = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'  # sha256 of nothing
    inventory = {'all': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_become': False,
                                                 'ansible_python_interpreter': sys.executable}},
                         'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {'localhost': None}},
                                                                   'workers': {'hosts': {}}}}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    variables = dict(SITE_PINS, ipu_k8s_kubernetes_version=ASKED, ipu_k8s_kubeconfig=str(kubeconfig),
                     kubernetes_packages_debs_local_path=str(debs), kubernetes_packages_debs_sha256=sums,
                     kubernetes_packages_debs_cache_dir=str(tmp_path / 'cache'))
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    args = ['-e', '@%s' % (tmp_path / 'vars.json'), '--tags', 'kubernetes_packages']
    return run_playbook(ROOT / 'playbooks' / 'nodes.yml', tmp_path / 'hosts.json', tmp_path,
                        envvars={'APT_CONFIG': str(tmp_path / 'apt.conf'),
                                 'PATH': '%s:%s:%s' % (bin_dir, Path(sys.executable).parent, SYSTEM_PATH)},
                        cmdline=args + (['--check'] if check else []), timeout=300)


def assert_refused_before_any_change(run, installed_text, tmp_path):
    assert run.rc != 0, run.stdout[-3000:]
    assert run.ran(REFUSAL) == ['localhost'], run.stdout[-3000:]
    message = ' '.join(run.failures()['localhost'].split())
    assert 'ipu_k8s_kubernetes_version=%s' % ASKED in message, message
    assert installed_text in message, message
    assert 'playbooks/upgrade.yml' in message and 'ansible-playbook -i %s' % (tmp_path / 'hosts.json') in message, message
    assert 'nothing was changed' in message, message
    # the refusal is the one failure, and the run stopped there
    assert len(run.failure_messages()) == 1, run.failure_messages()
    for task in INSTALL_TASKS:
        assert not run.ran(task), task
    assert sum(s['changed'] for s in run.host_stats().values()) == 0, run.host_stats()
    assert not (tmp_path / 'cache').exists()


@pytest.mark.parametrize('check', [False, True], ids=['run', 'check-mode'])
@pytest.mark.parametrize('installed', ['1.31.4', '1.32.12'], ids=['older-minor', 'older-patch'])
def test_installed_packages_of_another_release_are_refused_before_any_change(tmp_path, installed, check):
    run = run_nodes(tmp_path, {'kubeadm': installed + '-1.1', 'kubelet': installed + '-1.1', 'kubectl': installed + '-1.1'},
                    check=check)
    assert_refused_before_any_change(run, 'package kubeadm %s, package kubelet %s' % (installed, installed), tmp_path)


def test_a_half_moved_node_is_refused_naming_each_package(tmp_path):
    run = run_nodes(tmp_path, {'kubeadm': ASKED + '-1.1', 'kubelet': '1.31.4-1.1'})
    assert_refused_before_any_change(run, 'package kubeadm %s, package kubelet 1.31.4' % ASKED, tmp_path)


def test_the_cluster_version_is_read_from_the_kubeadm_config_configmap(tmp_path):
    # A control plane whose packages match (reinstalled by hand, say) while the cluster runs 1.31.4.
    run = run_nodes(tmp_path, {'kubeadm': ASKED + '-1.1', 'kubelet': ASKED + '-1.1'}, cluster='1.31.4')
    assert_refused_before_any_change(run, 'the cluster (kubeadm-config) 1.31.4', tmp_path)
    calls = (tmp_path / 'kubectl.log').read_text().split()
    assert calls[-5:] == ['--namespace=kube-system', 'get', 'configmap', 'kubeadm-config', '--output=json'], calls


def test_the_installed_release_asked_for_passes_the_refusal(tmp_path):
    run = run_nodes(tmp_path, {'kubeadm': ASKED + '-1.1', 'kubelet': ASKED + '-1.1'}, cluster=ASKED)
    assert not run.result(REFUSAL, 'localhost').get('failed'), run.stdout[-3000:]


def test_a_fresh_node_passes_the_refusal(tmp_path):
    # no Kubernetes package yet, only the system's own (python-apt refuses an empty database)
    run = run_nodes(tmp_path, {'base-files': '12.4+deb12u5'})
    assert not run.result(REFUSAL, 'localhost').get('failed'), run.stdout[-3000:]
    # and the run goes on to the package layer (here: the air-gapped source's stand-in files,
    # empty, which apt refuses to install)
    assert run.ran('Install the local .deb files') == ['localhost'], run.stdout[-3000:]
