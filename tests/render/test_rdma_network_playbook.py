"""playbooks/rdma_network.yml's facts play and the rdma_network role's consensus step, run
for real through ansible-runner inside a network namespace this test creates (a veth
"rdma0" with 10.247.208.201/23, MTU 9000; no traffic is sent, the modules only ask the
kernel for routes and addresses). Two inventory hosts stand for two IPU nodes; a third
for the control plane. The custom module (rdma_network_facts) is
the real one. Needs root and iproute2."""

import json
import subprocess
import sys
import textwrap
import uuid

import pytest

from ipu_k8s_render import ROOT

# creates a network namespace: as root (skipped otherwise, failed under CI=true)
pytestmark = pytest.mark.usefixtures('root')

sys.path.insert(0, str(ROOT / 'tests'))
from playbook_runner import run_playbook  # noqa: E402

CONTROLLERS = '{"ipu_k8s_vipu_controllers": [{"name": "pod001", "host": "10.247.208.116", "port": 8090}]}'


@pytest.fixture(scope='module')
def netns():
    name = 'ipuk8s-rdmapb-%s' % uuid.uuid4().hex[:6]
    subprocess.run(['ip', 'netns', 'add', name], check=True)
    try:
        for command in ('link set lo up', 'link add rdma0 mtu 9000 type veth peer name peer0 mtu 9000',
                        'addr add 10.247.208.201/23 dev rdma0', 'link set rdma0 up', 'link set peer0 up'):
            subprocess.run(['ip', '-n', name] + command.split(), check=True)
        yield name
    finally:
        subprocess.run(['ip', 'netns', 'delete', name], check=False)


@pytest.fixture
def site(tmp_path):
    (tmp_path / 'hosts.yml').write_text(textwrap.dedent('''\
        all:
          vars:
            ansible_connection: local
            ansible_python_interpreter: %s
          children:
            control_plane:
              hosts:
                cp-01:
            ipu_nodes:
              hosts:
                poplar-01:
                poplar-02:
        ''' % sys.executable))
    (tmp_path / 'agree.yml').write_text(textwrap.dedent('''\
        - name: The real facts play
          ansible.builtin.import_playbook: %s/playbooks/rdma_network.yml
        - name: The role's site model, without a cluster to apply to
          hosts: control_plane[0]
          gather_facts: false
          tasks:
            - name: Build the site model
              ansible.builtin.include_role:
                name: rdma_network
                tasks_from: site
            - name: Keep the result for the test
              ansible.builtin.copy:
                content: "{{ ipu_k8s_site.rdma_network | to_json }}"
                dest: %s/agreed.json
                mode: "0644"
        ''' % (ROOT, tmp_path)))
    return tmp_path


def run(netns, site, *extra):
    env = {'ANSIBLE_ROLES_PATH': str(ROOT / 'roles'), 'ANSIBLE_LIBRARY': str(ROOT / 'plugins' / 'modules')}
    return run_playbook(site / 'agree.yml', site / 'hosts.yml', site / 'runner', envvars=env, netns=netns,
                        cmdline=['--skip-tags', 'rdma_network_apply'] + list(extra), timeout=300)


# The IPAM network_operator's settings check leaves from the chart row (the inventory here has
# no k8s_cluster, so no settings play runs): NVIDIA IPAM, as on the default Kubernetes minor's row.
NV_IPAM = ('-e', 'network_operator_ipam=nv-ipam')


def test_nodes_derive_and_agree_on_the_rdma_network(netns, site):
    result = run(netns, site, '-e', CONTROLLERS, *NV_IPAM)
    assert result.rc == 0, result.stdout
    agreed = json.loads((site / 'agreed.json').read_text())
    assert agreed == {
        'interface': 'rdma0',
        'cidr': '10.247.208.0/23',
        'prefix': 23,
        'mtu': 9000,
        # The node's own address (10.247.208.201) lies outside the first /25: excluded with it.
        'excludes': ['10.247.208.0/25', '10.247.208.201/32'],
        'vipu_addresses': ['10.247.208.116'],
        # NVIDIA IPAM: its IPPool values are the same excludes as address ranges and one
        # block per IPU node.
        'nv_ipam': {'block_size': 255,
                    'exclusions': [{'startIP': '10.247.208.0', 'endIP': '10.247.208.127'},
                                   {'startIP': '10.247.208.201', 'endIP': '10.247.208.201'}]},
    }
    assert 'outside the excluded range' not in result.text() + result.stdout
    assert ('IPU-POD pod001 (V-IPU 10.247.208.116:8090, node label ipunode=true): poplar-01, poplar-02 reach it '
            'through rdma0 in 10.247.208.0/23 (MTU 9000)') in ' '.join(result.stdout.split())


def test_explicit_excludes_and_a_pinned_interface_reach_the_modules(netns, site):
    result = run(netns, site, '-e', CONTROLLERS, '-e', '{"ipu_k8s_rdma_excludes": ["10.247.208.0/26"]}',
                 '-e', 'ipu_k8s_rdma_interface=rdma0', *NV_IPAM)
    assert result.rc == 0, result.stdout
    agreed = json.loads((site / 'agreed.json').read_text())
    assert agreed['excludes'] == ['10.247.208.0/26', '10.247.208.116/32', '10.247.208.201/32']


def test_an_unknown_controller_name_is_refused_on_the_node(netns, site):
    result = run(netns, site, '-e', CONTROLLERS, '-e', 'ipu_k8s_vipu_controller=pod009', *NV_IPAM)
    assert result.rc != 0
    output = ' '.join(' '.join(result.failure_messages()).split())
    assert "ipu_k8s_vipu_controller 'pod009' names no entry of ipu_k8s_vipu_controllers" in output, result.stdout[-3000:]
    assert not (site / 'agreed.json').exists()


def test_the_site_model_without_the_chart_rows_ipam_says_how_to_get_it(netns, site):
    # The nodes derive their networks; the model then needs the IPAM the settings check chose.
    result = run(netns, site, '-e', CONTROLLERS)
    assert result.rc != 0
    output = ' '.join(' '.join(result.failure_messages()).split())
    assert ('network_operator_ipam is not set: the RDMA network uses the IPAM of the network-operator chart row'
            in output), result.stdout[-3000:]
    assert '-e network_operator_ipam=whereabouts or nv-ipam' in output
    assert not (site / 'agreed.json').exists()
