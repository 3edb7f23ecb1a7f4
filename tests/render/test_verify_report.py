"""The verify report: table, JSON and HTML files and the final verdict, for given result rows.

Runs the verify role's report task file (tasks_from: report) through ansible-runner
on this machine over the local connection, with two inventory hosts that carry the rows
the checks would have recorded (__verify_results), and reads the outcome from the run's
structured events (the printed table is the report task's result). Only files under
tmp_path are written; no node is touched.
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from playbook_runner import run_playbook  # noqa: E402

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
    run = run_playbook(tmp_path / "report.yml", tmp_path / "hosts.json", tmp_path,
                       extravars={"verify_report_dir": str(report_dir)})
    reports = sorted(report_dir.glob("verify-*.json")) if report_dir.is_dir() else []
    return run, reports


def printed_report(run):
    """The report as the report task printed it (its debug message)."""
    printed = run.results("Print the report")
    assert len(printed) == 1, run.stdout[-3000:]
    return printed[0]["msg"]


def table_lines(text):
    """The report: from the header line to the counts line."""
    lines = text.splitlines()
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
    run, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_PASS]})
    assert (run.status, run.rc) == ("successful", 0), run.stdout[-3000:]
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["results"] == ROWS_A + [ROW_B_PASS]
    assert report["summary"] == {"PASS": 3, "FAIL": 0, "SKIP": 1}
    html = reports[0].with_suffix(".html")
    assert html.is_file() and html.read_text().count("<tr class=") == 4
    text = printed_report(run)
    table = table_lines(text)
    assert table[0].split() == ["HOST", "CHECK", "EXPECTED", "OBSERVED", "STATUS"]
    body = body_rows(table)
    assert max(len(line) for row in body for line in row.splitlines()) <= 100
    # One row per result, in order, the status in the last column.
    assert [row.split()[0] for row in body] == ["node-a", "node-a", "node-a", "node-b"]
    assert [row.splitlines()[0].split()[-1] for row in body] == ["PASS", "PASS", "SKIP", "PASS"]
    # The SKIP row's reason on a line of its own under the table.
    assert "SKIP  node-a: Multus and Whereabouts CNI files: %s" % ROWS_A[2]["observed"] in text
    assert table[-1] == "4 checks: 3 PASS, 0 FAIL, 1 SKIP."
    assert "\n4 checks: 3 PASS, 0 FAIL, 1 SKIP.\nJSON: %s\n" % reports[0] in text
    assert "HTML: %s" % html in text
    # Printed once, as it is (not as YAML under msg:), not once per host.
    assert run.stdout.count("HOST  ") == 1 and "\nHOST  " in run.stdout
    # Where the report is, for the closing block of the progress output.
    assert run.set_stats() == {"verify_report_json": str(reports[0]), "verify_report_html": str(html),
                               "verify_report_counts": {"PASS": 3, "FAIL": 0, "SKIP": 1}}
    assert "  report (JSON): %s" % reports[0] in run.stdout


def test_a_failed_check_fails_the_play_after_the_report_is_written(tmp_path):
    run, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_FAIL]})
    assert run.status == "failed" and run.rc != 0
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["summary"] == {"PASS": 2, "FAIL": 1, "SKIP": 1}
    text = printed_report(run)
    failed_row = [row for row in body_rows(table_lines(text)) if row.splitlines()[0].endswith("FAIL")]
    assert len(failed_row) == 1 and all(word in failed_row[0] for word in ROW_B_FAIL["observed"].split())
    assert "FAIL  node-b: containerd memlock (running process): observed soft 8388608, hard 8388608 (pid 812);" in text
    # The play fails once, after the report, naming the check and the report.
    message = " ".join(run.failures()["node-a"].split())
    assert "1 check(s) FAILED: node-b: containerd memlock (running process)." in message
    assert str(reports[0]) in message


def test_a_host_that_dropped_out_is_reported_as_failed(tmp_path):
    run, reports = run_report(tmp_path, {"node-a": ROWS_A, "node-b": [ROW_B_PASS]}, fail_host="node-b")
    assert run.rc != 0
    assert set(run.failures()) == {"node-b", "node-a"}
    report = json.loads(reports[0].read_text())
    dropped = [row for row in report["results"] if row["check"] == "host reachable"]
    assert dropped == [{"host": "node-b", "check": "host reachable", "expected": "reachable, no task error",
                        "observed": "dropped out of the play (see its error above)", "status": "FAIL"}]
    # Its earlier rows are kept.
    assert ROW_B_PASS in report["results"]


LONG_HOST = "ipu-pod64-rack12-node-17.long-site-name.lab.internal"


def test_long_values_wrap_in_the_table_and_are_whole_in_the_json(tmp_path):
    long_row = dict(ROW_B_PASS, host=LONG_HOST, observed="x" * 300)
    words_row = dict(ROW_B_FAIL, host=LONG_HOST, check="pod container: net1 from the macvlan CNI plugin",
                     expected="net1 in 10.247.208.0/23 outside 10.247.208.0/25,10.247.209.200/32, mtu 9000",
                     observed="net1 10.247.209.254/23 mtu 1500, uid 1000, IPAM stand-in: static " * 3)
    run, reports = run_report(tmp_path, {"node-a": [long_row, words_row]})
    assert run.rc != 0, run.stdout[-3000:]
    assert json.loads(reports[0].read_text())["results"][0]["observed"] == "x" * 300
    table = table_lines(printed_report(run))
    row = body_rows(table)[0]
    assert "..." not in row
    assert "".join(row.split()).count("x") == 300
    # Every line of it, its header and rule line included, fits 100 columns.
    too_wide = [line for line in table if len(line) > 100]
    assert not too_wide, too_wide
