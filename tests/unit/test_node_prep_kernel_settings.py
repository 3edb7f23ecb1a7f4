"""library/kernel_settings.py on a stand-in kernel: /proc/modules, modules.builtin and the files
live in tmp_path, `modprobe` and `sysctl` are answered by FakeCommands (which records them);
the module runs for real. The expected file contents are what community.general.modprobe
(persistent: present, `NAME\\n` in /etc/modules-load.d/NAME.conf) and ansible.posix.sysctl
(`name=value\\n` lines) write, so a node they prepared is already converged."""

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from module_harness import FakeCommands, ModuleExit, ModuleFail, load_library_module

SYSCTLS = {'net.bridge.bridge-nf-call-iptables': '1', 'net.ipv4.ip_forward': '1',
           'net.ipv4.tcp_rmem': '4096 131072 6291456'}
FILE_CONTENT = 'net.bridge.bridge-nf-call-iptables=1\nnet.ipv4.ip_forward=1\nnet.ipv4.tcp_rmem=4096 131072 6291456\n'
BINARIES = {'modprobe': '/sbin/modprobe', 'sysctl': '/sbin/sysctl'}
PROC_MODULES = 'br_netfilter 32768 0 - Live 0x0\nbridge 311296 1 br_netfilter, Live 0x0\n'
BUILTIN = 'kernel/fs/overlayfs/overlay.ko\nkernel/fs/ext4/ext4.ko\n'


def running(values):
    """sysctl -n answers of a kernel with these values (tab-separated words, as sysctl prints them)."""
    return {('-n', name): (0, value.replace(' ', '\t') + '\n', '') for name, value in values.items()}


@pytest.fixture
def node(tmp_path, monkeypatch):
    """node(args, answers, check_mode=False) -> (result, commands); tmp_path holds the kernel's files."""
    (tmp_path / 'modules-load.d').mkdir()
    (tmp_path / 'proc-modules').write_text('')
    (tmp_path / 'modules.builtin').write_text('')

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs)

    def fail_json(self, **kwargs):
        raise ModuleFail(kwargs)

    def run(args, answers, check_mode=False, binaries=BINARIES):
        commands = FakeCommands(answers, binaries=binaries)
        monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
        monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, *a, **kw: commands.get_bin_path(self, *a, **kw))
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, *a, **kw: commands.run_command(self, *a, **kw))
        module = load_library_module('kernel_settings')
        module.MODULES_LOAD_DIR = str(tmp_path / 'modules-load.d')
        module.PROC_MODULES = str(tmp_path / 'proc-modules')
        module.MODULES_BUILTIN = str(tmp_path / 'modules.builtin')
        with patch_module_args(dict(args, _ansible_check_mode=check_mode)):
            try:
                module.main()
            except ModuleExit as done:
                return done.result, commands
        raise AssertionError('kernel_settings returned without exit_json or fail_json')

    run.path = tmp_path
    return run


def args(node):
    return {'modules': ['overlay', 'br_netfilter'], 'sysctls': SYSCTLS, 'sysctl_file': str(node.path / '90-ipu-k8s.conf')}


def converge_files(node):
    for name in ('overlay', 'br_netfilter'):
        (node.path / 'modules-load.d' / (name + '.conf')).write_text(name + '\n')
    (node.path / '90-ipu-k8s.conf').write_text(FILE_CONTENT)


def test_a_fresh_node_gets_every_module_and_parameter_now_and_in_the_files(node):
    answers = running({name: '0' for name in SYSCTLS})
    answers[('-a', 'overlay', 'br_netfilter')] = (0, '', '')
    answers.update({('-w', '%s=%s' % item): (0, '', '') for item in SYSCTLS.items()})
    result, commands = node(args(node), answers)
    assert commands.calls[0] == ['/sbin/modprobe', '-a', 'overlay', 'br_netfilter']
    assert [c for c in commands.calls if '-w' in c] == [['/sbin/sysctl', '-w', '%s=%s' % i] for i in SYSCTLS.items()]
    assert (node.path / 'modules-load.d' / 'overlay.conf').read_text() == 'overlay\n'
    assert (node.path / 'modules-load.d' / 'br_netfilter.conf').read_text() == 'br_netfilter\n'
    assert (node.path / '90-ipu-k8s.conf').read_text() == FILE_CONTENT
    assert oct((node.path / '90-ipu-k8s.conf').stat().st_mode & 0o777) == '0o644'
    assert result['changed'] is True and result['loaded'] == ['overlay', 'br_netfilter'] and result['set'] == SYSCTLS
    assert result['written'] == [str(node.path / 'modules-load.d' / 'overlay.conf'),
                                 str(node.path / 'modules-load.d' / 'br_netfilter.conf'), str(node.path / '90-ipu-k8s.conf')]


