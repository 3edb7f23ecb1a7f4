"""The one fetch every pinned file goes through (ipu_k8s, entry point fetch), run for real
through a play on this machine: a site's own file from the controller or a download from
an HTTP server the test starts on 127.0.0.1 is put in place only when its sha256 is the
pinned one - the site's setting when it gives one, else the version table's, and messages
name the one that did; a second run changes nothing; check mode writes nothing; a checksum
written as "sha256:<hex>", or none at all, is refused with the fix before anything is fetched.

Expected sha256 values are computed here with hashlib from the bytes the test serves."""
import hashlib
import sys

import pytest
import yaml

from ipu_k8s_render import ROOT

sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
from testlib import served  # noqa: E402

CONTENT = b'apiVersion: v1\nkind: List\nitems: []\n'
GOOD = hashlib.sha256(CONTENT).hexdigest()
OTHER = hashlib.sha256(b'another file\n').hexdigest()


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    """An HTTP server on 127.0.0.1 serving CONTENT as /file.yaml."""
    root = tmp_path_factory.mktemp('served')
    (root / 'file.yaml').write_bytes(CONTENT)
    with served(root) as url:
        yield url + 'file.yaml'


def fetch(tmp_path, sha256, *, pinned=None, url='http://127.0.0.1:9/unused', local=None, check=False):
    """Run the fetch entry point as a role would (sha256: the site's setting, pinned: the
    version table's); returns (run, recap, destination)."""
    dest = tmp_path / 'host' / 'file.yaml'
    if not check:  # the callers make the directory; in check mode it may not be there yet
        dest.parent.mkdir(exist_ok=True)
    play = tmp_path / 'play.yml'
    play.write_text(yaml.safe_dump([{
        'hosts': 'localhost', 'gather_facts': False,
        'tasks': [{'name': 'Fetch', 'ansible.builtin.include_role': {'name': 'ipu_k8s', 'tasks_from': 'fetch'},
                   'vars': {'ipu_k8s_fetch_dest': str(dest), 'ipu_k8s_fetch_url': url,
                            'ipu_k8s_fetch_local_path': str(local or ''), 'ipu_k8s_fetch_sha256': sha256,
                            'ipu_k8s_fetch_sha256_setting': 'site_file_sha256',
                            **({'ipu_k8s_fetch_pinned_sha256': pinned,
                                'ipu_k8s_fetch_pinned_setting': 'files.v1.sha256'} if pinned is not None else {})}}]}]))
    cmdline = ['-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable] + (['--check'] if check else [])
    run = run_playbook(play, 'localhost,', tmp_path / 'runner', cmdline=cmdline, timeout=120,
                       envvars={'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'})
    return run, run.host_stats().get('localhost', {}), dest


def messages(run):
    return ' '.join(' '.join(run.failure_messages()).split())


@pytest.fixture
def local(tmp_path):
    path = tmp_path / 'controller' / 'file.yaml'
    path.parent.mkdir()
    path.write_bytes(CONTENT)
    return path


@pytest.mark.parametrize('source', ['local', 'download'])
def test_file_with_the_pinned_sha256_is_put_in_place_once(tmp_path, local, server, source):
    where = {'local': local} if source == 'local' else {'url': server}
    run, recap, dest = fetch(tmp_path, GOOD, check=True, **where)
    assert run.rc == 0 and not dest.exists(), run.stdout[-3000:]
    run, recap, dest = fetch(tmp_path, GOOD, **where)
    assert run.rc == 0 and recap['changed'] == 1, run.stdout[-3000:]
    assert dest.read_bytes() == CONTENT
    run, recap, _ = fetch(tmp_path, GOOD, **where)
    assert run.rc == 0 and recap['changed'] == 0, run.stdout[-3000:]


def test_local_file_with_another_sha256_is_refused_and_not_copied(tmp_path, local):
    run, recap, dest = fetch(tmp_path, OTHER, local=local)
    assert run.rc != 0 and recap['failures'] == 1
    assert '%s on the controller has sha256 %s, expected %s (site_file_sha256)' % (local, GOOD, OTHER) in messages(run)
    assert not dest.exists()


def test_missing_local_file_is_refused(tmp_path):
    run, _, dest = fetch(tmp_path, GOOD, local=tmp_path / 'nowhere.yaml')
    assert run.rc != 0
    assert '%s on the controller does not exist' % (tmp_path / 'nowhere.yaml') in messages(run)
    assert not dest.exists()


def test_download_with_another_sha256_is_refused_and_not_put_in_place(tmp_path, server):
    run, recap, dest = fetch(tmp_path, OTHER, url=server)
    assert run.rc != 0 and recap['failures'] == 1
    text = messages(run)
    assert server in text and 'Nothing was put in place' in text and 'site_file_sha256 (%s)' % OTHER in text, text
    assert not dest.exists()


def test_download_does_not_keep_a_file_in_place_that_has_another_sha256(tmp_path, server):
    # A file cut off by an interrupted run is where the download goes: it is replaced.
    dest = tmp_path / 'host' / 'file.yaml'
    dest.parent.mkdir()
    dest.write_bytes(CONTENT[:10])
    run, recap, dest = fetch(tmp_path, GOOD, url=server)
    assert run.rc == 0 and recap['changed'] == 1, run.stdout[-3000:]
    assert dest.read_bytes() == CONTENT


@pytest.mark.parametrize('written', ['sha256:' + GOOD, GOOD.upper(), GOOD[:-1]])
def test_checksum_not_written_as_bare_lowercase_sha256_is_refused_with_the_fix(tmp_path, local, written):
    run, _, dest = fetch(tmp_path, written, local=local)
    assert run.rc != 0
    text = messages(run)
    assert 'site_file_sha256 is "%s"' % written in text
    assert '64 lowercase hex digits without a "sha256:" prefix' in text
    assert not dest.exists()


def test_table_sha256_is_checked_when_the_site_gives_none(tmp_path, local):
    run, recap, dest = fetch(tmp_path, '', pinned=GOOD, local=local)
    assert run.rc == 0 and recap['changed'] == 1, run.stdout[-3000:]
    assert dest.read_bytes() == CONTENT


def test_table_sha256_is_named_when_the_file_is_not_the_tables(tmp_path, local):
    run, _, dest = fetch(tmp_path, '', pinned=OTHER, local=local)
    assert run.rc != 0
    assert 'expected %s (files.v1.sha256)' % OTHER in messages(run)
    assert not dest.exists()


def test_site_sha256_wins_over_the_table_and_is_named(tmp_path, local):
    run, _, dest = fetch(tmp_path, OTHER, pinned=GOOD, local=local)
    assert run.rc != 0
    assert 'expected %s (site_file_sha256)' % OTHER in messages(run)
    assert not dest.exists()


def test_no_sha256_from_the_site_or_the_table_is_refused_naming_the_site_setting(tmp_path, local):
    run, _, dest = fetch(tmp_path, '', pinned='', local=local)
    assert run.rc != 0
    assert 'site_file_sha256 is "" (file.yaml): give the file\'s sha256 as 64 lowercase hex digits' in messages(run)
    assert not dest.exists()
