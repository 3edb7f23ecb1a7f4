"""The README's version tables say what the role tables and the stored facts say."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / 'README.md').read_text()
CHARTS = yaml.safe_load((ROOT / 'roles/network_operator/defaults/main.yml').read_text())['network_operator_chart_table']
CHART_FACTS = yaml.safe_load((ROOT / 'tests/schemas/network_operator/releases.yaml').read_text())['releases']
KUBERNETES = yaml.safe_load((ROOT / 'roles/preflight/defaults/main.yml').read_text())['preflight_kubernetes_releases']


def readme_rows(header):
    lines = README[README.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.strip().startswith('|'):
            break
        rows.append([cell.strip() for cell in line.strip().strip('|').split('|')])
    return rows


def test_network_operator_table_is_the_role_table():
    rows = readme_rows('| chart | serves Kubernetes | documented for | IPAM | NVIDIA support |')
    expected = []
    for row in CHARTS:
        documented = (CHART_FACTS.get(row['chart_version']) or {}).get('kubernetes') or {}
        expected.append([
            row['chart_version'],
            '%s–%s' % (row['kubernetes_min'], row['kubernetes_max']) if 'kubernetes_min' in row else 'by name only',
            '%s–%s' % (documented['min'], documented['max']) if documented else 'not published',
            {'whereabouts': 'Whereabouts', 'nv-ipam': 'NVIDIA IPAM'}[row['ipam']],
            row['support']])
    assert [r[:5] for r in rows] == expected


def test_kubernetes_table_names_every_minor_with_its_end_of_support():
    rows = readme_rows('| Kubernetes | end of support | status on 2026-11-25 |')
    named = {}
    for minors, dates, status in rows:
        for part in minors.split(', '):
            low, _, high = part.partition('–')
            for minor in range(int(low.split('.')[1]), int((high or low).split('.')[1]) + 1):
                named['1.%d' % minor] = (dates, status)
    table = {row['version']: row for row in KUBERNETES}
    assert set(named) == set(table)
    for minor, (dates, status) in named.items():
        end = table[minor]['end_of_support']
        assert end in dates or dates.split(' … ')[0] <= end <= dates.split(' … ')[-1], minor
        assert status.startswith('past support') == (end < '2026-11-25'), minor
