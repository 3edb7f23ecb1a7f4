"""The verify layer's data-path check on a real network stack.

playbooks/verify.yml runs through ansible-runner (ansible-playbook) inside a network namespace made here
(the IPU node), whose rdma0 (10.247.209.200/23, MTU 9000) is a veth wired to a second
namespace holding the V-IPU controller's address (10.247.208.10, in the excluded first
/25). The role derives the RDMA network with the real modules, puts a macvlan on rdma0 in
a throwaway namespace of its own, pings the controller from there and removes it. The
echo requests never leave the namespaces this test made. Cluster checks are skipped
(--skip-tags verify_cluster) and must show as SKIP; containerd and RDMA-device checks
run too and fail here (there is neither), which the assertions ignore.
"""
import json
import os
import re
import secrets
import subprocess

import pytest

from netns_lab import PREFIX, ROOT, ip_binary, local_host, run_playbook, veth

VIPU = '10.247.208.10'


@pytest.fixture(scope='module')
def pod_fabric(netns_factory):
    vipu = netns_factory('vipu')
    node = netns_factory('vnode')
    node_cmds, vipu_cmds = veth('rdma0', 'f-rdma0', vipu, 9000, '10.247.209.200/23',
                                peer_addresses=(VIPU + '/23',))
    node.ip(*node_cmds)
    vipu.ip(*vipu_cmds)
    return node, vipu


def run_verify(node, tmp_path, *options, **extra_vars):
    # Named like the fixtures' namespaces (prefix, then this process id), so a run that dies
    # leaves nothing the next session's sweep would not remove.
    probe_netns = '%s%d-verify-%s' % (PREFIX, os.getpid(), secrets.token_hex(2))
    variables = {
        'ansible_become': False,
        'ipu_k8s_vipu_controllers': [{'name': 'pod1', 'host': VIPU, 'port': 8090}],
        'verify_report_dir': str(tmp_path / 'reports'),
        'verify_datapath_netns': probe_netns,
        'verify_datapath_link': 'ipuk8sv%s' % secrets.token_hex(2),
        'verify_datapath_ping_count': 2,
        'verify_datapath_ping_timeout': 1,
    }
    variables.update(extra_vars)
    inventory = {'all': {'children': {
        'k8s_cluster': {'children': {'control_plane': {'hosts': {'vnode': local_host(**variables)}},
                                     'workers': {'hosts': {}}}},
        'ipu_nodes': {'hosts': {'vnode': {}}},
    }}}
    run = run_playbook(node, ROOT / 'playbooks' / 'verify.yml', inventory, tmp_path,
                       env={'ANSIBLE_SKIP_TAGS': 'verify_cluster'}, cmdline=list(options))
    reports = sorted((tmp_path / 'reports').glob('verify-*.json'))
    assert reports, 'no report written\n%s' % run.stdout[-4000:]
    rows = json.loads(reports[-1].read_text())['results']
    return run, {row['check']: row for row in rows}, probe_netns


def assert_probe_removed(node, probe_netns):
    namespaces = subprocess.run([ip_binary(), 'netns', 'list'], capture_output=True, text=True, check=True).stdout
    assert probe_netns not in namespaces
    links = json.loads(node.run([ip_binary(), '-j', 'link', 'show']).stdout)
    assert sorted(link['ifname'] for link in links) == ['lo', 'rdma0']


