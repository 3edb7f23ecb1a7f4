# -*- coding: utf-8 -*-
"""Jinja filters of kubeadm init and join: the secrets read from kubeadm's own output, the
message a failed join leaves on every host of the play, and any kubeadm output with the
secrets cut out.

    "{{ __kubeadm_join_command.stdout | kubeadm_join_secrets }}"  -> {endpoint, token, ca_cert_hash}
    "{{ __kubeadm_certificate_key.stdout | kubeadm_certificate_key }}"
    "{{ hostvars | kubeadm_join_failure(ansible_play_hosts_all, inventory_hostname) }}"
    "{{ ansible_failed_result.stderr | kubeadm_redact }}"
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

# kubeadm's formats (cmd/kubeadm/app/apis/bootstraptoken/v1: [a-z0-9]{6}.[a-z0-9]{16};
# a CA pin is sha256:<64 hex>; a certificate key is 32 bytes in hex).
TOKEN = re.compile(r'\b[a-z0-9]{6}\.[a-z0-9]{16}\b')
HEX64 = re.compile(r'\b[a-f0-9]{64}\b')
JOIN = re.compile(r'kubeadm join (?P<endpoint>\S+)')
TOKEN_FLAG = re.compile(r'--token (?P<token>[a-z0-9]{6}\.[a-z0-9]{16})(?!\S)')
CA_FLAG = re.compile(r'--discovery-token-ca-cert-hash (?P<hash>sha256:[a-f0-9]{64})(?!\S)')


def redact(text):
    """text with every bootstrap token and 64-hex secret replaced by <token> / <key>."""
    return HEX64.sub('<key>', TOKEN.sub('<token>', str(text)))


def kubeadm_join_secrets(output):
    """The endpoint, token and CA hash of `kubeadm token create --print-join-command`'s
    output (one line, or the multi-line form with backslash continuations)."""
    found = [JOIN.search(output or ''), TOKEN_FLAG.search(output or ''), CA_FLAG.search(output or '')]
    if not all(found):
        raise AnsibleFilterError('`kubeadm token create --print-join-command` printed no join command with '
                                 'an endpoint, a token and a CA hash: %s' % redact(output).strip())
    return {'endpoint': found[0].group('endpoint'), 'token': found[1].group('token'),
            'ca_cert_hash': found[2].group('hash')}


def kubeadm_certificate_key(output):
    """The certificate key `kubeadm init phase upload-certs --upload-certs` prints last."""
    lines = (output or '').strip().splitlines()
    if not lines or not re.fullmatch(r'[a-f0-9]{64}', lines[-1].strip()):
        raise AnsibleFilterError('`kubeadm init phase upload-certs --upload-certs` printed no certificate key '
                                 'on its last line: %s' % redact(output).strip())
    return lines[-1].strip()


def _said(result):
    said = result.get('stderr') or result.get('msg') or ''
    return ' '.join(redact(said).split())


def kubeadm_join_failure(hostvars, hosts, host):
    """The message of a failed join on `host`: its own failure (the task and what it said),
    or, for a host stopped because another failed (any_errors_fatal puts it in the rescue
    with no failure of its own), which hosts failed and what they said."""
    def failed(name):
        facts = hostvars[name]
        return 'ansible_failed_task' in facts and 'ansible_failed_result' in facts

    advice = ('Fix the cause, then run `kubeadm reset -f` on {0} (or playbooks/reset.yml) '
              'and run the playbook again.')
    if failed(host):
        task = hostvars[host]['ansible_failed_task'].get('name', '?')
        return 'Joining {0} failed in "{1}": {2} {3}'.format(
            host, task, _said(hostvars[host]['ansible_failed_result']), advice.format(host))
    others = [name for name in hosts if name != host and failed(name)]
    if not others:
        return ('Joining {0} stopped because another host of the play failed (the play stops every host on '
                'a failure): see the first failure above.'.format(host))
    return 'Joining {0} stopped because joining {1} failed: {2}'.format(
        host, ' and '.join(others), ' '.join(
            '{0} said in "{1}": {2} {3}'.format(name, hostvars[name]['ansible_failed_task'].get('name', '?'),
                                                _said(hostvars[name]['ansible_failed_result']), advice.format(name))
            for name in others))


class FilterModule(object):
    def filters(self):
        return {'kubeadm_join_secrets': kubeadm_join_secrets, 'kubeadm_certificate_key': kubeadm_certificate_key,
                'kubeadm_join_failure': kubeadm_join_failure, 'kubeadm_redact': redact}
