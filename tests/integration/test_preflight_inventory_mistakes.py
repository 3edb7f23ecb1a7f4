"""Each inventory mistake about the cluster settings is refused by the real playbooks/preflight.yml.

The run happens inside a network namespace this module builds, so the node's facts are
known: mgmt0 10.200.0.2/24 with the default route via 10.200.0.1 (the cluster network),
down0 10.201.0.2/24 administratively down, bare0 up without an address. Every host of the
inventory is this namespace over the local connection. The OS checks are skipped (a CI
container is not a node; the VM lab runs them); there are no ipu_nodes, so no RDMA derivation.

For each mistake (read from the run's ansible-runner events): ansible-playbook exits non-zero, the
mistake's host fails with one message (naming the setting, the bad value and the fix), and no host
reports a change.

The mistakes share runs (BATCHES), one run per batch the first time a case of it is tested.
The play has any_errors_fatal, so a run stops after the first task that fails: the cases of a
batch are refused by one task. A task that runs on every host with that host's values (kubeadm's,
Calico's, containerd's and verify's validate, the cluster interface) takes one case per host
(PER_HOST), each case's message read from its own host's failure. A run_once task reads the first
host's values only: its batch is one host carrying the settings of several cases, each a setting
the rule reports as a problem of its own (the task joins them into its one message), so each case
still finds its setting and value named. A rule that gives one answer for several settings (the
cluster networks, a chart's row, the V-IPU list and the node label, Helm's row and checksum) takes
one case per batch. Rules that compare hosts or count them (one release, one node name and one
cluster address per host, the control-plane endpoint of several control planes, the pod subnet's
size for the nodes) and the runs that must pass keep runs of their own.
"""
import hashlib
import shutil

import pytest
import yaml

from netns_lab import ROOT, SITE_PINS, local_host, run_playbook
from testlib import make_gpg_key, require

PREFLIGHT = ROOT / 'playbooks' / 'preflight.yml'


@pytest.fixture(scope='module')
def node(netns_factory):
    namespace = netns_factory('pfnode')
    # veth pairs with both ends in this namespace (no dummy driver needed): the peer keeps
    # the carrier up.
    namespace.ip('link add mgmt0 type veth peer name mgmt0-peer', 'addr add 10.200.0.2/24 dev mgmt0',
                 'link set mgmt0-peer up', 'link set mgmt0 up', 'route add default via 10.200.0.1 dev mgmt0',
                 'link add down0 type veth peer name down0-peer', 'addr add 10.201.0.2/24 dev down0',
                 'link add bare0 type veth peer name bare0-peer', 'link set bare0-peer up', 'link set bare0 up')
    return namespace


def run_preflight(node, tmp_path, hosts=None, control_plane=None, **group_vars):
    """Preflight on hosts ({name: hostvars}; default one host) with group_vars for all ->
    (returncode, failure messages, stats) of preflight_run."""
    run = preflight_run(node, tmp_path, hosts, control_plane, **group_vars)
    return run.rc, set(run.failure_messages()), run.stats


def preflight_run(node, tmp_path, hosts=None, control_plane=None, **group_vars):
    """Preflight on hosts ({name: hostvars}; default one host) with group_vars for all.

    control_plane: the control-plane hosts (default the first); the others are workers.
    """
    hosts = hosts or {'poplar-01': {}}
    control_plane = control_plane or list(hosts)[:1]
    inventory = {'all': {
        'vars': group_vars,
        'hosts': {name: local_host(**hostvars) for name, hostvars in hosts.items()},
        'children': {
            'k8s_cluster': {'children': {
                'control_plane': {'hosts': {name: None for name in control_plane}},
                'workers': {'hosts': {name: None for name in hosts if name not in control_plane}}}},
            'ipu_nodes': {'hosts': {}}}}}
    return run_playbook(node, PREFLIGHT, inventory, tmp_path, env={'ANSIBLE_SKIP_TAGS': 'preflight_os'})


