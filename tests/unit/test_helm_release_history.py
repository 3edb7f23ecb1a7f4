"""plugins/filter/helm_release.py on more of what `helm history --output json` can hold:
revisions as numbers above 9, several deployed-or-superseded candidates, an entry without a
status, and every pending state helm 3 has (pkg/release/status.go: pending-install,
pending-upgrade, pending-rollback)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('helm_release', ROOT / 'plugins' / 'filter' / 'helm_release.py')
helm_release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helm_release)
recovery = helm_release.helm_release_recovery


def rev(revision, status=None):
    entry = {'revision': revision, 'chart': 'ipu-operator-1.2.0'}
    if status is not None:
        entry['status'] = status
    return entry


@pytest.mark.parametrize('status', ['pending-install', 'pending-upgrade', 'pending-rollback'])
def test_each_pending_state_without_an_earlier_release_is_uninstalled(status):
    result = recovery([rev(1, status)])
    assert (result['action'], result['status'], result['revision'], result['args']) == ('uninstall', status, 1, ['--wait'])


@pytest.mark.parametrize('status', ['deployed', 'failed', 'superseded', 'uninstalling', 'uninstalled', 'unknown'])
def test_a_settled_latest_revision_needs_nothing(status):
    assert recovery([rev(1, 'deployed'), rev(2, status)]) == {'action': 'none', 'status': status, 'revision': 2}


def test_revisions_order_as_numbers():
    history = [rev(9, 'deployed'), rev(10, 'pending-upgrade'), rev('2', 'superseded')]
    result = recovery(history)
    assert (result['action'], result['revision'], result['to_revision'], result['args']) == ('rollback', 10, 9, ['9'])


def test_the_deployed_revision_wins_over_a_newer_superseded_one():
    history = [rev(1, 'superseded'), rev(2, 'deployed'), rev(3, 'superseded'), rev(4, 'pending-rollback')]
    assert recovery(history)['to_revision'] == 2


def test_the_newest_of_several_superseded_revisions_is_the_target():
    history = [rev(1, 'superseded'), rev(3, 'superseded'), rev(2, 'superseded'), rev(4, 'pending-upgrade')]
    assert recovery(history)['to_revision'] == 3


def test_a_latest_entry_without_a_status_needs_nothing():
    assert recovery([rev(1, 'deployed'), rev(2)]) == {'action': 'none', 'status': '', 'revision': 2}


def test_an_earlier_entry_without_a_status_is_no_target():
    assert recovery([rev(1), rev(2, 'pending-install')])['action'] == 'uninstall'


def test_no_history_is_revision_zero():
    assert recovery([]) == {'action': 'none', 'status': '', 'revision': 0}
