"""Preflight prints its plan in the closing block: the releases the run installs and, for each
IPU-POD, the controller and the RDMA network its nodes derived.

The real playbooks/preflight.yml runs inside the `lab` node namespace (conftest.py: rdma0 on
10.247.208.0/23 at MTU 9000 reaches the V-IPU controller 10.247.208.5); the releases expected are
read from the roles' defaults and version tables, not from the code that prints them.
"""
import re

import yaml

from netns_lab import ROOT, local_host, run_playbook

PREFLIGHT = ROOT / 'playbooks' / 'preflight.yml'


def defaults(role):
    return yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text())


def versions(component):
    """One component of ipu_k8s_versions, its rows as a list, each with its version."""
    table = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())
    return [dict(row, version=version) for version, row in table['ipu_k8s_versions'][component].items()]


def newest_row(rows, minor, key):
    """The table's newest row whose Kubernetes range holds MINOR."""
    def number(version):
        return tuple(int(n) for n in re.findall(r'[0-9]+', str(version)))
    fits = [row for row in rows if 'kubernetes_min' in row
            and number(row['kubernetes_min']) <= number(minor) <= number(row['kubernetes_max'])]
    return max(fits, key=lambda row: number(row[key]))


def test_preflight_prints_the_releases_and_each_ipu_pods_rdma_network(lab, tmp_path):
    host = local_host(ipu_k8s_vipu_controllers=[{'name': 'pod001', 'host': '10.247.208.5', 'port': 8090}],
                      preflight_require_rdma_device=False)
    inventory = {'all': {'hosts': {'poplar-01': host}, 'children': {
        'k8s_cluster': {'children': {'control_plane': {'hosts': {'poplar-01': None}}, 'workers': {'hosts': {}}}},
        'ipu_nodes': {'hosts': {'poplar-01': None}}}}}
    run = run_playbook(lab, PREFLIGHT, inventory, tmp_path, env={'ANSIBLE_SKIP_TAGS': 'preflight_os'})
    assert run.stats['poplar-01']['failures'] == 0, run.failure_messages()
    kubernetes = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'main.yml').read_text())[
        'ipu_k8s_kubernetes_version']
    minor = '.'.join(kubernetes.split('.')[:2])
    chart = newest_row(versions('network_operator'), minor, 'version')
    calico = newest_row(versions('calico'), minor, 'version')
    containerd = defaults('containerd')
    block = run.stdout[run.stdout.index('\nPlan:\n') + len('\nPlan:\n'):]
    rows = [re.split(r'\s{2,}', line.strip(), maxsplit=1) for line in block.splitlines()[:6]]
    assert rows == [
        ['Kubernetes', kubernetes],
        ['Network Operator', 'chart %s (%s layout, %s)' % (chart['version'], chart['layout'], chart['ipam'])],
        ['Calico', calico['version']],
        ['Helm', newest_row(versions('helm'), minor, 'version')['version']],
        ['containerd', '%s package, %s' % (containerd['containerd_package_source'],
                                           containerd['containerd_package_version'] or 'the newest the source has')],
        ['IPU-POD pod001', 'V-IPU 10.247.208.5:8090 for poplar-01: rdma0 in 10.247.208.0/23, MTU 9000, '
                           'excluded 10.247.208.0/25']], block
