# -*- coding: utf-8 -*-
"""A node's files as the project's modules read and write them. No Ansible import: the
module passed to write() does the rename (AnsibleModule.atomic_move)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import tempfile


def read(path, binary=False):
    """The text (bytes when binary) of path; None when there is no such file."""
    try:
        with open(path, 'rb' if binary else 'r') as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write(module, path, content):
    """Write content (text or bytes) next to path and rename it over path, so no reader ever
    sees half a file; mode 0644 whatever the umask or the old file's mode."""
    handle, staged = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=os.path.dirname(path) or '.')
    with os.fdopen(handle, 'wb' if isinstance(content, bytes) else 'w') as staged_file:
        staged_file.write(content)
        staged_file.flush()
        os.fsync(staged_file.fileno())
    module.atomic_move(staged, path)
    os.chmod(path, 0o644)
