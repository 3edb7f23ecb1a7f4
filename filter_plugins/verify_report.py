# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify report's rows, counts, terminal table and HTML page.

Rows are {host, check, expected, observed, status} with status PASS, FAIL or SKIP. The
terminal table fits a width (100 columns by default) by wrapping cells, never cutting a
value; after it, one line per FAIL or SKIP row with its reason, then the counts. The HTML
page is one self-contained file (inline CSS, no script, no external resource) with the
same rows.
"""

from __future__ import annotations

import html
import textwrap

COLUMNS = (('host', 'HOST'), ('check', 'CHECK'), ('expected', 'EXPECTED'), ('observed', 'OBSERVED'),
           ('status', 'STATUS'))
STATUSES = ('PASS', 'FAIL', 'SKIP')
GAP = '  '
DROPPED = {'check': 'host reachable', 'expected': 'reachable, no task error',
           'observed': 'dropped out of the play (see its error above)', 'status': 'FAIL'}


def verify_report_rows(results_per_host, all_hosts, active_hosts):
    """Every host's rows in play order, plus a FAIL row for each host that left the play.

    results_per_host: one list of rows per host of all_hosts (same order).
    """
    results_per_host = list(results_per_host)
    all_hosts = list(all_hosts)
    if len(results_per_host) != len(all_hosts):
        raise ValueError('verify_report_rows: %d result lists for %d hosts' % (len(results_per_host), len(all_hosts)))
    rows = []
    for results in results_per_host:
        rows.extend(dict(row) for row in results or [])
    active = set(active_hosts)
    rows.extend(dict(DROPPED, host=host) for host in all_hosts if host not in active)
    return rows


def verify_report_summary(rows):
    """{'PASS': n, 'FAIL': n, 'SKIP': n}."""
    return {status: sum(1 for row in rows if row.get('status') == status) for status in STATUSES}


def _text(value):
    return '' if value is None else str(value)


def _wrap(value, width):
    """The value in lines of at most width characters; every character kept."""
    lines = []
    for paragraph in _text(value).splitlines() or ['']:
        lines.extend(textwrap.wrap(paragraph, width=width, break_long_words=True, break_on_hyphens=False,
                                   drop_whitespace=True) or [''])
    return lines


def column_widths(rows, width=100):
    """Widths of the five columns so that the table fits width, when it can.

    A column never gets less than its header; the rest is shared out one character at a
    time among the columns whose longest value is still wider than the column.
    """
    natural = []
    for key, header in COLUMNS:
        longest = max([len(line) for row in rows for line in _text(row.get(key)).splitlines() or ['']] + [0])
        natural.append(max(len(header), longest))
    budget = width - len(GAP) * (len(COLUMNS) - 1)
    if sum(natural) <= budget:
        return natural
    widths = [len(header) for _, header in COLUMNS]
    widths[-1] = natural[-1]
    spare = budget - sum(widths)
    while spare > 0:
        # never empty: spare > 0 only while the widths sum to less than the natural widths
        growing = [i for i in range(len(COLUMNS) - 1) if widths[i] < natural[i]]
        for i in growing:
            if spare == 0:
                break
            widths[i] += 1
            spare -= 1
    return widths


def _table_lines(cells_per_row, widths):
    lines = []
    for cells in cells_per_row:
        wrapped = [_wrap(cell, w) for cell, w in zip(cells, widths)]
        for i in range(max(len(part) for part in wrapped)):
            parts = [(part[i] if i < len(part) else '').ljust(w) for part, w in zip(wrapped, widths)]
            lines.append(GAP.join(parts).rstrip())
    return lines


def _why(row):
    """What was expected and seen (FAIL) or why it did not run (SKIP)."""
    if row.get('status') == 'FAIL':
        return 'observed %s; expected %s' % (_text(row.get('observed')) or '(nothing)', _text(row.get('expected')))
    return _text(row.get('observed')) or 'no reason recorded'


def reason_lines(rows, width=100):
    """One entry per FAIL or SKIP row, with its reason."""
    lines = []
    for row in rows:
        status = row.get('status')
        if status not in ('FAIL', 'SKIP'):
            continue
        text = '%s  %s: %s: %s' % (status, _text(row.get('host')), _text(row.get('check')), ' '.join(_why(row).split()))
        lines.extend(textwrap.wrap(text, width=width, subsequent_indent=' ' * 6,
                                   break_long_words=True, break_on_hyphens=False))
    return lines


def verify_report_table(rows, json_file='', html_file='', width=100):
    """The report as text: the table, the FAIL and SKIP reasons, the counts and the files.

    Every line but the files' fits width (a path is printed whole).
    """
    rows = list(rows)
    width = int(width)
    widths = column_widths(rows, width)
    header = [title for _, title in COLUMNS]
    lines = _table_lines([header], widths)
    lines.append(GAP.join('-' * w for w in widths))
    lines.extend(_table_lines([[row.get(key) for key, _ in COLUMNS] for row in rows], widths))
    reasons = reason_lines(rows, width)
    if reasons:
        lines.append('')
        lines.extend(reasons)
    counts = verify_report_summary(rows)
    lines.append('')
    lines.append('%d checks: %d PASS, %d FAIL, %d SKIP.' % (len(rows), counts['PASS'], counts['FAIL'], counts['SKIP']))
    # Each file on a line of its own: a path is copied whole, never wrapped.
    if json_file:
        lines.append('JSON: %s' % json_file)
    if html_file:
        lines.append('HTML: %s' % html_file)
    return '\n'.join(lines)


_CSS = """
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
"""


def verify_report_html(rows, generated='', json_file='', title='ipu-k8s verify report'):
    """The report as one self-contained HTML page (inline CSS; the page may load nothing)."""
    rows = list(rows)
    esc = html.escape
    counts = verify_report_summary(rows)
    out = [
        '<!DOCTYPE html>',
        '<html lang="en">',
        '<head>',
        '<meta charset="utf-8">',
        # Nothing outside this file may load, whatever a value contains.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
        '<title>%s%s</title>' % (esc(title), ' %s' % esc(_text(generated)) if generated else ''),
        '<style>%s</style>' % _CSS,
        '</head>',
        '<body>',
        '<h1>%s</h1>' % esc(title),
    ]
    meta = []
    if generated:
        meta.append('generated %s' % esc(_text(generated)))
    if json_file:
        meta.append('JSON: %s' % esc(_text(json_file)))
    if meta:
        out.append('<p class="meta">%s</p>' % ' &middot; '.join(meta))
    out.append('<p class="counts" id="counts">%d checks: %s</p>' % (
        len(rows), ' '.join('<span class="%s">%d %s</span>' % (s, counts[s], s) for s in STATUSES)))
    out.append('<table id="results">')
    out.append('<thead><tr>%s</tr></thead>' % ''.join('<th>%s</th>' % esc(title.capitalize()) for _, title in COLUMNS))
    out.append('<tbody>')
    for row in rows:
        status = _text(row.get('status'))
        cells = []
        for key, _ in COLUMNS:
            value = esc(_text(row.get(key))).replace('\n', '<br>')
            cells.append('<td class="%s">%s</td>' % (key, value))
        out.append('<tr class="%s">%s</tr>' % (esc(status if status in STATUSES else 'OTHER'), ''.join(cells)))
    out.append('</tbody>')
    out.append('</table>')
    reasons = [row for row in rows if row.get('status') in ('FAIL', 'SKIP')]
    if reasons:
        out.append('<h2>Failed and skipped checks</h2>')
        out.append('<ul class="reasons">')
        for row in reasons:
            out.append('<li class="%s"><span class="%s">%s</span> %s: %s: %s</li>' % (
                esc(row['status']), esc(row['status']), esc(row['status']), esc(_text(row.get('host'))),
                esc(_text(row.get('check'))), esc(_why(row))))
        out.append('</ul>')
    out.append('</body>')
    out.append('</html>')
    return '\n'.join(out) + '\n'


class FilterModule:
    """Filters of the verify report."""

    def filters(self):
        return {
            'verify_report_rows': verify_report_rows,
            'verify_report_summary': verify_report_summary,
            'verify_report_table': verify_report_table,
            'verify_report_html': verify_report_html,
        }
