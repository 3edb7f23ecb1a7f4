"""No value a template reads becomes structure in the file it writes.

Every template under roles/*/templates (found by globbing, so a new one is covered) is
rendered once with ordinary values, then once for each string the template reads (every
string leaf, and every dict key, of every variable it names) set to each of HOSTILE: a
newline and a key, quotes, ": ", "{{ x }}", "#", "]", a TOML table, a shell command, a
systemd section, each wrapped around the ordinary value. The rendered file is parsed the way
its reader parses it (YAML, TOML, JSON, a systemd unit, an EnvironmentFile), and must have the
same structure as the ordinary render: the same keys, the same nesting, and the hostile string
exactly where the ordinary one was (compared after putting the ordinary value back). The
only other accepted outcome is a refusal before anything is written: the project's preflight
rule for that setting names it (the assert of a roles/*/tasks/validate.yml entry point or of
preflight's variables step), or the project's own filter refuses the value while rendering.
A string the template only compares with its own constants (a layout name), and a dict key it
reads by name, are not text it writes: another harmless string in their place already changes
the file, and they are left out.

The variables a play supplies only at run time (loop items, registered results, the site
model, facts) come from RUNTIME; everything else is what a task of the role sees
(ipu_k8s_render.role_variables). A new template that reads a run-time variable fails here
until RUNTIME gives it an ordinary value.
"""

import copy
import json
import os
import re
import subprocess
import tomllib
import traceback
from pathlib import Path

import jinja2
import jinja2.meta
import pytest
import yaml
from ansible.errors import AnsibleError, AnsibleFilterError
from ansible.template import Templar, trust_as_template
from ansible.parsing.dataloader import DataLoader

from ipu_k8s_render import ROLES, ROOT, load_role_yaml, role_variables

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_vipu_controllers import site_model  # noqa: E402
from ansible_collections.ipu_k8s.cluster.plugins.module_utils import ipu_k8s_rdma  # noqa: E402

TEMPLATES = sorted(str(path.relative_to(ROLES)) for path in ROLES.glob('*/templates/**/*.j2'))

# Wrapped around the ordinary value (PAYLOAD + value + PAYLOAD), so a filter that looks for the
# value inside the text (kubeadm's join command) still finds it.
HOSTILE = [
    '\nhostNetwork: true\n',
    '\n  privileged: true\n  runAsUser: 0\n',
    '"',
    "'",
    ': x',
    '{{ x }}',
    ' # x',
    ']',
    '[x, {y: 1}]',
    '"]\n[host."https://mirror.invalid"]\n  skip_verify = true\n["',
    '"\nEVIL=1\n"',
    "'\nEVIL=1\n'",
    '\r\nEVIL=1\r\n',
    '\\',
    ' $(echo injected) `echo injected` $EVIL ',
    '\n[Service]\nExecStartPre=/bin/true\n',
    '\u2028x: 1\u2029',
    '\n---\nkind: Pod\n',
]

# Values the play supplies at run time, as the tasks that render the template give them.
_KEY = '0123456789abcdef' * 4
_NODE = {'interface': 'enp65s0f1', 'cidr': '10.247.208.0/24', 'prefix': 24, 'node_address': '10.247.208.201',
         'mtu': 9000, 'vipu_address': '10.247.208.116',
         'excludes': ipu_k8s_rdma.compute_excludes('10.247.208.0/24', 25, None), 'excludes_added': []}
_VIPU = {'host': '10.247.208.116', 'port': 8090, 'address': '10.247.208.116:8090', 'version': None,
         'source': 'inventory', 'name': 'pod001', 'label': 'ipunode=true'}


def _site(ipam):
    return site_model({'poplar-01': {'vipu_server': _VIPU, 'rdma_network': _NODE, 'node_name': 'poplar-01'}},
                      'rdma-net', ipam, 0)


def _task_vars(role, tasks_file, template):
    """The names of the vars the task of ROLE's TASKS_FILE that renders TEMPLATE sets for it."""
    return list(next(t for t in load_role_yaml(role, tasks_file) if template in str(t))['vars'])


