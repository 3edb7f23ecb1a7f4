"""Checks on the settings, in Python so each rule has one home and unit tests.

Every rule returns ONE message (naming the setting, the bad value and the fix) or '' when the
value is fine. Each role's `validate` entry point (e.g. roles/verify/tasks/validate.yml) hands
its settings to `ipu_k8s_problems` in one assert, grouped by kind: {kind: {setting: value}}.
A kind of SETTING_RULES checks each setting alone; a kind of RULES checks what it is given
together (a release and its table, an endpoint and the control-plane group), reading the
settings by name. The facts-free checks run in preflight before anything changes; the checks
that need a node's facts (its cluster interface) run in preflight's networks step.
"""

import difflib
import hashlib
import ipaddress
import json
import os.path
import re
from functools import partial

import yaml
from ansible.module_utils.parsing.convert_bool import boolean


# Every pattern here is matched in full (fullmatch), as Go's anchored regexps are: a '$'
# anchor under re.match would let a trailing newline through.
VERSION_RE = re.compile(r'(\d+)\.(\d+)\.(\d+)')
# A DNS subdomain (RFC 1123; k8s.io/apimachinery validation IsDNS1123Subdomain): lower-case
# labels joined by dots, at most 253 characters. A Node name is one; so is the host of
# kubeadm's controlPlaneEndpoint (cmd/kubeadm/app/util/endpoint.go ParseHostPort) and the
# prefix of an extended resource name.
DNS_SUBDOMAIN_RE = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
DNS_SUBDOMAIN_MAX = 253
NODE_NAME_RE = DNS_SUBDOMAIN_RE
# The name part of a qualified name (k8s.io/apimachinery validation IsQualifiedName).
QUALIFIED_NAME_RE = re.compile(r'[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?')
QUALIFIED_NAME_MAX = 63
# The RDMA shared device plugin's own rule on a resource name, stricter than Kubernetes': only
# letters, digits and "_" (k8s-rdma-shared-dev-plugin pkg/resources/resources_manager.go:303-307,
# tests/schemas/network_operator/RULES.md); the plugin exits on any other.
RDMA_PLUGIN_RESOURCE_NAME_RE = re.compile(r'[a-zA-Z0-9_]+')
# k8s.io/api core/v1: DefaultResourceRequestsPrefix and ResourceDefaultNamespacePrefix.
RESOURCE_REQUESTS_PREFIX = 'requests.'
RESOURCE_NATIVE_PREFIX = 'kubernetes.io/'
# The oldest minor any package source still serves: pkgs.k8s.io starts at v1.24, and the
# legacy apt.kubernetes.io/yum.kubernetes.io repositories were shut down (2024).
PKGS_K8S_IO_FIRST_MINOR = (1, 24)
# kube-controller-manager's default --node-cidr-mask-size for IPv4 (kubeadm sets
# --allocate-node-cidrs=true and --cluster-cidr=<podSubnet>): every node gets a /24 of the pod
# subnet. kubeadm refuses a podSubnet smaller than that, or more than 16 bits larger
# (cmd/kubeadm/app/apis/kubeadm/validation: ValidatePodSubnetNodeMask, PodSubnetNodeMaskMaxDiff).
KUBEADM_NODE_MASK = 24
KUBEADM_NODE_MASK_MAX_DIFF = 16
# kubeadm/kube-apiserver: an IPv4 service subnet has at most 20 host bits (mask >= 12), and
# kubeadm takes the cluster DNS address as the 10th address of it (mask <= 28).
SERVICE_PREFIX_MIN = 12
SERVICE_PREFIX_MAX = 28
# Calico IPAM: an IPv4 pool's blockSize is 20..32 and the pool is at least one block
# (projectcalico/calico libcalico-go/lib/clientv3/ippool.go: "IPv4 block size must be between
# 20 and 32", "IP pool size is too small for use with Calico IPAM").
CALICO_BLOCK_MIN = 20
CALICO_BLOCK_MAX = 32

# Image references: the grammar of github.com/distribution/reference (regexp.go, the
# reference docker, containerd and the kubelet parse), with the digest narrowed to sha256.
_ALPHANUMERIC = r'[a-z0-9]+'
_SEPARATOR = r'(?:[._]|__|[-]+)'
_PATH_COMPONENT = _ALPHANUMERIC + r'(?:' + _SEPARATOR + _ALPHANUMERIC + r')*'
_DOMAIN_COMPONENT = r'(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
_DOMAIN_AND_PORT = (r'(?:' + _DOMAIN_COMPONENT + r'(?:\.' + _DOMAIN_COMPONENT + r')*|\[[a-fA-F0-9:]+\])'
                    r'(?::[0-9]+)?')
_REPOSITORY = r'(?:' + _DOMAIN_AND_PORT + r'/)?' + _PATH_COMPONENT + r'(?:/' + _PATH_COMPONENT + r')*'
_TAG = r'[\w][\w.-]{0,127}'
_DIGEST = r'sha256:[a-f0-9]{64}'
REPOSITORY_RE = re.compile(_REPOSITORY, re.ASCII)
IMAGE_RE = re.compile(r'(' + _REPOSITORY + r')(?::' + _TAG + r')?(?:@' + _DIGEST + r')?', re.ASCII)
# reference.go NameTotalLengthMax: a repository name is at most 255 characters.
REPOSITORY_LENGTH_MAX = 255
IMAGE_GRAMMAR = ('[registry[:port]/]path[:tag][@sha256:<64 hex digits>], the path in lower case, e.g. '
                 'registry.k8s.io/pause:3.10 or registry.example.com/mirror/pause:3.10@sha256:<digest>')
# Kubernetes object names (k8s.io/apimachinery validation): a DNS-1123 label (namespaces,
# most names) has at most 63 characters; Helm release names at most 53.
DNS_LABEL_RE = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')
DNS_LABEL_MAX = 63
HELM_RELEASE_MAX = 53
# A Go duration (time.ParseDuration) as Helm's --timeout and kubeadm's token TTL read it:
# numbers each followed by a unit; a bare number is refused by Go ("missing unit").
DURATION_RE = re.compile(r'([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+')
# systemd's LimitMEMLOCK= (systemd.exec): "infinity" or a byte count with an optional
# base-1024 suffix.
MEMLOCK_RE = re.compile(r'infinity|[0-9]+[KMGTPE]?')
SHA256_RE = re.compile(r'[0-9a-f]{64}')
# A release of a project that tags vMAJOR.MINOR.PATCH (Calico).
TAG_RE = re.compile(r'v[0-9]+\.[0-9]+\.[0-9]+')
# containerd's hosts.toml directory name (host or host:port: DNS labels, none empty) and its URLs.
_HOST_LABEL = r'[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?'
REGISTRY_HOST_RE = re.compile(_HOST_LABEL + r'(?:\.' + _HOST_LABEL + r')*(?::[0-9]{1,5})?')
HTTP_URL_RE = re.compile(r'https?://[^\s"]+')
# A file name the role puts in a directory it chose: no directory part, not hidden, not "..".
FILE_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.@-]{0,199}')
# Names the verify probes pass to ip, ctr and the CNI plugin as arguments: plain names no tool
# reads as an option or a path. A network namespace name is a file name under /run/netns; a
# Linux interface name has at most 15 characters (IFNAMSIZ 16 with the NUL).
NETNS_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')
# kubeadm's nodeRegistration.criSocket (ValidateSocketPath): a URL of the "unix" scheme, the
# only one kubeadm supports (DefaultContainerRuntimeURLScheme); tests/kubeadm_upstream.py.
CRI_SOCKET_RE = re.compile(r'unix:///[^\s\'"\\]+')
# A path or word the Network Operator pastes into the NAD's IPAM JSON, which it strips of every
# whitespace (state_macvlan_network.go, strings.Fields) inside a single-quoted YAML scalar
# (0010-macvlan-net-cr.yml): no whitespace, no quote, no backslash survives unchanged.
NAD_PATH_RE = re.compile(r'/[^\s\'"\\]*')
NAD_WORD_RE = re.compile(r'[^\s\'"\\]+')
LINK_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,14}')


def _minor_tuple(minor):
    return tuple(int(part) for part in str(minor).split('.'))


def _join(items):
    return ', '.join(str(i) for i in items)


def _hosts_by(entries, key):
    """{str(entry[key]): [entry['host'], ...]} in the order the entries come."""
    grouped = {}
    for entry in entries:
        grouped.setdefault(str(entry[key]), []).append(entry['host'])
    return grouped


