#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Helm post-renderer: rewrite container images a chart hard-codes.

    helm_image_rewrite.py FROM=TO [FROM=TO ...] < manifests > manifests

Helm pipes the rendered manifests of a release through this program (helm install/upgrade
--post-renderer, kubernetes.core.helm post_renderer) and applies what it prints. Every
`image:` line whose value is exactly FROM (quoted or not) gets TO; nothing else changes,
byte for byte. The ipu_operator role uses it for gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0,
which the Graphcore ipu-operator charts 1.1.0 and 1.2.0 hard-code in
templates/controller-deployment.yaml although that registry path no longer exists.

A FROM that no manifest contains is an error (exit 1): the chart is not the one the
mapping was written for, and a silent no-op would leave the old image in place.
Standard library only: it runs with the host's python3.
"""

import re
import sys

_IMAGE_LINE = re.compile(r'^(?P<lead>\s*(?:-\s+)?image:\s*)(?P<quote>["\']?)(?P<image>[^"\'\s#]+)(?P=quote)'
                         r'(?P<tail>\s*(?:#.*)?)$')


def parse_mapping(arguments):
    """['FROM=TO', ...] -> {FROM: TO}; ValueError on anything else."""
    mapping = {}
    for argument in arguments:
        source, sep, target = argument.partition('=')
        if not sep or not source or not target or any(c.isspace() for c in argument):
            raise ValueError('%r is not FROM=TO (two image references without spaces)' % argument)
        if source in mapping and mapping[source] != target:
            raise ValueError('%s is mapped twice: to %s and to %s' % (source, mapping[source], target))
        mapping[source] = target
    if not mapping:
        raise ValueError('no FROM=TO mapping given')
    return mapping


def rewrite(text, mapping):
    """(rewritten text, {FROM: number of lines rewritten})."""
    counts = dict((source, 0) for source in mapping)
    out = []
    for line in text.splitlines(True):
        body = line.rstrip('\r\n')
        end = line[len(body):]
        match = _IMAGE_LINE.match(body)
        if match and match.group('image') in mapping:
            image = match.group('image')
            counts[image] += 1
            body = '%s%s%s%s%s' % (match.group('lead'), match.group('quote'), mapping[image], match.group('quote'),
                                   match.group('tail'))
        out.append(body + end)
    return ''.join(out), counts


def main(argv, stdin, stdout, stderr):
    try:
        mapping = parse_mapping(argv[1:])
    except ValueError as e:
        stderr.write('helm_image_rewrite: %s\nusage: %s FROM=TO [FROM=TO ...] < manifests\n' % (e, argv[0]))
        return 2
    text, counts = rewrite(stdin.read(), mapping)
    missing = sorted(source for source, count in counts.items() if count == 0)
    if missing:
        stderr.write('helm_image_rewrite: no manifest uses %s: the chart is not the one this mapping was written '
                     'for. Check the chart version, and the image table of the role that installs it\n'
                     % ', '.join(missing))
        return 1
    stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv, sys.stdin, sys.stdout, sys.stderr))
