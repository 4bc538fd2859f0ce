"""A create's managed fields written in one walk equal what the general field manager gives.

The field manager (k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager, over
structured-merge-diff's ``Updater.Update``) gives an update's manager
``(added | modified) - removed`` of its comparison with the live object, without the reset
fields (``recursive_difference``) and the stripped metadata (``difference``). A create
compares with the Go zero value; with no other manager that set is all there is, and
``created_fields_v1`` writes its ``fieldsV1`` in one walk. These tests hold it to the general
path, key order included (``fieldsV1`` is served and stored as written).
"""

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from setpoint.machinery import fieldcompare as fc
from setpoint.machinery import fieldpath as fp
from setpoint.machinery import managedfields as mf
from setpoint.machinery.fieldpath import FieldSet
from setpoint.machinery.schema import Schema, definitions
from setpoint.machinery.typedvalue import SchemaError

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "golden"
needs_corpus = pytest.mark.skipif(not GOLDEN.is_dir(), reason="conformance corpus absent")


def general(schema: Any, zero: Any, new: Any, ignored: FieldSet) -> Any:
    """What update_managed_fields computes for a manager with no one to take fields from."""
    try:
        c = fc.compare(schema, zero, new)
    except SchemaError:
        return "SchemaError"
    mine = c.modified.union(c.added).difference(c.removed).recursive_difference(ignored)
    return json.dumps(fp.encode(mine.difference(mf.STRIPPED_FIELDS)))


def walked(schema: Any, zero: Any, new: Any, ignored: FieldSet) -> Any:
    try:
        return json.dumps(fc.created_fields_v1(schema, zero, new, ignored, mf.STRIPPED_FIELDS))
    except SchemaError:
        return "SchemaError"


def _objects() -> list[dict[str, Any]]:
    """Every built-in object a recorded kube-apiserver answered with."""
    out = []
    for path in sorted(GOLDEN.glob("*.json")):
        for step in json.loads(path.read_text())["steps"]:
            body = (step.get("response") or {}).get("body")
            items = body.get("items") if isinstance(body, dict) else None
            for obj in ([body] if not isinstance(items, list) else items):
                if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
                    out.append(obj)
    return out


def _schema_of(obj: dict[str, Any]) -> Schema | None:
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    return definitions().for_kind(group, version, obj.get("kind", ""))


def _created() -> Iterator[tuple[Schema, dict[str, Any]]]:
    """Each recorded object of a kind with a schema, as a create sends it (no managedFields),
    with that schema."""
    for obj in _objects():
        schema = _schema_of(obj)
        if schema is None:
            continue
        new = copy.deepcopy(obj)
        new["metadata"].pop("managedFields", None)
        yield schema, new


IGNORED = [FieldSet(), mf.reset_set(["status"]), mf.reset_set(["spec", "metadata.labels"])]


@needs_corpus
def test_recorded_objects_created_from_their_zero_value() -> None:
    checked = 0
    for schema, new in _created():
        zero = mf._zero_for_compare(schema, new)
        for ignored in IGNORED:
            assert walked(schema, zero, new, ignored) == general(schema, zero, new, ignored), \
                (new.get("kind"), new["metadata"].get("name"))
        checked += 1
    assert checked > 100, checked


