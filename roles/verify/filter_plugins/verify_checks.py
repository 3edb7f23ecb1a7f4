# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of verify's checks a run selects, and the SKIP rows of those it does not.

The checks are one list (roles/verify/vars/main.yml, __verify_checks). For one host and
one run (its tags, its skip tags, the opt-ins), verify_plan returns the checks to run on
that host, in list order, and a SKIP row (with the reason) for every check that would
have run on the host had the run selected it. verify_checks_table renders the list as
the README's Markdown table. Tasks only render what these return.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

TAGS = ('verify_node', 'verify_cluster')
# Tags that select every check as well as their own (the play's and the role's tag).
SELECT_ALL = ('all', 'tagged', 'verify')
SCOPES = ('node', 'cluster')
HOSTS = ('k8s_cluster', 'ipu_nodes', 'api')
FIELDS = {'id', 'title', 'scope', 'hosts', 'tags', 'tasks', 'client', 'skip_rows', 'opt_in', 'opt_in_reason'}
REQUIRED = ('id', 'title', 'scope', 'hosts', 'tags', 'tasks')


def _bool(value, name):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', 'yes', 'on', '1'):
        return True
    if text in ('false', 'no', 'off', '0', ''):
        return False
    raise AnsibleFilterError('%s must be true or false, got %r' % (name, value))


def verify_checks_valid(checks):
    """The list itself, after refusing an entry that verify_plan could not run or report.

    One message per mistake, naming the entry, the field and what is allowed.
    """
    checks = list(checks or [])
    seen = set()
    client_seen = None
    for index, check in enumerate(checks):
        where = '__verify_checks[%d] (%s)' % (index, check.get('id', '?') if isinstance(check, dict) else '?')
        if not isinstance(check, dict):
            raise AnsibleFilterError('%s: each check is a mapping, got %r' % (where, check))
        unknown = sorted(set(check) - FIELDS)
        if unknown:
            raise AnsibleFilterError('%s: unknown field(s) %s; allowed: %s' % (where, ', '.join(unknown),
                                                                            ', '.join(sorted(FIELDS))))
        missing = [field for field in REQUIRED if not check.get(field)]
        if missing:
            raise AnsibleFilterError('%s: missing %s' % (where, ', '.join(missing)))
        if check['id'] in seen:
            raise AnsibleFilterError('%s: id %r is used twice; each check needs its own' % (where, check['id']))
        seen.add(check['id'])
        if check['scope'] not in SCOPES:
            raise AnsibleFilterError('%s: scope %r; use one of %s' % (where, check['scope'], ', '.join(SCOPES)))
        if check['hosts'] not in HOSTS:
            raise AnsibleFilterError('%s: hosts %r; use one of %s' % (where, check['hosts'], ', '.join(HOSTS)))
        tags = check['tags']
        if isinstance(tags, str) or not tags or any(tag not in TAGS for tag in tags):
            raise AnsibleFilterError('%s: tags %r; a non-empty list of %s' % (where, tags, ', '.join(TAGS)))
        if not str(check['tasks']).endswith('.yml') or '/' in str(check['tasks']):
            raise AnsibleFilterError('%s: tasks %r; the name of a task file of roles/verify/tasks'
                                     % (where, check['tasks']))
        skip_rows = check.get('skip_rows', [check['title']])
        if isinstance(skip_rows, str) or not isinstance(skip_rows, list):
            raise AnsibleFilterError('%s: skip_rows %r; a list of row titles ([] for none)' % (where, skip_rows))
        if bool(check.get('opt_in')) != bool(check.get('opt_in_reason')):
            raise AnsibleFilterError('%s: opt_in and opt_in_reason go together' % where)
        client = _bool(check.get('client', False), '%s: client' % where)
        if client:
            client_seen = client_seen or check['id']
        elif client_seen:
            # Client checks run in a second pass (another interpreter); rows keep list order
            # only when they come last.
            raise AnsibleFilterError('%s: comes after the client check %r; checks with client: true go last'
                                     % (where, client_seen))
    return checks


