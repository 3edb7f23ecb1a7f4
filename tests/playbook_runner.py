"""Run a playbook through ansible-runner and read what happened from its structured events
(task results, retries, stats, set_stats data) instead of parsing the printed output.

    from playbook_runner import run_playbook
    run = run_playbook(playbook, inventory, tmp_path, extravars={...})
    run.status, run.rc, run.stats['changed'], run.results('Print the report')
    run.host_stats()['node-a']['changed'], run.failures(), run.result('Task', 'node-a')

The project's ansible.cfg is used and the project's progress output stays the stdout
callback (under runner's event callback), so run.stdout is what a person would have read.

Options for the test tiers that need more than a plain run from the repository root:
- netns: run ansible-playbook inside that network namespace (`ip netns exec NAME` in
  front of the command runner starts; events come back through the same pseudo-terminal).
- clean_env: the run's environment is envvars plus what ansible-runner itself sets, nothing
  inherited from the caller's shell (IPUOF_VIPU_API_*, PATH, KUBECONFIG...) but the suite's
  bytecode cache for module payloads (PYTHON_CACHE_SETTINGS: scripts/test sets them,
  docs/testing.md), which changes how fast a module starts, not what it does.
- kill_after: a task's name (with or without "role : "): as soon as the next task starts
  after that task reported its result, runner cancels the run and ansible-playbook's
  process group gets SIGKILL (status 'canceled'), as a dropped SSH session or Ctrl-C would
  leave it.
"""

import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ansible_runner.interface import init_runner

from testlib import TOOLS, tool

ROOT = Path(__file__).resolve().parents[1]
# the ansible-playbook installed with the python running the tests
ANSIBLE_PLAYBOOK = tool('ansible-playbook')
# What scripts/test adds to every Python it starts (scripts/ansiballz-pyc): runs keep them,
# clean_env or not, so that the modules they run read their compiled code from the cache.
PYTHON_CACHE_SETTINGS = ('PYTHONPATH', 'IPU_K8S_PYC_CACHE')
SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# Events that carry one host's result of a task.
HOST_EVENTS = {'runner_on_ok': {}, 'runner_on_failed': {'failed': True}, 'runner_on_skipped': {'skipped': True},
               'runner_on_unreachable': {'unreachable': True}}


def failure_text(res):
    """A failed result's msg; a loop's ("One or more items failed") followed by the msg of
    each failed item, one a line."""
    msg = res.get('msg', '')
    lines = [msg if isinstance(msg, str) else str(msg)]
    lines += [str(item.get('msg', '')) for item in res.get('results') or []
              if isinstance(item, dict) and item.get('failed') and item.get('msg')]
    return '\n'.join(lines)


def task_name(event_data):
    """The task's name as Ansible prints it (Task.get_name(): "role : task" inside a role)."""
    name = event_data.get('task') or ''
    role = event_data.get('role')
    return '%s : %s' % (role, name) if role else name


