#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module apt_keyring: install a repository signing key only when its fingerprint is the expected one."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: apt_keyring
short_description: Write an apt keyring from a downloaded key, only when the key has the expected fingerprint
author: ipu-k8s contributors (!UNKNOWN)
description:
  - Reads the OpenPGP key file O(src) (as downloaded, usually ASCII-armoured) with C(gpg --show-keys) and
    refuses it unless every primary key in it has one of the O(fingerprints) - the values a repository's
    documentation publishes. An unverifiable O(src) is removed (not in check mode, where the refusal
    says nothing was removed), so the next run downloads it again instead of keeping a wrong or truncated file.
  - Writes O(dest) (the file a sources entry names in C(Signed-By)) from the verified key, dearmoured
    (binary) when O(dest) does not end in C(.asc), else as it is. The file is written next to O(dest)
    and renamed over it, so apt never sees a half-written keyring; a keyring whose content differs from
    the verified key (an older key, or a file cut short by an interruption) is rewritten, with mode 0644
    whatever the umask (apt reads keyrings as its unprivileged C(_apt) user).
  - gpg runs with a throwaway home directory; nothing is imported anywhere.
options:
  src:
    description: The key file as downloaded or copied to the node.
    type: path
    required: true
  dest:
    description: The keyring apt uses (C(Signed-By)).
    type: path
    required: true
  fingerprints:
    description:
      - Accepted primary key fingerprints (40 hex digits; spaces and case do not matter).
    type: list
    elements: str
    required: true
  setting:
    description: Name of the variable holding O(fingerprints), for the refusal message.
    type: str
    default: fingerprints
attributes:
  check_mode:
    support: full
    description: Verifies and compares; writes nothing and removes nothing in check mode, where a missing O(src)
      (not fetched in check mode) is reported as a change.
  diff_mode:
    support: none
    description: Keyrings are binary.
requirements:
  - gpg on the node
'''

EXAMPLES = r'''
- name: Download the repository key
  ansible.builtin.get_url:
    url: https://pkgs.k8s.io/core:/stable:/v1.33/deb/Release.key
    dest: /etc/apt/keyrings/kubernetes-apt-keyring.asc
    mode: "0644"

- name: Keyring from that key, only when it is the documented one
  apt_keyring:
    src: /etc/apt/keyrings/kubernetes-apt-keyring.asc
    dest: /etc/apt/keyrings/kubernetes-apt-keyring.gpg
    fingerprints: [DE15B14486CD377B9E876E1A234654DA9A296436]
'''

RETURN = r'''
fingerprints:
  description: Primary key fingerprints found in O(src).
  returned: success
  type: list
  elements: str
  sample: [DE15B14486CD377B9E876E1A234654DA9A296436]
dearmored:
  description: Whether O(dest) is the dearmoured (binary) form.
  returned: success
  type: bool
'''

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_files import read, write
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_gpg import FINGERPRINT, key_problem, normalise, primary_fingerprints


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type='path', required=True),
            dest=dict(type='path', required=True),
            fingerprints=dict(type='list', elements='str', required=True),
            setting=dict(type='str', default='fingerprints'),
        ),
        supports_check_mode=True,
    )
    src, dest, setting = module.params['src'], module.params['dest'], module.params['setting']
    dearmor = not dest.endswith('.asc')
    expected = [normalise(f) for f in module.params['fingerprints']]
    bad = [f for f in expected if not FINGERPRINT.match(f)]
    if not expected or bad:
        module.fail_json(msg='%s must list 40-hex-digit key fingerprints (it is %s); use the value the '
                             'repository documents.' % (setting, module.params['fingerprints']))
    if not os.path.exists(src):
        if module.check_mode:  # a key that would have been fetched would be checked and written
            module.exit_json(changed=True, fingerprints=[], dearmored=dearmor)
        module.fail_json(msg='%s does not exist: download or copy the repository key there first.' % src)
    gpg = module.get_bin_path('gpg', required=True)
    home = tempfile.mkdtemp(prefix='apt-keyring-')
    try:
        env = {'GNUPGHOME': home, 'LC_ALL': 'C'}
        rc, out, err = module.run_command([gpg, '--batch', '--with-colons', '--show-keys', src], environ_update=env)
        found = primary_fingerprints(out) if rc == 0 else []
        problem = key_problem(found, expected, src)
        if problem:
            if not module.check_mode:
                os.remove(src)
            module.fail_json(msg='%s%s If the repository rotated its key, set %s to the new fingerprint it '
                                 'publishes.' % (problem, '' if module.check_mode else
                                                 ' It was removed so the next run fetches it again.', setting),
                             fingerprints=found, stderr=err)
        keyring = os.path.join(home, 'keyring.gpg') if dearmor else src
        if dearmor:
            rc, out, err = module.run_command([gpg, '--batch', '--yes', '--dearmor', '--output', keyring, src],
                                              environ_update=env)
            if rc != 0:
                module.fail_json(msg='gpg --dearmor %s failed: %s' % (src, err.strip()), rc=rc, stderr=err)
        wanted = read(keyring, binary=True)
        changed = read(dest, binary=True) != wanted
        if changed and not module.check_mode:
            write(module, dest, wanted)
        module.exit_json(changed=changed, fingerprints=found, dearmored=dearmor)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == '__main__':
    main()
