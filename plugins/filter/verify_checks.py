# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify's checks: which a run selects, and the rows of the report.

The checks are one list, each declaring its rows (roles/verify/vars/main.yml, __verify_checks,
which documents the fields and the observations a check registers). verify_plan chooses
what a host runs, verify_rows makes its PASS/FAIL/SKIP rows in list order, and
verify_checks_table renders the list as docs/verify.md's Markdown table.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

TAGS = ('verify_node', 'verify_cluster')
# Tags that select every check as well as their own (the play's and the role's tag).
SELECT_ALL = ('all', 'tagged', 'verify')
SCOPES = ('node', 'cluster')
# Where a check runs, and how docs/verify.md's table says it.
HOSTS = {'k8s_cluster': 'every node', 'ipu_nodes': 'IPU nodes', 'control_plane': 'control-plane hosts',
         'api': 'first control-plane host'}
FIELDS = {'id', 'title', 'scope', 'hosts', 'tags', 'tasks', 'client', 'expected', 'rows', 'prerequisite',
          'check_mode', 'opt_in', 'opt_in_reason', 'one_reading'}
REQUIRED = ('id', 'title', 'scope', 'hosts', 'tags', 'tasks')
# What a check is unless it says otherwise: it reads the IPU node it runs on; with client:
# true, it reads the API through the client of the first control-plane host.
NODE_CHECK = {'scope': 'node', 'hosts': 'ipu_nodes', 'tags': ['verify_node']}
CLIENT_CHECK = {'scope': 'cluster', 'hosts': 'api', 'tags': ['verify_cluster']}
ROW_FIELDS = {'id', 'title', 'expected'}
# Keys of a check's observations that are not rows.
RESERVED = ('skip', 'error', 'step')
OBSERVATION_FIELDS = {'observed', 'ok', 'skip', 'expected', 'title', 'host'}
NOT_REPORTED = 'nothing reported (a step of the checks after it)'


def _bool(value, name):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', 'yes', 'on', '1'):
        return True
    if text in ('false', 'no', 'off', '0', 'none', ''):
        return False
    raise AnsibleFilterError('%s must be true or false, got %r' % (name, value))


def check_rows(check):
    """The rows a check declares: its rows, else one row {id, title, expected} of its own."""
    if 'rows' in check:
        return list(check['rows'] or [])
    return [{'id': check['id'], 'title': check['title'], 'expected': check['expected']}]


def _valid_rows(check, where):
    rows = check.get('rows', [])
    if not isinstance(rows, list):
        raise AnsibleFilterError('%s: rows %r; a list of {id, title, expected} ([] for none)' % (where, rows))
    if 'rows' in check and 'expected' in check:
        raise AnsibleFilterError('%s: expected belongs to each of its rows when it has rows' % where)
    if 'rows' not in check and not check.get('expected'):
        raise AnsibleFilterError('%s: missing expected (what its one row expects), or rows' % where)
    seen = set()
    for row in check_rows(check):
        if not isinstance(row, dict) or set(row) - ROW_FIELDS or not all(row.get(f) for f in ROW_FIELDS):
            raise AnsibleFilterError('%s: row %r; each row is {id, title, expected}' % (where, row))
        if row['id'] in seen or row['id'] in RESERVED:
            raise AnsibleFilterError('%s: row id %r is used twice or reserved (%s)'
                                     % (where, row['id'], ', '.join(RESERVED)))
        seen.add(row['id'])


