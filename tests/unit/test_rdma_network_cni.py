"""plugins/filter/rdma_network_cni.py: what a node lacks of the CNI files the Network
Operator's Multus and IPAM daemonsets leave, from the entries ansible.builtin.find reports;
and rdma_network's cni_check run through a play on a directory this test makes."""
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from playbook_runner import run_playbook

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('rdma_network_cni', ROOT / 'plugins' / 'filter' / 'rdma_network_cni.py')
cni = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cni)


def found(*names, multus_conf='00-multus.conf'):
    """find's entries: the directories named, and a Multus configuration file unless None."""
    entries = [{'path': '/etc/cni/net.d/' + name, 'isdir': True, 'isreg': False} for name in names]
    if multus_conf:
        entries.append({'path': '/etc/cni/net.d/' + multus_conf, 'isdir': False, 'isreg': True})
    return entries


def test_cni_check_names_what_a_node_lacks():
    assert cni.rdma_network_cni_missing(found('multus.d', multus_conf=None), 'whereabouts') == [
        'a Multus configuration (00-multus.conf)', 'whereabouts.d']
    assert cni.rdma_network_cni_missing(found('multus.d', 'whereabouts.d'), 'whereabouts') == []
    assert cni.rdma_network_cni_missing([], 'whereabouts') == [
        'a Multus configuration (00-multus.conf)', 'multus.d', 'whereabouts.d']


def test_cni_check_follows_the_rows_ipam():
    assert cni.rdma_network_cni_missing(found('multus.d', 'whereabouts.d'), 'nv-ipam') == ['nv-ipam.d']
    assert cni.rdma_network_cni_missing(found('multus.d', 'nv-ipam.d'), 'nv-ipam') == []
    # Entry point used on its own (verify): either IPAM directory will do.
    assert cni.rdma_network_cni_missing(found('multus.d', 'nv-ipam.d'), '') == []
    assert cni.rdma_network_cni_missing(found('multus.d'), '') == ['whereabouts.d or nv-ipam.d']


def test_a_directory_named_like_a_configuration_is_no_configuration():
    entries = found('multus.d', 'whereabouts.d', multus_conf=None) + [
        {'path': '/etc/cni/net.d/00-multus.conf', 'isdir': True, 'isreg': False}]
    assert cni.rdma_network_cni_missing(entries, 'whereabouts') == ['a Multus configuration (00-multus.conf)']


def test_a_conflist_is_a_multus_configuration_and_a_file_named_multus_d_is_no_directory():
    entries = found('whereabouts.d', multus_conf='10-multus.conflist') + [
        {'path': '/etc/cni/net.d/multus.d', 'isdir': False, 'isreg': True}]
    assert cni.rdma_network_cni_missing(entries, 'whereabouts') == ['multus.d']


def cni_check(tmp_path, ipam, *present):
    """rdma_network's cni_check entry point on localhost over a CNI directory holding present."""
    cni_dir = tmp_path / 'net.d'
    cni_dir.mkdir()
    for name in present:
        (cni_dir / name).mkdir() if name.endswith('.d') else (cni_dir / name).write_text('{}')
    playbook = tmp_path / 'cni_check.yml'
    playbook.write_text(yaml.safe_dump([{'hosts': 'node', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.import_role': {'name': 'rdma_network', 'tasks_from': 'cni_check'}}]}]))
    inventory = tmp_path / 'hosts.json'
    inventory.write_text(json.dumps({'all': {'hosts': {'node': {'ansible_connection': 'local'}}}}))
    return run_playbook(playbook, inventory, tmp_path, extravars={
        'rdma_network_cni_dir': str(cni_dir), 'rdma_network_cni_ipam': ipam}), cni_dir


def test_the_entry_point_refuses_a_node_without_the_rows_ipam_directory(tmp_path):
    run, cni_dir = cni_check(tmp_path, 'nv-ipam', '00-multus.conf', 'multus.d', 'whereabouts.d')
    assert run.rc != 0
    assert 'node: %s lacks nv-ipam.d. The network operator' % cni_dir in run.stdout


@pytest.mark.parametrize('ipam, directory', [('whereabouts', 'whereabouts.d'), ('nv-ipam', 'nv-ipam.d')])
def test_the_entry_point_passes_a_node_with_every_file(tmp_path, ipam, directory):
    run, _ = cni_check(tmp_path, ipam, '10-multus.conflist', 'multus.d', directory)
    assert run.rc == 0, run.stdout[-3000:]


def test_reset_removes_every_cni_directory_cni_check_looks_for():
    cni_dir = yaml.safe_load((ROOT / 'roles/rdma_network/defaults/main.yml').read_text())['rdma_network_cni_dir']
    defaults = yaml.safe_load((ROOT / 'roles/reset/defaults/main.yml').read_text())['reset_cni_paths']
    directories = ['multus.d'] + [name for names in cni.IPAM_DIRS.values() for name in names]
    assert 'nv-ipam.d' in directories and 'whereabouts.d' in directories
    for directory in directories:
        assert '%s/%s' % (cni_dir, directory) in defaults


def test_the_ipam_directory_a_row_names():
    # The directories the Network Operator's IPAM daemonsets create (guide, section 5.2).
    assert [cni.rdma_network_cni_ipam_dir(ipam) for ipam in ('whereabouts', 'nv-ipam', '')] == [
        'whereabouts.d', 'nv-ipam.d', 'whereabouts.d or nv-ipam.d']