COMMON = {
    'ansible_managed': 'Ansible managed',
    'inventory_hostname': 'poplar-01',
    'groups': {'all': ['poplar-01', 'poplar-02'], 'control_plane': ['poplar-01'], 'workers': ['poplar-02'],
               'k8s_cluster': ['poplar-01', 'poplar-02'], 'ipu_nodes': ['poplar-01', 'poplar-02']},
    'hostvars': {},
    'ansible_play_hosts_all': ['poplar-01', 'poplar-02'],
}
RUNTIME = {
    # roles/verify/tasks/cluster_pods.yml: one entry of a check's pod list (the bandwidth
    # server's: it has every field).
    'verify/templates/verify-pod.yaml.j2': lambda: {
        'verify_rdma_perftest_nodes': ['poplar-01', 'poplar-02'],
        '__verify_pod': trust_as_template('{{ __verify_perftest_pods[0] }}')},
    # roles/kubeadm/tasks/address.yml and join.yml: the advertise address (a fact) and what
    # kubeadm printed.
    'kubeadm/templates/kubeadm-config.yaml.j2': lambda: {'__kubeadm_advertise_address': '10.0.0.10'},
    'kubeadm/templates/kubelet.default.j2': lambda: {'__kubeadm_advertise_address': '10.0.0.10'},
    'kubeadm/templates/join-configuration.yaml.j2': lambda: {
        '__kubeadm_advertise_address': '10.0.0.11',
        '__kubeadm_join_command': {'stdout': 'kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef '
                                             '--discovery-token-ca-cert-hash sha256:' + _KEY},
        '__kubeadm_certificate_key': {'stdout': '[upload-certs] Using certificate key:\n' + _KEY}},
    # roles/containerd/vars/main.yml: one registry of containerd_registry_hosts, every field set.
    'containerd/templates/hosts.toml.j2': lambda: {'item': {'path': '/etc/containerd/certs.d/docker.io/hosts.toml',
                                                            'registry': {'key': 'docker.io', 'value': {
                                                                'server': 'https://registry-1.docker.io',
                                                                'mirrors': [{'url': 'https://mirror.example.com',
                                                                             'capabilities': ['pull'],
                                                                             'ca': '/etc/ssl/mirror.crt',
                                                                             'skip_verify': True}]}}}},
    # The site model (roles/ipu_k8s/tasks/site.yml) of one IPU-POD, and its loop items.
    'rdma_network/templates/macvlannetwork.yaml.j2': lambda: {'ipu_k8s_site': _site('whereabouts')},
    'rdma_network/templates/ippool.yaml.j2': lambda: {'item': _site('nv-ipam')['pods'][0]},
    'rdma_network/templates/multus_cni.conf.j2': lambda: {'ipu_k8s_site': _site('whereabouts'),
                                                          'item': [_site('whereabouts')['pods'][0], 'poplar-01']},
    # roles/rdma_network/tasks/apply_pods.yml: the resourceVersion the NAD was read with, under the
    # name that task gives it.
    'rdma_network/templates/networkattachmentdefinition.yaml.j2': lambda: dict.fromkeys(
        _task_vars('rdma_network', 'tasks/apply_pods.yml', 'networkattachmentdefinition.yaml.j2'), '4711'),
    'ipu_operator/templates/ipu_operator_values.yaml.j2': lambda: {'ipu_k8s_site': _site(None)},
}


# --- how each file's reader parses it ---------------------------------------------------

