"""The PATCH algorithms: the recorded answers of a real kube-apiserver, and apimachinery's cases.

The golden tests replay each patch body of the conformance corpus on the object the real server
held before it and compare with the object it answered (less the fields the server itself
writes), or with the Status it answered for a patch that cannot apply.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from setpoint.machinery.errors import StatusError
from setpoint.machinery.patch import json_patch, merge_patch, strategic_merge_patch
from setpoint.machinery.schema import Schema, definitions

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"

# -- golden replay -----------------------------------------------------------------------------

_PATCHERS = {
    "application/json-patch+json": lambda doc, body, schema: json_patch(doc, body),
    "application/merge-patch+json": lambda doc, body, schema: merge_patch(doc, body),
    "application/strategic-merge-patch+json": strategic_merge_patch,
}
# fields the server defaults on new containers; stripped from both sides before comparing
_CONTAINER_DEFAULTS = ("resources", "terminationMessagePath", "terminationMessagePolicy",
                       "imagePullPolicy")
_SCHEMAS = {
    "/apis/apps/v1/": ("apps", "v1", "Deployment"),
    "/api/v1/namespaces/${ns}/configmaps": ("", "v1", "ConfigMap"),
}


def _recorded_patches(scenario: str) -> list[tuple[str, dict[str, Any], dict[str, Any], Any]]:
    """(step name, object before, request step, recorded response) for each PATCH step."""
    scenario_file = CONFORMANCE / "scenarios" / f"{scenario}.yaml"
    if not scenario_file.exists():
        pytest.skip("the conformance corpus is not beside the work tree")
    steps = yaml.safe_load(scenario_file.read_text())["steps"]
    golden = json.loads((CONFORMANCE / "golden" / f"{scenario}.json").read_text())
    answers = {s["name"]: s.get("response", {}) for s in golden["steps"]}
    state: dict[str, dict[str, Any]] = {}
    out = []
    for step in steps:
        if "method" not in step:
            continue
        path = step["path"].split("?")[0]
        answer = answers.get(step["name"], {})
        if step["method"] == "PATCH" and path in state:
            out.append((step["name"], state[path], step, answer))
        if step["method"] == "POST":
            path = f"{path}/{step['body']['metadata']['name']}"
        if 200 <= answer.get("status", 0) < 300 and answer["body"].get("kind") != "Status":
            state[path] = answer["body"]
    return out


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata", {})
    for server_field in ("resourceVersion", "generation", "managedFields"):
        meta.pop(server_field, None)
    for map_field in ("labels", "annotations"):
        # the typed round trip drops an emptied map (omitempty)
        if meta.get(map_field) == {}:
            del meta[map_field]
    pod = obj.get("spec", {}).get("template", {}).get("spec", {})
    for container in pod.get("containers", []):
        for name in _CONTAINER_DEFAULTS:
            container.pop(name, None)
    return obj


def _schema_for(path: str) -> Schema | None:
    for prefix, gvk in _SCHEMAS.items():
        if path.startswith(prefix):
            return definitions().for_kind(*gvk)
    return None


def _status_matches(err: StatusError, recorded: dict[str, Any]) -> None:
    ours = err.to_status()
    if recorded.get("code") == 500:
        # a client mistake the real server answers with a bare 500: ours is the proper 400
        assert (ours["code"], ours["reason"], ours["message"]) == (
            400, "BadRequest", recorded["message"])
        return
    assert ours == recorded


GOLDEN_CASES = [
    (scenario, name)
    for scenario, names in {
        "patch-json": ["add-replace-remove", "escaped-label-key", "move-copy", "test-success",
                       "test-failure", "remove-missing-path", "replace-missing-path",
                       "not-an-array", "unknown-op", "empty-patch"],
        "patch-merge-strategic-deployment": [
            "smp-update-one-container", "smp-merge-env-by-name", "smp-add-container",
            "smp-delete-directive", "smp-delete-env-entry", "smp-null-removes-label",
            "smp-retainkeys-strategy", "merge-patch-replaces-containers",
            "merge-patch-null-deletes", "smp-bad-directive", "smp-on-configmap"],
        "deployment-generation": ["label-only", "annotation-only", "image-change"],
        "noop-update-keeps-rv": ["merge-patch-identical", "strategic-patch-empty",
                                 "json-patch-test-only"],
        "finalizers-delete": ["remove-one-finalizer"],
        "namespace-crud": ["label-patch"],
        "lease": ["release"],
    }.items()
    for name in names
]


@pytest.mark.parametrize(("scenario", "step_name"), GOLDEN_CASES)
def test_patch_reproduces_the_recorded_server_answer(scenario: str, step_name: str) -> None:
    matches = [c for c in _recorded_patches(scenario) if c[0] == step_name]
    assert matches, f"{scenario}/{step_name} is not a replayable patch step"
    _, before, step, answer = matches[0]
    patcher = _PATCHERS[step["headers"]["Content-Type"]]
    pristine = copy.deepcopy(before)
    schema = _schema_for(step["path"])
    if answer["status"] >= 400:
        with pytest.raises(StatusError) as caught:
            patcher(before, step["body"], schema)
        _status_matches(caught.value, answer["body"])
    else:
        result = patcher(before, step["body"], schema)
        assert _comparable(result) == _comparable(answer["body"])
    assert before == pristine


# -- strategic merge patch: apimachinery's cases ------------------------------------------------

# The test type of strategicpatch/patch_test.go (MergeItem), as an OpenAPI schema.
_MERGE_ITEM_DEFINITIONS = yaml.safe_load("""
  mergeItem:
    type: object
    properties:
      name: {type: string}
      value: {type: string}
      other: {type: string}
      mergingList:
        type: array
        items: {$ref: '#/definitions/mergeItem'}
        x-kubernetes-patch-merge-key: name
        x-kubernetes-patch-strategy: merge
      nonMergingList:
        type: array
        items: {$ref: '#/definitions/mergeItem'}
      mergingIntList:
        type: array
        items: {type: integer}
        x-kubernetes-patch-strategy: merge
      nonMergingIntList:
        type: array
        items: {type: integer}
      mergeItemPtr:
        allOf: [{$ref: '#/definitions/mergeItem'}]
        x-kubernetes-patch-merge-key: name
        x-kubernetes-patch-strategy: merge
      simpleMap:
        type: object
        additionalProperties: {type: string}
      replacingItem:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-patch-strategy: replace
      retainKeysMap:
        allOf: [{$ref: '#/definitions/retainKeysMergeItem'}]
        x-kubernetes-patch-strategy: retainKeys
      retainKeysMergingList:
        type: array
        items: {$ref: '#/definitions/mergeItem'}
        x-kubernetes-patch-merge-key: name
        x-kubernetes-patch-strategy: merge,retainKeys
  retainKeysMergeItem:
    type: object
    properties:
      name: {type: string}
      value: {type: string}
      other: {type: string}
      simpleMap:
        type: object
        additionalProperties: {type: string}
      mergingIntList:
        type: array
        items: {type: integer}
        x-kubernetes-patch-strategy: merge
      mergingList:
        type: array
        items: {$ref: '#/definitions/mergeItem'}
        x-kubernetes-patch-merge-key: name
        x-kubernetes-patch-strategy: merge
      nonMergingList:
        type: array
        items: {$ref: '#/definitions/mergeItem'}
