"""The verify report's formatting (plugins/filter/verify_report.py): a table
that fits 100 columns without cutting a value, one reason line per FAIL or SKIP row,
the counts, and the HTML page."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_report', ROOT / 'plugins' / 'filter' / 'verify_report.py')
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


# --- the report written out by hand, line by line ---------------------------------------------

SMALL = [
    {'host': 'n1', 'check': 'memlock', 'expected': 'infinity', 'observed': 'infinity', 'status': 'PASS'},
    {'host': 'n2', 'check': 'ping', 'expected': 'reply', 'observed': None, 'status': 'FAIL'},
    {'host': 'n1', 'check': 'smoke', 'expected': 'ok', 'observed': '', 'status': 'SKIP'},
]


def test_a_small_report_line_by_line():
    # Every column as wide as its header or its longest value; two spaces between columns.
    assert verify_report.verify_report_table(SMALL, json_file='/r/v.json', html_file='/r/v.html', width='100') == '\n'.join([
        'HOST  CHECK    EXPECTED  OBSERVED  STATUS',
        '----  -------  --------  --------  ------',
        'n1    memlock  infinity  infinity  PASS',
        'n2    ping     reply' + ' ' * 15 + 'FAIL',
        'n1    smoke    ok' + ' ' * 18 + 'SKIP',
        '',
        'FAIL  n2: ping: observed (nothing); expected reply',
        'SKIP  n1: smoke: no reason recorded',
        '',
        '3 checks: 1 PASS, 1 FAIL, 1 SKIP.',
        'JSON: /r/v.json',
        'HTML: /r/v.html',
    ])


def test_an_all_pass_report_has_no_reason_block_and_no_file_lines():
    assert verify_report.verify_report_table(SMALL[:1]).splitlines()[3:] == ['', '1 checks: 1 PASS, 0 FAIL, 0 SKIP.']


def test_an_empty_report_is_the_header_and_the_counts():
    assert verify_report.verify_report_table([]).splitlines() == [
        'HOST  CHECK  EXPECTED  OBSERVED  STATUS', '----  -----  --------  --------  ------', '',
        '0 checks: 0 PASS, 0 FAIL, 0 SKIP.']


@pytest.mark.parametrize('host, widths', [
    # budget 60 - 4 gaps of 2 = 52; from the headers (4, 5, 8, 8) and the status's own 6, one
    # character at a time to each column still narrower than its longest value, left to right
    ('h' * 10, [10, 10, 13, 13, 6]),
    ('ab', [4, 12, 15, 15, 6]),
])
def test_column_widths_share_out_the_width(host, widths):
    rows = [{'host': host, 'check': 'c' * 30, 'expected': 'e' * 30, 'observed': 'o' * 30, 'status': 'PASS'}]
    assert verify_report.column_widths(rows, 60) == widths


def test_column_widths_fit_exactly_the_natural_ones_and_keep_a_long_status_whole():
    rows = [{'host': 'h' * 20, 'check': 'c' * 20, 'expected': 'e' * 20, 'observed': 'o' * 26, 'status': 'PASS'}]
    assert verify_report.column_widths(rows, 100) == [20, 20, 20, 26, 6]   # 92 = 100 - 8
    rows[0]['observed'] += 'o'
    assert verify_report.column_widths(rows, 100) == [20, 20, 20, 26, 6]   # one short: observed gives
    assert verify_report.column_widths([{'status': 'S' * 100}], 100) == [4, 5, 8, 8, 100]
    assert verify_report.column_widths([{'check': 'a\nbbbbbbb'}]) == [4, 7, 8, 8, 6]


def test_cells_wrap_at_spaces_keep_hyphenated_words_and_break_only_overlong_words():
    rows = [{'host': 'n1', 'check': 'c', 'expected': 'e', 'observed': 'rdma0-link-is-down now\nsecond', 'status': 'FAIL'}]
    # width 40: budget 32 = 4 + 5 + 8 + observed + 6 -> observed gets 9
    lines = verify_report.verify_report_table(rows, width=40).splitlines()
    assert lines[:6] == ['HOST  CHECK  EXPECTED  OBSERVED   STATUS',
                         '----  -----  --------  ---------  ------',
                         'n1    c      e         rdma0-lin  FAIL',
                         '                       k-is-down',
                         '                       now',
                         '                       second']
    # 'FAIL  n1: c: observed ' is 22 characters, the hyphenated word 18: exactly 40
    assert lines[6:9] == ['', 'FAIL  n1: c: observed rdma0-link-is-down', '      now second; expected e']


def test_a_host_that_left_the_play_is_added_once_after_the_rows():
    rows = verify_report.verify_report_rows(iter([[SMALL[0]], None, [SMALL[1]]]), iter(['n1', 'n3', 'n2']),
                                            ['n1', 'n2'])
    assert rows == [SMALL[0], SMALL[1], dict(verify_report.DROPPED, host='n3')]
    rows[0]['status'] = 'FAIL'
    assert SMALL[0]['status'] == 'PASS'  # the rows are copies


STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; }
h1 { font-size: 1.3em; margin-bottom: 0.2em; }
p.meta { color: #555; margin-top: 0; }
p.counts span { display: inline-block; padding: 0.1em 0.6em; margin-right: 0.4em; border-radius: 0.3em; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th, td.host, td.status { white-space: nowrap; }
th { background: #eee; }
td.status { font-weight: bold; }
.PASS td.status, span.PASS { background: #dff3df; color: #135e13; }
.FAIL td.status, span.FAIL { background: #fbdcdc; color: #8a1010; }
.SKIP td.status, span.SKIP { background: #fdf1cf; color: #6b5000; }
ul.reasons li { margin-bottom: 0.3em; }
</style>"""


