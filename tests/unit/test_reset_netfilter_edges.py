"""plugins/filter/reset_netfilter.py at its edges: each refusal's whole message
(the setting, the value and the fix), every built-in chain guarded, `-I` rules, rule lines
shlex cannot split and declaration or rule lines with too few words."""
import importlib.util
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / 'plugins' / 'filter' / 'reset_netfilter.py'
_spec = importlib.util.spec_from_file_location('reset_netfilter', PLUGIN)
netfilter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(netfilter)

FIX = 'Give chain name prefixes such as "KUBE-|cali-".'


@pytest.mark.parametrize('chain', ['INPUT', 'FORWARD', 'OUTPUT', 'PREROUTING', 'POSTROUTING'])
def test_a_pattern_matching_any_built_in_chain_is_refused_naming_it(chain):
    pattern = '^%s$' % chain
    assert netfilter.iptables_chain_pattern_problem(pattern) == (
        "reset_iptables_chain_pattern '^%s$' matches the built-in chain %s: the reset would remove every "
        'rule of the host. %s' % (chain, chain, FIX))


@pytest.mark.parametrize('pattern, shown', [('', "''"), (None, 'None'), (5, '5'), (['KUBE-'], "['KUBE-']")])
def test_an_empty_or_non_text_pattern_is_refused(pattern, shown):
    assert netfilter.iptables_chain_pattern_problem(pattern) == (
        'reset_iptables_chain_pattern must be a non-empty regular expression of chain names, '
        'e.g. "KUBE-|cali-"; got %s.' % shown)


def test_a_pattern_that_is_no_regular_expression_is_refused_with_pythons_reason():
    # the reason as Python 3's re module words it for this text
    assert netfilter.iptables_chain_pattern_problem('(KUBE-') == (
        "reset_iptables_chain_pattern is not a regular expression (missing ), unterminated subpattern at "
        "position 0): '(KUBE-'. " + FIX)


def test_no_saved_rules_give_no_rules():
    assert netfilter.iptables_without_chains(None, 'KUBE-') == ''
    assert netfilter.iptables_without_chains('', 'KUBE-') == ''


def test_inserted_rules_in_or_jumping_to_cluster_chains_go_too():
    saved = '\n'.join(['*filter', ':INPUT ACCEPT [0:0]', '-I INPUT 1 -j KUBE-FIREWALL',
                       '-I KUBE-FIREWALL 1 -j DROP', '-I INPUT 2 -j ACCEPT', 'COMMIT'])
    assert netfilter.iptables_without_chains(saved, 'KUBE-') == '\n'.join(
        ['*filter', ':INPUT ACCEPT [0:0]', '-I INPUT 2 -j ACCEPT', 'COMMIT'])


def test_a_rule_shlex_cannot_split_is_read_word_by_word():
    saved = '\n'.join(['-A KUBE-SERVICES -m comment --comment "unbalanced -j RETURN',
                       '-A INPUT -m comment --comment "unbalanced -j ACCEPT'])
    assert netfilter.iptables_without_chains(saved, 'KUBE-') == '-A INPUT -m comment --comment "unbalanced -j ACCEPT'


def test_short_lines_are_read_by_the_words_they_have():
    # a rule naming only its chain goes with the chain; '-A ' and a bare ':' name no chain
    saved = '\n'.join(['-A KUBE-SERVICES', '-A ', ':', ':X', ':X - [0:0]'])
    assert netfilter.iptables_without_chains(saved, 'X|KUBE-') == '\n'.join(['-A ', ':'])
    assert netfilter.iptables_without_chains(':', 'XX') == ':'
