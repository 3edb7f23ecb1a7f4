"""plugins/modules/verify_probe.py: the probe address, the rows it reads from the tools' output, the
commands each probe runs (argument lists, in order, cleanup before and after) and how a failed
step is reported. `ip`, `ctr` and the CNI plugin are stood in for (FakeCommands); stopping a
process at a line it prints runs real processes. Every expected value is written out by hand."""

import io
import ipaddress
import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from ansible.module_utils import basic

from module_harness import FakeCommands, ModuleFail, load_library_module

probe = load_library_module('verify_probe')
pick = probe.probe_address

NETWORK = {'interface': 'eth1', 'cidr': '10.247.208.0/23', 'prefix': 23, 'mtu': 9000, 'node_address': '10.247.209.200',
           'excludes': ['10.247.208.0/25', '10.247.209.200/32'], 'vipu_address': '10.247.208.10'}
IP, CTR, NS = '/usr/sbin/ip', '/usr/bin/ctr', 'ipu-k8s-verify'


def refused(*args):
    with pytest.raises(probe.StepFailed) as refusal:
        pick(*args)
    step, error = refusal.value.args
    assert step == 'Choose the probe address'
    return error


def test_the_highest_address_below_the_broadcast():
    # The integration test's /23: node .209.200, V-IPU .208.10 in the excluded first /25.
    assert pick('10.247.208.0/23', ['10.247.208.0/25'], ['10.247.209.200', '10.247.208.10']) == '10.247.209.254'


def test_taken_and_excluded_addresses_are_passed_over():
    taken = ['10.247.209.254', '10.247.209.253/23']
    excludes = ['10.247.208.0/25', '10.247.209.252/32', '10.247.209.248/30']
    assert pick('10.247.208.0/23', excludes, taken) == '10.247.209.247'
    assert pick('10.247.208.0/23', excludes + ['10.247.209.247/32'], taken) == '10.247.209.246'


def test_a_pinned_address_wins_and_is_trimmed():
    assert pick('10.247.208.0/23', [], [], '10.247.209.77') == '10.247.209.77'
    assert pick('192.0.2.0/24', None, None, ' 192.0.2.9 ') == '192.0.2.9'


def test_nothing_free_is_refused_with_the_fix():
    # /29: .1-.6 usable; all taken or excluded.
    assert refused('192.0.2.0/29', ['192.0.2.4/30'], ['192.0.2.1', '192.0.2.2', '192.0.2.3']) == (
        "No usable probe address in 192.0.2.0/29 outside 192.0.2.4/30 (got ''). Set verify_datapath_address to a "
        "free address of that range.")
    # Never the network address.
    assert refused('192.0.2.0/30', ['192.0.2.1/32', '192.0.2.2/32']) == (
        "No usable probe address in 192.0.2.0/30 outside 192.0.2.1/32,192.0.2.2/32 (got ''). Set "
        "verify_datapath_address to a free address of that range.")


@pytest.mark.parametrize('pinned', ['10.247.208.20', '10.247.210.1', 'node-a'])
def test_a_pinned_address_in_an_exclude_outside_the_subnet_or_not_an_address_is_refused(pinned):
    assert refused('10.247.208.0/23', ['10.247.208.0/25'], [], pinned) == (
        "No usable probe address in 10.247.208.0/23 outside 10.247.208.0/25 (got '%s'). Set verify_datapath_address "
        "to a free address of that range." % pinned)


def test_only_256_addresses_from_the_top_are_tried():
    # broadcast-1 down to broadcast-256: 10.1.255.254 ... 10.1.254.255.
    assert pick('10.0.0.0/15', ['10.1.255.0/24'], []) == '10.1.254.255'
    assert refused('10.0.0.0/15', ['10.1.255.0/24', '10.1.254.255/32'], []).startswith('No usable probe address')