def test_a_small_html_page_line_by_line():
    rows = [SMALL[0], {'host': 'n2', 'check': 'ping & pong', 'expected': 'reply', 'observed': 'a\nb', 'status': 'FAIL'},
            {'host': 'n3', 'check': 'odd', 'expected': 'x', 'observed': 'y', 'status': 'ERROR'}]
    page = verify_report.verify_report_html(rows, generated='20261123T180000Z', json_file='/r/v.json')
    assert page == '\n'.join([
        '<!DOCTYPE html>',
        '<html lang="en">',
        '<head>',
        '<meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
        '<title>ipu-k8s verify report 20261123T180000Z</title>',
        STYLE,
        '</head>',
        '<body>',
        '<h1>ipu-k8s verify report</h1>',
        '<p class="meta">generated 20261123T180000Z &middot; JSON: /r/v.json</p>',
        '<p class="counts" id="counts">3 checks: <span class="PASS">1 PASS</span> <span class="FAIL">1 FAIL</span> '
        '<span class="SKIP">0 SKIP</span></p>',
        '<table id="results">',
        '<thead><tr><th>Host</th><th>Check</th><th>Expected</th><th>Observed</th><th>Status</th></tr></thead>',
        '<tbody>',
        '<tr class="PASS"><td class="host">n1</td><td class="check">memlock</td><td class="expected">infinity</td>'
        '<td class="observed">infinity</td><td class="status">PASS</td></tr>',
        '<tr class="FAIL"><td class="host">n2</td><td class="check">ping &amp; pong</td><td class="expected">reply</td>'
        '<td class="observed">a<br>b</td><td class="status">FAIL</td></tr>',
        '<tr class="OTHER"><td class="host">n3</td><td class="check">odd</td><td class="expected">x</td>'
        '<td class="observed">y</td><td class="status">ERROR</td></tr>',
        '</tbody>',
        '</table>',
        '<h2>Failed and skipped checks</h2>',
        '<ul class="reasons">',
        '<li class="FAIL"><span class="FAIL">FAIL</span> n2: ping &amp; pong: observed a\nb; expected reply</li>',
        '</ul>',
        '</body>',
        '</html>',
    ]) + '\n'


def test_an_html_page_without_date_file_or_failures():
    page = verify_report.verify_report_html(SMALL[:1] + [dict(SMALL[0], status=None)], title='Site <A>')
    lines = page.splitlines()
    assert lines[5] == '<title>Site &lt;A&gt;</title>'
    assert '<h1>Site &lt;A&gt;</h1>' in lines and 'class="meta"' not in page
    assert '<h2>' not in page and '<ul' not in page
    assert '<tr class="OTHER"><td class="host">n1</td>' in page
    assert lines[-3:] == ['</table>', '</body>', '</html>']
    assert verify_report.verify_report_html([], json_file='/r/v.json').count('<p class="meta">JSON: /r/v.json</p>') == 1


def test_the_skip_reason_in_the_html_page():
    page = verify_report.verify_report_html([SMALL[2], dict(SMALL[2], observed='opt-in: -e x=true')])
    assert '<li class="SKIP"><span class="SKIP">SKIP</span> n1: smoke: no reason recorded</li>' in page
    assert '<li class="SKIP"><span class="SKIP">SKIP</span> n1: smoke: opt-in: -e x=true</li>' in page


def test_the_plugin_offers_the_four_filters():
    assert verify_report.FilterModule().filters() == {
        'verify_report_rows': verify_report.verify_report_rows,
        'verify_report_summary': verify_report.verify_report_summary,
        'verify_report_table': verify_report.verify_report_table,
        'verify_report_html': verify_report.verify_report_html}


def test_the_default_width_is_100_columns():
    rows = [{'host': 'h' * 20, 'check': 'c' * 20, 'expected': 'e' * 20, 'observed': 'o' * 27, 'status': 'PASS'}]
    assert verify_report.column_widths(rows) == [20, 20, 20, 26, 6]
    row = {'host': 'h', 'check': 'c', 'observed': 'x' * 89, 'status': 'SKIP'}   # 'SKIP  h: c: ' is 12: 101 in all
    assert verify_report.reason_lines([row]) == ['SKIP  h: c:', '      ' + 'x' * 89]
    row['observed'] = 'x' * 88
    assert verify_report.reason_lines([row]) == ['SKIP  h: c: ' + 'x' * 88]


def test_reason_lines_keep_hyphenated_words_whole():
    row = {'host': 'h', 'check': 'c', 'expected': 'e', 'observed': 'aaaa-bbbb-cccc-dddd', 'status': 'FAIL'}
    assert verify_report.reason_lines([row], 30) == ['FAIL  h: c: observed', '      aaaa-bbbb-cccc-dddd;',
                                                     '      expected e']


def test_a_blank_line_inside_a_value_stays_blank():
    rows = [{'host': 'n1', 'check': 'c', 'expected': 'e', 'observed': 'one\n\ntwo', 'status': 'PASS'}]
    assert verify_report.verify_report_table(rows).splitlines()[2:5] == [
        'n1    c      e         one       PASS', '', ' ' * 23 + 'two']
