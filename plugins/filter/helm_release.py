# -*- coding: utf-8 -*-
"""Helm's naming of a release's objects, and what to do with a release an interrupted run
left pending.

helm_fullname(release, chart_name, values): the fullname helper `helm create` writes, as the
ipu-operator charts ("ipu-operator.fullname", which names the webhook Secret), the
network-operator chart ("network-operator.fullname", its operator Deployment) and its Node
Feature Discovery subchart (its master and worker) define it in templates/_helpers.tpl.

Helm marks a release pending-install, pending-upgrade or pending-rollback while it works on
it and refuses any other operation on it until that ends ("another operation
(install/upgrade/rollback) is in progress"). A run killed meanwhile leaves it so for good.
From the release's history (`helm history <name> --output json`):

- nothing pending (or no release): nothing to do;
- a revision that was deployed exists: roll back to the newest one (deployed, else
  superseded, which was deployed before the pending operation began);
- none (an install that never finished): uninstall, and the install that follows starts
  afresh.

The helm arguments that do it follow `helm <action> <release>`: `args`.

    __history.stdout | from_json | helm_release_recovery
    release | helm_fullname('network-operator')
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

PENDING = ('pending-install', 'pending-upgrade', 'pending-rollback')


def _trunc(name):
    """Sprig's trunc 63 | trimSuffix "-"."""
    name = name[:63]
    return name[:-1] if name.endswith('-') else name


def helm_fullname(release, chart_name, values=None):
    """The fullname helper: fullnameOverride, else the release name when it holds the chart's
    name (or nameOverride), else <release>-<name>; cut to 63 characters without a trailing "-"."""
    values = values or {}
    if values.get('fullnameOverride'):
        return _trunc(str(values['fullnameOverride']))
    name = values.get('nameOverride') or chart_name
    if name in release:
        return _trunc(release)
    return _trunc('%s-%s' % (release, name))


def helm_release_recovery(history):
    """{'action': 'none'|'rollback'|'uninstall', 'status': latest status, 'revision': the
    latest revision, 'to_revision': the revision to roll back to (rollback only), 'args': what
    follows `helm <action> <release>` (not for none), 'summary': what is done and why}."""
    entries = sorted(history or [], key=lambda entry: int(entry['revision']))
    if not entries:
        return {'action': 'none', 'status': '', 'revision': 0}
    latest = entries[-1]
    status = latest.get('status', '')
    result = {'action': 'none', 'status': status, 'revision': int(latest['revision'])}
    if status not in PENDING:
        return result
    earlier = entries[:-1]
    interrupted = '%s at revision %d (a run was interrupted during it): ' % (status, result['revision'])
    for wanted in ('deployed', 'superseded'):
        found = [entry for entry in earlier if entry.get('status') == wanted]
        if found:
            target = int(found[-1]['revision'])
            return dict(result, action='rollback', to_revision=target, args=[str(target)],
                        summary=interrupted + 'rolling back to revision %d, the last deployed' % target)
    return dict(result, action='uninstall', args=['--wait'],
                summary=interrupted + 'no revision was ever deployed, so it is uninstalled and installed again')


class FilterModule(object):
    def filters(self):
        return {'helm_fullname': helm_fullname, 'helm_release_recovery': helm_release_recovery}
