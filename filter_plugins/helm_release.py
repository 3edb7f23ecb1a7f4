# -*- coding: utf-8 -*-
"""What to do with a Helm release that an interrupted run left pending.

Helm marks a release pending-install, pending-upgrade or pending-rollback while it works on
it and refuses any other operation on it until that ends ("another operation
(install/upgrade/rollback) is in progress"). A run killed meanwhile leaves it so for good.
From the release's history (`helm history <name> --output json`):

- nothing pending (or no release): nothing to do;
- a revision that was deployed exists: roll back to the newest one (deployed, else
  superseded, which was deployed before the pending operation began);
- none (an install that never finished): uninstall, and the install that follows starts
  afresh.

    __history.stdout | from_json | helm_release_recovery
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

PENDING = ('pending-install', 'pending-upgrade', 'pending-rollback')


def helm_release_recovery(history):
    """{'action': 'none'|'rollback'|'uninstall', 'status': latest status, 'revision': the
    latest revision, 'to_revision': the revision to roll back to (rollback only)}."""
    entries = sorted(history or [], key=lambda entry: int(entry['revision']))
    if not entries:
        return {'action': 'none', 'status': '', 'revision': 0}
    latest = entries[-1]
    status = latest.get('status', '')
    result = {'action': 'none', 'status': status, 'revision': int(latest['revision'])}
    if status not in PENDING:
        return result
    earlier = entries[:-1]
    for wanted in ('deployed', 'superseded'):
        found = [entry for entry in earlier if entry.get('status') == wanted]
        if found:
            return dict(result, action='rollback', to_revision=int(found[-1]['revision']))
    return dict(result, action='uninstall')


class FilterModule(object):
    def filters(self):
        return {'helm_release_recovery': helm_release_recovery}
