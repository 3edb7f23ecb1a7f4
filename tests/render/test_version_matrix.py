"""Every supported Kubernetes minor has a row in every version table.

preflight_supported_kubernetes_minors is what preflight accepts; each minor in it must
be served by the Network Operator chart table, the Calico release table and the kubeadm
configuration API table, so a run that passes preflight never meets a missing row later.
"""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def load(path):
    return yaml.safe_load((ROOT / path).read_text())


def minor_tuple(minor):
    return tuple(int(part) for part in minor.split("."))


SUPPORTED = load("roles/preflight/defaults/main.yml")["preflight_supported_kubernetes_minors"]


def test_supported_minors_are_listed_once_and_in_order():
    assert SUPPORTED == sorted(set(SUPPORTED), key=minor_tuple)


def test_default_kubernetes_version_is_supported():
    version = load("roles/ipu_k8s/defaults/main.yml")["ipu_k8s_kubernetes_version"]
    assert ".".join(version.split(".")[:2]) in SUPPORTED


@pytest.mark.parametrize("minor", SUPPORTED)
def test_network_operator_chart_table_has_a_row(minor):
    table = load("roles/network_operator/defaults/main.yml")["network_operator_chart_table"]
    rows = [row for row in table
            if minor_tuple(row["kubernetes_min"]) <= minor_tuple(minor) <= minor_tuple(row["kubernetes_max"])]
    assert len(rows) == 1, f"{minor}: {len(rows)} chart rows"


@pytest.mark.parametrize("minor", SUPPORTED)
def test_calico_table_has_a_release(minor):
    table = load("roles/calico/defaults/main.yml")["calico_version_by_kubernetes_minor"]
    assert table.get(minor, "").startswith("v3.")


@pytest.mark.parametrize("minor", SUPPORTED)
def test_kubeadm_api_table_serves_the_minor(minor):
    kubeadm = load("roles/kubeadm/vars/main.yml")
    since = [row["since"] for row in kubeadm["__kubeadm_api_versions"]]
    assert any(minor_tuple(s) <= minor_tuple(minor) for s in since)
    assert minor_tuple(kubeadm["__kubeadm_min_minor"]) <= minor_tuple(minor)
