"""testlib.require: a test that cannot run here skips on a workstation and fails on CI
(CI=true), naming what it needs; run for real in a pytest of its own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SAMPLE = '''
import sys
sys.path.insert(0, %r)
from testlib import require

def test_needs_a_tool():
    require(False, 'needs frobnicate: apt-get install frobnicate')
''' % str(TESTS)


@pytest.mark.parametrize('ci, outcome', [('', '1 skipped'), ('true', '1 failed')])
def test_require_skips_here_and_fails_on_ci(tmp_path, ci, outcome):
    (tmp_path / 'test_sample.py').write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTEST')}
    env['CI'] = ci
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-rsf', 'test_sample.py'],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert outcome in proc.stdout, proc.stdout
    assert 'needs frobnicate: apt-get install frobnicate' in proc.stdout
    assert proc.returncode == (1 if ci else 0), proc.stdout
