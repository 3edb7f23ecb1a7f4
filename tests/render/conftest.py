"""Render-test helpers shared by every tests/render/test_*.py.

- render_role_template(role, template, overrides): renders roles/<role>/templates/<template>
  through Ansible's own templating (ansible.template.Templar, the engine behind the
  template module and lookup), with the variables a task of the role sees in a play that
  applies it (Ansible's VariableManager over the role, its dependencies' defaults and vars),
  the overrides given as extra vars. Returns the text.
- render_role_yaml(...): the same, parsed as YAML (one document).
- load_role_yaml(role, "tasks/x.yml"): a role file with its strings usable as templates.
- role_expression(role, expression, overrides): evaluates a Jinja expression, e.g. a
  role variable such as "{{ ipu_k8s_versions.network_operator | length }}", with those same variables.
- crd_validator(path): a jsonschema validator for the custom resources of a CRD file
  (its openAPIV3Schema), strict about unknown fields like an API server with strict
  field validation. validate_custom_resource(obj, path) raises on any error.

Test modules import these as `from ipu_k8s_render import ...`: this conftest registers
itself under that name, because the bare name "conftest" also belongs to
tests/unit/conftest.py and which one `import conftest` finds depends on collection order.
"""

import copy
import functools
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play import Play
from ansible.plugins.loader import filter_loader, init_plugin_loader, module_loader
from ansible.template import Templar, trust_as_template
from ansible.utils.vars import combine_vars
from ansible.vars.manager import VariableManager

sys.modules['ipu_k8s_render'] = sys.modules[__name__]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testlib import flatten_keys  # noqa: E402,F401  (tests/testlib.py; test modules import it from here)

ROOT = Path(__file__).resolve().parents[2]
init_plugin_loader()  # the collections (ansible.builtin, kubernetes.core) the roles' tasks name
module_loader.add_directory(str(ROOT / 'plugins' / 'modules'))  # and the project's modules and filters,
filter_loader.add_directory(str(ROOT / 'plugins' / 'filter'))  # by their short names, as ansible.cfg gives them
ROLES = ROOT / 'roles'
SCHEMAS = ROOT / 'tests' / 'schemas'


def load_role_yaml(role, relative_path):
    """A YAML file of the role (e.g. "tasks/consensus.yml"), its strings trusted as templates."""
    return DataLoader().load_from_file(str(ROLES / role / relative_path), cache='none', trusted_as_template=True)


@functools.lru_cache(maxsize=None)
def _role_play(role):
    """A play that applies the role, as Ansible loads it, and the first task of the role."""
    loader = DataLoader()
    loader.set_basedir(str(ROOT))
    variable_manager = VariableManager(loader=loader)
    play = Play.load({'hosts': 'localhost', 'gather_facts': False, 'roles': [role]},
                     variable_manager=variable_manager, loader=loader)
    tasks = [task for block in play.compile() for task in block.block
             if getattr(task, '_role', None) is not None and task._role.get_name() == role]
    return variable_manager, play, tasks[0] if tasks else None


def role_variables(role, overrides=None):
    """Variables a task of the role sees (Ansible's precedence), the overrides as extra vars."""
    variable_manager, play, task = _role_play(role)
    variables = copy.deepcopy(variable_manager.get_vars(play=play, task=task))
    return combine_vars(variables, overrides or {})


def _templar(role, overrides):
    loader = DataLoader()
    loader.set_basedir(str(ROLES / role))
    return Templar(loader=loader, variables=role_variables(role, overrides))


def render_role_template(role, template, overrides=None):
    source = (ROLES / role / 'templates' / template).read_text()
    return _templar(role, overrides).template(trust_as_template(source))


def render_role_yaml(role, template, overrides=None):
    return yaml.safe_load(render_role_template(role, template, overrides))


def role_expression(role, expression, overrides=None):
    return _templar(role, overrides).template(trust_as_template(expression))


def role_validate_failures(tmp, role, hosts):
    """{host: its failure message, whitespace folded} of ROLE's validate entry point (what
    preflight runs) over HOSTS ({host: its settings}), each a local host; a host named
    'defaults' must pass."""
    from playbook_runner import run_playbook  # tests/, on sys.path for the render tier
    inventory, play = tmp / 'hosts.yml', tmp / 'play.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': hosts, 'vars': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}))
    play.write_text(yaml.safe_dump([{'hosts': 'all', 'gather_facts': False, 'tasks': [{
        'ansible.builtin.include_role': {'name': role, 'tasks_from': 'validate'}}]}]))
    run = run_playbook(play, inventory, tmp / 'runner', timeout=300)
    assert run.status in ('successful', 'failed'), run.stdout[-3000:]
    failures = {host: ' '.join(text.split()) for host, text in run.failures().items()}
    assert 'defaults' not in failures, failures['defaults']
    return failures


def _strict(schema):
    """Objects that list their properties accept no others (strict field validation)."""
    if isinstance(schema, dict):
        schema = dict((k, _strict(v)) for k, v in schema.items())
        if ('properties' in schema and 'additionalProperties' not in schema
                and not schema.get('x-kubernetes-preserve-unknown-fields')):
            schema['additionalProperties'] = False
        return schema
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def crd_validator(path, version=None, strict=True):
    """jsonschema validator for objects of the CRD in path (served version, or the one named)."""
    crd = yaml.safe_load(Path(path).read_text())
    versions = crd['spec']['versions']
    chosen = [v for v in versions if (v['name'] == version if version else v.get('storage'))]
    if not chosen:
        raise ValueError('%s has no version %s' % (path, version or '(storage)'))
    schema = copy.deepcopy(chosen[0]['schema']['openAPIV3Schema'])
    if strict:
        schema = _strict(schema)
    # The API server checks these before the schema; do it here too.
    group = crd['spec']['group']
    schema.setdefault('required', [])
    schema['required'] = sorted(set(schema['required']) | {'apiVersion', 'kind', 'metadata'})
    schema['properties']['apiVersion'] = {'const': '%s/%s' % (group, chosen[0]['name'])}
    schema['properties']['kind'] = {'const': crd['spec']['names']['kind']}
    schema['properties']['metadata'] = {
        'type': 'object', 'required': ['name'],
        'properties': {'name': {'type': 'string', 'pattern': r'^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', 'maxLength': 253}},
        'additionalProperties': True,
    }
    if crd['spec']['scope'] == 'Cluster':
        schema['properties']['metadata']['not'] = {'required': ['namespace']}
    return jsonschema.Draft7Validator(schema)


def validate_custom_resource(obj, path, version=None):
    errors = sorted(crd_validator(path, version).iter_errors(obj), key=lambda e: list(e.path))
    if errors:
        raise AssertionError('%s does not match %s:\n%s' % (
            obj.get('kind'), Path(path).name,
            '\n'.join('  %s: %s' % ('.'.join(str(p) for p in e.path) or '(root)', e.message) for e in errors)))


@pytest.fixture
def render():
    """The render_role_yaml helper as a fixture."""
    return render_role_yaml