def test_the_subnet_and_its_excludes_are_parsed_once_per_probe_not_once_per_candidate(monkeypatch):
    # 255 of the 256 candidates excluded: the CIDR once for the bounds, once with each exclude for the rule.
    parsed = []
    real = ipaddress.ip_interface
    monkeypatch.setattr(ipaddress, 'ip_interface', lambda text: parsed.append(text) or real(text))
    assert pick('10.0.0.0/15', ['10.1.255.128/25', '10.1.255.0/25'], []) == '10.1.254.255'
    assert sorted(parsed) == ['10.0.0.0/15', '10.0.0.0/15', '10.1.255.0/25', '10.1.255.128/25']


def test_a_taken_entry_that_is_not_an_address_is_ignored_and_a_bad_cidr_or_exclude_is_refused():
    assert pick('192.0.2.0/24', [], ['fe80::1%eth0', None, '192.0.2.254']) == '192.0.2.253'
    assert pick('192.0.2.0/24', None, None) == '192.0.2.254'
    assert refused('192.0.2.0/33', [], []) == "'192.0.2.0/33' does not appear to be an IPv4 or IPv6 interface"
    assert refused('192.0.2.0/24', ['192.0.2.0/25', 'x'], [], '192.0.2.9') == (
        "'x' does not appear to be an IPv4 or IPv6 interface")


def test_a_subnet_and_excludes_written_with_host_bits_are_read_as_their_networks():
    # the node's own address/prefix, as `ip addr` shows it, names the same /29 (.1-.6)
    assert pick('192.0.2.5/29', ['192.0.2.6/31'], []) == '192.0.2.5'
    assert pick('192.0.2.0/29', ['192.0.2.5/30'], []) == '192.0.2.3'


def addr(address, prefixlen=23, mtu=9000):
    return json.dumps([{'ifindex': 2, 'ifname': 'net1', 'mtu': mtu, 'operstate': 'UP',
                        'addr_info': [{'family': 'inet', 'local': address, 'prefixlen': prefixlen}]}])


def test_net1_in_the_range_with_the_mtu_passes():
    assert probe.net1_seen(addr('10.247.209.254'), NETWORK, 1000) == {
        'expected': 'net1 in 10.247.208.0/23 outside 10.247.208.0/25,10.247.209.200/32, mtu 9000',
        'observed': 'net1 10.247.209.254/23 mtu 9000, uid 1000, IPAM stand-in: static (Whereabouts/NVIDIA IPAM '
                    'need the cluster)',
        'ok': True}


@pytest.mark.parametrize('output', [
    addr('10.247.208.20'),  # in the excluded first /25
    addr('10.247.209.200'),  # the node's own address, excluded
    addr('10.247.210.1'),  # outside the subnet
    addr('10.247.209.254', mtu=1500),
])
def test_net1_outside_the_range_or_with_another_mtu_fails(output):
    assert probe.net1_seen(output, NETWORK, 1000)['ok'] is False


@pytest.mark.parametrize('output, observed', [
    ('[{}]', 'net1 /? mtu ?'), ('[]', 'net1 /? mtu ?'),
    (json.dumps([{'ifname': 'net1', 'mtu': 9000, 'addr_info': []}]), 'net1 /? mtu 9000'),
])
def test_net1_without_an_address_or_an_mtu_shows_what_is_missing(output, observed):
    seen = probe.net1_seen(output, NETWORK, 1000)
    assert (seen['observed'], seen['ok']) == (
        observed + ', uid 1000, IPAM stand-in: static (Whereabouts/NVIDIA IPAM need the cluster)', False)


def test_no_output_where_json_was_due_is_read_as_an_empty_list_and_bad_json_names_the_step():
    assert probe.neighbours('') == []
    assert probe.net1_seen('', NETWORK, 1000)['observed'].startswith('net1 /? mtu ?')
    with pytest.raises(probe.StepFailed) as refusal:
        probe.neighbours('10.0.0.1 dev eth1')
    assert refusal.value.args == ('List the neighbours the node knows on the RDMA interface',
                                  'ip -j neigh is not JSON: Extra data: line 1 column 5 (char 4)')


