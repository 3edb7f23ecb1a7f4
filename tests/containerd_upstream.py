"""What containerd does with /etc/containerd/config.toml, restated in Python for
tests/unit/test_containerd_config_rules.py: which version it reads the file as, where the CRI
plugin reads SystemdCgroup, the sandbox image and the registry hosts directory, and what makes
it refuse the file or the CRI plugin. Read in github.com/containerd/containerd at v1.6.39,
v1.7.28 and v2.1.5 (the newest patch of each series the project's Kubernetes rows name,
tests/schemas/containerd/kubernetes-support.yaml); the list of rules and the test of each:
tests/schemas/containerd/README.md. The file is parsed with Python's tomllib, as containerd
parses it with go-toml (v1 in 1.x, v2 in 2.x).
"""

# plugin IDs: 1.x CRI is Type plugin.GRPCPlugin, ID "cri" (pkg/cri/cri.go:51-52 at v1.6.39);
# 2.x splits it into Type CRIServicePlugin "images" and "runtime" (plugins/cri/images/plugin.go:44-45,
# plugins/cri/runtime/plugin.go:48-49 at v2.1.5).
CRI_V1 = 'io.containerd.grpc.v1.cri'
CRI_IMAGES = 'io.containerd.cri.v1.images'
CRI_RUNTIME = 'io.containerd.cri.v1.runtime'
RUNC_V2 = 'io.containerd.runc.v2'
RUNTIME_LINUX_V1 = 'io.containerd.runtime.v1.linux'
# version/version.go:41 at v2.1.5: ConfigVersion = 3.
CONFIG_VERSION_2X = 3


def _get(data, *path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def read_version(config, major):
    """The version containerd reads the file as, or raises ValueError as containerd refuses it.
    1.x: no version is 1 (services/server/config/config.go:91-96), above 2 is refused
    ("unsupported config version", :106-110), every plugin key must be a URI io.containerd.x.vx
    (:122-126; the same lines at v1.6.39 and v1.7.28). 2.x: above 3 is refused
    (cmd/containerd/server/config/config.go:111-114); 1 and 2 are migrated to 3 on every start
    (cmd/containerd/server/server.go:135-142,255-267)."""
    version = config.get('version', 0)
    if major == 1:
        version = version or 1
        if version > 2:
            raise ValueError('unsupported config version `%d`' % version)
        if version == 2:
            for key in config.get('plugins') or {}:
                if not key.startswith('io.containerd.') or len(key.split('.', 3)) < 4:
                    raise ValueError('invalid plugin key URI %r expect io.containerd.x.vx' % key)
        return version
    if version > CONFIG_VERSION_2X:
        raise ValueError('expected containerd config version equal to or less than `3`, got `%d`' % version)
    return version


def cri_settings(config, major):
    """(systemd_cgroup, sandbox_image, registry_config_path) as the CRI plugin reads them, or
    raises ValueError where containerd refuses the file or the CRI plugin refuses its config.

    1.x, version 2: the CRI plugin's section is plugins."io.containerd.grpc.v1.cri" (a version 1
    file keys it "cri", config.go:218-221 at v1.6.39, :181-185 at v1.7.28, so the URI section of a
    file without version is never read). In it (pkg/cri/config/config.go at v1.7.28):
    sandbox_image (:299), registry.config_path (:279, :231), containerd.default_runtime_name
    (:126) naming one of containerd.runtimes (:136) or the plugin refuses to load (:455-460), and
    the runtime's options table (:93), decoded for runtime_type io.containerd.runc.v2 into runc's
    options, where SystemdCgroup is read (pkg/cri/server/helpers.go:335-354; the default text
    pkg/cri/config/config_unix.go:54-55). The CRI-level systemd_cgroup (:305) makes the plugin
    refuse to load unless the default runtime is the v1 linux one (:463-466; v1.6.39 :387-390),
    and mirrors beside a config_path too (:507-511; v1.6.39 :423-426).

    2.x (version 3, or 2 after migration): the image service's section
    plugins.'io.containerd.cri.v1.images' holds pinned_images.sandbox (internal/cri/config/config.go:305,
    config_unix.go:39) and registry.config_path (:314, :231; mirrors beside it refused, :486-489);
    plugins.'io.containerd.cri.v1.runtime' holds containerd.runtimes.<name>.options, decoded into
    runc's options (config.go:741-763; the default text config_unix.go:68-69). A version 2 file's
    plugins."io.containerd.grpc.v1.cri".sandbox_image and .registry move to the images section
    on start (plugins/cri/images/plugin.go:164-211); that migration is not restated."""
    version = read_version(config, major)
    plugins = config.get('plugins') or {}
    if major == 1:
        if version < 2:
            return None, None, None  # the CRI plugin reads plugins.cri: no setting of the URI section counts
        cri = plugins.get(CRI_V1) or {}
        containerd = cri.get('containerd') or {}
        default = containerd.get('default_runtime_name')
        runtimes = containerd.get('runtimes') or {}
        if not default:
            raise ValueError('`default_runtime_name` is empty')
        if default not in runtimes:
            raise ValueError('no corresponding runtime configured in `containerd.runtimes` for `containerd` '
                             '`default_runtime_name = "%s"' % default)
        if cri.get('systemd_cgroup') and runtimes[default].get('runtime_type') != RUNTIME_LINUX_V1:
            raise ValueError('`systemd_cgroup` only works for runtime %s' % RUNTIME_LINUX_V1)
        registry = cri.get('registry') or {}
        if registry.get('mirrors') and registry.get('config_path'):
            raise ValueError('`mirrors` cannot be set when `config_path` is provided')
        runc = runtimes.get('runc') or {}
        systemd = _get(runc, 'options', 'SystemdCgroup') if runc.get('runtime_type') == RUNC_V2 else None
        return systemd, cri.get('sandbox_image'), registry.get('config_path')
    if version < CONFIG_VERSION_2X:
        # The CRI plugins' migrations of a version 2 file (plugins/cri/images/plugin.go:164-211,
        # plugins/cri/runtime/plugin.go) are not restated: the role writes what the installed 2.x prints.
        raise NotImplementedError('a version %d file on containerd 2.x is migrated; not restated here' % version)
    images = plugins.get(CRI_IMAGES) or {}
    registry = images.get('registry') or {}
    if registry.get('mirrors') and registry.get('config_path'):
        raise ValueError('`mirrors` cannot be set when `config_path` is provided')
    runc = _get(plugins, CRI_RUNTIME, 'containerd', 'runtimes', 'runc') or {}
    systemd = _get(runc, 'options', 'SystemdCgroup') if runc.get('runtime_type') == RUNC_V2 else None
    return systemd, _get(images, 'pinned_images', 'sandbox'), registry.get('config_path')
