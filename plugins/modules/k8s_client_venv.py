#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module k8s_client_venv: a virtualenv holding the pinned Python Kubernetes client.

Why not ansible.builtin.pip: with a requirements file or extra_args it answers check mode with
changed=True before looking at the virtualenv (ansible-core 2.19.14, lib/ansible/modules/pip.py
lines 818-820), and pip takes sha256 hashes only from a requirements file, with --require-hashes;
so every check run of every API layer would report the client changed on a converged host
(tests/integration/test_k8s_client.py, test_the_bundled_pip_module_reports_a_converged_hash_locked_
virtualenv_changed_in_check_mode). Nor does it return the versions installed or whether the
client is there (RV(ready), which lets the layers skip their API tasks in a check run on a host
without the virtualenv). No collection in the pinned ansible package does either.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: k8s_client_venv
short_description: Keep a virtualenv with pinned Python packages (the Kubernetes client) on a host
author: ipu-k8s contributors (!UNKNOWN)
description:
  - Creates the virtualenv O(path) with C(python -m venv) when its interpreter is missing, reads the
    versions installed in it, and runs C(pip install) with the pinned O(requirements) only when one
    of them is missing or at another version. A second run changes nothing.
  - Packages come from PyPI (or O(index_url)), or, when O(wheel_dir) is set, only from that
    directory on the host (C(pip --no-index --find-links)), for sites without internet access.
  - Independent of the distribution's packages (Ubuntu 22.04's C(python3-kubernetes) is 12.0.1);
    the virtualenv does not see the system site-packages.
  - In check mode a virtualenv that does not exist yet is reported as a change, with RV(ready) false.