def test_a_converged_node_is_read_and_left_alone(node):
    converge_files(node)
    (node.path / 'proc-modules').write_text(PROC_MODULES)
    (node.path / 'modules.builtin').write_text(BUILTIN)  # overlay built into the kernel counts as loaded
    result, commands = node(args(node), running(SYSCTLS))
    assert [c[1] for c in commands.calls] == ['-n'] * len(SYSCTLS)
    assert result == {'changed': False, 'loaded': [], 'set': {}, 'written': []}


def test_files_already_right_do_not_hide_a_kernel_without_them(node):
    # A run killed after writing the files, or a reboot with systemd-modules-load masked.
    converge_files(node)
    answers = running({'net.bridge.bridge-nf-call-iptables': '1', 'net.ipv4.ip_forward': '0',
                       'net.ipv4.tcp_rmem': SYSCTLS['net.ipv4.tcp_rmem']})
    answers[('-a', 'overlay', 'br_netfilter')] = (0, '', '')
    answers[('-w', 'net.ipv4.ip_forward=1')] = (0, '', '')
    result, commands = node(args(node), answers)
    assert ['/sbin/modprobe', '-a', 'overlay', 'br_netfilter'] in commands.calls
    assert ['/sbin/sysctl', '-w', 'net.ipv4.ip_forward=1'] in commands.calls
    assert result['changed'] is True and result['written'] == [] and result['set'] == {'net.ipv4.ip_forward': '1'}


def test_check_mode_reports_without_loading_setting_or_writing(node):
    # br_netfilter not loaded: its keys cannot be read yet, which counts as a change.
    answers = running({'net.ipv4.ip_forward': '0', 'net.ipv4.tcp_rmem': SYSCTLS['net.ipv4.tcp_rmem']})
    answers[('-n', 'net.bridge.bridge-nf-call-iptables')] = (255, '', 'sysctl: cannot stat /proc/sys/net/bridge: No such file\n')
    result, commands = node(args(node), answers, check_mode=True)
    assert [c[1] for c in commands.calls] == ['-n'] * len(SYSCTLS)
    assert sorted(p.name for p in node.path.rglob('*.conf')) == []
    assert result['loaded'] == ['overlay', 'br_netfilter'] and result['changed'] is True
    assert result['set'] == {'net.bridge.bridge-nf-call-iptables': '1', 'net.ipv4.ip_forward': '1'}


def test_true_and_false_are_compared_as_1_and_0(node):
    (node.path / '90-ipu-k8s.conf').write_text('net.ipv4.ip_forward=1\n')
    result, _ = node({'sysctls': {'net.ipv4.ip_forward': True}, 'sysctl_file': str(node.path / '90-ipu-k8s.conf')},
                     running({'net.ipv4.ip_forward': '1'}))
    assert result['changed'] is False


def test_a_module_the_kernel_cannot_load_is_named_and_not_persisted(node):
    answers = {('-a', 'rdma_rxe'): (1, '', 'modprobe: FATAL: Module rdma_rxe not found in directory /lib/modules/6.1\n')}
    with pytest.raises(ModuleFail) as failed:
        node({'modules': ['rdma_rxe']}, answers)
    assert failed.value.result['msg'] == 'modprobe -a rdma_rxe failed: modprobe: FATAL: Module rdma_rxe not found in directory /lib/modules/6.1'
    assert not (node.path / 'modules-load.d' / 'rdma_rxe.conf').exists()  # not listed for every boot either


def test_an_unknown_parameter_is_named_with_what_sysctl_said(node):
    answers = {('-n', 'net.ipv4.no_such'): (255, '', 'sysctl: cannot stat /proc/sys/net/ipv4/no_such: No such file or directory\n')}
    with pytest.raises(ModuleFail) as failed:
        node({'sysctls': {'net.ipv4.no_such': '1'}, 'sysctl_file': str(node.path / 'x.conf')}, answers)
    assert failed.value.result['msg'] == ('sysctl cannot read net.ipv4.no_such: sysctl: cannot stat '
                                          '/proc/sys/net/ipv4/no_such: No such file or directory')


@pytest.mark.parametrize('value, printed', [(True, '1'), ('true', '1'), ('Yes', '1'), ('yes', '1'), (False, '0'),
                                            ('false', '0'), ('no', '0'), ('NO', '0'), (0, '0'), ('4096  131072\t6291456',
                                                                                               '4096 131072 6291456')])
def test_a_value_is_compared_and_written_as_sysctl_prints_it(value, printed):
    assert load_library_module('kernel_settings').sysctl_value(value) == printed


def test_module_names_match_with_dashes_and_underscores_alike():
    # The kernel lists nf_conntrack and rdma_rxe; modules.builtin names files with dashes.
    missing = load_library_module('kernel_settings').missing_modules
    assert missing(['nf-conntrack', 'ib_core', 'rdma_rxe'], 'nf_conntrack 1 0 - Live 0x0\n',
                   'kernel/drivers/infiniband/core/ib-core.ko\n') == ['rdma_rxe']