def selected_tags(run_tags, skip_tags):
    """The verify tags a run with these ansible_run_tags and ansible_skip_tags selects."""
    run_tags = set(run_tags or [])
    skip_tags = set(skip_tags or [])
    return [tag for tag in TAGS if tag not in skip_tags and run_tags & set(SELECT_ALL + (tag,))]


def applies_to(check, host, groups):
    """Whether the check runs on (or, not selected, is reported for) this host."""
    groups = groups or {}
    if check['hosts'] == 'ipu_nodes':
        return host in (groups.get('ipu_nodes') or [])
    if check['hosts'] == 'api':
        return host == (list(groups.get('control_plane') or []) or [host])[0]
    return True


def verify_plan(checks, host, groups, run_tags, skip_tags, opted_in=None, tag_skip=None):
    """What this host runs and reports as SKIP.

    opted_in: {variable: value} for the checks' opt_in variables.
    tag_skip: {tag: {expected, reason}}, why a check the run did not select is SKIP.
    Returns {selected, tags, run, run_client, skipped}: selected is whether the run selects
    any verify check (no report otherwise); run and run_client the checks to run here, in
    list order, without and with the Kubernetes client; skipped the SKIP rows.
    """
    checks = verify_checks_valid(checks)
    opted_in = opted_in or {}
    tag_skip = tag_skip or {}
    tags = selected_tags(run_tags, skip_tags)
    plan = {'selected': bool(tags), 'tags': tags, 'run': [], 'run_client': [], 'skipped': []}
    if not tags:
        return plan
    for check in checks:
        if not applies_to(check, host, groups):
            continue
        chosen = any(tag in tags for tag in check['tags'])
        opt_in = check.get('opt_in')
        if opt_in and opt_in not in opted_in:
            raise AnsibleFilterError('verify_plan: no value given for %s, the opt-in of check %s' % (opt_in, check['id']))
        allowed = not opt_in or _bool(opted_in[opt_in], opt_in)
        if chosen and allowed:
            plan['run_client' if _bool(check.get('client', False), 'client') else 'run'].append(check)
            continue
        why = tag_skip.get(check['tags'][0]) or {}
        reason = check['opt_in_reason'] if not allowed else why.get('reason') or (
            'not run: the run skipped the tag %s' % check['tags'][0])
        for title in check.get('skip_rows', [check['title']]):
            plan['skipped'].append({'host': host, 'check': str(title), 'expected': str(why.get('expected') or 'selected'),
                                    'observed': str(reason).strip(), 'status': 'SKIP'})
    return plan


def _cell(text):
    return ' '.join(str(text).split()).replace('|', '\\|')


HOSTS_TEXT = {'k8s_cluster': 'every node', 'ipu_nodes': 'IPU nodes', 'api': 'first control-plane host'}


def verify_checks_table(checks, tag_skip=None):
    """The checks as the README's Markdown table (titles already rendered)."""
    checks = verify_checks_valid(checks)
    tag_skip = tag_skip or {}
    lines = ['| Check | Scope | Runs on | Tags | Task file | When the run does not select it |',
             '| --- | --- | --- | --- | --- | --- |']
    for check in checks:
        rows = check.get('skip_rows', [check['title']])
        if not rows:
            when = 'nothing reported (a step of the checks after it)'
        else:
            when = 'SKIP: %s' % (tag_skip.get(check['tags'][0]) or {}).get('reason', 'not run')
        if check.get('opt_in'):
            when += '; opt-in (`%s`), otherwise SKIP: %s' % (check['opt_in'], check['opt_in_reason'])
        lines.append('| %s | %s | %s | %s | `%s` | %s |' % (
            _cell(check['title']), check['scope'], HOSTS_TEXT[check['hosts']],
            ', '.join('`%s`' % tag for tag in check['tags']), check['tasks'], _cell(when)))
    return '\n'.join(lines)


class FilterModule:
    """Filters that select and describe verify's checks."""

    def filters(self):
        return {
            'verify_plan': verify_plan,
            'verify_checks_table': verify_checks_table,
        }
