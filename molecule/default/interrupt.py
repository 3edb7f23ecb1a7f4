#!/usr/bin/env python3
"""Run a playbook and kill it for real right after a given task reported its result.

Used by side_effect.yml to interrupt the containerd role between writing its
configuration and the handler that restarts containerd, the way a dropped SSH session
or Ctrl-C does: the ansible-playbook process group gets SIGKILL as soon as the next task
starts, so no handler of that run can ever fire.

    interrupt.py --after 'containerd : Set LimitMEMLOCK' -- ansible-playbook -i INV converge.yml --tags containerd

Prints one JSON line: the task the run was killed after, the tasks it had started, and
the process's exit status (negative: killed by that signal). Exits non-zero when the
named task never reported (the run ended or failed before it), so a test cannot pass
without the interruption having happened where it was meant to.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys

TASK_HEADER = re.compile(r'^TASK \[(?P<name>.*?)\]')
RESULT = re.compile(r'^(changed|ok): \[')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--after', required=True, help='start of the task name ("role : task") to kill after')
    parser.add_argument('command', nargs=argparse.REMAINDER, help='-- ansible-playbook ...')
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    # The task headers are read from the default callback's output, whatever ansible.cfg sets.
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', PYTHONUNBUFFERED='1',
               ANSIBLE_STDOUT_CALLBACK='default')
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    started, current, armed, killed_after, output = [], None, False, None, []
    for line in proc.stdout:
        output.append(line)
        header = TASK_HEADER.match(line)
        if header:
            if armed:
                # The task after the target has just started: its handlers never will.
                os.killpg(proc.pid, signal.SIGKILL)
                killed_after = current
                break
            current = header.group('name')
            started.append(current)
        elif current and current.startswith(args.after) and RESULT.match(line):
            armed = True
    proc.stdout.close()
    rc = proc.wait()
    print(json.dumps({'killed_after': killed_after, 'tasks_started': len(started), 'rc': rc}))
    if killed_after is None:
        sys.stderr.write(''.join(output[-60:]))
        sys.stderr.write('\nThe run was not interrupted after "%s".\n' % args.after)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
