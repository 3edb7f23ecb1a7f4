"""The rules of the code that reads the NicClusterPolicy this project renders
(roles/network_operator/templates/nicclusterpolicy.yaml.j2) and the RDMA shared device plugin
configuration inside it, restated in Python for tests/render/test_network_operator_rules.py.
The list of rules, and the test of each: tests/schemas/network_operator/RULES.md.

Network Operator: github.com/Mellanox/network-operator at tag v26.4.1 (the 26.4.1 row of
roles/network_operator/defaults/main.yml); lines at v25.4.0, v25.7.0 and v26.1.2 are named where
they differ. RDMA shared device plugin: github.com/Mellanox/k8s-rdma-shared-dev-plugin at tag
network-operator-v26.1.1 (pkg/resources/resources_manager.go, pkg/types/types.go and
pkg/utils/utils.go are the same blobs at network-operator-v25.7.0 and
network-operator-v26.4.0-beta.6), and v1.5.3 (the image of the 25.4.0 row), where every rule below
holds at the lines named as "v1.5.3".
"""

import json
import re

import yaml

# consts.NicClusterPolicyResourceName, pkg/consts/consts.go:34; the reconciler marks any other
# instance "ignore" and renders nothing for it (controllers/nicclusterpolicy_controller.go:161-164,
# handleUnsupportedInstance :301-310; :162 at v26.1.2, :147 at v25.4.0 and v25.7.0).
POLICY_NAME = 'nic-cluster-policy'

# api/v1alpha1/validator/nicpolicy_webhook.go:54,56 (validator/nicclusterpolicy_webhook.go:53,55
# at v25.4.0, v25.7.0, v26.1.2).
WEBHOOK_FQDN = re.compile(r'^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z]{2,})+$')
WEBHOOK_RDMA_RESOURCE_NAME = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
# The keys of webhook-schemas/rdma_shared_device_plugin.json:29-65 (selectors), with
# "additionalProperties": false at :66.
SELECTOR_KEYS = ('vendors', 'deviceIDs', 'drivers', 'ifNames', 'linkTypes')

# k8s-rdma-shared-dev-plugin pkg/resources/resources_manager.go:305 validResourceName (v1.5.3: :289).
PLUGIN_RESOURCE_NAME = re.compile(r'^[a-zA-Z0-9_]+$')
# rdmaHcaResourcePrefix, resources_manager.go:59 (v1.5.3: :43): the prefix when the config names none.
PLUGIN_DEFAULT_PREFIX = 'rdma'
# The JSON fields the plugin reads (pkg/types/types.go:47-68, v1.5.3 :32-53). Go's encoding/json
# matches them without regard to case and drops every other key silently.
PLUGIN_LIST_FIELDS = ('periodicUpdateInterval', 'configList')
PLUGIN_ENTRY_FIELDS = ('resourceName', 'resourcePrefix', 'rdmaHcaMax', 'devices', 'selectors')


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def webhook_rdma_config_errors(text):
    """validateRdmaSharedDevicePlugin (nicpolicy_webhook.go:556-613; :352-409 at the older tags):
    the config must be a JSON object (:567-571), valid against webhook-schemas/rdma_shared_device_plugin.json
    (:574-585, :607-611), and then each entry's resourceName must match rdmaResourceNameRegex
    (:590-596) and a resourcePrefix, where given, fqdnRegex (:597-605). Only when the operator's
    admission controller is enabled (operator.admissionController.enabled, false by default:
    deployment/network-operator/values.yaml:293-295)."""
    try:
        config = json.loads(text)
    except ValueError as error:
        return ['Invalid json of RdmaSharedDevicePluginConfig: %s' % error]
    if not isinstance(config, dict):
        return ['Invalid json of RdmaSharedDevicePluginConfig: not an object']
    errors = _schema_errors(config)
    if errors:
        return errors
    for entry in config['configList']:
        if not WEBHOOK_RDMA_RESOURCE_NAME.match(entry['resourceName']):
            errors.append('Invalid Resource name %r' % entry['resourceName'])
        if 'resourcePrefix' in entry and not WEBHOOK_FQDN.match(entry['resourcePrefix']):
            return errors + ['Invalid Resource prefix %r, it must be a valid FQDN' % entry['resourcePrefix']]
    return errors