def kubernetes_version_problem(version, supported_minors):
    """The Kubernetes release: a quoted major.minor.patch of a supported minor (whether that patch
    exists is the package source's answer: roles/kubernetes_packages, tasks/available.yml)."""
    supported = _join(supported_minors)
    newest = supported_minors[-1] if supported_minors else '1.33'
    if isinstance(version, bool) or not isinstance(version, str):
        kind = 'number' if isinstance(version, (int, float)) else 'value'
        return ('ipu_k8s_kubernetes_version is the %s %s, not a version string: YAML reads an unquoted 1.30 '
                'as the number 1.3. Quote it and give the full release, e.g. ipu_k8s_kubernetes_version: "%s.0" '
                '(supported minors: %s).' % (kind, version, newest, supported))
    match = VERSION_RE.fullmatch(version)
    if not match:
        return ('ipu_k8s_kubernetes_version=%s is not a full release: give major.minor.patch as the packages '
                'are versioned, e.g. "%s.0" (supported minors: %s).' % (version, newest, supported))
    major, minor, patch = (int(g) for g in match.groups())
    minor_text = '%d.%d' % (major, minor)
    if (major, minor) < PKGS_K8S_IO_FIRST_MINOR:
        return ('ipu_k8s_kubernetes_version=%s: Kubernetes %s can no longer be installed: pkgs.k8s.io, the only '
                'package source left, starts at 1.24 (apt.kubernetes.io is gone). Choose a release of one of '
                'the supported minors: %s.' % (version, minor_text, supported))
    if minor_text not in [str(m) for m in supported_minors]:
        return ('ipu_k8s_kubernetes_version=%s: Kubernetes %s is not supported (not every layer has a tested '
                'release for it: kubeadm configuration, Calico, Network Operator chart). Choose a release of '
                'one of: %s.' % (version, minor_text, supported))
    return ''


def kubernetes_support_warning(version, releases, today):
    """'' while the minor of VERSION is within its upstream support on TODAY (YYYY-MM-DD), else a
    notice naming the end date and the minors still supported."""
    minor = '.'.join(str(version).split('.')[:2])
    releases = _rows(releases)
    row = next((r for r in releases if str(r['version']) == minor), None)
    if row is None or str(row['end_of_support']) >= str(today):
        return ''
    supported = [str(r['version']) for r in releases if str(r['end_of_support']) >= str(today)]
    return ('Kubernetes %s is past its upstream end of support (%s): it gets no more patches, security fixes '
            'included. Move to a supported minor (%s) by setting ipu_k8s_kubernetes_version.'
            % (minor, row['end_of_support'], ', '.join(supported) or 'none in ipu_k8s_versions.kubernetes'))


def _rows(rows, key='version'):
    """A release table as a list of rows: a list as it is, a mapping keyed by version as rows
    that carry their version under KEY."""
    if isinstance(rows, dict):
        return [dict(row or {}, **{key: version}) for version, row in rows.items()]
    return rows or []


def _version_key(version):
    """A release's numbers in order ("v3.31.7" -> (3, 31, 7)), to find the newest of several."""
    return tuple(int(n) for n in re.findall(r'[0-9]+', str(version)))


def release_for_minor(rows, minor, key='version'):
    """The newest row (by its KEY version) whose tested Kubernetes range, kubernetes_min to
    kubernetes_max, includes MINOR; {} when none does. A row without a range is never chosen.
    ROWS is a list of rows, or a mapping keyed by version (a component of ipu_k8s_versions)."""
    if not re.fullmatch(r'[0-9]+\.[0-9]+', str(minor)):
        return {}
    fits = [row for row in _rows(rows, key) if 'kubernetes_min' in row
            and _minor_tuple(row['kubernetes_min']) <= _minor_tuple(minor) <= _minor_tuple(row['kubernetes_max'])]
    return max(fits, key=lambda row: _version_key(row[key]), default={})


def pinned_release_problem(rows, minor, setting, value, key='version', table='the table'):
    """A release the site pinned (SETTING=VALUE) as a row of TABLE must document the cluster's
    MINOR: its row carries the Kubernetes range the release documents, and a row without one
    cannot be chosen. '' when nothing is pinned or the value is no row (its own check says so)."""
    rows = _rows(rows, key)
    row = next((r for r in rows if value and str(r.get(key)) == str(value)), {})
    if not row or not re.fullmatch(r'[0-9]+\.[0-9]+', str(minor)):
        return ''
    # documented_min/_max where a row serves fewer minors than its release documents.
    low = row.get('documented_min', row.get('kubernetes_min'))
    high = row.get('documented_max', row.get('kubernetes_max'))
    fits = release_for_minor(rows, minor, key)
    unpin = ('Leave %s unset (remove it from the inventory) and the table picks %s for Kubernetes %s'
             % (setting, fits[key], minor) if fits
             else 'Set %s to a release documented for Kubernetes %s (and give its row that range)' % (setting, minor))
    if low is None:
        return ('%s is "%s", whose row in %s gives no Kubernetes range its release documents, so nothing says it '
                'works with this cluster\'s %s (ipu_k8s_kubernetes_version): %s, or give the row the range its '
                'release documents.' % (setting, value, table, minor, unpin))
    low, high = str(low), str(high)
    if _minor_tuple(low) <= _minor_tuple(minor) <= _minor_tuple(high):
        return ''
    return ('%s is "%s", whose row in %s %s Kubernetes %s to %s, not this cluster\'s %s '
            '(ipu_k8s_kubernetes_version): %s, or choose a Kubernetes release from %s to %s.'
            % (setting, value, table, 'documents' if 'documented_min' in row else 'serves', low, high, minor, unpin,
               low, high))


def chart_support_warning(row, table):
    """'' when the chosen Network Operator row is NVIDIA's Supported line, else a notice naming it
    and the Supported rows, and saying so when none of them can be installed yet (a policy-layout
    row without its images)."""
    if not row or row.get('support') == 'Supported':
        return ''
    supported = [r for r in _rows(table, 'chart_version') if r.get('support') == 'Supported']
    ready = [r['chart_version'] for r in supported if r.get('layout') != 'policy' or 'images' in r]
    if supported and not ready:
        return ('network-operator %s is "%s" in NVIDIA\'s life cycle (no fixes, or critical fixes only). The '
                'Supported release is %s, whose row in ipu_k8s_versions.network_operator has no images yet (not all '
                'of them are published where they could be read), so it cannot be installed: this stays the newest '
                'release the table installs for this Kubernetes minor until that row has its images.'
                % (row.get('chart_version'), row.get('support', 'not listed'),
                   ', '.join(r['chart_version'] for r in supported)))
    return ('network-operator %s is "%s" in NVIDIA\'s life cycle (no fixes, or critical fixes only). The '
            'Supported release is %s: choose it with a Kubernetes minor it serves, or network_operator_chart_version.'
            % (row.get('chart_version'), row.get('support', 'not listed'), ', '.join(ready) or 'not in the table'))


def _network(value, name):
    """(network, '') for an IPv4 CIDR setting, else (None, message), or (the network it names,
    message) when only host bits are set."""
    text = str(value)
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        network = None
    if network is None or network.version != 4 or '/' not in text:
        return None, ('%s=%s is not an IPv4 network in CIDR form: write it as address/prefix with no host '
                      'bits set, e.g. 192.168.0.0/16.' % (name, text))
    if str(network) != text:
        return network, ('%s=%s has host bits set (no host bits may be set after the prefix): did you mean %s?'
                         % (name, text, network))
    return network, ''


def cluster_networks_problem(pod_subnet, service_subnet):
    """Pod and service networks: IPv4 CIDRs, sizes kubeadm accepts, not overlapping each other."""
    pod, problem = _network(pod_subnet, 'ipu_k8s_pod_subnet')
    if problem:
        return problem
    service, problem = _network(service_subnet, 'ipu_k8s_service_subnet')
    if problem:
        return problem
    if pod.overlaps(service):
        return ('ipu_k8s_pod_subnet=%s and ipu_k8s_service_subnet=%s overlap: pod and service addresses must '
                'not overlap each other. Choose two disjoint networks (defaults 192.168.0.0/16 and 10.96.0.0/12).'
                % (pod, service))
    if service.prefixlen < SERVICE_PREFIX_MIN:
        return ('ipu_k8s_service_subnet=%s is too large: the API server takes at most 20 host bits for '
                'Service addresses. Use a /%d or smaller network, e.g. 10.96.0.0/12.' % (service, SERVICE_PREFIX_MIN))
    if service.prefixlen > SERVICE_PREFIX_MAX:
        return ('ipu_k8s_service_subnet=%s is too small: kubeadm gives the cluster DNS the 10th address of it. '
                'Use a /%d or larger network, e.g. 10.96.0.0/12.' % (service, SERVICE_PREFIX_MAX))
    return ''


