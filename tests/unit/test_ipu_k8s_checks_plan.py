"""Preflight's plan as the closing block prints it (plugins/callback/ipu_k8s_progress.py
plan_lines, from the set_stats data roles/preflight/tasks/plan.yml leaves). The run through the
real playbook is tests/integration/test_preflight_plan.py."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'plugins' / 'callback'))
from ipu_k8s_progress import plan_lines  # noqa: E402

PLAN = {'kubernetes': '1.35.8', 'calico': 'v3.31.7', 'helm': '3.16.3',
        'network_operator': {'chart_version': '26.4.1', 'layout': 'policy', 'ipam': 'nv-ipam'},
        'containerd': {'source': 'docker', 'version': '1.7.27-1'},
        'pods': [{'name': 'pod001', 'vipu_host': '10.5.212.116', 'vipu_port': 8090, 'hosts': ['poplar-01', 'poplar-02'],
                  'rdma_network': {'interface': 'ens1f0', 'cidr': '10.5.212.0/22', 'mtu': 9000,
                                   'excludes': ['10.5.212.0/25', '10.5.212.116/32']}}]}


def test_no_plan_prints_nothing():
    assert plan_lines(None) == [] and plan_lines({}) == []


def test_the_plan_names_each_release_and_each_ipu_pods_network():
    assert plan_lines(PLAN) == [
        '  Kubernetes         1.35.8',
        '  Network Operator   chart 26.4.1 (policy layout, nv-ipam)',
        '  Calico             v3.31.7',
        '  Helm               3.16.3',
        '  containerd         docker package, 1.7.27-1',
        '  IPU-POD pod001     V-IPU 10.5.212.116:8090 for poplar-01, poplar-02: ens1f0 in 10.5.212.0/22, MTU 9000, '
        'excluded 10.5.212.0/25, 10.5.212.116/32']


def test_a_plan_without_a_chart_row_pods_or_a_pinned_containerd_says_so():
    plan = dict(PLAN, network_operator={}, containerd={'source': 'distribution', 'version': ''},
                pods=[dict(PLAN['pods'][0], rdma_network=dict(PLAN['pods'][0]['rdma_network'], excludes=[]))])
    lines = plan_lines(plan)
    assert lines[1] == '  Network Operator   no chart row'
    assert lines[4] == '  containerd         distribution package, the newest the source has'
    assert lines[5].endswith('MTU 9000, excluded nothing')
    assert len(plan_lines(dict(plan, pods=[]))) == 5
