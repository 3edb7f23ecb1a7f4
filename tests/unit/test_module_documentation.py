"""Each module's DOCUMENTATION says what its argument_spec does (types, defaults, required,
elements), declares check mode support, and its EXAMPLES use only documented options."""

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from module_harness import load_library_module

MODULES = ['rdma_network_facts']


class SpecSeen(Exception):
    pass


def argument_spec_of(module, monkeypatch):
    """The argument_spec main() hands to AnsibleModule (main stops right there)."""
    seen = {}

    def capture(self, argument_spec, **kwargs):
        seen.update(argument_spec=argument_spec, kwargs=kwargs)
        raise SpecSeen()

    monkeypatch.setattr(basic.AnsibleModule, '__init__', capture)
    with patch_module_args({}), pytest.raises(SpecSeen):
        module.main()
    return seen['argument_spec'], seen['kwargs']


@pytest.mark.parametrize('name', MODULES)
def test_documented_options_match_the_argument_spec(name, monkeypatch):
    module = load_library_module(name)
    documented = yaml.safe_load(module.DOCUMENTATION)['options']
    spec, _ = argument_spec_of(module, monkeypatch)
    assert sorted(documented) == sorted(spec)
    for option, doc in documented.items():
        code = spec[option]
        assert doc.get('type', 'str') == code.get('type', 'str'), option
        assert doc.get('default') == code.get('default'), option
        assert bool(doc.get('required')) == bool(code.get('required')), option
        assert doc.get('elements') == code.get('elements'), option
        assert doc.get('description'), option


@pytest.mark.parametrize('name', MODULES)
def test_check_mode_is_supported_and_documented(name, monkeypatch):
    module = load_library_module(name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    _, kwargs = argument_spec_of(module, monkeypatch)
    assert kwargs.get('supports_check_mode') is True
    assert doc['attributes']['check_mode']['support'] == 'full'
    assert doc['attributes']['diff_mode']['support'] == 'none'
    assert doc['module'] == name


@pytest.mark.parametrize('name', MODULES)
def test_examples_use_only_documented_options(name):
    module = load_library_module(name)
    options = set(yaml.safe_load(module.DOCUMENTATION)['options'])
    uses = [task[name] or {} for task in yaml.safe_load(module.EXAMPLES) if name in task]
    assert uses, 'EXAMPLES never call %s' % name
    for args in uses:
        assert set(args) <= options


# What each module returns, as the other roles rely on it.
RETURNED = {
    'vipu_server': ('vipu_server', {'host', 'port', 'address', 'version', 'source', 'name', 'label'}),
    'rdma_network_facts': ('rdma_network', {'interface', 'cidr', 'prefix', 'node_address', 'mtu', 'excludes',
                                            'excludes_added', 'vipu_address'}),
}


@pytest.mark.parametrize('name', MODULES)
def test_return_documents_every_returned_key(name):
    key, fields = RETURNED[name]
    returned = yaml.safe_load(load_library_module(name).RETURN)
    assert returned[key]['type'] == 'dict'
    assert set(returned[key]['contains']) == fields
