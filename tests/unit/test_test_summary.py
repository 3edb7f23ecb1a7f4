"""scripts/test's closing summary, run for real on a throwaway copy of the repository layout
whose unit tier holds a passing, a skipped and a failing test with a long name."""

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import pytest

def test_passes():
    pass

@pytest.mark.skip(reason="no headless browser: apt-get install -y chromium")
def test_is_skipped():
    pass

@pytest.mark.parametrize("value", ["a-parameter-long-enough-to-push-the-name-past-any-fixed-column-width"])
def test_fails_with_a_long_name(value):
    assert value == "something else"
'''


def run_summary(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "tests" / "unit").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test", repo / "scripts" / "test")
    (repo / "scripts" / "bootstrap").write_text("#!/bin/sh\nexit 0\n")
    (repo / "scripts" / "bootstrap").chmod(0o755)
    (repo / ".venv").symlink_to((ROOT / ".venv").resolve())
    (repo / "ansible.cfg").write_text("")
    (repo / "tests" / "unit" / "test_sample.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([str(repo / "scripts" / "test"), "unit"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_summary_counts_skips_lists_their_reasons_and_keeps_its_columns(tmp_path):
    proc = run_summary(tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert out.rstrip().splitlines()[-1] == "summary: 1 passed, 1 failed, 1 skipped"
    assert re.search(r"^unit +pytest: 1 passed, 1 failed, 1 skipped FAIL +\d+s$", out, re.M), out
    assert ("skipped (1), with the reason:\n  [unit] tests.unit.test_sample::test_is_skipped\n"
            "      no headless browser: apt-get install -y chromium\n") in out


def test_a_long_check_name_widens_its_column(tmp_path):
    """The static tier with stand-in linters: a playbook name longer than any fixed column."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "playbooks").mkdir()
    (repo / "inventories" / "lab").mkdir(parents=True)
    (repo / "library").mkdir()
    shutil.copy(ROOT / "scripts" / "test", repo / "scripts" / "test")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("scripts/bootstrap", ".venv/bin/yamllint", ".venv/bin/ansible-lint", ".venv/bin/ansible-playbook"):
        (repo / tool).write_text("#!/bin/sh\nexit 0\n")
        (repo / tool).chmod(0o755)
    (repo / "inventories" / "lab" / "hosts.yml").write_text("all: {}\n")
    (repo / "site.yml").write_text("[]\n")
    long_name = "a_playbook_whose_name_is_much_longer_than_the_old_fifty_eight_columns.yml"
    (repo / "playbooks" / long_name).write_text("[]\n")
    proc = subprocess.run([str(repo / "scripts" / "test"), "static"], cwd=repo, capture_output=True, text=True,
                          timeout=300)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("static ")]
    assert any(long_name in row for row in rows), proc.stdout
    # Every row's status starts in the same column, after the longest name.
    columns = {re.search(r" (PASS|FAIL) +\d+s$", row).start() for row in rows}
    assert len(columns) == 1, rows
    assert columns.pop() > len("static       syntax-check playbooks/%s (inventories/lab)" % long_name) - 1
