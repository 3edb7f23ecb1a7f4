#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Helm post-renderer: rewrite container images a chart hard-codes.

    helm_image_rewrite.py [MAPPING.json] < manifests > manifests

Helm pipes the rendered manifests of a release through this program (helm install/upgrade
--post-renderer, kubernetes.core.helm post_renderer) and applies what it prints. The rewrites
are DATA, never arguments or code: a JSON object {FROM: TO} read from MAPPING.json, by default
the file beside this program named like it with ".json" added (the ipu_operator role writes
it there). Every `image:` line whose value is exactly FROM (quoted or not) gets TO, written
as a double-quoted YAML string; nothing else changes, byte for byte. The ipu_operator role
uses it for gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0, which the Graphcore ipu-operator
charts 1.1.0 and 1.2.0 hard-code in templates/controller-deployment.yaml although that
registry path no longer exists.

A FROM that no manifest contains is an error (exit 1): the chart is not the one the
mapping was written for, and a silent no-op would leave the old image in place.
Standard library only: it runs with the host's python3.
"""

import json
import os
import re
import sys

_IMAGE_LINE = re.compile(r'^(?P<lead>\s*(?:-\s+)?image:\s*)(?P<quote>["\']?)(?P<image>[^"\'\s#]+)(?P=quote)'
                         r'(?P<tail>\s*(?:#.*)?)$')


def load_mapping(path):
    """{FROM: TO} from a JSON file; ValueError on anything else."""
    with open(path) as handle:
        mapping = json.load(handle)
    if (not isinstance(mapping, dict) or not mapping
            or not all(isinstance(k, str) and isinstance(v, str) and k and v for k, v in mapping.items())):
        raise ValueError('%s is not a JSON object of image rewrites {"FROM": "TO", ...}' % path)
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
            # JSON strings are YAML double-quoted scalars: TO stays one value, whatever it holds.
            body = '%s%s%s' % (match.group('lead'), json.dumps(mapping[image]), match.group('tail'))
        out.append(body + end)
    return ''.join(out), counts


def main(argv, stdin, stdout, stderr):
    path = argv[1] if len(argv) > 1 else os.path.abspath(argv[0]) + '.json'
    try:
        mapping = load_mapping(path)
    except (OSError, ValueError) as e:
        stderr.write('helm_image_rewrite: %s\nusage: %s [MAPPING.json] < manifests\n' % (e, argv[0]))
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
