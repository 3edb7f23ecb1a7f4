"""The verify report: table, JSON and HTML files and the final verdict, for given result rows.

Runs the verify role's report entry point (tasks_from: report) through ansible-playbook
on this machine over the local connection, with two inventory hosts that carry the rows
the checks would have recorded (__verify_results). Only files under tmp_path are
written; no node is touched.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ROWS_A = [
    {"host": "node-a", "check": "containerd LimitMEMLOCK (systemd)", "expected": "infinity",
     "observed": "infinity", "status": "PASS"},
    {"host": "node-a", "check": "RDMA data path (macvlan to V-IPU)", "expected": "reply from the V-IPU controller",
     "observed": "3 packets transmitted, 3 received from 10.247.208.10", "status": "PASS"},
    {"host": "node-a", "check": "Multus and Whereabouts CNI files", "expected": "needs the cluster",
     "observed": "no cluster in the lab: verify_cluster skipped", "status": "SKIP"},
]
ROW_B_FAIL = {"host": "node-b", "check": "containerd memlock (running process)",
              "expected": "soft unlimited, hard unlimited", "observed": "soft 8388608, hard 8388608 (pid 812)",
              "status": "FAIL"}
ROW_B_PASS = dict(ROW_B_FAIL, observed="soft unlimited, hard unlimited (pid 812)", status="PASS")


def run_report(tmp_path, rows_by_host, fail_host=None):
    hosts = {}
    for host, rows in rows_by_host.items():
        hosts[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "__verify_results": rows}
    inventory = {"all": {"children": {"k8s_cluster": {"hosts": hosts}}}}
    (tmp_path / "hosts.json").write_text(json.dumps(inventory))
    playbook = [{
        "name": "Report given results",
        "hosts": "k8s_cluster",
        "gather_facts": False,
        "tasks": [
            {"name": "Drop one host out of the play, as an unreachable node would",
             "ansible.builtin.fail": {"msg": "simulated host failure"},
             "when": "inventory_hostname == %s" % json.dumps(fail_host or "")},
            {"name": "Report", "ansible.builtin.import_role": {"name": "verify", "tasks_from": "report"}},
        ],
    }]
    (tmp_path / "report.yml").write_text(json.dumps(playbook))
    report_dir = tmp_path / "reports"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.json"),
         "-e", "verify_report_dir=%s" % report_dir, str(tmp_path / "report.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    reports = sorted(report_dir.glob("verify-*.json")) if report_dir.is_dir() else []
    return result, reports


def table_lines(stdout):
    """The printed report: from the header line to the counts line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "HOST" in line and "OBSERVED" in line and "STATUS" in line)
    end = next(i for i in range(start, len(lines)) if " checks: " in lines[i])
    return lines[start:end + 1]


def body_rows(table):
    """The table's rows (continuation lines of a wrapped row folded into it), up to the blank line."""
    status_at = table[0].index("STATUS")
    rows = []
    for line in table[2:]:
        if not line.strip():
            break
        if line[status_at:].strip():
            rows.append(line)
        else:
            rows[-1] += "\n" + line
    return rows


def test_all_passing_rows_give_a_table_json_and_html_reports_and_success(tmp_path):
    result, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_PASS]})
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["results"] == ROWS_A + [ROW_B_PASS]
    assert report["summary"] == {"PASS": 3, "FAIL": 0, "SKIP": 1}
    html = reports[0].with_suffix(".html")
    assert html.is_file() and html.read_text().count("<tr class=") == 4
    table = table_lines(result.stdout)
    assert table[0].split() == ["HOST", "CHECK", "EXPECTED", "OBSERVED", "STATUS"]
    # Printed as it is (no YAML indentation), within 100 columns.
    body = body_rows(table)
    assert table[0].startswith("HOST ") and max(len(line) for row in body for line in row.splitlines()) <= 100
    # One row per result, in order, the status in the last column.
    assert [row.split()[0] for row in body] == ["node-a", "node-a", "node-a", "node-b"]
    assert [row.splitlines()[0].split()[-1] for row in body] == ["PASS", "PASS", "SKIP", "PASS"]
    # The SKIP row's reason on a line of its own under the table.
    assert "SKIP  node-a: Multus and Whereabouts CNI files: %s" % ROWS_A[2]["observed"] in result.stdout
    assert "4 checks: 3 PASS, 0 FAIL, 1 SKIP. JSON: %s" % reports[0] in table[-1]
    assert "HTML: %s" % html in result.stdout
    # Printed once, not once per host.
    assert result.stdout.count("HOST  ") == 1
    # The closing block of the progress output says where the report is.
    assert "  report (JSON): %s" % reports[0] in result.stdout
    assert "Verify: 3 PASS, 0 FAIL, 1 SKIP" in result.stdout


def test_a_failed_check_fails_the_play_after_the_report_is_written(tmp_path):
    result, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_FAIL]})
    assert result.returncode != 0
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["summary"] == {"PASS": 2, "FAIL": 1, "SKIP": 1}
    failed_row = [row for row in body_rows(table_lines(result.stdout)) if row.splitlines()[0].endswith("FAIL")]
    assert len(failed_row) == 1 and all(word in failed_row[0] for word in ROW_B_FAIL["observed"].split())
    assert ("FAIL  node-b: containerd memlock (running process): observed soft 8388608, hard 8388608 (pid 812);"
            in result.stdout)
    assert "1 check(s) FAILED: node-b: containerd memlock (running process)." in result.stdout
    assert str(reports[0]) in result.stdout


def test_a_host_that_dropped_out_is_reported_as_failed(tmp_path):
    result, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_PASS]}, fail_host="node-b")
    assert result.returncode != 0
    report = json.loads(reports[0].read_text())
    dropped = [row for row in report["results"] if row["check"] == "host reachable"]
    assert dropped == [{"host": "node-b", "check": "host reachable", "expected": "reachable, no task error",
                        "observed": "dropped out of the play (see its error above)", "status": "FAIL"}]
    # Its earlier rows are kept.
    assert ROW_B_PASS in report["results"]


def test_long_values_wrap_in_the_table_and_are_whole_in_the_json(tmp_path):
    long_row = dict(ROW_B_PASS, observed="x" * 300)
    result, reports = run_report(tmp_path, {"node-a": [long_row]})
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(reports[0].read_text())["results"][0]["observed"] == "x" * 300
    row = body_rows(table_lines(result.stdout))[0]
    assert "..." not in row
    assert "".join(row.split()).count("x") == 300
    assert max(len(line) for line in row.splitlines()) <= 100