def _schema_errors(config):
    """webhook-schemas/rdma_shared_device_plugin.json (the same blob 3956aca at every tag above)."""
    if 'configList' not in config:  # "required": ["configList"] :115-117
        return ['configList is required']
    entries = config['configList']
    if not isinstance(entries, list) or not entries:  # "type": "array", "minItems": 1 :4-6
        return ['configList must be an array of at least 1 item']
    errors = []
    for i, entry in enumerate(entries):
        where = 'configList.%d' % i
        if not isinstance(entry, dict):  # :8
            errors.append('%s must be an object' % where)
            continue
        for key in ('resourceName', 'rdmaHcaMax'):  # "required" :108-111
            if key not in entry:
                errors.append('%s: %s is required' % (where, key))
        if 'resourceName' in entry and not isinstance(entry['resourceName'], str):  # :10-12
            errors.append('%s.resourceName must be a string' % where)
        if 'resourcePrefix' in entry and not isinstance(entry['resourcePrefix'], str):  # :13-15
            errors.append('%s.resourcePrefix must be a string' % where)
        if 'rdmaHcaMax' in entry and not _is_int(entry['rdmaHcaMax']):  # "type": "integer" :16-18
            errors.append('%s.rdmaHcaMax must be an integer' % where)
        if 'selectors' not in entry and 'devices' not in entry:  # "anyOf" selectors / devices :96-107
            errors.append('%s must have selectors or devices' % where)
        selectors = entry.get('selectors')
        if selectors is not None:
            if not isinstance(selectors, dict):  # :27-28
                errors.append('%s.selectors must be an object' % where)
                continue
            for key, values in selectors.items():
                if key not in SELECTOR_KEYS:  # "additionalProperties": false :66
                    errors.append('%s.selectors: additional property %s is not allowed' % (where, key))
                elif not (isinstance(values, list) and all(isinstance(v, str) and v for v in values)):
                    errors.append('%s.selectors.%s must be an array of non-empty strings' % (where, key))  # :30-64
            if not any(key in selectors for key in SELECTOR_KEYS):  # "anyOf" required one :67-93
                errors.append('%s.selectors must have one of %s' % (where, ', '.join(SELECTOR_KEYS)))
    return errors


def _go_field(data, name):
    """The value Go's encoding/json gives the struct field whose tag is NAME: an exact key
    first, else a key equal to it without regard to case; None when there is none."""
    if name in data:
        return data[name]
    for key, value in data.items():
        if key.lower() == name.lower():
            return value
    return None


def plugin_ignored_keys(text):
    """Keys of the config the plugin's types do not name (types.go:47-68): json.Unmarshal
    drops them without a word, so a misspelt key acts as if it were absent."""
    config = json.loads(text)
    known = {f.lower() for f in PLUGIN_LIST_FIELDS}
    ignored = ['%s' % key for key in config if key.lower() not in known]
    for i, entry in enumerate(_go_field(config, 'configList') or []):
        ignored += ['configList.%d.%s' % (i, key) for key in entry if key.lower() not in
                    {f.lower() for f in PLUGIN_ENTRY_FIELDS}]
        selectors = _go_field(entry, 'selectors') or {}
        ignored += ['configList.%d.selectors.%s' % (i, key) for key in selectors
                    if key.lower() not in {f.lower() for f in SELECTOR_KEYS}]
    return ignored


def plugin_resources(text):
    """What the plugin's main does with the config file (cmd/k8s-rdma-shared-dp/main.go:86-105;
    v1.5.3 :70-89): ReadConfig, ValidateConfigs, then one resource server per entry. Returns
    (error, resources): error is the message the plugin exits with (log.Fatal, the pod
    restarts and the node gets no resource), or ''; resources is [(name, devices)] with
    name "<prefix>/<resourceName>" and the number of devices the plugin offers the kubelet
    when the node has a device the selectors match."""
    # ReadConfig, resources_manager.go:112-144 (v1.5.3 :96-128): json.Unmarshal into
    # UserConfigList (types.go:56-68); a type mismatch fails the whole read.
    try:
        config = json.loads(text)
    except ValueError as error:
        return str(error), []
    interval = _go_field(config, 'periodicUpdateInterval')
    entries = _go_field(config, 'configList') or []
    for entry in entries:
        for name in ('resourceName', 'resourcePrefix'):
            value = _go_field(entry, name)
            if value is not None and not isinstance(value, str):
                return 'json: cannot unmarshal into UserConfig.%s of type string' % name, []
        hca = _go_field(entry, 'rdmaHcaMax')
        if hca is not None and not _is_int(hca):
            return 'json: cannot unmarshal into UserConfig.rdmaHcaMax of type int', []
    # ValidateConfigs, resources_manager.go:147-196 (v1.5.3 :131-180).
    if interval is not None and interval < 0:  # :150-152
        return 'invalid "periodicUpdateInterval" configuration "%d"' % interval, []
    if not entries:  # :154-156
        return 'no resources configuration found', []
    seen, resources = set(), []
    for entry in entries:
        name = _go_field(entry, 'resourceName') or ''
        if not PLUGIN_RESOURCE_NAME.match(name):  # :160-162, validResourceName :303-307
            return 'error: resource name "%s" contains invalid characters' % name, []
        if name in seen:  # :164-168
            return 'error: resource name "%s" already exists' % name, []
        prefix = _go_field(entry, 'resourcePrefix') or PLUGIN_DEFAULT_PREFIX  # :170-172
        hca = _go_field(entry, 'rdmaHcaMax') or 0
        if hca < 0:  # :174-176; newResourceServer checks it again, server.go:145-147
            return 'error: Invalid value for rdmaHcaMax < 0: %d' % hca, []
        selectors = _go_field(entry, 'selectors') or {}
        # utils.IsEmptySelector (pkg/utils/utils.go:71-81, v1.5.3 :55-65): every list empty.
        empty = not any(_go_field(selectors, key) for key in SELECTOR_KEYS)
        devices = _go_field(entry, 'devices') or []
        if empty and not devices:  # :178-182
            return ('error: configuration missmatch. neither "selectors" nor "devices" fields exits, it is '
                    'recommended to use the new "selectors" field'), []
        if not empty and devices:  # :184-186
            return 'configuration mismatch. Cannot specify both "selectors" and "devices" fields', []
        seen.add(name)
        # newResourceServer, pkg/resources/server.go:139-190 (from :138 at network-operator-v25.7.0,
        # :125 at v1.5.3): rdmaHcaMax devices when the selectors match a device (:154-165), none
        # when rdmaHcaMax is 0, under the name "<prefix>/<resourceName>" (:174).
        resources.append(('%s/%s' % (prefix, name), hca))
    return '', resources