""")


def _merge_item_schema() -> Schema:
    def resolve(name: str) -> Schema:
        return Schema(_MERGE_ITEM_DEFINITIONS[name], resolve)

    return resolve("mergeItem")


# Ported from k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go (custom and raw cases;
# the three-way cases are applied to their "current" object).
_APIMACHINERY_CASES = yaml.safe_load("""
  - description: unique scalars when merging lists
    original:
      mergingIntList: [1, 2]
    patch:
      mergingIntList: [2, 3]
    modified:
      mergingIntList: [1, 2, 3]
  - description: delete map from nested map
    original:
      simpleMap: {key1: '1', key2: '1'}
    patch:
      simpleMap: {$patch: delete}
    modified:
      simpleMap: {}
  - description: delete all items from merging list
    original:
      mergingList:
      - {name: '1'}
      - {name: '2'}
    patch:
      mergingList:
      - {$patch: replace}
    modified:
      mergingList: []
  - description: merge empty merging lists
    original:
      mergingList: []
    patch:
      mergingList: []
    modified:
      mergingList: []
  - description: delete all keys from map
    original: {name: '1', value: '1'}
    patch: {$patch: replace}
    modified: {}
  - description: add key and delete all keys from map
    original: {name: '1', value: '1'}
    patch: {other: a, $patch: replace}
    modified: {other: a}
  - description: delete all duplicate entries in a merging list
    original:
      mergingList:
      - {name: '1'}
      - {name: '1'}
      - {name: '2', value: a}
      - {name: '3'}
      - {name: '3'}
    patch:
      mergingList:
      - {name: '1', $patch: delete}
      - {name: '3', $patch: delete}
    modified:
      mergingList:
      - {name: '2', value: a}
  - description: retainKeys map can delete a field when no retainKeys directive present
    original:
      retainKeysMap: {name: foo, value: a}
    patch:
      retainKeysMap: {value: null}
    modified:
      retainKeysMap: {name: foo}
  - description: retainKeys list can change a field when no retainKeys directive present
    original:
      retainKeysMergingList:
      - {name: bar}
      - {name: foo, value: a}
    patch:
      retainKeysMergingList:
      - {name: foo, value: b}
    modified:
      retainKeysMergingList:
      - {name: bar}
      - {name: foo, value: b}
  - description: preserve the order from the patch in a merging list
    original:
      mergingList:
      - {name: '1'}
      - {name: '2', value: b}
      - {name: '3'}
    patch:
      mergingList:
      - {name: '3', value: c}
      - {name: '1', value: a}
      - {name: '2', other: x}
    modified:
      mergingList:
      - {name: '3', value: c}
      - {name: '1', value: a}
      - {name: '2', value: b, other: x}
  - description: preserve the order from the patch in a merging list 2
    original:
      mergingList:
      - {name: '1'}
      - {name: '2', value: b}
      - {name: '3'}
    patch:
      mergingList:
      - {name: '3', value: c}
      - {name: '1', value: a}
    modified:
      mergingList:
      - {name: '2', value: b}
      - {name: '3', value: c}
      - {name: '1', value: a}
  - description: preserve the order from the patch in a merging int list
    original:
      mergingIntList: [1, 2, 3]
    patch:
      mergingIntList: [3, 1, 2]
    modified:
      mergingIntList: [3, 1, 2]
  - description: preserve the order from the patch in a merging int list 2
    original:
      mergingIntList: [1, 2, 3]
    patch:
      mergingIntList: [3, 1]
    modified:
      mergingIntList: [2, 3, 1]
  - description: setElementOrder contains an item not present in the list to be merged
    original:
      mergingList:
      - {name: '1'}
      - {name: '3'}
    patch:
      $setElementOrder/mergingList:
      - {name: '3'}
      - {name: '2'}
      - {name: '1'}
      mergingList:
      - {name: '3', value: '3'}
      - {name: '1', value: '1'}
    modified:
      mergingList:
      - {name: '3', value: '3'}
      - {name: '1', value: '1'}
  - description: setElementOrder contains an item not present in the int list to be merged
    original:
      mergingIntList: [1, 3]
    patch:
      $setElementOrder/mergingIntList: [3, 2, 1]
    modified:
      mergingIntList: [3, 1]
  - description: the order in setElementOrder and in the patch list must match
    original:
      mergingList:
      - {name: '1'}
      - {name: '3'}
      - {name: '2'}
    patch:
      $setElementOrder/mergingList:
      - {name: '1'}
      - {name: '2'}
      - {name: '3'}
      mergingList:
      - {name: '3', value: '3'}
      - {name: '1', value: '1'}
    error: doesn't match
  - description: the order in setElementOrder and in the patch int list must match
    original:
      mergingIntList: [1, 3, 2]
    patch:
      $setElementOrder/mergingIntList: [1, 2, 3]
      mergingIntList: [3, 1]
    error: doesn't match
  - description: a missing merge key is an error
    original:
      mergingList:
      - {name: '1', value: a}
    patch:
      mergingList:
      - {value: b}
    error: does not contain declared merge key
  - description: delete items in lists of scalars
    original:
      mergingIntList: [1, 2, 3, 4]
    patch:
      $setElementOrder/mergingIntList: [1, 2]
      $deleteFromPrimitiveList/mergingIntList: [3]
    modified:
      mergingIntList: [1, 2, 4]
  - description: delete all duplicate items in lists of scalars
    original:
      mergingIntList: [1, 2, 3, 3, 4]
    patch:
      $setElementOrder/mergingIntList: [1, 2]
      $deleteFromPrimitiveList/mergingIntList: [3]
    modified:
      mergingIntList: [1, 2, 4]
  - description: add and delete items in lists of scalars
    original:
      mergingIntList: [1, 2, 3]
    patch:
      $setElementOrder/mergingIntList: [1, 2, 4]
      $deleteFromPrimitiveList/mergingIntList: [3]
      mergingIntList: [4]
    modified:
      mergingIntList: [1, 2, 4]
  - description: merge lists of maps
    original:
      mergingList:
      - {name: '1', other: a}
      - {name: '2', value: '2', other: b}
    patch:
      $setElementOrder/mergingList:
      - {name: '4'}
      - {name: '1'}
      - {name: '2'}
      - {name: '3'}
      mergingList:
      - {name: '4', value: '4'}
      - {name: '3', value: '3'}
    modified:
      mergingList:
      - {name: '4', value: '4'}
      - {name: '1', other: a}
      - {name: '2', value: '2', other: b}
      - {name: '3', value: '3'}
  - description: add field to map in merging list with conflict
    original:
      mergingList:
      - {name: '1', other: a}
      - {name: '3', value: '2', other: b}
    patch:
      $setElementOrder/mergingList:
      - {name: '1'}
      - {name: '2'}
      mergingList:
      - {name: '1', value: '1'}
      - {name: '2', value: '2'}
    modified:
      mergingList:
      - {name: '1', value: '1', other: a}
      - {name: '2', value: '2'}
      - {name: '3', value: '2', other: b}
  - description: delete missing map from merging list with conflict
    original:
      mergingList:
      - {name: '3', other: a}
    patch:
      $setElementOrder/mergingList:
      - {name: '2'}
      mergingList:
      - {name: '2'}
      - {name: '1', $patch: delete}
    modified:
      mergingList:
      - {name: '2'}
      - {name: '3', other: a}
  - description: add map and delete map from merging list
    original:
      mergingList:
      - {name: '1'}
      - {name: '2', other: b}
      - {name: '4', other: c}
    patch:
      $setElementOrder/mergingList:
      - {name: '2'}
      - {name: '3'}
      mergingList:
      - {name: '3'}
      - {name: '1', $patch: delete}
    modified:
      mergingList:
      - {name: '2', other: b}
      - {name: '4', other: c}
      - {name: '3'}
  - description: add map and delete map from merging list with conflict
    original:
      mergingList:
      - {name: '1', other: a}
      - {name: '4', other: c}
    patch:
      $setElementOrder/mergingList:
      - {name: '2'}
      - {name: '3'}
      mergingList:
      - {name: '2'}
      - {name: '3'}
      - {name: '1', $patch: delete}
    modified:
      mergingList:
      - {name: '4', other: c}
      - {name: '2'}
      - {name: '3'}
  - description: delete field from map in merging list
    original:
      mergingList:
      - {name: '1', value: '1', other: a}
      - {name: '2', value: '2', other: b}
    patch:
      $setElementOrder/mergingList:
      - {name: '1'}
      - {name: '2'}
      mergingList:
      - {name: '1', value: null}
    modified:
      mergingList:
      - {name: '1', other: a}
      - {name: '2', value: '2', other: b}
