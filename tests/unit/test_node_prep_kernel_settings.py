"""roles/node_prep's kernel tasks, run by the modules they call as the pinned `ansible`
package ships them (community.general.modprobe, ansible.posix.sysctl), on a stand-in kernel.

The tasks are read from roles/node_prep/tasks/main.yml and run in the file's order, each loop
item with its arguments templated from the role's defaults as Ansible templates them. The
stand-in kernel (StandInKernel) is the only thing replaced: /proc/modules, modules.builtin,
/etc/modules-load.d and /etc/modprobe.d live in tmp_path, and `modprobe` and `sysctl` are
answered as the real commands answer (kmod 30, procps 4) and recorded. The kernel has the
net.bridge.* keys only once br_netfilter is loaded, as Linux does.
"""

import builtins
import importlib.util
import shlex
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from module_harness import ModuleExit, ModuleFail

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / 'roles' / 'node_prep'
COLLECTIONS = Path(basic.__file__).resolve().parents[2] / 'ansible_collections'  # the pinned ansible package's
MODULES = {'community.general.modprobe': COLLECTIONS / 'community/general/plugins/modules/modprobe.py',
           'ansible.posix.sysctl': COLLECTIONS / 'ansible/posix/plugins/modules/sysctl.py'}
MODPROBE, SYSCTL = '/sbin/modprobe', '/sbin/sysctl'

SYSCTLS = {'net.bridge.bridge-nf-call-iptables': '1', 'net.ipv4.ip_forward': '1',
           'net.ipv4.tcp_rmem': '4096 131072 6291456'}
# What ansible.posix.sysctl writes for SYSCTLS into a new file, one `name=value` line each in order.
FILE_CONTENT = 'net.bridge.bridge-nf-call-iptables=1\nnet.ipv4.ip_forward=1\nnet.ipv4.tcp_rmem=4096 131072 6291456\n'
BRIDGE_KEYS = ('net.bridge.bridge-nf-call-iptables', 'net.bridge.bridge-nf-call-ip6tables')
PROC_LINE = '%s 32768 0 - Live 0x0\n'


class StandInKernel:
    """The node's kernel as modprobe and sysctl see it: modules loaded (written to /proc/modules),
    modules it can load, and its parameters (name -> value, words as sysctl prints them)."""

    def __init__(self, path, loadable=('overlay', 'br_netfilter'), values=None):
        self.path = path
        self.loadable = set(loadable)
        self.values = {'net.ipv4.ip_forward': '0', 'net.ipv4.tcp_rmem': '4096\t131072\t6291456'}
        self.values.update(values or {})
        self.answers = {}  # argv words after the binary -> (rc, out, err), overriding the kernel
        self.calls = []
        self.proc_modules('')

    def proc_modules(self, *names):
        (self.path / 'proc-modules').write_text(''.join(PROC_LINE % name for name in names if name))

    @property
    def loaded(self):
        return [line.split()[0] for line in (self.path / 'proc-modules').read_text().splitlines()]

    def load(self, name):
        self.proc_modules(*(self.loaded + [name.replace('-', '_')]))
        if name == 'br_netfilter':
            for key in BRIDGE_KEYS:
                self.values.setdefault(key, '0')

    def run_command(self, module, args, **kwargs):
        # A string is split as AnsibleModule.run_command splits it (shlex, no shell).
        argv = shlex.split(args) if isinstance(args, str) else list(args)
        self.calls.append(argv)
        words = tuple(argv[1:])
        if words in self.answers:
            return self.answers[words]
        if argv[0] == MODPROBE:
            return self.modprobe(words)
        if argv[0] == SYSCTL:
            return self.sysctl(words)
        raise AssertionError('unexpected command %r' % (argv,))

    def modprobe(self, words):
        dry_run = '-n' in words
        name = [word for word in words if not word.startswith('-')][0]
        if name not in self.loadable:
            return 1, '', 'modprobe: FATAL: Module %s not found in directory /lib/modules/6.1.0-28-amd64\n' % name
        if '--first-time' in words and name.replace('-', '_') in self.loaded:
            return 1, '', 'modprobe: ERROR: could not insert \'%s\': Module already in kernel\n' % name
        if not dry_run:
            self.load(name)
        return 0, '', ''

    def missing(self, key):
        # procps-ng 4.0.2 (`sysctl -w` and `sysctl -p` of a key the kernel lacks): exit code 1 and this line.
        return 1, '', 'sysctl: cannot stat /proc/sys/%s: No such file or directory\n' % key.replace('.', '/')

    def sysctl(self, words):
        if words[:2] == ('-e', '-n'):
            key = words[2]  # -e: an unknown key prints nothing, exit code 0 (procps-ng 4.0.2)
            return (0, self.values[key] + '\n', '') if key in self.values else (0, '', '')
        if words[0] == '-w':
            key, value = words[1].split('=', 1)
            if key not in self.values:
                return self.missing(key)
            self.values[key] = '\t'.join(value.split())
            return 0, '%s = %s\n' % (key, value), ''
        if words[0] == '-p':
            out = ''
            for line in Path(words[1]).read_text().splitlines():
                key, value = (part.strip() for part in line.split('=', 1))
                if key not in self.values:
                    return self.missing(key)
                self.values[key] = '\t'.join(value.split())
                out += '%s = %s\n' % (key, value)
            return 0, out, ''
        raise AssertionError('unexpected sysctl %r' % (words,))


