# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What verify reads from perftest's ib_write_bw and from the pods that run it.

verify_perftest_result parses the client's report: the table after the line of dashes,

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      5000             0.31               0.31               0.000599

(the bandwidth unit is in the heading: Gb/sec with --report_gbits, MB/sec without).
verify_network_status_ip reads the address Multus gave a pod's interface from the pod's
k8s.v1.cni.cncf.io/network-status annotation.
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError

HEADING = re.compile(r'^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[(?P<unit2>[^\]]+)\]'
                     r'\s+MsgRate\[(?P<rate_unit>[^\]]+)\]')
ROW = re.compile(r'^\s*(?P<bytes>\d+)\s+(?P<iterations>\d+)\s+(?P<peak>[\d.]+)\s+(?P<average>[\d.]+)'
                 r'\s+(?P<rate>[\d.]+)\s*$')
NETWORK_STATUS = 'k8s.v1.cni.cncf.io/network-status'


def verify_perftest_result(output):
    """The first result row of an ib_write_bw (or ib_read_bw, ib_send_bw) report.

    Returns {bytes, iterations, bw_peak, bw_average, bw_unit, msg_rate, msg_rate_unit};
    refuses output without a result row (the run failed: its last lines say why).
    """
    lines = str(output or '').splitlines()
    for index, line in enumerate(lines):
        heading = HEADING.match(line)
        if not heading:
            continue
        for row_line in lines[index + 1:]:
            row = ROW.match(row_line)
            if row:
                return {
                    'bytes': int(row['bytes']),
                    'iterations': int(row['iterations']),
                    'bw_peak': float(row['peak']),
                    'bw_average': float(row['average']),
                    'bw_unit': heading['unit2'],
                    'msg_rate': float(row['rate']),
                    'msg_rate_unit': heading['rate_unit'],
                }
    tail = ' | '.join(line.strip() for line in lines[-5:] if line.strip()) or 'no output'
    raise AnsibleFilterError('no ib_write_bw result row (#bytes #iterations BW peak ...) in the output: %s' % tail)


def verify_network_status_ip(annotations, interface):
    """The first address Multus reported for the pod's interface, '' when none."""
    text = (annotations or {}).get(NETWORK_STATUS) or '[]'
    try:
        networks = json.loads(text)
    except ValueError as exc:
        raise AnsibleFilterError('%s is not JSON: %s' % (NETWORK_STATUS, exc)) from exc
    for network in networks if isinstance(networks, list) else []:
        if isinstance(network, dict) and network.get('interface') == interface and network.get('ips'):
            return str(network['ips'][0])
    return ''


class FilterModule:
    """Readers of ib_write_bw's report and of Multus's network status."""

    def filters(self):
        return {
            'verify_perftest_result': verify_perftest_result,
            'verify_network_status_ip': verify_network_status_ip,
        }
