# -*- coding: utf-8 -*-
"""Is a running systemd service older than its configuration? Pure logic, no Ansible.

A handler that restarts a service after its configuration changed is lost when the run
stops before handlers run (Ctrl-C, a dropped SSH session, a later failed task): the next
run finds the files already right and changes nothing, while the service keeps what it
read when it started. The running state is what counts, so the question is asked of it:
did the service's main process start before the newest of its files was last written?

systemd reports when the main process started as a CLOCK_MONOTONIC time
(ExecMainStartTimestampMonotonic, microseconds since boot, on every systemd release);
files carry wall-clock mtimes. The start is turned into wall-clock time with the two
clocks read together at the moment of the question, which holds as long as the wall
clock was not stepped back between the file's write and the service's start.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime

# The properties `systemctl show` is asked for.
SHOW_PROPERTIES = (
    'LoadState',
    'ActiveState',
    'SubState',
    'MainPID',
    'ExecMainStartTimestampMonotonic',
    'NeedDaemonReload',
    'UnitFileState',
)

# States in which a process exists that read its configuration when it started.
RUNNING_STATES = ('active', 'activating', 'reloading', 'deactivating')


def parse_show(text):
    """`systemctl show --property=...` output (KEY=VALUE lines) as a dict of strings."""
    properties = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep and key and key not in properties:
            properties[key] = value
    return properties


def freshness(unit, properties, mtimes, now_realtime, now_monotonic):
    """Whether the unit must be restarted to run with its current configuration.

    unit: the unit name, for messages. properties: parse_show() of the unit.
    mtimes: path -> wall-clock mtime in seconds, for the configuration files that exist.
    now_realtime, now_monotonic: time.time() and CLOCK_MONOTONIC seconds, read together.

    Returns a dict: loaded, enabled, running, main_pid, started (ISO 8601 UTC or ""),
    restart_needed, reasons (one sentence each), newer_paths (sorted).
    """
    load_state = properties.get('LoadState', '')
    active_state = properties.get('ActiveState', '')
    result = {
        'loaded': load_state == 'loaded',
        'enabled': properties.get('UnitFileState') == 'enabled',
        'running': False,
        'main_pid': int(properties.get('MainPID', '0') or 0),
        'started': '',
        'restart_needed': False,
        'reasons': [],
        'newer_paths': [],
    }
    if load_state != 'loaded':
        result['reasons'].append('%s is not installed (LoadState=%s): nothing to restart.' % (unit, load_state or '?'))
        return result
    started_us = int(properties.get('ExecMainStartTimestampMonotonic', '0') or 0)
    if active_state not in RUNNING_STATES or started_us == 0:
        result['reasons'].append(
            '%s is not running (ActiveState=%s): it reads its configuration when it starts.' % (unit, active_state or '?'))
        return result
    result['running'] = True
    started = now_realtime - (now_monotonic - started_us / 1e6)
    result['started'] = datetime.datetime.fromtimestamp(started, tz=datetime.timezone.utc).isoformat(timespec='seconds')
    newer = sorted(path for path, mtime in mtimes.items() if mtime > started)
    result['newer_paths'] = newer
    if newer:
        result['reasons'].append('%s started at %s, before %s last changed.' % (unit, result['started'], ', '.join(newer)))
    if properties.get('NeedDaemonReload', 'no') == 'yes':
        result['reasons'].append('%s has unit files or drop-ins that systemd has not loaded yet.' % unit)
    result['restart_needed'] = bool(result['reasons'])
    return result


def first_loaded(candidates):
    """The first unit name in candidates (list of (name, properties)) whose LoadState is loaded, or ''."""
    return next((name for name, properties in candidates if properties.get('LoadState') == 'loaded'), '')
