# -*- coding: utf-8 -*-
"""Jinja filters of the reset's packet-filter step: the saved iptables rules without the
chains kube-proxy and Calico made, as data for iptables-restore (no shell, no grep).

    "{{ reset_iptables_chain_pattern | iptables_chain_pattern_problem }}"   -> '' or why not
    "{{ saved.stdout | iptables_without_chains(reset_iptables_chain_pattern) }}"
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import re
import shlex

from ansible.errors import AnsibleFilterError

SETTING = 'reset_iptables_chain_pattern'
# Options of an iptables-save rule that name another chain.
TARGET_OPTIONS = ('-j', '--jump', '-g', '--goto')


def iptables_chain_pattern_problem(pattern):
    """'' when pattern is a usable regular expression of chain names, else the refusal."""
    if not isinstance(pattern, str) or not pattern:
        return '%s must be a non-empty regular expression of chain names, e.g. "KUBE-|cali-"; got %r.' % (
            SETTING, pattern)
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        return '%s is not a regular expression (%s): %r. Give chain name prefixes such as "KUBE-|cali-".' % (
            SETTING, error, pattern)
    for builtin in ('INPUT', 'FORWARD', 'OUTPUT', 'PREROUTING', 'POSTROUTING'):
        if compiled.search(builtin):
            return ('%s %r matches the built-in chain %s: the reset would remove every rule of the host. Give '
                    'chain name prefixes such as "KUBE-|cali-".' % (SETTING, pattern, builtin))
    return ''


def _rule_chains(line):
    """The chains an iptables-save rule line names: the one it is in and the one it jumps to."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    chains = [words[1]] if len(words) > 1 else []
    chains += [words[i + 1] for i, word in enumerate(words[:-1]) if word in TARGET_OPTIONS]
    return chains


def iptables_without_chains(saved, pattern):
    """iptables-save output (as the command module returns it, without its last newline)
    minus the declarations of the chains whose name matches pattern (re.search), the rules in
    them and the rules jumping to them; everything else as it was."""
    problem = iptables_chain_pattern_problem(pattern)
    if problem:
        raise AnsibleFilterError(problem)
    matches = re.compile(pattern).search
    kept = []
    for line in (saved or '').splitlines():
        if line.startswith(':') and matches(line[1:].split()[0] if line[1:].split() else ''):
            continue
        if line.startswith(('-A ', '-I ')) and any(matches(chain) for chain in _rule_chains(line)):
            continue
        kept.append(line)
    return '\n'.join(kept)


def ipvs_virtual_servers(content):
    """The virtual service lines (TCP, UDP, SCTP) of /proc/net/ip_vs as slurp returns it (base64)."""
    text = base64.b64decode(content or '').decode('utf-8', 'replace')
    return [line for line in text.splitlines() if line.startswith(('TCP ', 'UDP ', 'SCTP '))]


class FilterModule(object):
    def filters(self):
        return {'iptables_chain_pattern_problem': iptables_chain_pattern_problem,
                'iptables_without_chains': iptables_without_chains,
                'ipvs_virtual_servers': ipvs_virtual_servers}
