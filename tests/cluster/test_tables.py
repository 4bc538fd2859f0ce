"""Table output compared with the real server's tables and kubectl's columns."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from setpoint.cluster.endpoints import jsonpath
from setpoint.cluster.endpoints.durations import human_duration
from setpoint.cluster.endpoints.tables import WatchTables, to_table
from setpoint.cluster.registry import Registry
from setpoint.machinery.gofmt import go_float
from setpoint.testing import present
from tests.cluster.golden import crd_resource_type, golden_steps

CREATED = "2024-01-01T00:00:00Z"
NOW = datetime(2024, 1, 1, 0, 5, tzinfo=UTC)


def _normalize(table: dict[str, Any]) -> dict[str, Any]:
    """Tokens as the recordings write them: ages and timestamps."""
    text = json.dumps(table).replace('"5m"', '"<age>"').replace(CREATED, "<time>")
    table = json.loads(text)
    assert isinstance(table, dict)
    return table


@pytest.fixture(scope="module")
def robots() -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    steps = golden_steps("crd-printer-columns-table")
    crd = steps["create-crd"]["response"]["body"]
    r1 = copy.deepcopy(steps["r1-ready-status"]["response"]["body"])
    r2 = copy.deepcopy(steps["create-r2"]["response"]["body"])
    for obj in (r1, r2):
        obj["metadata"]["creationTimestamp"] = CREATED
    return crd_resource_type(crd), [r1, r2], steps


def test_custom_resource_table_matches_the_real_server(robots: Any) -> None:
    rt, objects, steps = robots
    expected = steps["table-list"]["response"]["body"]
    table = to_table(rt, objects, list_meta={"resourceVersion": "RV5..", "continue": ""},
                     include_object="Metadata", now=NOW)
    assert _normalize(table) == expected


def test_include_object_none_and_object(robots: Any) -> None:
    rt, objects, steps = robots
    none = to_table(rt, objects, list_meta={"resourceVersion": "RV5.."},
                    include_object="None", now=NOW)
    assert _normalize(none) == steps["table-include-none"]["response"]["body"]
    full = to_table(rt, objects, list_meta={"resourceVersion": "RV5.."},
                    include_object="Object", now=NOW)
    assert [r["object"] for r in full["rows"]] == objects


def test_v1beta1_table_carries_v1beta1_partial_metadata(robots: Any) -> None:
    rt, objects, steps = robots
    table = to_table(rt, objects, list_meta={"resourceVersion": "RV5.."}, now=NOW,
                     table_version="v1beta1")
    assert _normalize(table) == steps["table-v1beta1"]["response"]["body"]


def test_single_object_table_uses_the_object_resource_version(robots: Any) -> None:
    rt, objects, _ = robots
    table = to_table(rt, [objects[0]], list_meta=None, now=NOW)
    assert table["metadata"] == {"resourceVersion": objects[0]["metadata"]["resourceVersion"]}
    assert len(table["rows"]) == 1


def test_configmap_table_matches_the_real_server() -> None:
    steps = golden_steps("crd-printer-columns-table")
    expected = steps["table-configmaps"]["response"]["body"]
    recorded = expected["rows"][0]["object"]["metadata"]
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {**recorded, "creationTimestamp": CREATED}, "data": {"ca.crt": "pem"}}
    rt = Registry().get("", "v1", "configmaps")
    table = to_table(present(rt), [obj], list_meta={"resourceVersion": "RV5.."}, now=NOW)
    assert _normalize(table) == expected


def test_crd_without_printer_columns_gets_an_age_column() -> None:
    crd = golden_steps("crd-create-established-discovery")["wait-established"]["response"][
        "body"]
    rt = crd_resource_type(crd)
    obj = {"metadata": {"name": "w1", "creationTimestamp": CREATED}}
    table = to_table(rt, [obj], list_meta=None, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["columnDefinitions"][1]["type"] == "date"
    assert table["rows"][0]["cells"] == ["w1", "5m"]


def test_kinds_without_printers_get_name_and_created_at() -> None:
    rt = Registry().get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    obj = {"metadata": {"name": "x.example.com", "creationTimestamp": CREATED}}
    table = to_table(present(rt), [obj], list_meta=None, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["x.example.com", CREATED]


def test_pending_pod_row_and_wide_columns() -> None:
    rt = Registry().get("", "v1", "pods")
    pod = {"metadata": {"name": "p", "creationTimestamp": CREATED},
           "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
           "status": {"phase": "Pending"}}
    table = to_table(present(rt), [pod], list_meta=None, now=NOW)
    names = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert names == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
                     ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert table["rows"][0]["cells"] == ["p", "0/2", "Pending", "0", "5m", "<none>", "<none>",
                                         "<none>", "<none>"]


def test_running_pod_counts_ready_containers_and_restarts() -> None:
    rt = Registry().get("", "v1", "pods")
    pod = {"metadata": {"name": "p", "creationTimestamp": CREATED},
           "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
           "status": {"phase": "Running", "podIP": "10.0.0.5", "containerStatuses": [
               {"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}},
                "lastState": {"terminated": {"finishedAt": "2024-01-01T00:03:00Z"}}},
               {"name": "b", "ready": False, "restartCount": 0,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    cells = to_table(present(rt), [pod], list_meta=None, now=NOW)["rows"][0]["cells"]
    assert cells[:6] == ["p", "1/2", "CrashLoopBackOff", "2 (2m ago)", "5m", "10.0.0.5"]
    assert cells[6] == "n1"


def test_succeeded_pod_row_carries_the_completed_condition() -> None:
    rt = Registry().get("", "v1", "pods")
    pod = {"metadata": {"name": "p", "creationTimestamp": CREATED},
           "spec": {"containers": [{"name": "a"}]},
           "status": {"phase": "Succeeded", "containerStatuses": [
               {"name": "a", "ready": False, "restartCount": 0,
                "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}}
    row = to_table(present(rt), [pod], list_meta=None, now=NOW)["rows"][0]
    assert row["cells"][2] == "Completed"
    assert row["conditions"][0]["type"] == "Completed"


def test_deployment_row() -> None:
    rt = Registry().get("apps", "v1", "deployments")
    dep = {"metadata": {"name": "d", "creationTimestamp": CREATED},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
           "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    table = to_table(present(rt), [dep], list_meta=None, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    assert table["rows"][0]["cells"] == ["d", "2/3", 3, 2, "5m", "c", "nginx", "app=web"]


@pytest.mark.parametrize(("resource", "group", "obj", "cells"), [
    ("secrets", "", {"type": "Opaque", "data": {"a": "eA=="}}, ["s", "Opaque", 1, "5m"]),
    ("namespaces", "", {"status": {"phase": "Active"}}, ["s", "Active", "5m"]),
    ("leases", "coordination.k8s.io", {"spec": {"holderIdentity": "me"}}, ["s", "me", "5m"]),
    ("services", "", {"spec": {"type": "ClusterIP", "clusterIP": "10.0.0.1", "ports": [
        {"port": 80, "protocol": "TCP"}], "selector": {"app": "x"}}},
     ["s", "ClusterIP", "10.0.0.1", "<none>", "80/TCP", "5m", "app=x"]),
])
def test_builtin_rows(resource: str, group: str, obj: dict[str, Any],
                      cells: list[Any]) -> None:
    versions = {"coordination.k8s.io": "v1", "": "v1"}
    rt = Registry().get(group, versions[group], resource)
    full = {"metadata": {"name": "s", "creationTimestamp": CREATED}, **obj}
    assert to_table(present(rt), [full], list_meta=None, now=NOW)["rows"][0]["cells"] == cells


def test_watch_tables_send_column_definitions_only_first(robots: Any) -> None:
    rt, objects, _ = robots
    watch = WatchTables(rt)
    first, second = watch(objects[0], NOW), watch(objects[1], NOW)
    assert first["columnDefinitions"] and second["columnDefinitions"] is None
    assert second["rows"][0]["cells"][0] == "r2"


@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"),
    (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 600, "3h10m"),
    (10 * 3600, "10h"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (800 * 86400, "2y70d"),
    (3000 * 86400, "8y"),
])
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text
    assert human_duration(timedelta(seconds=seconds).total_seconds()) == text


@pytest.mark.parametrize(("value", "text"), [
    (1.5, "1.5"), (3.0, "3"), (1e6, "1e+06"), (123456.7, "123456.7"), (0.0001, "0.0001"),
    (0.00001, "1e-05"), (-2.25, "-2.25"), (-0.0, "-0")])
def test_floats_print_like_go(value: float, text: str) -> None:
    assert go_float(value) == text


def test_jsonpath_filters_indexes_and_quoted_keys() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True"},
                                     {"type": "Synced", "status": "False"}]},
           "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
           "spec": {"items": [1, 2, 3]}}
    assert jsonpath.find(obj, '.status.conditions[?(@.type=="Synced")].status') == ["False"]
    assert jsonpath.find(obj, ".metadata.labels['app.kubernetes.io/name']") == ["x"]
    assert jsonpath.find(obj, ".spec.items[-1]") == [3]
    assert jsonpath.find(obj, ".spec.items[0:2]") == [1, 2]
    assert jsonpath.find(obj, ".status.conditions[*].type") == ["Ready", "Synced"]
    assert jsonpath.find(obj, ".spec.missing.deeper") == []
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse(".spec[")


def test_string_columns_render_values_like_kubectl(robots: Any) -> None:
    rt, _, _ = robots
    crd = copy.deepcopy(rt.crd)
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Obj", "type": "string", "jsonPath": ".spec"},
        {"name": "Num", "type": "string", "jsonPath": ".spec.weight"},
        {"name": "Wrong", "type": "integer", "jsonPath": ".spec.color"}]
    custom = crd_resource_type(crd)
    obj = {"metadata": {"name": "x"}, "spec": {"weight": 2.0, "color": "red"}}
    cells = to_table(custom, [obj], list_meta=None, now=NOW)["rows"][0]["cells"]
    assert cells == ["x", '{"color":"red","weight":2}', "2", None]
