"""What verify reads from ib_write_bw and from Multus (plugins/filter/verify_observe.py).

The ib_write_bw reports in tests/fixtures/perftest/ are real: perftest 4.5+0.17-1 (Debian
12's package) on the lab's two VMs over Soft-RoCE, 50 RDMA writes of 64 KiB, the server
on vipu1 (rxe1 on eth1, 10.247.208.10), the client on node1 (rxe0 on eth1): with GID
index 1 (-x 1) and --report_gbits, without it (MB/sec), over RDMA CM (-R, as verify's pod
check runs it), and a client with no server listening. The expected numbers are read off
those reports by hand.
"""

import importlib.util
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('verify_observe', ROOT / 'plugins' / 'filter' / 'verify_observe.py')
verify_perftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_perftest)

FIXTURES = ROOT / 'tests' / 'fixtures' / 'perftest'


# Each from the result row of its report, copied by hand.
CLIENT_GBITS = {'bytes': 65536, 'iterations': 50, 'bw_peak': 0.047197, 'bw_average': 0.044390,
                'bw_unit': 'Gb/sec', 'msg_rate': 0.000085, 'msg_rate_unit': 'Mpps'}
SERVER_GBITS = CLIENT_GBITS  # the server prints the same row for the same run
CLIENT_MBYTES = {'bytes': 65536, 'iterations': 50, 'bw_peak': 2.87, 'bw_average': 2.17,
                 'bw_unit': 'MB/sec', 'msg_rate': 0.000035, 'msg_rate_unit': 'Mpps'}
CLIENT_RDMA_CM = {'bytes': 65536, 'iterations': 50, 'bw_peak': 0.051941, 'bw_average': 0.040986,
                  'bw_unit': 'Gb/sec', 'msg_rate': 0.000078, 'msg_rate_unit': 'Mpps'}
FAILED_LINE = "Couldn't connect to 10.247.208.10:18602"


def report(name):
    return (FIXTURES / name).read_text()


def test_the_client_report_of_the_lab_gives_its_bandwidth_in_gbits():
    assert verify_perftest.verify_perftest_result(report('ib_write_bw-client-gbits.txt')) == CLIENT_GBITS


def test_the_server_report_of_the_same_run_gives_the_same_row():
    assert verify_perftest.verify_perftest_result(report('ib_write_bw-server-gbits.txt')) == SERVER_GBITS


def test_without_report_gbits_the_unit_is_mb_per_second():
    assert verify_perftest.verify_perftest_result(report('ib_write_bw-client-mbytes.txt')) == CLIENT_MBYTES


def test_over_rdma_cm_the_report_has_the_same_row():
    assert verify_perftest.verify_perftest_result(report('ib_write_bw-client-rdma-cm.txt')) == CLIENT_RDMA_CM


def test_a_failed_run_is_refused_with_its_last_lines():
    with pytest.raises(AnsibleFilterError, match='no ib_write_bw result row') as failure:
        verify_perftest.verify_perftest_result(report('ib_write_bw-client-refused.txt'))
    assert FAILED_LINE in str(failure.value)


def test_no_output_is_refused():
    with pytest.raises(AnsibleFilterError, match='no output'):
        verify_perftest.verify_perftest_result('')


# Multus's network status, in the format of the Network Plumbing Working Group's
# specification (k8snetworkplumbingwg/multi-net-spec, v1.2 section 4.1.2).
NETWORK_STATUS = json.dumps([
    {'name': 'k8s-pod-network', 'interface': 'eth0', 'ips': ['192.168.12.7'], 'default': True, 'dns': {}},
    {'name': 'default/rdma-net', 'interface': 'net1', 'ips': ['10.247.209.3', 'fd00::3'],
     'mac': '7e:2a:11:00:00:03', 'dns': {}},
])


def test_the_address_of_net1_from_the_network_status():
    annotations = {'k8s.v1.cni.cncf.io/network-status': NETWORK_STATUS}
    assert verify_perftest.verify_network_status_ip(annotations, 'net1') == '10.247.209.3'
    assert verify_perftest.verify_network_status_ip(annotations, 'eth0') == '192.168.12.7'


def test_no_status_or_no_such_interface_gives_no_address():
    assert verify_perftest.verify_network_status_ip({}, 'net1') == ''
    assert verify_perftest.verify_network_status_ip(None, 'net1') == ''
    status = {'k8s.v1.cni.cncf.io/network-status': NETWORK_STATUS}
    assert verify_perftest.verify_network_status_ip(status, 'net2') == ''


def test_a_network_status_that_is_not_json_is_refused():
    with pytest.raises(AnsibleFilterError, match='network-status is not JSON'):
        verify_perftest.verify_network_status_ip({'k8s.v1.cni.cncf.io/network-status': '[{'}, 'net1')


def test_a_failed_run_is_refused_quoting_its_last_lines_in_full():
    with pytest.raises(AnsibleFilterError) as failure:
        verify_perftest.verify_perftest_result(report('ib_write_bw-client-refused.txt'))
    assert failure.value.message == (
        "no ib_write_bw result row (#bytes #iterations BW peak ...) in the output: Couldn't connect to "
        "10.247.208.10:18602 | Unable to open file descriptor for socket connection Unable to init the socket "
        "connection")


def test_only_the_last_five_lines_are_quoted_and_no_output_says_so():
    with pytest.raises(AnsibleFilterError) as failure:
        verify_perftest.verify_perftest_result('\n'.join('line %d' % n for n in range(1, 8)) + '\n\n')
    # the last five lines are line 4 to line 7 and a blank one, which is not shown
    assert failure.value.message.endswith('in the output: line 4 | line 5 | line 6 | line 7')
    with pytest.raises(AnsibleFilterError) as failure:
        verify_perftest.verify_perftest_result(None)
    assert failure.value.message == 'no ib_write_bw result row (#bytes #iterations BW peak ...) in the output: no output'


def test_the_row_is_the_one_after_the_heading():
    heading = ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'
    output = '\n'.join([' 4096       10           9.9                9.9                  9.9', heading,
                        ' 65536      50           0.047197           0.044390             0.000085'])
    assert verify_perftest.verify_perftest_result(output) == CLIENT_GBITS


def test_a_network_status_that_is_not_json_is_refused_quoting_python():
    with pytest.raises(AnsibleFilterError) as refused:
        verify_perftest.verify_network_status_ip({'k8s.v1.cni.cncf.io/network-status': '[{'}, 'net1')
    assert refused.value.message == ('k8s.v1.cni.cncf.io/network-status is not JSON: Expecting property name enclosed '
                                     'in double quotes: line 1 column 3 (char 2)')


@pytest.mark.parametrize('status', ['5', '{"interface": "net1", "ips": ["10.0.0.1"]}', 'null'])
def test_a_network_status_that_is_not_a_list_gives_no_address(status):
    assert verify_perftest.verify_network_status_ip({'k8s.v1.cni.cncf.io/network-status': status}, 'net1') == ''


def test_the_plugin_offers_the_two_filters():
    filters = verify_perftest.FilterModule().filters()
    assert filters['verify_perftest_result'] is verify_perftest.verify_perftest_result
    assert filters['verify_network_status_ip'] is verify_perftest.verify_network_status_ip
