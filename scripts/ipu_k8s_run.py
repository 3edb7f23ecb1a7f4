#!/usr/bin/env python3
"""Run the journey (site.yml, or any playbook of the project) through ansible-runner.

The project's progress output (plugins/callback/ipu_k8s_progress.py) is what shows on the
terminal; ansible-runner keeps every event of the run (task results, retries, warnings,
the recap) as JSON under the private data directory, for people who drive the journey
from their own tooling. Exit status: the playbook's.

    .venv/bin/python scripts/ipu_k8s_run.py -i inventories/site/hosts.yml [ansible-playbook options] [PLAYBOOK]
    .venv/bin/python scripts/ipu_k8s_run.py -i inventories/site/hosts.yml --check --diff

From Python (the project's venv):

    sys.path.insert(0, '<repository>/scripts')
    from ipu_k8s_run import run
    result = run('inventories/site/hosts.yml', 'site.yml', ['--limit', 'poplar-03'])
    result.status, result.rc, result.stats, list(result.events)

PLAYBOOK defaults to site.yml; relative paths are read from the current directory, then
from the repository root. Events go to --private-data-dir (default
~/.cache/ipu-k8s/runner; the last 20 runs are kept, one artifacts/<id>/ directory each).
"""

import argparse
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PRIVATE_DATA_DIR = Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'ipu-k8s' / 'runner'
KEEP_RUNS = 20
# ansible-playbook options whose value may end in .yml (so it is not the playbook)
VALUE_OPTIONS = {'-e', '--extra-vars', '--vault-password-file', '--vault-id', '-i', '--inventory'}


def _path(value):
    """A path given on the command line: as typed when it exists, else under the repository."""
    if value is None:
        return None
    path = Path(value)
    if path.is_absolute() or path.exists() or not (ROOT / path).exists():
        return str(path.resolve()) if path.exists() else value
    return str(ROOT / path)


def runner_env(stdout_callback='ipu_k8s_progress'):
    """What ansible-runner must set so the run reads the project's ansible.cfg and keeps the
    project's progress output as the stdout callback under runner's event callback."""
    bin_dir = Path(sys.executable).parent
    env = {
        'ANSIBLE_CONFIG': os.environ.get('ANSIBLE_CONFIG', str(ROOT / 'ansible.cfg')),
        'ANSIBLE_CALLBACK_PLUGINS': str(ROOT / 'plugins' / 'callback'),
        'ANSIBLE_STDOUT_CALLBACK': os.environ.get('ANSIBLE_STDOUT_CALLBACK', stdout_callback),
        # ansible-playbook from the same venv as this python
        'PATH': '%s:%s' % (bin_dir, os.environ.get('PATH', '/usr/bin:/bin')),
    }
    # ansible-playbook runs on runner's pseudo-terminal: no colours unless ours is a terminal
    # (ANSIBLE_FORCE_COLOR=0, as scripts/test sets it, asks for none either)
    forced = os.environ.get('ANSIBLE_FORCE_COLOR', '').strip().lower() in ('1', 'true', 'yes', 'on')
    if not sys.stdout.isatty() and not forced:
        env['ANSIBLE_NOCOLOR'] = '1'
    return env


def run(inventory=None, playbook='site.yml', args=(), private_data_dir=None, quiet=False, **runner_kwargs):
    """Run playbook with inventory (None: ansible.cfg's) and extra ansible-playbook args.

    Returns ansible-runner's Runner: .status ('successful', 'failed', 'canceled', ...),
    .rc, .stats (the recap per kind: {'changed': {host: n}, ...}), .events (every event),
    .config.artifact_dir. runner_kwargs go to ansible_runner.run (event_handler=..., ...).
    """
    import ansible_runner

    private = Path(private_data_dir or DEFAULT_PRIVATE_DATA_DIR)
    private.mkdir(parents=True, exist_ok=True)
    # ansible-runner writes env/envvars (and extravars, cmdline...) into the data dir once and
    # lays them over every later run's own: none is written, and any an older run left goes
    for name in ('envvars', 'extravars', 'passwords', 'settings', 'cmdline', 'ssh_key'):
        (private / 'env' / name).unlink(missing_ok=True)
    envvars = dict(runner_env(), **runner_kwargs.pop('envvars', {}))
    args = [str(a) for a in args]
    inventory = _path(inventory)
    if inventory is not None and not Path(inventory).exists():
        # a host list (node1,node2,) or a dynamic source: ansible-playbook reads it as typed
        args, inventory = ['-i', inventory] + args, None
    return ansible_runner.run(
        private_data_dir=str(private), project_dir=str(ROOT), playbook=_path(playbook), inventory=inventory,
        cmdline=shlex.join(args) or None, envvars=envvars, quiet=quiet, rotate_artifacts=KEEP_RUNS, suppress_env_files=True,
        **runner_kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description='Run a playbook of the project (default site.yml) through ansible-runner. '
                    'Options not listed here go to ansible-playbook.')
    parser.add_argument('-i', '--inventory', help="inventory file (default: ansible.cfg's)")
    parser.add_argument('--private-data-dir', default=str(DEFAULT_PRIVATE_DATA_DIR),
                        help="where ansible-runner keeps each run's events (default: %(default)s)")
    parser.epilog = 'PLAYBOOK: the first argument ending in .yml/.yaml (default: site.yml)'
    options, rest = parser.parse_known_args(argv)
    playbook = 'site.yml'
    for index, arg in enumerate(rest):
        if arg.endswith(('.yml', '.yaml')) and not arg.startswith(('-', '@')) and \
                (index == 0 or rest[index - 1] not in VALUE_OPTIONS):
            playbook = rest.pop(index)
            break
    result = run(options.inventory, playbook, rest, options.private_data_dir)
    print('ansible-runner: %s (rc=%s); events of this run: %s' % (
        result.status, result.rc, Path(result.config.artifact_dir) / 'job_events'), file=sys.stderr)
    return result.rc if isinstance(result.rc, int) else 1


if __name__ == '__main__':
    sys.exit(main())
