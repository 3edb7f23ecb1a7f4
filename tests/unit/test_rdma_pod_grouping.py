"""The site model: IPU nodes grouped by the V-IPU controller (IPU-POD) they chose, and agreeing
inside each."""

import pytest

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import IpuK8sError, agree_rdma_networks, cni_config, pod_object_name
from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import site_model


def node(address, interface='ens1f0', cidr='10.247.208.0/23', mtu=9000, excludes=('10.247.208.0/25',),
         vipu='10.247.208.5'):
    return {'interface': interface, 'cidr': cidr, 'prefix': int(cidr.split('/')[1]), 'node_address': address,
            'mtu': mtu, 'excludes': list(excludes), 'vipu_address': vipu}


def controller(name, host, port=8090, label=None):
    return {'name': name, 'host': host, 'port': port, 'label': label or 'vipu-ctrl=%s' % name,
            'address': '%s:%d' % (host, port)}


POD1 = controller('pod001', '10.247.208.5')
POD2 = controller('pod002', '10.5.212.116', 8091)


def by_pod(networks, controllers, ipam='whereabouts', block_size=0, network_name=''):
    """(pods, warnings) of the site model of these nodes."""
    model = site_model(dict((h, {'rdma_network': networks[h], 'vipu_server': controllers.get(h)}) for h in networks),
                       network_name, ipam, block_size)
    return model['pods'], model['warnings']


def two_pods():
    networks = {
        'ipu1': node('10.247.208.21'),
        'ipu2': node('10.247.208.22', mtu=9000),
        'ipu3': node('10.5.212.20', interface='enp65s0f0np0', cidr='10.5.212.0/24', mtu=4200,
                     excludes=['10.5.212.0/26'], vipu='10.5.212.116'),
    }
    return networks, {'ipu1': POD1, 'ipu2': POD1, 'ipu3': POD2}


