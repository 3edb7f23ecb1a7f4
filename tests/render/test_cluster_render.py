"""Rendering tests of the cluster layer: kubernetes_packages, kubeadm and calico.

pkgs.k8s.io, kubeadm and a live cluster cannot be reached here, so the files those roles
write are rendered by the roles themselves (tests/render/cluster/render.yml runs their
task files with their real defaults through ansible-runner on localhost, one inventory
host per Kubernetes version) and checked:

- kubeadm: the configuration API version chosen for each minor, the versions and
  networks carried, cgroupDriver systemd, the advertise address found on a real interface,
  and every field known to the kubeadm API of that version.
- calico: the Installation validated against the operator's Installation CRD schema
  (tests/schemas/calico/, strict about unknown fields), the pool, and node address
  autodetection that cannot pick the RDMA NIC.
- kubernetes_packages: the repository of each minor and the pinned version; the repository
  step run for real (deb822 entry, signed-by keyring, apt update) against a signed repository
  served on 127.0.0.1, and a key with another fingerprint refused.
- the same render in check mode writes nothing; in a network namespace built like a Poplar
  server (RDMA NIC listed first) kubeadm advertises the default-route NIC's address;
  kubeadm's failure reports keep tokens and keys out; the playbooks' host order and tags.

KubeletConfiguration and the kubeadm kinds are not Kubernetes API objects, so
kubernetes-validate has no schema for them: their structure is checked field by field
against the kubeadm / kubelet configuration API references (KUBEADM_FIELDS below).
"""

import email.utils
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / 'tests' / 'render' / 'cluster' / 'render.yml'
CRD = ROOT / 'tests' / 'schemas' / 'calico' / 'operator.tigera.io_installations_crd.yaml'
SHARED_DEFAULTS = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'main.yml').read_text())
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / 'ansible-playbook')
sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402
from testlib import require, require_root  # noqa: E402

# One host per Kubernetes minor of the project's table (ipu_k8s_versions.kubernetes, the full version is
# what an inventory sets; the patch does not matter to what renders). None: the shared default
# (ipu_k8s_kubernetes_version), not overridden.
DEFAULT_MINOR = '.'.join(SHARED_DEFAULTS['ipu_k8s_kubernetes_version'].split('.')[:2])
VERSIONS = {minor: None if minor == DEFAULT_MINOR else minor + '.3'
            for minor in yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())[
                'ipu_k8s_versions']['kubernetes']}


def _minor(text):
    return tuple(int(part) for part in text.lstrip('v').split('.')[:2])


# Expected values from the upstream facts, not from the roles' tables.
_KUBEADM_FACTS = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'kubernetes' / 'kubeadm-api-versions.yaml').read_text())[
    'api_versions']
_CALICO_FACTS = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'calico' / 'kubernetes-versions.yaml').read_text())[
    'releases']
# The newest API version the minor's kubeadm reads.
EXPECTED_KUBEADM_API = {
    minor: max((name for name, f in _KUBEADM_FACTS.items() if _minor(f['first_minor']) <= _minor(minor)
                and (f['last_minor'] is None or _minor(minor) <= _minor(f['last_minor']))), key=lambda n: n[-7:])
    for minor in VERSIONS}
# The newest Calico release tested with the minor, a range read first-hand before one read
# second-hand (the facts' source says which); a minor no tested release covers gets none, and
# the site's pin of the newest release is refused (its row documents no such minor).
def _tested_calico(minor):
    tested = [r for r, f in _CALICO_FACTS.items() if minor in f['tested_minors']]
    first_hand = [r for r in tested if not str(_CALICO_FACTS[r].get('source', '')).startswith('second-hand')]
    return max(first_hand or tested, key=_minor, default=None)


_TESTED_CALICO = {minor: _tested_calico(minor) for minor in VERSIONS}
PINNED_CALICO = max(_CALICO_FACTS, key=lambda r: tuple(int(x) for x in r[1:].split('.')))
EXPECTED_CALICO = {minor: _TESTED_CALICO[minor] for minor in VERSIONS if _TESTED_CALICO[minor]}

# Top-level fields of each kubeadm kind, per configuration API version (kubernetes.io
# reference "kubeadm Configuration (v1beta3)" / "(v1beta4)"), and of the kubelet's
# KubeletConfiguration fields this project sets. kubeadm rejects unknown fields.
_INIT_V1BETA3 = {'apiVersion', 'kind', 'bootstrapTokens', 'nodeRegistration', 'localAPIEndpoint',
                 'certificateKey', 'skipPhases', 'patches'}
_CLUSTER_V1BETA3 = {'apiVersion', 'kind', 'etcd', 'networking', 'kubernetesVersion', 'controlPlaneEndpoint',
                    'apiServer', 'controllerManager', 'scheduler', 'dns', 'certificatesDir', 'imageRepository',
                    'featureGates', 'clusterName'}
