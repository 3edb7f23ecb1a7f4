"""The test suite's Python (scripts/test puts this directory first on PYTHONPATH): with
IPU_K8S_PYC_CACHE set, the code of Ansible's module payloads is cached there
(ansiballz_pyc.py). The sitecustomize this one shadows, if the interpreter has one
(Debian's and Ubuntu's do), still runs."""
import os
import sys

if os.environ.get('IPU_K8S_PYC_CACHE'):
    import ansiballz_pyc
    ansiballz_pyc.install(os.environ['IPU_K8S_PYC_CACHE'])


def _run_shadowed():
    from importlib.machinery import PathFinder
    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = PathFinder.find_spec('sitecustomize', path)
    if spec is not None and spec.loader is not None:
        module = type(sys)('sitecustomize')
        module.__file__ = spec.origin
        spec.loader.exec_module(module)


_run_shadowed()
