import copy
import json
from typing import Any

import pytest

from setpoint.machinery import managedfields as mf
from setpoint.machinery.apply import LAST_APPLIED, apply
from setpoint.machinery.errors import StatusError
from setpoint.machinery.managedfields import update_managed_fields
from setpoint.machinery.schema import Schema, definitions
from tests.machinery import test_managedfields as goldens

NOW = "2024-01-01T00:00:00Z"
needs_corpus = pytest.mark.skipif(not goldens.available(), reason="conformance corpus absent")


def _schema(group: str, version: str, kind: str) -> Schema:
    s = definitions().for_kind(group, version, kind)
    assert s is not None
    return s


def _entries(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    return goldens.comparable(obj["metadata"].get("managedFields"))


@needs_corpus
def test_the_recorded_apply_conflict_force_and_prune_sequence_replays_exactly() -> None:
    scenario = "ssa-create-update-conflict"
    cm = _schema("", "v1", "ConfigMap")
    live: dict[str, Any] | None = None
    for step, manager, force in [
        ("apply-create", "alice", False), ("apply-update", "alice", False),
        ("apply-same-again", "alice", False), ("bob-conflict", "bob", False),
        ("bob-same-value-no-conflict", "bob", False), ("bob-force", "bob", True),
        ("alice-drops-mine", "alice", False),
    ]:
        config = goldens.request_body(scenario, step)
        recorded = goldens.response_body(scenario, step)
        if recorded["kind"] == "Status":
            with pytest.raises(StatusError) as info:
                apply(cm, live, config, manager=manager, force=force, api_version="v1", now=NOW)
            assert info.value.to_status() == recorded
            continue
        before = copy.deepcopy(live)
        result = apply(cm, live, config, manager=manager, force=force, api_version="v1", now=NOW)
        assert live == before, "apply must not modify the live object"
        assert _entries(result) == _entries(recorded), step
        assert result.get("data") == recorded.get("data")
        assert result["metadata"].get("labels") == recorded["metadata"].get("labels")
        live = result

    assert live is not None
    carol = copy.deepcopy(goldens.response_body(scenario, "update-by-carol"))
    carol["metadata"].pop("managedFields")
    update_managed_fields(cm, live, carol, manager="carol", api_version="v1", now=NOW)
    config = goldens.request_body(scenario, "alice-conflicts-with-update-manager")
    with pytest.raises(StatusError) as info:
        apply(cm, carol, config, manager="alice", force=False, api_version="v1", now=NOW)
    assert info.value.to_status() == goldens.response_body(
        scenario, "alice-conflicts-with-update-manager")


@needs_corpus
def test_a_config_without_kind_is_refused_like_the_apiserver() -> None:
    scenario = "ssa-create-update-conflict"
    with pytest.raises(StatusError) as info:
        apply(_schema("", "v1", "ConfigMap"), None, goldens.request_body(
            scenario, "apply-missing-kind"), manager="a", force=False, api_version="v1", now=NOW)
    assert info.value.to_status() == goldens.response_body(scenario, "apply-missing-kind")


@needs_corpus
def test_forced_apply_to_status_takes_the_field_and_records_the_subresource() -> None:
    scenario = "status-subresource-cr"
    crd = goldens.request_body(scenario, "create-crd")
    schema = Schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    live = goldens.response_body(scenario, "get-status")
    config = copy.deepcopy(goldens.request_body(scenario, "apply-status"))
    config["apiVersion"] = live["apiVersion"]
    result = apply(schema, live, config, manager="statusapplier", force=True,
                   api_version=live["apiVersion"], now=NOW, subresource="status",
                   reset_fields=["spec"])
    assert result["status"] == {"observed": 2, "phase": "Applied"}
    assert _entries(result) == _entries(goldens.response_body(scenario, "apply-status"))


@needs_corpus
def test_apply_through_scale_conflicts_with_the_scale_writer() -> None:
    scenario = "scale-deployment"
    parent = goldens.response_body(scenario, "get-deployment")["metadata"]["managedFields"]
    live = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {
        "name": "web", "managedFields": mf.scale_to_subresource(
            parent, mappings={"apps/v1": ["spec", "replicas"]})},
        "spec": {"replicas": 5}, "status": {"replicas": 0, "selector": "app=web"}}
    with pytest.raises(StatusError) as info:
        apply(_schema("autoscaling", "v1", "Scale"), live,
              goldens.request_body(scenario, "apply-scale"), manager="scaler", force=False,
              api_version="autoscaling/v1", now=NOW, subresource="scale")
    assert info.value.to_status() == goldens.response_body(scenario, "apply-scale")


def _deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {**spec, "template": {"spec": {"containers": containers}}}}


def _apply_d(live: dict[str, Any] | None, config: dict[str, Any], manager: str = "m",
             force: bool = False) -> dict[str, Any]:
    return apply(_schema("apps", "v1", "Deployment"), live, config, manager=manager,
                 force=force, api_version="apps/v1", now=NOW)


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert isinstance(containers, list)
    return containers