def verify_checks_valid(checks):
    """The list itself, after refusing an entry that could not be run or reported.

    One message per mistake, naming the entry, the field and what is allowed.
    """
    checks = list(checks or [])
    seen = set()
    client_seen = None
    for index, check in enumerate(checks):
        where = '__verify_checks[%d] (%s)' % (index, check.get('id', '?') if isinstance(check, dict) else '?')
        if not isinstance(check, dict):
            raise AnsibleFilterError('%s: each check is a mapping, got %r' % (where, check))
        client = _bool(check.get('client'), '%s: client' % where)
        check = checks[index] = dict(CLIENT_CHECK if client else NODE_CHECK, **check)
        unknown = sorted(set(check) - FIELDS)
        if unknown:
            raise AnsibleFilterError('%s: unknown field(s) %s; allowed: %s'
                                     % (where, ', '.join(unknown), ', '.join(sorted(FIELDS))))
        missing = [field for field in REQUIRED if not check.get(field)]
        if missing:
            raise AnsibleFilterError('%s: missing %s' % (where, ', '.join(missing)))
        if check['id'] in seen:
            raise AnsibleFilterError('%s: id %r is used twice; each check needs its own' % (where, check['id']))
        seen.add(check['id'])
        if check['scope'] not in SCOPES:
            raise AnsibleFilterError('%s: scope %r; use one of %s' % (where, check['scope'], ', '.join(SCOPES)))
        if check['hosts'] not in tuple(HOSTS):
            raise AnsibleFilterError('%s: hosts %r; use one of %s' % (where, check['hosts'], ', '.join(HOSTS)))
        tags = check['tags']
        if isinstance(tags, str) or not tags or any(tag not in TAGS for tag in tags):
            raise AnsibleFilterError('%s: tags %r; a non-empty list of %s' % (where, tags, ', '.join(TAGS)))
        if not str(check['tasks']).endswith('.yml') or '/' in str(check['tasks']):
            raise AnsibleFilterError('%s: tasks %r; the name of a task file of roles/verify/tasks'
                                     % (where, check['tasks']))
        _valid_rows(check, where)
        if bool(check.get('opt_in')) != bool(check.get('opt_in_reason')):
            raise AnsibleFilterError('%s: opt_in and opt_in_reason go together' % where)
        if client:
            client_seen = client_seen or check['id']
        elif client_seen:
            # Client checks run in a second pass (another interpreter), after the client check.
            raise AnsibleFilterError('%s: comes after the client check %r; checks with client: true go last'
                                     % (where, client_seen))
    return checks


def selected_tags(run_tags, skip_tags):
    """The verify tags a run with these ansible_run_tags and ansible_skip_tags selects."""
    run_tags = set(run_tags or [])
    skip_tags = set(skip_tags or [])
    return [tag for tag in TAGS if tag not in skip_tags and run_tags & set(SELECT_ALL + (tag,))]


def applies_to(check, host, groups):
    """Whether the check runs on (or, not run, is reported for) this host."""
    groups = groups or {}
    if check['hosts'] in ('ipu_nodes', 'control_plane'):
        return host in (groups.get(check['hosts']) or [])
    if check['hosts'] == 'api':
        return host == (list(groups.get('control_plane') or []) or [host])[0]
    return True


def _tag_reason(check, tag_skip):
    """Why a check the run did not select is SKIP: tag_skip's reason for its first tag."""
    return tag_skip.get(check['tags'][0]) or 'not run: the run skipped the tag %s' % check['tags'][0]


def verify_plan(checks, host, groups, run_tags, skip_tags, opted_in=None, tag_skip=None, check_mode=False):
    """What this host runs, and why each other check of this host does not run.

    opted_in: {variable: value} for the checks' opt_in variables.
    tag_skip: {tag: reason}, why a check the run did not select is SKIP.
    Returns {selected, tags, run, run_client, not_run}: selected is whether the run selects
    any verify check (no report otherwise); run and run_client the checks to run here, in
    list order, without and with the Kubernetes client; not_run {check id: reason}.
    """
    checks = verify_checks_valid(checks)
    opted_in = opted_in or {}
    tag_skip = tag_skip or {}
    tags = selected_tags(run_tags, skip_tags)
    plan = {'selected': bool(tags), 'tags': tags, 'run': [], 'run_client': [], 'not_run': {}}
    if not tags:
        return plan
    for check in checks:
        if not applies_to(check, host, groups):
            continue
        opt_in = check.get('opt_in')
        if opt_in and opt_in not in opted_in:
            raise AnsibleFilterError('verify_plan: no value given for %s, the opt-in of check %s' % (opt_in, check['id']))
        if opt_in and not _bool(opted_in[opt_in], opt_in):
            plan['not_run'][check['id']] = check['opt_in_reason']
        elif not any(tag in tags for tag in check['tags']):
            plan['not_run'][check['id']] = _tag_reason(check, tag_skip)
        elif check.get('check_mode') and _bool(check_mode, 'check_mode'):
            plan['not_run'][check['id']] = check['check_mode']
        else:
            plan['run_client' if _bool(check.get('client'), 'client') else 'run'].append(check)
    return plan


def _row(host, title, expected, observed, status):
    return {'host': str(host), 'check': str(title), 'expected': ' '.join(str(expected).split()),
            'observed': ' '.join(str(observed).split()), 'status': status}


