"""scripts/bootstrap waits for a held dpkg lock (as unattended-upgrades holds it at a cloud
image's first boot), says who holds it, and goes on once it is free; it gives up after
BOOTSTRAP_DPKG_LOCK_WAIT seconds naming the holder.

The script runs from a copy of the repository's scripts/ in tmp_path, with its lock files
there (BOOTSTRAP_DPKG_LOCKS), a .venv already at requirements.txt's stamp, and dpkg-query,
apt-get and apt-cache stand-ins on PATH: dpkg-query says a package is missing, apt-get
fails as the real one does while the lock is held ("Could not get lock", exit 100) and
records when it ran and with which arguments. The machine's own apt is never touched."""
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
    (tmp_path / '.venv' / '.requirements.sha256').write_text(hashlib.sha256(requirements.read_bytes()).hexdigest())
    lock, log, bin_dir = tmp_path / 'lock-frontend', tmp_path / 'apt-get.log', tmp_path / 'bin'
    lock.touch()
    bin_dir.mkdir()
    stand_ins = {'apt-get': APT_GET.format(lock=lock, log=log), 'dpkg-query': '#!/bin/sh\nexit 1\n',
                 'apt-cache': '#!/bin/sh\nexit 1\n', 'id': '#!/bin/sh\necho 0\n'}
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']), BOOTSTRAP_DPKG_LOCKS=str(lock))
    return {'dir': tmp_path, 'lock': lock, 'log': log, 'env': env}


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
