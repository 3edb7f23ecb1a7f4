#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module systemd_unit_freshness: is a running service older than its configuration?"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: systemd_unit_freshness
short_description: Tell whether a running systemd service started before its configuration last changed
author: ipu-k8s contributors (!UNKNOWN)
description:
  - Reads when the unit's main process started (C(ExecMainStartTimestampMonotonic)) and compares it with
    the modification time of each configuration file in O(paths). A service whose process is older than
    one of its files still runs with what it read before; it needs a restart, whatever happened to the
    handler that was meant to do it (an interrupted or failed run loses notified handlers).
  - Also reports a restart when systemd says unit files or drop-ins changed on disk
    (C(NeedDaemonReload=yes)), e.g. a new C(LimitMEMLOCK) drop-in.
  - A unit that is not installed, or not running, needs no restart (it reads its files when it starts).
  - With several names, the first one that is installed is examined (e.g. C([k3s, k3s-agent, containerd])
    picks the container runtime service the node has).
  - Also returns the current text of the files in O(read), so a caller writes only what differs.
  - Changes nothing. Register the result and use C(changed_when) and C(notify) on the restart_needed value.
options:
  name:
    description:
      - Unit name(s) without C(.service). The first one installed is examined; the last one when none is
        (list the usual unit last).
    type: list
    elements: str
    required: true
  paths:
    description: Configuration files the service reads when it starts. Missing files are ignored.
    type: list
    elements: str
    default: []
  read:
    description: Files whose current text is returned in RV(contents). Missing files are left out.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same way in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
notes:
  - The process start time is converted to wall-clock time with both clocks read at once; a wall clock
    stepped back between a file's write and the service's start can hide a needed restart.
'''

EXAMPLES = r'''
- name: Find out whether the running containerd predates its configuration
  systemd_unit_freshness:
    name: containerd
    paths:
      - /etc/containerd/config.toml
      - /etc/systemd/system/containerd.service.d/ipu-k8s-memlock.conf
  register: containerd_freshness
  changed_when: containerd_freshness.restart_needed
  notify: Restart containerd

- name: The container runtime service of this node (K3s embeds containerd), and the files to compare with
  systemd_unit_freshness:
    name: [k3s, k3s-agent, containerd]
    read: [/etc/containerd/config.toml]
  register: runtime
'''

RETURN = r'''
unit:
  description: The unit examined (the first of O(name) that is installed; the last name when none is).
  returned: always
  type: str
  sample: containerd
loaded:
  description: Whether that unit is installed (LoadState=loaded).
  returned: always
  type: bool
enabled:
  description: Whether that unit is enabled (UnitFileState=enabled).
  returned: always
  type: bool
running:
  description: Whether a main process exists (active, activating, reloading or deactivating).
  returned: always
  type: bool
main_pid:
  description: Main process id (0 when none).
  returned: always
  type: int
started:
  description: When the main process started, ISO 8601 UTC; empty when not running.
  returned: always
  type: str
  sample: "2026-11-23T17:34:35+00:00"
restart_needed:
  description: True when the running process is older than one of O(paths) or systemd needs a daemon-reload.
  returned: always
  type: bool
reasons:
  description: One sentence per finding.
  returned: always
  type: list
  elements: str
newer_paths:
  description: The files changed after the process started.
  returned: always
  type: list
  elements: str
contents:
  description: The text of each existing file of O(read), path to text.
  returned: always
  type: dict
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_files import read
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_systemd import SHOW_PROPERTIES, first_loaded, freshness, parse_show


def show(module, systemctl, unit):
    rc, out, err = module.run_command(
        [systemctl, 'show', unit + '.service', '--property=' + ','.join(SHOW_PROPERTIES)])
    if rc != 0:
        module.fail_json(msg='systemctl show %s.service failed: %s' % (unit, (err or out).strip()), rc=rc, stderr=err)
    return parse_show(out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='list', elements='str', required=True),
            paths=dict(type='list', elements='str', default=[]),
            read=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    names = module.params['name']
    if not names:
        module.fail_json(msg='name must list at least one unit, e.g. name: containerd')
    systemctl = module.get_bin_path('systemctl', required=True)
    candidates = [(unit, show(module, systemctl, unit)) for unit in names]
    unit = first_loaded(candidates) or names[-1]
    properties = dict(candidates)[unit]
    mtimes = {path: os.stat(path).st_mtime for path in module.params['paths'] if os.path.exists(path)}
    # Both clocks read together, as close to each other as Python allows.
    now_monotonic = time.clock_gettime(time.CLOCK_MONOTONIC)
    now_realtime = time.time()
    result = freshness(unit, properties, mtimes, now_realtime, now_monotonic)
    contents = {path: read(path) for path in module.params['read']}
    contents = {path: text for path, text in contents.items() if text is not None}
    module.exit_json(changed=False, unit=unit, contents=contents, **result)


if __name__ == '__main__':
    main()
