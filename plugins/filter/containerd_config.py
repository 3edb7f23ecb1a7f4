"""containerd's config.toml: the installed containerd's own `containerd config default` with
three settings changed, whatever the layout of its major.

containerd 1.6/1.7 print [plugins."io.containerd.grpc.v1.cri"...runc.options] with
SystemdCgroup = false and sandbox_image = "..."; 2.x prints
[plugins.'io.containerd.cri.v1.runtime'...runc.options] and sandbox = '...'. Releases
2.0.0-2.0.6 and 2.1.0-2.1.4 leave SystemdCgroup out of the default, so it is then added
under the runc options table. Only the CamelCase runc option is touched: the legacy
cri-level systemd_cgroup key (set by older guides) makes containerd 1.3+ refuse to load the
CRI plugin. Every config_path (the CRI registry's and, from 1.7, the transfer service's)
names the registry hosts directory.

    "{{ __containerd_default_config.stdout | containerd_config(containerd_systemd_cgroup,
        containerd_sandbox_image, containerd_registry_config_dir) }}"
"""
import json
import re

from ansible.errors import AnsibleFilterError

SYSTEMD_CGROUP = re.compile(r'^(\s*)SystemdCgroup = \w+$', re.M)
RUNC_OPTIONS = re.compile(
    r'''^(\s*)(\[plugins\.("io\.containerd\.grpc\.v1\.cri"|'io\.containerd\.cri\.v1\.runtime')'''
    r'''\.containerd\.runtimes\.runc\.options\])$''', re.M)
SANDBOX_IMAGE = re.compile(r'^(\s*)sandbox_image = .*$', re.M)
SANDBOX = re.compile(r'^(\s*)sandbox = .*$', re.M)
CONFIG_PATH = re.compile(r'^(\s*)config_path = .*$', re.M)


def containerd_config(default_config, systemd_cgroup, sandbox_image, registry_config_dir):
    """The default configuration with SystemdCgroup, the sandbox image and every config_path set.

    Refuses a layout where any of the three finds no place (a containerd this role does not know).
    """
    value = str(systemd_cgroup).lower()
    text, found = SYSTEMD_CGROUP.subn(lambda m: '%sSystemdCgroup = %s' % (m.group(1), value), default_config)
    if not found:
        text, found = RUNC_OPTIONS.subn(
            lambda m: '%s%s\n%s  SystemdCgroup = %s' % (m.group(1), m.group(2), m.group(1), value), text)
    text, images = SANDBOX_IMAGE.subn(lambda m: '%ssandbox_image = "%s"' % (m.group(1), sandbox_image), text)
    text, sandboxes = SANDBOX.subn(lambda m: "%ssandbox = '%s'" % (m.group(1), sandbox_image), text)
    text, paths = CONFIG_PATH.subn(lambda m: '%sconfig_path = %s' % (m.group(1), json.dumps(registry_config_dir)),
                                   text)
    missing = [name for name, count in (('SystemdCgroup (or the runc options table)', found),
                                        ('sandbox image', images + sandboxes), ('registry config_path', paths))
               if not count]
    if missing:
        raise AnsibleFilterError(
            '`containerd config default` of the installed containerd has no %s where this role expects it '
            '(it knows the 1.6, 1.7 and 2.x layouts). Check `containerd --version` and update '
            'plugins/filter/containerd_config.py.' % ', '.join(missing))
    return text


class FilterModule:
    def filters(self):
        return {'containerd_config': containerd_config}
