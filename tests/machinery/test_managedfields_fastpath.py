"""The unchanged-value fast path of ``fieldcompare`` gives what the plain walk gives.

``_compare_maps``/``_compare_lists`` skip a value found unchanged by ``_same`` and only
check that it types (``_check_shared``, remembered by the JSON text ``_same`` wrote). Each
case here runs ``compare`` and ``update_managed_fields`` four ways and wants one answer:
the fast path with nothing remembered, again with everything remembered, the fast path as
it was before ``_same`` handed its text on (``_check_shared`` encodes again), and the plain
walk with no fast path at all. Typing an unchanged value must still fail where it does not
type, as it does in structured-merge-diff's typed/helpers.go (the apiserver then drops
managedFields: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager, via
k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from setpoint.machinery import fieldcompare as fc
from setpoint.machinery.fieldcompare import compare
from setpoint.machinery.managedfields import update_managed_fields
from setpoint.machinery.schema import Schema, definitions
from setpoint.machinery.typedvalue import SchemaError

NOW = "2024-01-01T00:00:00Z"
LATER = "2024-01-01T00:00:09Z"
Obj = dict[str, Any]


def _schema(group: str, version: str, kind: str) -> Schema:
    s = definitions().for_kind(group, version, kind)
    assert s is not None
    return s


def _replica_set(i: int) -> Obj:
    labels = {"app": f"web-{i}"}
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"web-{i}", "namespace": "default", "uid": f"uid-{i}",
                     "resourceVersion": "12", "labels": dict(labels),
                     "finalizers": ["a.example.com/x"],
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "web", "uid": "d-1", "controller": True}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": dict(labels)},
                 "template": {"metadata": {"labels": dict(labels)},
                              "spec": _pod_spec()}},
        "status": {"replicas": 2, "readyReplicas": 1, "observedGeneration": 1,
                   "conditions": [{"type": "ReplicaFailure", "status": "False"}]},
    }


def _pod_spec() -> Obj:
    return {"containers": [{"name": "app", "image": "nginx", "args": ["-x"],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "10m"}}},
                           {"name": "side", "image": "busybox"}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}


def _pod(i: int) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": "default", "uid": f"p-{i}",
                     "resourceVersion": "7", "labels": {"app": "web"}},
        "spec": _pod_spec(),
        "status": {"phase": "Pending", "podIP": "10.0.0.1",
                   "podIPs": [{"ip": "10.0.0.1"}],
                   "conditions": [{"type": "PodScheduled", "status": "True"}],
                   "containerStatuses": [{"name": "app", "ready": False, "restartCount": 0,
                                          "image": "nginx", "imageID": "",
                                          "state": {"waiting": {"reason": "Pending"}}}]},
    }


# -- changes: each takes a deep copy of the old object and changes it in place -------------

def _status_counts(o: Obj) -> None:
    o["status"]["readyReplicas" if o["kind"] == "ReplicaSet" else "phase"] = (
        3 if o["kind"] == "ReplicaSet" else "Running")


def _condition_added(o: Obj) -> None:
    o["status"]["conditions"].append({"type": "Ready", "status": "True"})


def _condition_changed(o: Obj) -> None:
    o["status"]["conditions"][0]["status"] = "Unknown"


def _condition_removed(o: Obj) -> None:
    o["status"]["conditions"] = []


def _conditions_reordered(o: Obj) -> None:
    o["status"]["conditions"] = [{"type": "Z", "status": "True"},
                                 *o["status"]["conditions"]]


def _finalizer_added(o: Obj) -> None:  # a set (listType=set)
    o["metadata"]["finalizers"] = [*o["metadata"].get("finalizers", []), "b.example.com/y"]


def _finalizers_repeated(o: Obj) -> None:
    o["metadata"]["finalizers"] = ["a.example.com/x", "a.example.com/x"]


def _owner_changed(o: Obj) -> None:
    o["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "n",
                                         "uid": "other"}]


def _owner_keyless(o: Obj) -> None:
    # ownerReferences is a list-map keyed by uid: without it the metadata does not type
    o["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "n"}]


def _label_added(o: Obj) -> None:
    o["metadata"]["labels"]["tier"] = "front"


def _bool_for_int(o: Obj) -> None:
    # equal in Python (``True == 1``), not in JSON: the fast path must not take it as same
    if o["kind"] == "ReplicaSet":
        o["status"]["observedGeneration"] = True
    else:
        o["status"]["containerStatuses"][0]["restartCount"] = False


def _float_for_int(o: Obj) -> None:
    o["status"]["replicas" if o["kind"] == "ReplicaSet" else "podIP"] = 2.0


def _huge_int_unchanged(o: Obj) -> None:
    # past 64 bits: orjson cannot write it, the walk decides
    o["spec"]["huge"] = 2 ** 70


def _container_keyless(o: Obj) -> None:
    # a list-map item without its key does not type, changed or not
    spec = o["spec"]["template"]["spec"] if o["kind"] == "ReplicaSet" else o["spec"]
    del spec["containers"][1]["name"]


def _containers_a_map(o: Obj) -> None:
    spec = o["spec"]["template"]["spec"] if o["kind"] == "ReplicaSet" else o["spec"]
    spec["containers"] = {"app": {"image": "nginx"}}


def _port_added(o: Obj) -> None:
    spec = o["spec"]["template"]["spec"] if o["kind"] == "ReplicaSet" else o["spec"]
    if isinstance(spec["containers"], list):
        spec["containers"][0]["ports"].append({"containerPort": 81, "protocol": "UDP"})


def _unknown_field(o: Obj) -> None:
    o["spec"]["notInSchema"] = {"a": [1, {"b": True}]}


def _status_waiting_to_running(o: Obj) -> None:
    if o["kind"] == "Pod":
        o["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": NOW}}
        o["status"]["podIPs"].append({"ip": "fd00::1"})


CHANGES: list[Callable[[Obj], None]] = [
    _status_counts, _condition_added, _condition_changed, _condition_removed,
    _conditions_reordered, _finalizer_added, _finalizers_repeated, _owner_changed,
    _label_added, _bool_for_int, _float_for_int, _port_added, _status_waiting_to_running]
# changes made to both sides (the value is then unchanged by the write, but its shape is odd)
BOTH_SIDES: list[Callable[[Obj], None] | None] = [
    None, _huge_int_unchanged, _container_keyless, _containers_a_map, _unknown_field,
    _bool_for_int, _finalizers_repeated, _owner_keyless]


def _cases() -> Iterator[tuple[str, Obj, Obj]]:
    """(id, old, new) pairs: ReplicaSets and Pods, shaped oddly on both sides or not, with
    one to three changes; half of them keep the old object's unchanged members as the very
    same objects (as a strategy's copy does), half as equal copies (as a decoded body)."""
    rng = random.Random(12)
    for make in (_replica_set, _pod):
        for both in BOTH_SIDES:
            for n in range(6):
                old = make(n)
                if both is not None:
                    both(old)
                new = copy.deepcopy(old)
                picked = rng.sample(CHANGES, rng.randint(1, 3)) if n else []
                for change in picked:
                    change(new)
                if n % 2:  # share what the changes left alone
                    new = {k: (old[k] if k in old and old[k] == new[k] and k != "status"
                               else v) for k, v in new.items()}
                name = "+".join(c.__name__.strip("_") for c in picked) or "unchanged"
                yield (f"{old['kind']}-{both.__name__.strip('_') if both else 'plain'}-"
                       f"{n}-{name}", old, new)


CASES = list(_cases())


@contextmanager
def _way(way: str) -> Iterator[None]:
    """Run ``fieldcompare`` one way: ``fast`` (nothing remembered), ``warm`` (as left by
    the run before), ``reencode`` (``_check_shared`` not handed the text: as before), or
    ``walk`` (no fast path)."""
    same = fc._same
    if way != "warm":
        fc._TYPABLE.clear()
    if way == "reencode":
        fc._same = lambda lhs, rhs: None if same(lhs, rhs) is None else fc._UNWRITTEN
    elif way == "walk":
        fc._same = lambda lhs, rhs: None
    try:
        yield
    finally:
        fc._same = same
        if way != "fast":
            fc._TYPABLE.clear()


WAYS = ("fast", "warm", "reencode", "walk")


def _compared(schema: Schema, old: Obj, new: Obj) -> Any:
    try:
        c = compare(schema, copy.deepcopy(old), copy.deepcopy(new))
    except SchemaError as e:
        return ("SchemaError", str(e))
    return (c.added, c.modified, c.removed)


def _tracked(schema: Schema, old: Obj, new: Obj, subresource: str) -> Any:
    """``new`` after a write by a second manager over one by a first: the managed fields."""
    stored = copy.deepcopy(old)
    stored["metadata"].pop("managedFields", None)
    update_managed_fields(schema, None, stored, manager="creator",
                          api_version=stored["apiVersion"], now=NOW)
    written = copy.deepcopy(new)
    written["metadata"]["managedFields"] = copy.deepcopy(
        stored["metadata"].get("managedFields"))
    reset = ["spec"] if subresource else ["status"]
    update_managed_fields(schema, stored, written, manager="writer",
                          api_version=written["apiVersion"], now=LATER,
                          subresource=subresource, reset_fields=reset)
    return written["metadata"].get("managedFields")


def _schema_of(obj: Obj) -> Schema:
    return (_schema("apps", "v1", "ReplicaSet") if obj["kind"] == "ReplicaSet"
            else _schema("", "v1", "Pod"))


def test_the_spread_covers_both_answers() -> None:
    """The cases reach both a typed comparison and an object that does not type."""
    answers = [_compared(_schema_of(old), old, new) for _, old, new in CASES]
    assert any(a[0] == "SchemaError" for a in answers)
    assert sum(a[0] != "SchemaError" for a in answers) > len(answers) // 2


@pytest.mark.parametrize(("case", "old", "new"), CASES, ids=[c[0] for c in CASES])
def test_compare_finds_what_the_plain_walk_finds(case: str, old: Obj, new: Obj) -> None:
    schema = _schema_of(old)
    got = {}
    for way in WAYS:
        with _way(way):
            got[way] = _compared(schema, old, new)
    assert got["fast"] == got["walk"], case
    assert got["warm"] == got["walk"], case
    assert got["reencode"] == got["walk"], case


@pytest.mark.parametrize("subresource", ["status", ""])
def test_managed_fields_are_what_the_plain_walk_gives(subresource: str) -> None:
    """Status writes (``/status``, the spec reset) and main-resource writes (status reset)
    over the whole spread: every entry, its fieldsV1 and its times, or none at all."""
    for case, old, new in CASES:
        schema = _schema_of(old)
        got = {}
        for way in WAYS:
            with _way(way):
                got[way] = _tracked(schema, old, new, subresource)
        assert got["fast"] == got["walk"], case
        assert got["warm"] == got["walk"], case
        assert got["reencode"] == got["walk"], case


def test_same_hands_on_the_text_it_wrote_only_for_unchanged_values() -> None:
    a = {"x": [1, {"y": True}]}
    assert fc._same(a, {"x": [1, {"y": True}]}) == b'{"x":[1,{"y":true}]}'
    assert fc._same(a, {"x": [1, {"y": 1}]}) is None
    assert fc._same(a, {"x": [1.0, {"y": True}]}) is None
    assert fc._same(a, a) == fc._UNWRITTEN
    assert fc._same({"n": 2 ** 70}, {"n": 2 ** 70}) is None
