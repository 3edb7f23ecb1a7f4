"""Fixtures of the API tier: the binaries (scripts/k8s-api/build, cached), test clusters on
127.0.0.1 that are always stopped by PID, network namespaces for the IPU nodes, and a test
site (api_site.py) whose playbook runs write only into temp directories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / 'tests' / 'integration'))

from api_cluster import Cluster, sweep_stale  # noqa: E402
from netns_lab import create_netns, ip_binary, sweep_stale_namespaces  # noqa: E402
from api_site import BASE_PYTHON, NODES, Site  # noqa: E402
from testlib import client_lock_lines, namespace_factory  # noqa: E402  (tests/testlib.py)


@pytest.fixture(scope='session')
def k8s_bin() -> Path:
    """The cached binaries; the first call builds them (several minutes). IPU_K8S_API_BIN
    names a directory of already built binaries instead (no build)."""
    if os.geteuid() != 0:
        pytest.fail('the API tier runs as root (it makes network namespaces; the first build uses apt-get)')
    if ip_binary() is None:
        pytest.fail('the API tier needs iproute2 (`ip`): apt-get install iproute2')
    if os.environ.get('IPU_K8S_API_BIN'):
        return Path(os.environ['IPU_K8S_API_BIN'])
    proc = subprocess.run([str(ROOT / 'scripts' / 'k8s-api' / 'build')], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail('scripts/k8s-api/build failed:\n%s' % proc.stderr[-4000:])
    bin_dir = Path(proc.stdout.strip().splitlines()[-1]) / 'bin'
    assert (bin_dir / 'kube-apiserver').exists(), proc.stderr[-2000:]
    return bin_dir


@pytest.fixture(scope='session', autouse=True)
def _sweep_stale_runs():
    """Processes and namespaces of earlier runs that died before their finalizers."""
    sweep_stale()
    sweep_stale_namespaces()


@pytest.fixture(scope='module')
def netns_factory():
    with namespace_factory(create_netns) as make:
        yield make


def _start(k8s_bin):
    cluster = Cluster(k8s_bin, NODES)
    try:
        cluster.start()
    except BaseException:
        cluster.remove()
        raise
    return cluster


@pytest.fixture(scope='module')
def cluster(k8s_bin):
    """A fresh control plane with a hollow node per inventory host, for one test module."""
    made = _start(k8s_bin)
    try:
        yield made
    finally:
        made.remove()


# The role's locked client requirements (name==version --hash=sha256:...).
CLIENT_PINS = client_lock_lines()
# What Ubuntu 22.04's python3-kubernetes is: the control plane's system python holds it.
OLD_CLIENT = 'kubernetes==12.0.1'


@pytest.fixture(scope='session')
def client_wheels() -> Path:
    """Wheels of the client pins and of the old client, downloaded once (cached)."""
    proc = subprocess.run([str(ROOT / 'scripts' / 'k8s-api' / 'wheels'), sys.executable, *CLIENT_PINS, OLD_CLIENT],
                          capture_output=True, text=True, check=False, timeout=900)
    if proc.returncode != 0:
        pytest.fail('scripts/k8s-api/wheels failed:\n%s' % proc.stderr[-3000:])
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='session')
def system_python(client_wheels, tmp_path_factory) -> Path:
    """The control plane's "system" python: /usr/bin/python3 with the Kubernetes client
    12.0.1 (a virtualenv standing for Ubuntu 22.04's python3 + python3-kubernetes)."""
    home = tmp_path_factory.mktemp('system-python')
    subprocess.run([BASE_PYTHON, '-m', 'venv', str(home)], check=True, capture_output=True)
    python = home / 'bin' / 'python3'
    subprocess.run([str(python), '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-index',
                    '--find-links', str(client_wheels), OLD_CLIENT], check=True, capture_output=True, timeout=600)
    version = subprocess.run([str(python), '-c', 'import kubernetes; print(kubernetes.__version__)'],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == '12.0.1', version
    return python


@pytest.fixture(scope='session')
def client_venv(tmp_path_factory) -> Path:
    """The Kubernetes client virtualenv the sites of the session share: the first layer run of
    the session makes it (the role's k8s_client_venv), later modules' runs find it at the pins,
    as a site's second run does (about 6 s of CPU less for each module's first run).
    test_layers.py keeps a virtualenv of its own: it asserts that its first run made it."""
    return tmp_path_factory.mktemp('kubernetes-client') / 'venv'


@pytest.fixture(scope='module')
def site(cluster, k8s_bin, netns_factory, tmp_path_factory, client_wheels, system_python, client_venv):
    return Site(cluster, tmp_path_factory.mktemp('site'), k8s_bin / 'helm', netns_factory, client_wheels,
                system_python, client_venv)


@pytest.fixture(scope='module')
def api(cluster):
    """A client of the module's API server (tests/api/api_client.py)."""
    from api_client import Api
    return Api(cluster.kubeconfig)
