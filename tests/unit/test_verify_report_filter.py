"""The verify report's formatting (filter_plugins/verify_report.py): a table
that fits 100 columns without cutting a value, one reason line per FAIL or SKIP row,
the counts, and the HTML page."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_report', ROOT / 'filter_plugins' / 'verify_report.py')
verify_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_report)

LONG_EXCLUDES = ('excludes 10.247.208.0/25, 10.247.209.254/32, 10.247.209.255/32 and the node\'s own '
                 'address 10.247.209.10/32 from the whereabouts range 10.247.208.0/23')
ROWS = [
    {'host': 'node1', 'check': 'containerd LimitMEMLOCK (systemd)', 'expected': 'infinity',
     'observed': 'infinity', 'status': 'PASS'},
    {'host': 'node1', 'check': 'ipu-rdma-net matches the node', 'expected': LONG_EXCLUDES,
     'observed': 'macvlan master eth1, mode bridge, mtu 9000, ' + LONG_EXCLUDES, 'status': 'PASS'},
    {'host': 'a-rather-long-host-name.example.internal', 'check': 'containerd memlock (running process)',
     'expected': 'soft unlimited, hard unlimited', 'observed': 'soft 8388608, hard 8388608 (pid 812)', 'status': 'FAIL'},
    {'host': 'node1', 'check': 'IPUJob smoke test (mnist)', 'expected': 'job Succeeded',
     'observed': 'IPUJob smoke test is opt-in: -e verify_ipujob_smoke_test=true', 'status': 'SKIP'},
    {'host': 'node1', 'check': 'token', 'expected': 'x', 'observed': 'y' * 150, 'status': 'PASS'},
]


def parse_table(text):
    """Rows of the printed table, each value put back together from its wrapped lines."""
    lines = text.splitlines()
    header = lines[0]
    starts = [header.index(title) for _, title in verify_report.COLUMNS]
    rows = []
    for line in lines[2:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        if cells[-1]:  # a row starts where its status is written (a status never wraps)
            rows.append([[c] if c else [] for c in cells])
        else:
            for parts, cell in zip(rows[-1], cells):
                if cell:
                    parts.append(cell)
    return [[' '.join(parts) for parts in row] for row in rows]


def squeeze(text):
    return ''.join(str(text).split())


def test_the_table_fits_100_columns():
    text = verify_report.verify_report_table(ROWS, json_file='/r/verify.json', html_file='/r/verify.html')
    too_wide = [line for line in text.splitlines() if len(line) > 100]
    assert not too_wide, too_wide


@pytest.mark.parametrize('host', ['n1', 'ipu-pod64-rack12-node-17.long-site-name.example.internal', 'h' * 120])
def test_the_header_and_rule_line_fit_100_columns_whatever_the_values(host):
    rows = [dict(row, host=host) for row in ROWS] + [
        {'host': host, 'check': 'c' * 130, 'expected': 'e ' * 80, 'observed': 'o' * 400, 'status': 'SKIP'}]
    lines = verify_report.verify_report_table(rows).splitlines()
    assert lines[0].split() == ['HOST', 'CHECK', 'EXPECTED', 'OBSERVED', 'STATUS']
    assert set(lines[1]) == {'-', ' '}
    assert [len(line) for line in lines if len(line) > 100] == []


def test_no_value_is_cut_long_ones_wrap_within_their_column():
    text = verify_report.verify_report_table(ROWS)
    table = parse_table(text)
    assert len(table) == len(ROWS)
    for printed, row in zip(table, ROWS):
        for cell, (key, _) in zip(printed, verify_report.COLUMNS):
            assert squeeze(cell) == squeeze(row[key]), (key, cell, row[key])
    assert '...' not in text


def test_short_rows_keep_their_natural_widths():
    rows = [dict(ROWS[0])]
    lines = verify_report.verify_report_table(rows).splitlines()
    assert lines[0].split() == ['HOST', 'CHECK', 'EXPECTED', 'OBSERVED', 'STATUS']
    assert lines[2].split('  ')[0] == 'node1' and lines[2].endswith('PASS')
    assert len(lines[0]) < 100


def test_each_failed_or_skipped_check_gets_one_reason_line():
    text = verify_report.verify_report_table(ROWS)
    reasons = [line for line in text.splitlines() if re.match(r'^(FAIL|SKIP)  ', line)]
    assert reasons == [
        'FAIL  a-rather-long-host-name.example.internal: containerd memlock (running process): observed soft',
        'SKIP  node1: IPUJob smoke test (mnist): IPUJob smoke test is opt-in: -e',
    ]
    # A long one continues on indented lines, within 100 columns.
    assert ('\n      8388608, hard 8388608 (pid 812); expected soft unlimited, hard unlimited\n'
            'SKIP  node1') in text
    assert text.count('\n      verify_ipujob_smoke_test=true\n') == 1


def test_the_last_lines_give_the_counts_and_the_files():
    lines = verify_report.verify_report_table(ROWS, json_file='/r/verify.json', html_file='/r/verify.html').splitlines()
    assert lines[-3:] == ['5 checks: 3 PASS, 1 FAIL, 1 SKIP.', 'JSON: /r/verify.json', 'HTML: /r/verify.html']


def test_a_host_that_left_the_play_gets_a_fail_row():
    rows = verify_report.verify_report_rows([[ROWS[0]], []], ['node1', 'node2'], ['node1'])
    assert rows == [ROWS[0], {'host': 'node2', 'check': 'host reachable', 'expected': 'reachable, no task error',
                              'observed': 'dropped out of the play (see its error above)', 'status': 'FAIL'}]


def test_rows_and_hosts_must_pair_up():
    with pytest.raises(ValueError, match='2 result lists for 1 hosts'):
        verify_report.verify_report_rows([[], []], ['node1'], ['node1'])


def test_counts():
    assert verify_report.verify_report_summary(ROWS) == {'PASS': 3, 'FAIL': 1, 'SKIP': 1}


def test_the_html_page_is_self_contained_and_escapes_values():
    rows = ROWS + [{'host': 'node1', 'check': '<script>alert(1)</script>', 'expected': 'a & b',
                    'observed': '<img src="http://example.invalid/x.png">', 'status': 'FAIL'}]
    page = verify_report.verify_report_html(rows, generated='20261123T180000Z', json_file='/r/verify.json')
    assert page.startswith('<!DOCTYPE html>')
    assert page.count('<tr class=') == len(rows)
    assert '<script>' not in page and '<img' not in page and '&lt;img src=&quot;http://example.invalid' in page
    assert "default-src 'none'" in page
    assert not re.search(r'<[^>]*\s(src|href)\s*=', page)
    assert '<span class="FAIL">2 FAIL</span>' in page
    assert LONG_EXCLUDES.replace("'", '&#x27;') in page
