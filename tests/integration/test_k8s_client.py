"""The Kubernetes client virtualenv (roles/ipu_k8s/tasks/k8s_client.yml), run for real on
this machine through ansible-runner (connection local), on a host shaped like an Ubuntu 22.04
control plane: its "system python" (a virtualenv made here, standing for /usr/bin/python3)
has the distribution's Kubernetes client 12.0.1, which kubernetes.core 6.2.0 does not
support ("kubernetes<24.2.0 is not supported or tested"; no server-side dry run in check mode
below 18.20.0, no server-side apply below 19.15.0).

The task file builds the client virtualenv from PyPI (and, once, from a wheel directory with
no index at all); then a kubernetes.core.k8s_info task wired the way every API task of the
roles is (`ansible_python_interpreter: ipu_k8s_client_python`) reads a Namespace from a
small API stand-in on 127.0.0.1 with the pinned client, while the same task with the system
python gets the old one. A second run changes nothing; check mode creates nothing and skips
the API task when the virtualenv does not exist yet. Needs PyPI (pip install/download)."""

import base64
import hashlib
import http.server
import json
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
import yaml

from json_api import JsonApi

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
from testlib import CLIENT_LOCK as LOCK, client_lock_pins, require  # noqa: E402
SYSTEM_PYTHON = '/usr/bin/python3'
OLD_CLIENT = 'kubernetes==12.0.1'
# The role's default requirements (every package pinned, each with its sha256 hashes), by name==version,
# from the lock's text (tests/testlib.py), not from the role's filter.
PINS = client_lock_pins()


def pip(python, *args, timeout=900):
    result = subprocess.run([str(python), '-m', 'pip', '--disable-pip-version-check', '--no-input', *args],
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def canonical(pin):
    """name==version with the name as PEP 503 compares it (PyYAML, pyasn1_modules)."""
    name, version = pin.split('==')
    return '%s==%s' % (re.sub(r'[-_.]+', '-', name).lower(), version)


def version_in(python, package):
    return subprocess.run([str(python), '-I', '-c', 'import importlib.metadata as m; print(m.version(%r))' % package],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope='module')
def ubuntu_2204_python(tmp_path_factory):
    """A python3 whose site-packages hold the Kubernetes client 12.0.1, as Ubuntu 22.04's
    python3-kubernetes gives /usr/bin/python3."""
    require(Path(SYSTEM_PYTHON).exists(), 'needs %s' % SYSTEM_PYTHON)
    home = tmp_path_factory.mktemp('system-python')
    created = subprocess.run([SYSTEM_PYTHON, '-m', 'venv', str(home)], capture_output=True, text=True)
    require(created.returncode == 0, '%s cannot create virtualenvs here: %s (apt-get install python3-venv)'
            % (SYSTEM_PYTHON, created.stderr.strip()))
    python = home / 'bin' / 'python3'
    pip(python, 'install', OLD_CLIENT)
    assert version_in(python, 'kubernetes') == '12.0.1'
    return python


class NamespaceApi(JsonApi):
    """Enough of the core/v1 API for kubernetes.core.k8s_info of one Namespace."""

    ANSWERS = {
        '/version': {'major': '1', 'minor': '33', 'gitVersion': 'v1.33.5'},
        '/api': {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []},
        '/apis': {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': []},
        '/api/v1': {'kind': 'APIResourceList', 'groupVersion': 'v1', 'resources': [
            {'name': 'namespaces', 'singularName': 'namespace', 'namespaced': False,
             'kind': 'Namespace', 'verbs': ['get', 'list', 'watch']}]},
        '/api/v1/namespaces/kube-system': {
            'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': {'name': 'kube-system', 'uid': 'uid-kube-system', 'resourceVersion': '7'},
            'status': {'phase': 'Active'}},
    }

    def __init__(self):
        self.requests = []
        super().__init__()

    def answer(self, path, query, headers):
        self.requests.append((path, headers.get('User-Agent', '')))
        if path in self.ANSWERS:
            return 200, self.ANSWERS[path]
        return 404, {'kind': 'Status', 'code': 404, 'message': 'no %s here' % path}


@pytest.fixture(scope='module')
def namespace_api():
    api = NamespaceApi()
    yield api
    api.close()


READ_NAMESPACE = {'kind': 'Namespace', 'name': 'kube-system', 'kubeconfig': '{{ ipu_k8s_kubeconfig }}'}

PLAYBOOK = [{
    'name': 'The API host keeps its Kubernetes client virtualenv',
    'hosts': 'cp1',
    'gather_facts': False,
    'tasks': [
        {'name': 'Client', 'ansible.builtin.import_role': {'name': 'ipu_k8s', 'tasks_from': 'k8s_client'}},
        # Wired as every kubernetes.core task of the roles is.
        {'name': 'Read kube-system with the client virtualenv',
         'kubernetes.core.k8s_info': READ_NAMESPACE,
         'vars': {'ansible_python_interpreter': '{{ ipu_k8s_client_python }}'},
         'when': 'ipu_k8s_client_ready | default(true)'},
        # What a run on Ubuntu 22.04 did before: the system python and its old client.
        {'name': 'Read kube-system with the system python', 'kubernetes.core.k8s_info': READ_NAMESPACE},
    ],
}]


def run_client_play(tmp_path, venv, system_python, kubeconfig, *options, **extra):
    """The playbook above on cp1 (system_python), through ansible-runner; its result."""
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'cp1': {
        'ansible_connection': 'local', 'ansible_python_interpreter': str(system_python)}}}}))
    extra_vars = dict(ipu_k8s_client_venv=str(venv), ipu_k8s_client_base_python=str(system_python),
                      ipu_k8s_kubeconfig=str(kubeconfig), **extra)
    (tmp_path / 'extra.json').write_text(json.dumps(extra_vars))
    return run_playbook(tmp_path / 'play.yml', tmp_path / 'hosts.yml', tmp_path,
                        envvars={'ANSIBLE_LOCAL_TEMP': str(tmp_path / 'ansible-tmp')},
                        cmdline=['-e', '@%s' % (tmp_path / 'extra.json'), *options], timeout=1200)