# The batches' hosts: every one is the node namespace over the local connection; the first is
# the control plane, the others workers.
HOSTS = ['poplar-%02d' % number for number in range(1, 16)]
# Batches whose rule runs on every host: one case per host. Any other batch is one host
# carrying every case's settings.
PER_HOST = {'cluster_interface', 'calico', 'kubeadm', 'containerd', 'verify'}
BATCHES = {}


def mistake(batch, **settings):
    """One case: its settings join the batch's run (at import, so the run holds every case of
    its batch whichever test asks first) -> (batch, settings)."""
    cases = BATCHES.setdefault(batch, [])
    assert batch in PER_HOST or not any(set(settings) & set(case) for case in cases), \
        'two cases of one-host batch %s set %s' % (batch, sorted(settings))
    assert len(cases) < len(HOSTS), 'batch %s has more cases than HOSTS has hosts' % batch
    cases.append(settings)
    return batch, settings


def cases(*rows):
    """Parameters (case, *expected) of rows (batch, name, value, *expected), named name-value."""
    return [pytest.param(mistake(batch, **{name: value}), *expected,
                         id='%s-%s' % (name, value if isinstance(value, (str, int)) else index))
            for index, (batch, name, value, *expected) in enumerate(rows)]


@pytest.fixture(scope='module')
def batch_runs(node, tmp_path_factory):
    """batch -> ({host: settings}, the run of preflight on them), each batch run once."""
    runs = {}

    def run(batch):
        if batch not in runs:
            if batch in PER_HOST:
                hosts = dict(zip(HOSTS, BATCHES[batch]))
            else:
                hosts = {HOSTS[0]: {name: value for case in BATCHES[batch] for name, value in case.items()}}
            runs[batch] = hosts, preflight_run(node, tmp_path_factory.mktemp(batch), hosts)
        return runs[batch]
    return run


def batched(batch_runs, case):
    """(returncode, failure messages of the case's host, stats of every host) of the case's
    batch run, and the case's host."""
    batch, settings = case
    hosts, run = batch_runs(batch)
    host = HOSTS[BATCHES[batch].index(settings)] if batch in PER_HOST else HOSTS[0]
    return (run.rc, set(run.host_failure_messages(host)), run.stats), host


def assert_batch_refused(batch_runs, case, *needles):
    """assert_refused on the case's host in its batch run; '{host}' in a needle is that host."""
    run, host = batched(batch_runs, case)
    return assert_refused(run, *(needle.replace('{host}', host) for needle in needles))


def assert_refused(run, *needles):
    returncode, messages, stats = run
    assert returncode != 0, 'preflight passed'
    assert len(messages) == 1, 'expected one message, got: %s' % sorted(messages)
    message = messages.pop()
    for needle in needles:
        assert needle in message, message
    assert all(host['changed'] == 0 for host in stats.values()), stats
    return message


def test_good_inventory_passes_with_no_change(node, tmp_path):
    run = preflight_run(node, tmp_path)
    assert run.rc == 0 and not run.failure_messages(), run.failure_messages()
    assert run.stats['poplar-01']['changed'] == 0 and run.stats['poplar-01']['failures'] == 0
    # The default test pod image is given by tag (roles/verify/defaults/main.yml): a notice,
    # not a refusal; the perftest image is not named, for its test is off by default.
    pinning = [w for w in run.run.warnings() if 'by tag alone' in w]
    assert len(pinning) == 1 and pinning[0].startswith('verify_test_pod_image is "docker.io/nicolaka/netshoot:'), \
        run.run.warnings()


PATCH_THE_SOURCE_LACKS = mistake('package_source', ipu_k8s_kubernetes_version='1.31.99')


def test_kubernetes_patch_the_package_source_lacks_is_refused(batch_runs):
    # The site's source (SITE_PINS: tests/fixtures/kubernetes-packages) lists 1.31.14 only.
    assert_batch_refused(batch_runs, PATCH_THE_SOURCE_LACKS,
                         'ipu_k8s_kubernetes_version=1.31.99', 'kubeadm 1.31.99-1.1 is not in the package source',
                         '1.31.14-1.1')


