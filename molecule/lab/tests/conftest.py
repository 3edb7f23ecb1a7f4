"""Shared fixtures and failure reporting for the node-role checks."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed check, attach containerd's journal and unit state to the report."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    host = item.funcargs.get("host")
    if host is None:
        return
    for title, command in (
        ("systemctl status containerd", "systemctl status containerd --no-pager --lines=0"),
        ("journalctl -u containerd", "journalctl -u containerd --no-pager --lines=80"),
    ):
        result = host.run(command)
        report.sections.append((title, result.stdout + result.stderr))
