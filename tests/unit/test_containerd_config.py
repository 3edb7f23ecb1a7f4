"""The containerd role's config.toml rewrite (plugins/filter/containerd_config.py)
on each containerd release's `containerd config default` layout.

tests/fixtures/containerd/config-default-1.6.20.toml is the real output of `containerd config
default` of Debian 12's containerd 1.6.20~ds1-1+deb12u3 (the package's /usr/bin/containerd),
config-default-2.1.9.toml that of Debian forky's containerd 2.1.9+ds1-5 (read in the
molecule/containerd2 guest, `containerd --version`: 2.1.9+unknown); the 1.7 and 2.x layouts
below are the parts of their output the filter reads, as a Ubuntu or Docker-repository node
gets them. The expected lines are written by hand.
"""

import importlib.util
import tomllib
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / 'roles' / 'containerd'
DEFAULTS = yaml.safe_load((ROLE / 'defaults' / 'main.yml').read_text())
# The filter's cases render one sandbox image; the role's default follows the Kubernetes minor
# (tests/unit/test_containerd_pause_versions.py).
DEFAULTS['containerd_sandbox_image'] = 'registry.k8s.io/pause:3.10'
_spec = importlib.util.spec_from_file_location('containerd_config', ROOT / 'plugins' / 'filter' / 'containerd_config.py')
containerd_config = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(containerd_config)

DEBIAN_1_6 = (ROOT / 'tests' / 'fixtures' / 'containerd' / 'config-default-1.6.20.toml').read_text()
DEBIAN_2_1 = (ROOT / 'tests' / 'fixtures' / 'containerd' / 'config-default-2.1.9.toml').read_text()

V1_7 = """version = 2
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.8"
    systemd_cgroup = false
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
    [plugins."io.containerd.grpc.v1.cri".containerd]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          sandbox_mode = "podsandbox"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            ShimCgroup = ""
            SystemdCgroup = false
  [plugins."io.containerd.transfer.v1.local"]
    config_path = ""
    max_concurrent_downloads = 3
"""

V2_WITHOUT_KEY = """version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          sandboxer = 'podsandbox'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            BinaryName = ''
            ShimCgroup = ''
"""

V2_WITH_KEY = V2_WITHOUT_KEY.replace("ShimCgroup = ''\n", "ShimCgroup = ''\n            SystemdCgroup = false\n")


def render(default_config, **overrides):
    """config.toml for one `containerd config default` output, the role's defaults overridden."""
    settings = dict(DEFAULTS, **overrides)
    return containerd_config.containerd_config(default_config, settings['containerd_systemd_cgroup'],
                                               settings['containerd_sandbox_image'],
                                               settings['containerd_registry_config_dir'])


def changed_lines(before, after):
    return [(b, a) for b, a in zip(before.splitlines(), after.splitlines(), strict=True) if b != a]


def test_debian_1_6_output_changes_in_exactly_the_three_lines():
    assert changed_lines(DEBIAN_1_6, render(DEBIAN_1_6)) == [
        ('    sandbox_image = "registry.k8s.io/pause:3.6"', '    sandbox_image = "registry.k8s.io/pause:3.10"'),
        ('            SystemdCgroup = false', '            SystemdCgroup = true'),
        ('      config_path = ""', '      config_path = "/etc/containerd/certs.d"')]


def test_the_rewritten_debian_1_6_config_is_toml_with_the_three_values():
    cri = tomllib.loads(render(DEBIAN_1_6))['plugins']['io.containerd.grpc.v1.cri']
    assert cri['sandbox_image'] == 'registry.k8s.io/pause:3.10'
    assert cri['containerd']['runtimes']['runc']['options']['SystemdCgroup'] is True
    assert cri['registry']['config_path'] == '/etc/containerd/certs.d'
    assert cri['systemd_cgroup'] is False  # the legacy CRI-level key: true makes containerd refuse the CRI plugin


def test_debian_forky_2_1_9_output_changes_in_exactly_its_cgroup_key_and_both_config_paths():
    # Its sandbox is the role's default pause:3.10 already, so that line stays.
    assert changed_lines(DEBIAN_2_1, render(DEBIAN_2_1)) == [
        ("      config_path = ''", '      config_path = "/etc/containerd/certs.d"'),
        ('            SystemdCgroup = false', '            SystemdCgroup = true'),
        ("    config_path = ''", '    config_path = "/etc/containerd/certs.d"')]


def test_the_rewritten_debian_forky_2_1_9_config_is_version_3_with_the_three_values_in_the_cri_v1_plugins():
    # Where containerd 2.1.9 reads them: docs/cri/config.md at v2.1.9, lines 33-35 and 246-250.
    config = tomllib.loads(render(DEBIAN_2_1, containerd_sandbox_image='mirror.example/pause:3.9'))
    assert config['version'] == 3
    plugins = config['plugins']
    assert plugins['io.containerd.cri.v1.runtime']['containerd']['runtimes']['runc']['options'][
        'SystemdCgroup'] is True
    assert plugins['io.containerd.cri.v1.images']['pinned_images']['sandbox'] == 'mirror.example/pause:3.9'
    assert plugins['io.containerd.cri.v1.images']['registry']['config_path'] == '/etc/containerd/certs.d'
    # 2.x's io.containerd.grpc.v1.cri is the CRI service's own (streaming): none of 1.x's three there.
    assert {'containerd', 'sandbox_image', 'registry'}.isdisjoint(plugins['io.containerd.grpc.v1.cri'])


