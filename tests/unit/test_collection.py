"""The repository is the collection ipu_k8s.cluster, found in place (ansible.cfg's
collections_path and the collections/ link): a module's AnsiballZ payload carries the
collection's module_utils it imports, and no production file puts a directory on sys.path."""

import base64
import io
import os
import re
import subprocess
import zipfile
from pathlib import Path

from testlib import TOOLS

ROOT = Path(__file__).resolve().parents[2]
UTILS = 'ansible_collections/ipu_k8s/cluster/plugins/module_utils/'


def ansible_env(tmp_path, **extra):
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_HOME=str(tmp_path / 'home'),
                ANSIBLE_LOCAL_TEMP=str(tmp_path / 'local'), ANSIBLE_NOCOLOR='1', **extra)


def test_the_collection_is_found_in_place(tmp_path):
    """ansible-galaxy finds ipu_k8s.cluster through ansible.cfg alone, nothing installed."""
    done = subprocess.run([str(TOOLS / 'ansible-galaxy'), 'collection', 'list', 'ipu_k8s.cluster'], cwd=tmp_path,
                          env=ansible_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '# %s' % (ROOT / 'collections' / 'ansible_collections') in done.stdout, done.stdout
    assert re.search(r'^ipu_k8s\.cluster +1\.0\.0 *$', done.stdout, re.M), done.stdout


def test_a_module_carries_the_collection_module_utils_it_imports(tmp_path):
    """rdma_network_facts, run by its short name as the plays run it, is sent to the node with
    ipu_k8s_vipu_controllers and (imported by that one) ipu_k8s_rdma under the collection's
    names: the payload ansible-core builds (kept on the node with ANSIBLE_KEEP_REMOTE_FILES)."""
    remote = tmp_path / 'remote'
    env = ansible_env(tmp_path, ANSIBLE_KEEP_REMOTE_FILES='1', ANSIBLE_PIPELINING='0', ANSIBLE_REMOTE_TMP=str(remote),
                      ANSIBLE_STDOUT_CALLBACK='ansible.builtin.minimal')
    # A port the module refuses before it runs any command on the node.
    done = subprocess.run([str(TOOLS / 'ansible'), 'localhost', '-m', 'rdma_network_facts', '-a',
                           'address=10.247.208.5:0'], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert 'FAILED' in done.stdout and 'port' in done.stdout, done.stdout + done.stderr
    payloads = list(remote.glob('*/AnsiballZ_rdma_network_facts.py'))
    assert len(payloads) == 1, list(remote.rglob('*'))
    zip_data = re.search(r"^zip_data='([A-Za-z0-9+/=]+)'", payloads[0].read_text(), re.M).group(1)
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(zip_data))).namelist()
    assert UTILS + 'ipu_k8s_vipu_controllers.py' in names, names
    assert UTILS + 'ipu_k8s_rdma.py' in names, names
    assert not [name for name in names if name.startswith('ansible/module_utils/ipu_k8s')], names


def test_no_production_file_puts_a_directory_on_sys_path():
    """The modules, module_utils, filters, callback and the roles' files import the project's
    Python by the collection's names; only the tests and scripts set up sys.path for themselves."""
    tracked = subprocess.run(['git', 'ls-files', '*.py'], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    production = [path for path in tracked if not path.startswith(('tests/', 'scripts/', 'molecule/', 'collections/'))]
    assert any('/ipu_k8s_site.py' in path for path in production), production  # a filter that uses module_utils
    shims = [path for path in production if re.search(r'\bsys\.path\b', (ROOT / path).read_text())]
    assert shims == []