def test_the_ping_summary_is_kept_and_its_absence_said():
    output = ('PING 10.247.208.10 (10.247.208.10) 56(84) bytes of data.\n\n--- 10.247.208.10 ping statistics ---\n'
              '3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms\n')
    assert probe.pinged(output, '10.247.208.10') == '3 packets transmitted, 2 received from 10.247.208.10'
    assert probe.pinged('', '10.247.208.10') == 'no ping summary from 10.247.208.10'


def test_a_process_is_stopped_as_soon_as_it_prints_the_line():
    started = time.monotonic()
    line, output = probe.until_line([sys.executable, '-u', '-c', 'import time; print("a"); print(" local address: x ");'
                                     ' time.sleep(60)'], 'local address')
    assert (line, output) == ('local address: x', 'a\n local address: x \n')
    assert time.monotonic() - started < 10  # the process sleeps 60 s: it was stopped, not waited for


def test_a_process_that_ignores_the_stop_is_killed_after_the_grace():
    started = time.monotonic()
    line, _ = probe.until_line([sys.executable, '-u', '-c', 'import signal, time; signal.signal(signal.SIGTERM, '
                                'signal.SIG_IGN); print("local address"); time.sleep(60)'], 'local address', grace=1)
    assert line == 'local address' and time.monotonic() - started < 30


def test_a_process_that_never_prints_the_line_gives_its_whole_output():
    assert probe.until_line([sys.executable, '-c', 'import sys; print("out"); sys.exit("Couldn\'t register MR")'],
                            'local address') == ('', "out\nCouldn't register MR\n")


class Node(FakeCommands):
    """ip and ctr of a node; records the keyword arguments of each command (stdin, environment)."""

    def __init__(self, answers):
        super().__init__(answers, binaries={'ctr': CTR})
        self.kwargs = []

    def run_command(self, module, args, **kwargs):
        self.kwargs.append(kwargs)
        return super().run_command(module, args, **kwargs)


NEIGH = ('-j', '-4', 'neigh', 'show', 'dev', 'eth1')
NETNS_DELETE = ('netns', 'delete', NS)
GONE = (1, '', 'Cannot remove namespace file "/run/netns/ipu-k8s-verify": No such file or directory\n')
PING_OUT = '2 packets transmitted, 2 received, 0% packet loss, time 1001ms\n'


def datapath_args(**extra):
    args = {'probe': 'datapath', 'network': NETWORK, 'taken': ['10.247.209.201'],
            'netns': NS, 'link': 'ipuk8sverify0', 'ping_count': 2, 'ping_timeout': 1}
    args.update(extra)
    return args


def datapath_node(ping=(0, PING_OUT, '')):
    return Node({
        NETNS_DELETE: GONE,
        # a neighbour holds .254: the probe takes .253 (.200 is the node's, .201 another node's)
        NEIGH: (0, json.dumps([{'dst': '10.247.209.254', 'lladdr': '52:54:00:1a:b0:02', 'state': ['REACHABLE']}]), ''),
        ('netns', 'add', NS): (0, '', ''),
        ('link', 'add', 'ipuk8sverify0', 'link', 'eth1', 'netns', NS, 'type', 'macvlan', 'mode', 'bridge'): (0, '', ''),
        ('-n', NS, 'addr', 'add', '10.247.209.253/23', 'dev', 'ipuk8sverify0'): (0, '', ''),
        ('-n', NS, 'link', 'set', 'ipuk8sverify0', 'up'): (0, '', ''),
        ('netns', 'exec', NS, 'ping', '-n', '-c', '2', '-W', '1', '10.247.208.10'): ping,
    })


