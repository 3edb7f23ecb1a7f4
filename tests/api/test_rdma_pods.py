"""The RDMA network of two IPU-PODs against a real kube-apiserver: playbooks/rdma_network.yml
with poplar-01 on V-IPU controller pod001 and poplar-02 on pod002. The site had one POD
before (a MacvlanNetwork rdma-net, against the real CRD of chart 25.4.0) and a
NetworkAttachmentDefinition rdma-net with a config that nothing owns (made by hand): the
run removes the MacvlanNetwork, leaves the one NetworkAttachmentDefinition without config
(real NAD CRD) and writes each node's CNI file from its own POD; the second run changes
nothing. verify flags a config put back on it by hand; the next run removes it.

Both hollow IPU nodes sit on the site's one RDMA subnet (their namespaces, api_site.py):
the PODs differ by controller (address, port, label), so each POD's excludes differ (its
own controller's address); subnets and interface names that differ between PODs are
covered in network namespaces (tests/integration/test_netns_rdma_pods.py). Each node's
modules run in a private mount namespace where rdma_network_multus_conf_dir is that node's
own directory."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from api_client import report_rows
from api_site import IPU_NODES, RDMA_INTERFACE, SCHEMAS

NETWORK = 'rdma-net'
CONTROLLERS = [{'name': 'pod001', 'host': '10.247.208.5', 'port': 8090, 'label': 'vipu-ctrl=pod001'},
               {'name': 'pod002', 'host': '10.247.208.6', 'port': 8091, 'label': 'vipu-ctrl=pod002'}]
POD_OF = {'poplar-01': 'pod001', 'poplar-02': 'pod002'}
ONE_POD_CONFIG = json.dumps({'cniVersion': '0.3.1', 'name': NETWORK, 'type': 'macvlan', 'master': RDMA_INTERFACE,
                             'ipam': {'type': 'whereabouts', 'range': '10.247.208.0/23'}})
NAD_CHECK = "rdma-net takes each node's CNI file (several IPU-PODs)"


@pytest.fixture(scope='module')
def pods_site(site, api):
    """The inventory of two PODs, each node with its own confDir, and what the Network
    Operator and the one-POD past left in the cluster."""
    confdir = site.dir / 'multus-net.d'
    confdir.mkdir()
    own = {}
    inventory = copy.deepcopy(site.inventory())
    # A small configured exclude, so each POD's controller and node addresses are added to it.
    inventory['all']['vars'].update(ipu_k8s_vipu_controllers=CONTROLLERS, rdma_network_multus_conf_dir=str(confdir),
                                    ipu_k8s_rdma_excludes=['10.247.208.0/30'])
    workers = inventory['all']['children']['k8s_cluster']['children']['workers']['hosts']
    for node in IPU_NODES:
        namespace = re.search(r'netns exec (\S+) ', site.interpreters[node].read_text()).group(1)
        python = re.search(r'netns exec \S+ (\S+) ', site.interpreters[node].read_text()).group(1)
        own[node] = site.dir / ('multus-net.d-%s' % node)
        own[node].mkdir()
        wrapper = site.dir / ('python-pods-%s' % node)
        wrapper.write_text('#!/bin/sh\nexec unshare -m --propagation private sh -c \'mount --bind "$0" "$1" && shift '
                           '&& exec ip netns exec %s %s "$@"\' %s %s "$@"\n' % (namespace, python, own[node], confdir))
        wrapper.chmod(0o755)
        workers[node] = {'ansible_python_interpreter': str(wrapper), 'ipu_k8s_vipu_controller': POD_OF[node]}
    # The Network Operator's CRDs (MacvlanNetwork of chart 25.4.0; the NAD CRD Multus brings)
    # and its CNI files; a MacvlanNetwork of the one-POD past.
    release = yaml.safe_load((SCHEMAS / 'network_operator' / 'releases.yaml').read_text())['releases']['25.4.0']
    api.apply_file(SCHEMAS / 'network_operator' / release['crds']['macvlannetworks']['file'])
    api.apply_file(SCHEMAS / 'multus' / 'network-attachment-definitions.k8s.cni.cncf.io.yaml')
    api.wait_crd('macvlannetworks.mellanox.com')
    api.wait_crd('network-attachment-definitions.k8s.cni.cncf.io')
    api.apply({'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'MacvlanNetwork', 'metadata': {'name': NETWORK},
               'spec': {'networkNamespace': 'default', 'master': RDMA_INTERFACE, 'mode': 'bridge', 'mtu': 9000,
                        'ipam': json.dumps({'type': 'whereabouts', 'range': '10.247.208.0/23'})}})
    api.apply({'apiVersion': 'k8s.cni.cncf.io/v1', 'kind': 'NetworkAttachmentDefinition',
               'metadata': {'name': NETWORK, 'namespace': 'default'}, 'spec': {'config': ONE_POD_CONFIG}})
    (site.cni_dir / '00-multus.conf').write_text('{"cniVersion": "0.3.1", "name": "multus-cni-network"}\n')
    (site.cni_dir / 'multus.d').mkdir(exist_ok=True)
    (site.cni_dir / 'whereabouts.d').mkdir(exist_ok=True)
    return site, inventory, own, confdir


def test_two_pods_get_one_nad_without_config_and_a_file_per_node(pods_site, api):
    site, inventory, own, confdir = pods_site
    assert api.get('mellanox.com/v1alpha1', 'MacvlanNetwork', NETWORK) is not None
    assert api.get('k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition', NETWORK, 'default')['spec']['config']
    run = site.play('rdma_network.yml', inventory=inventory)
    run.assert_ok()
    assert api.get('mellanox.com/v1alpha1', 'MacvlanNetwork', NETWORK) is None
    nad = api.get('k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition', NETWORK, 'default')
    assert nad is not None and not nad.get('spec', {}).get('config')
    assert not nad['metadata'].get('ownerReferences')
    assert list(Path(confdir).iterdir()) == []
    files = dict((node, json.loads((own[node] / ('%s.conf' % NETWORK)).read_text())) for node in IPU_NODES)
    for node, config in files.items():
        assert (config['name'], config['master'], config['ipam']['range']) == (NETWORK, RDMA_INTERFACE,
                                                                               '10.247.208.0/23')
    # Each POD's own controller and node are excluded from its range.
    assert files['poplar-01']['ipam']['exclude'] == ['10.247.208.0/30', '10.247.208.5/32', '10.247.208.21/32']
    assert files['poplar-02']['ipam']['exclude'] == ['10.247.208.0/30', '10.247.208.6/32', '10.247.208.22/32']


def test_two_pods_rerun_changes_nothing(pods_site):
    site, inventory, _own, _confdir = pods_site
    site.play('rdma_network.yml', inventory=inventory).assert_unchanged()


def _nad_row(site, inventory):
    # The other cluster checks (operators, test pod) have nothing to find on this server.
    site.play('verify.yml', '--tags', 'verify_cluster', inventory=inventory,
              extra_vars={'verify_test_pod_timeout': 5})
    rows = [r for r in report_rows(site) if r['check'] == NAD_CHECK]
    assert len(rows) == 1, rows
    return rows[0]


def test_verify_flags_a_config_that_overrides_the_node_files_and_the_next_run_removes_it(pods_site, api):
    site, inventory, _own, _confdir = pods_site
    assert _nad_row(site, inventory)['status'] == 'PASS'
    api.apply({'apiVersion': 'k8s.cni.cncf.io/v1', 'kind': 'NetworkAttachmentDefinition',
               'metadata': {'name': NETWORK, 'namespace': 'default'}, 'spec': {'config': ONE_POD_CONFIG}})
    row = _nad_row(site, inventory)
    assert row['status'] == 'FAIL' and 'spec.config is set' in row['observed'], row
    run = site.play('rdma_network.yml', inventory=inventory).assert_ok()
    assert run.changed_tasks(), 'the config was left in place'
    nad = api.get('k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition', NETWORK, 'default')
    assert not nad.get('spec', {}).get('config')
