"""The verify report's HTML page in a real headless browser (Debian's chromium).

The page the verify role writes (plugins/filter/verify_report.py) is opened
from disk; the DOM chromium built is read back (--dump-dom) and its network log
(--log-net-log) is searched for any request the page made. A control page with one
image on 127.0.0.1 proves the search finds a request when there is one. Every host name
resolves to nothing (--host-resolver-rules), so the browser's own background requests
cannot leave the machine either. Whether a word is whole is measured in the laid-out
page: a copy of it, with a script added (the page itself allows none), asks the browser
for the line boxes of each word of every cell of the table.
"""

import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "filter"))

import verify_report  # noqa: E402
from testlib import require  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(autouse=True)
def chromium():
    """Every test here needs the browser: skipped without it, failed under CI=true (testlib.require)."""
    require(CHROMIUM is not None, "no headless browser: apt-get install -y chromium")


ROWS = [
    {"host": "node1", "check": "containerd LimitMEMLOCK (systemd)", "expected": "infinity", "observed": "infinity",
     "status": "PASS"},
    {"host": "node1", "check": "ipu-rdma-net matches the node", "expected": "excludes 10.247.208.0/25",
     "observed": "macvlan master eth1, excludes 10.247.208.0/25, 10.247.209.10/32", "status": "PASS"},
    {"host": "node2", "check": "containerd memlock (running process)", "expected": "soft unlimited, hard unlimited",
     "observed": "soft 8388608, hard 8388608 (pid 812)", "status": "FAIL"},
    {"host": "node1", "check": "IPUJob smoke test (mnist)", "expected": "job Succeeded",
     "observed": "IPUJob smoke test is opt-in: -e verify_ipujob_smoke_test=true", "status": "SKIP"},
]


def open_in_browser(page, tmp_path):
    """(DOM chromium built, URLs the page requested) for an HTML file."""
    netlog = tmp_path / "net.json"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
           "--user-data-dir=%s" % (tmp_path / "profile"), "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
           "--log-net-log=%s" % netlog, "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = json.loads(netlog.read_text())
    names = {value: name for name, value in log["constants"]["logEventTypes"].items()}
    requested = set()
    for event in log["events"]:
        params = event.get("params") or {}
        # Requests made for the page (its top frame is the file), not the browser's own.
        if (names.get(event["type"]) == "URL_REQUEST_START_JOB"
                and str(params.get("network_isolation_key", "")).startswith("file://")
                and not params.get("url", "").startswith("file:")):
            requested.add(params["url"])
    return proc.stdout, requested


class Rows(HTMLParser):
    """Text of each cell of each row of table#results."""

    def __init__(self):
        super().__init__()
        self.rows, self._in_table, self._cell = [], False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "results":
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append({"class": attrs.get("class"), "cells": []})
        elif self._in_table and tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1]["cells"].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_the_report_renders_every_row_and_requests_nothing(tmp_path):
    page = tmp_path / "verify-20261123T180000Z.html"
    page.write_text(verify_report.verify_report_html(ROWS, generated="20261123T180000Z",
                                                     json_file=str(tmp_path / "verify.json")))
    dom, requested = open_in_browser(page, tmp_path)
    parsed = Rows()
    parsed.feed(dom)
    header, body = parsed.rows[0], parsed.rows[1:]
    assert header["cells"] == ["Host", "Check", "Expected", "Observed", "Status"]
    assert [row["cells"] for row in body] == [[r["host"], r["check"], r["expected"], r["observed"], r["status"]]
                                              for r in ROWS]
    assert [row["class"] for row in body] == ["PASS", "PASS", "FAIL", "SKIP"]
    assert "4 checks:" in dom and "IPUJob smoke test is opt-in" in dom
    assert requested == set(), requested


# Each word of the cells measured, and the lines its boxes sit on: more than one line is a
# word broken in two.
MEASURE = """<script>
const broken = [];
for (const cell of document.querySelectorAll('#results th, #results td')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let text = walker.nextNode(); text; text = walker.nextNode()) {
    for (const word of text.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(text, word.index);
      range.setEnd(text, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].map(box => Math.round(box.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
}
document.body.setAttribute('data-broken-words', JSON.stringify(broken));
</script>"""


def broken_words(page_html, tmp_path, width=600):
    """The words of the table's cells that a window width px wide breaks."""
    page = tmp_path / "measured.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', '', page_html)
                    .replace('</body>', MEASURE + '</body>'))
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--user-data-dir=%s" % (tmp_path / "profile-measure"),
           "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=%d,900" % width, "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = re.search(r'data-broken-words="([^"]*)"', proc.stdout)
    assert found, 'the measuring script did not run:\n' + proc.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


LONG_ROWS = ROWS + [
    {"host": "ipu-pod64-rack12-node-17.long-site-name.example.internal", "check": "pod container: memlock",
     "expected": "ulimit -l unlimited", "observed": "ulimit -l 8192 as uid 1000 " + "0123456789abcdef" * 12,
     "status": "FAIL"},
    {"host": "node1", "check": "rdma-net matches the node", "expected": "excludes 10.247.208.0/25",
     "observed": "macvlan master eth1, excludes 10.247.208.0/25, 10.247.209.10/32 " * 6, "status": "PASS"},
]


def test_a_narrow_window_breaks_no_word_of_any_column(tmp_path):
    assert broken_words(verify_report.verify_report_html(LONG_ROWS), tmp_path) == []


def test_the_measure_finds_a_word_broken_in_two(tmp_path):
    page = verify_report.verify_report_html(LONG_ROWS).replace(
        '</style>', '#results td.host { white-space: normal; overflow-wrap: anywhere; max-width: 4em; }</style>')
    assert "ipu-pod64-rack12-node-17.long-site-name.example.internal" in broken_words(page, tmp_path)


def test_the_request_search_finds_a_request_when_a_page_makes_one(tmp_path):
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><html><body><table id="results"><tr><td>x</td></tr></table>'
                    '<img src="http://127.0.0.1:9/probe.png"></body></html>')
    _, requested = open_in_browser(page, tmp_path)
    assert requested == {"http://127.0.0.1:9/probe.png"}
