# Copyright: ipu-k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The address the data-path probe's macvlan takes (roles/verify/tasks/node_datapath.yml).

The site's pinned address when there is one; otherwise the highest address of the
derived RDMA subnet that is neither its network nor its broadcast address, outside the
excludes and not taken (a node, the V-IPU controller, a neighbour the node knows). At
most 256 addresses from the top are tried. Refused, with the fix, when none of them is
free or the pinned address is outside the subnet or inside an exclude.
"""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError

TRIES = 256


def verify_datapath_address(cidr, excludes=(), taken=(), pinned=''):
    """The probe's address as a string."""
    try:
        network = ipaddress.ip_network(str(cidr), strict=False)
        excluded = [ipaddress.ip_network(str(item), strict=False) for item in excludes or []]
    except ValueError as exc:
        raise AnsibleFilterError('verify_datapath_address: %s' % exc) from exc
    used = set()
    for item in taken or []:
        try:
            used.add(ipaddress.ip_address(str(item).split('/')[0]))
        except ValueError:
            continue  # not an address (a neighbour entry without one): nothing to avoid
    if pinned:
        try:
            address = ipaddress.ip_address(str(pinned).strip())
        except ValueError:
            address = None
        if address is not None and address in network and not any(address in item for item in excluded):
            return str(address)
    else:
        for value in range(int(network.broadcast_address) - 1,
                           max(int(network.broadcast_address) - TRIES - 1, int(network.network_address)), -1):
            candidate = ipaddress.ip_address(value)
            if candidate not in used and not any(candidate in item for item in excluded):
                return str(candidate)
    raise AnsibleFilterError('No usable probe address in %s outside %s (got %r). Set verify_datapath_address to a '
                             'free address of that range.' % (cidr, ','.join(map(str, excludes or [])),
                                                              str(pinned or '').strip()))


class FilterModule:
    """The data-path probe's address."""

    def filters(self):
        return {'verify_datapath_address': verify_datapath_address}