def run(tmp_path, venv, system_python, kubeconfig, *options, **extra):
    """A run that must succeed: each task's result on cp1."""
    result = run_client_play(tmp_path, venv, system_python, kubeconfig, *options, **extra)
    assert result.rc == 0, result.stdout[-6000:]
    # Each task's result on cp1 (runner_on_ok/skipped events), named without the role prefix.
    return {task['task']['name'].split(' : ', 1)[-1]: task['hosts']['cp1']
            for play in result.plays() for task in play['tasks'] if 'cp1' in task['hosts']}


def changed(tasks):
    return sorted(name for name, outcome in tasks.items() if outcome.get('changed'))


@pytest.fixture(scope='module')
def first_runs(tmp_path_factory, ubuntu_2204_python, namespace_api):
    """The client virtualenv built from PyPI, then the same playbook again."""
    work = tmp_path_factory.mktemp('k8s-client')
    venv = work / 'venv'
    kubeconfig = namespace_api.kubeconfig(work / 'kubeconfig')
    first = run(work, venv, ubuntu_2204_python, kubeconfig)
    second = run(work, venv, ubuntu_2204_python, kubeconfig)
    checked = run(work, venv, ubuntu_2204_python, kubeconfig, '--check')
    return {'work': work, 'venv': venv, 'kubeconfig': kubeconfig, 'first': first, 'second': second, 'check': checked}


def test_first_run_builds_the_pinned_client_beside_the_old_system_one(first_runs, ubuntu_2204_python):
    created = first_runs['first']['Keep the Kubernetes client virtualenv at the pinned versions']
    assert created['changed'] and created['created'] and created['hashes_checked']
    python = first_runs['venv'] / 'bin' / 'python3'
    assert created['python'] == str(python)
    # pip's own account of the virtualenv is the lock's pins, read plainly, and nothing else.
    frozen = pip(python, 'freeze').stdout.split()
    assert sorted(map(canonical, frozen)) == sorted(map(canonical, PINS)), frozen
    assert version_in(ubuntu_2204_python, 'kubernetes') == '12.0.1', 'the system python was changed'
    # The venv module was there, so no apt package was installed.
    assert first_runs['first']['Install the python venv module'].get('skipped')


def test_api_task_reads_the_cluster_through_the_virtualenv(first_runs, namespace_api):
    read = first_runs['first']['Read kube-system with the client virtualenv']
    assert not read.get('failed'), read
    assert [r['metadata']['name'] for r in read['resources']] == ['kube-system']
    agents = {agent for path, agent in namespace_api.requests if path == '/api/v1/namespaces/kube-system'}
    assert any('OpenAPI-Generator/33.1.0' in agent for agent in agents), agents


