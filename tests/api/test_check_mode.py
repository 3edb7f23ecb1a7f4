"""Every API-facing layer in --check on a fresh server: each run succeeds and nothing is
created (namespaces, CRDs, Helm releases, workloads, custom resources, node labels).

The control-plane host is not fresh in two respects, said here: helm is installed in its
helm_install_dir first (the helm role for real, `--tags helm`), because in check mode the
helm role installs nothing and kubernetes.core.helm needs a helm binary to ask the server
what it would do; and the Kubernetes client virtualenv exists (made by the real
k8s_client_venv module), because without it the layers skip their API tasks in check mode
and the server would not be asked at all. Neither touches a Kubernetes object (asserted)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope='module')
def fresh(site, api):
    before = api.snapshot()
    site.play('network_operator.yml', '--tags', 'helm').assert_ok()
    assert (site.helm_install_dir / 'helm').exists()
    site.make_client_venv()
    assert api.snapshot() == before, 'installing helm or the client virtualenv touched the cluster'
    return before


@pytest.mark.parametrize('playbook, args', [
    ('network_operator.yml', ()),
    ('rdma_network.yml', ()),
    ('ipu_operator.yml', ()),
    ('verify.yml', ('--tags', 'verify_cluster')),
    ('reset.yml', ('--tags', 'reset_cluster_objects', '-e', 'reset_confirm=true')),
], ids=['network_operator', 'rdma_network', 'ipu_operator', 'verify', 'reset'])
def test_check_mode_on_a_fresh_server_creates_nothing(site, api, fresh, playbook, args):
    run = site.play(playbook, '--check', *args)
    after = api.snapshot()
    assert after == fresh, 'check mode created: %s' % {k: (fresh[k], after[k]) for k in fresh if fresh[k] != after[k]}
    if playbook == 'verify.yml':
        # Nothing is installed: verify reports the missing pieces (and fails the play) but
        # creates nothing, not even its test pod.
        assert run.rc != 0
    else:
        run.assert_ok()