def pod_subnet_capacity_problem(pod_subnet, node_count, block_size, node_mask=KUBEADM_NODE_MASK):
    """The pod subnet holds a per-node range for every node, as kubeadm and Calico carve it.

    kubeadm: kube-controller-manager hands each node a /node_mask (24) of the pod subnet, so the
    subnet must be a /24 or larger (kubeadm refuses it otherwise), at most 16 bits larger, and
    hold one /24 per node (a node without one gets no podCIDR: CIDRNotAvailable).
    Calico: IPAM hands each node blocks of /block_size; the pool must be at least one block,
    and hold one block per node (a node without its own block borrows single addresses from
    other nodes' blocks, which Calico routes as /32s).
    """
    pod, problem = _network(pod_subnet, 'ipu_k8s_pod_subnet')
    if problem:
        return problem
    nodes = int(node_count)
    block = int(block_size)
    if not CALICO_BLOCK_MIN <= block <= CALICO_BLOCK_MAX:
        return ('calico_block_size=%d is outside what Calico accepts for IPv4 (%d to %d). Use the default 26 '
                '(64 addresses per block).' % (block, CALICO_BLOCK_MIN, CALICO_BLOCK_MAX))
    # Each node's range is the smaller of the two; `fits` is the longest prefix holding one per node.
    per_node = min(node_mask, block)
    fits = per_node - max(nodes - 1, 0).bit_length()
    if pod.prefixlen > per_node:
        return ('ipu_k8s_pod_subnet=%s is too small: every node takes a /%d of it (kubeadm\'s per-node pod '
                'range) and Calico a /%d block (calico_block_size). Use a /%d or larger network for %d node(s), '
                'e.g. 192.168.0.0/16.' % (pod, node_mask, block, fits, nodes))
    if node_mask - pod.prefixlen > KUBEADM_NODE_MASK_MAX_DIFF:
        return ('ipu_k8s_pod_subnet=%s is too large for kubeadm: its prefix may be at most %d bits shorter than '
                'the per-node /%d. Use a /%d or smaller network, e.g. 192.168.0.0/16.'
                % (pod, KUBEADM_NODE_MASK_MAX_DIFF, node_mask, node_mask - KUBEADM_NODE_MASK_MAX_DIFF))
    ranges = 2 ** (per_node - pod.prefixlen)
    if ranges < nodes:
        return ('ipu_k8s_pod_subnet=%s is too small for %d nodes: it holds only %d per-node /%d ranges. Use a /%d '
                'or larger network.' % (pod, nodes, ranges, per_node, fits))
    return ''


def hosts_problem(hosts):
    """Settings that must agree (or differ) between hosts.

    hosts: [{'host': inventory name, 'node_name': ipu_k8s_node_name,
             'kubernetes_version': ipu_k8s_kubernetes_version}, ...]
    """
    for entry in hosts:
        name = entry['node_name']
        if not isinstance(name, str) or len(name) > 253 or not NODE_NAME_RE.fullmatch(name):
            return ('ipu_k8s_node_name=%s on %s is not a valid Kubernetes node name (lower-case letters, digits, '
                    '"-" and ".", starting and ending with a letter or digit, at most 253 characters). Set '
                    'ipu_k8s_node_name for this host, e.g. %s.'
                    % (name, entry['host'], re.sub(r'[^a-z0-9.-]+', '-', str(name).lower()).strip('-.') or 'node-1'))
    by_version = _hosts_by(hosts, 'kubernetes_version')
    if len(by_version) > 1:
        parts = ['%s on %s' % (version, _join(sorted(names))) for version, names in sorted(by_version.items())]
        return ('ipu_k8s_kubernetes_version differs between hosts (%s): every node of one cluster runs the '
                'same release. Set it once for k8s_cluster (group_vars) and remove the per-host values.'
                % '; '.join(parts))
    for name, names in sorted(_hosts_by(hosts, 'node_name').items()):
        if len(names) > 1:
            return ('ipu_k8s_node_name=%s is the Kubernetes node name of %s: the second would take over the '
                    'first one\'s Node object. Give each host its own ipu_k8s_node_name (the default is its '
                    'inventory name).' % (name, ' and '.join(sorted(names))))
    return ''


def _interface_networks(facts):
    return [ipaddress.ip_interface('%s/%s' % (entry['address'], entry['netmask']))
            for entry in [facts.get('ipv4') or {}] + list(facts.get('ipv4_secondaries') or [])
            if entry.get('address') and entry.get('netmask')]


def _facts_key(interface):
    """The key of an interface in ansible_facts (eth-1:0 -> eth_1_0)."""
    return interface.replace('-', '_').replace(':', '_')


def cluster_interface(facts, configured):
    """The node's cluster-facing interface and the address kubeadm advertises on it: the
    configured one (ipu_k8s_cluster_interface), else the interface of the IPv4 default route.

    facts: the node's ansible_facts (network subset); configured: ipu_k8s_cluster_interface.
    -> {'interface': name or '', 'address': IPv4 address or ''}
    """
    name = str(configured or '')
    if name:
        return {'interface': name, 'address': ((facts.get(_facts_key(name)) or {}).get('ipv4') or {}).get('address', '')}
    default = facts.get('default_ipv4') or {}
    return {'interface': default.get('interface', ''), 'address': default.get('address', '')}


def cluster_interface_problem(host, configured, facts, pod_subnet, service_subnet, rdma=None):
    """The node's cluster-facing interface: real, up, addressed, and clear of the pod and service networks;
    on an IPU node, not its RDMA interface, and the pod and service networks clear of its RDMA subnet.

    configured: ipu_k8s_cluster_interface; facts: the node's ansible_facts; rdma: the node's derived
    rdma_network ({cidr, interface}), None on other nodes.
    """
    interfaces = dict((name, facts.get(_facts_key(name))) for name in facts.get('interfaces') or [])
    name = cluster_interface(facts, configured)['interface']
    setting = 'ipu_k8s_cluster_interface=%s' % name
    if not configured:
        if not name:
            return ('%s has no IPv4 default route, so its cluster-facing interface cannot be found: add a default '
                    'route, or set ipu_k8s_cluster_interface for this host.' % host)
        setting = 'the default route interface %s (ipu_k8s_cluster_interface is empty)' % name
    nic = interfaces.get(name)
    if nic is None:
        return ('ipu_k8s_cluster_interface=%s does not exist on %s (interfaces: %s). Set it to the NIC the other '
                'nodes reach this host on.' % (name, host, _join(sorted(interfaces))))
    if name == 'lo' or nic.get('type') == 'loopback':
        return ('%s on %s is the loopback interface: no other node can reach the API server, kubelet or pods '
                'there. Set ipu_k8s_cluster_interface to the NIC the other nodes reach this host on.' % (setting, host))
    if not nic.get('active'):
        return ('%s on %s is down: the cluster cannot use it. Bring it up, or set ipu_k8s_cluster_interface to '
                'the NIC the other nodes reach this host on.' % (setting, host))
    networks = _interface_networks(nic)
    if not networks:
        return ('%s on %s has no IPv4 address: kubeadm advertises and Calico detects the node address there. '
                'Give it an address, or set ipu_k8s_cluster_interface to an addressed NIC.' % (setting, host))
    # None for a network cluster_networks_problem refuses with its own message.
    clusters = [(kind, _network(value, '')[0]) for kind, value in (('pod', pod_subnet), ('service', service_subnet))]
    for kind, cluster in clusters:
        for own in networks if cluster else []:
            if cluster.overlaps(own.network):
                return ('ipu_k8s_%s_subnet=%s overlaps the network of %s on %s (%s on %s): the node would route its '
                        'own neighbours into the %s network. Choose a %s subnet outside %s.'
                        % (kind, cluster, name, host, own.with_prefixlen, name, kind, kind, own.network))
    if not rdma:
        return ''
    subnet = ipaddress.ip_network(str(rdma['cidr']), strict=False)
    if name != rdma['interface'] and not any(cluster and cluster.overlaps(subnet) for kind, cluster in clusters):
        return ''
    return ('On %s the RDMA subnet is %s on %s. ipu_k8s_pod_subnet=%s and ipu_k8s_service_subnet=%s must not '
            'overlap it, and the cluster-facing interface (%s) must not be the RDMA interface: pods would route '
            'IPU traffic through the wrong network. Choose other pod/service CIDRs or set ipu_k8s_cluster_interface.'
            % (host, rdma['cidr'], rdma['interface'], pod_subnet, service_subnet, name))


