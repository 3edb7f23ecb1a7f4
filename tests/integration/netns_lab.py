"""Throwaway network namespaces and ansible-playbook runs inside them, for the
integration tests (fixtures in conftest.py; helpers imported by the test modules).

Every namespace is named ipuk8s-t-<pid>-<random>-<role>; its veth pairs live entirely in
namespaces the tests made (nothing is added to the host's own network), and it is deleted
in a finalizer whether the tests pass or not. At session start, namespaces with that
prefix whose creating process is gone are swept away (see sweep_stale_namespaces). Route lookups send no packet, and
name lookups inside a namespace stay inside it (its own /etc/hosts and a resolv.conf that
points at the namespace's loopback), so no traffic leaves the namespaces.
"""

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import playbook_runner  # noqa: E402  (tests/playbook_runner.py)
from testlib import process_alive  # noqa: E402  (tests/testlib.py)

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = Path(__file__).resolve().parent / 'playbooks'
FAKE_VIPU_BIN = ROOT / 'tests' / 'fixtures' / 'bin'
PREFIX = 'ipuk8s-t-'
# A prefixed namespace whose name carries no process id is swept only after this long.
STALE_AFTER_SECONDS = 1800
NETNS_ETC = Path('/etc/netns')
# The python that runs pytest is the project's venv python; modules run with it too.
PYTHON = sys.executable
ANSIBLE_PLAYBOOK = str(Path(PYTHON).parent / 'ansible-playbook')
SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def ip_binary():
    return shutil.which('ip', path=SYSTEM_PATH)


def _run(argv, **kwargs):
    kwargs.setdefault('check', True)
    kwargs.setdefault('capture_output', True)
    kwargs.setdefault('text', True)
    kwargs.setdefault('timeout', 60)
    try:
        return subprocess.run([str(a) for a in argv], **kwargs)
    except subprocess.CalledProcessError as e:
        raise AssertionError('%s failed (rc=%d): %s%s' % (' '.join(map(str, argv)), e.returncode, e.stdout, e.stderr))


