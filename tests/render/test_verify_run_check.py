"""How verify runs one check (roles/verify/tasks/run_check.yml): what the check's task file
registered is kept under the check's id, a failing step is kept with its error, the next
check starts with nothing seen, and the bookkeeping costs each check two task results (the
include of its task file and the keeping of what it saw), plus the rescue of a failed one.

Two stand-in checks run through ansible-runner on this machine over the local connection:
one registers an observation, the other fails at its first step; and the real memlock
check of the list, whose one reading answers both its rows, on a node without systemd.
"""
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from playbook_runner import run_playbook  # noqa: E402

RUN_CHECK = ROOT / "roles" / "verify" / "tasks" / "run_check.yml"


def test_each_check_is_kept_apart_and_costs_two_results(tmp_path):
    (tmp_path / "seen.yml").write_text(json.dumps([
        {"name": "Register what it saw", "ansible.builtin.set_fact": {"__verify_seen": {"row": {"observed": "seen"}}}}]))
    (tmp_path / "broken.yml").write_text(json.dumps([
        {"name": "Broken step", "ansible.builtin.fail": {"msg": "boom"}},
        {"name": "Never reached", "ansible.builtin.set_fact": {"__verify_seen": {"row": {"observed": "late"}}}}]))
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"hosts": {"node-a": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(json.dumps([{
        "name": "Two checks", "hosts": "all", "gather_facts": False,
        "vars": {"__verify_seen_all": {}, "__verify_seen": {}},
        "tasks": [
            {"name": "Run the checks", "ansible.builtin.include_tasks": str(RUN_CHECK),
             "loop": [{"id": "seen", "tasks": str(tmp_path / "seen.yml")},
                      {"id": "broken", "tasks": str(tmp_path / "broken.yml")}],
             "loop_control": {"loop_var": "__verify_run"}},
            {"name": "Show what was kept", "ansible.builtin.debug": {"var": "__verify_seen_all"}}]}]))
    run = run_playbook(tmp_path / "play.yml", tmp_path / "hosts.json", tmp_path)
    assert run.status == "successful", run.stdout[-3000:]
    assert run.result("Show what was kept", "node-a")["__verify_seen_all"] == {
        "seen": {"row": {"observed": "seen"}},
        "broken": {"step": "Broken step", "error": "boom"}}
    bookkeeping = [event for event in run.host_events(host="node-a")
                   if str(event["event_data"].get("task_path", "")).startswith(str(RUN_CHECK) + ":")]
    assert len(bookkeeping) == 2 * 2 + 1, [event["event_data"]["task"] for event in bookkeeping]


def test_when_systemd_cannot_answer_both_memlock_rows_fail_with_its_error(tmp_path):
    """The memlock check as the list declares it, on a node whose systemctl cannot reach
    systemd (a stand-in first on PATH that prints what systemctl 252 prints there)."""
    checks = yaml.safe_load((ROOT / "roles" / "verify" / "vars" / "main.yml").read_text())["__verify_checks"]
    memlock = next(check for check in checks if check["id"] == "memlock")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text("#!/bin/sh\necho 'Failed to connect to bus: Host is down' >&2\nexit 1\n")
    (bin_dir / "systemctl").chmod(0o755)
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"hosts": {"node-a": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    task_file = str(ROOT / "roles" / "verify" / "tasks" / memlock["tasks"])
    (tmp_path / "play.yml").write_text(json.dumps([{
        "name": "The memlock check", "hosts": "all", "gather_facts": False,
        "environment": {"PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % bin_dir},
        "vars": {"__verify_seen_all": {}, "__verify_seen": {}, "verify_containerd_service": "containerd"},
        "tasks": [
            {"name": "Run the check", "ansible.builtin.include_tasks": str(RUN_CHECK),
             "vars": {"__verify_run": dict(memlock, tasks=task_file)}},
            {"name": "Show the rows", "ansible.builtin.debug": {
                "msg": "{{ [__verify_run] | verify_rows({'run': [__verify_run]}, __verify_seen_all, "
                       "inventory_hostname) }}"},
             "vars": {"__verify_run": memlock}}]}]))
    run = run_playbook(tmp_path / "play.yml", tmp_path / "hosts.json", tmp_path)
    assert run.status == "successful", run.stdout[-3000:]
    rows = run.result("Show the rows", "node-a")["msg"]
    assert [(row["check"], row["status"]) for row in rows] == [
        ("containerd LimitMEMLOCK (systemd)", "FAIL"), ("containerd memlock (running process)", "FAIL")]
    assert all("Failed to connect to bus: Host is down" in row["observed"] for row in rows), rows
