# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress output for the ipu-k8s journey: step, elapsed times, waits, a closing block."""

from __future__ import annotations

DOCUMENTATION = r"""
name: ipu_k8s_progress
type: stdout
short_description: compact progress of the ipu-k8s journey, with steps, times and a closing block
description:
  - One line per task (consecutive identical lines folded into one, C(xN); ok lines of
    C(set_fact), C(set_stats) and C(include_vars) left out), under a header per
    step of the journey (C(3/7 cluster)), taken from the names of site.yml's imported playbooks
    (C(Step N - name)), or from the play names.
  - Elapsed time per task, per step and for the run.
  - An C(until) retry is printed as a wait (C(waiting for <task> (N s left))), not as a failure.
  - Warnings are shown when they happen and repeated at the end.
  - A closing block with the time of each step, what changed (tasks per host), the host recap in
    the usual recap form (C(ok=N changed=N ...)), preflight's plan (C(ansible.builtin.set_stats) data
    C(preflight_plan)), where the verify report is (from
    C(ansible.builtin.set_stats) data C(verify_report_json), C(verify_report_html),
    C(verify_report_counts)) and what to do next.
  - Failures are printed in full, as the default callback prints them.
  - The default callback stays available, e.g. C(ANSIBLE_STDOUT_CALLBACK=default).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout callback in ansible.cfg (stdout_callback = ipu_k8s_progress)
"""

import os
import re
import time

import yaml  # PyYAML ships with ansible-core
from ansible import constants as C
from ansible import context
from ansible.playbook.task_include import TaskInclude
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

_STEP_NAME = re.compile(r'^\s*Step\s+(\d+)\s*[-:]\s*(.+?)\s*$', re.IGNORECASE)
_STATUS_ORDER = ('failed', 'unreachable', 'changed', 'ok', 'skipped')
# Tasks that only keep the run's own records: their ok lines are not shown (a failure is).
_BOOKKEEPING = frozenset(prefix + name for prefix in ('', 'ansible.builtin.', 'ansible.legacy.')
                         for name in ('set_fact', 'set_stats', 'include_vars'))


