"""Every version table row is a fact, and the stored facts and the tables agree.

The tables: the Kubernetes minors, Calico and the Network Operator chart (the components of
ipu_k8s_versions, roles/ipu_k8s/defaults/main/versions.yml), the kubeadm configuration API
(roles/kubeadm/vars). The facts, each with where it was read: tests/schemas/.
scripts/refresh-versions --check compares them (and is run here, offline).
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def load(path):
    return yaml.safe_load((ROOT / path).read_text())


def minor_tuple(minor):
    return tuple(int(part) for part in minor.lstrip('v').split(".")[:2])


VERSIONS = load("roles/ipu_k8s/defaults/main/versions.yml")["ipu_k8s_versions"]
# Rows as lists, each carrying its version (the key in ipu_k8s_versions).
KUBERNETES = [dict(row, version=minor) for minor, row in VERSIONS["kubernetes"].items()]
MINORS = [row["version"] for row in KUBERNETES]
KUBERNETES_FACTS = load("tests/schemas/kubernetes/releases.yaml")["releases"]
CALICO_ROWS = [dict(row, version=version) for version, row in VERSIONS["calico"].items()]
CALICO_FACTS = load("tests/schemas/calico/kubernetes-versions.yaml")["releases"]
KUBEADM = load("roles/kubeadm/vars/main.yml")
KUBEADM_FACTS = load("tests/schemas/kubernetes/kubeadm-api-versions.yaml")["api_versions"]
CHARTS = [dict(row, chart_version=version) for version, row in VERSIONS["network_operator"].items()]
CHART_FACTS = load("tests/schemas/network_operator/releases.yaml")["releases"]
DEFAULT_VERSION = load("roles/ipu_k8s/defaults/main/main.yml")["ipu_k8s_kubernetes_version"]
TODAY = "2026-11-25"
_spec = importlib.util.spec_from_file_location(
    "ipu_k8s_checks", ROOT / "plugins" / "filter" / "ipu_k8s_checks.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)


def calico_release(minor):
    """The release the calico role installs for MINOR (its default calico_version)."""
    return checks.release_for_minor(CALICO_ROWS, minor).get("version")


def newest_tested_calico(minor):
    """From the facts alone: the newest release whose published requirements list MINOR, a range
    read first-hand before one read second-hand (the fact's source says so)."""
    tested = [r for r, facts in CALICO_FACTS.items() if minor in facts["tested_minors"]]
    first_hand = [r for r in tested if not str(CALICO_FACTS[r].get("source", "")).startswith("second-hand")]
    return max(first_hand or tested, key=lambda r: tuple(int(x) for x in r[1:].split(".")), default=None)


def calico_documented(version):
    """From the facts alone: the minors VERSION's series documents (every patch of a series
    documents the series' range; the facts list the newest release of each series)."""
    series = [r for r in CALICO_FACTS if minor_tuple(r) == minor_tuple(version)]
    newest = max(series, key=lambda r: tuple(int(x) for x in r[1:].split(".")), default=None)
    return set(CALICO_FACTS[newest]["tested_minors"]) if newest else set()


def chart_documented(chart_version):
    """From the facts alone: the minors chart_version's release documents (releases.yaml)."""
    documented = (CHART_FACTS.get(chart_version) or {}).get("kubernetes") or {}
    return {m for m in MINORS if documented and minor_tuple(documented["min"]) <= minor_tuple(m)
            <= minor_tuple(documented["max"])}


def installable(row):
    return row["layout"] == "legacy" or "images" in row


def kubeadm_api_version(minor):
    rows = [row for row in KUBEADM["__kubeadm_api_versions"] if minor_tuple(row["since"]) <= minor_tuple(minor)]
    return rows[-1]["api_version"] if rows else None


def automatic_charts(minor):
    return [row for row in CHARTS if "kubernetes_min" in row
            and minor_tuple(row["kubernetes_min"]) <= minor_tuple(minor) <= minor_tuple(row["kubernetes_max"])]


def test_refresh_check_finds_the_tables_and_the_facts_in_agreement():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "refresh-versions"), "--check", "--today", TODAY],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "MISMATCH" not in run.stdout
    # It reports support per row, as the stored dates say.
    assert "Kubernetes 1.34: past end of support since 2026-10-28" in run.stdout
    assert "Kubernetes 1.35: supported until 2027-02-28" in run.stdout


