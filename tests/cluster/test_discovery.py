"""Discovery documents compared with what the real kube-apiserver 1.32 answered."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest

from setpoint.cluster.endpoints import discovery
from setpoint.cluster.registry import Registry, served
from tests.cluster.golden import crd_resource_type, golden_body, golden_steps


def _svh_token(entry: dict[str, Any], group_version: str) -> dict[str, Any]:
    """Replace a computed storageVersionHash with the recording's <svh:g/v/Kind> token."""
    out = dict(entry)
    if "storageVersionHash" in out:
        for candidate in _storage_candidates(group_version, out["kind"]):
            if out["storageVersionHash"] == _hash(candidate):
                out["storageVersionHash"] = f"<svh:{candidate}>"
    return out


def _storage_candidates(group_version: str, kind: str) -> list[str]:
    gv = group_version if "/" in group_version else f"/{group_version}"
    return [f"{gv}/{kind}"]


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()[:8]).decode()


@pytest.fixture
def registry() -> Registry:
    return Registry()


def test_storage_version_hash_matches_the_recorded_configmap_hash() -> None:
    entry = golden_body("discovery-core-legacy", "api-v1-configmaps-as-resource-list-entry")
    assert discovery.storage_version_hash("", "v1", "ConfigMap") == \
        entry["value"]["storageVersionHash"]


def test_core_resource_list_matches_the_real_server(registry: Registry) -> None:
    expected = golden_body("discovery-core-legacy", "api-v1")
    got = discovery.core_resource_list(registry)
    assert set(got) == set(expected)
    assert [_svh_token(e, "v1") for e in got["resources"]] == expected["resources"]


def test_apps_resource_list_has_scale_in_autoscaling(registry: Registry) -> None:
    expected = golden_body("discovery-core-legacy", "apis-apps-v1")
    got = discovery.api_resource_list(registry, "apps", "v1")
    assert got is not None
    assert got["apiVersion"] == "v1" and got["groupVersion"] == "apps/v1"
    assert [_svh_token(e, "apps/v1") for e in got["resources"]] == expected["resources"]


def test_unknown_group_version_has_no_resource_list(registry: Registry) -> None:
    assert discovery.api_resource_list(registry, "", "v2") is None
    assert discovery.api_resource_list(registry, "no.such.group", "v1") is None
    assert discovery.api_group(registry, "no.such.group") is None


def test_group_list_lists_groups_in_priority_order_with_preferred_versions(
        registry: Registry) -> None:
    assert discovery.api_group_list(registry) == golden_body("discovery-core-legacy",
                                                             "apis-legacy")


def test_api_versions_shape() -> None:
    expected = golden_body("discovery-core-legacy", "api")
    got = discovery.api_versions("127.0.0.1:6443")
    assert set(got) == set(expected) and got["versions"] == ["v1"]


def test_version_info_has_the_nine_keys_of_1_32() -> None:
    expected = golden_body("discovery-version-health", "version")
    got = discovery.version_info()
    assert set(got) == set(expected)
    assert (got["major"], got["minor"]) == ("1", "32")
    assert re.match(r"^v1\.32\.", got["gitVersion"])


def test_aggregated_core_matches_the_real_server(registry: Registry) -> None:
    expected = golden_body("discovery-aggregated", "api-aggregated")
    assert discovery.aggregated_discovery(registry, legacy=True, version="v2") == expected


def test_aggregated_apps_group_matches_the_real_server(registry: Registry) -> None:
    expected = golden_body("discovery-aggregated", "apis-aggregated-apps")["value"]
    doc = discovery.aggregated_discovery(registry, legacy=False, version="v2")
    apps = next(i for i in doc["items"] if i["metadata"]["name"] == "apps")
    assert apps == expected


@pytest.mark.parametrize(("version", "step"), [("v2", "apis-aggregated-group-names"),
                                               ("v2beta1", "apis-v2beta1")])
def test_aggregated_group_names_and_version(registry: Registry, version: str,
                                            step: str) -> None:
    expected = golden_body("discovery-aggregated", step)
    doc = discovery.aggregated_discovery(registry, legacy=False, version=version)
    assert doc["apiVersion"] == expected["apiVersion"]
    assert [i["metadata"]["name"] for i in doc["items"]] == expected["items"]


