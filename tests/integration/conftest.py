"""Fixtures for the integration tests: the namespaces they run in (see netns_lab.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netns_lab import LAB_HOSTS, create_netns, ip_binary, sweep_stale_namespaces, veth  # noqa: E402
from testlib import namespace_factory, require, require_root  # noqa: E402  (tests/testlib.py)


@pytest.fixture(scope='session')
def netns_factory():
    """make(role) -> a new Netns with lo up; all of them deleted at session end."""
    require_root('integration tests create network namespaces and veth pairs')
    require(ip_binary() is not None, 'integration tests need iproute2 (`ip`): apt-get install iproute2')
    sweep_stale_namespaces()
    with namespace_factory(create_netns) as make:
        yield make


# --- the lab: one IPU node and the fabric it is wired to ----------------------------------

@pytest.fixture(scope='session')
def lab(netns_factory):
    """An IPU node namespace wired by veth pairs to a fabric namespace.

    node (the Poplar server)                       fabric (IPU-Machines, V-IPU, gateway)
      rdma0 mtu 9000  10.247.208.21/23 + 10.31.7.21/24  -- 10.247.208.5/23 (V-IPU), 10.31.7.9/24
      rdma1 mtu 9000  10.5.212.20/22                    -- 10.5.212.116/22 (a second V-IPU)
      rdma2 mtu 1500  10.193.242.30/24                  -- 10.193.242.7/24
      rdma3 mtu 9000  10.60.0.10/25                     -- 10.60.0.5/25
      rdma4 mtu 9000  10.61.0.10/26                     -- 10.61.0.5/26
      mgmt0 mtu 1500  10.200.0.2/24, default via 10.200.0.1 -- 10.200.0.1/24
      blackhole 10.66.0.0/16
    """
    fabric = netns_factory('fabric')
    node = netns_factory('node')
    node_cmds, fabric_cmds = [], []
    for name, mtu, mine, theirs in (
            ('rdma0', 9000, ('10.247.208.21/23', '10.31.7.21/24'), ('10.247.208.5/23', '10.31.7.9/24')),
            ('rdma1', 9000, ('10.5.212.20/22',), ('10.5.212.116/22',)),
            ('rdma2', 1500, ('10.193.242.30/24',), ('10.193.242.7/24',)),
            ('rdma3', 9000, ('10.60.0.10/25',), ('10.60.0.5/25',)),
            ('rdma4', 9000, ('10.61.0.10/26',), ('10.61.0.5/26',)),
            ('mgmt0', 1500, ('10.200.0.2/24',), ('10.200.0.1/24',))):
        mine_cmds, theirs_cmds = veth(name, 'f-' + name, fabric, mtu, *mine, peer_addresses=theirs)
        node_cmds += mine_cmds
        fabric_cmds += theirs_cmds
    node_cmds += ['route add default via 10.200.0.1 dev mgmt0', 'route add blackhole 10.66.0.0/16']
    node.ip(*node_cmds)
    fabric.ip(*fabric_cmds)
    node.isolate_name_lookups(LAB_HOSTS)
    return node


@pytest.fixture(scope='session')
def isolated_node(netns_factory):
    """An IPU node with an RDMA NIC but no default route: most addresses have no route."""
    node = netns_factory('isolated')
    node.ip('link add rdma0 mtu 9000 type veth peer name peer0 mtu 9000', 'addr add 10.247.208.22/23 dev rdma0',
            'link set rdma0 up', 'link set peer0 up')
    node.isolate_name_lookups(LAB_HOSTS)
    return node
