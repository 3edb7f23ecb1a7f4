"""testlib.process_alive: a running process is alive; one that ended is not, also while it
is a zombie its parent has not reaped (the API tier's cluster stop waits on its own
children, which stay zombies until reaped)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testlib import process_alive  # noqa: E402


def _state(pid):
    stat = Path('/proc/%d/stat' % pid).read_text()
    return stat[stat.rindex(')') + 1:].split()[0]


def test_a_running_child_is_alive_and_its_unreaped_end_is_not():
    child = subprocess.Popen(['sleep', '30'])
    try:
        assert process_alive(child.pid)
        os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _state(child.pid) != 'Z' and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(child.pid) == 'Z'          # ended, not reaped: /proc still lists it
        assert not process_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid)


def test_a_process_of_another_name_with_parentheses_is_read_past_its_name():
    # comm "a) R (b" would read as state "R" if the stat line were split at the first ")"
    script = "open('/proc/self/comm', 'w').write('a) Z (b'); import time; time.sleep(30)"
    child = subprocess.Popen([sys.executable, '-c', script])
    try:
        comm = Path('/proc/%d/comm' % child.pid)
        deadline = time.monotonic() + 10
        while comm.read_text().strip() != 'a) Z (b' and time.monotonic() < deadline:
            time.sleep(0.02)
        assert comm.read_text().strip() == 'a) Z (b'
        assert process_alive(child.pid)
    finally:
        child.kill()
        child.wait()