UNSUPPORTED = 'kubernetes<24.2.0 is not supported or tested'


def test_the_old_system_client_is_unsupported_the_virtualenv_one_is_not(first_runs):
    # kubernetes.core 6.2.0 warns below 24.2.0, and below 18.20.0 its check mode has no
    # server-side dry run and below 19.15.0 no server-side apply.
    old = first_runs['first']['Read kube-system with the system python']
    assert any(UNSUPPORTED in warning for warning in old.get('warnings', [])), old.get('warnings')
    new = first_runs['first']['Read kube-system with the client virtualenv']
    assert not any(UNSUPPORTED in warning for warning in new.get('warnings', [])), new.get('warnings')


def test_second_run_changes_nothing(first_runs):
    assert changed(first_runs['second']) == []
    assert first_runs['second']['Read kube-system with the client virtualenv']['resources']


def test_check_mode_with_the_virtualenv_changes_nothing_and_reads_the_cluster(first_runs):
    assert changed(first_runs['check']) == []
    assert first_runs['check']['Read kube-system with the client virtualenv']['resources']


def test_check_mode_without_the_virtualenv_creates_nothing_and_skips_the_api_tasks(
        tmp_path, ubuntu_2204_python, first_runs):
    venv = tmp_path / 'not-yet'
    tasks = run(tmp_path, venv, ubuntu_2204_python, first_runs['kubeconfig'], '--check')
    would = tasks['Keep the Kubernetes client virtualenv at the pinned versions']
    assert would['changed'] and not would['ready']
    assert sorted(would['missing']) == sorted(PINS)
    assert tasks['Read kube-system with the client virtualenv'].get('skipped')
    assert 'does not exist yet' in tasks['Say why the API tasks are skipped in this check run']['msg']
    assert not venv.exists()


def test_air_gapped_site_installs_from_the_wheel_directory_alone(tmp_path, ubuntu_2204_python, first_runs):
    wheels = tmp_path / 'wheels'
    # What the README tells an air-gapped site to run.
    pip(ubuntu_2204_python, 'download', '--require-hashes', '-r', str(LOCK), '--dest', str(wheels))
    venv = tmp_path / 'venv'
    # pip gets --no-index: nothing may come from an index.
    tasks = run(tmp_path, venv, ubuntu_2204_python, first_runs['kubeconfig'], ipu_k8s_client_wheel_dir=str(wheels))
    assert tasks['Keep the Kubernetes client virtualenv at the pinned versions']['changed']
    assert tasks['Read kube-system with the client virtualenv']['resources']
    assert version_in(venv / 'bin' / 'python3', 'kubernetes') == '33.1.0'
    again = run(tmp_path, venv, ubuntu_2204_python, first_runs['kubeconfig'],
                ipu_k8s_client_wheel_dir=str(wheels))
    assert changed(again) == []


def test_a_wheel_whose_digest_is_not_the_locked_one_is_not_installed(tmp_path, ubuntu_2204_python, first_runs):
    """The lock's hashes are checked: a wheel directory whose six wheel was altered (one
    byte appended: still a valid zip) stops the install with pip's hash error, and the
    virtualenv gets no client."""
    wheels = tmp_path / 'wheels'
    pip(ubuntu_2204_python, 'download', '--require-hashes', '-r', str(LOCK), '--dest', str(wheels))
    six = next(wheels.glob('six-*.whl'))
    six.write_bytes(six.read_bytes() + b'\0')
    venv = tmp_path / 'venv'
    result = run_client_play(tmp_path, venv, ubuntu_2204_python, first_runs['kubeconfig'],
                             ipu_k8s_client_wheel_dir=str(wheels))
    assert result.rc != 0
    failed = [{'msg': msg} for msg in result.failure_messages()]  # every failed task (runner_on_failed)
    assert len(failed) == 1 and 'DO NOT MATCH THE HASHES' in failed[0]['msg'], failed
    assert 'six' in failed[0]['msg']
    assert subprocess.run([str(venv / 'bin' / 'python3'), '-c', 'import kubernetes'],
                          capture_output=True).returncode != 0


class RecordingIndex(http.server.BaseHTTPRequestHandler):
    """A package index on 127.0.0.1 that holds nothing (404) and keeps each request's path and
    Authorization header."""
    requests = []

    def do_GET(self):  # noqa: N802 - the name http.server calls
        self.requests.append((self.path, self.headers.get('Authorization')))
        self.send_error(404)

    def log_message(self, *args):
        pass


