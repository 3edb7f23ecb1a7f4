"""Stand-ins for what a unit test cannot have (the node's `ip` and the V-IPU CLI) and the
exceptions that replace exit_json/fail_json; used through the fixtures in conftest.py."""

import importlib.util
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / 'library'


class ModuleExit(Exception):
    """exit_json was called; .result holds what the module returned."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class ModuleFail(Exception):
    """fail_json was called; .result holds msg and the rest."""

    def __init__(self, result):
        super().__init__(result.get('msg'))
        self.result = result


class FakeCommands:
    """Stands in for the node's `ip` and `vipu`: answers run_command by argv.

    answers maps a tuple of the argv words after the binary (e.g. ('-j', '-4', 'route',
    'get', '10.0.0.5')) to (rc, stdout, stderr), or to a list of them when the answer
    changes from call to call (consumed in order, the last one repeats). An unexpected
    command fails the test.
    """

    def __init__(self, answers=None, binaries=None):
        self.answers = dict(answers or {})
        self.binaries = {'ip': '/usr/sbin/ip', 'timeout': '/usr/bin/timeout'}
        self.binaries.update(binaries or {})
        self.calls = []

    def get_bin_path(self, module, arg, required=False, opt_dirs=None):
        path = self.binaries.get(arg)
        if path is None and required:
            module.fail_json(msg='Failed to find required executable "%s"' % arg)
        return path

    def run_command(self, module, args, **kwargs):
        assert isinstance(args, list), 'run_command must get an argument list, got %r' % (args,)
        self.calls.append(list(args))
        words = list(args[1:])
        if args[0] == self.binaries.get('timeout'):
            words = list(args[5:])  # timeout -k SECONDS SECONDS <command> ...
        key = tuple(words)
        if key not in self.answers:
            raise AssertionError('unexpected command %r' % (args,))
        answer = self.answers[key]
        if isinstance(answer, list):
            return answer.pop(0) if len(answer) > 1 else answer[0]
        return answer


def load_library_module(name):
    """library/<name>.py as a fresh Python module (its imports resolve through conftest.py)."""
    spec = importlib.util.spec_from_file_location('ipu_k8s_library_%s' % name, LIBRARY / ('%s.py' % name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