def test_the_datapath_probe_runs_its_steps_between_two_cleanups(run_module):
    node = datapath_node()
    result = run_module('verify_probe', datapath_args(), node)
    assert [call[1:] for call in node.calls] == [
        ['netns', 'delete', NS], list(NEIGH), ['netns', 'add', NS],
        ['link', 'add', 'ipuk8sverify0', 'link', 'eth1', 'netns', NS, 'type', 'macvlan', 'mode', 'bridge'],
        ['-n', NS, 'addr', 'add', '10.247.209.253/23', 'dev', 'ipuk8sverify0'],
        ['-n', NS, 'link', 'set', 'ipuk8sverify0', 'up'],
        ['netns', 'exec', NS, 'ping', '-n', '-c', '2', '-W', '1', '10.247.208.10'], ['netns', 'delete', NS]]
    assert result['seen'] == {'datapath': {
        'observed': '2 packets transmitted, 2 received from 10.247.208.10, macvlan on eth1 as 10.247.209.253/23',
        'ok': True}}
    assert (result['address'], result['changed']) == ('10.247.209.253', False)
    # operator values reach each command as they are ($ and ~ not expanded)
    assert [kwargs.get('expand_user_and_vars') for kwargs in node.kwargs] == [False] * 8


def test_no_reply_fails_the_row_and_a_ping_error_names_the_step(run_module):
    seen = run_module('verify_probe', datapath_args(), datapath_node((1, '2 packets transmitted, 0 received', '')))
    assert seen['seen']['datapath']['ok'] is False
    seen = run_module('verify_probe', datapath_args(), datapath_node((2, '', 'ping: sendmsg: Network is down\n')))
    assert seen['seen'] == {'step': 'Ping the V-IPU controller from the namespace',
                            'error': 'ping: sendmsg: Network is down'}


def test_a_refused_address_creates_nothing_and_still_cleans_up(run_module):
    node = datapath_node()
    result = run_module('verify_probe', datapath_args(address='10.247.208.20'), node)
    assert result['seen'] == {'step': 'Choose the probe address', 'error': (
        "No usable probe address in 10.247.208.0/23 outside 10.247.208.0/25,10.247.209.200/32 (got "
        "'10.247.208.20'). Set verify_datapath_address to a free address of that range.")}
    assert [call[1:] for call in node.calls] == [list(NETNS_DELETE), list(NEIGH), list(NETNS_DELETE)]
    assert result['address'] == ''


BUSY = (1, '', 'Cannot remove namespace: Device or resource busy\n')


def test_a_cleanup_that_fails_first_ends_the_probe_and_the_last_is_reported_beside_the_row(run_module):
    node = datapath_node()
    node.answers[NETNS_DELETE] = BUSY
    result = run_module('verify_probe', datapath_args(), node)
    assert result['seen'] == {'step': "Delete the probe's network namespace",
                              'error': 'Cannot remove namespace: Device or resource busy'}
    assert [call[1:] for call in node.calls] == [list(NETNS_DELETE), list(NETNS_DELETE)]
    node = datapath_node()
    node.answers[NETNS_DELETE] = [GONE, BUSY]
    seen = run_module('verify_probe', datapath_args(), node)['seen']
    assert (seen['datapath']['ok'], seen['step'], seen['error']) == (
        True, "Delete the probe's network namespace", 'Cannot remove namespace: Device or resource busy')


CNI = {'cniVersion': '0.3.1', 'name': 'rdma-net', 'type': 'macvlan', 'master': 'eth1', 'mode': 'bridge', 'mtu': 9000,
       'ipam': {'type': 'whereabouts', 'range': '10.247.208.0/23'}}
EXEC = ('-n', 'k8s.io', 'tasks', 'exec', '--exec-id')


