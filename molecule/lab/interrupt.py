#!/usr/bin/env python3
"""Run a playbook through ansible-runner and read its events: kill it for real right after
a given task reported its result, or run it to completion and say which handlers ran.

Used by side_effect.yml to interrupt the containerd role between writing its
configuration and the handler that restarts containerd, the way a dropped SSH session
or Ctrl-C does: as soon as the event of the next task's start arrives, runner cancels the
run and ansible-playbook's process group gets SIGKILL, so no handler of that run can ever
fire. Then, without --after, to check that the re-run restarts containerd.

    interrupt.py --after 'containerd : Write each file' -- ansible-playbook -i INV converge.yml --tags containerd
    interrupt.py -- ansible-playbook -i INV converge.yml --tags containerd

Prints one JSON line: the task the run was killed after (with --after), the tasks it had
started, the handlers that ran (each one's "role : name", from its result events), the
run's status and exit status. Exits non-zero when the named task never reported (the run
ended or failed before it), or when a run to completion failed, so a test cannot pass
without the interruption having happened where it was meant to.
"""

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

import ansible_runner

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'tests'))
from playbook_runner import KillAfter, task_name  # noqa: E402

RESULT_EVENTS = ('runner_on_ok', 'runner_on_failed')


class Watch(KillAfter):
    """tests/playbook_runner.py's KillAfter for a task named by the start of "role : task",
    recording the tasks started and the handlers that ran."""

    def __init__(self, after):
        super().__init__(after)
        self.started, self.notified, self.handlers_ran, self.killed_after = [], set(), [], None

    def hit(self, data):
        return task_name(data).startswith(self.task)

    def event(self, event):
        kind, data = event.get('event'), event.get('event_data', {})
        if kind in ('playbook_on_task_start', 'playbook_on_handler_task_start'):
            if self.armed and self.killed_after is None:
                # The task after the target has just started: its handlers never will.
                self.killed_after = self.started[-1]
            self.started.append(task_name(data))
        elif kind == 'playbook_on_notify':
            self.notified.add(data.get('handler'))
        # a handler's result: a task named as a notified handler ("role : name")
        if kind in RESULT_EVENTS and task_name(data) in self.notified:
            self.handlers_ran.append(task_name(data))
        return super().event(event)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--after', help='start of the task name ("role : task") to kill after')
    parser.add_argument('command', nargs=argparse.REMAINDER, help='-- ansible-playbook ARGS... PLAYBOOK')
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    if command[:1] and os.path.basename(command[0]) == 'ansible-playbook':
        command = command[1:]
    playbooks = [a for a in command if a.endswith(('.yml', '.yaml')) and not a.startswith('-')]
    if len(playbooks) != 1:
        parser.error('name exactly one playbook (.yml) after --')
    options = [a for a in command if a != playbooks[0]]
    watch = Watch(args.after)
    with tempfile.TemporaryDirectory(prefix='interrupt-') as private:
        run = ansible_runner.run(
            private_data_dir=private, project_dir=os.getcwd(), playbook=os.path.abspath(playbooks[0]),
            cmdline=shlex.join(options) or None, envvars={'ANSIBLE_NOCOLOR': '1'}, quiet=True,
            event_handler=watch.event, cancel_callback=watch.cancel,
            # how often runner asks cancel_callback (seconds): the kill follows the event at once
            settings={'pexpect_timeout': 0.1})
        output = run.stdout.read()
    print(json.dumps({'killed_after': watch.killed_after, 'tasks_started': len(watch.started),
                      'handlers_ran': watch.handlers_ran, 'status': run.status, 'rc': run.rc}))
    if args.after and watch.killed_after is None:
        sys.stderr.write(output[-6000:])
        sys.stderr.write('\nThe run was not interrupted after "%s".\n' % args.after)
        return 1
    if not args.after and run.status != 'successful':
        sys.stderr.write(output[-6000:])
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