@dataclass
class PlaybookRun:
    status: str
    rc: int
    stats: dict
    events: list = field(repr=False)
    stdout: str = field(repr=False)

    def results(self, task, event='runner_on_ok'):
        """The result dicts of a task (by name, role prefix optional), one per host, for one
        kind of event."""
        return [e['event_data'].get('res', {}) for e in self.host_events(task) if e['event'] == event]

    def host_events(self, task=None, host=None):
        """The per-host result events (ok, failed, skipped, unreachable), optionally of one
        task (its name, with or without the role prefix) and/or one host."""
        found = []
        for event in self.events:
            data = event.get('event_data', {})
            if event['event'] not in HOST_EVENTS:
                continue
            if task is not None and task not in (data.get('task'), task_name(data)):
                continue
            if host is not None and data.get('host') != host:
                continue
            found.append(event)
        return found

    def ran(self, task):
        """The hosts task ran on (a result other than skipped), in order."""
        return [e['event_data']['host'] for e in self.host_events(task) if e['event'] != 'runner_on_skipped']

    def result(self, task, host):
        """The result of task on host (failed ones included, skipped ones not); fails the test
        when it did not run there."""
        for event in self.host_events(task, host):
            if event['event'] != 'runner_on_skipped':
                return dict(event['event_data'].get('res') or {}, **HOST_EVENTS[event['event']])
        raise AssertionError('task %r did not run on %s (status %s, rc=%s). output:\n%s'
                             % (task, host, self.status, self.rc, self.stdout[-3000:]))

    def _failed(self):
        return [e for e in self.events if e['event'] == 'runner_on_failed' and not e['event_data'].get('ignore_errors')]

    def failures(self):
        """{host: message} of the task failures that were not ignored (the failed event's msg;
        for a loop, its failed items' msgs after it)."""
        return {e['event_data']['host']: failure_text(e['event_data'].get('res') or {}) for e in self._failed()}

    def failure_messages(self):
        """Every failed task's message as failures() gives it, in order (a host can fail more
        than once when rescued)."""
        return [failure_text(e['event_data'].get('res') or {}) for e in self._failed()]

    def host_stats(self):
        """{host: {ok, changed, failures, unreachable, skipped, rescued, ignored}} from the
        playbook_on_stats event (the PLAY RECAP's numbers)."""
        stats = [e for e in self.events if e['event'] == 'playbook_on_stats']
        if not stats:
            return {}
        data = stats[-1]['event_data']
        names = {'ok': 'ok', 'changed': 'changed', 'failures': 'failures', 'dark': 'unreachable',
                 'skipped': 'skipped', 'rescued': 'rescued', 'ignored': 'ignored'}
        hosts = set(data.get('processed') or {})
        for key in names:
            hosts |= set(data.get(key) or {})
        return {host: {name: (data.get(key) or {}).get(host, 0) for key, name in names.items()}
                for host in sorted(hosts)}

    def plays(self):
        """The run as the ansible.posix.json callback lays it out: [{play, tasks: [{task,
        hosts: {host: result}}]}] (results carry failed/skipped/unreachable and action)."""
        plays, tasks = [], {}
        for event in self.events:
            data = event.get('event_data', {})
            kind = event['event']
            if kind == 'playbook_on_play_start':
                plays.append({'play': {'name': data.get('play', ''), 'id': data.get('play_uuid')}, 'tasks': []})
            elif kind in ('playbook_on_task_start', 'playbook_on_handler_task_start') and plays:
                entry = {'task': {'name': task_name(data), 'id': data.get('task_uuid')}, 'hosts': {}}
                plays[-1]['tasks'].append(entry)
                tasks[data.get('task_uuid')] = entry
            elif kind in HOST_EVENTS and data.get('task_uuid') in tasks:
                result = dict(data.get('res') or {}, **HOST_EVENTS[kind])
                result['action'] = data.get('task_action')
                tasks[data['task_uuid']]['hosts'][data['host']] = result
        return plays

    def set_stats(self):
        """The data the run published with ansible.builtin.set_stats (per_host: false)."""
        stats = [e for e in self.events if e['event'] == 'playbook_on_stats']
        return stats[-1]['event_data'].get('artifact_data', {}) if stats else {}

    def messages(self):
        """Every msg the task results carried (debug output, failures, asserts), in order."""
        return [str(m) for e in self.host_events() for m in [(e['event_data'].get('res') or {}).get('msg')] if m]

    def text(self):
        """messages() and warnings() as one string, whitespace collapsed (for `in` checks)."""
        return ' '.join(' '.join(self.messages() + self.warnings()).split())

    def changed(self):
        """How many task results reported a change, all hosts together (the recap's changed=)."""
        return sum(host['changed'] for host in self.host_stats().values())

    def warnings(self):
        """The warnings the run's task results carried."""
        return [w for e in self.host_events() for w in (e['event_data'].get('res') or {}).get('warnings', [])]


class HostView:
    """A PlaybookRun laid out per host, as the helpers of the test tiers that once read the
    ansible.posix.json callback use it: .stats {host: recap}, .data {'plays', 'stats'},
    .result(task, host), .failures(); .run is the PlaybookRun itself."""

    def __init__(self, run):
        self.run = run
        self.status = run.status
        self.rc = run.rc
        self.events = run.events
        self.stdout = run.stdout
        # runner reads the run through one pseudo-terminal: stderr is part of stdout
        self.stderr = ''

    @property
    def stats(self):
        """{host: {ok, changed, failures, unreachable, skipped, rescued, ignored}}"""
        return self.run.host_stats()

    @property
    def data(self):
        """The run laid out as the ansible.posix.json callback would print it."""
        return {'plays': self.run.plays(), 'stats': self.stats}

    def result(self, task, host):
        """The result of task (its name) on host; fails the test when it did not run there."""
        return self.run.result(task, host)

    def failures(self):
        """{host: msg} of the failed tasks (the failed event's msg)."""
        return self.run.failures()

    def failure_messages(self):
        """Every failed task's msg, in order."""
        return self.run.failure_messages()


