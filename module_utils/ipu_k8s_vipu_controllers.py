# -*- coding: utf-8 -*-
"""The V-IPU controller list (ipu_k8s_vipu_controllers), parsed and checked in one place.

Used by the vipu_server module on each IPU node (which entry is mine, resolved there),
and through filter_plugins/ipu_k8s_vipu.py by preflight (the inventory alone, before
anything changes) and by the ipu_operator role (global.vipuControllers and the node labels
from the entries the nodes resolved). Pure Python, standard library only; every refusal
names the setting, the bad value and the fix.
"""

import re

try:
    from ansible.module_utils.ipu_k8s_rdma import IpuK8sError, parse_port, split_address
except ImportError:  # imported from a filter plugin or a test, beside ipu_k8s_rdma.py
    from ipu_k8s_rdma import IpuK8sError, parse_port, split_address

SETTING = 'ipu_k8s_vipu_controllers'
CHOICE = 'ipu_k8s_vipu_controller'
ENTRY_KEYS = ('name', 'host', 'port', 'label')

# A Kubernetes label key: optional DNS-subdomain prefix and '/', then a name of at most
# 63 characters. A label value: at most 63 characters, may be empty.
_LABEL_PREFIX = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_LABEL_NAME = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')
_LABEL_VALUE = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$')


def label_problem(label):
    """Why label is not a usable key=value Kubernetes node label, or None when it is."""
    if not isinstance(label, str) or label.count('=') != 1:
        return "is not key=value (exactly one '='), e.g. vipu-ctrl=pod001"
    key, value = label.split('=')
    prefix, slash, name = key.rpartition('/')
    if (not _LABEL_NAME.match(name) or len(name) > 63
            or (slash and (not _LABEL_PREFIX.match(prefix) or len(prefix) > 253))):
        return ("has an invalid Kubernetes label key '%s' (an optional lower-case DNS prefix and '/', then at most "
                "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)" % key)
    if not _LABEL_VALUE.match(value) or len(value) > 63:
        return ("has an invalid Kubernetes label value '%s' (at most 63 letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit)" % value)
    return None


def _entry_problems(where, raw, default_port, default_label):
    """(entry dict or None, [problems]) for one item of the list."""
    if not isinstance(raw, dict):
        return None, ["%s is %r, not a mapping: write it as {name: pod001, host: 10.5.212.116}" % (where, raw)]
    problems = []
    name = raw.get('name')
    name = '' if name is None else str(name).strip()
    who = '%s (%s)' % (where, name) if name else where
    unknown = sorted(str(k) for k in raw if k not in ENTRY_KEYS)
    if unknown:
        problems.append("%s has unknown key(s) %s: the keys are %s" % (who, ', '.join(unknown), ', '.join(ENTRY_KEYS)))
    if not name:
        problems.append("%s has no name: give each controller a name (ipu_k8s_vipu_controller refers to it), "
                        "e.g. name: pod001" % where)
    host_text = raw.get('host')
    host_text = '' if host_text is None else str(host_text).strip()
    host = None
    if not host_text:
        problems.append("%s: host is empty: give the V-IPU controller's IPv4 address or DNS name" % who)
    else:
        try:
            host, port_in_host = split_address(host_text, 'host')
        except IpuK8sError as e:
            problems.append("%s: %s: give an IPv4 address or a DNS name only" % (who, e))
        else:
            if port_in_host is not None:
                host = None
                problems.append("%s: host '%s' carries a port: write host: %s and port: %d"
                                % (who, host_text, host_text.rsplit(':', 1)[0], port_in_host))
    port = raw.get('port')
    if port is None or port == '':
        port = default_port
    try:
        port = parse_port(port, 'port')
    except IpuK8sError:
        problems.append("%s: port '%s' is not a TCP port (1-65535): give the V-IPU controller's port, "
                        "usually 8090" % (who, port))
        port = None
    label = raw.get('label')
    label = default_label if label is None or str(label).strip() == '' else str(label).strip()
    why = label_problem(label)
    if why:
        problems.append("%s: label '%s' %s" % (who, label, why))
    if problems:
        return None, problems
    return {'name': name, 'host': host, 'port': port, 'label': label}, []