FLOAT_KUBERNETES_VERSION = mistake('controllers', ipu_k8s_kubernetes_version=1.30)


def test_yaml_float_kubernetes_version_gets_a_message_not_a_python_error(batch_runs):
    message = assert_batch_refused(batch_runs, FLOAT_KUBERNETES_VERSION,
                                   'ipu_k8s_kubernetes_version is the number 1.3', 'Quote it')
    assert 'Traceback' not in message and 'has no attribute' not in message

MINOR_NOBODY_CAN_INSTALL = mistake('controllers-2', ipu_k8s_kubernetes_version='1.22.17')


def test_kubernetes_minor_nobody_can_install_is_refused(batch_runs):
    assert_batch_refused(batch_runs, MINOR_NOBODY_CAN_INSTALL,
                         'ipu_k8s_kubernetes_version=1.22.17', 'can no longer be installed', 'pkgs.k8s.io')


def test_different_kubernetes_versions_on_different_hosts_are_refused(node, tmp_path):
    hosts = {'poplar-01': {}, 'poplar-02': {'ipu_k8s_kubernetes_version': '1.31.14'}}
    assert_refused(run_preflight(node, tmp_path, hosts=hosts),
                   'ipu_k8s_kubernetes_version differs between hosts', '1.31.14 on poplar-02')


def test_two_hosts_under_one_node_name_are_refused(node, tmp_path):
    hosts = {'poplar-01': {}, 'poplar-02': {'ipu_k8s_node_name': 'poplar-01'}}
    assert_refused(run_preflight(node, tmp_path, hosts=hosts),
                   'ipu_k8s_node_name=poplar-01', 'poplar-01 and poplar-02')


def test_two_hosts_with_one_cluster_address_are_refused(node, tmp_path):
    # Both hosts are this namespace: the same mgmt0 address, as two cloned VMs would have.
    hosts = {'poplar-01': {}, 'poplar-02': {}}
    assert_refused(run_preflight(node, tmp_path, hosts=hosts),
                   'poplar-01 and poplar-02 have the same cluster address 10.200.0.2')


INVALID_NODE_NAME = mistake('ipu_k8s-3', ipu_k8s_node_name='Poplar_01')


def test_invalid_node_name_is_refused(batch_runs):
    assert_batch_refused(batch_runs, INVALID_NODE_NAME,
                         'ipu_k8s_node_name=Poplar_01', 'not a valid Kubernetes node name')


@pytest.mark.parametrize('case,needles', cases(
    ('cluster_interface', 'ipu_k8s_pod_subnet', '10.200.0.0/16',
     ('ipu_k8s_pod_subnet=10.200.0.0/16 overlaps the network of mgmt0', '10.200.0.2/24')),
    ('cluster_interface', 'ipu_k8s_service_subnet', '10.192.0.0/12',
     ('ipu_k8s_service_subnet=10.192.0.0/12 overlaps the network of mgmt0', '10.200.0.2/24')),
))
def test_cluster_network_overlapping_the_nodes_own_network_is_refused(batch_runs, case, needles):
    assert_batch_refused(batch_runs, case, *needles)


POD_SUBNET_TOO_SMALL = mistake('pod_subnet_capacity', ipu_k8s_pod_subnet='192.168.0.0/28')


def test_pod_subnet_too_small_for_the_nodes_is_refused(batch_runs):
    assert_batch_refused(batch_runs, POD_SUBNET_TOO_SMALL,
                         'ipu_k8s_pod_subnet=192.168.0.0/28 is too small', 'calico_block_size', '/24 or larger')


