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
from itertools import zip_longest

COLUMNS = (('host', 'HOST'), ('check', 'CHECK'), ('expected', 'EXPECTED'), ('observed', 'OBSERVED'),
           ('status', 'STATUS'))
STATUSES = ('PASS', 'FAIL', 'SKIP')
GAP = '  '
DROPPED = {'check': 'host reachable', 'expected': 'reachable, no task error',
           'observed': 'dropped out of the play (see its error above)', 'status': 'FAIL'}


def verify_report_rows(results_per_host, all_hosts, active_hosts):
    """Every host's rows (copies) in play order, plus a FAIL row for each host that left the play.

    results_per_host: one list of rows (or None) per host of all_hosts, in the same order.
    """
    rows = [dict(row) for results in results_per_host for row in results or []]
    return rows + [dict(DROPPED, host=host) for host in all_hosts if host not in active_hosts]


def verify_report_summary(rows):
    """{'PASS': n, 'FAIL': n, 'SKIP': n}."""
    return {status: sum(1 for row in rows if row.get('status') == status) for status in STATUSES}


def _text(value):
    return '' if value is None else str(value)


def _wrap(value, width):
    """The value in lines of at most width characters; every character kept."""
    lines = []
    for paragraph in _text(value).splitlines() or ['']:
        lines.extend(textwrap.wrap(paragraph, width=width, break_on_hyphens=False) or [''])
    return lines


def column_widths(rows, width=100):
    """Widths of the five columns so that the table fits width, when it can.

    A column never gets less than its header; the rest is shared out one character at a
    time among the columns whose longest value is still wider than the column.
    """
    natural = [max([len(header)] + [len(line) for row in rows for line in _text(row.get(key)).splitlines()])
               for key, header in COLUMNS]
    budget = width - len(GAP) * (len(COLUMNS) - 1)
    if sum(natural) <= budget:
        return natural
    widths = [len(header) for key, header in COLUMNS[:-1]] + natural[-1:]
    spare = budget - sum(widths)
    while spare > 0:
        # never empty: spare > 0 only while the widths sum to less than the natural widths
        for i in [i for i in range(len(COLUMNS) - 1) if widths[i] < natural[i]][:spare]:
            widths[i] += 1
            spare -= 1
    return widths


def _table_lines(cells_per_row, widths):
    lines = []
    for cells in cells_per_row:
        for parts in zip_longest(*[_wrap(cell, w) for cell, w in zip(cells, widths)], fillvalue=''):
            lines.append(GAP.join(part.ljust(w) for part, w in zip(parts, widths)).rstrip())
    return lines


def _why(row):
    """What was expected and seen (FAIL) or why it did not run (SKIP)."""
    if row.get('status') == 'FAIL':
        return 'observed %s; expected %s' % (_text(row.get('observed')) or '(nothing)', _text(row.get('expected')))
    return _text(row.get('observed')) or 'no reason recorded'


def _reason(row):
    """'host: check: why' of a FAIL or SKIP row."""
    return '%s: %s: %s' % (_text(row.get('host')), _text(row.get('check')), _why(row))


def reason_lines(rows, width=100):
    """One entry per FAIL or SKIP row, with its reason."""
    lines = []
    for row in rows:
        if row.get('status') in ('FAIL', 'SKIP'):
            lines.extend(textwrap.wrap('%s  %s' % (row['status'], ' '.join(_reason(row).split())), width=width,
                                       subsequent_indent=' ' * 6, break_on_hyphens=False))
    return lines


def verify_report_table(rows, json_file='', html_file='', width=100):
    """The report as text: the table, the FAIL and SKIP reasons, the counts and the files.

    Every line but the files' fits width (a path is printed whole, on a line of its own).
    """
    rows = list(rows)
    widths = column_widths(rows, int(width))
    lines = _table_lines([[title for key, title in COLUMNS]], widths) + [GAP.join('-' * w for w in widths)]
    lines += _table_lines([[row.get(key) for key, title in COLUMNS] for row in rows], widths)
    reasons = reason_lines(rows, int(width))
    counts = verify_report_summary(rows)
    lines += ([''] + reasons if reasons else []) + ['']
    lines.append('%d checks: %d PASS, %d FAIL, %d SKIP.' % (len(rows), counts['PASS'], counts['FAIL'], counts['SKIP']))
    lines += ['%s: %s' % (name, path) for name, path in (('JSON', json_file), ('HTML', html_file)) if path]
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
    meta = ['%s %s' % (label, esc(_text(value))) for label, value in (('generated', generated), ('JSON:', json_file))
            if value]
    if meta:
        out.append('<p class="meta">%s</p>' % ' &middot; '.join(meta))
    out.append('<p class="counts" id="counts">%d checks: %s</p>' % (
        len(rows), ' '.join('<span class="%s">%d %s</span>' % (s, counts[s], s) for s in STATUSES)))
    out += ['<table id="results">',
            '<thead><tr>%s</tr></thead>' % ''.join('<th>%s</th>' % header.capitalize() for key, header in COLUMNS),
            '<tbody>']
    for row in rows:
        status = _text(row.get('status'))
        cells = ''.join('<td class="%s">%s</td>' % (key, esc(_text(row.get(key))).replace('\n', '<br>'))
                        for key, title in COLUMNS)
        out.append('<tr class="%s">%s</tr>' % (status if status in STATUSES else 'OTHER', cells))
    out += ['</tbody>', '</table>']
    reasons = [row for row in rows if row.get('status') in ('FAIL', 'SKIP')]
    if reasons:
        out += ['<h2>Failed and skipped checks</h2>', '<ul class="reasons">']
        out += ['<li class="%s"><span class="%s">%s</span> %s</li>'
                % (row['status'], row['status'], row['status'], esc(_reason(row))) for row in reasons]
        out.append('</ul>')
    return '\n'.join(out + ['</body>', '</html>']) + '\n'


class FilterModule:
    """Filters of the verify report."""

    def filters(self):
        return {
            'verify_report_rows': verify_report_rows,
            'verify_report_summary': verify_report_summary,
            'verify_report_table': verify_report_table,
            'verify_report_html': verify_report_html,
        }
