"""scripts/vm's guest priority (IPU_K8S_VM_NICE, scripts/vm/common.sh), on the real kernel: a
process in a session of its own, as qemu -daemonize leaves it, gets the value as its nice and
as its session's autogroup nice; an empty value changes neither; boot.sh refuses a value that
is not a number before it boots anything."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMON = ROOT / 'scripts' / 'vm' / 'common.sh'


@pytest.fixture
def session():
    """A sleeping process in a new session (its own autogroup), killed afterwards."""
    proc = subprocess.Popen(['sleep', '60'], start_new_session=True)
    yield proc.pid
    proc.kill()
    proc.wait()


def priorities(pid):
    """(nice, autogroup nice or None when the kernel has no autogroups) of a process."""
    nice = int(subprocess.run(['ps', '-o', 'ni=', '-p', str(pid)], capture_output=True, text=True,
                              check=True).stdout)
    autogroup = Path('/proc/%d/autogroup' % pid)
    return nice, int(re.search(r'nice (-?\d+)', autogroup.read_text()).group(1)) if autogroup.exists() else None


def prioritise(pid, value):
    return subprocess.run(['bash', '-c', 'source "$1"; ipu_k8s_vm_prioritise "$2"', '_', str(COMMON), str(pid)],
                          env=dict(os.environ, IPU_K8S_VM_NICE=value), capture_output=True, text=True, check=True)


def test_the_guest_and_its_session_get_the_nice_value(session):
    value = -7 if os.geteuid() == 0 else 19
    assert value not in priorities(session)
    out = prioritise(session, str(value))
    nice, autogroup = priorities(session)
    assert nice == value, out.stderr
    assert autogroup in (value, None), out.stderr


def test_an_empty_value_leaves_the_guest_alone(session):
    before = priorities(session)
    prioritise(session, '')
    assert priorities(session) == before


def test_boot_refuses_a_value_that_is_not_a_nice_value(tmp_path):
    proc = subprocess.run([str(ROOT / 'scripts' / 'vm' / 'boot.sh'), '--dir', str(tmp_path / 'vm')],
                          env=dict(os.environ, IPU_K8S_VM_NICE='high'), capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("ERROR: IPU_K8S_VM_NICE is 'high': give a nice value from -20 to 19, "
                                   "or leave it empty"), proc.stderr
    assert not (tmp_path / 'vm').exists()