def _observed_rows(host, row, observation):
    """The rows of one observation (a mapping, or a list of them: one row per host)."""
    rows = []
    for entry in observation if isinstance(observation, list) else [observation]:
        if not isinstance(entry, dict) or set(entry) - OBSERVATION_FIELDS:
            raise AnsibleFilterError('verify_rows: observation %r of row %s; a mapping of %s'
                                     % (entry, row['id'], ', '.join(sorted(OBSERVATION_FIELDS))))
        if entry.get('skip'):
            status, observed = 'SKIP', entry['skip']
        else:
            status = 'PASS' if _bool(entry.get('ok', True), 'ok of row %s' % row['id']) else 'FAIL'
            observed = entry.get('observed', '')
        rows.append(_row(entry.get('host') or host, entry.get('title') or row['title'],
                         entry.get('expected') or row['expected'], observed, status))
    return rows


def _check_rows(check, host, seen):
    """The rows of a check that ran, from what it registered (seen)."""
    seen = seen or {}
    rows, failed = [], False
    # A step that reports nothing of its own still shows its failure, under its title.
    own_failure = [{'id': check['id'], 'title': check['title'], 'expected': 'no error'}] if seen.get('error') else []
    for row in check_rows(check) or own_failure:
        if row['id'] in seen:
            rows.extend(_observed_rows(host, row, seen[row['id']]))
        elif seen.get('error') and not failed:
            # One reading answers every row: its failure fails each of them.
            failed = not _bool(check.get('one_reading'), 'one_reading')
            why = ('%s: %s' % (seen['step'], seen['error'])) if seen.get('step') else seen['error']
            rows.append(_row(host, row['title'], row['expected'], why, 'FAIL'))
        elif seen.get('error'):
            rows.append(_row(host, row['title'], row['expected'],
                             'not run: %s failed' % (seen.get('step') or 'a step before it'), 'SKIP'))
        elif seen.get('skip'):
            rows.append(_row(host, row['title'], row['expected'], seen['skip'], 'SKIP'))
        else:
            # A check that registered nothing for a row has a defect: show it, do not pass it.
            rows.append(_row(host, row['title'], row['expected'],
                             'the check %s registered no observation for this row' % check['id'], 'FAIL'))
    return rows


def verify_rows(checks, plan, seen, host, error=None):
    """The host's rows, in list order, from the plan and what each check registered.

    seen: {check id: what it registered (vars/main.yml says what), error: message, step: task
    name}. A check of the plan with nothing registered did not run (its client was not
    ready, or the run stopped before it): SKIP. error: an unexpected error of the verify
    run itself, one FAIL row.
    """
    checks = verify_checks_valid(checks)
    seen = seen or {}
    ran = {check['id'] for check in plan.get('run', []) + plan.get('run_client', [])}
    rows = []
    for check in checks:
        reason = plan.get('not_run', {}).get(check['id'])
        if check['id'] in ran and check['id'] in seen:
            rows.extend(_check_rows(check, host, seen[check['id']]))
            continue
        if check['id'] in ran:
            reason = ('not run: the Python Kubernetes client is not ready (see its row)' if check.get('client')
                      else 'not run: the verify run stopped before it (see the verify run row)')
        elif reason is None or _bool(check.get('prerequisite'), 'prerequisite'):
            continue
        rows.extend(_row(host, row['title'], row['expected'], reason, 'SKIP') for row in check_rows(check))
    if error:
        rows.append(_row(host, 'verify run', 'every check runs', error, 'FAIL'))
    return rows


def _cell(text):
    return ' '.join(str(text).split()).replace('|', '\\|')


def verify_checks_table(checks, tag_skip=None):
    """The checks as docs/verify.md's Markdown table (titles already rendered)."""
    checks = verify_checks_valid(checks)
    tag_skip = tag_skip or {}
    lines = ['| Check | Rows | Scope | Runs on | Tags | Task file | When it does not run |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    for check in checks:
        rows = check_rows(check)
        if not rows or _bool(check.get('prerequisite'), 'prerequisite'):
            when = NOT_REPORTED
        else:
            when = 'SKIP: %s' % _tag_reason(check, tag_skip)
        if check.get('check_mode'):
            when += '; in check mode SKIP: %s' % check['check_mode']
        if check.get('opt_in'):
            when += '; opt-in (`%s`), otherwise SKIP: %s' % (check['opt_in'], check['opt_in_reason'])
        lines.append('| %s | %s | %s | %s | %s | `%s` | %s |' % (
            _cell(check['title']), _cell('; '.join(row['title'] for row in rows)) or '(none)',
            check['scope'], HOSTS[check['hosts']], ', '.join('`%s`' % tag for tag in check['tags']),
            check['tasks'], _cell(when)))
    return '\n'.join(lines)


class FilterModule:
    """Filters that select verify's checks, make the report's rows and describe the list."""

    def filters(self):
        return {
            'verify_plan': verify_plan,
            'verify_rows': verify_rows,
            'verify_checks_table': verify_checks_table,
        }
