"""scripts/ansiballz-pyc: the code Python compiles from Ansible's module payloads is cached by
the sha256 of the source and loaded from the cache the next time, under the name of the payload
that asked for it; nothing else is cached; the sitecustomize it shadows still runs.

Each case runs a fresh interpreter with the directory first on PYTHONPATH, as scripts/test
starts the suite, and imports from a zip laid out as AnsiballZ lays out a payload
(ansible/_internal/_ansiballz/_wrapper.py: <tmp>/ansible_<module>_payload_<random>/
ansible_<module>_payload.zip). The cache key is computed here from CPython's documented
bytecode magic (importlib.util.MAGIC_NUMBER), not by the code under test.
"""

import hashlib
import importlib.util
import json
import marshal
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

HOOK_DIR = ROOT / 'scripts' / 'ansiballz-pyc'
SOURCE = b'''VALUE = "compiled"


def where():
    def inner():
        return inner.__code__.co_filename
    return where.__code__.co_filename, inner()
'''
# What the probe prints: the module's value, the file its functions' code names, and whether
# zipimport's compile step is the cache's.
PROBE = '''import json, sys, zipimport
sys.path.insert(0, sys.argv[1])
import probe
print(json.dumps({"value": probe.VALUE, "files": probe.where(),
                  "cached": getattr(zipimport._compile_source, "ansiballz_pyc", False)}))
'''


def payload(tmp_path, name='ansible_probe_payload_x1', zip_name='ansible_probe_payload.zip', source=SOURCE):
    path = tmp_path / name / zip_name
    path.parent.mkdir()
    with zipfile.ZipFile(path, 'w') as z:
        z.writestr('probe.py', source)
    return path


def key(source):
    return hashlib.sha256(importlib.util.MAGIC_NUMBER + bytes([sys.flags.optimize]) + source).hexdigest()


def probe(zip_path, cache, pythonpath=(HOOK_DIR,)):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath))
    env.pop('IPU_K8S_PYC_CACHE', None)
    if cache is not None:
        env['IPU_K8S_PYC_CACHE'] = str(cache)
    run = subprocess.run([sys.executable, '-c', PROBE, str(zip_path)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(run.stdout.splitlines()[-1]), run.stdout


def test_a_payloads_code_is_cached_under_the_sha256_of_its_source(tmp_path):
    cache = tmp_path / 'cache'
    zip_path = payload(tmp_path)
    seen, _ = probe(zip_path, cache)
    assert seen['value'] == 'compiled' and seen['cached'] is True
    assert os.listdir(cache) == [key(SOURCE)]
    code = marshal.loads((cache / key(SOURCE)).read_bytes())
    assert code.co_consts[0] == 'compiled'


def test_the_next_import_loads_the_cached_code_instead_of_compiling(tmp_path):
    cache = tmp_path / 'cache'
    cache.mkdir()
    # code made from another source, filed under this source's key: only a read of the
    # cache can give the module this value
    (cache / key(SOURCE)).write_bytes(marshal.dumps(compile(SOURCE.replace(b'"compiled"', b'"from the cache"'),
                                                            'elsewhere.py', 'exec')))
    seen, _ = probe(payload(tmp_path), cache)
    assert seen['value'] == 'from the cache'


def test_cached_code_names_the_file_of_the_payload_that_imported_it(tmp_path):
    cache = tmp_path / 'cache'
    first, _ = probe(payload(tmp_path, name='ansible_probe_payload_aaa'), cache)
    second_zip = payload(tmp_path, name='ansible_probe_payload_bbb')
    second, _ = probe(second_zip, cache)
    assert len(os.listdir(cache)) == 1
    expected = str(second_zip / 'probe.py')
    assert second['files'] == [expected, expected], second
    assert first['files'][0] != expected


def test_a_changed_source_is_compiled_and_filed_under_its_own_key(tmp_path):
    cache = tmp_path / 'cache'
    probe(payload(tmp_path, name='ansible_probe_payload_a'), cache)
    changed = SOURCE.replace(b'"compiled"', b'"changed"')
    seen, _ = probe(payload(tmp_path, name='ansible_probe_payload_b', source=changed), cache)
    assert seen['value'] == 'changed'
    assert sorted(os.listdir(cache)) == sorted([key(SOURCE), key(changed)])


def test_an_unreadable_cache_file_is_compiled_around_and_replaced(tmp_path):
    cache = tmp_path / 'cache'
    cache.mkdir()
    (cache / key(SOURCE)).write_bytes(b'not marshal data')
    seen, _ = probe(payload(tmp_path), cache)
    assert seen['value'] == 'compiled'
    assert marshal.loads((cache / key(SOURCE)).read_bytes()).co_consts[0] == 'compiled'


def test_a_cache_that_cannot_be_written_leaves_the_import_as_it_was(tmp_path):
    blocker = tmp_path / 'a-file'
    blocker.write_text('')
    seen, _ = probe(payload(tmp_path), blocker / 'cache')
    assert seen['value'] == 'compiled'


@pytest.mark.parametrize('zip_name', ['probe.zip', 'ansible_probe_payload.zip.bak'])
def test_a_zip_that_is_not_a_module_payload_is_not_cached(tmp_path, zip_name):
    cache = tmp_path / 'cache'
    seen, _ = probe(payload(tmp_path, zip_name=zip_name), cache)
    assert seen['value'] == 'compiled' and seen['cached'] is True
    assert not cache.exists()


def test_without_a_cache_directory_zipimport_is_left_alone(tmp_path):
    seen, _ = probe(payload(tmp_path), None)
    assert seen['cached'] is False


def test_the_sitecustomize_it_shadows_still_runs(tmp_path):
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'sitecustomize.py').write_text('print("the other sitecustomize ran")\n')
    _, stdout = probe(payload(tmp_path), tmp_path / 'cache', pythonpath=(HOOK_DIR, other))
    assert stdout.splitlines()[0] == 'the other sitecustomize ran'