def role_tasks():
    """(module name, task) of each kernel task in roles/node_prep/tasks/main.yml, in the file's order."""
    tasks = yaml.safe_load((ROLE / 'tasks' / 'main.yml').read_text())
    return [(name, task) for task in tasks for name in MODULES if name in task]


def load(name, path):
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
        'bundled_' + name.replace('.', '_'), MODULES[name]))
    module.__spec__.loader.exec_module(module)
    if name == 'community.general.modprobe':
        # The module opens /proc/modules and /lib/modules/<release>/modules.builtin by name.
        fixed = {'/proc/modules': path / 'proc-modules',
                 '/lib/modules/6.1.0-28-amd64/modules.builtin': path / 'modules.builtin'}
        module.open = lambda file, *a, **kw: builtins.open(fixed.get(file, file), *a, **kw)
        module.RELEASE_VER = '6.1.0-28-amd64'
        module.MODULES_LOAD_LOCATION = str(path / 'modules-load.d')
        module.PARAMETERS_FILES_LOCATION = str(path / 'modprobe.d')
    return module


@pytest.fixture
def node(tmp_path, monkeypatch):
    """node(settings=None, check_mode=False, binaries=None) runs the role's kernel tasks with the
    role's defaults and these settings -> [(module name, item's args, result)]; node.kernel is the
    stand-in kernel, node.path holds its files. A module's fail_json raises ModuleFail."""
    for name in ('modules-load.d', 'modprobe.d'):
        (tmp_path / name).mkdir()
    (tmp_path / 'modules.builtin').write_text('kernel/fs/ext4/ext4.ko\n')
    kernel = StandInKernel(tmp_path)
    defaults = yaml.safe_load((ROLE / 'defaults' / 'main.yml').read_text())

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, **kwargs):
        raise ModuleFail(kwargs)

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        path = (binaries if binaries is not None else {'modprobe': MODPROBE, 'sysctl': SYSCTL}).get(arg)
        if path is None and required:
            self.fail_json(msg='Failed to find required executable "%s"' % arg)
        return path

    binaries = None
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, *a, **kw: kernel.run_command(self, *a, **kw))

    def run(settings=None, check_mode=False, tools=None):
        nonlocal binaries
        binaries = tools
        variables = dict(defaults, node_prep_sysctls=SYSCTLS, node_prep_sysctl_file=str(tmp_path / '90-ipu-k8s.conf'))
        variables.update(settings or {})
        templar = Templar(loader=DataLoader(), variables=variables)
        done = []
        for name, task in role_tasks():
            module = load(name, tmp_path)
            for item in templar.template(trust_as_template(task['loop'])):
                templar.available_variables = dict(variables, item=item)
                args = templar.template({key: trust_as_template(value) if isinstance(value, str) else value
                                         for key, value in task[name].items()})
                with patch_module_args(dict(args, _ansible_check_mode=check_mode)):
                    try:
                        module.main()
                    except ModuleExit as exited:
                        done.append((name, args, exited.result))
                        continue
                raise AssertionError('%s returned without exit_json or fail_json' % name)
        return done

    run.path, run.kernel = tmp_path, kernel
    return run


def converge_files(node):
    for name in ('overlay', 'br_netfilter'):
        (node.path / 'modules-load.d' / (name + '.conf')).write_text(name + '\n')
    (node.path / '90-ipu-k8s.conf').write_text(FILE_CONTENT)