def systemd_environment_file(text):
    """KEY=VALUE pairs as systemd's EnvironmentFile= reads them: parse_env_file_internal of
    systemd src/basic/env-file.c (line 22 at commit 0002453b101dc85db2be76703a85297a59c646a9),
    state by state: comments, unquoted values with backslash escapes and continuation lines,
    single quotes taken literally, double quotes unescaping \\ " ` $ and a continuation line."""
    pairs, key, value, state = [], '', None, 'PRE_KEY'
    trailing = None  # where the value's unescaped trailing whitespace starts (last_value_whitespace)

    def push():
        pairs.append((key.rstrip(), value))

    for c in text:
        if state == 'PRE_KEY':
            if c in '#;':
                state = 'COMMENT'
            elif c not in ' \t\n\r':
                state, key = 'KEY', c
        elif state == 'KEY':
            if c in '\n\r':
                state, key = 'PRE_KEY', ''
            elif c == '=':
                state, value, trailing = 'PRE_VALUE', None, None
            else:
                key += c
        elif state == 'PRE_VALUE':
            if c in '\n\r':
                push()
                state, key, value = 'PRE_KEY', '', None
            elif c == "'":
                state = 'SINGLE'
            elif c == '"':
                state = 'DOUBLE'
            elif c == '\\':
                state = 'VALUE_ESCAPE'
            elif c not in ' \t':
                state, value = 'VALUE', (value or '') + c
        elif state == 'VALUE':
            if c in '\n\r':
                value = value if trailing is None else value[:trailing]
                push()
                state, key, value = 'PRE_KEY', '', None
            elif c == '\\':
                state, trailing = 'VALUE_ESCAPE', None
            else:
                if c not in ' \t':
                    trailing = None
                elif trailing is None:
                    trailing = len(value or '')
                value = (value or '') + c
        elif state == 'VALUE_ESCAPE':
            state = 'VALUE'
            if c not in '\n\r':
                value = (value or '') + c
        elif state == 'SINGLE':
            if c == "'":
                state = 'PRE_VALUE'
            else:
                value = (value or '') + c
        elif state == 'DOUBLE':
            if c == '"':
                state = 'PRE_VALUE'
            elif c == '\\':
                state = 'DOUBLE_ESCAPE'
            else:
                value = (value or '') + c
        elif state == 'DOUBLE_ESCAPE':
            state = 'DOUBLE'
            if c in '"\\`$':
                value = (value or '') + c
            elif c != '\n':
                value = (value or '') + '\\' + c
        elif state == 'COMMENT':
            if c == '\\':
                state = 'COMMENT_ESCAPE'
            elif c in '\n\r':
                state = 'PRE_KEY'
        elif state == 'COMMENT_ESCAPE':
            state = 'PRE_KEY' if c in '\n\r' else 'COMMENT'
    if state in ('PRE_VALUE', 'VALUE', 'VALUE_ESCAPE', 'SINGLE', 'DOUBLE', 'DOUBLE_ESCAPE'):
        if state == 'VALUE' and trailing is not None:
            value = value[:trailing]
        push()
    return pairs


def shell_environment(path):
    """The variables a POSIX shell (/bin/sh) has after sourcing the file, each exported."""
    result = subprocess.run(['env', '-i', '/bin/sh', '-c', 'set -a; . "$1"; env -0', 'sh', str(path)],
                            capture_output=True, check=True, timeout=10)
    return sorted(entry.decode() for entry in result.stdout.split(b'\0') if entry)


def systemd_unit(text):
    """(section, key, value) of each assignment of a unit file or drop-in (systemd.syntax(7)):
    [Section] lines, Key=Value lines, # and ; comments, a trailing backslash continues the line."""
    entries, section = [], None
    for line in re.sub(r'\\\n', ' ', text).splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1]
            continue
        key, separator, value = line.partition('=')
        entries.append((section, key.strip() if separator else '(not an assignment) ' + line, value.strip()))
    return entries


def parse(template, text, tmp_path):
    """The structure the file's reader sees."""
    name = template[:-len('.j2')]
    if name.endswith(('.yaml', '.yml')):
        return list(yaml.safe_load_all(text))
    if name.endswith('.toml'):
        return tomllib.loads(text)
    if name.endswith('.json') or (name.endswith('.conf') and text.lstrip().startswith('{')):
        return json.loads(text)
    if name.endswith('.conf'):
        return systemd_unit(text)
    if name.endswith('.default'):
        path = tmp_path / 'environment'
        path.write_text(text)
        return {'systemd': systemd_environment_file(text), 'sh': shell_environment(path)}
    raise AssertionError('%s: no reader known for this kind of file; add one to parse()' % template)


# --- rendering ----------------------------------------------------------------------------

# Functions Jinja and Ansible give every template (not variables).
GLOBALS = set(jinja2.Environment().globals) | {'lookup', 'query', 'q', 'now', 'undefined'}


def _read_names(template):
    """The variables the template reads (names it uses and does not set itself)."""
    class Any(dict):  # every filter and test name is known: only the variables matter here
        def get(self, name, default=None):
            return dict.get(self, name) or (lambda *args, **kwargs: None)
    environment = jinja2.Environment()
    environment.filters, environment.tests = Any(environment.filters), Any(environment.tests)
    tree = environment.parse((ROLES / template).read_text())
    # A name set in one branch of an if is "undeclared" to Jinja for the other branch; it is
    # still the template's own.
    assigned = set(node.name for node in tree.find_all(jinja2.nodes.Name) if node.ctx == 'store')
    return jinja2.meta.find_undeclared_variables(tree) - assigned