def test_a_loaded_module_without_its_file_is_only_persisted(node):
    (node.path / 'proc-modules').write_text(PROC_MODULES)
    result, commands = node({'modules': ['br_netfilter']}, {})
    assert commands.calls == []
    assert (node.path / 'modules-load.d' / 'br_netfilter.conf').read_text() == 'br_netfilter\n'
    assert result == {'changed': True, 'loaded': [], 'set': {},
                      'written': [str(node.path / 'modules-load.d' / 'br_netfilter.conf')]}


def test_a_module_missing_from_the_kernel_is_loaded_even_with_its_file_in_place(node):
    converge_files(node)
    result, commands = node({'modules': ['overlay']}, {('-a', 'overlay'): (0, '', '')})
    assert commands.calls == [['/sbin/modprobe', '-a', 'overlay']]
    assert result == {'changed': True, 'loaded': ['overlay'], 'set': {}, 'written': []}


def test_sysctls_without_their_file_are_refused_before_anything_is_read(node):
    with pytest.raises(ModuleFail) as failed:
        node({'sysctls': {'net.ipv4.ip_forward': 1}}, {})
    assert failed.value.result == {'msg': 'sysctl_file is required with sysctls, e.g. sysctl_file: '
                                          '/etc/sysctl.d/90-ipu-k8s.conf'}


def test_a_failed_command_reports_its_exit_code_and_stderr(node):
    err = 'modprobe: FATAL: Module rdma_rxe not found\n'
    with pytest.raises(ModuleFail) as failed:
        node({'modules': ['overlay', 'rdma_rxe']}, {('-a', 'overlay', 'rdma_rxe'): (1, '', err)})
    assert failed.value.result == {'msg': 'modprobe -a overlay rdma_rxe failed: modprobe: FATAL: Module rdma_rxe not found',
                                   'rc': 1, 'stderr': err, 'changed': False, 'loaded': ['overlay', 'rdma_rxe'],
                                   'set': {}, 'written': []}
    err = 'sysctl: cannot stat /proc/sys/net/ipv4/no_such\n'
    with pytest.raises(ModuleFail) as failed:
        node({'sysctls': {'net.ipv4.no_such': '1'}, 'sysctl_file': str(node.path / 'x.conf')},
             {('-n', 'net.ipv4.no_such'): (255, '', err)})
    assert failed.value.result == {'msg': 'sysctl cannot read net.ipv4.no_such: ' + err.strip(), 'rc': 255, 'stderr': err,
                                   'changed': False, 'loaded': [], 'set': {}, 'written': []}


@pytest.mark.parametrize('args, answers, missing', [
    ({'modules': ['overlay']}, {}, 'modprobe'),
    ({'sysctls': {'net.ipv4.ip_forward': 1}, 'sysctl_file': '/nonexistent/x.conf'}, {}, 'sysctl')])
def test_a_missing_tool_is_named(node, args, answers, missing):
    with pytest.raises(ModuleFail) as failed:
        node(args, answers, binaries={name: path for name, path in BINARIES.items() if name != missing})
    assert failed.value.result['msg'] == 'Failed to find required executable "%s"' % missing


@pytest.mark.parametrize('rc, err', [(1, 'sysctl: permission denied on key "net.ipv4.ip_forward"\n'),
                                     (0, 'sysctl: setting key "net.ipv4.ip_forward": Invalid argument\n')])
def test_a_write_sysctl_refuses_fails_with_what_it_said_even_at_exit_code_0(node, rc, err):
    answers = running({'net.ipv4.ip_forward': '0'})
    answers[('-w', 'net.ipv4.ip_forward=1')] = (rc, '', err)
    with pytest.raises(ModuleFail) as failed:
        node({'sysctls': {'net.ipv4.ip_forward': 'yes'}, 'sysctl_file': str(node.path / 'x.conf')}, answers)
    assert failed.value.result == {'msg': 'sysctl -w net.ipv4.ip_forward=1 failed: ' + err.strip(), 'rc': rc,
                                   'stderr': err, 'changed': False, 'loaded': [], 'set': {'net.ipv4.ip_forward': '1'},
                                   'written': []}
    assert not (node.path / 'x.conf').exists()


def test_modules_alone_need_no_sysctl_tool(node):
    (node.path / 'proc-modules').write_text(PROC_MODULES)
    (node.path / 'modules-load.d' / 'br_netfilter.conf').write_text('br_netfilter\n')
    result, _ = node({'modules': ['br_netfilter']}, {}, binaries={'modprobe': '/sbin/modprobe'})
    assert result['changed'] is False


def test_the_sysctl_file_path_is_expanded_as_a_path(node, monkeypatch):
    monkeypatch.setenv('KERNEL_SETTINGS_DIR', str(node.path))
    answers = running({'net.ipv4.ip_forward': '1'})
    result, _ = node({'sysctls': {'net.ipv4.ip_forward': 1}, 'sysctl_file': '$KERNEL_SETTINGS_DIR/x.conf'}, answers)
    assert result['written'] == [str(node.path / 'x.conf')]
    assert (node.path / 'x.conf').read_text() == 'net.ipv4.ip_forward=1\n'
