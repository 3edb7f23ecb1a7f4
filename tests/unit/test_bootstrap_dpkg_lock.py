"""scripts/bootstrap waits for a held dpkg lock (as unattended-upgrades holds it at a cloud
image's first boot), says who holds it, and goes on once it is free; it gives up after
BOOTSTRAP_DPKG_LOCK_WAIT seconds naming the holder. It makes .venv again when another
interpreter made it, and leaves a .venv of its interpreter at requirements.txt's stamp alone.

The script runs from a copy of the repository's scripts/ in tmp_path, with its lock files
there (BOOTSTRAP_DPKG_LOCKS), a .venv already at requirements.txt's stamp made by the
interpreter PYTHON names (a stand-in that answers bootstrap's question for its path and
version, and makes a .venv of stand-ins for `-m venv`), and dpkg-query, apt-get and
apt-cache stand-ins on PATH: dpkg-query says a package is missing, apt-get fails as the
real one does while the lock is held ("Could not get lock", exit 100) and records when it
ran and with which arguments. The machine's own apt is never touched."""
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

APT_GET = '''#!/bin/sh
if ! flock -n {lock} true; then
  echo "E: Could not get lock {lock}. It is held by another process" >&2
  exit 100
fi
echo "$(date +%s.%N) $*" >> {log}
'''


# The interpreter's answer to `-c 'print(sys.executable, version)'` is STAND_IN_INTERPRETER;
# `-m venv --clear .venv` makes .venv/bin/python and a pip that logs its arguments.
PYTHON = '''#!/bin/sh
echo "$*" >> {log}
case "$1" in
  -c) echo "$STAND_IN_INTERPRETER" ;;
  -m) rm -rf .venv; mkdir -p .venv/bin
      printf '#!/bin/sh\\n' > .venv/bin/python
      printf '#!/bin/sh\\necho "pip $*" >> {log}\\n' > .venv/bin/pip
      chmod +x .venv/bin/python .venv/bin/pip ;;
esac
'''
INTERPRETER = '/opt/stand-in/bin/python3 3.11.2'


@pytest.fixture
def repo(tmp_path):
    if not shutil.which('flock'):
        pytest.fail('needs flock(1) (util-linux)')
    (tmp_path / 'scripts').mkdir()
    shutil.copy(ROOT / 'scripts' / 'bootstrap', tmp_path / 'scripts' / 'bootstrap')
    # --tests makes ansible-test's sanity environments (scripts/sanity --prime-venvs): a stand-in here.
    (tmp_path / 'scripts' / 'sanity').write_text('#!/bin/sh\n')
    (tmp_path / 'scripts' / 'sanity').chmod(0o755)
    requirements = tmp_path / 'requirements.txt'
    requirements.write_text('ansible-core\n')
    venv_bin = tmp_path / '.venv' / 'bin'
    venv_bin.mkdir(parents=True)
    (venv_bin / 'python').write_text('#!/bin/sh\n')
    (venv_bin / 'python').chmod(0o755)
    (tmp_path / '.venv' / '.interpreter').write_text(INTERPRETER + '\n')
    (tmp_path / '.venv' / '.requirements.sha256').write_text(stamp(requirements, INTERPRETER))
    lock, log, bin_dir = tmp_path / 'lock-frontend', tmp_path / 'apt-get.log', tmp_path / 'bin'
    lock.touch()
    bin_dir.mkdir()
    stand_ins = {'apt-get': APT_GET.format(lock=lock, log=log), 'dpkg-query': '#!/bin/sh\nexit 1\n',
                 'apt-cache': '#!/bin/sh\nexit 1\n', 'id': '#!/bin/sh\necho 0\n',
                 'stand-in-python': PYTHON.format(log=tmp_path / 'python.log')}
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']), BOOTSTRAP_DPKG_LOCKS=str(lock),
               PYTHON=str(bin_dir / 'stand-in-python'), STAND_IN_INTERPRETER=INTERPRETER)
    return {'dir': tmp_path, 'lock': lock, 'log': log, 'env': env, 'python_log': tmp_path / 'python.log'}


def stamp(requirements, interpreter):
    """.venv/.requirements.sha256 as scripts/bootstrap writes it: requirements.txt and the
    interpreter's path and version."""
    return hashlib.sha256(requirements.read_bytes() + interpreter.encode() + b'\n').hexdigest()


def hold(lock, seconds):
    """A process holding lock for seconds, and the time it will let go (at the earliest)."""
    start = time.time()
    holder = subprocess.Popen(['flock', str(lock), 'sleep', str(seconds)])
    time.sleep(0.5)
    return holder, start + seconds


def test_bootstrap_waits_for_the_lock_and_says_who_holds_it(repo):
    holder, released = hold(repo['lock'], 5)
    try:
        result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=repo['env'], capture_output=True,
                                text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'waiting for the dpkg lock, held by' in result.stdout and 'sleep 5' in result.stdout, result.stdout
    assert float(repo['log'].read_text().split()[0]) >= released
    update, install = [line.split()[1:] for line in repo['log'].read_text().splitlines()]
    # apt itself waits for the dpkg lock for what is left of the wait (900 s by default)
    assert update[0] == '-o' and update[1].startswith('DPkg::Lock::Timeout=') and update[2:] == ['update', '-qq']
    assert 850 <= int(update[1].split('=')[1]) <= 900
    assert install[0] == '-o' and install[1].startswith('DPkg::Lock::Timeout=') and install[2:5] == ['install', '-y', '-qq']