def container_node(memlock='unlimited\n', listed=NS + '\n', images='docker.io/library/other:1\n',
                   devices=('rdma_cm', 'uverbs0')):
    return Node({
        ('-n', 'k8s.io', 'containers', 'list', '-q'): [(0, listed, ''), (0, NS + '\n', '')],
        ('-n', 'k8s.io', 'tasks', 'delete', '--force', NS):
            (1, '', 'ctr: no running task found: task %s not found' % NS),
        ('-n', 'k8s.io', 'containers', 'delete', NS): (0, '', ''),
        NETNS_DELETE: (0, '', ''),
        ('-n', 'k8s.io', 'images', 'list', '-q'): (0, images, ''),
        ('-n', 'k8s.io', 'images', 'import', '/var/lib/rdma-test.tar'): (0, 'unpacking ...done\n', ''),
        NEIGH: (0, '[]', ''),
        ('netns', 'add', NS): (0, '', ''),
        ('netns', 'exec', NS, 'sysctl', '-w', 'net.ipv4.ping_group_range=0 2147483647'): (0, '', ''),
        (): (0, '{"cniVersion": "0.3.1"}', ''),  # /opt/cni/bin/macvlan
        ('-n', 'k8s.io', 'run', '--detach', '--null-io', '--with-ns', 'network:/run/netns/' + NS)
        + tuple('--device=/dev/infiniband/' + name for name in devices)
        + ('rdma-test:1', NS, 'setpriv', '--reuid', '1000', '--regid', '1000', '--clear-groups', 'sleep', '600'):
            (0, '', ''),
        EXEC + ('probe1', '--user', '1000:1000', NS, 'ip', '-j', '-4', 'addr', 'show', 'dev', 'net1'):
            (0, addr('10.247.209.254'), ''),
        EXEC + ('probe2', '--user', '1000:1000', NS, 'sh', '-c', 'ulimit -l'): (0, memlock, ''),
        EXEC + ('probe4', '--user', '1000:1000', NS, 'ping', '-I', 'net1', '-n', '-c', '2', '-W', '1',
                '10.247.208.10'): (0, PING_OUT, ''),
    })


def container_args():
    return {'probe': 'container', 'network': NETWORK, 'netns': NS, 'ping_count': 2,
            'ping_timeout': 1, 'image': 'rdma-test:1', 'image_archive': '/var/lib/rdma-test.tar',
            'cni_bin_dir': '/opt/cni/bin', 'cni_config': CNI, 'user': 1000, 'memory_region': 268435456}


class Pingpong:
    """Stands in for `ctr tasks exec ... ibv_rc_pingpong` started with subprocess.Popen."""
    started = []

    def __init__(self, argv, **kwargs):
        Pingpong.started.append(argv)
        self.stdout = io.StringIO(''.join(Pingpong.output))

    def terminate(self):
        pass

    def wait(self, timeout=None):
        return 0


class Entry:
    def __init__(self, name, directory=False):
        self.path, self.directory = '/dev/infiniband/' + name, directory

    def is_dir(self):
        return self.directory


def test_the_container_probe_runs_its_steps_and_reports_each_row(run_module, monkeypatch):
    monkeypatch.setattr(subprocess, 'Popen', Pingpong)
    devices = {'/dev/infiniband': [Entry('uverbs0'), Entry('by-ibdev', True), Entry('rdma_cm')]}
    monkeypatch.setattr(os, 'scandir', lambda directory: iter(devices[directory]))
    Pingpong.started, Pingpong.output = [], ['  local address:  LID 0x0000, QPN 0x000011, PSN 0x1, GID ::\n']
    node = container_node()
    result = run_module('verify_probe', container_args(), node)
    assert result['seen'] == {
        'net1': probe.net1_seen(addr('10.247.209.254'), NETWORK, '1000'),
        'memlock': {'observed': 'ulimit -l unlimited as uid 1000', 'ok': True},
        'memory_region': {'observed': 'ibv_reg_mr of 256 MiB as uid 1000 on /dev/infiniband/rdma_cm, '
                                      '/dev/infiniband/uverbs0: registered (local address:  LID 0x0000, QPN 0x000011, '
                                      'PSN 0x1, GID ::)'},
        'ping': {'observed': '2 packets transmitted, 2 received from 10.247.208.10', 'ok': True}}
    assert Pingpong.started == [[CTR, '-n', 'k8s.io', 'tasks', 'exec', '--exec-id', 'probe3', '--user', '1000:1000',
                                 NS, 'timeout', '15', 'stdbuf', '-oL', 'ibv_rc_pingpong', '-s', '268435456']]
    assert result['changed'] is True  # the image was imported
    # the CNI plugin got the network's configuration with the static IPAM of the probe address
    cni = [kwargs for call, kwargs in zip(node.calls, node.kwargs) if call == ['/opt/cni/bin/macvlan']][0]
    static = {'type': 'static', 'addresses': [{'address': '10.247.209.254/23'}]}
    assert json.loads(cni['data']) == dict(CNI, ipam=static)
    assert cni['environ_update'] == {'CNI_COMMAND': 'ADD', 'CNI_CONTAINERID': NS, 'CNI_NETNS': '/run/netns/' + NS,
                                     'CNI_IFNAME': 'net1', 'CNI_PATH': '/opt/cni/bin'}
    # a container left by an interrupted run is removed first, and the probe's own at the end
    removals = [call[1:] for call in node.calls if 'delete' in call]
    assert removals == [['-n', 'k8s.io', 'tasks', 'delete', '--force', NS],
                        ['-n', 'k8s.io', 'containers', 'delete', NS], list(NETNS_DELETE)] * 2


