# -*- coding: utf-8 -*-
"""Which OpenPGP keys does a file hold, and are they the ones expected? Pure logic, no Ansible.

Reads `gpg --with-colons --show-keys` output: a primary key is a `pub` record, and the
`fpr` record right after it carries its fingerprint (subkeys have `sub` + `fpr` and are
not what a repository's documentation names).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

FINGERPRINT = re.compile(r'^[0-9A-F]{40}$')


def normalise(fingerprint):
    """'9DC8 5822 9FC7 ...' or lower case -> '9DC858229FC7...'."""
    return re.sub(r'\s+', '', fingerprint).upper()


def primary_fingerprints(colons):
    """Fingerprints of the primary keys in `gpg --with-colons --show-keys` output, in order."""
    found = []
    expect_fpr = False
    for line in colons.splitlines():
        fields = line.split(':')
        if fields[0] == 'pub':
            expect_fpr = True
        elif fields[0] == 'fpr' and expect_fpr:
            found.append(fields[9].upper())
            expect_fpr = False
        elif fields[0] in ('sub', 'ssb', 'sec'):
            expect_fpr = fields[0] == 'sec'
    return found


def key_problem(found, expected, what):
    """None when the file holds at least one key and only expected ones; else one sentence."""
    expected = [normalise(f) for f in expected]
    if not found:
        return '%s holds no OpenPGP public key (an error page, or a truncated download?).' % what
    unexpected = [f for f in found if f not in expected]
    if unexpected:
        return '%s holds key %s, not the expected %s.' % (what, ', '.join(unexpected), ' or '.join(expected))
    return None
