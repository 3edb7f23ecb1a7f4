"""Render-test helpers shared by every tests/render/test_*.py.

- render_role_template(role, template, overrides): renders roles/<role>/templates/<template>
  through Ansible's own templating (ansible.template.Templar, the engine behind the
  template module and lookup), with the variables a play would have: the shared defaults
  (roles/ipu_k8s/defaults/main.yml), the role's defaults/main.yml and
  vars/main.yml, then the overrides (inventory/extra vars). Returns the text.
- render_role_yaml(...): the same, parsed as YAML (one document).
- load_role_yaml(role, "tasks/x.yml"): a role file with its strings usable as templates.
- role_expression(role, expression, overrides): evaluates a Jinja expression, e.g. a
  role variable such as "{{ __network_operator_chart }}", with those same variables.
- crd_validator(path): a jsonschema validator for the custom resources of a CRD file
  (its openAPIV3Schema), strict about unknown fields like an API server with strict
  field validation. validate_custom_resource(obj, path) raises on any error.

Test modules import these as `from ipu_k8s_render import ...`: this conftest registers
itself under that name, because the bare name "conftest" also belongs to
tests/unit/conftest.py and which one `import conftest` finds depends on collection order.
"""

import copy
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import add_all_plugin_dirs
from ansible.template import Templar, trust_as_template

sys.modules['ipu_k8s_render'] = sys.modules[__name__]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testlib import flatten_keys  # noqa: E402,F401  (tests/testlib.py; test modules import it from here)

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / 'roles'
SCHEMAS = ROOT / 'tests' / 'schemas'


def _trusted(value):
    """Strings read from the role's own files are templates, as Ansible treats them."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((k, _trusted(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def _load_vars(path):
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return _trusted(data)


def load_role_yaml(role, relative_path):
    """A YAML file of the role (e.g. "tasks/consensus.yml"), its strings trusted as templates."""
    return _load_vars(ROLES / role / relative_path)


def role_variables(role, overrides=None):
    """Variables a play sees for role: shared defaults < role defaults < role vars < overrides."""
    variables = {}
    variables.update(_load_vars(ROLES / 'ipu_k8s' / 'defaults' / 'main.yml'))
    variables.update(_load_vars(ROLES / role / 'defaults' / 'main.yml'))
    variables.update(_load_vars(ROLES / role / 'vars' / 'main.yml'))
    variables.update(overrides or {})
    return variables


def _templar(role, overrides):
    # The filters a play of the role has: the project's filter_plugins/.
    add_all_plugin_dirs(str(ROOT))
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
