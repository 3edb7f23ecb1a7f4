"""roles/ipu_operator/files/helm_image_rewrite.py: the Helm post-renderer's rewrite."""

import importlib.util
import io
from pathlib import Path

import pytest

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


def run(args, stdin):
    out, err = io.StringIO(), io.StringIO()
    rc = rewrite_program.main(['helm_image_rewrite.py'] + args, io.StringIO(stdin), out, err)
    return rc, out.getvalue(), err.getvalue()


def test_the_hardcoded_image_line_is_rewritten_and_nothing_else():
    rc, out, _ = run(['%s=%s' % (OLD, NEW)], MANIFESTS)
    assert rc == 0
    assert out == MANIFESTS.replace('        image: ' + OLD, '        image: ' + NEW)
    assert out.count(NEW) == 1 and 'image: %s is mentioned' % OLD in out


@pytest.mark.parametrize('line, expected', [
    ('  image: "%s"' % OLD, '  image: "%s"' % NEW),
    ("  - image: '%s'  # pinned" % OLD, "  - image: '%s'  # pinned" % NEW),
    ('image: %s\r' % OLD, 'image: %s\r' % NEW),
])
def test_quoted_listed_commented_and_crlf_forms_are_rewritten(line, expected):
    rc, out, _ = run(['%s=%s' % (OLD, NEW)], line + '\n')
    assert (rc, out) == (0, expected + '\n')


def test_a_longer_image_with_the_same_prefix_is_left_alone():
    text = 'image: %s-debug\nimage: %s\n' % (OLD, OLD)
    rc, out, _ = run(['%s=%s' % (OLD, NEW)], text)
    assert (rc, out) == (0, 'image: %s-debug\nimage: %s\n' % (OLD, NEW))


def test_a_mapping_no_manifest_uses_fails_without_output():
    rc, out, err = run(['%s=%s' % (OLD, NEW)], 'image: busybox\n')
    assert rc == 1 and out == ''
    assert 'no manifest uses %s' % OLD in err


@pytest.mark.parametrize('args', [[], ['no-equals'], ['=x'], ['x='], ['a b=c'], ['a=b', 'a=c']])
def test_bad_arguments_fail_with_usage(args):
    rc, out, err = run(args, MANIFESTS)
    assert rc == 2 and out == '' and 'usage:' in err
