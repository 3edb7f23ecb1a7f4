"""Run a playbook through ansible-runner and read what happened from its structured events
(task results, retries, stats, set_stats data) instead of parsing the printed output.

    from playbook_runner import run_playbook
    run = run_playbook(playbook, inventory, tmp_path, extravars={...})
    run.status, run.rc, run.stats['changed'], run.results('Print the report')

The project's ansible.cfg is used and the project's progress output stays the stdout
callback, so run.stdout is what a person would have read.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class PlaybookRun:
    status: str
    rc: int
    stats: dict
    events: list = field(repr=False)
    stdout: str = field(repr=False)

    def results(self, task, event='runner_on_ok'):
        """The result dicts of a task (by name), one per host, for one kind of event."""
        return [e['event_data']['res'] for e in self.events
                if e['event'] == event and e['event_data'].get('task') == task]

    def failures(self):
        """{host: message} of the task failures that were not rescued or ignored."""
        return {e['event_data']['host']: e['event_data']['res'].get('msg', '')
                for e in self.events if e['event'] == 'runner_on_failed' and not e['event_data'].get('ignore_errors')}

    def set_stats(self):
        """The data the run published with ansible.builtin.set_stats (per_host: false)."""
        stats = [e for e in self.events if e['event'] == 'playbook_on_stats']
        return stats[-1]['event_data'].get('artifact_data', {}) if stats else {}


def run_playbook(playbook, inventory, work_dir, extravars=None, envvars=None, cmdline=None):
    """Run one playbook from the repository root with the project's settings."""
    private = Path(work_dir) / 'runner'
    private.mkdir(parents=True, exist_ok=True)
    env = {
        'ANSIBLE_CONFIG': str(ROOT / 'ansible.cfg'),
        # runner sets its own callback path and event callback: keep the project's
        # progress output as the stdout callback under it.
        'ANSIBLE_CALLBACK_PLUGINS': str(ROOT / 'callback_plugins'),
        'ANSIBLE_STDOUT_CALLBACK': 'ipu_k8s_progress',
        'ANSIBLE_NOCOLOR': '1',
        'PATH': '%s:%s' % (ROOT / '.venv' / 'bin', os.environ.get('PATH', '')),
    }
    env.update(envvars or {})
    run = ansible_runner.run(private_data_dir=str(private), project_dir=str(ROOT), playbook=str(playbook),
                             inventory=str(inventory), extravars=extravars or {}, envvars=env, cmdline=cmdline,
                             quiet=True)
    return PlaybookRun(status=run.status, rc=run.rc, stats=run.stats or {}, events=list(run.events),
                       stdout=run.stdout.read())
