# -*- coding: utf-8 -*-
"""The V-IPU controller list (ipu_k8s_vipu_controllers), parsed and checked in one place,
and the site model built from what the IPU nodes resolved.

Used by the rdma_network_facts module on each IPU node (which entry is mine, resolved there),
and through plugins/filter/ipu_k8s_site.py by preflight (the inventory alone, before
anything changes) and on the controller (site_model: IPU-PODs, global.vipuControllers,
node labels, each POD's RDMA network). Pure Python, standard library only; every refusal
names the setting, the bad value and the fix.
"""

import re

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_rdma import (
    IpuK8sError, agree_rdma_networks, padding_problem, parse_port, pod_object_name, split_address)

SETTING = 'ipu_k8s_vipu_controllers'
CHOICE = 'ipu_k8s_vipu_controller'
ENTRY_KEYS = ('name', 'host', 'port', 'label')

# A Kubernetes label key: optional DNS-subdomain prefix and '/', then a name of at most
# 63 characters. A label value: at most 63 characters, may be empty.
# Matched in full (fullmatch), as Go's anchored regexps match: no '$' that lets a newline through.
_LABEL_PREFIX = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
_LABEL_NAME = re.compile(r'[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?')
_LABEL_VALUE = re.compile(r'([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?')


def label_problem(label):
    """Why label is not a usable key=value Kubernetes node label, or None when it is."""
    if not isinstance(label, str) or label.count('=') != 1:
        return "is not key=value (exactly one '='), e.g. vipu-ctrl=pod001"
    key, value = label.split('=')
    prefix, slash, name = key.rpartition('/')
    if (not _LABEL_NAME.fullmatch(name) or len(name) > 63
            or (slash and (not _LABEL_PREFIX.fullmatch(prefix) or len(prefix) > 253))):
        return ("has an invalid Kubernetes label key '%s' (an optional lower-case DNS prefix and '/', then at most "
                "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)" % key)
    if not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
        return ("has an invalid Kubernetes label value '%s' (at most 63 letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit)" % value)
    return None


def _text(value):
    """A setting's text, stripped; '' for None."""
    return '' if value is None else str(value).strip()


def _shared(items, field):
    """[(value, [items])] for each value of FIELD (address: host:port) that several items share."""
    groups = {}
    for item in items:
        value = '%s:%d' % (item['host'].lower(), item['port']) if field == 'address' else item[field]
        groups.setdefault(value, []).append(item)
    return [(value, group) for value, group in groups.items() if len(group) > 1]


