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


def run_summary(tmp_path, tests=TESTS, floor=None):
    """scripts/test unit on a copy holding tests as its one unit test file; floor, when
    given, replaces the unit tier's declared floor in the copy."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "tests" / "unit").mkdir(parents=True)
    script = (ROOT / "scripts" / "test").read_text()
    if floor is not None:
        script, replaced = re.subn(r"\[unit\]=\d+", "[unit]=%d" % floor, script)
        assert replaced == 1
    (repo / "scripts" / "test").write_text(script)
    (repo / "scripts" / "test").chmod(0o755)
    (repo / "scripts" / "bootstrap").write_text("#!/bin/sh\nexit 0\n")
    (repo / "scripts" / "bootstrap").chmod(0o755)
    (repo / ".venv").symlink_to((ROOT / ".venv").resolve())
    (repo / "ansible.cfg").write_text("")
    (repo / "tests" / "unit" / "test_sample.py").write_text(tests)
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


def test_the_slowest_tests_are_listed_slowest_first_before_the_tier_times(tmp_path):
    proc = run_summary(tmp_path, "import time\n\ndef test_quick():\n    pass\n\n"
                                 "def test_slow():\n    time.sleep(1.2)\n\ndef test_middling():\n    time.sleep(0.6)\n",
                       floor=1)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    listed = re.findall(r"^ +(\d+\.\d)  \[unit\] tests\.unit\.test_sample::(\w+)$", out, re.M)
    assert [name for _, name in listed] == ["test_slow", "test_middling", "test_quick"], out
    assert float(listed[0][0]) >= 1.2 and float(listed[1][0]) >= 0.6
    assert out.index("the slowest ten tests") < out.index("each tier:") < out.index("summary:")


PASSING = '''
def test_one():
    pass

def test_two():
    pass
'''


def test_a_tier_whose_tests_all_skip_fails(tmp_path):
    proc = run_summary(tmp_path, TESTS.split("@pytest.mark.parametrize")[0], floor=1)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^unit +pytest: 1 passed, 0 failed, 1 skipped PASS", proc.stdout, re.M), proc.stdout
    proc = run_summary(tmp_path / "all-skipped", "import pytest\n\n@pytest.mark.skip(reason='no root')\n"
                       "def test_skipped():\n    pass\n", floor=1)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"^unit +pytest: 0 passed, 0 failed, 1 skipped \(every test skipped\) FAIL", proc.stdout,
                     re.M), proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 0 passed, 1 failed, 1 skipped"


def test_a_tier_that_runs_fewer_tests_than_its_floor_fails(tmp_path):
    """The unit tier's floor as scripts/test declares it: two passing tests are far below."""
    proc = run_summary(tmp_path, PASSING)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    floor = int(re.search(r"\[unit\]=(\d+)", (ROOT / "scripts" / "test").read_text()).group(1))
    assert floor > 100
    assert re.search(r"^unit +pytest: 2 passed, 0 failed, 0 skipped \(ran 2, floor %d\) FAIL" % floor,
                     proc.stdout, re.M), proc.stdout
    proc = run_summary(tmp_path / "at-floor", PASSING, floor=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1] == "summary: 2 passed, 0 failed, 0 skipped"


def test_each_tier_time_and_counts_close_the_output(tmp_path):
    proc = run_summary(tmp_path)
    lines = proc.stdout.rstrip().splitlines()
    assert re.fullmatch(r"each tier: +tier +time +passed +failed +skipped", lines[-4]), lines[-4:]
    assert re.fullmatch(r" +unit +\d+:\d\d +1 +1 +1", lines[-3]), lines[-4:]
    assert re.fullmatch(r" +total +\d+:\d\d", lines[-2]), lines[-4:]