@pytest.mark.parametrize('case,needles', cases(
    ('ipu_k8s', 'ipu_k8s_pod_subnet', '192.168.0.1/16', ('ipu_k8s_pod_subnet=192.168.0.1/16 has host bits set',)),
    ('ipu_k8s-2', 'ipu_k8s_service_subnet', '10.0.0.0/8', ('ipu_k8s_service_subnet=10.0.0.0/8 is too large',)),
    ('ipu_k8s-3', 'ipu_k8s_service_subnet', '10.96.0.0/12 ', ('ipu_k8s_service_subnet=10.96.0.0/12 ',)),
    ('calico', 'calico_block_size', 18, ('calico_block_size=18 is outside',)),
    ('calico', 'calico_registry', 'registry.example.com',
     ('calico_registry is "registry.example.com"', 'ending with "/"')),
    ('kubeadm', 'kubeadm_control_plane_endpoint', 'https://k8s-api.example.com:6443',
     ('kubeadm_control_plane_endpoint="https://k8s-api.example.com:6443"', 'without a scheme')),
    ('kubeadm', 'kubeadm_api_server_port', 70000, ('kubeadm_api_server_port=70000', 'must be 1-65535')),
))
def test_bad_cluster_setting_is_refused_naming_it(batch_runs, case, needles):
    assert_batch_refused(batch_runs, case, *needles)


POD_AND_SERVICE_OVERLAP = mistake('ipu_k8s-4', ipu_k8s_pod_subnet='10.96.0.0/16')


def test_pod_and_service_networks_overlapping_each_other_are_refused(batch_runs):
    assert_batch_refused(batch_runs, POD_AND_SERVICE_OVERLAP,
                         'ipu_k8s_pod_subnet=10.96.0.0/16 and ipu_k8s_service_subnet=10.96.0.0/12 overlap')


@pytest.mark.parametrize('case,needle', cases(
    ('cluster_interface', 'ipu_k8s_cluster_interface', 'lo',
     'ipu_k8s_cluster_interface=lo on {host} is the loopback interface'),
    ('cluster_interface', 'ipu_k8s_cluster_interface', 'down0',
     'ipu_k8s_cluster_interface=down0 on {host} is down'),
    ('cluster_interface', 'ipu_k8s_cluster_interface', 'bare0',
     'ipu_k8s_cluster_interface=bare0 on {host} has no IPv4 address'),
    ('cluster_interface', 'ipu_k8s_cluster_interface', 'eth9',
     'ipu_k8s_cluster_interface=eth9 does not exist on {host}'),
))
def test_cluster_interface_that_cannot_carry_the_cluster_is_refused(batch_runs, case, needle):
    assert_batch_refused(batch_runs, case, needle)


def test_several_control_planes_without_an_endpoint_are_refused(node, tmp_path):
    # The kubeadm rule, run by preflight: two control-plane hosts need a shared endpoint.
    hosts = {'poplar-01': {}, 'poplar-02': {}}
    assert_refused(run_preflight(node, tmp_path, hosts=hosts, control_plane=list(hosts)),
                   'kubeadm_control_plane_endpoint')


def default_chart_row():
    """The ipu_k8s_versions.network_operator row that serves the default Kubernetes minor."""
    minor = yaml.safe_load((ROOT / 'roles/ipu_k8s/defaults/main/main.yml').read_text())['ipu_k8s_kubernetes_version'].split('.')[1]
    table = yaml.safe_load((ROOT / 'roles/ipu_k8s/defaults/main/versions.yml').read_text())['ipu_k8s_versions'][
        'network_operator']
    return next(dict(row, chart_version=version) for version, row in table.items() if 'kubernetes_min' in row
                and int(row['kubernetes_min'].split('.')[1]) <= int(minor) <= int(row['kubernetes_max'].split('.')[1]))


CHART_WITHOUT_CHECKSUM = mistake('network_operator', network_operator_chart_sha256='')


def test_network_operator_release_without_a_checksum_is_refused(batch_runs):
    # The default Kubernetes release takes a network-operator release from NGC, which
    # publishes no digest: a site that has not pinned the archive's sha256 is stopped before step 2.
    row = default_chart_row()
    assert not row.get('sha256')
    assert_batch_refused(batch_runs, CHART_WITHOUT_CHECKSUM,
                         'network-operator %s comes from https://helm.ngc.nvidia.com/nvidia' % row['chart_version'],
                         'network_operator_chart_sha256 is empty',
                         'sha256sum network-operator-%s.tgz' % row['chart_version'],
                         'network_operator_chart_local_path')