def test_one_controller_gives_todays_network_and_the_controller():
    networks = {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22')}
    pods, _ = by_pod(networks, {'ipu1': POD1, 'ipu2': POD1}, 'nv-ipam', 0, 'rdma-net')
    assert len(pods) == 1
    assert pods[0]['rdma_network'] == agree_rdma_networks(networks, 'nv-ipam')[0]
    assert (pods[0]['name'], pods[0]['label'], pods[0]['vipu_host'], pods[0]['vipu_port'], pods[0]['pool']) == \
        ('pod001', 'vipu-ctrl=pod001', '10.247.208.5', 8090, 'rdma-net')


def test_one_controller_refuses_with_todays_message():
    networks = {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22', interface='ens2f0')}
    with pytest.raises(IpuK8sError) as today:
        agree_rdma_networks(networks)
    with pytest.raises(IpuK8sError) as grouped:
        by_pod(networks, {'ipu1': POD1, 'ipu2': POD1})
    assert str(grouped.value) == str(today.value)


def test_two_pods_may_differ_in_subnet_interface_and_mtu():
    networks, controllers = two_pods()
    pods, warnings = by_pod(networks, controllers, network_name='rdma-net')
    assert [(p['name'], p['hosts'], p['rdma_network']['interface'], p['rdma_network']['cidr'],
             p['rdma_network']['mtu'], p['pool']) for p in pods] == [
        ('pod001', ['ipu1', 'ipu2'], 'ens1f0', '10.247.208.0/23', 9000, 'rdma-net-pod001'),
        ('pod002', ['ipu3'], 'enp65s0f0np0', '10.5.212.0/24', 4200, 'rdma-net-pod002')]
    assert pods[1]['rdma_network']['excludes'] == ['10.5.212.0/26', '10.5.212.116/32']
    assert (pods[1]['vipu_host'], pods[1]['vipu_port'], pods[1]['label']) == ('10.5.212.116', 8091,
                                                                              'vipu-ctrl=pod002')
    assert warnings == []


def test_each_pod_gets_its_own_nv_ipam_pool_sized_for_its_nodes():
    networks, controllers = two_pods()
    pods, _ = by_pod(networks, controllers, 'nv-ipam', 0, 'rdma-net')
    # pod002 has one node: its whole /24 outside the excludes is one block.
    assert pods[1]['rdma_network']['nv_ipam']['block_size'] > pods[0]['rdma_network']['nv_ipam']['block_size'] / 2
    assert pods[1]['rdma_network']['nv_ipam']['exclusions'][0] == {'startIP': '10.5.212.0', 'endIP': '10.5.212.63'}


def test_disagreement_inside_one_pod_is_refused_naming_the_pod_and_hosts():
    networks, controllers = two_pods()
    networks['ipu2'] = node('10.247.209.22', interface='ens2f0')
    with pytest.raises(IpuK8sError, match=r"V-IPU controller 'pod001' \(IPU-POD of ipu1, ipu2\): IPU nodes disagree.*"
                                          r"RDMA interface differs: ens1f0 on ipu1; ens2f0 on ipu2"):
        by_pod(networks, controllers)


def test_mtus_differing_inside_a_pod_warn_naming_the_pod():
    networks, controllers = two_pods()
    networks['ipu2']['mtu'] = 4200
    pods, warnings = by_pod(networks, controllers)
    assert pods[0]['rdma_network']['mtu'] == 4200
    assert warnings == ["V-IPU controller 'pod001': RDMA interface MTUs differ (4200 on ipu2; 9000 on ipu1): the "
                        "MacvlanNetwork uses the smallest, 4200"]


def test_a_node_without_a_controller_fact_is_named():
    networks, controllers = two_pods()
    del controllers['ipu3']
    with pytest.raises(IpuK8sError, match=r'IPU node\(s\) ipu3 have no vipu_server fact'):
        by_pod(networks, controllers)


def test_one_controller_name_with_two_addresses_is_refused():
    networks, controllers = two_pods()
    controllers['ipu2'] = controller('pod001', '10.247.208.6')
    with pytest.raises(IpuK8sError, match=r"one controller name resolves to different addresses on different nodes "
                                          r"\('pod001'\): pod001 at 10.247.208.5:8090 \(ipu1\); pod001 at "
                                          r"10.247.208.6:8090 \(ipu2\)"):
        by_pod(networks, controllers)


@pytest.mark.parametrize('pod, expected', [('pod001', 'rdma-net-pod001'), ('POD_2', 'rdma-net-pod-2'),
                                           ('10.5.212.116:8090', 'rdma-net-10-5-212-116-8090'), ('__', 'rdma-net-pod')])
def test_pod_object_names_are_dns_labels(pod, expected):
    assert pod_object_name('rdma-net', pod) == expected


def test_pod_object_names_are_cut_to_63_characters():
    assert len(pod_object_name('n' * 60, 'pod001')) == 63


def test_the_model_carries_node_names_ipam_and_the_one_pods_network():
    networks = {'ipu1': node('10.247.208.21'), 'ipu2': node('10.247.208.22')}
    nodes = {'ipu1': {'rdma_network': networks['ipu1'], 'vipu_server': POD1, 'node_name': 'poplar-1'},
             'ipu2': {'rdma_network': networks['ipu2'], 'vipu_server': POD1}}
    model = site_model(nodes, 'rdma-net', 'whereabouts')
    assert model['pods'][0]['node_names'] == ['poplar-1', 'ipu2']
    assert (model['ipam'], model['rdma_network']) == ('whereabouts', agree_rdma_networks(networks)[0])
    assert model['operator']['value'] == '10.247.208.5:8090:vipu-ctrl=pod001'
    two = site_model(dict((h, {'rdma_network': n, 'vipu_server': c}) for (h, n), c in
                          zip(two_pods()[0].items(), two_pods()[1].values())), 'rdma-net', 'whereabouts')
    assert two['rdma_network'] is None and len(two['pods']) == 2


def test_without_ipam_only_the_operators_part_is_built():
    model = site_model({'ipu1': {'vipu_server': POD1}}, 'rdma-net')
    assert (model['pods'], model['rdma_network'], model['operator']['value']) == (
        None, None, '10.247.208.5:8090:vipu-ctrl=pod001')


def test_a_node_without_its_rdma_network_is_refused():
    # The facts step sets vipu_server and rdma_network together; a node without the one is
    # refused as having no vipu_server fact, a network that is not one as it is.
    with pytest.raises(IpuK8sError) as refused:
        site_model({'ipu1': {'vipu_server': POD1, 'rdma_network': node('10.247.208.21')},
                    'ipu2': {'vipu_server': POD1}}, 'rdma-net', 'whereabouts')
    assert str(refused.value).startswith('the RDMA network of ipu2 is not a dict (None): pass the rdma_network fact')


def test_cni_config_carries_the_pods_interface_mtu_and_ipam():
    from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import cni_config
    networks, controllers = two_pods()
    pods, _ = by_pod(networks, controllers, network_name='rdma-net')
    config = cni_config('rdma-net', pods[1], 'bridge', 'whereabouts', {'kubeconfig': '/k', 'log_file': '/l',
                                                                       'log_level': 'info'})
    assert config == {'cniVersion': '0.3.1', 'name': 'rdma-net', 'type': 'macvlan', 'master': 'enp65s0f0np0',
                      'mode': 'bridge', 'mtu': 4200,
                      'ipam': {'type': 'whereabouts', 'datastore': 'kubernetes', 'kubernetes': {'kubeconfig': '/k'},
                               'log_file': '/l', 'log_level': 'info', 'range': '10.5.212.0/24',
                               'exclude': ['10.5.212.0/26', '10.5.212.116/32']}}
    assert cni_config('rdma-net', pods[0], ipam='nv-ipam')['ipam'] == {'type': 'nv-ipam',
                                                                       'poolName': 'rdma-net-pod001'}
    with pytest.raises(IpuK8sError, match="ipam 'dhcp'"):
        cni_config('rdma-net', pods[0], ipam='dhcp')


CNI_POD = {'pool': 'rdma-net-pod002', 'rdma_network': {
    'interface': 'enp65s0f0np0', 'cidr': '10.5.212.0/24', 'mtu': '4200', 'excludes': ('10.5.212.0/25',)}}


def test_cni_config_of_a_pod_with_whereabouts():
    whereabouts = {'kubeconfig': '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig',
                   'log_file': '/var/log/whereabouts.log', 'log_level': 'info'}
    assert cni_config('rdma-net', CNI_POD, 'bridge', 'whereabouts', whereabouts) == {
        'cniVersion': '0.3.1', 'name': 'rdma-net', 'type': 'macvlan', 'master': 'enp65s0f0np0', 'mode': 'bridge',
        'mtu': 4200,
        'ipam': {'type': 'whereabouts', 'datastore': 'kubernetes',
                 'kubernetes': {'kubeconfig': '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig'},
                 'log_file': '/var/log/whereabouts.log', 'log_level': 'info',
                 'range': '10.5.212.0/24', 'exclude': ['10.5.212.0/25']}}


def test_cni_config_defaults_and_nv_ipam():
    default = cni_config('rdma-net', CNI_POD)
    assert (default['mode'], default['ipam']['type'], default['ipam']['kubernetes'], default['ipam']['log_file'],
            default['ipam']['log_level']) == ('bridge', 'whereabouts', {'kubeconfig': ''}, '', '')
    assert cni_config('net-b', CNI_POD, 'private', 'nv-ipam') == {
        'cniVersion': '0.3.1', 'name': 'net-b', 'type': 'macvlan', 'master': 'enp65s0f0np0', 'mode': 'private',
        'mtu': 4200, 'ipam': {'type': 'nv-ipam', 'poolName': 'rdma-net-pod002'}}


def test_cni_config_refuses_an_ipam_it_does_not_render():
    with pytest.raises(IpuK8sError) as refused:
        cni_config('rdma-net', CNI_POD, 'bridge', 'host-local')
    assert str(refused.value) == "ipam 'host-local' is not one this project renders: whereabouts or nv-ipam"


def test_a_name_cut_on_a_dash_does_not_end_with_it():
    # 62 characters of network name, the dash, then the POD: the 63rd character is the dash.
    assert pod_object_name('n' * 62, 'pod001') == 'n' * 62
