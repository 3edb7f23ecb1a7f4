"""plugins/filter/helm_release.py on `helm history --output json` as helm 3 prints it
(revision, updated, status, chart, app_version, description)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location('helm_release', ROOT / 'plugins' / 'filter' / 'helm_release.py')
helm_release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helm_release)
recovery = helm_release.helm_release_recovery


def rev(revision, status, description=''):
    return {'revision': revision, 'updated': '2026-11-25T23:10:04.1+00:00', 'status': status,
            'chart': 'network-operator-25.4.0', 'app_version': 'v25.4.0', 'description': description}


def test_no_release_needs_nothing():
    assert recovery([])['action'] == 'none'
    assert recovery(None)['action'] == 'none'


def test_deployed_or_failed_release_needs_nothing():
    assert recovery([rev(1, 'superseded'), rev(2, 'deployed')])['action'] == 'none'
    assert recovery([rev(1, 'deployed'), rev(2, 'failed')])['action'] == 'none'


def test_install_that_never_finished_is_uninstalled():
    assert recovery([rev(1, 'pending-install', 'Initial install underway')]) == {
        'action': 'uninstall', 'status': 'pending-install', 'revision': 1, 'args': ['--wait'],
        'summary': 'pending-install at revision 1 (a run was interrupted during it): no revision was ever deployed, '
                   'so it is uninstalled and installed again'}


def test_upgrade_left_pending_rolls_back_to_the_deployed_revision():
    # Helm keeps the running revision deployed until the upgrade succeeds.
    history = [rev(1, 'superseded'), rev(2, 'deployed'), rev(3, 'pending-upgrade', 'Preparing upgrade')]
    assert recovery(history) == {
        'action': 'rollback', 'status': 'pending-upgrade', 'revision': 3, 'to_revision': 2, 'args': ['2'],
        'summary': 'pending-upgrade at revision 3 (a run was interrupted during it): rolling back to revision 2, '
                   'the last deployed'}


def test_rollback_left_pending_goes_to_the_newest_superseded_when_none_is_deployed():
    history = [rev(1, 'superseded'), rev(2, 'superseded'), rev(3, 'pending-rollback')]
    assert recovery(history)['to_revision'] == 2 and recovery(history)['args'] == ['2']


def test_history_order_does_not_matter():
    history = [rev(3, 'pending-upgrade'), rev(1, 'superseded'), rev(2, 'deployed')]
    assert recovery(history)['to_revision'] == 2


def test_only_the_latest_revision_decides():
    # An old pending entry below a deployed one is history, not a stuck operation.
    assert recovery([rev(1, 'pending-install'), rev(2, 'deployed')])['action'] == 'none'


def test_failed_revisions_are_no_rollback_target():
    assert recovery([rev(1, 'failed'), rev(2, 'pending-upgrade')])['action'] == 'uninstall'