def test_bootstrap_tries_again_when_another_apt_process_takes_the_lock_first(repo):
    # The lock is free when bootstrap looks, and taken by another apt process before apt-get
    # starts: the first apt-get fails as apt does ("Could not get lock", exit 100).
    lost = repo['dir'] / 'lost-once'
    apt_get = repo['dir'] / 'bin' / 'apt-get'
    apt_get.write_text('#!/bin/sh\nif [ ! -e %s ]; then touch %s; echo "E: Could not get lock /var/lib/apt/lists/lock. '
                       'It is held by process 4242 (apt-get)" >&2; exit 100; fi\n%s'
                       % (lost, lost, apt_get.read_text().split('\n', 1)[1]))
    result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=repo['env'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'another apt process took the lock before apt-get update; waiting again' in result.stdout, result.stdout
    assert [line.split()[3:] for line in repo['log'].read_text().splitlines()][0] == ['update', '-qq']


def test_bootstrap_shows_apts_words_when_it_fails_for_another_reason(repo):
    apt_get = repo['dir'] / 'bin' / 'apt-get'
    apt_get.write_text('#!/bin/sh\necho "E: Unable to locate package python3-venv" >&2\nexit 100\n')
    result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=repo['env'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert 'E: Unable to locate package python3-venv' in result.stderr, result.stderr
    assert 'waiting again' not in result.stdout


@pytest.mark.parametrize('args, wanted, unwanted', [
    ([], ['python3-venv', 'openssh-client'], ['qemu-system-x86', 'debootstrap', 'containernetworking-plugins']),
    (['--lab'], ['python3-venv', 'qemu-system-x86', 'debootstrap'], ['containernetworking-plugins']),
    (['--tests'], ['python3-venv', 'containernetworking-plugins', 'iproute2'], ['qemu-system-x86', 'debootstrap']),
])
def test_bootstrap_installs_for_a_controller_only_what_it_is_asked_for(repo, args, wanted, unwanted):
    result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')] + args, env=repo['env'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    install = next(line.split() for line in repo['log'].read_text().splitlines() if ' install ' in line)
    assert set(wanted) <= set(install), install
    assert not set(unwanted) & set(install), install


def test_bootstrap_gives_up_after_its_wait_naming_the_holder(repo):
    holder, _ = hold(repo['lock'], 60)
    try:
        result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], timeout=60, capture_output=True, text=True,
                                env=dict(repo['env'], BOOTSTRAP_DPKG_LOCK_WAIT='2'))
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 1
    assert 'the dpkg lock is still held after 2s by %d (flock' % holder.pid in result.stderr, result.stderr
    assert not repo['log'].exists()


def test_a_venv_another_interpreter_made_is_made_again_by_this_one_and_then_left_alone(repo):
    requirements = repo['dir'] / 'requirements.txt'
    other = '/usr/bin/python3 3.12.3'
    env = dict(repo['env'], STAND_IN_INTERPRETER=other)
    first = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=env, cwd=repo['dir'], capture_output=True,
                           text=True, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    assert 'installing the Python toolchain into .venv (%s)' % other in first.stdout, first.stdout
    calls = repo['python_log'].read_text().splitlines()
    assert '-m venv --clear .venv' in calls, calls
    assert calls[-1] == 'pip install -q -r requirements.txt', calls
    assert (repo['dir'] / '.venv' / '.interpreter').read_text() == other + '\n'
    assert (repo['dir'] / '.venv' / '.requirements.sha256').read_text().strip() == stamp(requirements, other)

    again = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=env, cwd=repo['dir'], capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert 'installing the Python toolchain' not in again.stdout, again.stdout
    assert repo['python_log'].read_text().splitlines()[len(calls):] == ['-c import sys; print(sys.executable, '
                                                                        'sys.version.split()[0])'], 'a second run changed .venv'


def test_the_venv_of_this_interpreter_at_the_stamp_is_left_alone(repo):
    result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], env=repo['env'], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'installing the Python toolchain' not in result.stdout, result.stdout
    assert not [c for c in repo['python_log'].read_text().splitlines() if not c.startswith('-c ')]


def test_an_interpreter_older_than_ansible_core_needs_is_refused_naming_it_and_the_fix(repo):
    old = '/usr/bin/python3 3.10.12'
    (repo['dir'] / '.venv' / '.requirements.sha256').write_text('another stamp')
    result = subprocess.run([str(repo['dir'] / 'scripts' / 'bootstrap')], capture_output=True, text=True, timeout=120,
                            env=dict(repo['env'], STAND_IN_INTERPRETER=old))
    assert result.returncode == 1, result.stdout + result.stderr
    assert ('ansible-core 2.19 (requirements.txt) runs on Python 3.11 or newer; /usr/bin/python3 is 3.10.12.'
            in result.stderr), result.stderr
    assert 'PYTHON=python3.11 scripts/bootstrap' in result.stderr, result.stderr
    assert [c for c in repo['python_log'].read_text().splitlines() if not c.startswith('-c ')] == [], 'a .venv was made'