def run_static(tmp_path, module=None, tools=None):
    """scripts/test static on a copy whose linters are stand-ins: each tool of tools (name:
    shell script) as given, the others passing; `module`, a module file of that name."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "playbooks").mkdir()
    (repo / "inventories" / "lab").mkdir(parents=True)
    (repo / "plugins" / "modules").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test", repo / "scripts" / "test")
    (repo / ".venv" / "bin").mkdir(parents=True)
    for tool in ("scripts/bootstrap", "scripts/sanity", ".venv/bin/yamllint", ".venv/bin/ansible-lint", ".venv/bin/ansible-playbook"):
        (repo / tool).write_text((tools or {}).get(Path(tool).name, "#!/bin/sh\nexit 0\n"))
        (repo / tool).chmod(0o755)
    (repo / "inventories" / "lab" / "hosts.yml").write_text("all: {}\n")
    (repo / "site.yml").write_text("[]\n")
    (repo / "playbooks" / "verify.yml").write_text("[]\n")
    if module:
        (repo / "plugins" / "modules" / ("%s.py" % module)).write_text("")
    return subprocess.run([str(repo / "scripts" / "test"), "static"], cwd=repo, capture_output=True, text=True,
                          timeout=300)


def why_it_failed(out):
    """The lines scripts/test prints between the closing table and the slowest tests (or the tier times)."""
    after = out.split("why it failed (the full output is above):\n", 1)[1]
    return re.split(r"\n\n(?:the slowest ten tests|each tier:)", after, maxsplit=1)[0]


def test_each_failure_is_said_again_next_to_the_summary(tmp_path):
    """A failed test by its name and message; a failed check by the lines of its output that
    say why (a failed task, a failed Molecule step) or, when none does, its last lines."""
    out = run_summary(tmp_path).stdout
    name, message = why_it_failed(out).splitlines()
    assert name == ("[unit] tests.unit.test_sample::test_fails_with_a_long_name"
                    "[a-parameter-long-enough-to-push-the-name-past-any-fixed-column-width]"), out
    assert re.fullmatch(r"    AssertionError: assert 'a-parameter-\S+' == 'something else'", message), out
    noise = "".join("echo 'ok: [node1] => step %d'\n" % step for step in range(40))
    proc = run_static(tmp_path / "static", tools={
        "yamllint": "#!/bin/sh\necho 'site.yml'\necho '  2:6  error  too many spaces after colon'\nexit 1\n",
        "ansible-lint": "#!/bin/sh\n%secho 'fatal: [node1]: FAILED! => {\"msg\": \"the drop-in is missing\"}'\n%s"
                        "echo 'INFO     [lab > side_effect] Executed: Failed'\n%sexit 2\n" % (noise, noise, noise)})
    assert proc.returncode == 1
    assert why_it_failed(proc.stdout).splitlines()[:12] == [
        "[static] yamllint", "    site.yml", "      2:6  error  too many spaces after colon",
        "[static] ansible-lint --offline --profile production",
        "    fatal: [node1]: FAILED! => {\"msg\": \"the drop-in is missing\"}",
        "    ok: [node1] => step 0", "    ok: [node1] => step 1", "    ok: [node1] => step 2",
        "    INFO     [lab > side_effect] Executed: Failed",
        "    ok: [node1] => step 0", "    ok: [node1] => step 1", "    ok: [node1] => step 2"], proc.stdout


def test_a_long_check_name_widens_its_column(tmp_path):
    """The static tier with stand-in linters: a module name longer than any fixed column."""
    long_name = "a_module_whose_name_is_much_longer_than_the_old_fifty_eight_columns"
    proc = run_static(tmp_path, long_name)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("static ")]
    assert any(long_name in row for row in rows), proc.stdout
    # Every row's status starts in the same column, after the longest name.
    columns = {re.search(r" (PASS|FAIL) +\d+s$", row).start() for row in rows}
    assert len(columns) == 1, rows
    assert columns.pop() > len("static       ansible-doc ipu_k8s.cluster.%s" % long_name) - 1


def lanes_repo(tmp_path, times, tests):
    """A copy of the layout scripts/test needs for its lanes, its molecule a stand-in on PATH
    that notes in times when it starts and ends and its nice value and, before it ends, waits
    (up to a minute) until times holds an 'api start' line; tests: {tier: its one test file}."""
    repo = tmp_path / "repo"
    for folder in ("scripts/vm", "scripts/k8s-api", "molecule/lab", ".venv/bin"):
        (repo / folder).mkdir(parents=True)
    script = re.sub(r"\[(unit|api|render)\]=\d+", r"[\1]=1", (ROOT / "scripts" / "test").read_text())
    executables = {
        "scripts/test": script,
        "scripts/bootstrap": "#!/bin/sh\nexit 0\n",
        "scripts/vm/build-image.sh": "#!/bin/sh\nexit 0\n",
        "scripts/vm/build-container-image.sh": "#!/bin/sh\nexit 0\n",
        "scripts/k8s-api/build": "#!/bin/sh\nexit 0\n",
        # the VM lock is the real lab's: a Molecule run of this machine must not hold this one up
        ".venv/bin/flock": "#!/bin/sh\nshift\nexec \"$@\"\n",
        ".venv/bin/molecule": "#!/bin/sh\necho \"molecule start $(date +%%s.%%N)\" >> %s\necho 'molecule says hello'\n"
                              "echo \"molecule nice $(nice)\" >> %s\n"
                              "i=0\nuntil grep -qs '^api start' %s || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done\n"
                              "sleep 3\necho \"molecule end $(date +%%s.%%N)\" >> %s\n" % (times, times, times, times),
    }
    for name, text in executables.items():
        (repo / name).write_text(text)
        (repo / name).chmod(0o755)
    for tool in ("python", "python3", "pytest"):
        (repo / ".venv" / "bin" / tool).symlink_to(ROOT / ".venv" / "bin" / tool)
    (repo / "molecule" / "lab" / "molecule.yml").write_text("---\n")
    (repo / "ansible.cfg").write_text("")
    for tier, text in tests.items():
        (repo / "tests" / tier).mkdir(parents=True)
        (repo / "tests" / tier / "test_sample.py").write_text(text)
    return repo


def run_lanes(repo, *tiers):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([str(repo / "scripts" / "test"), *tiers], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)


def noted_times(times):
    return dict((" ".join(line.split()[:2]), float(line.split()[2])) for line in times.read_text().splitlines())


def test_the_api_and_molecule_tiers_run_in_lanes_of_their_own_and_are_reported_in_order(tmp_path):
    """scripts/test api molecule on a copy whose api tier is one pytest test and whose
    molecule is a stand-in on PATH: each notes when it starts and its nice value, waits (up
    to a minute) for the other to start, and notes when it ends; the two overlap, the
    molecule output follows the api tier's, both count in the summary, and the molecule lane
    runs at the higher priority. Run one after the other, the first would end before the
    second started, however slow a busy machine is."""
    times = tmp_path / "times"
    repo = lanes_repo(tmp_path, times, {"api": (
        "import os\nimport time\n\ndef test_api():\n"
        "    with open(%r, 'a') as out:\n"
        "        out.write('api start %%f\\napi nice %%d\\n' %% (time.time(), os.nice(0)))\n"
        "    deadline = time.time() + 60\n"
        "    while 'molecule start' not in open(%r).read() and time.time() < deadline:\n"
        "        time.sleep(0.1)\n"
        "    time.sleep(3)\n"
        "    with open(%r, 'a') as out:\n        out.write('api end %%f\\n' %% time.time())\n"
        % (str(times), str(times), str(times)))})
    proc = run_lanes(repo, "api", "molecule")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    noted = noted_times(times)
    assert noted["molecule start"] < noted["api end"] and noted["api start"] < noted["molecule end"], noted
    # The VMs' lane keeps the caller's priority; the api lane runs at a lower one (a higher nice).
    assert noted["api nice"] > noted["molecule nice"], noted
    assert out.index("==> [api] pytest") < out.index("==> [molecule] (ran beside the other tiers)") \
        < out.index("molecule says hello"), out
    assert re.search(r"^molecule +molecule test -s lab +PASS", out, re.M), out
    assert out.rstrip().splitlines()[-1] == "summary: 2 passed, 0 failed, 0 skipped", out
    # The total is the wall clock of lanes that overlapped: at least the longer tier, less than the two added up
    # (however slow a busy machine makes each).
    seconds = dict((name, int(m) * 60 + int(s)) for name, m, s in
                   re.findall(r"^ +(api|molecule|total) +(\d+):(\d\d)\b", out, re.M))
    assert max(seconds["api"], seconds["molecule"]) <= seconds["total"] < seconds["api"] + seconds["molecule"], out


def test_the_render_tier_follows_the_molecule_tier_in_its_lane(tmp_path):
    """scripts/test unit render molecule on a copy: the render tier's one test notes when it
    starts, which is after the molecule stand-in ended (it waits for an 'api start' line,
    which the unit tier's test writes once it runs). In the other tiers' lane, render would
    start while molecule still waits."""
    times = tmp_path / "times"
    repo = lanes_repo(tmp_path, times, {
        "unit": "import time\n\ndef test_unit():\n    time.sleep(1)\n"
                "    with open(%r, 'a') as out:\n        out.write('api start %%f\\n' %% time.time())\n" % str(times),
        "render": "import time\n\ndef test_render():\n"
                  "    with open(%r, 'a') as out:\n"
                  "        out.write('render start %%f\\n' %% time.time())\n" % str(times)})
    proc = run_lanes(repo, "unit", "render", "molecule")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    noted = noted_times(times)
    assert noted["molecule end"] < noted["render start"], noted
    assert out.rstrip().splitlines()[-1] == "summary: 3 passed, 0 failed, 0 skipped", out
    assert re.search(r"^ +render +\d+:\d\d +1 +0 +0$", out, re.M), out
