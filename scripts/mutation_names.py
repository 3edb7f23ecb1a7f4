"""pytest plugin of scripts/mutation: every file of the Python core runs under one module
name, its repository path with dots (plugins/module_utils/ipu_k8s_gpg.py is
`plugins.module_utils.ipu_k8s_gpg`, plugins/filter/reset_netfilter.py is
`plugins.filter.reset_netfilter`), which is the name mutmut gives its mutants.

mutmut switches a mutant on when the running function's module name is the mutant's, and
the tests load these files under other names: a module_utils file as the collection's
`ansible_collections.ipu_k8s.cluster.plugins.module_utils.<name>` (the modules, the filters
and the tests), a module or plugin through importlib.util.spec_from_file_location under a
name each test picks. Loaded with `-p mutation_names`, this plugin
- answers the collection's import of a module_utils file with one module object named by
  its path;
- renames a spec_from_file_location of a core file to its path's name.
The tests run unchanged; nothing here is used outside a mutation run.

MUTATION_ROOT is the tree the tests run in (mutmut's mutants/ directory); MUTATION_CORE
lists the core files, one repository path a line."""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(os.environ['MUTATION_ROOT']).resolve()
CORE = [line for line in os.environ['MUTATION_CORE'].splitlines() if line]
NAME_BY_PATH = {path: path[:-len('.py')].replace('/', '.') for path in CORE}
UTILS_PACKAGE = 'ansible_collections.ipu_k8s.cluster.plugins.module_utils.'
UTILS = {Path(path).stem: path for path in CORE if path.startswith('plugins/module_utils/')}


def _load(path):
    """The module of core file `path`, loaded once under its path's name."""
    name = NAME_BY_PATH[path]
    if name not in sys.modules:
        spec = _renaming_spec_from_file_location(name, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


class _Alias(importlib.abc.Loader):
    """Loads an alias of a module_utils file as the module named by its path."""

    def __init__(self, path):
        self.path = path

    def create_module(self, spec):
        return _load(self.path)

    def exec_module(self, module):
        pass


class _UtilsFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(UTILS_PACKAGE):
            return None
        stem = fullname[len(UTILS_PACKAGE):]
        if stem not in UTILS:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(UTILS[stem]))


class _CompiledOnce(importlib.machinery.SourceFileLoader):
    """Compiles each core file once per process (and so once for all the forked mutant runs):
    a mutated file holds every mutant of the original (megabytes), the tests load a module
    afresh for each test, and no bytecode cache is written when PYTHONDONTWRITEBYTECODE is set."""

    code = {}

    def get_code(self, fullname):
        if self.path not in self.code:
            self.code[self.path] = super().get_code(fullname)
        return self.code[self.path]


_spec_from_file_location = importlib.util.spec_from_file_location


def _renaming_spec_from_file_location(name, location=None, *args, **kwargs):
    if location is not None:
        try:
            relative = Path(location).resolve().relative_to(ROOT).as_posix()
        except ValueError:
            relative = None
        if relative in NAME_BY_PATH:
            name = NAME_BY_PATH[relative]
            if not args and set(kwargs) <= {'submodule_search_locations'}:
                kwargs['loader'] = _CompiledOnce(name, str(location))
    return _spec_from_file_location(name, location, *args, **kwargs)


if not any(isinstance(finder, _UtilsFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _UtilsFinder())
    importlib.util.spec_from_file_location = _renaming_spec_from_file_location