KUBEADM_FIELDS = {
    'kubeadm.k8s.io/v1beta3': {
        'InitConfiguration': _INIT_V1BETA3,
        'ClusterConfiguration': _CLUSTER_V1BETA3,
    },
    'kubeadm.k8s.io/v1beta4': {
        'InitConfiguration': _INIT_V1BETA3 | {'dryRun', 'timeouts'},
        'ClusterConfiguration': _CLUSTER_V1BETA3 | {'proxy', 'encryptionAlgorithm', 'certificateValidityPeriod',
                                                    'caCertificateValidityPeriod'},
    },
}
NODE_REGISTRATION_FIELDS = {'name', 'criSocket', 'taints', 'kubeletExtraArgs', 'ignorePreflightErrors',
                            'imagePullPolicy', 'imagePullSerial'}
NETWORKING_FIELDS = {'serviceSubnet', 'podSubnet', 'dnsDomain'}
LOCAL_API_ENDPOINT_FIELDS = {'advertiseAddress', 'bindPort'}
UNKNOWN_MINOR_HOST = 'k8s-1-40'


def _host(minor, **extra):
    host = {
        'ansible_connection': 'local',
        'ipu_k8s_cluster_interface': 'eth0',
    }
    if VERSIONS.get(minor):
        host['ipu_k8s_kubernetes_version'] = VERSIONS[minor]
    if minor in VERSIONS and not _TESTED_CALICO[minor]:
        host['calico_version'] = PINNED_CALICO
    host.update(extra)
    return host


def _inventory(out):
    hosts = {f'k8s-{minor.replace(".", "-")}': _host(minor) for minor in VERSIONS}
    # Every knob a site may turn, to show values are carried and not hard-coded.
    hosts['custom'] = _host(
        '1.30',
        ipu_k8s_kubernetes_version='1.30.8',
        ipu_k8s_pod_subnet='172.20.0.0/16',
        ipu_k8s_service_subnet='172.21.0.0/20',
        kubeadm_control_plane_endpoint='k8s-api.example.internal:6443',
        kubeadm_image_repository='mirror.example.internal/k8s',
        kubeadm_api_server_port=8443,
        calico_encapsulation='IPIP',
        calico_mtu=8950,
        calico_nat_outgoing=False,
        calico_registry='mirror.example.internal/',
        calico_api_server=False,
        kubernetes_packages_revision='2.1',
    )
    # No cluster interface: Calico must follow the node's InternalIP. (kubeadm would take
    # this machine's default route, which a test must not depend on.)
    hosts['nodeip'] = _host('1.31', ipu_k8s_cluster_interface='', render_kubeadm=False)
    # An interface name with regex metacharacters.
    hosts['vlan'] = _host('1.31', ipu_k8s_cluster_interface='bond0.100', render_kubeadm=False)
    # A minor no Calico release is pinned for: refused with a message saying what to set.
    hosts[UNKNOWN_MINOR_HOST] = _host('1.31', ipu_k8s_kubernetes_version='1.40.0')
    for name, host in hosts.items():
        host_out = out / name
        host_out.mkdir()
        host['kubeadm_config_path'] = str(host_out / 'kubeadm' / 'kubeadm-config.yaml')
        host['calico_manifests_dir'] = str(host_out / 'calico')
    return {'all': {'hosts': hosts, 'vars': {'render_dir': str(out)}}}


def _inventory_hosts(out):
    return [p.name for p in out.iterdir() if p.is_dir()]


@pytest.fixture(scope='module')
def rendered(tmp_path_factory, node_netns):
    """Run the render playbook once for every host, in node_netns; return {host: {file: text, derived: {...}}}."""
    out = tmp_path_factory.mktemp('cluster-render')
    inventory = out / 'hosts.yml'
    inventory.write_text(yaml.safe_dump(_inventory(out)))
    run = _run(PLAYBOOK, inventory, tmp_path_factory.mktemp('cluster-render-runner'), netns=node_netns, timeout=300)
    failed = {host: stats['failures'] for host, stats in run.host_stats().items()}
    expected = {host: 0 for host in _inventory_hosts(out)}
    expected[UNKNOWN_MINOR_HOST] = 1
    expected.update({_host_name(minor): 1 for minor in VERSIONS if minor not in EXPECTED_CALICO})
    assert failed == expected, run.stdout[-6000:]
    result = {'_failures': run.failures(), '_stdout': run.stdout}
    for host_dir in out.iterdir():
        if not host_dir.is_dir() or host_dir.name in expected and expected[host_dir.name]:
            continue
        derived = json.loads((host_dir / 'derived.json').read_text())
        files = {
            'derived': derived,
            # calico_manifests_dir/<release>/custom-resources.yaml (the test inventory's calico_manifests_dir)
            'calico': (host_dir / 'calico' / derived['calico_version'] / 'custom-resources.yaml').read_text(),
        }
        kubeadm = host_dir / 'kubeadm' / 'kubeadm-config.yaml'
        if kubeadm.exists():
            files['kubeadm'] = kubeadm.read_text()
        result[host_dir.name] = files
    return result


