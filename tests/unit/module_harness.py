"""Stand-ins for what a unit test cannot have (the node's `ip` and the V-IPU CLI) and the
exceptions that replace exit_json/fail_json; used through the fixtures in conftest.py."""

import importlib.util
import ipaddress
from pathlib import Path

from iproute_json import addr_show, addr_show_all, route_get

LIBRARY = Path(__file__).resolve().parents[2] / 'plugins' / 'modules'


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


class ConnectedNode(FakeCommands):
    """FakeCommands on a node whose rdma0 (MTU 9000) carries NODE_ADDRESSES: `ip` answers a
    route lookup of an address inside one of those subnets with a direct route, and shows
    rdma0's addresses, unless the test's own answers say otherwise. For the tests of where
    the V-IPU controller comes from, which need the derivation after it to succeed."""

    NODE_ADDRESSES = ('10.5.212.20/22', '10.247.208.20/23', '10.9.9.20/24')

    def run_command(self, module, args, **kwargs):
        words = tuple(args[1:])
        if args[0] == self.binaries['ip'] and words not in self.answers:
            links = addr_show('rdma0', 9000, *self.NODE_ADDRESSES)
            if words[:4] == ('-j', '-4', 'route', 'get'):
                source = [a for a in self.NODE_ADDRESSES if ipaddress.IPv4Address(words[4]) in
                          ipaddress.IPv4Interface(a).network]
                if source:
                    self.answers[words] = (0, route_get(words[4], 'rdma0', source[0].split('/')[0]), '')
            elif words == ('-j', 'addr', 'show', 'dev', 'rdma0'):
                self.answers[words] = (0, links, '')
            elif words == ('-j', '-4', 'addr', 'show'):
                self.answers[words] = (0, addr_show_all(links), '')
        return super().run_command(module, args, **kwargs)

    def other_calls(self):
        """The commands run other than `ip` (the V-IPU CLI's)."""
        return [c for c in self.calls if c[0] != self.binaries['ip']]

    # The two commands of the derivation towards address once the controller is found.
    def derivation_calls(self, address):
        return [[self.binaries['ip'], '-j', '-4', 'route', 'get', address],
                [self.binaries['ip'], '-j', 'addr', 'show', 'dev', 'rdma0']]


def load_library_module(name):
    """plugins/modules/<name>.py as a fresh Python module (its imports resolve through conftest.py)."""
    spec = importlib.util.spec_from_file_location('ipu_k8s_library_%s' % name, LIBRARY / ('%s.py' % name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