def test_minors_are_listed_once_in_order_from_pkgs_k8s_io_on():
    assert MINORS == sorted(set(MINORS), key=minor_tuple)
    # pkgs.k8s.io, the only Kubernetes package source left, starts at 1.24.
    assert all(minor_tuple(m) >= (1, 24) for m in MINORS)


@pytest.mark.parametrize("row", KUBERNETES, ids=MINORS)
def test_kubernetes_row_is_its_upstream_facts(row):
    facts = KUBERNETES_FACTS[row["version"]]
    assert (row["released"], row["end_of_support"]) == (facts["released"], facts["end_of_support"])
    assert facts["source"]["path"] == "releases/release-%s/README.md" % row["version"]


def test_default_kubernetes_minor_is_the_newest_a_supported_network_operator_release_documents():
    # The Supported line's newest documented minor, once the table can install that line;
    # until then the newest minor an installable row documents (26.7.x documents 1.32-1.36,
    # but no page read here names all its images: the default stays on 1.35).
    supported = [row for row in CHARTS if row["support"] == "Supported" and installable(row)]
    rows = supported or [row for row in CHARTS if installable(row)]
    newest = max((m for row in rows for m in chart_documented(row["chart_version"])), key=minor_tuple)
    assert DEFAULT_VERSION.rsplit(".", 1)[0] == newest
    assert newest in MINORS


def test_default_kubernetes_minor_is_within_its_support_and_every_layer_chooses_for_it():
    minor = DEFAULT_VERSION.rsplit(".", 1)[0]
    assert next(r for r in KUBERNETES if r["version"] == minor)["end_of_support"] >= TODAY
    assert len(automatic_charts(minor)) == 1 and calico_release(minor) and kubeadm_api_version(minor)


@pytest.mark.parametrize("minor", MINORS)
def test_network_operator_rows_never_overlap(minor):
    assert len(automatic_charts(minor)) <= 1, f"{minor}: {len(automatic_charts(minor))} chart rows"


@pytest.mark.parametrize("minor", MINORS + ["1.26", "1.28"])
def test_calico_release_is_the_newest_release_tested_with_its_minor(minor):
    # A minor no published range lists gets no release (preflight then asks for calico_version).
    assert calico_release(minor) == newest_tested_calico(minor)


def test_calico_rows_are_listed_once_in_order():
    versions = [tuple(int(x) for x in row["version"][1:].split(".")) for row in CALICO_ROWS]
    assert versions == sorted(set(versions))


@pytest.mark.parametrize("row", CALICO_ROWS, ids=[row["version"] for row in CALICO_ROWS])
def test_calico_row_documents_its_series_published_range_or_none(row):
    minors = calico_documented(row["version"])
    expected = (min(minors, key=minor_tuple), max(minors, key=minor_tuple)) if minors else (None, None)
    assert (row.get("documented_min", row.get("kubernetes_min")),
            row.get("documented_max", row.get("kubernetes_max"))) == expected


# Every row carries the range its release documents, and a pinned row is refused outside it:
# 26.1.2 (documents 1.31-1.35) on 1.36 or 1.37, v3.32.1 (1.34-1.36) on 1.37, a 3.27 patch
# (no range readable here) on any minor. Expected from the facts, not from the rows.
PINS = ([("network_operator_chart_version", "chart_version", "ipu_k8s_versions.network_operator", CHARTS, row["chart_version"],
          minor, minor in chart_documented(row["chart_version"])) for row in CHARTS for minor in MINORS]
        + [("calico_version", "version", "ipu_k8s_versions.calico", CALICO_ROWS, row["version"], minor,
            minor in calico_documented(row["version"])) for row in CALICO_ROWS for minor in MINORS])