def format_elapsed(seconds):
    """0:42, 12:05, 1:02:03: minutes and seconds, hours only when there are some."""
    seconds = int(round(max(seconds, 0)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return '%d:%02d:%02d' % (hours, minutes, secs)
    return '%d:%02d' % (minutes, secs)


def _entries(path):
    """(name, imported file or None) of each entry of a playbook file; None when it cannot be read."""
    try:
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle)
    except Exception:  # noqa: BLE001 - an unreadable file only loses the step labels
        return None
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        return None
    return [(entry.get('name'), next((entry[key] for key in C._ACTION_IMPORT_PLAYBOOK if key in entry), None))
            for entry in data]


def playbook_steps(path):
    """The step label of each play of a playbook file, in play order.

    An entry that imports a playbook gives all the plays it imports the import's name; a
    plain play gives its own name. Returns a list of (number, name) or (None, name) pairs,
    or None when the file cannot be read (the callback then uses the play names).
    """
    entries = _entries(path)
    if entries is None:
        return None
    labels = []
    for name, imported in entries:
        if imported is None:
            labels.append(_parse_step(name or ''))
            continue
        if not isinstance(imported, str) or '{{' in imported:
            return None
        inner = playbook_steps(os.path.join(os.path.dirname(path), imported))
        if inner is None:
            return None
        labels.extend([_parse_step(name)] * len(inner) if name else inner)
    return labels


def _parse_step(name):
    match = _STEP_NAME.match(str(name))
    return (int(match.group(1)), match.group(2)) if match else (None, str(name).strip())


def number_steps(labels):
    """Turn (number|None, name) labels into (N, total, name), numbering unnumbered steps in order."""
    distinct = list(dict.fromkeys(labels))
    total = max([len(distinct)] + [number for number, name in distinct if number is not None])
    numbered = {(number, name): (index if number is None else number, total, name)
                for index, (number, name) in enumerate(distinct, start=1)}
    return [numbered[label] for label in labels]


def site_step(playbook_path):
    """When a playbook is one step of the project's site.yml, that step's (N, total, name)."""
    playbook_path = os.path.realpath(playbook_path)
    here = os.path.dirname(playbook_path)
    for site in (os.path.join(here, 'site.yml'), os.path.join(os.path.dirname(here), 'site.yml')):
        if not os.path.isfile(site) or os.path.realpath(site) == playbook_path:
            continue
        entries = _entries(site) or []
        targets = [isinstance(imported, str) and os.path.realpath(os.path.join(os.path.dirname(site), imported))
                   for step, imported in entries]
        if playbook_path not in targets:
            return None
        labels = number_steps([_parse_step(name or imported or '') for name, imported in entries])
        return labels[targets.index(playbook_path)]
    return None


def summarise_hosts(statuses):
    """'node1, node2' when every host had the same result, else 'changed node1, node2; ok vipu1'."""
    if len(set(statuses.values())) == 1:
        return ', '.join(sorted(statuses))
    return '; '.join('%s %s' % (status, ', '.join(sorted(h for h, v in statuses.items() if v == status)))
                     for status in _STATUS_ORDER if status in statuses.values())


def next_steps(failed_hosts, verify_counts, changed_total, check_mode, has_report):
    """What the operator should do next, as a list of sentences."""
    advice = []
    if failed_hosts:
        advice.append('Fix the error printed above for %s (the first "fatal:" line names the task), '
                      'then run the same command again: the steps already done stay done.'
                      % ', '.join(sorted(failed_hosts)))
    if verify_counts and int(verify_counts.get('FAIL', 0)):
        advice.append('Verify found %s failed check(s): read their lines under the verify table; '
                      'the report files above have every value in full.' % verify_counts.get('FAIL'))
    if check_mode and not failed_hosts:
        advice.append('This was a dry run (--check): nothing was changed. Run without --check to apply.')
    elif changed_total and not failed_hosts:
        advice.append('Run the same command again to confirm it converged: every host should end with changed=0.')
    if not advice:
        if has_report:
            advice.append('Nothing left to do: nothing changed, and the verify report records the proof.')
        else:
            advice.append('Nothing changed. Run playbooks/verify.yml for the verify report.')
    return advice


def plan_lines(plan):
    """The lines of preflight's plan (set_stats data preflight_plan, roles/preflight/tasks/plan.yml):
    the releases chosen, then each IPU-POD's controller and RDMA network."""
    if not plan:
        return []
    chart = plan.get('network_operator') or {}
    containerd = plan.get('containerd') or {}
    lines = [('Kubernetes', plan.get('kubernetes')),
             ('Network Operator', 'chart %s (%s layout, %s)' % (chart.get('chart_version'), chart.get('layout'),
                                                                chart.get('ipam')) if chart else 'no chart row'),
             ('Calico', plan.get('calico')),
             ('Helm', plan.get('helm')),
             ('containerd', '%s package, %s' % (containerd.get('source'),
                                                containerd.get('version') or 'the newest the source has'))]
    for pod in plan.get('pods') or []:
        network = pod.get('rdma_network') or {}
        lines.append(('IPU-POD %s' % pod.get('name'), 'V-IPU %s:%s for %s: %s in %s, MTU %s, excluded %s' % (
            pod.get('vipu_host'), pod.get('vipu_port'), ', '.join(pod.get('hosts') or []), network.get('interface'),
            network.get('cidr'), network.get('mtu'), ', '.join(network.get('excludes') or []) or 'nothing')))
    return ['  %-18s %s' % (label, value) for label, value in lines]


class CallbackModule(DefaultCallback):
    """Compact progress for people: steps, elapsed time, waits, a closing block."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'ipu_k8s_progress'

    def __init__(self):
        super().__init__()
        self._run_start = time.monotonic()
        self._playbook_name = ''
        self._play_labels = {}
        self._steps = []            # (label, seconds, changed task count) of each step done
        self._step = None           # [label, start, changed task count] of the step under way
        self._task = None           # the task whose results are being gathered
        self._task_start = None
        self._task_status = {}
        self._task_extras = []      # lines printed after the task's own line (debug messages)
        self._task_end = None
        self._held = None           # [fold key, text, color, count] of the line not printed yet
        self._changed = {}          # host -> [task names]
        self._warnings = []         # [(message, where)]

    # -- output helpers ---------------------------------------------------------------

    def _elapsed(self):
        return format_elapsed(time.monotonic() - self._run_start)

    def _say(self, text, color=None):
        self._emit_held()
        self._display.display(text, color=color)

    def _hold(self, key, text, color):
        """Print a task line, folding identical consecutive lines into one with a count."""
        if key is not None and self._held and self._held[0] == key:
            self._held[3] += 1
            self._held[1] = text
            return
        self._emit_held()
        self._held = [key, text, color, 1]

    def _emit_held(self):
        if self._held:
            key, text, color, count = self._held
            self._held = None
            self._display.display(text + (' (x%d)' % count if count > 1 else ''), color=color)

    # -- playbook, plays, steps ---------------------------------------------------------

    def v2_playbook_on_start(self, playbook):
        self._run_start = time.monotonic()
        path = playbook._file_name
        self._playbook_name = os.path.relpath(path) if not os.path.relpath(path).startswith('..') else path
        plays = playbook.get_plays()
        labels = playbook_steps(path)
        if labels is not None and len(labels) == len(plays):
            numbered = number_steps(labels)
            alone = site_step(path) if len(set(numbered)) == 1 else None
            for play, label in zip(plays, numbered):
                self._play_labels[self._play_key(play)] = alone or label
        check = ' in check mode (--check): nothing will be changed' if context.CLIARGS.get('check') else ''
        self._say('%s: %d play(s)%s' % (self._playbook_name, len(plays), check), color=C.COLOR_HIGHLIGHT)

    def _label_for(self, play):
        return self._play_labels.get(self._play_key(play)) or (None, None, play.get_name().strip() or 'play')

    @staticmethod
    def _play_key(play):
        """Where the play is written: the same for the copy the executor hands to the callback."""
        origin = getattr(play, '_origin', None)
        return str(origin) if origin is not None else play.get_name()

    @staticmethod
    def _label_text(label):
        number, total, name = label
        return ('%d/%d ' % (number, total) if number else '') + name

    def _close_task(self):
        """Print the line of the task whose results were gathered, if any ran."""
        task, self._task = self._task, None
        statuses, self._task_status = self._task_status, {}
        extras, self._task_extras = self._task_extras, []
        if not statuses:
            return
        status = min(statuses.values(), key=_STATUS_ORDER.index)
        if (status in ('failed', 'unreachable')  # printed in full when it happened
                or status == 'skipped' and not self.get_option('display_skipped_hosts')
                or status == 'ok' and (not self.get_option('display_ok_hosts')
                                       or task.action in _BOOKKEEPING and not extras)):
            return
        end = self._task_end or time.monotonic()
        duration = end - (self._task_start or end)
        took = '  (%s)' % format_elapsed(duration) if duration >= 1 else ''
        color = {'changed': C.COLOR_CHANGED, 'ok': C.COLOR_OK, 'skipped': C.COLOR_SKIP}.get(status)
        name = task.get_name().strip()
        text = '  %7s  %-7s  %s  [%s]%s' % (format_elapsed(end - self._run_start), status, name,
                                            summarise_hosts(statuses), took)
        self._hold((status, name, tuple(sorted(statuses.items()))) if not extras else None, text, color)
        for line in extras:
            self._say(line)

    def _close_step(self):
        self._close_task()
        if self._step is None:
            return
        (label, start, changed), self._step = self._step, None
        seconds = time.monotonic() - start
        self._steps.append((label, seconds, changed))
        changes = ', %d task(s) changed' % changed if changed else ''
        self._say('  %s done in %s%s' % (self._label_text(label), format_elapsed(seconds), changes))

    def v2_playbook_on_play_start(self, play):
        self._play = play
        label = self._label_for(play)
        self._close_task()
        if self._step is None or self._step[0] != label:
            self._close_step()
            self._step = [label, time.monotonic(), 0]
        hosts = play.hosts if isinstance(play.hosts, str) else ', '.join(play.hosts or [])
        check = ' [check mode]' if play.check_mode else ''
        self._say('')
        self._say('== %s  (play "%s" on %s, at %s)%s' % (
            self._label_text(label), play.get_name().strip(), hosts, self._elapsed(), check), color=C.COLOR_HIGHLIGHT)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close_task()
        self._task = task
        self._task_start = time.monotonic()
        self._task_end = None
        self._last_task_banner = task._uuid  # the default callback prints no banner of its own

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_include(self, included_file):
        pass  # the included tasks show for themselves

    def v2_playbook_on_no_hosts_matched(self):
        self._say('  no hosts matched: this play has nothing to do', color=C.COLOR_SKIP)

    # -- results ------------------------------------------------------------------------

    def _where(self, result):
        return '%s, %s' % (self.host_label(result), (result.task_name or result.task.get_name()).strip())

    def _note_warnings(self, result):
        for warning in getattr(result, 'warnings', None) or []:
            message = getattr(getattr(warning, 'event', None), 'msg', None) or str(warning)
            entry = (message.strip(), self._where(result))
            if entry not in self._warnings:
                self._warnings.append(entry)

    def _record(self, result, status):
        host = result.host.get_name()
        self._task_status[host] = min(status, self._task_status.get(host, status), key=_STATUS_ORDER.index)
        self._task_end = time.monotonic()

    def v2_runner_on_ok(self, result):
        if isinstance(result.task, TaskInclude):
            return
        changed = bool(result.result.get('changed', False))
        self._record(result, 'changed' if changed else 'ok')
        if changed:
            tasks = self._changed.setdefault(result.host.get_name(), [])
            name = result.task.get_name().strip()
            if name not in tasks:
                tasks.append(name)
                if self._step is not None:
                    self._step[2] += 1
        self._note_warnings(result)
        self._handle_warnings_and_exception(result)
        if result.task.action in C._ACTION_DEBUG:
            self._show_debug(result)
        elif self._run_is_verbose(result):
            self._emit_held()
            super().v2_runner_on_ok(result)

    def _show_debug(self, result):
        """A debug message printed as it is (a report keeps its layout), not as YAML."""
        res = dict(result.result)
        self._clean_results(res, result.task.action)
        message = res.get('msg')
        if isinstance(message, str):
            prefix = '' if '\n' in message else '           [%s] ' % self.host_label(result)
            self._task_extras.append(prefix + message)
        else:
            shown = {k: v for k, v in res.items() if not k.startswith('_') and k not in ('changed', 'failed')}
            self._task_extras.append('           [%s] %s' % (self.host_label(result), self._dump_results(shown).strip()))

    def v2_runner_on_skipped(self, result):
        self._record(result, 'skipped')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, 'ok' if ignore_errors else 'failed')
        self._note_warnings(result)
        self._say('  %7s  FAILED   %s  [%s]' % (self._elapsed(), result.task.get_name().strip(), self.host_label(result)),
                  color=C.COLOR_ERROR)
        super().v2_runner_on_failed(result, ignore_errors)

    def v2_runner_on_unreachable(self, result):
        self._record(result, 'unreachable')
        self._emit_held()
        super().v2_runner_on_unreachable(result)

    def v2_runner_item_on_ok(self, result):
        self._note_warnings(result)
        if self._run_is_verbose(result):
            self._emit_held()
            super().v2_runner_item_on_ok(result)

    def v2_runner_item_on_skipped(self, result):
        if self._run_is_verbose(result):
            self._emit_held()
            super().v2_runner_item_on_skipped(result)

    def v2_runner_item_on_failed(self, result):
        self._note_warnings(result)
        self._emit_held()
        super().v2_runner_item_on_failed(result)

    def v2_runner_retry(self, result):
        """An until loop still waiting: say what is awaited and how long is left."""
        host = result.host.get_name()
        retries = int(result.result.get('retries', 0) or 0)
        attempts = int(result.result.get('attempts', 0) or 0)
        try:
            delay = float(result.task.delay)
        except (TypeError, ValueError):
            delay = 5.0
        left = max(retries - attempts, 0) * delay
        name = (result.task_name or result.task.get_name()).strip()
        text = '  %7s  waiting for %s (%d s left) [%s, %s so far]' % (
            self._elapsed(), name, left, host, format_elapsed(time.monotonic() - self._task_start))
        if self._run_is_verbose(result, verbosity=2):
            text += ' last result: %s' % self._dump_results(result.result)
        self._say(text, color=C.COLOR_DEBUG)

    def v2_runner_on_async_poll(self, result):
        self._say('  %7s  waiting for %s [%s, async job]' % (
            self._elapsed(), result.task.get_name().strip(), result.host.get_name()), color=C.COLOR_DEBUG)

    def v2_on_file_diff(self, result):
        self._emit_held()
        super().v2_on_file_diff(result)

    # -- the closing block --------------------------------------------------------------

    def _all_warnings(self):
        """Warnings from task results with where they came from, then any other warning the run printed."""
        lines = ['%s (%s)' % (message, where) for message, where in self._warnings]
        known = [message for message, where in self._warnings]
        for formatted in sorted(getattr(self._display, '_warns', ()) or ()):
            text = re.sub(r'^\[WARNING\]:\s*', '', str(formatted)).strip()
            if not any(message in text or text in message for message in known):
                lines.append(text)
        return lines

    def v2_playbook_on_stats(self, stats):
        self._close_step()
        self._emit_held()
        show = self._display.display
        custom = (getattr(stats, 'custom', None) or {}).get('_run', {}) or {}
        reports = [('JSON', custom.get('verify_report_json')), ('HTML', custom.get('verify_report_html'))]
        reports = [(kind, path) for kind, path in reports if path]
        counts = custom.get('verify_report_counts') or {}
        check = bool(context.CLIARGS.get('check'))

        show('\n' + '=' * 78)
        show('%s finished in %s%s' % (self._playbook_name, self._elapsed(), ' (check mode)' if check else ''),
             color=C.COLOR_HIGHLIGHT)
        if self._steps:
            show('Steps:')
        for label, seconds, changed in self._steps:
            show('  %-28s %8s   %s' % (self._label_text(label), format_elapsed(seconds),
                                       '%d changed' % changed if changed else 'no change'))
        changed_total = sum(len(tasks) for tasks in self._changed.values())
        would = ' (would change, check mode)' if check else ''
        show('Changed%s: %d task(s) on %d host(s)' % (would, changed_total, len(self._changed))
             if self._changed else 'Changed: nothing',
             color=C.COLOR_CHANGED if self._changed else None)
        for host, tasks in sorted(self._changed.items()):
            show('  %s: %s' % (host, '; '.join(tasks[:6]) + ('; and %d more' % (len(tasks) - 6) if len(tasks) > 6 else '')))
        show('Hosts:')
        failed_hosts = set()  # from the final stats: a failure a block rescued does not count
        for host in sorted(stats.processed):
            summary = stats.summarize(host)
            show('%-26s : ok=%d changed=%d unreachable=%d failed=%d skipped=%d rescued=%d ignored=%d' % (
                host, summary['ok'], summary['changed'], summary['unreachable'], summary['failures'],
                summary['skipped'], summary['rescued'], summary['ignored']))
            if summary['failures'] or summary['unreachable']:
                failed_hosts.add(host)
        plan = plan_lines(custom.get('preflight_plan'))
        if plan:
            show('Plan:')
        for line in plan:
            show(line)
        warnings = self._all_warnings()
        if warnings:
            show('Warnings (%d, also shown above where they happened):' % len(warnings), color=C.COLOR_WARN)
        for line in warnings:
            show('  - %s' % line, color=C.COLOR_WARN)
        if reports and counts:
            show('Verify: %s PASS, %s FAIL, %s SKIP' % tuple(counts.get(key, 0) for key in ('PASS', 'FAIL', 'SKIP')))
        for kind, path in reports:
            show('  report (%s): %s' % (kind, path))
        show('Next:')
        for line in next_steps(failed_hosts, counts, changed_total, check, bool(reports)):
            show('  %s' % line)
        show('=' * 78)
