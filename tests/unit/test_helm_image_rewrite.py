"""roles/ipu_operator/files/helm_image_rewrite.py: the Helm post-renderer's rewrite."""

import importlib.util
import io
import json
from pathlib import Path

import pytest
import yaml

PROGRAM = Path(__file__).resolve().parents[2] / 'roles' / 'ipu_operator' / 'files' / 'helm_image_rewrite.py'
SPEC = importlib.util.spec_from_file_location('helm_image_rewrite', PROGRAM)
rewrite_program = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rewrite_program)

OLD = 'gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'
NEW = 'registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0'

# The shape of the chart's controller Deployment as Helm renders it (two containers).
MANIFESTS = """---
# Source: ipu-operator/templates/controller-deployment.yaml
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - name: kube-rbac-proxy
        image: gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0
        imagePullPolicy: IfNotPresent
      - name: manager
        image: "graphcore/ipu-operator-controller:1.2.0"
---
apiVersion: v1
kind: ConfigMap
data:
  note: "image: gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0 is mentioned here, not used"
"""


def run(mapping, stdin, tmp_path):
    """The program as Helm runs it: the mapping in the JSON file beside it, the manifests on stdin."""
    path = tmp_path / 'helm-post-renderer.json'
    path.write_text(mapping if isinstance(mapping, str) else json.dumps(mapping))
    out, err = io.StringIO(), io.StringIO()
    rc = rewrite_program.main([str(tmp_path / 'helm-post-renderer')], io.StringIO(stdin), out, err)
    return rc, out.getvalue(), err.getvalue()


def test_the_hardcoded_image_line_is_rewritten_and_nothing_else(tmp_path):
    rc, out, _ = run({OLD: NEW}, MANIFESTS, tmp_path)
    assert rc == 0
    assert out == MANIFESTS.replace('        image: ' + OLD, '        image: "%s"' % NEW)
    assert out.count(NEW) == 1 and 'image: %s is mentioned' % OLD in out


@pytest.mark.parametrize('line, expected', [
    ('  image: "%s"' % OLD, '  image: "%s"' % NEW),
    ("  - image: '%s'  # pinned" % OLD, '  - image: "%s"  # pinned' % NEW),
    ('image: %s\r' % OLD, 'image: "%s"\r' % NEW),
])
def test_quoted_listed_commented_and_crlf_forms_are_rewritten(line, expected, tmp_path):
    rc, out, _ = run({OLD: NEW}, line + '\n', tmp_path)
    assert (rc, out) == (0, expected + '\n')


def test_a_digest_pinned_image_is_written_whole(tmp_path):
    pinned = NEW + '@sha256:' + 'ab' * 32
    rc, out, _ = run({OLD: pinned}, 'image: %s\n' % OLD, tmp_path)
    assert rc == 0 and yaml.safe_load(out) == {'image': pinned}


def test_a_value_with_quotes_and_newlines_stays_one_yaml_string(tmp_path):
    hostile = 'x\'"\n  command: [sh]\nimage: y'
    rc, out, _ = run({OLD: hostile}, 'image: %s\n' % OLD, tmp_path)
    assert rc == 0 and yaml.safe_load(out) == {'image': hostile}


def test_a_longer_image_with_the_same_prefix_is_left_alone(tmp_path):
    text = 'image: %s-debug\nimage: %s\n' % (OLD, OLD)
    rc, out, _ = run({OLD: NEW}, text, tmp_path)
    assert (rc, out) == (0, 'image: %s-debug\nimage: "%s"\n' % (OLD, NEW))


def test_a_mapping_no_manifest_uses_fails_without_output(tmp_path):
    rc, out, err = run({OLD: NEW}, 'image: busybox\n', tmp_path)
    assert rc == 1 and out == ''
    assert 'no manifest uses %s' % OLD in err


@pytest.mark.parametrize('mapping', ['{}', '[]', 'not json', '{"a": 1}', '{"": "b"}'])
def test_a_mapping_file_that_is_not_rewrites_fails_with_usage(mapping, tmp_path):
    rc, out, err = run(mapping, MANIFESTS, tmp_path)
    assert rc == 2 and out == '' and 'usage:' in err


def test_a_missing_mapping_file_fails_with_usage(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    rc = rewrite_program.main([str(tmp_path / 'absent')], io.StringIO(MANIFESTS), out, err)
    assert rc == 2 and out.getvalue() == '' and 'usage:' in err.getvalue()