@needs_corpus
def test_recorded_objects_of_a_kind_compared_pairwise() -> None:
    """Any two objects of a kind: fields modified, lists keyed, removed, added at once."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in _objects():
        by_kind.setdefault(obj.get("kind", ""), []).append(obj)
    for objs in by_kind.values():
        schema = _schema_of(objs[0])
        if schema is None:
            continue
        for a, b in itertools.pairwise(objs[:13]):
            for ignored in IGNORED:
                assert walked(schema, a, b, ignored) == general(schema, a, b, ignored)


POD = definitions().for_kind("", "v1", "Pod")
CASES: list[tuple[Any, Any, Any]] = [
    # associative lists: keys, a key's default (protocol), duplicates (the first wins)
    (POD, {"spec": {}}, {"spec": {"containers": [
        {"name": "b", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]},
        {"name": "a", "args": ["x", "y"], "env": [{"name": "E"}, {"name": "E", "value": "2"}]}]}}),
    # a set (v: elements), nulls, empty maps, a zero struct given empty
    (POD, {"spec": {"securityContext": {}}}, {"spec": {
        "securityContext": {}, "nodeSelector": {}, "tolerations": None,
        "readinessGates": [], "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["a", "b"]}]},
        "metadata": {"finalizers": ["b", "a", "b"], "labels": None}}),
    # an item without its key: the object cannot be typed, nothing is tracked
    (POD, {}, {"spec": {"containers": [{"image": "x"}]}}),
    (POD, {"spec": {"containers": [{"image": "x"}]}}, {"spec": {"containers": []}}),
    # a struct where a scalar is expected, and the reverse
    (POD, {"spec": None}, {"spec": {"hostname": {"a": 1}, "nodeName": None}}),
    (POD, {"spec": {"hostname": "h"}}, {"spec": "text", "metadata": 3}),
    # deduced types (no schema): maps granular, lists atomic, a value changing kind
    (None, {"a": {"b": 1}, "c": [1], "d": "x", "e": {"f": {}}},
     {"a": [1], "c": {"k": {"l": 2}}, "d": {"m": None}, "e": {"f": {"g": 1}}, "h": {}}),
    (None, {"apiVersion": "x/v1", "kind": "K"},
     {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
      "spec": {"items": [{"a": 1}], "n": {"o": {"p": True}}}, "status": {"s": 1}}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_edge_cases(case: int) -> None:
    schema, zero, new = CASES[case]
    for ignored in IGNORED:
        assert walked(schema, zero, new, ignored) == general(schema, zero, new, ignored)


# -- a value both sides share ------------------------------------------------------------------


def _outcome(schema: Any, old: Any, new: Any) -> Any:
    try:
        c = fc.compare(schema, old, new)
    except SchemaError as e:
        return "SchemaError", str(e)
    return c.added, c.modified, c.removed


def _sharing(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the very values of ``old`` outside metadata and status, as the status
    strategy's PrepareForUpdate (pkg/registry/core/pod/strategy.go) leaves a status write."""
    out = {k: v for k, v in new.items() if k in ("metadata", "status")}
    out.update((k, v) for k, v in old.items() if k not in ("metadata", "status"))
    return out


@needs_corpus
def test_a_value_both_sides_share_compares_as_a_copy_of_it_would() -> None:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in _objects():
        by_kind.setdefault(obj.get("kind", ""), []).append(obj)
    checked = 0
    for objs in by_kind.values():
        schema = _schema_of(objs[0])
        if schema is None:
            continue
        for a, b in itertools.pairwise(objs[:13]):
            shared = _sharing(a, b)
            assert _outcome(schema, a, shared) == _outcome(schema, a, copy.deepcopy(shared))
            checked += 1
    assert checked > 50, checked


def test_a_shared_value_that_cannot_be_typed_still_fails_the_compare() -> None:
    """structured-merge-diff types both objects whole before comparing them (typed/helpers.go
    ObjectToTyped, then Compare): an item without its key fails even where nothing changed."""
    old = {"spec": {"containers": [{"name": "a", "ports": [{"protocol": "TCP"}]}]},
           "status": {"phase": "Pending"}}
    new = _sharing(old, {"status": {"phase": "Running"}})
    assert new["spec"] is old["spec"]
    outcome = _outcome(POD, old, new)
    assert outcome[0] == "SchemaError"
    assert outcome == _outcome(POD, old, copy.deepcopy(new))
    assert _outcome(POD, old, new) == outcome  # (found again: not kept as typable)


def test_a_shared_value_is_not_compared_leaf_by_leaf(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pods/status write leaves the spec alone: its leaves need no comparing."""
    compared: list[Any] = []
    json_equal = fc.json_equal

    def recording(a: Any, b: Any) -> bool:
        compared.append(a)
        return json_equal(a, b)

    monkeypatch.setattr(fc, "json_equal", recording)
    old = {"spec": {"containers": [{"name": "a", "image": "shared-image",
                                    "ports": [{"containerPort": 80}]}]},
           "status": {"phase": "Pending", "hostIP": "10.0.0.1"}}
    new = _sharing(old, {"status": {"phase": "Running", "hostIP": "10.0.0.1"}})
    c = fc.compare(POD, old, new)
    assert list(c.modified) == [("f:status", "f:phase")]
    assert "shared-image" not in compared and "10.0.0.1" in compared


def test_a_shared_value_is_typed_once_per_distinct_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pods of a ReplicaSet share one spec, written back unchanged at every status write:
    typing its lists is done once for that spec's JSON, whichever pod and write carry it."""
    indexed: list[Any] = []
    index_items = fc.index_items

    def recording(shape: Any, items: list[Any], path: Any) -> Any:
        indexed.append(path)
        return index_items(shape, items, path)

    monkeypatch.setattr(fc, "index_items", recording)
    spec = {"containers": [{"name": "typed-once", "ports": [{"containerPort": 80}]}]}
    for phase in ("Pending", "Running", "Succeeded"):
        old = {"spec": copy.deepcopy(spec), "status": {"phase": "Unknown"}}
        fc.compare(POD, old, _sharing(old, {"status": {"phase": phase}}))
    assert indexed.count(("f:spec", "f:containers")) == 1