options:
  path:
    description: Directory of the virtualenv.
    type: path
    required: true
  requirements:
    description:
      - Exact pins, C(name==version) each, optionally followed by C(--hash=sha256:<hex>) options
        (pip's requirements-file form). Anything else is refused, so that the installed set is known
        and a rerun is a no-op.
      - When one requirement carries hashes, every one must, and pip installs with
        C(--require-hashes) from a requirements file; a file whose sha256 is not listed, or a
        dependency that is not in the list, stops the install.
    type: list
    elements: str
    required: true
  base_python:
    description:
      - The system python that creates the virtualenv (C(-m venv)). On Debian and Ubuntu its
        venv module comes with the C(python3-venv) package.
    type: path
    default: /usr/bin/python3
  wheel_dir:
    description: Directory on the host with the wheels; empty installs from the package index.
    type: path
    default: ""
  index_url:
    description:
      - Package index to install from when O(wheel_dir) is empty; empty is pip's default (PyPI).
      - A mirror URL may carry credentials (C(https://user:token@host/simple)), so the value is no_log, pip
        gets it through its environment (C(PIP_INDEX_URL)), never its command line, and messages show it
        without its user, password, query and fragment.
    type: str
    default: ""
  pip_timeout:
    description: Seconds pip waits on one network operation.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Reads the virtualenv and reports what would be created or installed.
  diff_mode:
    support: none
    description: No diff; RV(missing) lists what would be installed.
'''

EXAMPLES = r'''
- name: Keep the Kubernetes client virtualenv
  k8s_client_venv:
    path: /opt/ipu-k8s/kubernetes-client
    requirements: [kubernetes==33.1.0, PyYAML==6.0.3, jsonpatch==1.33, requests-oauthlib==2.0.0]
  register: client

- name: Use it as the interpreter of a kubernetes.core task
  kubernetes.core.k8s_info:
    kind: Namespace
  vars:
    ansible_python_interpreter: "{{ client.python }}"
'''

RETURN = r'''
python:
  description: The virtualenv's interpreter (for C(ansible_python_interpreter)).
  returned: always
  type: str
  sample: /opt/ipu-k8s/kubernetes-client/bin/python3
ready:
  description:
    - Whether RV(python) exists and has the C(kubernetes) package. Always true after a run
      outside check mode; false in check mode when the virtualenv does not exist yet.
  returned: always
  type: bool
installed:
  description: Version of each pinned distribution found in the virtualenv at the end (null when absent).
  returned: always
  type: dict
  sample: {kubernetes: 33.1.0, PyYAML: 6.0.3}
missing:
  description: The pins that were (or in check mode would be) installed.
  returned: always
  type: list
  elements: str
created:
  description: Whether the virtualenv was (or in check mode would be) created.
  returned: always
  type: bool
hashes_checked:
  description: Whether the requirements carry sha256 hashes, so that pip installs only files with those digests.
  returned: always
  type: bool
'''

import json
import os
import re
from urllib.parse import urlsplit, urlunsplit

from ansible.module_utils.basic import AnsibleModule

# Prints {normalised distribution name: version} of everything installed in the interpreter.
PROBE = (
    "import importlib.metadata as m, json, re\n"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version"
    " for d in m.distributions() if d.metadata['Name']}))"
)

PIN = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9][A-Za-z0-9.+!_-]*)'
                 r'((?:\s+--hash=sha256:[0-9a-f]{64})*)\s*$')
HASH = re.compile(r'--hash=sha256:([0-9a-f]{64})')


def normalise(name):
    """PEP 503 name: case and runs of -_. do not matter."""
    return re.sub(r'[-_.]+', '-', name).lower()


def parse_requirements(requirements):
    """([(name, version)], {name: [sha256, ...]}) of 'name==version [--hash=sha256:HEX ...]'
    strings; ValueError naming the first other one, or the first pin without hashes when
    some have them."""
    pins, hashes = [], {}
    for requirement in requirements:
        match = PIN.match(requirement)
        if not match:
            shown = requirement if len(requirement) < 120 else requirement[:117] + '...'
            raise ValueError(
                "requirement %r is not an exact pin: write it as name==version (for example "
                "kubernetes==33.1.0), optionally with --hash=sha256:<64 hex digits> options, so that every "
                "host gets the same client and a rerun changes nothing" % shown)
        pins.append((match.group(1), match.group(2)))
        found = HASH.findall(match.group(3))
        if found:
            hashes[match.group(1)] = found
    unhashed = [name for name, _version in pins if name not in hashes]
    if hashes and unhashed:
        raise ValueError('%s carry sha256 hashes but %s do not: pip checks either every package or none '
                         '(--require-hashes); give every pin its hashes (scripts/lock-k8s-client writes them)'
                         % (', '.join(sorted(hashes)), ', '.join(unhashed)))
    return pins, hashes


def requirements_text(pins, hashes):
    """A pip requirements file of the pins, each with its hashes."""
    return ''.join('%s==%s%s\n' % (name, version, ''.join(' --hash=sha256:%s' % h for h in hashes.get(name, [])))
                   for name, version in pins)


def unmet(pins, installed):
    """The pins (as 'name==version') the installed {normalised name: version} does not satisfy."""
    return ['%s==%s' % (name, version) for name, version in pins
            if installed.get(normalise(name)) != version]


def source_args(wheel_dir):
    """pip arguments that choose where packages come from: the wheel directory alone, when one is given."""
    if wheel_dir:
        return ['--no-index', '--find-links', wheel_dir]
    return []


def source_environment(wheel_dir, index_url):
    """The environment that hands pip the package index: through PIP_INDEX_URL, not its command line,
    which any user of the host can read and which results and errors show."""
    if index_url and not wheel_dir:
        return {'PIP_INDEX_URL': index_url}
    return {}


def shown_url(url):
    """A URL as messages show it: scheme, host, port and path, without user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition('@')[2]
    return urlunsplit((parts.scheme, host, parts.path, '', ''))


def pip_command(python, pins, wheel_dir='', timeout=60, requirements_file=None):
    """pip install of the pins; with requirements_file (the pins with their hashes), from that
    file in --require-hashes mode."""
    return ([python, '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input',
             '--timeout', str(timeout)]
            + source_args(wheel_dir)
            + (['--require-hashes', '-r', requirements_file] if requirements_file
               else ['%s==%s' % pin for pin in pins]))


def report(pins, installed):
    return {name: installed.get(normalise(name)) for name, _version in pins}


def probe(module, python):
    rc, out, err = module.run_command([python, '-I', '-c', PROBE])
    if rc != 0:
        module.fail_json(msg='%s cannot list its installed packages (rc %d): %s. Remove the virtualenv '
                             '%s so that the next run creates it afresh.'
                             % (python, rc, (err or out).strip(), module.params['path']),
                         rc=rc, stdout=out, stderr=err)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        module.fail_json(msg='%s printed no package list: %r' % (python, out))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            requirements=dict(type='list', elements='str', required=True),
            base_python=dict(type='path', default='/usr/bin/python3'),
            wheel_dir=dict(type='path', default=''),
            index_url=dict(type='str', default='', no_log=True),
            pip_timeout=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    wheel_dir = module.params['wheel_dir'] or ''
    try:
        pins, hashes = parse_requirements(module.params['requirements'])
    except ValueError as error:
        module.fail_json(msg='ipu_k8s_client_requirements: %s' % error)
    pinned = ['%s==%s' % pin for pin in pins]
    if not any(normalise(name) == 'kubernetes' for name, _version in pins):
        module.fail_json(msg='ipu_k8s_client_requirements %s pins no kubernetes==<version>: the '
                             'kubernetes.core modules import that client; add it.' % ' '.join(pinned))
    if wheel_dir and not os.path.isdir(wheel_dir):
        module.fail_json(msg='ipu_k8s_client_wheel_dir %s is not a directory on %s: copy the wheels there '
                             '(%s), or leave it empty to install from the package index.'
                             % (wheel_dir, os.uname()[1],
                                'pip download --require-hashes -r roles/ipu_k8s/files/kubernetes-client.lock'
                                if hashes else 'pip download ' + ' '.join(pinned)))

    python = os.path.join(path, 'bin', 'python3')
    created = not os.path.exists(python)
    if created and not module.check_mode:
        base_python = module.params['base_python']
        rc, out, err = module.run_command([base_python, '-m', 'venv', path])
        if rc != 0:
            module.fail_json(msg='%s -m venv %s failed (rc %d): %s. On Debian and Ubuntu the venv module '
                                 'comes with the python3-venv package.' % (base_python, path, rc, (err or out).strip()),
                             rc=rc, stdout=out, stderr=err)

    # In check mode a virtualenv that does not exist yet has nothing installed.
    installed = {} if created and module.check_mode else probe(module, python)
    missing = unmet(pins, installed)
    if missing and not module.check_mode:
        requirements_file = None
        if hashes:
            requirements_file = os.path.join(module.tmpdir, 'requirements.txt')
            with open(requirements_file, 'w') as handle:
                handle.write(requirements_text(pins, hashes))
        index_url = module.params['index_url']
        command = pip_command(python, pins, wheel_dir, module.params['pip_timeout'], requirements_file)
        rc, out, err = module.run_command(command, environ_update=source_environment(wheel_dir, index_url))
        if rc != 0:
            source = wheel_dir and 'the wheels in %s' % wheel_dir or index_url and shown_url(index_url) or 'PyPI'
            module.fail_json(msg='Installing %s into %s from %s failed (rc %d): %s'
                                 % (' '.join(missing), path, source, rc, (err or out).strip()[-2000:]),
                             rc=rc, stdout=out, stderr=err, cmd=command)
        installed = probe(module, python)
        still = unmet(pins, installed)
        if still:
            module.fail_json(msg='pip install ended, yet %s still lacks %s (found %s)'
                                 % (path, ' '.join(still), report(pins, installed)))
    module.exit_json(changed=created or bool(missing), python=python, ready='kubernetes' in installed,
                     created=created, missing=missing, installed=report(pins, installed), hashes_checked=bool(hashes))


if __name__ == '__main__':
    main()
