"""The rdma_network_facts module's own run on a node (python start-up and ansible-playbook excluded) takes
well under a second: the module file is run directly with an args file inside the lab
node's namespace, as Ansible's module debugging does (`python module.py args.json`), and
timed around the module alone."""

import json
import re

import pytest

from netns_lab import FAKE_VIPU_BIN, PYTHON, ROOT, SYSTEM_PATH

LIMIT_SECONDS = 1.0
RUNS = 3

# Makes the collection's module_utils importable as on a node (the repository's collections/
# directory on sys.path), runs the module as __main__ with the args file, and reports how long
# the module took.
RUNNER = r'''
import runpy, sys, time
sys.path.insert(0, sys.argv[1])
module_file, args_file = sys.argv[2], sys.argv[3]
sys.argv = [module_file, args_file]
start = time.perf_counter()
try:
    runpy.run_path(module_file, run_name='__main__')
except SystemExit:
    pass
sys.stderr.write('MODULE-SECONDS %.4f\n' % (time.perf_counter() - start))
'''

MODULE = 'rdma_network_facts'
CASES = {
    'address_given': {'address': '10.247.208.5:8090'},
    'address_from_the_cli': {},
}


def run_module_directly(namespace, name, args, workdir):
    args_file = workdir / ('%s.json' % name)
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    env = {'PATH': '%s:%s' % (FAKE_VIPU_BIN, SYSTEM_PATH), 'LANG': 'C.UTF-8',
           'VIPU_FAKE_HOST': '10.247.208.5:8090'}
    done = namespace.run([PYTHON, '-c', RUNNER, ROOT / 'collections', ROOT / 'plugins' / 'modules' / ('%s.py' % name), args_file],
                         env=env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    seconds = float(re.search(r'MODULE-SECONDS ([0-9.]+)', done.stderr).group(1))
    return result, seconds


@pytest.mark.parametrize('name', sorted(CASES))
def test_module_run_takes_well_under_a_second(lab, tmp_path, name):
    timings = []
    for _ in range(RUNS):
        result, seconds = run_module_directly(lab, MODULE, CASES[name], tmp_path)
        assert not result.get('failed'), result.get('msg')
        timings.append(seconds)
    # The best of a few runs: the module's own cost, not another job's moment on a shared CPU.
    assert min(timings) < LIMIT_SECONDS, 'module %s (%s) took %s s' % (MODULE, name, timings)