CHART_CHECKSUM_NOT_ONE = mistake('network_operator-2', network_operator_chart_sha256='sha256:abc')


def test_network_operator_checksum_that_is_not_one_is_refused(batch_runs):
    assert_batch_refused(batch_runs, CHART_CHECKSUM_NOT_ONE,
                         'network_operator_chart_sha256 is "sha256:abc"', '64 lowercase hex digits')

# Every role's own rules (its validate entry point), run by preflight before step 2.
@pytest.mark.parametrize('case,needles', cases(
    ('ipu_operator-2', 'ipu_operator_chart_version', '9.9.9',
     ('ipu_operator_chart_version is "9.9.9", which has no row', 'ipu_k8s_versions.ipu_operator')),
    ('ipu_operator', 'ipu_operator_extra_values', {'global': {'vipuControllers': 'pod1'}},
     ('ipu_operator_extra_values sets global.vipuControllers', 'Remove it')),
    ('ipu_operator', 'ipu_operator_kube_rbac_proxy_image', 'proxy image=1',
     ('ipu_operator_kube_rbac_proxy_image is "proxy image=1"',)),
    # Shell quoting closed inside the value: refused as not an image reference.
    ('ipu_operator-2', 'ipu_operator_kube_rbac_proxy_image',
     "registry.k8s.io/x:v1'$(touch${IFS}/tmp/ipu-k8s-preflight-ran)'",
     ('ipu_operator_kube_rbac_proxy_image is "registry.k8s.io/x:v1\'$(touch${IFS}/tmp/ipu-k8s-preflight-ran)\'"',
      'not an image reference')),
    ('network_operator-3', 'network_operator_chart_version', '99.1.0',
     ('network_operator_chart_version 99.1.0 is not a row', 'Add a row')),
    ('containerd', 'containerd_limit_memlock', 'lots', ('containerd_limit_memlock is "lots"', 'infinity')),
    # Names verify's probes pass to ip, ctr and the CNI plugin as arguments.
    ('verify', 'verify_datapath_netns', '../../etc',
     ('verify_datapath_netns is "../../etc"', 'network namespace name')),
    ('verify', 'verify_datapath_link', '-force', ('verify_datapath_link is "-force"', 'Linux interface name')),
    ('verify', 'verify_datapath_link', 'ipuk8sverify0000', ('verify_datapath_link is "ipuk8sverify0000"', '1 to 15')),
    ('kubernetes_packages', 'kubernetes_packages_debs_sha256', {'kubeadm_1.31.14-1.1_amd64.deb': 'sha256:' + 'a' * 64},
     ('kubernetes_packages_debs_sha256 gives', 'without a "sha256:" prefix')),
    ('containerd', 'containerd_docker_gpg_key_local_path', 'keys/docker.asc',
     ('containerd_docker_gpg_key_local_path is "keys/docker.asc"', 'absolute path')),
    ('controllers', 'ipu_k8s_vipu_controllers', [{'name': 'pod1', 'host': '10.247.208.5', 'label': 'ipunode'}],
     ("ipu_k8s_vipu_controllers[0] (pod1): label 'ipunode' is not key=value",)),
    ('controllers-2', 'ipu_k8s_vipu_controllers', [{'name': 'pod1', 'host': '10.247.208.5:8090'}],
     ('ipu_k8s_vipu_controllers[0] (pod1)', '10.247.208.5:8090')),
))
def test_each_roles_own_rule_is_refused_at_preflight(batch_runs, case, needles):
    assert_batch_refused(batch_runs, case, *needles)


