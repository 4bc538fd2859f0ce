import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from setpoint.machinery import fieldpath as fp
from setpoint.machinery import managedfields as mf
from setpoint.machinery.managedfields import update_managed_fields
from setpoint.machinery.schema import Schema, definitions
from tests.conftest import CallsTo

# -- reading the conformance recordings: requests from scenarios, answers from golden --
CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def available() -> bool:
    return (CONFORMANCE / "golden").is_dir()


def steps(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(scenario step, recorded step) pairs of a scenario, in order, by step name."""
    scenario = yaml.safe_load((CONFORMANCE / "scenarios" / f"{name}.yaml").read_text())
    recorded = json.loads((CONFORMANCE / "golden" / f"{name}.json").read_text())
    by_name = {s["name"]: s for s in scenario["steps"] if isinstance(s, dict) and "name" in s}
    return [(by_name.get(r["name"], {}), r) for r in recorded["steps"]]


def step(name: str, step_name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    for scenario_step, recorded in steps(name):
        if recorded["name"] == step_name:
            return scenario_step, recorded
    raise KeyError(step_name)


def request_body(name: str, step_name: str) -> Any:
    s, _ = step(name, step_name)
    if "body_raw" in s:
        return yaml.safe_load(s["body_raw"])
    return s.get("body")


def response_body(name: str, step_name: str) -> Any:
    return step(name, step_name)[1]["response"]["body"]


def comparable(entries: list[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
    """Entries as the conformance comparison sees them: times only present or absent."""
    return [(e["manager"], e["operation"], e["apiVersion"], e.get("subresource", ""),
             "time" in e, json.dumps(e["fieldsV1"], sort_keys=True)) for e in entries or []]


NOW = "2024-01-01T00:00:00Z"
LATER = "2024-01-01T00:00:09Z"
needs_corpus = pytest.mark.skipif(not available(), reason="conformance corpus absent")


def _schema(group: str, version: str, kind: str) -> Schema:
    s = definitions().for_kind(group, version, kind)
    assert s is not None
    return s


def _crd_schemas(scenario: str) -> dict[tuple[str, str], tuple[dict[str, Any], bool]]:
    out = {}
    for s, _ in steps(scenario):
        body = s.get("body")
        if isinstance(body, dict) and body.get("kind") == "CustomResourceDefinition":
            for v in body["spec"]["versions"]:
                has_status = "status" in (v.get("subresources") or {})
                out[body["spec"]["names"]["kind"], v["name"]] = (
                    v["schema"]["openAPIV3Schema"], has_status)
    return out


# Admission plugins and strategies mutate Pods and Namespaces after the field manager ran, so
# their recorded answers hold fields nobody tracked; every other write is replayed.
_MUTATED_AFTER_TRACKING = {"Pod", "Namespace"}
_REPLAYED = [
    "configmap-conflicts", "configmap-crud", "crd-cel-validation",
    "crd-create-established-discovery", "crd-defaulting", "crd-printer-columns-table",
    "crd-pruning-preserve", "crd-schema-validation", "deployment-generation", "dry-run",
    "events-core-and-v1", "field-validation-configmap", "finalizers-delete",
    "gc-background-orphan", "generate-name", "label-selectors", "lease", "list-chunking",
    "noop-update-keeps-rv", "patch-json", "patch-merge-strategic-deployment", "secret-crud",
    "watch-from-list-rv", "watch-initial-events-bookmarks",
]


def _is_tracked_write(recorded: dict[str, Any]) -> bool:
    request, response = recorded.get("request") or {}, recorded.get("response") or {}
    path = request.get("path", "")
    last = path.split("?")[0].rsplit("/", 1)[-1]
    return (request.get("method") in ("POST", "PUT", "PATCH")
            and "apply-patch" not in str(request.get("headers"))
            and response.get("status") in (200, 201) and last not in ("status", "scale")
            and "dryRun" not in path)


@needs_corpus
@pytest.mark.parametrize("scenario", _REPLAYED)
def test_recorded_writes_get_the_recorded_managed_fields(scenario: str) -> None:
    crds = _crd_schemas(scenario)
    stored: dict[tuple[str, str, str], dict[str, Any]] = {}
    checked = 0
    for _, recorded in steps(scenario):
        body = (recorded.get("response") or {}).get("body")
        if not isinstance(body, dict) or "metadata" not in body or body.get("kind") in (
                "Status", "CustomResourceDefinition") or body["kind"].endswith("List"):
            continue
        ident = (body["apiVersion"], body["kind"], body["metadata"].get("name", ""))
        if _is_tracked_write(recorded) and body["kind"] not in _MUTATED_AFTER_TRACKING:
            group, _, version = body["apiVersion"].rpartition("/")
            if (body["kind"], version) in crds:
                raw, has_status = crds[body["kind"], version]
                schema, reset = Schema(raw), ["status"] if has_status else []
            else:
                schema = _schema(group, version, body["kind"])
                reset = ["status"] if body["kind"] == "Deployment" else []
            path = recorded["request"]["path"]
            manager = (path.split("fieldManager=")[1].split("&")[0] if "fieldManager=" in path
                       else "conformance-recorder")
            old = stored.get(ident) if recorded["request"]["method"] != "POST" else None
            new = copy.deepcopy(body)
            expected = new["metadata"].pop("managedFields", None)
            update_managed_fields(schema, old, new, manager=manager,
                                  api_version=body["apiVersion"], now=NOW, reset_fields=reset)
            got = new["metadata"].get("managedFields")
            assert _unescaped(got) == comparable(expected), recorded["name"]
            checked += 1
        stored[ident] = body
    assert checked


def _unescaped(entries: list[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
    # the corpus replaced uids in list keys by "<uid:x>" after Go had escaped the key
    return [(*e[:5], e[5].replace("\\\\u003c", "<").replace("\\\\u003e", ">"))
            for e in comparable(entries)]


@needs_corpus
def test_status_writes_track_a_status_entry_and_the_reset_spec_stays_with_its_owner() -> None:
    scenario = "status-subresource-cr"
    raw = _crd_schemas(scenario)["Gadget", "v1"][0]
    schema = Schema(raw)

    def write(stored: dict[str, Any] | None, new: dict[str, Any],
              subresource: str) -> dict[str, Any]:
        reset = ["spec"] if subresource else ["status"]
        update_managed_fields(schema, stored, new, manager="conformance-recorder",
                              api_version=new["apiVersion"], now=NOW,
                              subresource=subresource, reset_fields=reset)
        if stored is None:
            new.pop("status", None)
            return new
        if subresource:  # the status strategy keeps only status (and managedFields)
            kept = copy.deepcopy(stored)
            kept["status"] = new["status"]
            kept["metadata"]["managedFields"] = new["metadata"]["managedFields"]
            return kept
        new["status"] = stored.get("status")
        return new

    def request(step: str) -> dict[str, Any]:
        body = copy.deepcopy(request_body(scenario, step))
        body["apiVersion"] = "example.com/v1"
        assert isinstance(body, dict)
        return body

    def expect(obj: dict[str, Any], step: str) -> None:
        recorded = response_body(scenario, step)["metadata"]["managedFields"]
        got = [(m, o, s, t, f) for m, o, _, s, t, f in comparable(
            obj["metadata"].get("managedFields"))]
        assert got == [(m, o, s, t, f) for m, o, _, s, t, f in comparable(recorded)]

    obj = write(None, request("create-with-status"), "")
    expect(obj, "create-with-status")
    obj = write(obj, {**request("put-status")}, "status")
    expect(obj, "put-status")
    obj = write(obj, request("put-main-with-status"), "")
    expect(obj, "put-main-with-status")
    patched = copy.deepcopy(obj)
    patched["status"]["observed"] = 2
    patched["spec"]["color"] = "red"
    obj = write(obj, patched, "status")
    expect(obj, "merge-patch-status")
    labelled = copy.deepcopy(obj)
    labelled["metadata"]["labels"] = {"a": "b"}
    obj = write(obj, labelled, "")
    expect(obj, "metadata-only-change")


def _configmap(data: dict[str, str], entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cm", "uid": "u"}, "data": data}
    if entries is not None:
        obj["metadata"]["managedFields"] = entries
    return obj


def _create(data: dict[str, str], manager: str = "a") -> dict[str, Any]:
    obj = _configmap(data)
    update_managed_fields(_schema("", "v1", "ConfigMap"), None, obj, manager=manager,
                          api_version="v1", now=NOW)
    return obj


def _update(old: dict[str, Any], new: dict[str, Any], manager: str = "b") -> dict[str, Any]:
    update_managed_fields(_schema("", "v1", "ConfigMap"), old, new, manager=manager,
                          api_version="v1", now=LATER)
    return new


def test_update_gives_changed_fields_to_the_writer_and_takes_them_from_others() -> None:
    old = _create({"x": "1", "y": "1"})
    new = _update(old, _configmap({"x": "2", "y": "1", "z": "3"}))
    entries = new["metadata"]["managedFields"]
    assert [(e["manager"], e["fieldsV1"], e["time"]) for e in entries] == [
        ("a", {"f:data": {".": {}, "f:y": {}}}, NOW),
        ("b", {"f:data": {"f:x": {}, "f:z": {}}}, LATER),
    ]


def test_an_unchanged_write_keeps_entries_and_times() -> None:
    old = _create({"x": "1"})
    new = _update(old, _configmap({"x": "1"}))
    assert new["metadata"]["managedFields"] == old["metadata"]["managedFields"]


def test_removed_fields_leave_every_owner_and_empty_entries_disappear() -> None:
    old = _create({"x": "1"})
    new = _configmap({})
    del new["data"]
    assert "managedFields" not in _update(old, new)["metadata"]


def test_sent_managed_fields_replace_the_stored_ones() -> None:
    old = _create({"x": "1"})
    sent = [{"manager": "other", "operation": "Update", "apiVersion": "v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}}]
    new = _update(old, _configmap({"x": "1"}, sent))
    assert new["metadata"]["managedFields"] == sent


@pytest.mark.parametrize("reset", [[], [{}]])
def test_an_empty_list_or_one_empty_entry_clears_managed_fields(reset: list[Any]) -> None:
    old = _create({"x": "1"})
    new = _update(old, _configmap({"x": "2"}, reset))
    assert "managedFields" not in new["metadata"]
    # and an untracked object stays untracked on later updates
    assert "managedFields" not in _update(new, _configmap({"x": "3"}))["metadata"]


def test_undecodable_sent_managed_fields_fall_back_to_the_stored_ones() -> None:
    old = _create({"x": "1"})
    bad = [{"manager": "m", "operation": "Delete", "apiVersion": "v1", "fieldsType": "FieldsV1"}]
    new = _update(old, _configmap({"x": "1"}, bad))
    assert new["metadata"]["managedFields"] == old["metadata"]["managedFields"]


def test_subresource_writes_ignore_sent_managed_fields_and_record_the_subresource() -> None:
    old = _create({"x": "1"})
    new = _configmap({"x": "2"}, [])
    update_managed_fields(_schema("", "v1", "ConfigMap"), old, new, manager="a",
                          api_version="v1", now=LATER, subresource="status")
    assert [(e["manager"], e.get("subresource"), e["fieldsV1"])
            for e in new["metadata"]["managedFields"]] == [
        ("a", None, {"f:data": {}}), ("a", "status", {"f:data": {"f:x": {}}})]


def test_decoding_rejects_what_the_apiserver_rejects() -> None:
    base: dict[str, Any] = {"manager": "m", "operation": "Update", "apiVersion": "v1",
                            "fieldsType": "FieldsV1"}
    mf.decode([base])
    cases: list[tuple[dict[str, Any], str]] = [
        ({"operation": "Patch"}, "operation"), ({"apiVersion": ""}, "apiVersion"),
        ({"fieldsType": ""}, "missing fieldsType"),
        ({"fieldsV1": {"q:x": {}}}, "unknown path element")]
    for broken, message in cases:
        with pytest.raises(ValueError, match=message):
            mf.decode([{**base, **broken}])


def test_entries_sort_apply_first_then_by_time_then_manager() -> None:
    managed = mf.decode([
        {"manager": m, "operation": op, "apiVersion": "v1", "time": t, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:" + m: {}}}}
        for m, op, t in [("z", "Update", NOW), ("b", "Update", LATER), ("a", "Update", LATER),
                         ("q", "Apply", LATER)]])
    assert [e["manager"] for e in mf.encode(managed)] == ["q", "z", "a", "b"]


def test_more_than_ten_update_managers_fold_the_oldest_into_ancient_changes() -> None:
    obj = _create({"k0": "v"}, manager="m00")
    for i in range(1, 12):
        new = _configmap({**obj["data"], f"k{i}": "v"}, obj["metadata"]["managedFields"])
        update_managed_fields(_schema("", "v1", "ConfigMap"), obj, new, manager=f"m{i:02}",
                              api_version="v1", now=f"2024-01-01T00:00:{i:02}Z")
        obj = new
    entries = obj["metadata"]["managedFields"]
    assert len(entries) == 10
    ancient = [e for e in entries if e["manager"] == "ancient-changes"]
    assert ancient and set(ancient[0]["fieldsV1"]["f:data"]) == {".", "f:k0", "f:k1", "f:k2"}


def test_a_create_of_a_built_in_kind_starts_from_its_go_zero_value() -> None:
    zero = mf.zero_object(_schema("apps", "v1", "Deployment"), {})
    assert zero["spec"]["template"] == {"metadata": {"creationTimestamp": None},
                                        "spec": {"containers": None}}
    assert zero["spec"]["strategy"] == {} and zero["spec"]["selector"] is None
    custom = mf.zero_object(Schema({"type": "object"}), {"apiVersion": "x/v1", "kind": "K"})
    assert custom == {"apiVersion": "x/v1", "kind": "K"}


@needs_corpus
def test_scale_writes_move_replicas_to_a_scale_entry_without_time() -> None:
    scenario = "scale-deployment"
    mappings = {"apps/v1": ["spec", "replicas"]}
    parent = response_body(scenario, "create")["metadata"]["managedFields"]
    parent = [{**e, "time": NOW} for e in parent]  # the corpus hides times
    scale_schema = _schema("autoscaling", "v1", "Scale")
    entries = mf.scale_to_subresource(parent, mappings=mappings)
    assert [(e["manager"], e["apiVersion"], e["fieldsV1"]) for e in entries] == [
        ("conformance-recorder", "autoscaling/v1", {"f:spec": {"f:replicas": {}}})]
    old: dict[str, Any] = {"apiVersion": "autoscaling/v1", "kind": "Scale",
           "metadata": {"name": "web", "uid": "u", "managedFields": entries},
           "spec": {"replicas": 1}, "status": {"replicas": 0, "selector": "app=web"}}
    new = copy.deepcopy(old)
    new["metadata"].pop("managedFields")
    new["spec"]["replicas"] = 3
    update_managed_fields(scale_schema, old, new, manager="conformance-recorder",
                          api_version="autoscaling/v1", now=NOW, subresource="scale")
    merged = mf.scale_to_parent(parent, new["metadata"]["managedFields"], mappings=mappings,
                                parent_api_version="apps/v1")
    assert [e.get("time") for e in merged] == [None, NOW]
    recorded = response_body(scenario, "get-deployment")["metadata"]["managedFields"]
    assert comparable(merged) == comparable(recorded)


def test_manager_names_must_be_short_and_printable() -> None:
    assert mf.validate_field_manager("kubectl") == []
    [too_long] = mf.validate_field_manager("x" * 129)
    assert (too_long.reason, too_long.message) == (
        "FieldValueTooLong", "Too long: may not be more than 128 bytes")
    [bad] = mf.validate_field_manager("a\x07", "metadata.managedFields[0].manager")
    assert bad.message == 'Invalid value: "a\\a": invalid character U+0007 (at position 1)'
    entries = [{"manager": "m", "operation": "Patch", "fieldsType": "FieldsV2"}]
    assert [c.field for c in mf.validate_managed_fields(entries)] == [
        "metadata.managedFields[0].operation", "metadata.managedFields[0].fieldsType"]


# -- what an update re-reads and re-writes ---------------------------------------------------


def test_an_entry_that_loses_nothing_is_written_back_as_read() -> None:
    """structured-merge-diff's Updater.Update removes the changed fields from every other
    manager's set (merge/update.go); an entry that loses none of them encodes to the fieldsV1
    it was read from, so the very value read is written back. One spelled otherwise than
    the apiserver writes it (keys out of order) is still written the apiserver's way."""
    read: dict[str, Any] = {"f:data": {"f:x": {}}}
    unordered: dict[str, Any] = {"f:data": {"f:z": {}, "f:y": {}}}
    old = _configmap({"x": "1", "y": "1", "z": "1", "w": "1"}, [
        {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": NOW,
         "fieldsType": "FieldsV1", "fieldsV1": read},
        {"manager": "c", "operation": "Update", "apiVersion": "v1", "time": NOW,
         "fieldsType": "FieldsV1", "fieldsV1": unordered}])
    new = _update(old, _configmap({"x": "1", "y": "1", "z": "1", "w": "2"}))
    entries = new["metadata"]["managedFields"]
    assert [(e["manager"], e["fieldsV1"]) for e in entries] == [
        ("a", read), ("c", unordered), ("b", {"f:data": {"f:w": {}}})]
    assert entries[0]["fieldsV1"] is read
    assert list(entries[1]["fieldsV1"]["f:data"]) == ["f:y", "f:z"]


def test_an_entrys_fields_are_parsed_once_per_distinct_value(
        calls_to: CallsTo) -> None:
    """Every update of an object decodes all its entries (the apiserver's
    DecodeManagedFields, once per request); the same fieldsV1 comes back at every write of
    an object, so it is parsed once however many writes carry it."""
    parsed = calls_to(fp, "decode")
    fields_v1: dict[str, Any] = {"f:data": {"f:parsed-once": {}}}
    obj = _configmap({"parsed-once": "1"}, [
        {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": NOW,
         "fieldsType": "FieldsV1", "fieldsV1": fields_v1}])
    for i in range(3):
        obj = _update(copy.deepcopy(obj), _configmap({"parsed-once": "1", "n": str(i)}))
    assert parsed.count(fields_v1) == 1
    assert [e["fieldsV1"] for e in obj["metadata"]["managedFields"]] == [
        fields_v1, {"f:data": {"f:n": {}}}]


def test_a_manager_rewriting_what_it_owns_keeps_its_entrys_fields_as_read() -> None:
    """The manager's own entry is the union of what it owned and what it changed
    (merge/update.go); a kubelet writing its pod's status again changes only fields it
    owns, so the union is what it owned: its fieldsV1 is written back as read, with the
    write's time."""
    owned: dict[str, Any] = {"f:data": {"f:x": {}}}
    old = _configmap({"x": "1"}, [
        {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": NOW,
         "fieldsType": "FieldsV1", "fieldsV1": owned}])
    entries = _update(old, _configmap({"x": "2"}))["metadata"]["managedFields"]
    assert [(e["manager"], e["time"], e["fieldsV1"]) for e in entries] == [("b", LATER, owned)]
    assert entries[0]["fieldsV1"] is owned
    grown = _update(old, _configmap({"x": "2", "y": "1"}))["metadata"]["managedFields"]
    assert [e["fieldsV1"] for e in grown] == [{"f:data": {"f:x": {}, "f:y": {}}}]