def test_an_index_url_with_credentials_reaches_pip_and_nothing_the_run_leaves(tmp_path, ubuntu_2204_python,
                                                                              namespace_api):
    """A mirror whose URL carries credentials: pip is given them (it sends them to the index, the real
    oracle here), yet no file of the run (job events, the progress output) holds the password, and the
    failure names the index without them."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), RecordingIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index = 'http://127.0.0.1:%d/simple/' % server.server_address[1]
    try:
        result = run_client_play(tmp_path, tmp_path / 'venv', ubuntu_2204_python,
                                 namespace_api.kubeconfig(tmp_path / 'kubeconfig'),
                                 ipu_k8s_client_index_url=index.replace('//', '//ci:s3cret@'))
    finally:
        server.shutdown()
        server.server_close()
    assert result.rc != 0
    authorization = 'Basic ' + base64.b64encode(b'ci:s3cret').decode()
    assert any(path.startswith('/simple/') and sent == authorization for path, sent in RecordingIndex.requests), \
        RecordingIndex.requests
    message = result.failures()['cp1']
    assert ' from %s failed ' % index in message, message
    leaks = [str(path.relative_to(tmp_path)) for path in sorted(tmp_path.glob('runner-*/**/*'))
             if path.is_file() and 's3cret' in path.read_text(errors='replace')]
    assert leaks == []



def hand_made_wheel(directory, name='demo', version='1.0'):
    """A pure-Python wheel written byte by byte (no build backend, no index): its path and sha256."""
    files = {'%s/__init__.py' % name: b'',
             '%s-%s.dist-info/METADATA' % (name, version): b'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (
                 name.encode(), version.encode()),
             '%s-%s.dist-info/WHEEL' % (name, version): b'Wheel-Version: 1.0\nGenerator: test\n'
                                                        b'Root-Is-Purelib: true\nTag: py3-none-any\n'}
    record = ''.join('%s,sha256=%s,%d\n' % (path, base64.urlsafe_b64encode(hashlib.sha256(data).digest())
                                            .rstrip(b'=').decode(), len(data)) for path, data in files.items())
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / ('%s-%s-py3-none-any.whl' % (name, version))
    with zipfile.ZipFile(wheel, 'w') as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr('%s-%s.dist-info/RECORD' % (name, version), record + '%s-%s.dist-info/RECORD,,\n' % (
            name, version))
    return wheel, hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_the_bundled_pip_module_reports_a_converged_hash_locked_virtualenv_changed_in_check_mode(tmp_path):
    """Why plugins/modules/k8s_client_venv.py stays: ansible.builtin.pip (ansible-core 2.19.14,
    lib/ansible/modules/pip.py lines 818-820) answers check mode with changed=True whenever it is
    given a requirements file or extra_args, and pip takes sha256 hashes only from a requirements
    file, with --require-hashes. Run here on a virtualenv it has just converged (a second real run
    changes nothing), its check run still says changed, where the role's check run says nothing
    changed (test_check_mode_with_the_virtualenv_changes_nothing_and_reads_the_cluster). When a
    release fixes that, this fails: then the module can give way to ansible.builtin.pip."""
    require(Path(SYSTEM_PYTHON).exists(), 'needs %s' % SYSTEM_PYTHON)
    wheel, digest = hand_made_wheel(tmp_path / 'wheels')
    (tmp_path / 'requirements.txt').write_text('demo==1.0 --hash=sha256:%s\n' % digest)
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{
        'name': 'A hash-locked virtualenv kept by ansible.builtin.pip', 'hosts': 'cp1', 'gather_facts': False,
        'tasks': [{'name': 'Keep the virtualenv', 'ansible.builtin.pip': {
            'requirements': str(tmp_path / 'requirements.txt'), 'virtualenv': str(tmp_path / 'venv'),
            'virtualenv_command': '%s -m venv' % SYSTEM_PYTHON,
            'extra_args': '--require-hashes --no-index --find-links %s' % wheel.parent}}]}]))
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'cp1': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))

    def kept(*options):
        result = run_playbook(tmp_path / 'play.yml', tmp_path / 'hosts.yml', tmp_path, cmdline=list(options))
        assert result.rc == 0, result.stdout[-3000:]
        return result.result('Keep the virtualenv', 'cp1')['changed']

    assert [kept(), kept(), kept('--check')] == [True, False, True]
    assert version_in(tmp_path / 'venv' / 'bin' / 'python3', 'demo') == '1.0'