# What a value means, by kind: image references (distribution/reference grammar), Kubernetes
# and Helm names, durations with a unit, positive seconds.
@pytest.mark.parametrize('case,needles', cases(
    ('containerd', 'containerd_sandbox_image', 'registry.k8s.io/Pause:3.10',
     ('containerd_sandbox_image is "registry.k8s.io/Pause:3.10", which is not an image reference',)),
    ('ipu_operator', 'ipu_operator_smoke_image', 'graphcore/pytorch-tutorials:3.0.0@sha256:abc',
     ('ipu_operator_smoke_image is "graphcore/pytorch-tutorials:3.0.0@sha256:abc", which is not an image reference',
      '@sha256:<64 hex digits>')),
    ('verify', 'verify_test_pod_image', "docker.io/nicolaka/netshoot:v0.13'$(id)'",
     ('verify_test_pod_image is "docker.io/nicolaka/netshoot:v0.13\'$(id)\'", which is not an image reference',)),
    ('kubeadm', 'kubeadm_image_repository', 'registry.example.com/k8s:v1.31',
     ('kubeadm_image_repository is "registry.example.com/k8s:v1.31", which is not an image repository',)),
    ('ipu_k8s', 'ipu_k8s_rdma_network_name', 'rdma_net',
     ('ipu_k8s_rdma_network_name is "rdma_net", which is not a valid Kubernetes name', 'e.g. rdma-net')),
    ('ipu_k8s', 'ipu_k8s_ipu_operator_namespace', 'IPU-Operator',
     ('ipu_k8s_ipu_operator_namespace is "IPU-Operator", which is not a valid Kubernetes name', 'e.g. ipu-operator')),
    ('ipu_k8s', 'ipu_k8s_wait_poll_seconds', 0,
     ('ipu_k8s_wait_poll_seconds is "0": give a positive whole number of seconds',)),
    ('ipu_k8s-2', 'ipu_k8s_network_operator_release', 'network-operator-' + 'x' * 40,
     ('ipu_k8s_network_operator_release is "network-operator-%s", which is not a valid Helm release name' % ('x' * 40),
      'at most 53')),
    ('ipu_operator', 'ipu_operator_helm_timeout', '600',
     ('ipu_operator_helm_timeout is "600", which is not a duration', '"10m"')),
    ('kubeadm', 'kubeadm_join_token_ttl', '15', ('kubeadm_join_token_ttl is "15", which is not a duration', '(15s?)')),
    ('calico', 'calico_wait_timeout', 0, ('calico_wait_timeout is "0": give a positive whole number of seconds',)),
    ('ipu_operator', 'ipu_operator_verify_timeout', -5,
     ('ipu_operator_verify_timeout is "-5": give a positive whole number',)),
    ('ipu_operator', 'ipu_operator_webhook_cert_renew_days', 0,
     ('ipu_operator_webhook_cert_renew_days is "0": give a positive whole number of days',)),
    ('network_operator-3', 'network_operator_wait_timeout', -1,
     ('network_operator_wait_timeout is "-1": give a positive whole number of seconds, without a unit (e.g. 300).',)),
    ('rdma_network', 'rdma_network_wait_timeout', -1,
     ('rdma_network_wait_timeout is "-1": give a positive whole number of seconds, without a unit (e.g. 300).',)),
    ('verify', 'verify_test_pod_timeout', 0,
     ('verify_test_pod_timeout is "0": give a positive whole number of seconds',)),
    # ping -c 0 never stops (iputils): a count is a positive whole number too.
    ('verify', 'verify_datapath_ping_count', 0,
     ('verify_datapath_ping_count is "0": give a positive whole number of repetitions',)),
    ('controllers-4', 'ipu_k8s_ipu_node_label', 'ipunode=' + 'p' * 64,
     ("ipu_k8s_ipu_node_label 'ipunode=%s' has an invalid Kubernetes label value" % ('p' * 64), 'at most 63')),
))
def test_a_value_that_does_not_mean_what_its_setting_needs_is_refused(batch_runs, case, needles):
    assert_batch_refused(batch_runs, case, *needles)


