"""netaddr is pinned in requirements.txt for ansible.utils: its address filters and tests,
which the roles call on the controller, import it. Both halves are checked: the roles do
use them, and they evaluate here (they fail without netaddr)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETADDR_PLUGINS = {'ipaddr', 'ipv4_address', 'in_network', 'in_any_network', 'network_in_network'}


def test_the_roles_use_ansible_utils_address_plugins():
    used = set()
    for path in (ROOT / 'roles').rglob('*.yml'):
        used |= set(re.findall(r'ansible\.utils\.(\w+)', path.read_text()))
    assert used & NETADDR_PLUGINS, used
    assert 'netaddr==' in (ROOT / 'requirements.txt').read_text()


def test_those_plugins_evaluate_with_the_pinned_netaddr():
    # the module every one of those plugins goes through; without netaddr they raise
    # "... requires the netaddr python library to be installed on the ansible controller"
    from ansible_collections.ansible.utils.plugins.plugin_utils.base import ipaddr_utils

    assert ipaddr_utils.netaddr is not None
    assert ipaddr_utils.ipaddr('10.247.208.0/23', 'network') == '10.247.208.0'
    assert ipaddr_utils.ipaddr('10.247.208.5', 'address') == '10.247.208.5'