def changed(done):
    return [args['name'] for _, args, result in done if result['changed']]


def commands_that_change(kernel):
    """The recorded commands other than reads (`modprobe -n`, `sysctl -e -n`)."""
    return [c for c in kernel.calls if not (c[0] == MODPROBE and '-n' in c) and c[1:3] != ['-e', '-n']]


def test_the_role_calls_the_bundled_modules_modules_first_with_persistence_and_the_running_value():
    # The net.bridge.* keys exist only once br_netfilter is loaded: modprobe must come first.
    assert [name for name, _ in role_tasks()] == ['community.general.modprobe', 'ansible.posix.sysctl']
    (_, modprobe), (_, sysctl) = role_tasks()
    assert modprobe['community.general.modprobe']['persistent'] == 'present'
    assert sysctl['ansible.posix.sysctl']['sysctl_set'] is True


def test_a_fresh_node_gets_every_module_and_parameter_now_and_in_the_files(node):
    done = node()
    assert node.kernel.loaded == ['overlay', 'br_netfilter']
    assert {key: node.kernel.values[key] for key in SYSCTLS} == {key: '\t'.join(value.split())
                                                                 for key, value in SYSCTLS.items()}
    assert (node.path / 'modules-load.d' / 'overlay.conf').read_text() == 'overlay\n'
    assert (node.path / 'modules-load.d' / 'br_netfilter.conf').read_text() == 'br_netfilter\n'
    assert (node.path / '90-ipu-k8s.conf').read_text() == FILE_CONTENT
    assert oct((node.path / '90-ipu-k8s.conf').stat().st_mode & 0o777) == '0o644'
    assert changed(done) == ['overlay', 'br_netfilter'] + list(SYSCTLS)


def test_a_converged_node_is_read_and_left_alone(node):
    converge_files(node)
    node.kernel.proc_modules('br_netfilter', 'bridge')
    (node.path / 'modules.builtin').write_text('kernel/fs/overlayfs/overlay.ko\n')  # built in counts as loaded
    node.kernel.values.update({key: '\t'.join(value.split()) for key, value in SYSCTLS.items()})
    done = node()
    assert changed(done) == []
    assert commands_that_change(node.kernel) == []
    assert (node.path / '90-ipu-k8s.conf').read_text() == FILE_CONTENT


def test_a_second_run_changes_nothing(node):
    node()
    node.kernel.calls.clear()
    assert changed(node()) == []
    assert commands_that_change(node.kernel) == []


def test_files_already_right_do_not_hide_a_kernel_without_them(node):
    # A run killed after writing the files, or a reboot with systemd-modules-load masked.
    converge_files(node)
    node.kernel.values.update({'net.bridge.bridge-nf-call-iptables': '1'})
    done = node()
    assert [MODPROBE, 'overlay'] in node.kernel.calls and [MODPROBE, 'br_netfilter'] in node.kernel.calls
    assert node.kernel.loaded == ['overlay', 'br_netfilter'] and node.kernel.values['net.ipv4.ip_forward'] == '1'
    assert changed(done) == ['overlay', 'br_netfilter', 'net.ipv4.ip_forward']
    assert (node.path / '90-ipu-k8s.conf').read_text() == FILE_CONTENT


def test_check_mode_reports_without_loading_setting_or_writing(node):
    # br_netfilter not loaded: its keys cannot be read yet, which counts as a change.
    node.kernel.values['net.ipv4.tcp_rmem'] = '4096\t131072\t6291456'
    done = node(check_mode=True)
    assert commands_that_change(node.kernel) == []
    assert node.kernel.loaded == [] and node.kernel.values['net.ipv4.ip_forward'] == '0'
    assert sorted(p.name for p in node.path.rglob('*.conf')) == []
    assert changed(done) == ['overlay', 'br_netfilter'] + list(SYSCTLS)


@pytest.mark.parametrize('value, printed', [(True, '1'), ('true', '1'), ('Yes', '1'), ('yes', '1'), (False, '0'),
                                            ('false', '0'), ('no', '0'), ('NO', '0'), (0, '0'), (1, '1')])