def test_aggregated_rejects_unknown_versions(registry: Registry) -> None:
    with pytest.raises(ValueError):
        discovery.aggregated_discovery(registry, legacy=False, version="v9")


def test_accept_header_negotiation() -> None:
    steps = golden_steps("discovery-aggregated")
    kubectl = steps["api-aggregated"]["request"]["headers"]["Accept"]
    unknown = steps["aggregated-unknown-version"]["request"]["headers"]["Accept"]
    assert discovery.negotiate_aggregated(kubectl) == "v2"
    assert discovery.negotiate_aggregated(
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList") == \
        "v2beta1"
    assert discovery.negotiate_aggregated("application/json") is None
    assert discovery.negotiate_aggregated(unknown) is None
    assert not discovery.accepts_legacy(unknown)
    assert discovery.accepts_legacy("application/json") and discovery.accepts_legacy(None)
    assert discovery.aggregated_content_type("v2") == \
        steps["api-aggregated"]["response"]["content_type"]


def test_etag_follows_the_document(registry: Registry) -> None:
    doc = discovery.aggregated_discovery(registry, legacy=False)
    tag = discovery.discovery_etag(doc)
    assert tag == discovery.discovery_etag(discovery.aggregated_discovery(registry, False))
    assert re.fullmatch(r'"[0-9A-F]{128}"', tag)
    doc["items"].pop()
    assert discovery.discovery_etag(doc) != tag


def _widget_registry() -> tuple[Registry, str]:
    steps = golden_steps("crd-create-established-discovery")
    crd = steps["wait-established"]["response"]["body"]
    registry = Registry()
    group = crd["spec"]["group"]
    registry.replace_custom(group, "widgets", [crd_resource_type(crd)])
    return registry, group


def test_crd_resource_list_matches_the_real_server() -> None:
    registry, group = _widget_registry()
    expected = golden_body("crd-create-established-discovery", "wait-discovery")
    got = discovery.api_resource_list(registry, group, "v1")
    assert got is not None
    got_entries = [_svh_token(e, f"{group}/v1") for e in got["resources"]]
    assert got_entries == expected["resources"]
    assert got["groupVersion"] == expected["groupVersion"]


def test_crd_group_appears_after_the_builtin_groups() -> None:
    registry, group = _widget_registry()
    expected = golden_body("crd-create-established-discovery", "apis-legacy-contains-group")
    groups = discovery.api_group_list(registry)["groups"]
    assert groups[-1] == expected["value"]
    single = golden_body("crd-create-established-discovery", "api-group")
    assert discovery.api_group(registry, group) == single


def test_crd_in_aggregated_discovery_fills_response_kind() -> None:
    registry, group = _widget_registry()
    expected = golden_body("crd-create-established-discovery", "wait-aggregated")["value"]
    doc = discovery.aggregated_discovery(registry, legacy=False)
    assert next(i for i in doc["items"] if i["metadata"]["name"] == group) == expected


def test_custom_groups_prefer_the_highest_kube_version() -> None:
    ordered = sorted(["v1alpha1", "v2", "v1beta2", "v1", "foo", "v10", "v1beta1"],
                     key=served.version_priority)
    assert ordered == ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]


def test_served_groups_are_gathered_once_per_change_of_the_served_types(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request under /apis looks its group up among the served ones: the groups are
    gathered when the served types change (a CRD served or gone), not at every request."""
    registry = Registry()
    walks: list[int] = []
    real_all = Registry.all

    def counting_all(self: Registry) -> Any:
        walks.append(1)
        return real_all(self)

    monkeypatch.setattr(Registry, "all", counting_all)
    first = registry.groups()
    assert registry.groups() == first and len(walks) == 1
    steps = golden_steps("crd-create-established-discovery")
    crd = steps["wait-established"]["response"]["body"]
    group = crd["spec"]["group"]
    registry.replace_custom(group, "widgets", [crd_resource_type(crd)])
    assert registry.groups()[group] == ["v1"] and len(walks) == 2
    registry.remove_custom(group, "widgets")
    assert group not in registry.groups() and registry.groups() == first