class Renderer:
    """One template of one role, with that role's variables plus its RUNTIME values."""

    def __init__(self, template):
        self.template = template
        self.role = template.split('/')[0]
        self.source = (ROLES / template).read_text()
        runtime = dict(COMMON, **RUNTIME.get(template, dict)())
        self.variables = role_variables(self.role, runtime)
        loader = DataLoader()
        loader.set_basedir(str(ROLES / self.role))
        self.loader = loader
        templar = Templar(loader=loader, variables=self.variables)
        names = sorted(set(_read_names(template)) - GLOBALS)
        missing = [name for name in names if name not in self.variables]
        assert not missing, ('%s reads %s, which no role default or var defines: give an ordinary value in RUNTIME'
                             % (template, ', '.join(missing)))
        # Ordinary values, resolved (a role var is itself a template).
        self.ordinary = dict((name, templar.template(trust_as_template('{{ %s }}' % name))) for name in names)

    def render(self, overrides=None):
        variables = dict(self.variables, **self.ordinary)
        variables.update(overrides or {})
        return Templar(loader=self.loader, variables=variables).template(trust_as_template(self.source))


def _leaves(value, path=()):
    """(path, ordinary string) of every string leaf and every string dict key inside value;
    a key's path ends with ('key', k)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield path + (('key', key),), key
            yield from _leaves(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))


def _replaced(value, path, new):
    """A copy of value with the leaf (or key) at path replaced by new."""
    if not path:
        return new
    value = copy.deepcopy(value)
    step = path[0]
    if isinstance(step, tuple) and step[0] == 'key':
        value = dict((new if key == step[1] else key, item) for key, item in value.items())
    else:
        value[step] = _replaced(value[step], path[1:], new)
    return value


def _json_document(text):
    """A string that holds a JSON object or array (a CNI configuration inside a manifest, read as
    JSON by the code that takes it) parsed, else None."""
    if not text.lstrip().startswith(('{', '[')):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _normalised(structure, hostile, ordinary):
    """structure with every occurrence of hostile, raw or as a regular expression matching it
    literally (regex_escape), put back to the ordinary value, in keys and values alike."""
    pairs = [(hostile, ordinary), (re.escape(hostile), re.escape(ordinary))]

    def text(value):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(structure, str):
        embedded = _json_document(structure)
        return text(structure) if embedded is None else ('JSON', _normalised(embedded, hostile, ordinary))
    if isinstance(structure, dict):
        return dict((text(k) if isinstance(k, str) else k, _normalised(v, hostile, ordinary))
                    for k, v in structure.items())
    if isinstance(structure, (list, tuple)):
        return type(structure)(_normalised(v, hostile, ordinary) for v in structure)
    return structure


# --- the refusals of preflight ------------------------------------------------------------------

def _validation_expressions():
    """(role, Jinja expression) of every assert vars entry of the validate entry points and of
    preflight's variables step: the project's facts-free rules."""
    files = [(path.parts[-3], path.relative_to(ROLES / path.parts[-3]))
             for path in sorted(ROLES.glob('*/tasks/validate.yml'))]
    files.append(('preflight', Path('tasks/variables.yml')))
    found = []
    for role, relative in files:
        for task in load_role_yaml(role, str(relative)) or []:
            if 'ansible.builtin.assert' in task:
                found.extend((role, value) for value in (task.get('vars') or {}).values())
    return found


VALIDATIONS = _validation_expressions()


def _preflight_messages(setting, value):
    """The messages of preflight's rules that name the setting when it holds value."""
    messages = []
    for role, expression in VALIDATIONS:
        variables = role_variables(role, dict(COMMON, **{setting: value}))
        loader = DataLoader()
        loader.set_basedir(str(ROLES / role))
        try:
            result = Templar(loader=loader, variables=variables).template(expression)
        except AnsibleError:
            continue  # a rule that needs what this test does not give (facts) refuses nothing here
        messages.extend(str(m) for m in result if setting in str(m))
    return messages


def refused_by_preflight(setting, value, ordinary):
    """Whether preflight refuses the setting holding value, naming it, where it accepts the
    ordinary value."""
    return bool(set(_preflight_messages(setting, value)) - set(_preflight_messages(setting, ordinary)))


def _filter_refusal(error):
    """The message of a refusal raised by the project's own code (plugins/filter/, plugins/module_utils/)
    inside a rendering error, or None."""
    while error is not None:
        frames = traceback.extract_tb(error.__traceback__)
        if isinstance(error, AnsibleFilterError) and any(
                os.path.realpath(frame.filename).startswith((str(ROOT / 'plugins' / 'filter'),
                                                              str(ROOT / 'plugins' / 'module_utils')))
                for frame in frames):
            return str(error)
        error = error.__cause__ or error.__context__
    return None