def _entry_problems(where, raw, default_port, default_label):
    """(entry dict or None, [problems]) for one item of the list."""
    if not isinstance(raw, dict):
        return None, ["%s is %r, not a mapping: write it as {name: pod001, host: 10.5.212.116}" % (where, raw)]
    problems = []
    name = _text(raw.get('name'))
    who = '%s (%s)' % (where, name) if name else where
    unknown = sorted(str(k) for k in raw if k not in ENTRY_KEYS)
    if unknown:
        problems.append("%s has unknown key(s) %s: the keys are %s" % (who, ', '.join(unknown), ', '.join(ENTRY_KEYS)))
    if not name:
        problems.append("%s has no name: give each controller a name (ipu_k8s_vipu_controller refers to it), "
                        "e.g. name: pod001" % where)
    for key in ENTRY_KEYS:
        padded = padding_problem(raw.get(key))
        if padded:
            problems.append('%s: %s %r %s' % (who, key, raw[key], padded))
    host_text = _text(raw.get('host'))
    host = None
    if not host_text:
        problems.append("%s: host is empty: give the V-IPU controller's IPv4 address or DNS name" % who)
    elif not padding_problem(raw.get('host')):  # else refused above
        try:
            host, port_in_host = split_address(host_text, 'host')
        except IpuK8sError as e:
            problems.append("%s: %s: give an IPv4 address or a DNS name only" % (who, e))
        else:
            if port_in_host is not None:
                problems.append("%s: host '%s' carries a port: write host: %s and port: %d"
                                % (who, host_text, host, port_in_host))
    port = raw.get('port')
    if port is None or port == '':
        port = default_port
    try:
        port = parse_port(port.strip() if padding_problem(port) else port)
    except IpuK8sError:
        problems.append("%s: port '%s' is not a TCP port (1-65535): give the V-IPU controller's port, "
                        "usually 8090" % (who, port))
    label = _text(raw.get('label')) or default_label
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
        for value, group in _shared(entries, key):
            where = [entry['where'] for entry in group]
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
    if padding_problem(choice):
        raise IpuK8sError('%s %r %s' % (CHOICE, choice, padding_problem(choice)))
    choice = _text(choice)
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
    choice = _text(choice)
    if choice or len(entries) < 2 or connected.get(entries[0]['name']):
        return None
    reachable = [e for e in entries[1:] if connected.get(e['name'])]
    if not reachable:
        return None
    return ("%s is empty, so this node takes the first entry of %s, %s (%s), which it does not reach on a "
            "connected subnet, while %s on its own subnet: set %s: %s for this host (host_vars, or the "
            "group_vars of its IPU-POD)" % (
                CHOICE, SETTING, entries[0]['name'], entries[0]['host'],
                ('%s (%s) is' % (reachable[0]['name'], reachable[0]['host']) if len(reachable) == 1
                 else ', '.join('%s (%s)' % (e['name'], e['host']) for e in reachable) + ' are'),
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


# --- the site model: IPU-PODs, their controllers, nodes and RDMA networks --------------

def _group_by_controller(vipu_facts):
    """{IPU node: vipu_server fact} (inventory order) -> [controller {name, host, port, label,
    hosts}] in order of first use: the IPU-PODs, grouped once. Refuses missing facts and
    controllers the IPU Operator cannot tell apart."""
    if not vipu_facts:
        raise IpuK8sError('the ipu_nodes inventory group is empty: list the Poplar servers whose RDMA NIC reaches '
                          'the IPU-Machines')
    missing = [host for host, fact in vipu_facts.items() if not isinstance(fact, dict) or not fact.get('host')]
    if missing:
        raise IpuK8sError('IPU node(s) %s have no vipu_server fact: run the rdma_network facts step on them first '
                          '(playbooks/rdma_network.yml, or playbooks/ipu_operator.yml which runs it), in the same '
                          'ansible-playbook run' % ', '.join(missing))
    controllers, by_key, problems = [], {}, []
    for host, fact in vipu_facts.items():
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
            by_key[key] = {'name': name, 'host': fact['host'], 'port': port, 'label': label, 'hosts': []}
            controllers.append(by_key[key])
        by_key[key]['hosts'].append(str(host))

    def who(c):
        return '%s at %s:%d (%s)' % (c['name'], c['host'], c['port'], ', '.join(c['hosts']))

    for field, what, fix in (
            ('name', 'one controller name resolves to different addresses on different nodes',
             "make the name resolve to the same IPv4 address on every IPU node (DNS or /etc/hosts), or give "
             "the address in the entry's host"),
            ('label', 'one label stands for different V-IPU controllers',
             'list each controller in ipu_k8s_vipu_controllers with its own label and set ipu_k8s_vipu_controller '
             'on each IPU node'),
            ('address', 'one V-IPU controller is listed under different names or labels',
             'list each controller once in ipu_k8s_vipu_controllers')):
        problems += ["%s ('%s'): %s: %s" % (what, value, '; '.join(who(c) for c in group), fix)
                     for value, group in _shared(controllers, field)]
    if problems:
        raise IpuK8sError('the IPU nodes resolved V-IPU controllers the IPU Operator cannot use: %s'
                          % '; '.join(problems))
    return controllers


def site_model(nodes, network_name='', ipam=None, block_size=0):
    """The site, from what the IPU nodes reported -> {'pods', 'rdma_network', 'operator', 'warnings'}.

    nodes: {IPU node: {'vipu_server': fact, 'rdma_network': fact, 'node_name': Kubernetes
    node name}} in inventory order. The nodes are grouped once, by the V-IPU controller their
    vipu_server fact chose: one IPU-POD each, in order of first use.
    - operator: what the IPU Operator gets: value (its global.vipuControllers,
      "host:port:key=value,..."), controllers [{name, host, port, label}], nodes [{host,
      node, controller, label_key, label_value}] (the labels).
    - pods (only with ipam, 'whereabouts' or 'nv-ipam'): [{name, label, vipu_host,
      vipu_port, hosts, node_names, pool, rdma_network}]: the POD's nodes agree as
      agree_rdma_networks says (its refusal unchanged for one POD), PODs may differ; pool is
      the NVIDIA IPAM IPPool name (network_name for one POD, network_name-<pod> for several).
    - rdma_network: the one POD's network (one MacvlanNetwork), None for several PODs.
    - ipam: the IPAM the pools and CNI files use (None without).
    """
    nodes = nodes or {}
    controllers = _group_by_controller(dict((h, (n or {}).get('vipu_server')) for h, n in nodes.items()))
    names = dict((h, (n or {}).get('node_name') or h) for h, n in nodes.items())
    labels = [{'host': h, 'node': names[h], 'controller': c['name'], 'label_key': c['label'].split('=')[0],
               'label_value': c['label'].split('=')[1]} for c in controllers for h in c['hosts']]
    model = {
        'operator': {
            'controllers': [dict((k, c[k]) for k in ('name', 'host', 'port', 'label')) for c in controllers],
            'value': ','.join('%s:%d:%s' % (c['host'], c['port'], c['label']) for c in controllers),
            'nodes': sorted(labels, key=lambda n: list(nodes).index(n['host'])),
        },
        'pods': None, 'rdma_network': None, 'ipam': ipam, 'warnings': [],
    }
    if ipam is None:
        return model
    pods, problems = [], []
    for c in controllers:
        networks = dict((h, nodes[h].get('rdma_network')) for h in c['hosts'])
        try:
            network, found = agree_rdma_networks(networks, ipam, block_size)
        except IpuK8sError as e:
            if len(controllers) == 1:
                raise
            problems.append("V-IPU controller '%s' (IPU-POD of %s): %s" % (c['name'], ', '.join(sorted(c['hosts'])), e))
            continue
        model['warnings'] += found if len(controllers) == 1 else ["V-IPU controller '%s': %s" % (c['name'], w)
                                                                  for w in found]
        pods.append({'name': c['name'], 'label': c['label'], 'vipu_host': c['host'], 'vipu_port': c['port'],
                     'hosts': c['hosts'], 'node_names': [names[h] for h in c['hosts']],
                     'pool': network_name if len(controllers) == 1 else pod_object_name(network_name, c['name']),
                     'rdma_network': network})
    if problems:
        raise IpuK8sError('; '.join(problems))
    model['pods'] = pods
    model['rdma_network'] = pods[0]['rdma_network'] if len(pods) == 1 else None
    return model