def test_a_memory_region_not_registered_fails_that_row_and_skips_the_ping(run_module, monkeypatch):
    monkeypatch.setattr(subprocess, 'Popen', Pingpong)
    monkeypatch.setattr(os, 'scandir', lambda directory: iter([Entry('uverbs0'), Entry('rdma_cm')]))
    Pingpong.started, Pingpong.output = [], ["Couldn't register MR\n"]
    node = container_node(memlock='8192\n', listed='', images='rdma-test:1\n')
    result = run_module('verify_probe', container_args(), node)
    assert result['changed'] is False and not [call for call in node.calls if 'import' in call]  # the image is there
    assert result['seen']['memlock'] == {'observed': 'ulimit -l 8192 as uid 1000', 'ok': False}
    assert (result['seen']['step'], result['seen']['error']) == (
        'Register an RDMA memory region in the container', "Couldn't register MR")
    assert 'memory_region' not in result['seen'] and 'ping' not in result['seen']
    Pingpong.output = []
    seen = run_module('verify_probe', container_args(), container_node())['seen']
    assert (seen['step'], seen['error']) == ('Register an RDMA memory region in the container', 'no output')


# Each step of each probe, the command that runs it (the key of its answer; 'probeN' the Nth
# exec in the container, 'run' the container's start), the name the report gives it.
STEPS = [
    ('datapath', NETNS_DELETE, "Delete the probe's network namespace"),
    ('datapath', NEIGH, 'List the neighbours the node knows on the RDMA interface'),
    ('datapath', ('netns', 'add', NS), 'Create the namespace'),
    ('datapath', ('link', 'add', 'ipuk8sverify0', 'link', 'eth1', 'netns', NS, 'type', 'macvlan', 'mode', 'bridge'),
     'Create a macvlan on the RDMA interface inside it'),
    ('datapath', ('-n', NS, 'addr', 'add', '10.247.209.253/23', 'dev', 'ipuk8sverify0'),
     'Give the macvlan the probe address'),
    ('datapath', ('-n', NS, 'link', 'set', 'ipuk8sverify0', 'up'), 'Bring the macvlan up'),
    ('container', ('-n', 'k8s.io', 'containers', 'list', '-q'), 'List the containers of the CRI namespace'),
    ('container', ('-n', 'k8s.io', 'tasks', 'delete', '--force', NS), "Kill and delete the container's task"),
    ('container', ('-n', 'k8s.io', 'containers', 'delete', NS), 'Delete the container'),
    ('container', ('-n', 'k8s.io', 'images', 'list', '-q'), 'List the images of the CRI namespace'),
    ('container', ('-n', 'k8s.io', 'images', 'import', '/var/lib/rdma-test.tar'),
     'Import the image from its archive on the node'),
    ('container', NEIGH, 'List the neighbours the node knows on the RDMA interface'),
    ('container', ('netns', 'add', NS), "Create the container's network namespace"),
    ('container', ('netns', 'exec', NS, 'sysctl', '-w', 'net.ipv4.ping_group_range=0 2147483647'),
     "Let the container's users send echo requests"),
    ('container', (), 'Add net1 with the macvlan CNI plugin'),
    ('container', 'run', 'Start the container in that namespace'),
    ('container', 'probe1', 'Read net1 in the container'),
    ('container', 'probe2', 'Read the locked-memory limit in the container'),
    ('container', 'probe4', 'Ping the V-IPU controller from net1 in the container'),
]