# The default Kubernetes release is 1.35 (roles/ipu_k8s/defaults/main/main.yml); the rows are
# those of ipu_k8s_versions (roles/ipu_k8s/defaults/main/versions.yml).
@pytest.mark.parametrize('case,message', cases(
    ('network_operator-4', 'network_operator_chart_version', '25.4.0',
     'network_operator_chart_version is "25.4.0", whose row in ipu_k8s_versions.network_operator serves Kubernetes 1.29 '
     'to 1.32, not this cluster\'s 1.35 (ipu_k8s_kubernetes_version): Leave network_operator_chart_version unset '
     '(remove it from the inventory) and the table picks 26.4.1 for Kubernetes 1.35, or choose a Kubernetes release '
     'from 1.29 to 1.32.'),
    ('calico', 'calico_version', 'v3.30.7',
     'calico_version is "v3.30.7", whose row in ipu_k8s_versions.calico serves Kubernetes 1.30 to 1.33, not this '
     'cluster\'s 1.35 (ipu_k8s_kubernetes_version): Leave calico_version unset (remove it from the inventory) and '
     'the table picks v3.31.7 for Kubernetes 1.35, or choose a Kubernetes release from 1.30 to 1.33.'),
))
def test_pinned_release_outside_its_rows_kubernetes_range_is_refused(batch_runs, case, message):
    assert assert_batch_refused(batch_runs, case) == message


CALICO_WITHOUT_SHA256 = mistake('calico', calico_version='v3.27.9')


def test_calico_release_without_a_pinned_sha256_is_refused(batch_runs):
    # v3.27.9 was never released; nothing here pins a checksum for it.
    assert_batch_refused(batch_runs, CALICO_WITHOUT_SHA256,
                         'calico_version is v3.27.9', 'no sha256', 'tigera-operator.yaml', 'calico_manifest_checksums')


def test_calico_release_pinned_by_the_site_is_accepted(node, tmp_path):
    # v3.31.6 is not the newest 3.31 patch, so never chosen, but a site may name it on a minor
    # its series documents (1.32-1.35).
    returncode, messages, _ = run_preflight(node, tmp_path, calico_version='v3.31.6')
    assert returncode == 0 and not messages, messages


HELM_WITHOUT_SHA256 = mistake('helm', helm_version='3.99.0')


def test_helm_release_without_a_pinned_sha256_is_refused(batch_runs):
    assert_batch_refused(batch_runs, HELM_WITHOUT_SHA256,
                         'helm_version is 3.99.0, which is not a row of ipu_k8s_versions.helm', 'helm_tarball_checksum')


CONTROLLER_WITH_EVERY_MISTAKE = mistake('controllers-3', ipu_k8s_vipu_controllers=[
    {'host': '10.0.0.1\n', 'port': 'x', 'colour': 'blue'}])


def test_a_vipu_controller_entry_is_refused_with_every_mistake_it_has(batch_runs):
    # The entry's one home is plugins/module_utils/ipu_k8s_vipu_controllers.py: an entry without a name,
    # with a key it does not know, a host with a trailing newline (what `host: |` gives; it was
    # stripped and accepted) and a bad port gets its whole refusal, not a generic one.
    assert_batch_refused(batch_runs, CONTROLLER_WITH_EVERY_MISTAKE,
                         'ipu_k8s_vipu_controllers[0] has unknown key(s) colour: the keys are name, host, port, '
                         'label; ipu_k8s_vipu_controllers[0] has no name: give each controller a name '
                         '(ipu_k8s_vipu_controller refers to it), e.g. name: pod001; ipu_k8s_vipu_controllers[0]: '
                         "host '10.0.0.1\\n' has whitespace around it: write 10.0.0.1; ipu_k8s_vipu_controllers[0]: "
                         "port 'x' is not a TCP port")