def cluster_addresses_problem(addresses):
    """Two hosts advertising the same cluster address (cloned VMs, a copied host_vars file).

    addresses: [{'host': name, 'address': IPv4 of its cluster interface}, ...]
    """
    addressed = [entry for entry in addresses if entry.get('address')]
    for address, hosts in sorted(_hosts_by(addressed, 'address').items()):
        if len(hosts) > 1:
            return ('%s have the same cluster address %s: each node needs its own (kubeadm advertises it, Calico '
                    'routes to it). Check ansible_host and ipu_k8s_cluster_interface of these hosts.'
                    % (' and '.join(sorted(hosts)), address))
    return ''


def _image(value):
    """An image reference: [registry[:port]/]path[:tag][@sha256:digest]."""
    match = IMAGE_RE.fullmatch(value if isinstance(value, str) else '')
    return bool(match) and len(match.group(1)) <= REPOSITORY_LENGTH_MAX


def _refusal(fine, rest, setting, value):
    """A rule of SETTING_RULES on one value: '' when fine(value), else 'SETTING is "VALUE"' + REST."""
    return '' if fine(value) else '%s is "%s"%s' % (setting, value, rest)


def _or_empty(fine, value):
    """fine(value), or value is "" (the default)."""
    return value == '' or fine(value)


def _string(pattern, value, append='', ends='', limit=None):
    """value is a string ending with ENDS, of at most LIMIT characters, that PATTERN matches in
    full once APPEND is added."""
    return (isinstance(value, str) and value.endswith(ends) and (limit is None or len(value) <= limit)
            and pattern.fullmatch(value + append) is not None)


def _whole(value):
    """A positive whole number (seconds, days, repetitions: ping -c 0 would never stop)."""
    return not isinstance(value, bool) and str(value).isdigit() and int(value) >= 1


def _memlock(value):
    """systemd's LimitMEMLOCK: "infinity" or a size."""
    return MEMLOCK_RE.fullmatch(str(value)) is not None


def dns_label_problem(setting, value, limit=DNS_LABEL_MAX, what='Kubernetes name (DNS-1123 label)'):
    """A Kubernetes object name that must be a DNS-1123 label (namespaces, network names)."""
    text = value if isinstance(value, str) else ''
    if not DNS_LABEL_RE.fullmatch(text) or len(text) > limit:
        return ('%s is "%s", which is not a valid %s: use at most %d lower-case letters, digits and "-", '
                'starting and ending with a letter or digit, e.g. %s.' % (setting, value, what, limit, _suggest_name(value)))
    return ''


def _suggest_name(value):
    return re.sub(r'[^a-z0-9-]+', '-', str(value).lower()).strip('-')[:DNS_LABEL_MAX].strip('-') or 'ipu-k8s'


def duration_problem(setting, value):
    """A Go duration string with its unit (10m, 90s, 1h30m)."""
    text = value if isinstance(value, str) else ''
    if not DURATION_RE.fullmatch(text) or not re.search(r'[1-9]', text):
        hint = ' (%ss?)' % value if str(value).isdigit() and not isinstance(value, bool) else ''
        return ('%s is "%s", which is not a duration: write a positive number with its unit, as Go reads '
                'durations, e.g. "10m", "90s" or "1h30m"%s.' % (setting, value, hint))
    return ''


def sha256_by_file_problem(setting, value):
    """{file name: sha256}, each sha256 as sha256sum prints it."""
    bad = dict((name, digest) for name, digest in (value or {}).items()
               if not (isinstance(digest, str) and SHA256_RE.fullmatch(digest)))
    if bad:
        return ('%s gives %s: give each file\'s sha256 as 64 lowercase hex digits without a "sha256:" prefix, as '
                'sha256sum prints it.' % (setting, json.dumps(bad)))
    return ''


def _http_url(value):
    return isinstance(value, str) and HTTP_URL_RE.fullmatch(value) is not None


def registry_hosts_problem(setting, value):
    """containerd's registry hosts: {host[:port]: {server: URL, mirrors: [{url: URL, ...}]}}, one
    message for the first bad entry."""
    for name, entry in (value or {}).items():
        mirrors = entry.get('mirrors', []) if isinstance(entry, dict) else None
        if not (isinstance(name, str) and REGISTRY_HOST_RE.fullmatch(name) and isinstance(mirrors, list)
                and all(isinstance(mirror, dict) and _http_url(mirror.get('url')) for mirror in mirrors)
                and ('server' not in entry or _http_url(entry['server']))):
            return ('%s["%s"] is %s: give a registry name (host or host:port, dot-separated labels of letters, '
                    'digits and "-", none empty) with server (an http(s) URL, optional) and mirrors, each with url '
                    '(an http(s) URL) and optionally capabilities, ca and skip_verify.'
                    % (setting, name, json.dumps(entry)))
    return ''


def registry_hosts_warning(value, setting='containerd_registry_hosts'):
    """'' unless an entry of containerd's registry hosts turns off what protects its images: a
    mirror or server with skip_verify (any certificate accepted) or a plain-http URL (nothing
    checks who answers). One notice naming every such entry."""
    weak = []
    for name, entry in sorted((value or {}).items()):
        entry = entry if isinstance(entry, dict) else {}
        places = [('server', entry)] if 'server' in entry else []
        places += [('mirror %s' % mirror.get('url'), mirror) for mirror in entry.get('mirrors') or []
                   if isinstance(mirror, dict)]
        for where, place in places:
            url = str(place.get('url', place.get('server', '')))
            reasons = [reason for reason, weak_here in (
                ('skip_verify', boolean(place.get('skip_verify', False), strict=False)),
                ('plain http', url.startswith('http://'))) if weak_here]
            if reasons:
                weak.append('%s["%s"] %s (%s)' % (setting, name, where, ' and '.join(reasons)))
    if not weak:
        return ''
    return ('Images pulled through %s are not checked against the registry\'s certificate: containerd accepts '
            'whoever answers there. Give those registries https URLs with a certificate the nodes trust (ca), and '
            'drop skip_verify, unless this network is trusted.' % '; '.join(weak))


