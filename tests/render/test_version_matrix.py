"""Every supported Kubernetes minor has a row in every version table, and every row is a fact.

preflight_supported_kubernetes_minors is what preflight accepts; each minor in it must be
served by the Network Operator chart table, the Calico release table and the kubeadm
configuration API table, so a run that passes preflight never meets a missing row later.
The Calico, kubeadm and patch-release tables are checked against the facts read upstream
(tests/schemas/calico/kubernetes-versions.yaml, tests/schemas/kubernetes/*.yaml).
"""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def load(path):
    return yaml.safe_load((ROOT / path).read_text())


def minor_tuple(minor):
    return tuple(int(part) for part in minor.split("."))


PREFLIGHT = load("roles/preflight/defaults/main.yml")
SUPPORTED = PREFLIGHT["preflight_supported_kubernetes_minors"]
NEWEST_PATCH = PREFLIGHT["preflight_kubernetes_newest_patch"]
CALICO_TABLE = load("roles/calico/defaults/main.yml")["calico_version_by_kubernetes_minor"]
CALICO_FACTS = load("tests/schemas/calico/kubernetes-versions.yaml")["releases"]
KUBEADM = load("roles/kubeadm/vars/main.yml")
KUBEADM_FACTS = load("tests/schemas/kubernetes/kubeadm-api-versions.yaml")["api_versions"]
PATCH_FACTS = load("tests/schemas/kubernetes/patch-releases.yaml")["newest_patch"]
DEFAULT_VERSION = load("roles/ipu_k8s/defaults/main.yml")["ipu_k8s_kubernetes_version"]


def kubeadm_api_version(minor):
    rows = [row for row in KUBEADM["__kubeadm_api_versions"] if minor_tuple(row["since"]) <= minor_tuple(minor)]
    return rows[-1]["api_version"] if rows else None


def test_supported_minors_are_listed_once_and_in_order():
    assert SUPPORTED == sorted(set(SUPPORTED), key=minor_tuple)


def test_no_supported_minor_predates_pkgs_k8s_io():
    # pkgs.k8s.io, the only Kubernetes package source left, starts at 1.24.
    assert all(minor_tuple(m) >= (1, 24) for m in SUPPORTED)


def test_default_kubernetes_version_is_a_released_patch_of_a_supported_minor():
    major, minor, patch = DEFAULT_VERSION.split(".")
    assert f"{major}.{minor}" in SUPPORTED
    assert int(patch) <= NEWEST_PATCH[f"{major}.{minor}"]


def test_default_kubernetes_version_is_the_newest_patch_of_the_newest_supported_minor():
    assert DEFAULT_VERSION == f"{SUPPORTED[-1]}.{NEWEST_PATCH[SUPPORTED[-1]]}"


@pytest.mark.parametrize("minor", SUPPORTED)
def test_network_operator_chart_table_has_a_row(minor):
    table = load("roles/network_operator/defaults/main.yml")["network_operator_chart_table"]
    rows = [row for row in table
            if minor_tuple(row["kubernetes_min"]) <= minor_tuple(minor) <= minor_tuple(row["kubernetes_max"])]
    assert len(rows) == 1, f"{minor}: {len(rows)} chart rows"


@pytest.mark.parametrize("minor", SUPPORTED)
def test_calico_table_has_a_release(minor):
    assert CALICO_TABLE.get(minor, "").startswith("v3.")


@pytest.mark.parametrize("minor,release", sorted(CALICO_TABLE.items()))
def test_calico_release_is_tested_with_its_minor(minor, release):
    assert release in CALICO_FACTS, f"{release}: no facts in tests/schemas/calico/kubernetes-versions.yaml"
    assert minor in CALICO_FACTS[release]["tested_minors"]


@pytest.mark.parametrize("minor,release", sorted(CALICO_TABLE.items()))
def test_calico_release_is_the_newest_release_tested_with_its_minor(minor, release):
    tested = [r for r, facts in CALICO_FACTS.items() if minor in facts["tested_minors"]]
    assert release == max(tested, key=lambda r: minor_tuple(r[1:]))


@pytest.mark.parametrize("minor", SUPPORTED)
def test_kubeadm_of_the_minor_reads_the_chosen_api_version(minor):
    chosen = kubeadm_api_version(minor)
    assert chosen in KUBEADM_FACTS, f"{minor}: no kubeadm API version"
    facts = KUBEADM_FACTS[chosen]
    assert minor_tuple(facts["first_minor"]) <= minor_tuple(minor)
    assert facts["last_minor"] is None or minor_tuple(minor) <= minor_tuple(facts["last_minor"])


def test_kubeadm_api_table_matches_the_facts():
    table = {row["api_version"]: (row["since"], row.get("until")) for row in KUBEADM["__kubeadm_api_versions"]}
    assert table == {name: (f["first_minor"], f["last_minor"]) for name, f in KUBEADM_FACTS.items()}


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_minors_after_v1beta3_was_removed_get_v1beta4(minor):
    assert kubeadm_api_version(minor) == "kubeadm.k8s.io/v1beta4"


def test_newest_patch_table_matches_the_release_facts():
    assert NEWEST_PATCH == {minor: facts["patch"] for minor, facts in PATCH_FACTS.items()}
    assert all(facts["source"] for facts in PATCH_FACTS.values())


@pytest.mark.parametrize("minor", SUPPORTED)
def test_every_supported_minor_has_a_newest_patch(minor):
    assert minor in NEWEST_PATCH


def test_calico_and_kubeadm_tables_serve_the_newest_minors():
    """The minors this project's own tables serve; the Network Operator row decides the rest."""
    served = [m for m in CALICO_TABLE if kubeadm_api_version(m) and m in NEWEST_PATCH]
    assert {"1.33", "1.34", "1.35"} <= set(served)