class KillAfter:
    """Event handler and cancel callback of a run killed after one task (run_playbook's
    kill_after; molecule/lab/interrupt.py): armed by the task's result, it asks runner
    to cancel as the next task starts, so no handler of that run can fire."""

    def __init__(self, task):
        self.task, self.armed, self.killed = task, False, False

    def hit(self, data):
        """Whether a result event is the task's: its name, or "role : name"."""
        return self.task in (data.get('task'), task_name(data))

    def event(self, event):
        kind, data = event.get('event'), event.get('event_data', {})
        if kind in ('playbook_on_task_start', 'playbook_on_handler_task_start') and self.armed:
            self.killed = True
        elif kind in ('runner_on_ok', 'runner_on_failed') and self.task and self.hit(data):
            self.armed = True
        return True

    def cancel(self):
        return self.killed


def run_playbook(playbook, inventory, work_dir, extravars=None, envvars=None, cmdline=None, *,
                 netns=None, wrap=None, clean_env=False, timeout=None, stdout_callback='ipu_k8s_progress',
                 kill_after=None):
    """Run one playbook from the repository root with the project's settings.

    cmdline: extra ansible-playbook arguments (a string, or a list that is quoted here).
    netns: a network namespace name to run ansible-playbook in. wrap: a command ansible-playbook
    runs under (its arguments follow). clean_env: see the module's
    docstring. timeout: seconds before runner ends the run (status 'timeout').
    """
    # one private data dir per run: runner does not overwrite the env/ files of an earlier one
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    private = tempfile.mkdtemp(prefix='runner-', dir=str(work_dir))
    env = {
        'ANSIBLE_CONFIG': str(ROOT / 'ansible.cfg'),
        # runner sets its own callback path and event callback: keep the project's
        # progress output as the stdout callback under it.
        'ANSIBLE_CALLBACK_PLUGINS': str(ROOT / 'plugins' / 'callback'),
        'ANSIBLE_STDOUT_CALLBACK': stdout_callback,
        'ANSIBLE_NOCOLOR': '1',
        'PATH': '%s:%s' % (TOOLS, os.environ.get('PATH', SYSTEM_PATH)),
    }
    env.update({name: os.environ[name] for name in PYTHON_CACHE_SETTINGS if name in os.environ})
    env.update(envvars or {})
    if not isinstance(cmdline, (str, type(None))):
        cmdline = shlex.join(str(a) for a in cmdline)
    options = {}
    if kill_after:
        kill = KillAfter(kill_after)
        # pexpect_timeout: how often runner asks cancel_callback (seconds), so that the kill
        # follows the event at once
        options = {'event_handler': kill.event, 'cancel_callback': kill.cancel, 'settings': {'pexpect_timeout': 0.1}}
    runner = init_runner(private_data_dir=private, project_dir=str(ROOT), playbook=str(playbook),
                         inventory=str(inventory), extravars=extravars or {}, envvars=env, cmdline=cmdline or None,
                         quiet=True, timeout=timeout, **options)
    config = runner.config
    # the tests' own ansible-playbook, whatever the caller's PATH says
    config.command = [ANSIBLE_PLAYBOOK if a == 'ansible-playbook' and i == 0 else a for i, a in enumerate(config.command)]
    if clean_env:
        # keep what the caller gave and what runner set; drop what came from the shell as is
        config.env = {k: v for k, v in config.env.items() if k in env or os.environ.get(k) != v}
    if wrap:
        config.command = list(wrap) + list(config.command)
    if netns:
        config.command = [shutil.which('ip', path=SYSTEM_PATH), 'netns', 'exec', str(netns)] + list(config.command)
    runner.run()
    with open(os.path.join(config.artifact_dir, 'stdout'), encoding='utf-8', errors='replace') as f:
        stdout = f.read()
    # runner also hands back bare stdout records (no "event"), e.g. around a handler flush
    return PlaybookRun(status=runner.status, rc=runner.rc, stats=runner.stats or {},
                       events=[e for e in runner.events if 'event' in e],
                       stdout=stdout)
