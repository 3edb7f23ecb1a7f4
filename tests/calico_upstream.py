"""The Tigera operator's validation of the Installation this project renders
(roles/calico/templates/custom-resources.yaml.j2), restated in Python for
tests/render/test_calico_rules.py. Read in github.com/tigera/operator at tag v1.40.15, the
operator of Calico v3.31.7 (projectcalico/calico charts/tigera-operator/values.yaml,
tigeraOperator.version, at v3.31.7), the release the calico role pins for Kubernetes 1.34 and
1.35. The list of rules and the test of each: tests/schemas/calico/README.md.
"""

import ipaddress

# EncapsulationTypesString and NATOutgoingTypesString, api/v1/installation_types.go:727-733,750-753.
ENCAPSULATIONS = ('IPIPCrossSubnet', 'IPIP', 'VXLAN', 'VXLANCrossSubnet', 'None')
NAT_OUTGOING = ('Enabled', 'Disabled')


def pool_errors(pools):
    """ValidatePools (pkg/controller/ippool/validation.go:26-138; the pool controller runs it after
    filling defaults and, on an error, marks the operator Degraded and creates no pool:
    pkg/controller/ippool/pool_controller.go:203-210), for IPv4 pools without
    allowedUses (the role sets none): the CIDR parses (:30-33), no CIDR twice (:36-39),
    natOutgoing Enabled or Disabled (:63-69), a nodeSelector (:72-74), a known encapsulation
    (:92-101), blockSize 20 to 32 (:107-110) and not shorter than the pool's prefix (:113-116)."""
    seen = set()
    for pool in pools:
        try:
            cidr = ipaddress.ip_network(pool.get('cidr', ''), strict=False)
        except ValueError:
            return ['IP pool CIDR (%s) is invalid' % pool.get('cidr')]
        if pool['cidr'] in seen:
            return ['IP pool %s is specified more than once' % pool['cidr']]
        seen.add(pool['cidr'])
        if pool.get('natOutgoing') not in NAT_OUTGOING:
            return ['%s is invalid for natOutgoing, should be one of %s'
                    % (pool.get('natOutgoing'), ','.join(NAT_OUTGOING))]
        if not pool.get('nodeSelector'):
            return ['IP pool nodeSelector should not be empty']
        if pool.get('encapsulation') not in ENCAPSULATIONS:
            return ['%s is invalid for ipPool.encapsulation, should be one of %s'
                    % (pool.get('encapsulation'), ','.join(ENCAPSULATIONS))]
        block = pool.get('blockSize')
        if block is not None:
            if not 20 <= block <= 32:
                return ['IPv4 pool block size must be greater than 19 and less than or equal to 32']
            if cidr.prefixlen > block:
                return ['IP pool size is too small. It must be equal to or greater than the block size']
    return []


def node_address_detection_errors(detection):
    """validateNodeAddressDetection (pkg/controller/installation/validation.go:445-477): at most one
    of interface, skipInterface, canReach, firstFound (true), cidrs (each a CIDR), kubernetes."""
    methods = [key for key in ('interface', 'skipInterface', 'canReach', 'cidrs', 'kubernetes') if detection.get(key)]
    if detection.get('firstFound'):
        methods.append('firstFound')
    for cidr in detection.get('cidrs') or []:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return ['invalid CIDR provided for node address autodetection: %s' % cidr]
    if len(methods) > 1:
        return ['no more than one node address autodetection method can be specified per-family']
    return []


def installation_errors(installation):
    """The parts of validateCustomResource (pkg/controller/installation/validation.go:43-426) that
    read what the role sets: the IP pools (ValidatePools) and the IPv4 node address detection
    (:233-238)."""
    network = installation['spec'].get('calicoNetwork') or {}
    return (pool_errors(network.get('ipPools') or [])
            + node_address_detection_errors(network.get('nodeAddressAutodetectionV4') or {}))
