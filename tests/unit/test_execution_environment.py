"""execution-environment.yml: ansible-builder (pinned in requirements.txt) accepts it and
writes the build context with the collections and Python libraries the project needs, at
the versions the .venv toolchain is tested with."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BUILDER = Path(sys.executable).with_name("ansible-builder")


def pins(path):
    """{name: version} of the name==version lines of a requirements file."""
    found = {}
    for line in Path(path).read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    out = tmp_path_factory.mktemp("ee") / "context"
    proc = subprocess.run([str(BUILDER), "create", "-f", str(ROOT / "execution-environment.yml"), "-c", str(out),
                           "--output-filename", "Containerfile"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_ansible_builder_create_writes_the_build_context(context):
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile and "FROM $EE_BASE_IMAGE" in containerfile
    assert (context / "_build" / "scripts" / "assemble").is_file()
    assert "ansible-core==2.19.14" in containerfile and "ansible-runner==2.4.3" in containerfile


def test_the_context_carries_the_collections_of_requirements_yml(context):
    built = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    wanted = yaml.safe_load((ROOT / "requirements.yml").read_text())
    assert built == wanted


def called_collections():
    """The collections named by the fully qualified module calls and filters of the project's
    YAML (roles, playbooks, site.yml, the Molecule scenario), ansible.builtin aside."""
    called = set()
    files = [ROOT / "site.yml", *(ROOT / d for d in ("roles", "playbooks", "molecule"))]
    for path in files:
        for yml in [path] if path.is_file() else path.rglob("*.yml"):
            text = yml.read_text()
            called |= set(re.findall(r"^[ -]*([a-z_]+\.[a-z_]+)\.[a-z_0-9]+:", text, re.MULTILINE))
            called |= set(re.findall(r"\|\s*([a-z_]+\.[a-z_]+)\.[a-z_0-9]+", text))
    return called - {"ansible.builtin"}


def test_requirements_yml_lists_the_collections_the_project_calls():
    listed = {c["name"] for c in yaml.safe_load((ROOT / "requirements.yml").read_text())["collections"]}
    assert listed == called_collections()


def test_the_context_carries_the_controller_libraries_at_the_tested_versions(context):
    built = pins(context / "_build" / "requirements.txt")
    tested = pins(ROOT / "requirements.txt")
    assert set(built) == {"kubernetes"}
    assert all(tested[name] == version for name, version in built.items()), (built, tested)
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    for key in ("ansible_core", "ansible_runner"):
        name, version = ee["dependencies"][key]["package_pip"].split("==")
        assert tested[name] == version, (key, name, version)
    assert "openssh-clients" in (context / "_build" / "bindep.txt").read_text()