def _host_name(minor):
    return f'k8s-{minor.replace(".", "-")}'


def _kubeadm_docs(rendered, host):
    docs = list(yaml.safe_load_all(rendered[host]['kubeadm']))
    return {doc['kind']: doc for doc in docs}


def _calico_docs(rendered, host):
    docs = [d for d in yaml.safe_load_all(rendered[host]['calico']) if d]
    return {doc['kind']: doc for doc in docs}


def _strict(schema):
    """The CRD schema with unknown fields forbidden wherever properties are listed."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if schema.get('type') == 'object' and 'properties' in schema and 'additionalProperties' not in schema:
            schema['additionalProperties'] = False
        return schema
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@pytest.fixture(scope='module')
def installation_validator():
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd['spec']['versions'] if v['name'] == 'v1')
    schema = _strict(version['schema']['openAPIV3Schema'])
    # metadata is an ObjectMeta in the API server; the CRD only says "object".
    schema['properties']['metadata'] = {'type': 'object'}
    return jsonschema.Draft7Validator(schema)


def test_rendering_works_in_check_mode_and_writes_nothing(tmp_path, node_netns):
    inventory = _inventory(tmp_path)
    inventory['all']['hosts'] = {'k8s-1-31': inventory['all']['hosts']['k8s-1-31']}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    # runner's own files (artifacts) go next to tmp_path, not into it
    run = _run(PLAYBOOK, tmp_path / 'hosts.yml', tmp_path.with_name(tmp_path.name + '-runner'), '--check', '--diff',
               netns=node_netns)
    assert run.rc == 0, run.stdout[-6000:]
    assert run.host_stats()['k8s-1-31']['changed'] > 0, run.stdout[-2000:]
    # Only what the test made itself: the inventory and the empty per-host directories.
    assert [p.name for p in tmp_path.rglob('*') if not p.is_dir()] == ['hosts.yml']
    assert not any((tmp_path / 'k8s-1-31').iterdir())


# --- kubeadm ---------------------------------------------------------------------------

@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_kubeadm_api_version_follows_the_kubernetes_minor(rendered, minor):
    docs = _kubeadm_docs(rendered, _host_name(minor))
    assert rendered[_host_name(minor)]['derived']['kubernetes_minor'] == minor
    assert docs['InitConfiguration']['apiVersion'] == EXPECTED_KUBEADM_API[minor]
    assert docs['ClusterConfiguration']['apiVersion'] == EXPECTED_KUBEADM_API[minor]


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_kubeadm_config_carries_version_and_networks(rendered, minor):
    cluster = _kubeadm_docs(rendered, _host_name(minor))['ClusterConfiguration']
    version = VERSIONS[minor] or SHARED_DEFAULTS['ipu_k8s_kubernetes_version']
    assert cluster['kubernetesVersion'] == f'v{version}'
    assert cluster['networking']['podSubnet'] == SHARED_DEFAULTS['ipu_k8s_pod_subnet']
    assert cluster['networking']['serviceSubnet'] == SHARED_DEFAULTS['ipu_k8s_service_subnet']
    assert 'controlPlaneEndpoint' not in cluster
    assert 'imageRepository' not in cluster


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_kubelet_uses_the_systemd_cgroup_driver(rendered, minor):
    kubelet = _kubeadm_docs(rendered, _host_name(minor))['KubeletConfiguration']
    assert kubelet == {
        'apiVersion': 'kubelet.config.k8s.io/v1beta1',
        'kind': 'KubeletConfiguration',
        'cgroupDriver': 'systemd',
    }


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_kubeadm_config_uses_only_fields_of_its_api_version(rendered, minor):
    docs = _kubeadm_docs(rendered, _host_name(minor))
    assert set(docs) == {'InitConfiguration', 'ClusterConfiguration', 'KubeletConfiguration'}
    api = docs['InitConfiguration']['apiVersion']
    for kind, allowed in KUBEADM_FIELDS[api].items():
        assert set(docs[kind]) <= allowed, f'{kind} {api}: unknown {set(docs[kind]) - allowed}'
    assert set(docs['InitConfiguration']['nodeRegistration']) <= NODE_REGISTRATION_FIELDS
    assert set(docs['InitConfiguration']['localAPIEndpoint']) <= LOCAL_API_ENDPOINT_FIELDS
    assert set(docs['ClusterConfiguration']['networking']) <= NETWORKING_FIELDS


def test_kubeadm_advertises_the_address_of_the_cluster_interface(rendered):
    init = _kubeadm_docs(rendered, _host_name('1.31'))['InitConfiguration']
    # ipu_k8s_cluster_interface is "eth0" in the test inventory: the address comes from
    # that interface's facts, gathered for real in node_netns (which gave eth0 10.20.0.5/24).
    assert init['localAPIEndpoint'] == {'advertiseAddress': '10.20.0.5', 'bindPort': 6443}
    assert init['nodeRegistration']['criSocket'] == 'unix:///var/run/containerd/containerd.sock'
    # The node registers under ipu_k8s_node_name, by default the inventory name.
    assert init['nodeRegistration']['name'] == _host_name('1.31')


@pytest.fixture(scope='module')
def node_netns():
    """A network namespace shaped like a Poplar server: the RDMA NIC (ens1f0, created first,
    in an RDMA-like subnet) and the cluster NIC (eth0) holding the default route. veth pairs
    with both ends inside the namespace; nothing is sent anywhere."""
    require_root('creates a network namespace')
    require(shutil.which('ip'), 'needs iproute2 (`ip`) to create a network namespace')
    name = f'ipuk8s-kadm-{os.getpid()}'
    commands = [
        ['ip', 'netns', 'add', name],
        ['ip', '-n', name, 'link', 'add', 'ens1f0', 'type', 'veth', 'peer', 'name', 'ens1f0p'],
        ['ip', '-n', name, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p'],
        ['ip', '-n', name, 'addr', 'add', '10.247.208.10/24', 'dev', 'ens1f0'],
        ['ip', '-n', name, 'addr', 'add', '10.20.0.5/24', 'dev', 'eth0'],
        *[['ip', '-n', name, 'link', 'set', dev, 'up'] for dev in ('lo', 'ens1f0', 'ens1f0p', 'eth0', 'eth0p')],
        ['ip', '-n', name, 'route', 'add', 'default', 'via', '10.20.0.1', 'dev', 'eth0'],
    ]
    try:
        for command in commands:
            subprocess.run(command, check=True, capture_output=True, text=True)
        yield name
    finally:
        subprocess.run(['ip', 'netns', 'del', name], check=False, capture_output=True)


def test_kubeadm_advertises_the_cluster_nic_not_the_rdma_nic(node_netns, tmp_path):
    inventory = _inventory(tmp_path)
    hosts = inventory['all']['hosts']
    # No cluster interface: the default route's interface. Pinned: that interface's address.
    selected = {
        'k8s-1-31': dict(hosts['k8s-1-31'], ipu_k8s_cluster_interface=''),
        'k8s-1-33': dict(hosts['k8s-1-33'], ipu_k8s_cluster_interface='ens1f0'),
        'k8s-1-30': dict(hosts['k8s-1-30'], ipu_k8s_cluster_interface='bond9'),
        'k8s-1-32': dict(hosts['k8s-1-32'], ipu_k8s_cluster_interface='lo'),
    }
    inventory['all']['hosts'] = selected
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    proc = _run(PLAYBOOK, tmp_path / 'hosts.yml', tmp_path.with_name(tmp_path.name + '-runner'), netns=node_netns,
                timeout=300)
    def advertised(host):
        config = tmp_path / host / 'kubeadm' / 'kubeadm-config.yaml'
        init = next(d for d in yaml.safe_load_all(config.read_text()) if d['kind'] == 'InitConfiguration')
        return init['localAPIEndpoint']['advertiseAddress']
    assert advertised('k8s-1-31') == '10.20.0.5', proc.stdout[-3000:]
    assert advertised('k8s-1-33') == '10.247.208.10'
    # A pinned interface that does not exist is refused, naming it and what to set.
    assert not (tmp_path / 'k8s-1-30' / 'kubeadm' / 'kubeadm-config.yaml').exists()
    assert 'k8s-1-30' in proc.failures(), proc.stdout[-3000:]
    message = ' '.join(proc.failures()['k8s-1-30'].split())
    assert 'ipu_k8s_cluster_interface=bond9 does not exist on k8s-1-30' in message
    # The loopback has an address, but no other node can reach it there.
    assert not (tmp_path / 'k8s-1-32' / 'kubeadm' / 'kubeadm-config.yaml').exists()
    message = ' '.join(proc.failures()['k8s-1-32'].split())
    assert 'ipu_k8s_cluster_interface=lo on k8s-1-32 is the loopback interface' in message


def test_kubeadm_config_carries_site_settings(rendered):
    docs = _kubeadm_docs(rendered, 'custom')
    cluster, init = docs['ClusterConfiguration'], docs['InitConfiguration']
    assert cluster['networking']['podSubnet'] == '172.20.0.0/16'
    assert cluster['networking']['serviceSubnet'] == '172.21.0.0/20'
    assert cluster['controlPlaneEndpoint'] == 'k8s-api.example.internal:6443'
    assert cluster['imageRepository'] == 'mirror.example.internal/k8s'
    assert cluster['kubernetesVersion'] == 'v1.30.8'
    assert init['localAPIEndpoint']['bindPort'] == 8443


# --- Calico ----------------------------------------------------------------------------

@pytest.mark.parametrize('host', [_host_name(m) for m in sorted(EXPECTED_CALICO)] + ['custom', 'nodeip', 'vlan'])
def test_calico_installation_validates_against_the_crd(rendered, installation_validator, host):
    installation = _calico_docs(rendered, host)['Installation']
    errors = sorted(installation_validator.iter_errors(installation), key=lambda e: list(e.path))
    assert not errors, '\n'.join(f'{list(e.path)}: {e.message}' for e in errors)
    assert installation['apiVersion'] == 'operator.tigera.io/v1'
    assert installation['metadata'] == {'name': 'default'}


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_calico_pool_is_the_pod_subnet(rendered, minor):
    network = _calico_docs(rendered, _host_name(minor))['Installation']['spec']['calicoNetwork']
    assert network['ipPools'] == [{
        'cidr': SHARED_DEFAULTS['ipu_k8s_pod_subnet'],
        'blockSize': 26,
        'encapsulation': 'VXLANCrossSubnet',
        'natOutgoing': 'Enabled',
        'nodeSelector': 'all()',
    }]
    assert 'mtu' not in network


def test_calico_carries_site_settings(rendered):
    docs = _calico_docs(rendered, 'custom')
    spec = docs['Installation']['spec']
    assert spec['registry'] == 'mirror.example.internal/'
    assert spec['calicoNetwork']['mtu'] == 8950
    pool = spec['calicoNetwork']['ipPools'][0]
    assert pool['cidr'] == '172.20.0.0/16'
    assert pool['encapsulation'] == 'IPIP'
    assert pool['natOutgoing'] == 'Disabled'
    assert 'APIServer' not in docs


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_calico_api_server_is_rendered_by_default(rendered, minor):
    api_server = _calico_docs(rendered, _host_name(minor))['APIServer']
    assert api_server == {'apiVersion': 'operator.tigera.io/v1', 'kind': 'APIServer',
                          'metadata': {'name': 'default'}, 'spec': {}}


def test_calico_detects_the_node_address_on_the_named_interface_only(rendered):
    detection = _calico_docs(rendered, _host_name('1.31'))['Installation']['spec']['calicoNetwork'][
        'nodeAddressAutodetectionV4']
    assert detection == {'interface': '^eth0$'}
    pattern = re.compile(detection['interface'])
    assert pattern.search('eth0')
    for other in ('eth0p', 'eth00', 'eth1', 'veth0', 'enp65s0f1np1'):
        assert not pattern.search(other), other


def test_calico_escapes_interface_names(rendered):
    detection = _calico_docs(rendered, 'vlan')['Installation']['spec']['calicoNetwork']['nodeAddressAutodetectionV4']
    pattern = re.compile(detection['interface'])
    assert pattern.search('bond0.100')
    assert not pattern.search('bond0x100')
    assert not pattern.search('bond0.1000')


def test_calico_follows_the_node_internal_ip_without_a_cluster_interface(rendered):
    detection = _calico_docs(rendered, 'nodeip')['Installation']['spec']['calicoNetwork']['nodeAddressAutodetectionV4']
    # One method only, and not firstFound/canReach, which can land on the RDMA NIC.
    assert detection == {'kubernetes': 'NodeInternalIP'}


def test_calico_refuses_a_kubernetes_minor_without_a_pinned_release(rendered):
    assert UNKNOWN_MINOR_HOST in rendered['_failures'], rendered['_stdout'][-3000:]
    message = ' '.join(rendered['_failures'][UNKNOWN_MINOR_HOST].split())
    assert 'No Calico release for Kubernetes 1.40' in message
    assert 'Set calico_version' in message


@pytest.mark.parametrize('minor', sorted(set(VERSIONS) - set(EXPECTED_CALICO)))
def test_calico_pinned_for_a_minor_its_release_does_not_document_is_refused(rendered, minor):
    message = ' '.join(rendered['_failures'][_host_name(minor)].split())
    assert 'calico_version is "%s", whose row in ipu_k8s_versions.calico documents Kubernetes' % PINNED_CALICO in message
    assert "not this cluster's %s" % minor in message


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_calico_release_and_manifests_follow_the_kubernetes_minor(rendered, minor):
    derived = rendered[_host_name(minor)]['derived']
    version = EXPECTED_CALICO[minor]
    assert derived['calico_version'] == version
    assert derived['calico_manifests_url'] == f'https://raw.githubusercontent.com/projectcalico/calico/{version}/manifests'
    expected = ['tigera-operator.yaml']
    if version >= 'v3.30':
        expected = ['operator-crds.yaml'] + expected
    assert derived['calico_manifests'] == expected


# --- Kubernetes packages -----------------------------------------------------------------

def _deb822(text):
    fields = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        key, _, value = line.partition(':')
        assert key and value.startswith(' '), f'not a deb822 field: {line!r}'
        fields[key] = value.strip()
    return fields


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_apt_repository_is_the_one_of_the_minor(rendered, minor):
    derived = rendered[_host_name(minor)]['derived']
    assert derived['kubernetes_packages_repo_url'] == f'https://pkgs.k8s.io/core:/stable:/v{minor}/deb/'
    assert derived['kubernetes_packages_key_url'] == f'https://pkgs.k8s.io/core:/stable:/v{minor}/deb/Release.key'


@pytest.mark.parametrize('minor', sorted(EXPECTED_CALICO))
def test_package_version_is_the_kubernetes_version_with_revision(rendered, minor):
    version = VERSIONS[minor] or SHARED_DEFAULTS['ipu_k8s_kubernetes_version']
    assert rendered[_host_name(minor)]['derived']['kubernetes_packages_version'] == f'{version}-1.1'
    assert rendered['custom']['derived']['kubernetes_packages_version'] == '1.30.8-2.1'


def _gpg(home, *args):
    return subprocess.run(['gpg', '--batch', '--homedir', str(home), *args], check=True, capture_output=True, text=True)


def _fingerprints(home, keyring):
    listing = _gpg(home, '--with-colons', '--show-keys', str(keyring)).stdout
    return [line.split(':')[9] for line in listing.splitlines() if line.startswith('fpr:')]


def _flat_repository(root, home):
    """A flat apt repository (Suites: /, as pkgs.k8s.io's) whose InRelease the key in home signs."""
    packages = ('Package: ipu-k8s-test\nVersion: 1.0\nArchitecture: all\nMaintainer: test <test@example.invalid>\n'
                'Filename: ipu-k8s-test_1.0_all.deb\nSize: 1\nDescription: test\n')
    (root / 'Packages').write_text(packages)
    release = (f'Origin: ipu-k8s test\nLabel: ipu-k8s test\nDate: {email.utils.formatdate(usegmt=True)}\n'
               f'SHA256:\n {hashlib.sha256(packages.encode()).hexdigest()} {len(packages)} Packages\n')
    (root / 'Release').write_text(release)
    _gpg(home, '--clearsign', '--output', str(root / 'InRelease'), str(root / 'Release'))


@pytest.fixture
def served_repository(tmp_path):
    """tmp_path/repo served on 127.0.0.1; yields (directory, URL)."""
    root = tmp_path / 'repo'
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f'http://127.0.0.1:{server.server_port}/'
    server.shutdown()
    server.server_close()
    thread.join()


def test_apt_repository_trusts_only_the_published_key(tmp_path, request, served_repository):
    """The real repository step (ipu_k8s apt_repository: key, keyring, deb822_repository, apt
    update) in a mount namespace whose /etc/apt/sources.list.d, package lists and apt cache are
    test directories; the repository is served on 127.0.0.1 and signed by a key made here (it
    stands in for pkgs.k8s.io's Release.key, copied from a local file): nothing else is fetched."""
    require_root('the files are root-owned and the apt directories are bind-mounted')
    require(shutil.which('gpg') and shutil.which('unshare') and os.path.isdir('/etc/apt/keyrings'),
            'needs gpg, unshare and /etc/apt/keyrings')
    installed = subprocess.run(['dpkg-query', '-W', '-f=${db:Status-Abbrev}', 'gpg', 'ca-certificates', 'python3-debian'],
                               capture_output=True, text=True, check=False).stdout
    require(installed.count('ii') == 3,
            'gpg, ca-certificates and python3-debian must be installed already (scripts/bootstrap), '
            'or apt would go to the network')
    home = tmp_path / 'gnupg'
    home.mkdir(mode=0o700)
    # gpg starts an agent for this home; stop it with the test.
    request.addfinalizer(lambda: subprocess.run(['gpgconf', '--homedir', str(home), '--kill', 'all'], check=False))
    _gpg(home, '--passphrase', '', '--quick-gen-key', 'ipu-k8s test key <test@example.invalid>', 'ed25519', 'sign',
         'never')
    release_key = tmp_path / 'Release.key'
    release_key.write_text(_gpg(home, '--armor', '--export').stdout)
    repo, url = served_repository
    _flat_repository(repo, home)
    sources, keyrings, lists, cache, empty = (tmp_path / name for name in (
        'sources.list.d', 'keyrings', 'lists', 'cache', 'sources.list'))
    for path in (sources, keyrings, lists / 'partial', cache / 'archives' / 'partial'):
        path.mkdir(parents=True)
    empty.write_text('')
    legacy = sources / 'kubernetes.list'
    legacy.write_text('deb https://apt.kubernetes.io/ kubernetes-xenial main\n')
    entry_path = sources / 'kubernetes.sources'
    # apt reads the keyring as _apt: through /etc/apt/keyrings, not through tmp_path (0700).
    wrap = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
            'mount --bind "$1" /etc/apt/sources.list.d && mount --bind "$2" /etc/apt/keyrings'
            ' && mount --bind "$3" /var/lib/apt/lists && mount --bind "$4" /var/cache/apt'
            ' && { [ ! -e /etc/apt/sources.list ] || mount --bind "$5" /etc/apt/sources.list; }'
            ' && shift 5 && exec "$@"', 'sh', str(sources), str(keyrings), str(lists), str(cache), str(empty)]
    # the role's default keyring, /etc/apt/keyrings/kubernetes-apt-keyring.gpg, seen here as
    keyring = keyrings / 'kubernetes-apt-keyring.gpg'
    inventory = tmp_path / 'hosts.yml'
    playbook = str(ROOT / 'tests' / 'render' / 'cluster' / 'repository.yml')

    def run(*args, fingerprints=None):
        inventory.write_text(yaml.safe_dump({'all': {'hosts': {'node': {
            'ansible_connection': 'local',
            # python3-debian (deb822_repository) and python3-apt are the system's
            'ansible_python_interpreter': '/usr/bin/python3',
            'kubernetes_packages_repo_url': url,
            'kubernetes_packages_key_local_path': str(release_key),
            'kubernetes_packages_key_fingerprints': fingerprints or _fingerprints(home, release_key),
            'kubernetes_packages_legacy_sources': [str(legacy)],
        }}}}))
        done = _run(playbook, inventory, tmp_path / 'runner', *args, wrap=wrap)
        if fingerprints:
            return done
        assert done.rc == 0, done.stdout[-4000:]
        return done.host_stats()['node']['changed']

    # A key whose fingerprint is not the published one is never trusted.
    refused = run(fingerprints=['A' * 40])
    assert refused.rc != 0
    assert any('kubernetes_packages_key_fingerprints' in m for m in refused.failure_messages()), refused.stdout[-3000:]
    assert not keyring.exists() and not entry_path.exists()
    # Check mode on the new host fetches and writes nothing, and says what it would change.
    assert run('--check') > 0
    assert not keyring.exists() and not entry_path.exists()
    assert run() > 0
    assert not legacy.exists()
    # A binary keyring holding exactly the key that was served armoured.
    assert not keyring.read_bytes().startswith(b'-----BEGIN')
    assert _fingerprints(home, keyring) == _fingerprints(home, release_key)
    assert oct(keyring.stat().st_mode & 0o777) == '0o644'
    entry = _deb822(entry_path.read_text())
    assert {k: entry[k] for k in ('Types', 'URIs', 'Suites', 'Signed-By')} == {
        'Types': 'deb', 'URIs': url, 'Suites': '/', 'Signed-By': '/etc/apt/keyrings/kubernetes-apt-keyring.gpg'}
    # apt accepted the repository through that keyring: its index is in the package lists.
    indexes = sorted(p.name for p in lists.iterdir())
    assert any(name.startswith('127.0.0.1') and '_Packages' in name for name in indexes), indexes
    # Idempotent, and check mode on the configured host has nothing to do either.
    assert run() == 0
    assert run('--check', '--diff') == 0
    # A run killed after the entry was written but before apt update: the entry is in place,
    # the lists lack the repository. The next run refreshes them; the one after has nothing to do.
    for path in lists.iterdir():
        if path.name.startswith('127.0.0.1'):
            path.unlink()
    assert run() > 0
    indexes = sorted(p.name for p in lists.iterdir())
    assert any(name.startswith('127.0.0.1') and '_Packages' in name for name in indexes), indexes
    assert run() == 0