# What each setting means, checked before anything changes; each was let through before.
@pytest.mark.parametrize('case,needles', cases(
    # A misspelt setting changes nothing: the default release would be installed.
    ('undeclared', 'ipu_k8s_kubernetes_verison', '1.34.12',
     ('ipu_k8s_kubernetes_verison (set for poplar-01) is no setting of any role',
      'did you mean ipu_k8s_kubernetes_version?')),
    # kubeadm's ParseHostPort (cmd/kubeadm/app/util/endpoint.go) takes an IP or a DNS subdomain.
    ('kubeadm', 'kubeadm_control_plane_endpoint', 'k8s-api.example.com\n',
     ('kubeadm_control_plane_endpoint="k8s-api.example.com\n"', 'a bare lower-case DNS name or IP address')),
    ('containerd', 'containerd_registry_hosts', {'..': {'mirrors': [{'url': 'https://mirror.example.com'}]}},
     ('containerd_registry_hosts[".."]', 'none empty')),
    ('verify', 'verify_rdma_perftest_image', "mellanox/perftest:v1'$(id)'",
     ('verify_rdma_perftest_image is "mellanox/perftest:v1\'$(id)\'", which is not an image reference',)),
    # An extended resource name is a qualified name: one '/' (pkg/apis/core/v1/helper/helpers.go).
    ('ipu_k8s-2', 'ipu_k8s_rdma_resource_name', 'shared/device',
     ('ipu_k8s_rdma_resource_prefix "rdma" and ipu_k8s_rdma_resource_name "shared/device"',
      'extended resource name')),
    ('containerd', 'containerd_systemd_dropin_name', '../../../../etc/cron.d/x',
     ('containerd_systemd_dropin_name is "../../../../etc/cron.d/x", which is not a plain file name',)),
    ('helm-2', 'helm_tarball_checksum', 'sha256:abc',
     ('helm_tarball_checksum is "sha256:abc"', 'as sha256sum prints it')),
))
def test_a_setting_is_checked_for_what_it_means(batch_runs, case, needles):
    assert_batch_refused(batch_runs, case, *needles)


# A directory of this repository: the check only reads it.
A_DIRECTORY = ROOT / 'tests' / 'fixtures'
DIRECTORY_AS_CHART = mistake('ipu_operator', ipu_operator_chart_local_path=str(A_DIRECTORY))


def test_a_directory_given_as_a_local_file_is_refused_naming_the_setting(batch_runs):
    # Before: the fetch crashed later with "object of type 'dict' has no attribute 'checksum'".
    assert_batch_refused(batch_runs, DIRECTORY_AS_CHART,
                         'ipu_operator_chart_local_path is "%s", which is not a regular file' % A_DIRECTORY,
                         'it is a directory')


@pytest.mark.parametrize('path, fingerprints', [
    ('kubernetes_packages_key_local_path', 'kubernetes_packages_key_fingerprints'),
    ('containerd_docker_gpg_key_local_path', 'containerd_docker_gpg_key_fingerprints')])
def test_a_local_signing_key_that_is_not_the_published_one_is_refused_on_the_controller(node, tmp_path, path,
                                                                                       fingerprints):
    require(shutil.which('gpg') is not None, 'needs gpg: apt-get install gpg')
    (tmp_path / 'gnupg').mkdir()
    armored, fingerprint = make_gpg_key(tmp_path / 'gnupg', 'not-the-repository')
    key = tmp_path / 'Release.key'
    key.write_text(armored)
    message = assert_refused(run_preflight(node, tmp_path / 'run', **{path: str(key)}),
                             '%s holds key %s, not the expected' % (key, fingerprint),
                             'set %s to the new fingerprint it publishes' % fingerprints)
    assert 'removed' not in message and key.read_text() == armored


# A file of this repository that is not the chart: the check only reads it.
NOT_THE_CHART = ROOT / 'tests' / 'fixtures' / 'kubernetes-packages' / 'Packages'
NOT_THE_PINNED_CHART = mistake('network_operator-3', network_operator_chart_local_path=str(NOT_THE_CHART))


def test_a_local_file_that_is_not_the_pinned_one_is_refused_on_the_controller(batch_runs):
    sha256 = hashlib.sha256(NOT_THE_CHART.read_bytes()).hexdigest()
    assert_batch_refused(batch_runs, NOT_THE_PINNED_CHART,
                         'network_operator_chart_local_path is "%s"' % NOT_THE_CHART,
                         '%s has sha256 %s on the controller' % (NOT_THE_CHART, sha256),
                         'expected %s (network_operator_chart_sha256)' % SITE_PINS['network_operator_chart_sha256'])
