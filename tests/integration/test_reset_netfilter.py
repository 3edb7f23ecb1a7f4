"""The reset's packet-filter step, run for real: playbooks/reset.yml (tag reset_netfilter)
inside a network namespace this test makes, holding the chains kube-proxy and Calico leave
(KUBE-*, cali-*, with the jumps to them) beside a site's own rule. Read back with the real
iptables-save of the namespace."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns_lab import local_host, run_playbook  # noqa: E402

CLUSTER_RULES = [
    ['iptables', '-N', 'KUBE-SERVICES'], ['iptables', '-A', 'KUBE-SERVICES', '-j', 'RETURN'],
    ['iptables', '-A', 'FORWARD', '-m', 'comment', '--comment', 'kubernetes forwarding rules', '-j', 'KUBE-SERVICES'],
    ['iptables', '-N', 'cali-INPUT'], ['iptables', '-A', 'INPUT', '-j', 'cali-INPUT'],
    ['iptables', '-t', 'nat', '-N', 'KUBE-POSTROUTING'],
    ['iptables', '-t', 'nat', '-A', 'POSTROUTING', '-j', 'KUBE-POSTROUTING'],
    ['ip6tables', '-N', 'cali-FORWARD'], ['ip6tables', '-A', 'FORWARD', '-j', 'cali-FORWARD'],
]
SITE_RULE = ['iptables', '-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']


@pytest.fixture
def node(netns_factory):
    namespace = netns_factory('reset')
    for argv in CLUSTER_RULES + [SITE_RULE]:
        namespace.run(argv)
    return namespace


def rules(namespace, tool='iptables-save'):
    """The namespace's chains and rules (iptables-save without comments, counters, COMMIT)."""
    text = namespace.run([tool], capture_output=True, text=True).stdout
    return [line.split(' [')[0] for line in text.splitlines() if line.startswith((':', '-A'))]


def reset(node, tmp_path, **extra):
    inventory = {'all': {'hosts': {'node': local_host()},
                         'children': {'k8s_cluster': {'children': {'control_plane': {'hosts': {'node': None}}}}}}}
    extra = dict({'reset_confirm': True, 'reset_interfaces': [], 'ansible_become': False}, **extra)
    args = ['--tags', 'reset_netfilter'] + [a for k, v in extra.items() for a in ('-e', '%s=%s' % (k, v))]
    return run_playbook(node, Path(__file__).resolve().parents[2] / 'playbooks' / 'reset.yml', inventory, tmp_path, cmdline=args)


def test_only_the_site_rule_remains(node, tmp_path):
    result = reset(node, tmp_path)
    assert result.rc == 0, result.stdout[-3000:]
    assert rules(node) == [':INPUT ACCEPT', ':FORWARD ACCEPT', ':OUTPUT ACCEPT',
                           '-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT',
                           ':PREROUTING ACCEPT', ':INPUT ACCEPT', ':OUTPUT ACCEPT', ':POSTROUTING ACCEPT']
    assert rules(node, 'ip6tables-save') == [':INPUT ACCEPT', ':FORWARD ACCEPT', ':OUTPUT ACCEPT']
    again = reset(node, tmp_path)
    assert again.rc == 0 and sum(s['changed'] for s in again.stats.values()) == 0, again.stdout[-3000:]


def test_shell_text_in_the_pattern_runs_nothing(node, tmp_path):
    marker = tmp_path / 'injected'
    result = reset(node, tmp_path, reset_iptables_chain_pattern="KUBE-|' ; touch %s ; echo '" % marker)
    assert not marker.exists(), result.stdout[-3000:]
    # the pattern is a regular expression: its first branch matches the KUBE- chains
    assert result.rc == 0, result.stdout[-3000:]
    assert not [rule for rule in rules(node) if 'KUBE-' in rule]
    assert '-A INPUT -j cali-INPUT' in rules(node)


def test_a_pattern_matching_builtin_chains_is_refused_before_anything_changes(node, tmp_path):
    before = rules(node)
    result = reset(node, tmp_path, reset_iptables_chain_pattern='.*')
    assert result.rc != 0
    assert "reset_iptables_chain_pattern '.*' matches the built-in chain INPUT" in ' '.join(result.failures().values())
    assert rules(node) == before
