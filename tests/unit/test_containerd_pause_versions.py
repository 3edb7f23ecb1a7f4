"""The sandbox image per Kubernetes minor: the pause of ipu_k8s_versions.kubernetes against the pause versions
read upstream (tests/schemas/kubernetes/pause-versions.yaml), the default it gives, and the
preflight rules on a site's own sandbox image."""

import importlib.util
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FACTS = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'kubernetes' / 'pause-versions.yaml').read_text())['kubernetes']
KUBERNETES = yaml.safe_load((ROOT / 'roles' / 'ipu_k8s' / 'defaults' / 'main' / 'versions.yml').read_text())['ipu_k8s_versions']['kubernetes']
TABLE = {minor: row['pause'] for minor, row in KUBERNETES.items() if 'pause' in row}
DEFAULT = yaml.safe_load((ROOT / 'roles' / 'containerd' / 'defaults' / 'main.yml').read_text())['containerd_sandbox_image']
PREFLIGHT_MINORS = list(KUBERNETES)
_spec = importlib.util.spec_from_file_location('ipu_k8s_checks', ROOT / 'plugins' / 'filter' / 'ipu_k8s_checks.py')
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)


def test_the_table_is_the_pause_versions_read_upstream():
    assert TABLE == {minor: row['pause'] for minor, row in FACTS.items()}


def default_for(minor):
    return jinja2.Environment().from_string(DEFAULT).render(
        ipu_k8s_versions={'kubernetes': KUBERNETES}, ipu_k8s_kubernetes_minor=minor)


@pytest.mark.parametrize('minor', sorted(FACTS))
def test_the_default_sandbox_image_is_kubeadms_pause_for_the_minor(minor):
    assert default_for(minor) == 'registry.k8s.io/pause:' + FACTS[minor]['pause']


def test_1_36_gets_pause_3_10_2_and_1_35_pause_3_10_1():
    # kubeadm's PauseVersion moved with the minors (kubespray 28bdeb858, "Support Kubernetes v1.36.0").
    assert (default_for('1.36'), default_for('1.35')) == ('registry.k8s.io/pause:3.10.2', 'registry.k8s.io/pause:3.10.1')


def problem(image, minor):
    return checks.problems({'sandbox_image': {'containerd_sandbox_image': image, 'ipu_k8s_kubernetes_minor': minor,
                                              'kubernetes': KUBERNETES}})


def test_a_minor_without_a_pause_version_is_refused_naming_the_setting():
    [message] = problem(default_for('1.37'), '1.37')
    assert message.startswith('containerd_sandbox_image is "registry.k8s.io/pause:": no pause version is known for '
                              'Kubernetes 1.37'), message
    assert '`kubeadm config images list`' in message


def test_a_site_image_with_a_tag_is_its_own_choice_on_any_minor():
    assert problem('mirror.example/pause:3.10.2', '1.37') == []


@pytest.mark.parametrize('minor', sorted(set(PREFLIGHT_MINORS) & set(TABLE)))
def test_every_minor_preflight_knows_and_the_table_has_passes(minor):
    assert problem(default_for(minor), minor) == []


@pytest.mark.parametrize('image,minor,warned', [
    ('registry.k8s.io/pause:3.10.1', '1.35', False),
    ('mirror.example:5000/k8s/pause:3.10.1', '1.35', False),
    ('mirror.example:5000/k8s/pause:3.10.1@sha256:' + 'a' * 64, '1.35', False),
    ('registry.k8s.io/pause:3.10', '1.35', True),
    ('mirror.example:5000/pause', '1.36', True),
    ('registry.k8s.io/pause:3.10', '1.37', False),
])
def test_a_sandbox_image_other_than_kubeadms_pause_is_warned_of(image, minor, warned):
    message = checks.sandbox_image_warning(image, minor, KUBERNETES)
    assert bool(message) is warned, message
    if warned:
        assert message.startswith('containerd_sandbox_image is "%s", but kubeadm %s expects pause:%s'
                                  % (image, minor, TABLE[minor])), message