def test_1_7_sets_both_config_paths_and_leaves_the_rest():
    assert [a.strip() for _, a in changed_lines(V1_7, render(V1_7))] == [
        'sandbox_image = "registry.k8s.io/pause:3.10"', 'config_path = "/etc/containerd/certs.d"',
        'SystemdCgroup = true', 'config_path = "/etc/containerd/certs.d"']


def test_2x_sets_the_registry_directory_and_the_cgroup_key_it_has():
    # 2.x's own sandbox is already the role's default pause:3.10, so that line stays.
    assert changed_lines(V2_WITH_KEY, render(V2_WITH_KEY)) == [
        ("      config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'",
         '      config_path = "/etc/containerd/certs.d"'),
        ('            SystemdCgroup = false', '            SystemdCgroup = true')]


def test_2x_without_the_key_gets_it_under_the_runc_options_table():
    config = render(V2_WITHOUT_KEY, containerd_sandbox_image='mirror.example/pause:3.9')
    assert config == V2_WITHOUT_KEY.replace(
        "      sandbox = 'registry.k8s.io/pause:3.10'", "      sandbox = 'mirror.example/pause:3.9'").replace(
        "      config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'",
        '      config_path = "/etc/containerd/certs.d"').replace(
        ".runc.options]\n", ".runc.options]\n            SystemdCgroup = true\n")
    assert tomllib.loads(config)['plugins']['io.containerd.cri.v1.runtime']['containerd']['runtimes']['runc'][
        'options']['SystemdCgroup'] is True


@pytest.mark.parametrize('layout', [DEBIAN_1_6, V1_7, V2_WITH_KEY, V2_WITHOUT_KEY, DEBIAN_2_1],
                         ids=['1.6', '1.7', '2.x', '2.0-2.1-without-key', '2.1.9'])
def test_systemd_cgroup_false_is_written_false_once(layout):
    config = render(layout, containerd_systemd_cgroup=False)
    assert config.count('SystemdCgroup = false') == 1 and 'SystemdCgroup = true' not in config


def test_the_sandbox_image_and_registry_directory_are_quoted_for_toml():
    config = render(V1_7, containerd_sandbox_image='mirror.example/pause:3.9',
                    containerd_registry_config_dir='/srv/certs "d"')
    assert '    sandbox_image = "mirror.example/pause:3.9"' in config.splitlines()
    assert config.count('config_path = "/srv/certs \\"d\\""\n') == 2
    assert tomllib.loads(config)['plugins']['io.containerd.transfer.v1.local']['config_path'] == '/srv/certs "d"'


def test_the_2x_registry_default_becomes_the_one_hosts_directory():
    config = tomllib.loads(render(V2_WITH_KEY, containerd_registry_config_dir='/srv/certs.d'))
    assert config['plugins']['io.containerd.cri.v1.images']['registry']['config_path'] == '/srv/certs.d'


MESSAGE = ('`containerd config default` of the installed containerd has no %s where this role expects it '
           '(it knows the 1.6, 1.7 and 2.x layouts). Check `containerd --version` and update '
           'plugins/filter/containerd_config.py.')


@pytest.mark.parametrize('missing, names', [
    ('SystemdCgroup', 'SystemdCgroup (or the runc options table)'),
    ('sandbox_image', 'sandbox image'),
    ('config_path', 'registry config_path'),
])
def test_a_layout_without_a_setting_is_refused_naming_it(missing, names):
    layout = V1_7.replace('runc.options]', 'runc.opts]') if missing == 'SystemdCgroup' else V1_7
    layout = '\n'.join(line for line in layout.splitlines() if not line.strip().startswith(missing)) + '\n'
    with pytest.raises(AnsibleFilterError) as refused:
        render(layout)
    assert refused.value.message == MESSAGE % names


def test_an_unknown_layout_is_refused_naming_all_three():
    with pytest.raises(AnsibleFilterError) as refused:
        render('version = 4\n[plugins]\n')
    assert refused.value.message == MESSAGE % (
        'SystemdCgroup (or the runc options table), sandbox image, registry config_path')


def test_the_plugin_offers_the_filter():
    assert containerd_config.FilterModule().filters() == {'containerd_config': containerd_config.containerd_config}


def test_a_layout_with_both_sandbox_keys_gets_both_set():
    layout = V1_7.replace('    systemd_cgroup = false\n', "    systemd_cgroup = false\n    sandbox = 'pause:3.6'\n")
    config = render(layout)
    assert '    sandbox_image = "registry.k8s.io/pause:3.10"\n' in config
    assert "    sandbox = 'registry.k8s.io/pause:3.10'\n" in config
