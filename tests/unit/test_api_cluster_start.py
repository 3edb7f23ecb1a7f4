"""The API tier's control plane start (tests/api/api_cluster.py) with real processes in place of
the hollow kubelet: a process that dies while the start waits is started again once, with a
warning that carries why it ended (the first line of a Go crash, which its goroutine dump
would push out of the log's tail); a second death fails the start with the same lines."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'api'))
from api_cluster import Cluster  # noqa: E402

# A Go crash as kubemark's log ends with one: the reason first, then a long goroutine dump.
CRASH = 'echo "fatal error: concurrent map writes"; for i in $(seq 60); do echo "goroutine $i [select]:"; done; exit 2'


@pytest.fixture
def cluster(tmp_path):
    made = Cluster(tmp_path / 'bin', ['poplar-01'], base=tmp_path)
    yield made
    made.remove()


def spawner(cluster, script):
    return lambda: cluster._spawn('node-poplar-01', ['sh', '-c', script])


def test_a_node_that_dies_while_the_start_waits_is_started_again_once_with_its_crash_in_a_warning(cluster, tmp_path):
    started = tmp_path / 'started-again'
    spawner(cluster, CRASH)()
    with pytest.warns(UserWarning, match=r'node-poplar-01 exited while waiting for hollow nodes Ready; '
                                         r'started again:\nfatal error: concurrent map writes\n'):
        cluster._wait('hollow nodes Ready', started.exists, 30, 'node-poplar-01',
                      restart={'node-poplar-01': spawner(cluster, 'touch %s; exec sleep 30' % started)})
    assert [p['name'] for p in cluster.processes] == ['node-poplar-01']


def test_a_node_that_dies_again_fails_the_start_saying_why(cluster, tmp_path):
    spawner(cluster, CRASH)()
    with pytest.warns(UserWarning), pytest.raises(RuntimeError) as failed:
        cluster._wait('hollow nodes Ready', lambda: False, 30, 'node-poplar-01',
                      restart={'node-poplar-01': spawner(cluster, CRASH)})
    assert str(failed.value).startswith("['node-poplar-01'] exited while waiting for hollow nodes Ready:\n"
                                        "fatal error: concurrent map writes\n"), failed.value
    assert 'goroutine 60 [select]:' in str(failed.value)


def test_a_process_not_named_for_a_restart_fails_the_start(cluster):
    cluster._spawn('etcd', ['sh', '-c', CRASH])
    with pytest.raises(RuntimeError, match=r"\['etcd'\] exited while waiting for etcd:\nfatal error"):
        cluster._wait('etcd', lambda: False, 30, 'etcd', restart={'node-poplar-01': lambda: None})