class Netns:
    """One named network namespace made by a test."""

    def __init__(self, name):
        self.name = name

    def ip(self, *commands):
        """Run `ip` commands (one per argument, batch syntax) inside the namespace."""
        _run([ip_binary(), '-n', self.name, '-batch', '-'], input='\n'.join(commands) + '\n')

    def run(self, argv, **kwargs):
        """Run a command inside the namespace (`ip netns exec`)."""
        return _run([ip_binary(), 'netns', 'exec', self.name] + list(argv), **kwargs)

    def etc_file(self, filename, text):
        """A file `ip netns exec` bind-mounts over /etc/<filename> inside this namespace."""
        directory = NETNS_ETC / self.name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / filename).write_text(text)

    def isolate_name_lookups(self, hosts):
        """Names resolve from hosts ({name: ip}) only: DNS goes to this namespace's loopback."""
        lines = ['127.0.0.1 localhost'] + ['%s %s' % (ip, name) for name, ip in sorted(hosts.items())]
        self.etc_file('hosts', '\n'.join(lines) + '\n')
        self.etc_file('resolv.conf', 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n')

    def delete(self):
        subprocess.run([ip_binary(), 'netns', 'delete', self.name], capture_output=True, check=False)
        shutil.rmtree(NETNS_ETC / self.name, ignore_errors=True)


def create_netns(role):
    """A new, empty namespace named after this process and role (the caller deletes it)."""
    namespace = Netns('%s%d-%s-%s' % (PREFIX, os.getpid(), secrets.token_hex(2), role))
    _run([ip_binary(), 'netns', 'add', namespace.name])
    return namespace


def _age_seconds(name):
    for path in (Path('/run/netns') / name, NETNS_ETC / name):
        try:
            return time.time() - path.stat().st_mtime
        except OSError:
            continue
    return 0.0


def sweep_stale_namespaces():
    """Delete ipuk8s-t-* namespaces (and their /etc/netns files) left by dead test runs.

    A name that starts with a process id (ipuk8s-t-<pid>-...) is stale once that process
    is gone. Any other name with the prefix belongs to someone who did not say, so it
    is only removed when it is older than STALE_AFTER_SECONDS.
    """
    listing = subprocess.run([ip_binary(), 'netns', 'list'], capture_output=True, text=True, check=False).stdout
    names = [line.split()[0] for line in listing.splitlines() if line.startswith(PREFIX)]
    if NETNS_ETC.is_dir():
        names += [p.name for p in NETNS_ETC.iterdir() if p.name.startswith(PREFIX) and p.name not in names]
    for name in names:
        owner = name[len(PREFIX):].split('-')[0]
        if owner.isdigit():
            if process_alive(int(owner)):
                continue  # another test run, still going
        elif _age_seconds(name) < STALE_AFTER_SECONDS:
            continue
        Netns(name).delete()


def veth(name, peer, peer_netns, mtu, *addresses, peer_addresses=()):
    """Batch commands (for the namespace holding `name`) creating a veth pair, both ends up.

    addresses go on `name`, peer_addresses on `peer`, which lives in peer_netns.
    """
    commands = ['link add %s mtu %d type veth peer name %s netns %s mtu %d' % (name, mtu, peer, peer_netns.name, mtu)]
    commands += ['addr add %s dev %s' % (a, name) for a in addresses]
    commands += ['link set %s up' % name]
    return commands, ['addr add %s dev %s' % (a, peer) for a in peer_addresses] + ['link set %s up' % peer]


class PlaybookRun(playbook_runner.HostView):
    """The outcome of one playbook run in a namespace, read from ansible-runner's events
    (tests/playbook_runner.py): .stats, .data, .result(task, host), .failures(), .events,
    .stdout (the printed output)."""

    def host_failure_messages(self, host):
        """Every failed task's message on one host, in order (as failure_messages() gives them)."""
        return [playbook_runner.failure_text(e['event_data'].get('res') or {})
                for e in self.run.host_events(host=host)
                if e['event'] == 'runner_on_failed' and not e['event_data'].get('ignore_errors')]


def ansible_env(workdir):
    """The environment of an ansible-playbook run in a namespace, built from scratch so that
    nothing from the caller's shell (IPUOF_VIPU_API_*, PATH) leaks in."""
    workdir = Path(workdir)
    return {
        'PATH': '%s:%s' % (Path(PYTHON).parent, SYSTEM_PATH),
        'HOME': str(workdir),
        'LANG': 'C.UTF-8',
        'ANSIBLE_CONFIG': str(ROOT / 'ansible.cfg'),
        'ANSIBLE_LIBRARY': str(ROOT / 'plugins' / 'modules'),
        'ANSIBLE_LOCAL_TEMP': str(workdir / 'ansible-local'),
        'ANSIBLE_REMOTE_TEMP': str(workdir / 'ansible-remote'),
        'ANSIBLE_NOCOLOR': '1',
    }


def run_playbook(netns, playbook, inventory, workdir, env=None, cmdline=None):
    """PLAYBOOK through ansible-runner, ansible-playbook inside netns, with a generated YAML
    inventory -> PlaybookRun.

    Connection local, the venv's python on the hosts; the environment is built from
    scratch so nothing from the caller's shell (IPUOF_VIPU_API_*, PATH) leaks in.
    cmdline: extra ansible-playbook arguments (a list, e.g. ['--check']).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    inventory_file = workdir / 'inventory.yml'
    inventory_file.write_text(yaml.safe_dump(inventory, sort_keys=False))
    run_env = ansible_env(workdir)
    run_env.update(env or {})
    run = PlaybookRun(playbook_runner.run_playbook(PLAYBOOKS / playbook, inventory_file, workdir, envvars=run_env, cmdline=cmdline,
                                                   netns=netns.name, clean_env=True, timeout=300))
    assert run.status in ('successful', 'failed'), 'run %s (rc=%s)\n%s' % (run.status, run.rc, run.stdout[-3000:])
    unreachable = [h for h, s in run.stats.items() if s.get('unreachable')]
    assert not unreachable, 'hosts unreachable: %s\n%s' % (unreachable, run.stdout[-3000:])
    return run


# What every site sets once it has checked the NGC-hosted network-operator archive of its
# release (roles/network_operator: that release's row carries no sha256); preflight checks
# only its form, and no test downloads the chart. The Kubernetes package source is a mirror
# on the controller's disk (tests/fixtures/kubernetes-packages/Packages, a hand-written
# index), so preflight's check that the release exists reads no network.
SITE_PINS = {'network_operator_chart_sha256': 'c0ffee' * 10 + 'c0de',
             'kubernetes_packages_repo_url': (ROOT / 'tests' / 'fixtures' / 'kubernetes-packages').as_uri() + '/'}


def local_host(**hostvars):
    """Inventory variables of a host that runs on the controller with the venv's python,
    with the site's pins (SITE_PINS) unless the test gives its own."""
    hostvars = dict(SITE_PINS, **hostvars)
    hostvars.update(ansible_connection='local', ansible_python_interpreter=PYTHON)
    return hostvars


# Names the node resolves (its /etc/hosts), as a site would have them.
LAB_HOSTS = {'vipu-ctrl.pod.test': '10.247.208.5', 'vipu-pod2.test': '10.5.212.116'}