def _is_text(renderer, name, value, path, base, expected, tmp_path):
    """Whether another harmless string in place of base gives the same file, that string where
    base was: the value is text the template carries, not a choice it makes."""
    probe = 'ipuk8sprobe' + base
    try:
        other = parse(renderer.template, renderer.render({name: _replaced(value, path, probe)}), tmp_path)
    except AnsibleError as error:
        if _filter_refusal(error):
            return False  # the project's code takes only its own values here
        raise
    return _normalised(other, probe, base) == expected


def _key_is_data(renderer, name, value, path, tmp_path):
    """Whether a dict key is data the template writes out (renamed, the file holds the new
    name where it held the old) rather than a field name it reads by name."""
    ordinary, probe = path[-1][1], 'ipuk8sprobe'
    try:
        renamed = parse(renderer.template, renderer.render({name: _replaced(value, path, probe)}), tmp_path)
    except AnsibleError:
        return False
    return _normalised(renamed, probe, ordinary) == _normalised(parse(renderer.template, renderer.render(), tmp_path),
                                                                 ordinary, ordinary)


def hostile_outcomes(template, tmp_path):
    """What went wrong for each hostile value of each string the template reads whose structure
    changed and that nothing refused (an empty list: none)."""
    renderer = Renderer(template)
    problems = []
    for name, value in renderer.ordinary.items():
        for path, ordinary in _leaves(value):
            where = name + ''.join('[%r]' % (step if not isinstance(step, tuple) else '<key %s>' % step[1])
                                   for step in path)
            if path and isinstance(path[-1], tuple) and not _key_is_data(renderer, name, value, path, tmp_path):
                continue  # the name of a field the template reads by name, not data
            base = ordinary or 'ipu-k8s-value'  # an empty value would leave out what it guards
            expected = _normalised(parse(template, renderer.render({name: _replaced(value, path, base)}), tmp_path),
                                   base, base)
            if not _is_text(renderer, name, value, path, base, expected, tmp_path):
                continue  # a choice the template compares with its own constants: never written out
            for payload in HOSTILE:
                hostile = payload + base + payload
                overridden = _replaced(value, path, hostile)
                try:
                    text = renderer.render({name: overridden})
                except AnsibleError as error:
                    if _filter_refusal(error):
                        continue
                    problems.append('%s = %r: rendering failed: %s' % (where, hostile, error))
                    continue
                try:
                    got = _normalised(parse(template, text, tmp_path), hostile, base)
                except Exception as error:  # the reader cannot read the file at all
                    got = 'unreadable: %s' % error
                if got == expected:
                    continue
                if refused_by_preflight(name, overridden, value):
                    continue
                problems.append('%s = %r changed the structure:\n%s' % (where, hostile, text))
    return problems


@pytest.mark.parametrize('template', TEMPLATES)
def test_no_string_value_changes_the_structure_of_the_file(template, tmp_path):
    problems = hostile_outcomes(template, tmp_path)
    settings = sorted(set(problem.split(' = ')[0] for problem in problems))
    assert not problems, '%s: %d hostile values became structure, through %s. The first:\n\n%s' % (
        template, len(problems), ', '.join(settings), '\n\n'.join(problems[:2]))


# The image of the issue: under the old verify-pod.yaml.j2 it turned both bandwidth pods into
# hostNetwork/hostPID pods with the node's / mounted.
CRAFTED_IMAGE = ('docker.io/library/busybox:1.36\n  hostNetwork: true\n  hostPID: true\n  volumes:\n'
                 '    - name: host\n      hostPath:\n        path: /\n  containers:\n    - name: x\n'
                 '      volumeMounts:\n        - name: host\n          mountPath: /host\n'
                 '      image: docker.io/library/busybox:1.36')


def test_a_crafted_bandwidth_image_stays_the_image_string():
    renderer = Renderer('verify/templates/verify-pod.yaml.j2')
    for index in (0, 1):
        overrides = {'verify_rdma_perftest_image': CRAFTED_IMAGE,
                     '__verify_pod': trust_as_template('{{ __verify_perftest_pods[%d] }}' % index)}
        pod = yaml.safe_load(Templar(loader=renderer.loader, variables=dict(renderer.variables, **overrides))
                             .template(trust_as_template(renderer.source)))
        assert pod['spec']['hostNetwork'] is False
        assert 'hostPID' not in pod['spec'] and 'volumes' not in pod['spec']
        [container] = pod['spec']['containers']
        assert container['image'] == CRAFTED_IMAGE
        assert 'volumeMounts' not in container