def test_keyed_lists_merge_by_key_keeping_others_items_in_place() -> None:
    live = _apply_d(None, _deployment([{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]),
                    manager="first")
    result = _apply_d(live, _deployment([{"name": "c"}, {"name": "b", "tty": True}]))
    assert _containers(result) == [
        {"name": "a", "image": "1"}, {"name": "c"}, {"name": "b", "image": "1", "tty": True}]


def test_conflicts_list_every_field_grouped_by_manager() -> None:
    live = _apply_d(None, _deployment([{"name": "a", "image": "1"}], replicas=1),
                    manager="first")
    with pytest.raises(StatusError) as info:
        _apply_d(live, _deployment([{"name": "a", "image": "2"}], replicas=2))
    err = info.value
    assert err.code == 409 and err.reason == "Conflict"
    assert err.message == ('Apply failed with 2 conflicts: conflicts with "first":\n'
                           "- .spec.replicas\n"
                           '- .spec.template.spec.containers[name="a"].image')
    assert [(c.reason, c.field) for c in err.causes] == [
        ("FieldManagerConflict", ".spec.replicas"),
        ("FieldManagerConflict", '.spec.template.spec.containers[name="a"].image')]


def test_force_moves_ownership_and_shared_values_are_co_owned() -> None:
    live = _apply_d(None, _deployment([{"name": "a", "image": "1"}], replicas=1),
                    manager="first")
    result = _apply_d(live, _deployment([{"name": "a", "image": "1"}], replicas=2), force=True)
    by_manager = {e["manager"]: e["fieldsV1"] for e in result["metadata"]["managedFields"]}
    assert "f:replicas" not in by_manager["first"]["f:spec"]
    assert "f:replicas" in by_manager["m"]["f:spec"]
    image = by_manager["first"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "f:image" in image['k:{"name":"a"}']


def test_items_a_manager_stops_applying_are_removed_unless_someone_else_owns_them() -> None:
    live = _apply_d(None, _deployment([{"name": "a"}, {"name": "b"}]))
    live = _apply_d(live, _deployment([{"name": "b", "image": "x"}]), manager="other")
    result = _apply_d(live, _deployment([{"name": "a"}]))
    assert _containers(result) == [{"name": "a"}, {"name": "b", "image": "x"}]
    result = _apply_d(result, _deployment([{"name": "a"}]), manager="other")
    assert _containers(result) == [{"name": "a"}]


def test_atomic_lists_and_structs_are_replaced_whole() -> None:
    live = _apply_d(None, _deployment([{"name": "a", "args": ["1", "2"]}],
                                      selector={"matchLabels": {"x": "y"}}))
    result = _apply_d(live, _deployment([{"name": "a", "args": ["3"]}],
                                        selector={"matchExpressions": []}), manager="m")
    assert _containers(result)[0]["args"] == ["3"]
    assert result["spec"]["selector"] == {"matchExpressions": []}


def test_without_a_schema_maps_merge_key_by_key() -> None:
    config = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
              "spec": {"a": 1, "b": {"c": [1]}}}
    live = apply(None, None, config, manager="m", force=False, api_version="x/v1", now=NOW)
    other = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
             "spec": {"b": {"d": 2}}}
    live = apply(None, live, other, manager="o", force=False, api_version="x/v1", now=NOW)
    assert live["spec"] == {"a": 1, "b": {"c": [1], "d": 2}}
    dropped = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": 1}}
    live = apply(None, live, dropped, manager="m", force=False, api_version="x/v1", now=NOW)
    assert live["spec"] == {"a": 1, "b": {"d": 2}}


def test_undeclared_fields_are_the_typed_conversion_500_naming_the_field() -> None:
    config = _deployment([{"name": "a", "bogus": 1}])
    with pytest.raises(StatusError) as info:
        _apply_d(None, config)
    assert (info.value.code, info.value.reason) == (500, "")
    assert "field not declared in schema" in info.value.message
    assert '.spec.template.spec.containers[name="a"].bogus' in info.value.message


def test_configs_carrying_managed_fields_or_another_version_are_bad_requests() -> None:
    config = _deployment([])
    config["metadata"]["managedFields"] = []
    with pytest.raises(StatusError, match=r"metadata\.managedFields must be nil"):
        _apply_d(None, config)
    with pytest.raises(StatusError, match=r"invalid object type: apps/v2, Kind=Deployment"):
        _apply_d(None, {**_deployment([]), "apiVersion": "apps/v2"})


def test_a_no_op_apply_returns_the_live_object_with_its_times() -> None:
    live = _apply_d(None, _deployment([{"name": "a"}]))
    again = apply(_schema("apps", "v1", "Deployment"), live, _deployment([{"name": "a"}]),
                  manager="m", force=False, api_version="apps/v1", now="2030-01-01T00:00:00Z")
    assert again == live and again is not live


def test_kubectl_takes_over_fields_of_its_client_side_apply_without_conflict() -> None:
    cm = _schema("", "v1", "ConfigMap")
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
               "data": {"a": "1"}}
    created = {**copy.deepcopy(applied), "metadata": {"name": "c", "annotations": {
        LAST_APPLIED: json.dumps(applied)}}}
    update_managed_fields(cm, None, created, manager="kubectl-client-side-apply",
                          api_version="v1", now=NOW)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"a": "2"}}
    with pytest.raises(StatusError):
        apply(cm, created, config, manager="someone", force=False, api_version="v1", now=NOW)
    result = apply(cm, created, config, manager="kubectl", force=False, api_version="v1",
                   now=NOW)
    assert result["data"] == {"a": "2"}
    assert json.loads(result["metadata"]["annotations"][LAST_APPLIED]) == config