def test_roles_never_use_the_legacy_repository_or_apt_key():
    for role in ('kubernetes_packages', 'kubeadm', 'calico'):
        for path in (ROOT / 'roles' / role).rglob('*'):
            if path.is_file() and path.parent.name in ('tasks', 'templates', 'vars', 'defaults', 'handlers'):
                # Comments may say why the legacy repository is not used; code may not use it.
                text = '\n'.join(line for line in path.read_text().splitlines() if not line.lstrip().startswith('#'))
                assert 'apt.kubernetes.io' not in text, path
                assert 'packages.cloud.google.com' not in text, path
                assert not re.search(r'\bapt[-_]key\b', text), path


# --- Playbooks -------------------------------------------------------------------------

def _run(playbook, inventory, work_dir, *args, netns=None, wrap=None, timeout=120):
    """A playbook run through ansible-runner (tests/playbook_runner.py): stats and failures
    come from its events."""
    env = {'ANSIBLE_PYTHON_INTERPRETER': sys.executable, 'ANSIBLE_PIPELINING': 'True'}
    return run_playbook(playbook, inventory, work_dir, envvars=env, cmdline=list(args), netns=netns, wrap=wrap,
                        timeout=timeout)


def _playbook(*args):
    """ansible-playbook itself, for what is not a run (--syntax-check, --list-hosts, --list-tags)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_PIPELINING='True')
    return subprocess.run([ANSIBLE_PLAYBOOK, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_cluster_and_nodes_playbooks_pass_syntax_check():
    proc = _playbook('--syntax-check', 'playbooks/nodes.yml', 'playbooks/cluster.yml')
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cluster_playbook_inits_first_then_joins_control_planes_then_workers(tmp_path):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {
        'k8s_cluster': {'children': {
            'control_plane': {'hosts': {'cp1': None, 'cp2': None, 'cp3': None}},
            'workers': {'hosts': {'w1': None, 'w2': None}},
        }},
        'ipu_nodes': {'hosts': {'w1': None, 'w2': None}},
    }}}))
    proc = _playbook('-i', str(inventory), '--list-hosts', '--list-tags', 'playbooks/cluster.yml')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plays = []
    # After the settings check every step opens with (playbooks/settings.yml, all five hosts).
    gate, *blocks = proc.stdout.split('play #')[1:]
    assert 'Check the settings (without preflight)' in gate and 'TAGS: [always]' in gate, gate
    for block in blocks:
        pattern = re.match(r'\d+ \(([^)]*)\)', block).group(1)
        play_tags = re.search(r'\sTAGS: \[([^\]]*)\]', block).group(1).split(', ')
        hosts = re.search(r'hosts \(\d+\):\n((?:[ ]{6}[^ \n]+\n)+)', block).group(1).split()
        task_tags = re.search(r'TASK TAGS: \[([^\]]*)\]', block).group(1).split(', ')
        plays.append((pattern, sorted(hosts), play_tags, task_tags))
    assert [p[:2] for p in plays] == [
        ('control_plane[0]', ['cp1']),
        ('control_plane[1:]', ['cp2', 'cp3']),
        ('k8s_cluster:!control_plane', ['w1', 'w2']),
    ]
    assert all(p[2] == ['cluster'] for p in plays)
    assert {'kubeadm', 'calico'} <= set(plays[0][3])
    assert 'kubeadm' in plays[1][3] and 'calico' not in plays[1][3]
    assert 'kubeadm' in plays[2][3] and 'calico' not in plays[2][3]


def test_nodes_playbook_tags_each_role(tmp_path):
    proc = _playbook('--list-tags', 'playbooks/nodes.yml')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The play that prepares the nodes (the one before it checks the settings when run alone).
    block = proc.stdout.split('Prepare the Kubernetes nodes', 1)[1]
    tags = re.search(r'TASK TAGS: \[([^\]]*)\]', block).group(1).split(', ')
    for tag in ('nodes', 'node_prep', 'containerd', 'kubernetes_packages'):
        assert tag in tags


def test_site_yml_holds_each_roles_settings_check_once():
    # The steps' settings plays (playbooks/settings.yml) include the checks when a host needs
    # them; site.yml's preflight holds the one static copy. Imported, each of site.yml's six
    # settings plays would load every role again (77 copies of the validate tasks instead of 11).
    proc = _playbook('-i', 'inventories/gcore/hosts.yml', '--list-tasks', 'site.yml')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tasks = yaml.safe_load((ROOT / 'roles/preflight/tasks/variables.yml').read_text())
    imports = [t for t in tasks if 'ansible.builtin.import_role' in t]
    checked = {t['ansible.builtin.import_role']['name'] for t in imports}
    # each role's validate tasks, by the first one's name, listed once
    first = {role: yaml.safe_load((ROOT / 'roles' / role / 'tasks/validate.yml').read_text())[0]['name']
             for role in checked}
    listed = {role: len(re.findall(r'^\s+%s : %s\s+TAGS:' % (role, re.escape(name)), proc.stdout, re.M))
              for role, name in first.items()}
    assert len(checked) > 10 and set(listed.values()) == {1}, listed
    # The types of every role's settings: one task of preflight, for the roles imported, instead
    # of one per role, which rolespec_validate: false keeps Ansible from adding.
    [types] = [t for t in tasks if 'preflight_setting_types' in t]
    assert set(types['preflight_setting_types']['roles']) == checked
    assert all(t['ansible.builtin.import_role'].get('rolespec_validate') is False for t in imports), imports
    assert len(re.findall(r'^\s+preflight : %s\s+TAGS:' % re.escape(types['name']), proc.stdout, re.M)) == 1
    assert not re.findall(r"^\s+\w+ : Validating arguments against arg spec 'validate'", proc.stdout, re.M)
