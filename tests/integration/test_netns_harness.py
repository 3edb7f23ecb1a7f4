"""The namespace housekeeping itself: what a crashed test run leaves behind is swept at the
next session start, while the namespaces of a run still going, and young ones whose owner
is not known, are left alone."""

import os
import subprocess

from netns_lab import NETNS_ETC, PREFIX, Netns, ip_binary, sweep_stale_namespaces


def namespaces():
    listing = subprocess.run([ip_binary(), 'netns', 'list'], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listing.splitlines()]


def test_namespaces_of_a_dead_run_are_swept_and_live_ones_kept(netns_factory):
    child = subprocess.Popen(['true'])
    child.wait()
    stale = Netns('%s%d-0000-stale' % (PREFIX, child.pid))
    live = Netns('%s%d-0000-live' % (PREFIX, os.getpid()))
    unowned = Netns('%sprobe-0000' % PREFIX)  # no process id in the name, and just made
    try:
        for namespace in (stale, live, unowned):
            subprocess.run([ip_binary(), 'netns', 'add', namespace.name], check=True)
        stale.etc_file('hosts', '127.0.0.1 localhost\n')
        sweep_stale_namespaces()
        present = namespaces()
        assert stale.name not in present and not (NETNS_ETC / stale.name).exists()
        assert live.name in present and unowned.name in present
    finally:
        for namespace in (stale, live, unowned):
            namespace.delete()