def test_true_and_false_are_written_and_compared_as_1_and_0(node, value, printed):
    node.kernel.values['net.ipv4.ip_forward'] = '1' if printed == '0' else '0'
    node({'node_prep_sysctls': {'net.ipv4.ip_forward': value}})
    assert (node.path / '90-ipu-k8s.conf').read_text() == 'net.ipv4.ip_forward=%s\n' % printed
    assert node.kernel.values['net.ipv4.ip_forward'] == printed
    assert changed(node({'node_prep_sysctls': {'net.ipv4.ip_forward': value}})) == []


def test_values_are_compared_word_by_word_as_sysctl_prints_them(node):
    # sysctl -n prints net.ipv4.tcp_rmem with tabs; the setting has spaces.
    (node.path / '90-ipu-k8s.conf').write_text('net.ipv4.tcp_rmem=4096 131072 6291456\n')
    done = node({'node_prep_kernel_modules': [], 'node_prep_sysctls': {'net.ipv4.tcp_rmem': '4096 131072 6291456'}})
    assert changed(done) == [] and commands_that_change(node.kernel) == []


def test_a_module_the_kernel_cannot_load_is_named_and_not_persisted(node):
    with pytest.raises(ModuleFail) as failed:
        node({'node_prep_kernel_modules': ['rdma_rxe']})
    assert failed.value.result['msg'] == ('modprobe: FATAL: Module rdma_rxe not found in directory '
                                          '/lib/modules/6.1.0-28-amd64\n')
    assert failed.value.result['rc'] == 1 and failed.value.result['stderr'] == failed.value.result['msg']
    assert not (node.path / 'modules-load.d' / 'rdma_rxe.conf').exists()  # not listed for every boot either


def test_an_unknown_parameter_is_named_with_what_sysctl_said_and_not_persisted(node):
    with pytest.raises(ModuleFail) as failed:
        node({'node_prep_kernel_modules': [], 'node_prep_sysctls': {'net.ipv4.no_such': '1'}})
    assert failed.value.result['msg'] == ('setting net.ipv4.no_such failed: sysctl: cannot stat '
                                          '/proc/sys/net/ipv4/no_such: No such file or directory\n')
    assert not (node.path / '90-ipu-k8s.conf').exists()


def test_module_names_match_the_kernel_with_dashes_and_underscores_alike(node):
    # The kernel lists nf_conntrack in /proc/modules; a setting may spell it nf-conntrack.
    node.kernel.proc_modules('nf_conntrack')
    (node.path / 'modules-load.d' / 'nf-conntrack.conf').write_text('nf-conntrack\n')
    done = node({'node_prep_kernel_modules': ['nf-conntrack'], 'node_prep_sysctls': {}})
    assert changed(done) == [] and node.kernel.calls == []


def test_a_loaded_module_without_its_file_is_only_persisted(node):
    node.kernel.proc_modules('br_netfilter', 'bridge')
    done = node({'node_prep_kernel_modules': ['br_netfilter'], 'node_prep_sysctls': {}})
    assert node.kernel.calls == []
    assert (node.path / 'modules-load.d' / 'br_netfilter.conf').read_text() == 'br_netfilter\n'
    assert changed(done) == ['br_netfilter']


def test_a_module_missing_from_the_kernel_is_loaded_even_with_its_file_in_place(node):
    converge_files(node)
    done = node({'node_prep_kernel_modules': ['overlay'], 'node_prep_sysctls': {}})
    assert commands_that_change(node.kernel) == [[MODPROBE, 'overlay']]
    assert changed(done) == ['overlay'] and node.kernel.loaded == ['overlay']


@pytest.mark.parametrize('settings, missing', [
    ({'node_prep_kernel_modules': ['overlay'], 'node_prep_sysctls': {}}, 'modprobe'),
    ({'node_prep_kernel_modules': [], 'node_prep_sysctls': {'net.ipv4.ip_forward': 1}}, 'sysctl')])
def test_a_missing_tool_is_named(node, settings, missing):
    with pytest.raises(ModuleFail) as failed:
        node(settings, tools={name: path for name, path in {'modprobe': MODPROBE, 'sysctl': SYSCTL}.items()
                              if name != missing})
    assert failed.value.result['msg'] == 'Failed to find required executable "%s"' % missing


@pytest.mark.parametrize('rc, err', [(1, 'sysctl: permission denied on key "net.ipv4.ip_forward"\n'),
                                     (0, 'sysctl: setting key "net.ipv4.ip_forward": Invalid argument\n')])
