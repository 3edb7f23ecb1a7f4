"""Helpers shared by the test tiers (and the tools under tests/schemas/), one copy each:

- process_alive(pid): whether a process still runs (the stale-run sweeps of the
  integration and API tiers use it on the PIDs their names or records carry).
- namespace_factory(create_netns): the body of the netns_factory fixtures: make(role)
  gives a new namespace with lo up; every one made is deleted when the block ends.
- flatten_keys(data): the dotted keys a values mapping sets (the render tests and
  tests/schemas/network_operator/refresh.py compare charts' values by these).

Import with tests/ on sys.path (the tiers' conftests and helpers put it there).
"""

import contextlib
import os


def process_alive(pid):
    """True while process pid exists (also when it belongs to someone else)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def namespace_factory(create_netns):
    """with namespace_factory(create_netns) as make: make(role) -> a namespace with lo up."""
    made = []

    def make(role):
        namespace = create_netns(role)
        made.append(namespace)
        namespace.ip('link set lo up')
        return namespace

    try:
        yield make
    finally:
        for namespace in made:
            namespace.delete()


def flatten_keys(data, prefix=''):
    """Dotted keys a values mapping sets, lists marked "[]" (their items' keys below them)."""
    keys = set()
    if isinstance(data, dict):
        for key, value in data.items():
            path = '%s.%s' % (prefix, key) if prefix else str(key)
            keys.add(path)
            if isinstance(value, dict) and value:
                keys |= flatten_keys(value, path)
            elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
                keys.add(path + '[]')
                for item in value:
                    keys |= flatten_keys(item, path + '[]')
    return keys