def configmap_config(text):
    """The config as the plugin's pod reads it. The operator pastes it between single quotes
    into the ConfigMap of manifests/state-rdma-shared-device-plugin/0050_rdma-shared-dev-plugin-config-map.yaml:21
    (`config.json: '{{ .CrSpec.Config }}'`, rendered only when a config is given, :14), mounted
    at the plugin's DefaultConfigFilePath /k8s-rdma-shared-dev-plugin/config.json
    (0060_rdma-shared-dev-plugin-ds.yaml:66-67,96-101; resources_manager.go:56). Returns the text the
    YAML parser makes of it (PyYAML here, for the YAML the operator hands the apiserver), or
    raises yaml.YAMLError when that YAML does not parse."""
    document = yaml.safe_load("data:\n  config.json: '%s'\n" % text)
    return document['data']['config.json']


def image_spec_errors(spec):
    """ImageSpec.ValidateRequiredFields (api/v1alpha1/nicclusterpolicy_types.go:105-114 at v26.4.1),
    which each state calls before it renders its objects (e.g. pkg/state/state_rdma_shared_device_plugin.go:153-156):
    a component without repository or version renders nothing (spec.global can fill them,
    :89-103; the project sets none). New in v26.4.1: the older tags build the image path from
    whatever is given, an empty repository or version included."""
    return [message for field, message in (('repository', 'repository is required'),
                                           ('version', 'version is required'))
            if not spec.get(field)]


# --- MacvlanNetwork -> NetworkAttachmentDefinition ---------------------------------------------

def macvlan_network_attachment_definition(macvlan):
    """The NetworkAttachmentDefinition the operator's MacvlanNetwork state renders
    (pkg/state/state_macvlan_network.go:130-158, manifests/state-macvlan-network/0010-macvlan-net-cr.yml:1-21;
    the same blob dd00be4 and the same lines at v25.4.0, v25.7.0, v26.1.2 and v26.4.1), as the
    apiserver reads its YAML. The template is Go text/template, which escapes nothing:
    - the NAD has the MacvlanNetwork's name, in spec.networkNamespace or "default" (:133-138);
    - spec.config is a single-quoted YAML scalar (yml :7, :21) holding a JSON object written as
      text: cniVersion "0.3.1", name, type "macvlan" (yml :8-10), then "master" and "mode" each
      only when non-empty and pasted between double quotes (yml :11-16), "mtu" only when not 0
      (yml :17-19), and the IPAM: `"ipam":` followed by spec.ipam with EVERY run of whitespace
      removed, inside JSON strings too (go :144-148, strings.Fields), or `"ipam":{}` (go :147).
    Raises yaml.YAMLError when the YAML does not parse (a "'" in a value)."""
    spec = macvlan.get('spec') or {}
    name = macvlan['metadata']['name']
    ipam = '"ipam":' + (''.join(spec['ipam'].split()) if spec.get('ipam') else '{}')
    # The trim markers ({{- and -}}, yml :11-19) remove the line breaks and indentation around
    # each optional field, so the fields follow one another on one line.
    text = ''.join([
        'apiVersion: "k8s.cni.cncf.io/v1"\nkind: NetworkAttachmentDefinition\nmetadata:\n',
        '  name: %s\n  namespace: %s\n' % (name, spec.get('networkNamespace') or 'default'),
        "spec:\n  config: '{\n  \"cniVersion\":\"0.3.1\",\n  \"name\":\"%s\",\n  \"type\":\"macvlan\"," % name,
        '"master": "%s",' % spec['master'] if spec.get('master') else '',
        '"mode" : "%s",' % spec['mode'] if spec.get('mode') else '',
        '"mtu" : %d,' % spec['mtu'] if spec.get('mtu') else '',
        ipam, "\n}'\n",
    ])
    return yaml.safe_load(text)