def parse_controllers(controllers, default_port, default_label, setting=SETTING):
    """The list as given in the inventory -> [entry], entries {name, host, port, label}.

    host is as written (a DNS name is resolved later, on the node); port and label take
    the defaults when absent. Raises IpuK8sError naming every bad entry at once.
    """
    if controllers is None:
        controllers = []
    if not isinstance(controllers, (list, tuple)):
        raise IpuK8sError("%s is %r, not a list: write it as a list of {name, host, port, label}, or [] to let "
                          "each IPU node find its controller itself" % (setting, controllers))
    why = label_problem(default_label)
    if why:
        raise IpuK8sError("ipu_k8s_ipu_node_label '%s' %s" % (default_label, why))
    entries, problems = [], []
    for index, raw in enumerate(controllers):
        entry, found = _entry_problems('%s[%d]' % (setting, index), raw, default_port, default_label)
        problems += found
        if entry:
            entry['where'] = '%s[%d] (%s)' % (setting, index, entry['name'])
            entries.append(entry)
    for key, what, fix in (
            ('name', 'name', 'give each IPU-POD its own name'),
            ('address', 'host and port', 'list each V-IPU controller once'),
            ('label', 'label', 'give each IPU-POD its own label, or the operator cannot tell their nodes apart')):
        seen = {}
        for entry in entries:
            value = ('%s:%d' % (entry['host'].lower(), entry['port'])) if key == 'address' else entry[key]
            seen.setdefault(value, []).append(entry['where'])
        for value, where in seen.items():
            if len(where) > 1:
                problems.append("%s: %s and %s have the same %s '%s': %s"
                                % (setting, ', '.join(where[:-1]), where[-1], what, value, fix))
    if problems:
        raise IpuK8sError('; '.join(problems))
    for entry in entries:
        del entry['where']
    return entries


def choose_controller(entries, choice, setting=SETTING):
    """The entry a node's ipu_k8s_vipu_controller names (the first when it is empty)."""
    if not entries:
        raise IpuK8sError('%s is empty: there is no controller to choose from' % setting)
    choice = '' if choice is None else str(choice).strip()
    if not choice:
        return entries[0]
    for entry in entries:
        if entry['name'] == choice:
            return entry
    raise IpuK8sError("%s '%s' names no entry of %s (names: %s): set it to one of those names, or leave it empty "
                      "for the first" % (CHOICE, choice, setting, ', '.join(e['name'] for e in entries)))


def unchosen_controller_problem(entries, choice, connected):
    """Why a node with an empty ipu_k8s_vipu_controller must name its controller, or None.

    connected is {entry name: True when this node reaches that controller's address on a
    directly connected subnet}. An empty choice means the first entry; that is wrong for a
    node of another IPU-POD: its route to the first controller goes through a gateway (or
    nowhere) while another listed controller sits on one of its own subnets.
    """
    choice = '' if choice is None else str(choice).strip()
    if choice or len(entries) < 2 or connected.get(entries[0]['name']):
        return None
    reachable = [e for e in entries[1:] if connected.get(e['name'])]
    if not reachable:
        return None
    return ("%s is empty, so this node takes the first entry of %s, %s (%s), which it does not reach on a "
            "connected subnet, while %s on its own subnet: set %s: %s for this host (host_vars, or the "
            "group_vars of its IPU-POD)" % (
                CHOICE, SETTING, entries[0]['name'], entries[0]['host'],
                ' and '.join('%s (%s) is' % (e['name'], e['host']) for e in reachable)
                if len(reachable) == 1 else ', '.join('%s (%s)' % (e['name'], e['host']) for e in reachable) + ' are',
                CHOICE, reachable[0]['name']))


