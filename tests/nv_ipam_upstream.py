"""nvidia-k8s-ipam's rules for an IPPool, restated in Python for the tests that judge the
IPPools this project renders (tests/render/test_rdma_network*.py) and play its controller
(tests/api/test_ippool_oracle.py).

Read in Mellanox/nvidia-k8s-ipam at tag network-operator-v26.4.1, the nv_ipam image of the
26.4.1 row of roles/network_operator/defaults/main.yml; every file cited below has the same
lines at network-operator-v26.1.2 (the 26.1.2 row). The list of rules, and the test of
each: tests/schemas/nv_ipam/README.md. IPv4 only, as the project's RDMA subnets are.
"""

import ipaddress
import re

# k8s.io/apimachinery's IsDNS1123Subdomain (what NameIsDNSSubdomain applies) and
# IsQualifiedName (ValidateLabelName), as their error messages state them.
DNS1123_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
QUALIFIED_NAME = re.compile(r'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
# containernetworking/cni pkg/utils/utils.go, cniValidNameChars: what ValidateNetworkName allows.
CNI_NETWORK_NAME = re.compile(r'[a-zA-Z0-9][a-zA-Z0-9_.\-]*$')


def validate_node_selector_requirement(requirement, path):
    """validateNodeSelectorRequirement (api/v1alpha1/validate_nodeselector.go:63-90): a label
    requirement; In/NotIn need values, Exists/DoesNotExist none, Gt/Lt exactly one."""
    errors = []
    operator, values = requirement.get('operator'), requirement.get('values') or []
    if operator in ('In', 'NotIn'):
        if not values:
            errors.append("%s.values: Required value: must be specified when `operator` is 'In' or 'NotIn'" % path)
    elif operator in ('Exists', 'DoesNotExist'):
        if values:
            errors.append("%s.values: Forbidden: may not be specified when `operator` is 'Exists' or "
                          "'DoesNotExist'" % path)
    elif operator in ('Gt', 'Lt'):
        if len(values) != 1:
            errors.append("%s.values: Required value: must be specified single value when `operator` is "
                          "'Lt' or 'Gt'" % path)
    else:
        errors.append('%s.operator: Invalid value: %r: not a valid selector operator' % (path, operator))
    key = requirement.get('key') or ''
    prefix, _, name = key.rpartition('/')
    if not (len(name) <= 63 and QUALIFIED_NAME.match(name) and (not prefix or DNS1123_SUBDOMAIN.match(prefix))):
        errors.append('%s.key: Invalid value: %r: not a qualified name' % (path, key))
    return errors


def validate_node_field_selector_requirement(requirement, path):
    """validateNodeFieldSelectorRequirement (api/v1alpha1/validate_nodeselector.go:97-123): a
    field requirement takes In or NotIn with EXACTLY one value (:100-109), its key must be
    metadata.name (:92-94, :111-113), each value a DNS-1123 subdomain (:114-119)."""
    errors = []
    values = requirement.get('values') or []
    if requirement.get('operator') in ('In', 'NotIn'):
        if len(values) != 1:
            errors.append("%s.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
                          "for node field selector" % path)
    else:
        errors.append('%s.operator: Invalid value: %r: not a valid selector operator'
                      % (path, requirement.get('operator')))
    if requirement.get('key') != 'metadata.name':
        errors.append('%s.key: Invalid value: %r: not a valid field selector key' % (path, requirement.get('key')))
    else:
        errors.extend('%s.values[%d]: Invalid value: %r: not a DNS-1123 subdomain' % (path, i, v)
                      for i, v in enumerate(values) if len(v) > 253 or not DNS1123_SUBDOMAIN.match(v))
    return errors


def validate_node_selector(selector, path='spec.nodeSelector'):
    """validateNodeSelector (api/v1alpha1/validate_nodeselector.go:30-43): at least one term,
    and each term's requirements valid (validateNodeSelectorTerm, :46-60)."""
    terms = selector.get('nodeSelectorTerms') or []
    if not terms:
        return ['%s.nodeSelectorTerms: Required value: must have at least one node selector term' % path]
    errors = []
    for i, term in enumerate(terms):
        term_path = '%s.nodeSelectorTerms[%d]' % (path, i)
        for j, requirement in enumerate(term.get('matchExpressions') or []):
            errors += validate_node_selector_requirement(requirement, '%s.matchExpressions[%d]' % (term_path, j))
        for j, requirement in enumerate(term.get('matchFields') or []):
            errors += validate_node_field_selector_requirement(requirement, '%s.matchFields[%d]' % (term_path, j))
    return errors


def possible_ip_count(subnet):
    """GetPossibleIPCount (api/v1alpha1/helpers.go:57-73): /32 one, /31 two, else the host count."""
    return {32: 1, 31: 2}.get(subnet.prefixlen, subnet.num_addresses - 2)


def validate_ippool(ippool):
    """IPPool.Validate (api/v1alpha1/ippool_validate.go:25-95), the fields this project sets:
    name (:27-31), subnet (:32-36), perNodeBlockSize (:38-51), exclusions
    (validate_exclusions.go:31-61), gateway rules (:59-73, :79-90), nodeSelector (:75-77)."""
    spec, errors = ippool['spec'], []
    if not CNI_NETWORK_NAME.match(ippool['metadata']['name']):
        errors.append('metadata.name: invalid IP pool name, should be compatible with CNI network name')
    try:
        subnet = ipaddress.IPv4Network(spec['subnet'], strict=False)
    except ValueError:
        subnet = None
        errors.append('spec.subnet: %r is invalid subnet' % spec['subnet'])
    size = spec['perNodeBlockSize']
    if size < 1:
        errors.append('spec.perNodeBlockSize: must be at least 1')
    elif subnet is not None and possible_ip_count(subnet) < size:
        errors.append('spec.perNodeBlockSize: is larger then amount of IPs available in the subnet')
    for i, exclusion in enumerate(spec.get('exclusions') or []):
        ends = []
        for end in ('startIP', 'endIP'):
            try:
                ends.append(ipaddress.IPv4Address(exclusion[end]))
            except ValueError:
                errors.append('spec.exclusions[%d].%s: is invalid IP address' % (i, end))
                continue
            if subnet is not None and ends[-1] not in subnet:
                errors.append('spec.exclusions[%d].%s: is not part of the %s subnet' % (i, end, subnet))
        if len(ends) == 2 and ends[1] < ends[0]:
            errors.append('spec.exclusions[%d]: endIP should be equal or greater than startIP' % i)
    if not spec.get('gateway') and (spec.get('defaultGateway') or spec.get('routes')):
        errors.append('spec: defaultGateway and routes need spec.gateway')
    if spec.get('nodeSelector') is not None:
        errors += validate_node_selector(spec['nodeSelector'])
    return errors


def selected(node_selector, node):
    """Whether a node (name, labels) matches the selector as MatchNodeSelectorTerms does
    (k8s.io/component-helpers, called at pkg/ipam-controller/controllers/ippool/ippool.go:88):
    terms ORed, the requirements of a term ANDed, a term without requirements matches nothing.
    Only what this project renders: metadata.name In; the real scheduler is the oracle of the
    same function in tests/api/test_ippool_oracle.py."""
    name, _labels = node
    return any(term.get('matchFields') and not term.get('matchExpressions')
               and all(r['key'] == 'metadata.name' and r['operator'] == 'In' and name in r['values']
                       for r in term['matchFields'])
               for term in node_selector['nodeSelectorTerms'])


class InvalidSpec(AssertionError):
    """The controller refused the pool (Validate): it clears status.allocations and emits an
    InvalidSpec event (pkg/ipam-controller/controllers/ippool/ippool.go:74-77, :138-148)."""


def controller_allocations(ippool, nodes):
    """The status.allocations nvidia-k8s-ipam's controller writes for a new IPPool in a
    cluster of these node names -> [{nodeName, startIP, endIP}].

    The reconcile (pkg/ipam-controller/controllers/ippool/ippool.go): Validate first, an
    invalid pool gets no allocation at all (InvalidSpec, :74-77, :138-148); then the nodes
    the nodeSelector matches (:84-99, every node without one), in name order (:101-103),
    each given the next block (:108-126; a node left without one gets a NoFreeRanges event
    and is skipped, :111-116). The allocator (pkg/ipam-controller/allocator/allocator.go):
    the first block starts after the network address (:64-73; /31 and /32 at it,
    :195-199), each next one where the last ended (:91-96); a block entirely inside the
    exclusions is passed over (:106-110, :141-182, :259-295); a block is valid while its
    last address is in the subnet and not the broadcast address (:184-193)."""
    errors = validate_ippool(ippool)
    if errors:
        raise InvalidSpec('InvalidSpec: the controller clears the pool\'s allocations: %s' % '; '.join(errors))
    spec = ippool['spec']
    subnet = ipaddress.IPv4Network(spec['subnet'])
    size = spec['perNodeBlockSize']

    def valid(last):
        return last in subnet and last != subnet.broadcast_address

    matching = sorted(name for name in nodes if spec.get('nodeSelector') is None
                      or selected(spec['nodeSelector'], (name, {})))
    start = subnet.network_address + (0 if subnet.prefixlen >= 31 else 1)
    allocations = []
    for node in matching:
        while valid(start + size - 1) and not free_addresses(ippool, start, start + size - 1):
            start += size
        if not valid(start + size - 1):
            continue  # NoFreeRanges
        allocations.append({'nodeName': node, 'startIP': str(start), 'endIP': str(start + size - 1)})
        start += size
    return allocations


def free_addresses(ippool, first, last):
    """The addresses of a block outside the pool's exclusions: what the node daemon hands to
    pods on the block's node (pkg/ipam-node/controllers/ippool/ippool.go:55-84 gives it the
    block and the exclusions)."""
    excluded = [(ipaddress.IPv4Address(e['startIP']), ipaddress.IPv4Address(e['endIP']))
                for e in ippool['spec'].get('exclusions') or []]
    return set(a for a in (ipaddress.IPv4Address(x) for x in range(int(ipaddress.IPv4Address(first)),
                                                                     int(ipaddress.IPv4Address(last)) + 1))
               if not any(lo <= a <= hi for lo, hi in excluded))
