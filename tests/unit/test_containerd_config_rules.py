"""The config.toml the containerd role writes (plugins/filter/containerd_config.py), judged by
what containerd does with it (tests/containerd_upstream.py restates containerd's rules, citing
its lines; the list of rules and the test of each: tests/schemas/containerd/README.md).

The 1.x input is the real output of `containerd config default` of Debian 12's containerd
1.6.20 (tests/fixtures/containerd/config-default-1.6.20.toml). No containerd 2.x binary runs
here: its input is the version 3 layout written by hand from the struct tags and the default
text cited in containerd_upstream.py (plugin IDs, pinned_images.sandbox, registry.config_path,
the runc runtime's options). The expected values are the role's settings as given to the
filter, never computed by it.
"""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'tests'))
import containerd_upstream as upstream  # noqa: E402

_spec = importlib.util.spec_from_file_location('containerd_config', ROOT / 'plugins' / 'filter' / 'containerd_config.py')
containerd_config = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(containerd_config)

DEBIAN_1_6 = (ROOT / 'tests' / 'fixtures' / 'containerd' / 'config-default-1.6.20.toml').read_text()
PAUSE, CERTS = 'registry.k8s.io/pause:3.10', '/etc/containerd/certs.d'

# containerd 2.x (version 3): the sections the CRI plugins read, as `containerd config default`
# lays them out (internal/cri/config/config_unix.go:39,68-69 at v2.1.5 for the values).
V3 = """version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ''
  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'
          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            SystemdCgroup = false
"""


def written(default, systemd_cgroup=True, sandbox_image=PAUSE, registry_dir=CERTS):
    return tomllib.loads(containerd_config.containerd_config(default, systemd_cgroup, sandbox_image, registry_dir))


@pytest.mark.parametrize('systemd_cgroup', [True, False])
def test_containerd_1_6_reads_the_three_settings_where_the_role_writes_them(systemd_cgroup):
    config = written(DEBIAN_1_6, systemd_cgroup)
    assert upstream.read_version(config, 1) == 2
    assert upstream.cri_settings(config, 1) == (systemd_cgroup, PAUSE, CERTS)


@pytest.mark.parametrize('systemd_cgroup', [True, False])
def test_containerd_2_reads_the_three_settings_where_the_role_writes_them(systemd_cgroup):
    config = written(V3, systemd_cgroup, 'registry.example:5000/pause:3.10', '/srv/certs.d')
    assert upstream.read_version(config, 2) == 3
    assert upstream.cri_settings(config, 2) == (systemd_cgroup, 'registry.example:5000/pause:3.10', '/srv/certs.d')


def test_the_role_leaves_the_cri_level_systemd_cgroup_false_on_1_x():
    config = written(DEBIAN_1_6)
    assert config['plugins'][upstream.CRI_V1]['systemd_cgroup'] is False


# --- the restatement refuses what containerd refuses ----------------------------------------

def debian(**cri_changes):
    config = tomllib.loads(DEBIAN_1_6)
    config['plugins'][upstream.CRI_V1].update(cri_changes)
    return config


@pytest.mark.parametrize('config, major, words', [
    (dict(tomllib.loads(DEBIAN_1_6), version=3), 1, 'unsupported config version'),
    ({'version': 2, 'plugins': {'cri': {}}}, 1, 'invalid plugin key URI'),
    (debian(systemd_cgroup=True), 1, '`systemd_cgroup` only works for runtime io.containerd.runtime.v1.linux'),
    (debian(registry={'config_path': CERTS, 'mirrors': {'docker.io': {'endpoint': ['https://m']}}}), 1,
     '`mirrors` cannot be set'),
    (debian(containerd={'default_runtime_name': 'crun', 'runtimes': {}}), 1, 'no corresponding runtime'),
    (dict(tomllib.loads(V3), version=4), 2, 'equal to or less than `3`'),
])
def test_the_restatement_refuses_what_containerd_refuses(config, major, words):
    with pytest.raises(ValueError, match=words):
        upstream.cri_settings(config, major)


def test_a_1_x_file_without_version_has_its_cri_section_ignored():
    config = tomllib.loads(DEBIAN_1_6)
    del config['version']
    assert upstream.read_version(config, 1) == 1
    assert upstream.cri_settings(config, 1) == (None, None, None)


def test_systemd_cgroup_outside_the_runc_options_is_not_read():
    config = tomllib.loads(DEBIAN_1_6)
    runc = config['plugins'][upstream.CRI_V1]['containerd']['runtimes']['runc']
    runc['SystemdCgroup'] = runc['options'].pop('SystemdCgroup')
    assert upstream.cri_settings(config, 1)[0] is None
