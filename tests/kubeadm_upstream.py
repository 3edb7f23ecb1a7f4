"""kubeadm's validation of the fields this project's kubeadm configs set, restated in Python for
tests/render/test_kubeadm_rules.py. Read in github.com/kubernetes/kubernetes at commit
00d24de699fe4409b5829a5e51b73c1fc7bcba12, cmd/kubeadm/app/apis/kubeadm/validation/validation.go
(cited by function: the file was read as text without line numbers) and
cmd/kubeadm/app/constants/constants.go for the sizes; the defaults kubeadm fills before it
validates, cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go at commit
027ac5a426a261ba6b66a40e79e123e75e9baf5b. The list of rules and the test of each:
tests/schemas/kubernetes/README.md.
"""

import ipaddress
import re
from urllib.parse import urlparse

# k8s.io/apimachinery IsDNS1123Subdomain: at most 253 characters of this pattern.
DNS1123_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
# k8s.io/cluster-bootstrap token/api BootstrapTokenPattern, what IsValidBootstrapToken matches.
BOOTSTRAP_TOKEN = re.compile(r'[a-z0-9]{6}\.[a-z0-9]{16}')
# constants.go: MinimumAddressesInServiceSubnet, MaximumBitsForServiceSubnet,
# MinimumAddressesInPodSubnet, PodSubnetNodeMaskMaxDiff; CertificateKeySize (AES-256: 32 bytes).
MIN_SERVICE_ADDRESSES, MAX_SERVICE_BITS, MIN_POD_ADDRESSES, NODE_MASK_MAX_DIFF = 10, 20, 14, 16
CERTIFICATE_KEY_SIZE = 32
# getClusterNodeMask: the IPv4 node mask when kube-controller-manager gets no node-cidr-mask-size-ipv4.
DEFAULT_NODE_MASK_IPV4 = 24


def is_dns1123_subdomain(value):
    return isinstance(value, str) and len(value) <= 253 and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def node_registration_errors(node):
    """ValidateNodeRegistrationOptions: name required and a DNS-1123 subdomain; criSocket
    (ValidateSocketPath) not empty and a URL of scheme "unix" (DefaultContainerRuntimeURLScheme)."""
    errors = []
    if not node.get('name'):
        errors.append('nodeRegistration: Required value')
    elif not is_dns1123_subdomain(node['name']):
        errors.append('nodeRegistration.name: Invalid value: %r' % node['name'])
    socket = node.get('criSocket') or ''
    if not socket:
        errors.append('nodeRegistration.criSocket: empty CRI socket')
    elif urlparse(socket).scheme != 'unix':
        errors.append('nodeRegistration.criSocket: only URL scheme "unix" is supported, got %r'
                      % urlparse(socket).scheme)
    return errors


def api_endpoint_errors(endpoint, path):
    """ValidateAPIEndpoint: advertiseAddress an IP (ValidateIPFromString), bindPort 1-65535
    (ValidatePort, kubeadmutil.ParsePort)."""
    errors = []
    try:
        ipaddress.ip_address(endpoint.get('advertiseAddress') or '')
    except ValueError:
        errors.append('%s.advertiseAddress: ip address is not valid' % path)
    port = endpoint.get('bindPort')
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append('%s.bindPort: port number is not valid' % path)
    return errors


def certificate_key_errors(key, path):
    """ValidateCertificateKey: empty, or hex of CertificateKeySize bytes."""
    if not key:
        return []
    try:
        size = len(bytes.fromhex(key))
    except ValueError:
        return ['%s: certificate key decoding error' % path]
    return [] if size == CERTIFICATE_KEY_SIZE else ['%s: invalid certificate key size %d' % (path, size)]


def networking_errors(networking):
    """ValidateNetworking: dnsDomain a DNS-1123 subdomain; serviceSubnet (ValidateIPNetFromString,
    ValidateServiceSubnetSize) at least MinimumAddressesInServiceSubnet addresses and at most
    MaximumBitsForServiceSubnet host bits; podSubnet at least MinimumAddressesInPodSubnet
    addresses and (ValidatePodSubnetNodeMask, allocate-node-cidrs left on) a prefix not longer
    than the node mask and at most PodSubnetNodeMaskMaxDiff bits shorter. IPv4, one CIDR each."""
    errors = []
    if not is_dns1123_subdomain(networking.get('dnsDomain', '')):
        errors.append('networking.dnsDomain: Invalid value: %r' % networking.get('dnsDomain'))
    for field, minimum in (('serviceSubnet', MIN_SERVICE_ADDRESSES), ('podSubnet', MIN_POD_ADDRESSES)):
        text = networking.get(field)
        if not text:
            continue
        try:
            subnet = ipaddress.ip_network(text, strict=False)
        except ValueError:
            errors.append('networking.%s: couldn\'t parse subnet' % field)
            continue
        if subnet.num_addresses < minimum:
            errors.append('networking.%s: subnet with %d address(es) is too small' % (field, subnet.num_addresses))
        if field == 'serviceSubnet' and subnet.max_prefixlen - subnet.prefixlen > MAX_SERVICE_BITS:
            errors.append('networking.serviceSubnet: specified service subnet is too large')
        if field == 'podSubnet':
            if subnet.prefixlen > DEFAULT_NODE_MASK_IPV4:
                errors.append('networking.podSubnet: the size of pod subnet with mask %d is smaller than the size '
                              'of node subnet with mask %d' % (subnet.prefixlen, DEFAULT_NODE_MASK_IPV4))
            elif DEFAULT_NODE_MASK_IPV4 - subnet.prefixlen > NODE_MASK_MAX_DIFF:
                errors.append('networking.podSubnet: pod subnet mask (%d) and node-mask (%d) difference is greater '
                              'than %d' % (subnet.prefixlen, DEFAULT_NODE_MASK_IPV4, NODE_MASK_MAX_DIFF))
    return errors