def test_macvlan_on_the_derived_interface_reaches_the_vipu_controller(pod_fabric, tmp_path):
    node, _ = pod_fabric
    proc, rows, probe_netns = run_verify(node, tmp_path)
    derived = rows['RDMA network derived']
    assert derived['status'] == 'PASS', derived
    assert derived['observed'].startswith('rdma0 10.247.208.0/23 mtu 9000')
    datapath = rows['RDMA data path (macvlan to V-IPU)']
    assert datapath['status'] == 'PASS', datapath
    # Highest address of the /23 that is neither the broadcast nor in use.
    assert '2 packets transmitted, 2 received from 10.247.208.10' in datapath['observed']
    assert 'as 10.247.209.254/23' in datapath['observed']
    assert_probe_removed(node, probe_netns)
    # Without an image the pod container check says so on each of its rows.
    for check in ('pod container: net1 from the macvlan CNI plugin', 'pod container: V-IPU controller answers on net1'):
        assert rows[check]['status'] == 'SKIP'
        assert rows[check]['observed'] == ('skipped: verify_container_image is empty (an image with sh, iproute2, '
                                           'ping and ibverbs-utils)')
    # Each node check's task file ran and registered what it saw for each of its rows (PASS
    # or FAIL: containerd and the RDMA device are absent here), as the check list names them.
    for check in ('containerd LimitMEMLOCK (systemd)', 'containerd memlock (running process)', 'RDMA device',
                  'RDMA network derived', 'RDMA data path (macvlan to V-IPU)'):
        assert rows[check]['status'] in ('PASS', 'FAIL'), rows.get(check)
        assert 'registered no observation' not in rows[check]['observed'], rows[check]
    # Without a cluster, its checks are reported, not silently absent: each row they would report.
    for check in ('Multus and Whereabouts CNI files', 'rdma-net matches the node', 'nodes Ready',
                  'RDMA test pod Ready (uid 1000, no hostNetwork)', 'test pod routes', 'test pod memlock unlimited'):
        assert rows[check]['status'] == 'SKIP'
        assert rows[check]['observed'] == 'not run: the run skipped the tag verify_cluster'
    # The opt-in test says it is opt-in, not that a tag was skipped.
    assert rows['IPUJob smoke test (mnist)']['observed'] == 'IPUJob smoke test is opt-in: -e verify_ipujob_smoke_test=true'
    # The report printed the table once (one result of the report task, the table in its msg).
    printed = proc.run.results('Print the report')
    assert len(printed) == 1 and len(re.findall(r'\d+ checks: \d+ PASS, \d+ FAIL, \d+ SKIP', printed[0]['msg'])) == 1


def test_unanswered_ping_is_a_failed_check_and_the_probe_is_still_removed(pod_fabric, tmp_path):
    node, vipu = pod_fabric
    vipu.ip('addr del %s/23 dev f-rdma0' % VIPU)
    try:
        proc, rows, probe_netns = run_verify(node, tmp_path, verify_datapath_address='10.247.209.77')
    finally:
        vipu.ip('addr add %s/23 dev f-rdma0' % VIPU)
    datapath = rows['RDMA data path (macvlan to V-IPU)']
    assert datapath['status'] == 'FAIL'
    assert '2 packets transmitted, 0 received' in datapath['observed']
    assert 'as 10.247.209.77' in datapath['observed']
    assert proc.rc != 0 and proc.failures(), proc.stdout[-3000:]
    assert_probe_removed(node, probe_netns)


def test_pinned_address_inside_the_excludes_is_refused(pod_fabric, tmp_path):
    node, _ = pod_fabric
    proc, rows, probe_netns = run_verify(node, tmp_path, verify_datapath_address='10.247.208.20')
    datapath = rows['RDMA data path (macvlan to V-IPU)']
    assert datapath['status'] == 'FAIL'
    assert 'Set verify_datapath_address to a free address of that range' in datapath['observed']
    assert_probe_removed(node, probe_netns)


def test_check_mode_creates_nothing_and_reports_the_probe_as_skipped(pod_fabric, tmp_path):
    node, _ = pod_fabric
    proc, rows, probe_netns = run_verify(node, tmp_path, '--check')
    assert rows['RDMA network derived']['status'] == 'PASS'
    datapath = rows['RDMA data path (macvlan to V-IPU)']
    assert datapath['status'] == 'SKIP'
    assert datapath['observed'] == 'skipped: check mode (the probe creates a namespace)'
    assert_probe_removed(node, probe_netns)


def test_a_disabled_data_path_is_reported_as_skipped_and_creates_nothing(pod_fabric, tmp_path):
    node, _ = pod_fabric
    proc, rows, probe_netns = run_verify(node, tmp_path, verify_datapath_enabled=False)
    datapath = rows['RDMA data path (macvlan to V-IPU)']
    assert (datapath['status'], datapath['observed']) == ('SKIP', 'skipped: verify_datapath_enabled is false')
    assert_probe_removed(node, probe_netns)