""")


@pytest.mark.parametrize("case", _APIMACHINERY_CASES, ids=lambda c: c["description"])
def test_strategic_merge_patch_matches_apimachinery_case(case: dict[str, Any]) -> None:
    original = case["original"]
    pristine = copy.deepcopy(original)
    if "error" in case:
        with pytest.raises(StatusError) as caught:
            strategic_merge_patch(original, case["patch"], _merge_item_schema())
        assert case["error"] in caught.value.message
    else:
        assert strategic_merge_patch(original, case["patch"], _merge_item_schema()) == (
            case["modified"])
    assert original == pristine


# -- strategic merge patch: directives and errors -----------------------------------------------

def _deployment_schema() -> Schema:
    schema = definitions().for_kind("apps", "v1", "Deployment")
    assert schema is not None
    return schema


def _deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "finalizers": ["a", "b", "c"], "labels": {"app": "web"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": list(containers)}}},
    }


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]  # type: ignore[no-any-return]


def test_strategic_patch_shares_untouched_subtrees_and_copies_touched_ones() -> None:
    doc = _deployment({"name": "app", "image": "a"}, {"name": "side", "image": "b"})
    result = strategic_merge_patch(
        doc, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "z"}]}}}},
        _deployment_schema(),
    )
    assert result["metadata"] is doc["metadata"]
    assert _containers(result)[1] is _containers(doc)[1]
    assert _containers(result)[0] is not _containers(doc)[0]
    assert _containers(doc)[0]["image"] == "a"


def test_strategic_patch_deletes_from_a_primitive_list() -> None:
    result = strategic_merge_patch(
        _deployment(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}},
        _deployment_schema(),
    )
    assert result["metadata"]["finalizers"] == ["a", "c"]


def test_strategic_patch_unions_a_merge_list_of_primitives_patch_items_first() -> None:
    result = strategic_merge_patch(
        _deployment(), {"metadata": {"finalizers": ["d", "a"]}}, _deployment_schema()
    )
    assert result["metadata"]["finalizers"] == ["d", "a", "b", "c"]


def test_strategic_patch_replaces_a_list_without_strategy() -> None:
    doc = _deployment({"name": "app", "command": ["a", "b"]})
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["c"]}]}}}}
    result = strategic_merge_patch(doc, patch, _deployment_schema())
    assert _containers(result)[0]["command"] == ["c"]


def test_strategic_patch_new_element_keeps_nulls_but_new_field_drops_them() -> None:
    doc = _deployment({"name": "app"})
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "new", "image": None}]}}},
             "metadata": {"annotations": {"a": "1", "b": None, "c": {"$patch": "delete"}}}}
    result = strategic_merge_patch(doc, patch, _deployment_schema())
    # apimachinery appends an unmatched list element as sent
    assert _containers(result)[0] == {"name": "new", "image": None}
    assert result["metadata"]["annotations"] == {"a": "1"}


def test_strategic_patch_replace_directive_on_a_map_takes_the_patch() -> None:
    doc = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    result = strategic_merge_patch(
        doc, {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}, _deployment_schema()
    )
    assert result["metadata"]["labels"] == {"c": "3"}


def test_strategic_patch_retain_keys_refuses_a_field_not_listed() -> None:
    doc = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}
    with pytest.raises(StatusError) as caught:
        strategic_merge_patch(doc, patch, _deployment_schema())
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == "invalid patch format of retainKeys"


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        ({"metadata": {"$setElementOrderfinalizers": ["a"]}}, 400,
         "invalid patch format of setElementOrder list"),
        ({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}, 400,
         "invalid patch format of primitive list"),
        ({"metadata": {"$retainKeys": "name"}}, 400, "invalid patch format of retainKeys"),
        ({"metadata": {"finalizers": [["x"]]}}, 400,
         "list element types are not identical: [[a b c] [[x]]]"),
        ({"metadata": {"finalizers": [1]}}, 400,
         "list element types are not identical: [[a b c] [1]]"),
        ({"metadata": {"labels": {"$patch": 7}}}, 400,
         "unknown patch type: %!s(int64=7) in map: map[$patch:7]"),
        ({"spec": {"template": {"spec": {"containers": [{"$patch": "merge", "name": "x"}]}}}},
         400, "merging lists cannot yet be specified in the patch"),
        ({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}, 400,
         "map: map[$patch:delete] does not contain declared merge key: name"),
        ({"metadata": {"$setElementOrder/finalizers": "a"}}, 400,
         "expected a []interface {}, but received a string"),
        ([1], 400, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
    ],
)
def test_strategic_patch_rejects_malformed_patches_as_the_apiserver(
    patch: Any, code: int, message: str
) -> None:
    doc = _deployment({"name": "app"})
    with pytest.raises(StatusError) as caught:
        strategic_merge_patch(doc, patch, _deployment_schema())
    assert (caught.value.code, caught.value.message) == (code, message)
    assert caught.value.to_status()["reason"] == "BadRequest"


def test_strategic_patch_refuses_a_list_of_lists_with_the_generic_422() -> None:
    doc: dict[str, Any] = {"metadata": {"finalizers": []}}
    with pytest.raises(StatusError) as caught:
        strategic_merge_patch(doc, {"metadata": {"finalizers": [["x"]]}}, _deployment_schema())
    assert caught.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid", "details": {}, "code": 422,
    }


def test_strategic_patch_without_schema_merges_maps_and_replaces_lists() -> None:
    doc = {"a": {"b": 1, "c": [1, 2]}}
    assert strategic_merge_patch(doc, {"a": {"c": [3], "d": 4}}, None) == {
        "a": {"b": 1, "c": [3], "d": 4}}


def test_strategic_patch_null_body_changes_nothing() -> None:
    doc = _deployment()
    assert strategic_merge_patch(doc, None, _deployment_schema()) == doc


# -- JSON patch ---------------------------------------------------------------------------------

def _cm() -> dict[str, Any]:
    return {"metadata": {"name": "cm", "finalizers": ["a", "b", "c"]}, "data": {"k": "v"}}


def test_json_patch_copies_only_the_containers_it_changes() -> None:
    doc = _cm()
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/data/x", "value": {"deep": 1}},
                                 {"op": "add", "path": "/data/x/more", "value": 2}]
    result = json_patch(doc, ops)
    assert result["metadata"] is doc["metadata"]
    assert result["data"] == {"k": "v", "x": {"deep": 1, "more": 2}}
    assert doc == _cm()
    assert ops[0]["value"] == {"deep": 1}


def test_json_patch_move_then_change_leaves_the_source_untouched() -> None:
    doc = _cm()
    result = json_patch(doc, [{"op": "move", "from": "/data", "path": "/moved"},
                              {"op": "add", "path": "/moved/k2", "value": "v2"}])
    assert result == {"metadata": doc["metadata"], "moved": {"k": "v", "k2": "v2"}}
    assert doc == _cm()


def test_json_patch_counts_negative_indices_from_the_end() -> None:
    result = json_patch(_cm(), [{"op": "remove", "path": "/metadata/finalizers/-1"},
                                {"op": "add", "path": "/metadata/finalizers/-1", "value": "z"}])
    assert result["metadata"]["finalizers"] == ["a", "b", "z"]


def test_json_patch_missing_value_means_null() -> None:
    assert json_patch(_cm(), [{"op": "add", "path": "/data/n"}])["data"]["n"] is None


def test_json_patch_test_for_null_passes_on_a_missing_member() -> None:
    assert json_patch(_cm(), [{"op": "test", "path": "/data/absent", "value": None}]) == _cm()


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "add", "path": "", "value": {}}],
        [{"op": "replace", "path": "data", "value": {}}],
        [{"op": "test", "path": "/data/k", "value": "other"}],
        [{"op": "test", "path": "/metadata/finalizers/0", "value": True}],
        [{"op": "remove", "path": "/metadata/finalizers/3"}],
        [{"op": "copy", "from": "/nope", "path": "/data/x"}],
        [{"path": "/data/k"}],
        [None],
    ],
)
def test_json_patch_refuses_an_inapplicable_operation_with_the_generic_422(ops: Any) -> None:
    doc = _cm()
    with pytest.raises(StatusError) as caught:
        json_patch(doc, ops)
    assert caught.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid", "details": {}, "code": 422,
    }
    assert doc == _cm()


@pytest.mark.parametrize(
    ("ops", "detail"),
    [
        ("[]", "cannot unmarshal string into Go value of type []handlers.jsonPatchOp"),
        ([1], "cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
        ([{"op": "add", "path": 1}],
         "cannot unmarshal number into Go struct field jsonPatchOp.path of type string"),
        ([{"op": True, "path": "/a"}],
         "cannot unmarshal bool into Go struct field jsonPatchOp.op of type string"),
    ],
)
def test_json_patch_refuses_a_body_that_does_not_decode_with_400(ops: Any, detail: str) -> None:
    with pytest.raises(StatusError) as caught:
        json_patch(_cm(), ops)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == f"error decoding patch: json: {detail}"


def test_json_patch_refuses_more_than_10000_operations() -> None:
    ops = [{"op": "test", "path": "/data/k", "value": "v"}] * 10001
    with pytest.raises(StatusError) as caught:
        json_patch(_cm(), ops)
    assert caught.value.code == 413
    assert caught.value.message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001")  # NewRequestEntityTooLargeError prefixes it


# -- JSON merge patch ---------------------------------------------------------------------------

def test_merge_patch_prunes_nulls_in_new_values_but_not_in_replacing_arrays() -> None:
    doc = {"spec": {"a": {"x": 1}}}
    patch = {"spec": {"new": {"k": None, "l": [{"m": None, "n": 1}, None]},
                      "a": [{"keep": None}]}}
    assert merge_patch(doc, patch) == {
        "spec": {"a": [{"keep": None}], "new": {"l": [{"n": 1}, None]}}}
    assert doc == {"spec": {"a": {"x": 1}}}


def test_merge_patch_replaces_a_scalar_with_an_object() -> None:
    assert merge_patch({"a": 1, "b": 2}, {"a": {"c": None, "d": 3}}) == {"a": {"d": 3}, "b": 2}


def test_merge_patch_shares_untouched_subtrees() -> None:
    doc = {"metadata": {"name": "x"}, "spec": {"a": 1}}
    result = merge_patch(doc, {"spec": {"a": 2}})
    assert result["metadata"] is doc["metadata"]
    assert doc["spec"] == {"a": 1}


@pytest.mark.parametrize("patch", [None, 1, "x", True])
def test_merge_patch_refuses_a_null_or_scalar_body_with_400(patch: Any) -> None:
    with pytest.raises(StatusError) as caught:
        merge_patch({"a": 1}, patch)
    assert (caught.value.code, caught.value.message) == (400, "Invalid JSON Patch")


def test_merge_patch_refuses_an_array_body_with_422() -> None:
    with pytest.raises(StatusError) as caught:
        merge_patch({"a": 1}, [1])
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert caught.value.causes[0].field == "patch"


# -- Go semantics the algorithms rely on --------------------------------------------------------

def test_go_value_printing_matches_fmt() -> None:
    from setpoint.machinery.gofmt import format_s, format_v

    assert format_v({"b": [1, 2.5, None], "a": True}) == "map[a:true b:[1 2.5 <nil>]]"
    assert format_v(1e6) == "1e+06"
    assert format_v(100000.0) == "100000"
    assert format_s(["x", 1]) == "[x %!s(int64=1)]"


def test_go_stable_sort_moves_unplaceable_items_forward_like_insertion_sort() -> None:
    from setpoint.machinery.patch._go import stable_sort

    rank = {"a": 0, "b": 1}

    def less(left: str, right: str) -> bool:
        if left in rank and right in rank:
            return rank[left] < rank[right]
        return True

    assert stable_sort(["a", "x", "b"], less) == ["x", "a", "b"]
    many = [str(i) for i in range(45)][::-1]
    assert stable_sort(many, lambda a, b: int(a) < int(b)) == sorted(many, key=int)