def inventory_problems(controllers, choices, default_port, default_label):
    """Every mistake in the controller list and the hosts' choices -> [message], empty when none.

    choices is {inventory host: its ipu_k8s_vipu_controller}. Needs no node facts.
    """
    try:
        entries = parse_controllers(controllers, default_port, default_label)
    except IpuK8sError as e:
        return [str(e)]
    problems = []
    for host, choice in sorted((choices or {}).items()):
        if not choice:
            continue
        if not entries:
            problems.append("%s: %s is '%s' but %s is empty: list the controllers, or leave %s empty"
                            % (host, CHOICE, choice, SETTING, CHOICE))
            continue
        try:
            choose_controller(entries, choice)
        except IpuK8sError as e:
            problems.append('%s: %s' % (host, e))
    return problems


# --- the operator's view: what the IPU nodes resolved ---------------------------------

def operator_controllers(node_facts, node_names=None):
    """{IPU node: its vipu_server fact} (inventory order) -> what the IPU Operator gets.

    Returns {'controllers': [{name, host, port, label}] in order of first use,
    'value': the chart's global.vipuControllers ("host:port:key=value,..."),
    'nodes': [{host, node, controller, label_key, label_value}]}. node_names maps an
    inventory host to its Kubernetes node name (default: the host itself).
    """
    node_names = node_names or {}
    if not node_facts:
        raise IpuK8sError('the ipu_nodes inventory group is empty: list the Poplar servers whose RDMA NIC reaches '
                          'the IPU-Machines')
    missing = [host for host, fact in node_facts.items() if not isinstance(fact, dict) or not fact.get('host')]
    if missing:
        raise IpuK8sError('IPU node(s) %s have no vipu_server fact: run the rdma_network facts step on them first '
                          '(playbooks/rdma_network.yml, or playbooks/ipu_operator.yml which runs it), in the same '
                          'ansible-playbook run' % ', '.join(missing))
    controllers, by_key, nodes, problems = [], {}, [], []
    for host, fact in node_facts.items():
        port = parse_port(fact.get('port'), 'port of the vipu_server fact of %s' % host)
        address = '%s:%d' % (fact['host'], port)
        label = str(fact.get('label') or '')
        name = str(fact.get('name') or address)
        why = label_problem(label)
        if why:
            raise IpuK8sError("the vipu_server fact of %s has label '%s', which %s: set ipu_k8s_ipu_node_label or "
                              "the entry's label" % (host, label, why))
        key = (name, address, label)
        if key not in by_key:
            by_key[key] = {'name': name, 'host': fact['host'], 'port': port, 'label': label, 'nodes': []}
            controllers.append(by_key[key])
        by_key[key]['nodes'].append(host)
        nodes.append({'host': host, 'node': node_names.get(host) or host, 'controller': name,
                      'label_key': label.split('=')[0], 'label_value': label.split('=')[1]})

    def who(c):
        return '%s at %s:%d (%s)' % (c['name'], c['host'], c['port'], ', '.join(c['nodes']))

    for field, what, fix in (
            ('name', 'one controller name resolves to different addresses on different nodes',
             "make the name resolve to the same IPv4 address on every IPU node (DNS or /etc/hosts), or give "
             "the address in the entry's host"),
            ('label', 'one label stands for different V-IPU controllers',
             'list each controller in ipu_k8s_vipu_controllers with its own label and set ipu_k8s_vipu_controller '
             'on each IPU node'),
            ('address', 'one V-IPU controller is listed under different names or labels',
             'list each controller once in ipu_k8s_vipu_controllers')):
        groups = {}
        for c in controllers:
            value = '%s:%d' % (c['host'], c['port']) if field == 'address' else c[field]
            groups.setdefault(value, []).append(c)
        for value, group in groups.items():
            if len(group) > 1:
                problems.append("%s ('%s'): %s: %s" % (what, value, '; '.join(who(c) for c in group), fix))
    if problems:
        raise IpuK8sError('the IPU nodes resolved V-IPU controllers the IPU Operator cannot use: %s'
                          % '; '.join(problems))
    value = ','.join('%s:%d:%s' % (c['host'], c['port'], c['label']) for c in controllers)
    return {
        'controllers': [dict((k, c[k]) for k in ('name', 'host', 'port', 'label')) for c in controllers],
        'value': value,
        'nodes': nodes,
    }
