#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module kernel_settings: kernel modules and sysctls, now and at boot, in one call."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: kernel_settings
short_description: Load kernel modules and set sysctls now and at boot, judged on the running kernel
description:
  - Loads each module of O(modules) that the kernel has neither loaded (C(/proc/modules)) nor built in
    (C(modules.builtin)), with one C(modprobe -a), and lists each in C(/etc/modules-load.d/NAME.conf).
  - Sets each parameter of O(sysctls) whose running value (C(sysctl -n)) differs, and writes them all,
    one C(name=value) line each, to O(sysctl_file) (the files community.general.modprobe and
    ansible.posix.sysctl write, for every item in one call).
options:
  modules:
    description: Kernel modules, loaded in this order before any sysctl is read (net.bridge.* keys exist
      only once br_netfilter is loaded).
    type: list
    elements: str
    default: []
  sysctls:
    description: Kernel parameters, name to value; values are compared word by word, true/false as 1/0.
    type: dict
    default: {}
  sysctl_file:
    description: The file under C(/etc/sysctl.d/) that holds O(sysctls). Required when O(sysctls) is set.
    type: path
attributes:
  check_mode:
    support: full
    description: Reports what would change; a parameter that cannot be read yet (its module not loaded)
      counts as a change.
  diff_mode:
    support: none
    description: The returned loaded, set and written say what changed.
'''

EXAMPLES = r'''
- name: Load the modules and set the parameters Kubernetes networking needs
  kernel_settings:
    modules: [overlay, br_netfilter]
    sysctls:
      net.bridge.bridge-nf-call-iptables: "1"
      net.ipv4.ip_forward: "1"
    sysctl_file: /etc/sysctl.d/90-ipu-k8s.conf
'''

RETURN = r'''
loaded:
  description: The modules loaded by this call (to be loaded, in check mode).
  returned: always
  type: list
  elements: str
set:
  description: The parameters set by this call, name to new value.
  returned: always
  type: dict
written:
  description: The files written by this call.
  returned: always
  type: list
  elements: str
'''

import os
import platform

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ipu_k8s_files import read, write

MODULES_LOAD_DIR = '/etc/modules-load.d'
PROC_MODULES = '/proc/modules'
MODULES_BUILTIN = '/lib/modules/%s/modules.builtin' % platform.release()


def sysctl_value(value):
    """The value as sysctl prints it: booleans as 1/0, words separated by one space."""
    word = str(value).lower()
    if word in ('true', 'false', 'yes', 'no'):
        return '1' if word in ('true', 'yes') else '0'
    return ' '.join(str(value).split())


def missing_modules(wanted, proc_modules, builtin):
    """The modules of wanted that are neither loaded (/proc/modules text) nor built in (modules.builtin text)."""
    have = {line.split()[0] for line in proc_modules.splitlines() if line.strip()}
    have |= {os.path.basename(line.strip())[:-len('.ko')] for line in builtin.splitlines() if line.strip()}
    have = {name.replace('-', '_') for name in have}
    return [name for name in wanted if name.replace('-', '_') not in have]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            modules=dict(type='list', elements='str', default=[]),
            sysctls=dict(type='dict', default={}),
            sysctl_file=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    result = dict(changed=False, loaded=[], set={}, written=[])
    modules, sysctl_file = module.params['modules'], module.params['sysctl_file']
    sysctls = {name: sysctl_value(value) for name, value in module.params['sysctls'].items()}
    if sysctls and not sysctl_file:
        module.fail_json(msg='sysctl_file is required with sysctls, e.g. sysctl_file: /etc/sysctl.d/90-ipu-k8s.conf')

    result['loaded'] = missing_modules(modules, read(PROC_MODULES) or '', read(MODULES_BUILTIN) or '')
    if result['loaded'] and not module.check_mode:
        modprobe = module.get_bin_path('modprobe', required=True)
        rc, out, err = module.run_command([modprobe, '-a'] + result['loaded'])
        if rc != 0:
            module.fail_json(msg='modprobe -a %s failed: %s' % (' '.join(result['loaded']), err.strip()),
                             rc=rc, stderr=err, **result)
    for name in modules:
        path = os.path.join(MODULES_LOAD_DIR, name + '.conf')
        if name not in (read(path) or '').split():
            result['written'].append(path)
            if not module.check_mode:
                write(module, path, name + '\n')

    sysctl = module.get_bin_path('sysctl', required=True) if sysctls else None
    for name, value in sysctls.items():
        rc, out, err = module.run_command([sysctl, '-n', name])
        if rc == 0 and ' '.join(out.split()) == value:
            continue
        if rc != 0 and not module.check_mode:
            module.fail_json(msg='sysctl cannot read %s: %s' % (name, err.strip()), rc=rc, stderr=err, **result)
        result['set'][name] = value
        if not module.check_mode:
            rc, out, err = module.run_command([sysctl, '-w', '%s=%s' % (name, value)])
            if rc != 0 or err.strip():
                module.fail_json(msg='sysctl -w %s=%s failed: %s' % (name, value, err.strip()), rc=rc,
                                 stderr=err, **result)
    content = ''.join('%s=%s\n' % item for item in sysctls.items())
    if sysctls and read(sysctl_file) != content:
        result['written'].append(sysctl_file)
        if not module.check_mode:
            write(module, sysctl_file, content)
    result['changed'] = bool(result['loaded'] or result['set'] or result['written'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