@pytest.mark.parametrize('kind, command, step', STEPS)
def test_a_failing_step_is_named_with_what_it_said(run_module, monkeypatch, kind, command, step):
    monkeypatch.setattr(subprocess, 'Popen', Pingpong)
    monkeypatch.setattr(os, 'scandir', lambda directory: iter([]))
    Pingpong.output = ['  local address:  LID 0x0000\n']
    node = datapath_node() if kind == 'datapath' else container_node(devices=())
    key = next(key for key in node.answers if command == key or (isinstance(command, str) and command in key[2:6]))
    node.answers[key] = (2, 'said on stdout\n', 'said on stderr\n')
    seen = run_module('verify_probe', datapath_args() if kind == 'datapath' else container_args(), node)['seen']
    assert (seen['step'], seen['error']) == (step, 'said on stderr\n said on stdout')


def test_a_step_that_fails_without_a_word_gives_its_exit_status(run_module):
    node = datapath_node()
    node.answers[('netns', 'add', NS)] = (1, '', '')
    seen = run_module('verify_probe', datapath_args(), node)['seen']
    assert (seen['step'], seen['error']) == ('Create the namespace', 'exit status 1')


def test_net1_output_that_is_not_json_names_the_step(run_module, monkeypatch):
    monkeypatch.setattr(os, 'scandir', lambda directory: iter([]))
    node = container_node(devices=())
    node.answers[EXEC + ('probe1', '--user', '1000:1000', NS, 'ip', '-j', '-4', 'addr', 'show', 'dev', 'net1')] = (
        0, '3: net1@if2: <BROADCAST>', '')
    seen = run_module('verify_probe', container_args(), node)['seen']
    assert (seen['step'], seen['error']) == ('Read net1 in the container',
                                             'ip -j addr is not JSON: Extra data: line 1 column 2 (char 1)')


@pytest.mark.parametrize('missing', ['ip', 'ctr'])
def test_a_node_without_ip_or_ctr_is_refused(run_module, missing):
    node = container_node()
    del node.binaries[missing]
    with pytest.raises(ModuleFail, match='Failed to find required executable "%s"' % missing):
        run_module('verify_probe', container_args(), node)


class Captured(Exception):
    pass


def test_the_options_are_the_documented_ones_and_each_probe_requires_its_own(run_module, monkeypatch):
    documented = yaml.safe_load(probe.DOCUMENTATION)
    spec = {}

    def capture(self, argument_spec, **kwargs):
        spec.update(argument_spec=argument_spec, **kwargs)
        raise Captured()

    with monkeypatch.context() as patch:
        patch.setattr(basic.AnsibleModule, '__init__', capture)
        with pytest.raises(Captured):
            load_library_module('verify_probe').main()
    assert spec['argument_spec'] == {
        name: dict(type=doc['type'], **{key: doc[key] for key in ('required', 'default', 'elements', 'choices')
                                         if key in doc})
        for name, doc in documented['options'].items()}
    assert (spec['supports_check_mode'], documented['attributes']['check_mode']['support']) == (False, 'none')
    with pytest.raises(ModuleFail, match='^probe is datapath but all of the following are missing: link$'):
        run_module('verify_probe', {k: v for k, v in datapath_args().items() if k != 'link'}, datapath_node())
    with pytest.raises(ModuleFail, match='^probe is container but all of the following are missing: image, '
                                         'cni_bin_dir, cni_config, user, memory_region$'):
        run_module('verify_probe', dict(datapath_args(), probe='container'), container_node())
    assert run_module('verify_probe', dict(datapath_args(), _ansible_check_mode=True), datapath_node())['skipped']