def discovery_errors(discovery):
    """ValidateDiscovery / ValidateDiscoveryBootstrapToken: bootstrapToken or file; the token's
    apiServerEndpoint set and host:port (ValidateDiscoveryTokenAPIServer, net.SplitHostPort),
    caCertHashes not empty unless unsafeSkipCAVerification, token a bootstrap token (ValidateToken)."""
    token = discovery.get('bootstrapToken')
    if not token:
        return ['discovery: bootstrapToken or file must be set']
    errors = []
    endpoint = token.get('apiServerEndpoint') or ''
    if not endpoint:
        errors.append('discovery.bootstrapToken: APIServerEndpoint is not set')
    elif not re.fullmatch(r'(\[[^\]]*\]|[^:\[\]]*):[^:]*', endpoint):
        errors.append('discovery.bootstrapToken.apiServerEndpoint: missing port in address')
    if not token.get('caCertHashes') and not token.get('unsafeSkipCAVerification'):
        errors.append('discovery.bootstrapToken.caCertHashes: using token-based discovery without caCertHashes')
    if not BOOTSTRAP_TOKEN.fullmatch(token.get('token') or ''):
        errors.append('discovery.bootstrapToken.token: the bootstrap token is invalid')
    return errors


# v1beta4/defaults.go: DefaultAPIBindPort, DefaultServiceDNSDomain, DefaultServicesSubnet.
DEFAULT_BIND_PORT, DEFAULT_DNS_DOMAIN, DEFAULT_SERVICE_SUBNET = 6443, 'cluster.local', '10.96.0.0/12'


def _defaulted_endpoint(endpoint):
    """SetDefaults_APIEndpoint: bindPort 0 (or absent) becomes DefaultAPIBindPort."""
    return dict(endpoint, bindPort=endpoint.get('bindPort') or DEFAULT_BIND_PORT)


def init_errors(init, cluster):
    """ValidateInitConfiguration (node registration, API endpoint, certificate key) with
    ValidateClusterConfiguration's networking, after the defaults (SetDefaults_InitConfiguration,
    SetDefaults_ClusterConfiguration: an empty dnsDomain or serviceSubnet gets the default)."""
    init = dict(init, localAPIEndpoint=_defaulted_endpoint(init.get('localAPIEndpoint') or {}))
    networking = dict(cluster.get('networking') or {})
    networking['dnsDomain'] = networking.get('dnsDomain') or DEFAULT_DNS_DOMAIN
    networking['serviceSubnet'] = networking.get('serviceSubnet') or DEFAULT_SERVICE_SUBNET
    cluster = dict(cluster, networking=networking)
    return (node_registration_errors(init.get('nodeRegistration') or {})
            + api_endpoint_errors(init.get('localAPIEndpoint') or {}, 'localAPIEndpoint')
            + certificate_key_errors(init.get('certificateKey'), 'certificateKey')
            + networking_errors(cluster.get('networking') or {}))


def join_errors(join):
    """ValidateJoinConfiguration: discovery, node registration, and a control plane's endpoint
    and certificate key (ValidateJoinControlPlane)."""
    errors = (discovery_errors(join.get('discovery') or {})
              + node_registration_errors(join.get('nodeRegistration') or {}))
    control_plane = join.get('controlPlane')
    if control_plane is not None:
        # SetDefaults_JoinControlPlane: the endpoint's bindPort defaults as in an InitConfiguration.
        errors += api_endpoint_errors(_defaulted_endpoint(control_plane.get('localAPIEndpoint') or {}),
                                      'controlPlane.localAPIEndpoint')
        errors += certificate_key_errors(control_plane.get('certificateKey'), 'controlPlane.certificateKey')
    return errors