def test_a_write_sysctl_refuses_fails_with_what_it_said_even_at_exit_code_0(node, rc, err):
    node.kernel.answers[('-w', 'net.ipv4.ip_forward=1')] = (rc, '', err)
    with pytest.raises(ModuleFail) as failed:
        node({'node_prep_kernel_modules': [], 'node_prep_sysctls': {'net.ipv4.ip_forward': 'yes'}})
    assert failed.value.result == {'msg': 'setting net.ipv4.ip_forward failed: ' + err}
    assert not (node.path / '90-ipu-k8s.conf').exists()


# --- parameters dropped from node_prep_sysctls leave the file (ansible.builtin.lineinfile) ---
LINEINFILE = Path(basic.__file__).resolve().parents[1] / 'modules' / 'lineinfile.py'


def prune(path, sysctls, check_mode=False, monkeypatch=None):
    """The role's "Remove from node_prep_sysctl_file ..." task, its regexp templated as Ansible
    does from node_prep_sysctls, run by the lineinfile module of the pinned ansible-core."""
    task = next(task for task in yaml.safe_load((ROLE / 'tasks' / 'main.yml').read_text())
                if 'ansible.builtin.lineinfile' in task)
    templar = Templar(loader=DataLoader(), variables={'node_prep_sysctls': sysctls, 'node_prep_sysctl_file': str(path)})
    templar.available_variables = dict(templar.available_variables,
                                       **{name: templar.template(trust_as_template(value))
                                          for name, value in task['vars'].items()})
    args = templar.template({key: trust_as_template(value) if isinstance(value, str) else value
                             for key, value in task['ansible.builtin.lineinfile'].items()})
    spec = importlib.util.spec_from_file_location('bundled_lineinfile', LINEINFILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with patch_module_args(dict(args, _ansible_check_mode=check_mode, _ansible_tmpdir=str(path.parent))):
        try:
            module.main()
        except ModuleExit as exited:
            return exited.result
    raise AssertionError('lineinfile returned without exit_json or fail_json')


@pytest.fixture
def module_exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', lambda self, **kw: (_ for _ in ()).throw(ModuleExit(kw)))
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', lambda self, **kw: (_ for _ in ()).throw(ModuleFail(kw)))


def test_a_parameter_dropped_from_the_settings_leaves_the_file_and_the_rest_stays(tmp_path, module_exits):
    conf = tmp_path / '90-ipu-k8s.conf'
    # What an earlier run wrote with one more key (ansible.posix.sysctl's `name=value`), a
    # hand-spaced line of a kept key, and a comment.
    conf.write_text('# set by ipu-k8s\n' + FILE_CONTENT + 'net.ipv4.conf.all.rp_filter=0\n'
                    'net.ipv4.ip_forward = 1\n\n')
    result = prune(conf, SYSCTLS)
    assert result['changed'] and result['found'] == 1, result
    assert conf.read_text() == '# set by ipu-k8s\n' + FILE_CONTENT + 'net.ipv4.ip_forward = 1\n\n'
    # the dots are literal: net.ipv4.ip_forward keeps no look-alike such as net_ipv4_ip_forward
    conf.write_text(FILE_CONTENT + 'net_ipv4_ip_forward=1\n')
    assert prune(conf, SYSCTLS)['changed']
    assert conf.read_text() == FILE_CONTENT


def test_a_file_with_only_the_settings_is_left_alone_and_a_missing_one_is_not_made(tmp_path, module_exits):
    conf = tmp_path / '90-ipu-k8s.conf'
    conf.write_text(FILE_CONTENT)
    assert not prune(conf, SYSCTLS)['changed']
    assert conf.read_text() == FILE_CONTENT
    missing = tmp_path / 'none.conf'
    assert not prune(missing, SYSCTLS)['changed'] and not missing.exists()


def test_check_mode_says_a_dropped_parameter_would_go_and_keeps_it(tmp_path, module_exits):
    conf = tmp_path / '90-ipu-k8s.conf'
    conf.write_text(FILE_CONTENT + 'vm.swappiness=10\n')
    assert prune(conf, SYSCTLS, check_mode=True)['changed']
    assert conf.read_text() == FILE_CONTENT + 'vm.swappiness=10\n'


def test_with_no_settings_every_parameter_line_goes(tmp_path, module_exits):
    conf = tmp_path / '90-ipu-k8s.conf'
    conf.write_text('# nothing\n' + FILE_CONTENT)
    assert prune(conf, {})['changed']
    assert conf.read_text() == '# nothing\n'