def image_digest_warning(images):
    """'' unless an image of images ({setting: reference}; empty references are not used) is
    given by tag alone, else one notice naming each such setting and how to pin it. A tag is a
    name its owner may point at other content at any time; a digest (@sha256:...) names the
    content itself, and containerd refuses content that does not hash to it."""
    by_tag = ['%s is "%s"' % (setting, value) for setting, value in sorted((images or {}).items())
              if isinstance(value, str) and value and not re.search('@' + _DIGEST + '$', value)]
    if not by_tag:
        return ''
    return ('%s, by tag alone: a tag can be moved to other content by whoever owns the repository, so the test pods '
            'may run an image nobody here has seen. Pin it by digest, keeping the tag for people to read: '
            'name:tag@sha256:<64 hex digits>, the digest of the image your site checked (docker buildx imagetools '
            'inspect name:tag, or crane digest name:tag).' % '; '.join(by_tag))


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as stream:
        for block in iter(lambda: stream.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def local_file_problem(setting, value):
    """A *_local_path setting, checked on the controller before anything is copied.

    value: {'path': the setting's value, 'sha256': the sha256 the fetch checks ('' when the
    file is a key checked by its fingerprint, or when another rule refuses the missing sha256),
    'sha256_setting': where that sha256 comes from}; or, for a directory of files,
    {'path': the directory, 'files': {file name: the site's sha256 or ''}, 'sha256_setting': ...,
    'pinned_files': {file name: the table's sha256}, 'pinned_setting': where that comes from, with
    %s for the file name}, where every file needs a sha256, the site's first (as the fetch chooses).
    '' for an empty path (the file is downloaded instead)."""
    path, files = value.get('path'), value.get('files')
    if path == '':
        return ''
    what = 'a directory' if files is not None else 'a file'
    if not (isinstance(path, str) and os.path.isabs(path)):
        return ('%s is "%s": give the absolute path of %s on the Ansible controller, or "" to download it.'
                % (setting, path, what))
    if files is None:
        checks = [(path, value.get('sha256') or '', False, value.get('sha256_setting'))]
        if not os.path.isfile(path):
            return ('%s is "%s", which is not a regular file on the Ansible controller (%s): give the path of the '
                    'file itself, or "" to download it.' % (setting, path, _path_kind(path)))
    else:
        if not os.path.isdir(path):
            return ('%s is "%s", which is not a directory on the Ansible controller (%s): give the directory that '
                    'holds the files, or "" to download them.' % (setting, path, _path_kind(path)))
        pinned = value.get('pinned_files') or {}
        checks = [(os.path.join(path, name), sha or pinned.get(name, ''), True,
                   value.get('sha256_setting') if sha or not pinned.get(name) else value.get('pinned_setting') % name)
                  for name, sha in sorted(files.items())]
    for file_path, expected, required, sha256_setting in checks:
        name = os.path.basename(file_path) if files is not None else file_path
        if not os.path.isfile(file_path):
            return ('%s is "%s", and %s is not a regular file there (%s): put the file there, or set %s to "" to '
                    'download it.' % (setting, path, name, _path_kind(file_path), setting))
        if not (isinstance(expected, str) and SHA256_RE.fullmatch(expected)) and not required:
            continue
        actual = _sha256(file_path)
        if not (isinstance(expected, str) and SHA256_RE.fullmatch(expected)):
            return ('%s is "%s": %s has sha256 %s on the controller, and %s gives no sha256 (64 lowercase hex digits) '
                    'for it. Compare the file with its publisher\'s checksum, then set it in %s.'
                    % (setting, path, name, actual, sha256_setting, sha256_setting))
        if actual != expected:
            return ('%s is "%s": %s has sha256 %s on the controller, expected %s (%s). Put the published file there, '
                    'or correct %s.' % (setting, path, name, actual, expected, sha256_setting, sha256_setting))
    return ''


def _path_kind(path):
    """What is at PATH, in a few words."""
    if os.path.isdir(path):
        return 'it is a directory'
    if os.path.lexists(path) and not os.path.exists(path):
        return 'a broken symbolic link'
    return 'nothing is there' if not os.path.exists(path) else 'it is not a regular file'


def file_name_problem(setting, value):
    """A file name the role puts in a directory it chose (no directory part, not hidden)."""
    if isinstance(value, str) and FILE_NAME_RE.fullmatch(value):
        return ''
    return ('%s is "%s", which is not a plain file name: use 1 to 200 letters, digits, "_", ".", "@" or "-", '
            'starting with a letter or digit, without "/" (e.g. ipu-k8s-memlock).' % (setting, value))


# --- rules on settings read together (RULES) -----------------------------------------------

def inventory_groups_problem(groups):
    """The groups the journey needs: control_plane (not empty) and ipu_nodes inside k8s_cluster."""
    found = dict((name, [str(host) for host in groups.get(name) or []])
                 for name in ('control_plane', 'k8s_cluster', 'ipu_nodes'))
    cluster = set(found['k8s_cluster'])
    if found['control_plane'] and cluster and cluster.issuperset(found['control_plane'] + found['ipu_nodes']):
        return ''
    return ('The inventory must define control_plane (at least one host), workers, k8s_cluster (children: '
            'control_plane, workers) and ipu_nodes (a subset of k8s_cluster). Found control_plane=%s, '
            'k8s_cluster=%s, ipu_nodes=%s. See inventories/gcore/hosts.yml.'
            % (found['control_plane'], found['k8s_cluster'], found['ipu_nodes']))


def calico_release_problem(settings):
    """The Calico release: a vX.Y.Z tag, serving the cluster's minor when pinned, with a sha256
    for every manifest it applies."""
    version, releases = settings['calico_version'], _rows(settings['releases'])
    minor = settings['ipu_k8s_kubernetes_minor']
    newest = max((row['version'] for row in releases), key=_version_key, default='vX.Y.Z')
    if not TAG_RE.fullmatch(str(version)):
        return ('No Calico release for Kubernetes %s ("%s"). Set calico_version (e.g. %s) to a release whose system '
                'requirements list this Kubernetes minor, or give its ipu_k8s_versions.calico row the tested range.'
                % (minor, version, newest))
    pinned = pinned_release_problem(releases, minor, 'calico_version', version, 'version', 'ipu_k8s_versions.calico')
    if pinned:
        return pinned
    row_sums = next((row.get('sha256') or {} for row in releases if row.get('version') == version), {})
    site_sums = {name: sha for name, sha in (settings['calico_manifest_checksums'] or {}).items() if sha}
    checksums = dict(row_sums, **site_sums)
    missing = [name for name in settings['calico_manifests']
               if not (isinstance(checksums.get(name), str) and SHA256_RE.fullmatch(checksums[name]))]
    if missing:
        return ('calico_version is %s, and calico_manifest_checksums has no sha256 (64 lowercase hex digits) for %s. '
                'Choose a release of ipu_k8s_versions.calico (%s is the newest), or set calico_manifest_checksums to the '
                'files\' sha256 (git show %s:manifests/FILE | sha256sum in a clone of projectcalico/calico).'
                % (version, _join(missing), newest, version))
    return ''


def helm_download_problem(settings):
    """A Helm release whose download can be checked (a row of ipu_k8s_versions.helm or a site's checksum)
    and, when it is a row, whose documented version skew serves the cluster's minor (helm.sh,
    "Helm Version Support Policy": a release serves the Kubernetes minor it was compiled against
    and the three before it)."""
    version, releases = settings['helm_version'], settings['releases'] or {}
    minor = settings['ipu_k8s_kubernetes_minor']
    if not version:
        return ('No row of ipu_k8s_versions.helm documents Kubernetes %s (ipu_k8s_kubernetes_version), so no Helm release '
                'is chosen. Set helm_version to a Helm release whose version skew serves %s (helm.sh/docs/topics/'
                'version_skew) and helm_tarball_checksum to its published sha256, or add its row (with the Kubernetes '
                'range it serves) to ipu_k8s_versions.helm.' % (minor, minor))
    if not (settings['helm_tarball_checksum'] or version in releases):
        return ('helm_version is %s, which is not a row of ipu_k8s_versions.helm (known: %s), and helm_tarball_checksum is '
                'empty, so nothing could check the download. Choose a known release, or set helm_tarball_checksum to '
                'the sha256 published in https://get.helm.sh/helm-v%s-linux-ARCH.tar.gz.sha256sum.'
                % (version, _join(releases), version))
    return pinned_release_problem(releases, minor, 'helm_version', version, 'version', 'ipu_k8s_versions.helm')


def _image_tag(image):
    """The tag of an image reference ('' when it has none): what follows the last ':' after the
    last '/', before any digest."""
    name = str(image).split('@', 1)[0]
    last = name.rsplit('/', 1)[-1]
    return last.split(':', 1)[1] if ':' in last else ''


def sandbox_image_problem(settings):
    """The default sandbox image needs kubeadm's pause version for the cluster's minor."""
    minor, versions = settings['ipu_k8s_kubernetes_minor'], pause_versions(settings['kubernetes'])
    image = settings['containerd_sandbox_image']
    if str(minor) in versions or _image_tag(image):
        return ''
    return ('containerd_sandbox_image is "%s": no pause version is known for Kubernetes %s (the pause of '
            'ipu_k8s_versions.kubernetes lists %s). Set containerd_sandbox_image to the pause image '
            '`kubeadm config images list` names for %s.' % (image, minor, _join(versions), minor))


def pause_versions(kubernetes):
    """{minor: pause tag} of the Kubernetes rows of ipu_k8s_versions that name one."""
    return dict((str(minor), str(row['pause'])) for minor, row in (kubernetes or {}).items() if (row or {}).get('pause'))


def sandbox_image_warning(image, minor, kubernetes):
    """'' when the sandbox image is the pause version kubeadm expects at MINOR (or none is known),
    else a notice: kubeadm's preflight warns of the difference and the kubelet keeps the image
    containerd names from garbage collection, not kubeadm's. KUBERNETES: ipu_k8s_versions.kubernetes."""
    expected = pause_versions(kubernetes).get(str(minor))
    tag = _image_tag(image)
    if not expected or tag == expected:
        return ''
    return ('containerd_sandbox_image is "%s", but kubeadm %s expects pause:%s (`kubeadm config images list`): the '
            'runtime and kubeadm name different sandbox images, and kubeadm\'s preflight warns of it. Use pause:%s '
            'from the same registry, or leave containerd_sandbox_image unset.' % (image, minor, expected, expected))


def kubeadm_api_problem(settings):
    """kubeadm has a configuration API (the one the role's table chose) for the cluster's minor."""
    if settings['kubeadm_api_version']:
        return ''
    minor = settings['ipu_k8s_kubernetes_minor']
    return ('ipu_k8s_kubernetes_version is %s: no kubeadm configuration API in __kubeadm_api_versions '
            '(roles/kubeadm/vars/main.yml) covers Kubernetes %s. Choose a release preflight_supported_kubernetes_minors '
            'lists, or add the API version kubeadm %s reads to that table.'
            % (settings['ipu_k8s_kubernetes_version'], minor, minor))


def control_plane_endpoint_problem(settings):
    """The API server's port and endpoint: a shared endpoint for several control-plane hosts, a
    bare name or address (kubeadm writes it into certificates and kubeconfigs as it is)."""
    endpoint, port = settings['kubeadm_control_plane_endpoint'], settings['kubeadm_api_server_port']
    control_plane = settings['control_plane'] or []
    if len(control_plane) > 1 and not endpoint:
        return ('The control_plane group has %d hosts. Set kubeadm_control_plane_endpoint to a DNS name or '
                'load-balancer address that reaches all of them (port %s) before the first run: kubeadm writes it '
                'into the certificates.' % (len(control_plane), port))
    if (isinstance(port, bool) or not str(port).isdigit() or not 1 <= int(port) <= 65535
            or not isinstance(endpoint, str) or not (endpoint == '' or _host_port(endpoint))):
        return ('kubeadm_api_server_port=%s and kubeadm_control_plane_endpoint="%s": the port must be 1-65535 and '
                'the endpoint a bare lower-case DNS name or IP address with an optional ":port" (e.g. k8s-api.example.com:6443), '
                'without a scheme or path: kubeadm writes it into the certificates and kubeconfigs as it is.'
                % (port, endpoint))
    return ''


def _port(text):
    return re.fullmatch(r'[0-9]{1,5}', text) is not None and 1 <= int(text) <= 65535


def _host_port(text):
    """host or host:port as kubeadm's ParseHostPort (cmd/kubeadm/app/util/endpoint.go) reads an
    endpoint: the host an IP address ([IPv6] with a port) or a DNS subdomain, the port 1-65535."""
    bracketed = re.fullmatch(r'\[([0-9A-Fa-f:.]+)\](?::([0-9]+))?', text)
    if bracketed:
        host, port = bracketed.groups()
    elif text.count(':') == 1:
        host, port = text.split(':')
    else:
        host, port = text, None
    if port is not None and not _port(port):
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return not bracketed and len(host) <= DNS_SUBDOMAIN_MAX and DNS_SUBDOMAIN_RE.fullmatch(host) is not None


def extended_resource_problem(settings):
    """The RDMA resource <prefix>/<name> is an extended resource name, as the kubelet requires of
    a device plugin's resource (pkg/kubelet/cm/devicemanager/manager.go Register, with
    pkg/apis/core/v1/helper/helpers.go IsExtendedResourceName): not in the kubernetes.io/
    namespace, not starting with "requests.", and "requests." + the name a qualified name (a DNS
    subdomain prefix of at most 253 characters, '/', a name of at most 63)."""
    prefix, name = settings['ipu_k8s_rdma_resource_prefix'], settings['ipu_k8s_rdma_resource_name']
    if isinstance(prefix, str) and isinstance(name, str):
        full = '%s/%s' % (prefix, name)
        quota_prefix = RESOURCE_REQUESTS_PREFIX + prefix
        # Neither part can hold a '/' (its pattern has none): the name is <prefix>/<name>, one '/'.
        if (RESOURCE_NATIVE_PREFIX not in full
                and not full.startswith(RESOURCE_REQUESTS_PREFIX)
                and DNS_SUBDOMAIN_RE.fullmatch(quota_prefix) and len(quota_prefix) <= DNS_SUBDOMAIN_MAX
                and QUALIFIED_NAME_RE.fullmatch(name) and len(name) <= QUALIFIED_NAME_MAX):
            if RDMA_PLUGIN_RESOURCE_NAME_RE.fullmatch(name):
                return ''
            return ('ipu_k8s_rdma_resource_name is "%s": the RDMA shared device plugin takes only letters, digits '
                    'and "_" in a resource name and exits on any other (Kubernetes would accept it): e.g. %s.'
                    % (name, re.sub(r'[^a-zA-Z0-9_]', '_', name)))
    return ('ipu_k8s_rdma_resource_prefix "%s" and ipu_k8s_rdma_resource_name "%s" do not make an extended resource '
            'name Kubernetes accepts: the prefix must be a DNS subdomain (lower-case letters, digits, "-" and ".", '
            'at most %d characters, not kubernetes.io and not starting with "requests."), the name 1 to %d letters, '
            'digits, "-", "_" or ".", starting and ending with a letter or digit, e.g. rdma and rdma_shared_device_a.'
            % (prefix, name, DNS_SUBDOMAIN_MAX - len(RESOURCE_REQUESTS_PREFIX), QUALIFIED_NAME_MAX))


def rdma_plugin_selectors_problem(settings):
    """The RDMA shared device plugin's resource: at least one selector list not empty (the plugin
    exits on "neither selectors nor devices", resources_manager.go:178-190, utils.go:71-81) and
    rdmaHcaMax at least 1 (negative: the plugin exits, resources_manager.go:174-176; 0: it offers
    no device, server.go:154-165)."""
    lists = ('network_operator_rdma_vendors', 'network_operator_rdma_drivers', 'network_operator_rdma_ifnames')
    problems = []
    if not any(settings[name] for name in lists):
        problems.append('%s are all empty: the RDMA shared device plugin needs at least one selector and exits '
                        'without one. Keep network_operator_rdma_drivers: ["mlx5_core"] (the default) or name the '
                        'vendors or interfaces.' % ', '.join(lists))
    hca = settings['network_operator_rdma_hca_max']
    if isinstance(hca, bool) or not str(hca).isdigit() or int(hca) < 1:
        problems.append('network_operator_rdma_hca_max is "%s": give a whole number of at least 1, the pods that may '
                        'share each RDMA device (the default 63); the plugin exits on a negative one and offers no '
                        'device with 0.' % hca)
    return ' '.join(problems)


# libyaml's safe loader where PyYAML is built with it (its wheels are), the pure-Python one
# otherwise: the same objects, and preflight's check of undeclared settings reads every role's
# argument specs, vars and task files on each run (0.5 CPU-s with the pure-Python loader, 0.05 s
# with libyaml's).
_SAFE_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def _yaml(path):
    with open(path) as stream:
        return yaml.load(stream, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader


def _facts_set(node):
    """Names the tasks in NODE (a parsed task file) set as facts or register."""
    names = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ('ansible.builtin.set_fact', 'set_fact') and isinstance(value, dict):
                names.update(value)  # with set_fact's own `cacheable`, which carries no role's prefix
            elif key == 'register' and isinstance(value, str):
                names.add(value)
            names |= _facts_set(value)
    elif isinstance(node, list):
        for item in node:
            names |= _facts_set(item)
    return names


def declared_settings(roles_dir):
    """(prefixes, declared): the prefixes of settings (each role's name and "_", so ipu_k8s_ too),
    and every name the project gives a meaning: each option any entry point of any role declares
    in its meta/argument_specs.yml, and what the roles set themselves (their vars/main.yml, the
    facts their tasks set or register, such as network_operator_ipam, which an operator may pass
    with -e when the Network Operator is installed another way)."""
    prefixes, declared = [], set()
    for role in sorted(os.listdir(roles_dir)):
        role_dir = os.path.join(roles_dir, role)
        if not os.path.isdir(role_dir):
            continue
        prefixes.append(role + '_')
        spec_path = os.path.join(role_dir, 'meta', 'argument_specs.yml')
        if os.path.isfile(spec_path):
            for entry_point in ((_yaml(spec_path) or {}).get('argument_specs') or {}).values():
                declared.update((entry_point or {}).get('options') or {})
        vars_path = os.path.join(role_dir, 'vars', 'main.yml')
        if os.path.isfile(vars_path):
            declared.update(_yaml(vars_path) or {})
        tasks_dir = os.path.join(role_dir, 'tasks')
        for name in sorted(os.listdir(tasks_dir)) if os.path.isdir(tasks_dir) else []:
            if name.endswith(('.yml', '.yaml')):
                declared |= _facts_set(_yaml(os.path.join(tasks_dir, name)))
    return tuple(prefixes), declared


def undeclared_settings_problem(hosts, roles_dir):
    """A variable the inventory sets with a role's prefix that no role declares: a misspelt
    setting, which would change nothing while the default is used (private __ variables carry no
    role's prefix). hosts: {inventory host: [names of its variables]}.
    -> one message naming each such variable, the hosts that set it and the closest setting."""
    prefixes, declared = declared_settings(roles_dir)
    where = {}
    for host, names in sorted((hosts or {}).items()):
        for name in names or []:
            if isinstance(name, str) and name.startswith(prefixes) and name not in declared:
                where.setdefault(name, []).append(host)
    sentences = []
    for name, names in sorted(where.items()):
        close = difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.6)
        fix = 'did you mean %s? Correct the name' % close[0] if close else 'no setting is close to it. Remove it'
        sentences.append('%s (set for %s) is no setting of any role (roles/*/meta/argument_specs.yml), so it would '
                         'change nothing and the default would be used: %s.' % (name, _join(names), fix))
    return ' '.join(sentences)


# The values a Network Operator row's fields may take (the role's templates and tasks know no other).
CHART_ROW_CHOICES = (('support', ('Supported', 'Deprecated', 'End of Support', 'not listed')),
                     ('layout', ('legacy', 'policy')), ('ipam', ('whereabouts', 'nv-ipam')))


def network_operator_chart(settings):
    """(row, problem): the ipu_k8s_versions.network_operator row the site gets (the one named by
    network_operator_chart_version, else the newest serving ipu_k8s_kubernetes_minor); and the
    first rule it breaks ('' when none): one row fits, a pinned row serves the minor, the layout
    can express the settings, the IPAM fits the layout and images, the archive can be checked
    (the fetch checks it against the site's sha256, else the row's). The layout and ipam values
    themselves are choices of the role's argument spec."""
    table, version = _rows(settings['releases'], 'chart_version'), settings['network_operator_chart_version']
    minor, site_sha = settings['ipu_k8s_kubernetes_minor'], settings['network_operator_chart_sha256']
    if version:
        matches = [row for row in table if row.get('chart_version') == version]
    else:
        matches = [row for row in [release_for_minor(table, minor, 'chart_version')] if row]
    if len(matches) != 1:
        if version:
            return {}, ('network_operator_chart_version %s is not a row of ipu_k8s_versions.network_operator (known: %s). '
                        'Add a row for it (Kubernetes range, url, layout, ipam, and images for the policy '
                        'layout).' % (version, _join(row.get('chart_version') for row in table)))
        ranges = _join('%s-%s' % (row['kubernetes_min'], row['kubernetes_max']) for row in table
                       if 'kubernetes_min' in row)
        return {}, ('No network-operator chart release in ipu_k8s_versions.network_operator supports Kubernetes %s (%s). '
                    'Set network_operator_chart_version to a release NVIDIA documents for it, or add a row to the '
                    'table.' % (minor, ranges))
    row = matches[0]
    wrong = ['%s is "%s", not one of %s' % (field, row.get(field), _join(choices)) for field, choices in CHART_ROW_CHOICES
             if row.get(field) not in choices]
    if wrong:
        return row, 'ipu_k8s_versions.network_operator row %s: %s. Fix the row.' % (row['chart_version'], '; '.join(wrong))
    row_sha = (row.get('sha256') or {}).get('network-operator-%s.tgz' % row['chart_version']) or ''
    chart, layout, ipam, prefix = row['chart_version'], row['layout'], row['ipam'], settings['ipu_k8s_rdma_resource_prefix']
    if layout == 'policy' and 'images' not in row:
        fits = release_for_minor(table, minor, 'chart_version').get('chart_version')
        return row, ('network_operator_chart_version is "%s", whose row in ipu_k8s_versions.network_operator has no images: '
                     'not all of its component images are published where this project could read them '
                     '(tests/schemas/network_operator/published.yaml names the missing ones), so it cannot be '
                     'installed until the row has them. %s.' % (
                         chart, 'Leave network_operator_chart_version unset (remove it from the inventory) and the table picks '
                         '%s for Kubernetes %s'
                         % (fits, minor) if fits else 'No installable release of the table serves Kubernetes %s'
                         % minor))
    if layout == 'legacy' and prefix != 'rdma':
        return row, ('Chart %s (%s layout): the layout must be legacy or policy; legacy charts (before 24.10) always '
                     'publish the RDMA resource under the prefix "rdma" (ipu_k8s_rdma_resource_prefix is "%s"); a '
                     'policy-layout row needs its images.' % (chart, layout, prefix))
    pinned = pinned_release_problem(table, minor, 'network_operator_chart_version', version, 'chart_version',
                                    'ipu_k8s_versions.network_operator')
    if pinned:
        return row, pinned
    image = ipam.replace('-', '_')
    if (ipam == 'nv-ipam' and layout != 'policy') or (layout == 'policy' and image not in row['images']):
        return row, ('ipu_k8s_versions.network_operator row %s: ipam is "%s". It must be whereabouts or nv-ipam; nv-ipam '
                     'needs the policy layout; a policy row needs images.%s. Fix the row.' % (chart, ipam, image))
    if not (isinstance(site_sha, str) and (site_sha == '' or SHA256_RE.fullmatch(site_sha))):
        return row, ('network_operator_chart_sha256 is "%s": it must be the archive\'s sha256, 64 lowercase hex '
                     'digits (sha256sum network-operator-%s.tgz).' % (site_sha, chart))
    if site_sha and row_sha and site_sha != row_sha:
        return row, ('network_operator_chart_sha256 is %s, but network-operator %s\'s archive has sha256 %s (the '
                     'repository\'s index). Remove network_operator_chart_sha256.' % (site_sha, chart, row_sha))
    if not (row_sha or site_sha):
        return row, ('network-operator %s comes from %s, which publishes no checksum this project could pin, and '
                     'network_operator_chart_sha256 is empty. Set it to the sha256 of %s as your site verified it (on '
                     'a trusted machine: curl -fsSLO %s && sha256sum network-operator-%s.tgz); '
                     'network_operator_chart_local_path, if set, must be that file.'
                     % (chart, row['url'].rsplit('/', 1)[0], row['url'], row['url'], chart))
    return row, ''


def network_operator_chart_row(settings):
    """The chosen ipu_k8s_versions.network_operator row ({} when none fits), as network_operator_chart."""
    return network_operator_chart(settings)[0]


def _image_reference(image):
    """repository/image:version of an images entry of ipu_k8s_versions ('' when it has none)."""
    image = image or {}
    return '%s/%s:%s' % (image['repository'], image['image'], image['version']) if image.get('image') else ''


def ipu_operator_chart(settings):
    """The ipu_k8s_versions.ipu_operator row of ipu_operator_chart_version ({} when none) with what
    the role installs from it: url (the archive under ipu_operator_chart_repo_url), archive_sha256
    and crd_sha256 (the row's sha256 of the archive and of a CRD file, '' when it has none),
    kube_rbac_proxy_image (the image the chart names) and image_rewrites ({that image:
    ipu_operator_kube_rbac_proxy_image}, empty when either is empty or they are the same)."""
    version = settings['ipu_operator_chart_version']
    row = dict((settings['releases'] or {}).get(version) or {})
    if not row:
        return {}
    sums = row.get('sha256') or {}
    site_image = settings.get('ipu_operator_kube_rbac_proxy_image')
    chart_image = _image_reference((row.get('images') or {}).get('kube_rbac_proxy'))
    row.update(url=str(settings.get('ipu_operator_chart_repo_url', '')).rstrip('/') + '/' + str(row.get('archive', '')),
               archive_sha256=sums.get(os.path.basename(str(row.get('archive', '')))) or '',
               crd_sha256=next((digest for name, digest in sums.items() if name.endswith(('.yaml', '.yml'))), ''),
               kube_rbac_proxy_image=chart_image,
               image_rewrites={chart_image: site_image} if site_image and chart_image and site_image != chart_image
               else {})
    return row


def ipu_operator_chart_problem(settings):
    """The IPU Operator chart: a row of the chart table with a pinned archive, and, for a chart
    without its CRD, a CRD source and the sha256 it is checked against."""
    version, charts = settings['ipu_operator_chart_version'], settings['releases'] or {}
    if version not in charts:
        return ('ipu_operator_chart_version is "%s", which has no row in ipu_k8s_versions.ipu_operator (%s): pick one '
                'of those, or add a row with the facts read in that chart (archive, sha256 of the archive and of a '
                'CRD it does not ship, ships_crd, images.kube_rbac_proxy).' % (version, _join(charts)))
    row = ipu_operator_chart(settings)
    archive, digest = row.get('archive', ''), row['archive_sha256']
    if not (archive and isinstance(digest, str) and SHA256_RE.fullmatch(digest)):
        return ('ipu_k8s_versions.ipu_operator["%s"] has archive "%s" and sha256 "%s" for it: give the archive\'s path '
                'in the repository and its sha256 under its file name (64 lower-case hex digits, the digest in the '
                'repository\'s index.yaml).' % (version, archive, digest))
    if boolean(row.get('ships_crd'), strict=False):
        return ''
    if not (settings['ipu_operator_crd_local_path'] or settings['ipu_operator_crd_url']):
        return ('Chart %s does not ship the IPUJob CRD and ipu_operator_crd_url and ipu_operator_crd_local_path '
                'are empty: set ipu_operator_crd_url to the graphcore.ai_ipujobs_*.yaml asset of the matching '
                'graphcore/helm-charts release, or ipu_operator_crd_local_path to a copy of it on the Ansible control '
                'node.' % version)
    crd_sha256 = settings['ipu_operator_crd_checksum'] or row.get('crd_sha256')
    if not (isinstance(crd_sha256, str) and SHA256_RE.fullmatch(crd_sha256)):
        return ('Chart %s needs its IPUJob CRD applied first, and ipu_operator_crd_checksum is "%s": set it to the '
                'CRD file\'s sha256, 64 lowercase hex digits without a "sha256:" prefix (sha256sum '
                'graphcore.ai_ipujobs_*.yaml), so a changed or truncated file is refused before it reaches the '
                'cluster.' % (version, settings['ipu_operator_crd_checksum']))
    return ''


def ipu_operator_values_problem(settings):
    """Extra chart values may not set what the role owns."""
    values = settings['ipu_operator_extra_values'] or {}
    owned = [section + '.' + key for section, key in (('global', 'vipuControllers'), ('worker', 'hostNetwork'))
             if key in (values.get(section) or {})]
    if owned:
        return ('ipu_operator_extra_values sets %s: the role builds global.vipuControllers from the V-IPU '
                'controllers the IPU nodes resolved, and IPUJob workers never use the host network here. Remove it '
                'from ipu_operator_extra_values.' % owned[0])
    return ''


def become_root_problem(settings):
    """The node steps run as root: connected as root, or become root (the playbooks' become)."""
    user, become, become_user = settings['ansible_user'], settings['ansible_become'], settings['ansible_become_user']
    if user == 'root' or (boolean(become, strict=False) and become_user == 'root'):
        return ''
    return ('%s is reached as %s with ansible_become %s and ansible_become_user %s: the node steps (packages, '
            'kernel modules, sysctls, kubeadm) would not run as root. Remove ansible_become and ansible_become_user '
            'for this host (the playbooks become root), or connect as root.'
            % (settings['host'], user, become, become_user))


# The rules on one value are partials of _refusal: their tests run when a setting is checked,
# not when this table is built.
SETTING_RULES = {
    'image': partial(_refusal, _image, ', which is not an image reference: write %s.' % IMAGE_GRAMMAR),
    'image_or_empty': partial(_refusal, partial(_or_empty, _image),
                              ', which is not an image reference: write %s, or "" for the default.' % IMAGE_GRAMMAR),
    # kubeadm appends "/<image>" to it: with it, it must be a repository name.
    'repository_or_empty': partial(
        _refusal, partial(_or_empty, partial(_string, REPOSITORY_RE, append='/pause', limit=REPOSITORY_LENGTH_MAX)),
        ', which is not an image repository: write registry[:port][/path] without tag or digest, the path in lower '
        'case (e.g. registry.example.com/k8s), or "" for the default.'),
    # Put in front of image paths as it is.
    'registry_prefix_or_empty': partial(
        _refusal, partial(_or_empty, partial(_string, REPOSITORY_RE, append='node', ends='/')),
        ': write a registry[:port][/path] ending with "/" (e.g. "registry.example.com/"), the path in lower case: '
        'the image path is appended to it as it is; or "" for the default.'),
    'dns_label': dns_label_problem,
    'helm_release': lambda setting, value: dns_label_problem(setting, value, HELM_RELEASE_MAX, 'Helm release name'),
    'duration': duration_problem,
    'seconds': partial(_refusal, _whole, ': give a positive whole number of seconds, without a unit (e.g. 300).'),
    'days': partial(_refusal, _whole, ': give a positive whole number of days, without a unit (e.g. 30).'),
    'count': partial(_refusal, _whole, ': give a positive whole number of repetitions, without a unit (e.g. 3).'),
    'memlock': partial(_refusal, _memlock,
                       ': set it to "infinity" or a size such as 68719476736 or 64G (systemd\'s LimitMEMLOCK).'),
    'sha256_by_file': sha256_by_file_problem,
    'sha256_or_empty': partial(_refusal, partial(_or_empty, partial(_string, SHA256_RE)),
                               ': give the file\'s sha256 as 64 lowercase hex digits without a "sha256:" prefix, as '
                               'sha256sum prints it, or "" for the one this project pins.'),
    'registry_hosts': registry_hosts_problem,
    'file_name': file_name_problem,
    'local_file': local_file_problem,
    # kubeadm's ValidateNetworking: dnsDomain is a DNS-1123 subdomain (tests/kubeadm_upstream.py).
    'dns_subdomain': partial(_refusal, partial(_string, DNS_SUBDOMAIN_RE, limit=DNS_SUBDOMAIN_MAX),
                             ', which is not a DNS subdomain as kubeadm requires: lower-case labels of letters, digits '
                             'and "-" joined by "." (e.g. cluster.local).'),
    'cri_socket': partial(_refusal, partial(_string, CRI_SOCKET_RE),
                          ', which kubeadm refuses: give a unix:// URL, the only scheme it reads '
                          '(e.g. unix:///run/containerd/containerd.sock).'),
    'nad_path': partial(_refusal, partial(_string, NAD_PATH_RE),
                        ': give an absolute path without whitespace, quotes or backslashes (the Network Operator '
                        'strips whitespace from the IPAM configuration it writes, and a quote breaks it).'),
    'nad_word': partial(_refusal, partial(_string, NAD_WORD_RE),
                        ': give one word without whitespace, quotes or backslashes (the Network Operator strips '
                        'whitespace from the IPAM configuration it writes, and a quote breaks it).'),
    'netns_name': partial(_refusal, partial(_string, NETNS_NAME_RE),
                          ': use 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit (a network '
                          'namespace name, e.g. ipu-k8s-verify).'),
    'link_name': partial(_refusal, partial(_string, LINK_NAME_RE),
                         ': use 1 to 15 letters, digits, "_", "." or "-", starting with a letter or digit (a Linux '
                         'interface name, e.g. ipuk8sverify0).'),
}

# Rules on settings read together: each takes the value its kind is given (the settings by
# name, or the inventory's groups, or every host's identity) and returns one message or ''.
RULES = {
    'inventory_groups': inventory_groups_problem,
    'cluster_networks': lambda s: cluster_networks_problem(s['ipu_k8s_pod_subnet'], s['ipu_k8s_service_subnet']),
    'hosts': hosts_problem,
    'kubernetes_version': lambda s: kubernetes_version_problem(s['ipu_k8s_kubernetes_version'],
                                                               s['supported_minors']),
    'pod_subnet_capacity': lambda s: pod_subnet_capacity_problem(s['ipu_k8s_pod_subnet'], len(s['nodes'] or []),
                                                                 s['calico_block_size']),
    'calico_release': calico_release_problem,
    'helm_download': helm_download_problem,
    'kubeadm_api': kubeadm_api_problem,
    'rdma_plugin_selectors': rdma_plugin_selectors_problem,
    'sandbox_image': sandbox_image_problem,
    'control_plane_endpoint': control_plane_endpoint_problem,
    'extended_resource': extended_resource_problem,
    'undeclared_settings': lambda s: undeclared_settings_problem(s['hosts'], s['roles_dir']),
    'network_operator_chart': lambda s: network_operator_chart(s)[1],
    'ipu_operator_chart': ipu_operator_chart_problem,
    'ipu_operator_values': ipu_operator_values_problem,
    'become_root': become_root_problem,
}


def setting_problems(settings, rule):
    """{setting: value} checked by one rule of SETTING_RULES -> one message per bad setting."""
    check = SETTING_RULES[rule]
    return [message for message in (check(name, value) for name, value in sorted(settings.items())) if message]


def problems(checks):
    """{kind: settings} -> the messages of every bad setting, kinds in the order given: a kind of
    SETTING_RULES checks each of its {setting: value} alone, a kind of RULES its value as a whole."""
    return [message for kind, settings in checks.items()
            for message in (setting_problems(settings, kind) if kind in SETTING_RULES else [RULES[kind](settings)])
            if message]


class FilterModule(object):
    """Setting checks; each returns one message, or '' when the value is fine."""

    def filters(self):
        return {
            'ipu_k8s_kubernetes_support_warning': kubernetes_support_warning,
            'ipu_k8s_chart_support_warning': chart_support_warning,
            'ipu_k8s_sandbox_image_warning': sandbox_image_warning,
            'ipu_k8s_release_for_minor': release_for_minor,
            'ipu_k8s_cluster_interface_problem': cluster_interface_problem,
            'ipu_k8s_cluster_interface_of': cluster_interface,
            'ipu_k8s_cluster_addresses_problem': cluster_addresses_problem,
            'ipu_k8s_network_operator_chart': network_operator_chart_row,
            'ipu_k8s_ipu_operator_chart': ipu_operator_chart,
            'ipu_k8s_problems': problems,
            'ipu_k8s_registry_hosts_warning': registry_hosts_warning,
            'ipu_k8s_image_digest_warning': image_digest_warning,
        }