@pytest.mark.parametrize("setting,key,table,rows,value,minor,documented", PINS,
                         ids=["%s=%s@%s" % (p[0], p[4], p[5]) for p in PINS])
def test_a_pinned_row_is_accepted_exactly_on_the_minors_its_release_documents(setting, key, table, rows, value,
                                                                              minor, documented):
    message = checks.pinned_release_problem(rows, minor, setting, value, key, table)
    assert (message == "") == documented, message


@pytest.mark.parametrize("setting,value,minor", [("network_operator_chart_version", "26.1.2", "1.36"),
                                                 ("network_operator_chart_version", "26.1.2", "1.37"),
                                                 ("calico_version", "v3.32.1", "1.37")])
def test_an_end_of_support_chart_on_a_newer_minor_and_calico_past_its_range_are_refused(setting, value, minor):
    rows, key, table = ((CHARTS, "chart_version", "ipu_k8s_versions.network_operator") if setting.startswith("network")
                        else (CALICO_ROWS, "version", "ipu_k8s_versions.calico"))
    message = checks.pinned_release_problem(rows, minor, setting, value, key, table)
    assert message.startswith('%s is "%s", whose row in %s documents Kubernetes' % (setting, value, table)), message
    assert "not this cluster's %s" % minor in message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_no_network_operator_row_is_chosen_for_a_minor_only_an_uninstallable_release_documents(minor):
    # 26.7.x documents 1.36 but has no images here; nothing documents 1.37.
    assert automatic_charts(minor) == []
    assert all(not installable(row) for row in CHARTS if minor in chart_documented(row["chart_version"]))


@pytest.mark.parametrize("minor", MINORS)
def test_kubeadm_of_the_minor_reads_the_chosen_api_version(minor):
    chosen = kubeadm_api_version(minor)
    assert chosen in KUBEADM_FACTS, f"{minor}: no kubeadm API version"
    facts = KUBEADM_FACTS[chosen]
    assert minor_tuple(facts["first_minor"]) <= minor_tuple(minor)
    assert facts["last_minor"] is None or minor_tuple(minor) <= minor_tuple(facts["last_minor"])


def test_kubeadm_api_table_matches_the_facts():
    table = {row["api_version"]: (row["since"], row.get("until")) for row in KUBEADM["__kubeadm_api_versions"]}
    assert table == {name: (f["first_minor"], f["last_minor"]) for name, f in KUBEADM_FACTS.items()}


@pytest.mark.parametrize("chart", [row["chart_version"] for row in CHARTS if not installable(row)])
@pytest.mark.parametrize("minor,fix", [("1.35", 'Leave network_operator_chart_version unset (remove it from the inventory) and the table picks 26.4.1'),
                                       ("1.36", "No installable release of the table serves Kubernetes 1.36")])
def test_a_pinned_row_without_its_images_is_refused_saying_why_and_what_to_do(chart, minor, fix):
    # 26.4.2, 26.7.0 and 26.7.1: published.yaml names the images no page read here gives.
    assert set(CHART_FACTS[chart]["images_not_read"]) - set(CHART_FACTS[chart].get("images") or {})
    row, message = checks.network_operator_chart({
        "releases": VERSIONS["network_operator"], "network_operator_chart_version": chart,
        "ipu_k8s_kubernetes_minor": minor, "network_operator_chart_sha256": "", "ipu_k8s_rdma_resource_prefix": "rdma"})
    assert row["chart_version"] == chart
    assert message.startswith('network_operator_chart_version is "%s", whose row in ipu_k8s_versions.network_operator has '
                              "no images" % chart) and fix in message, message
