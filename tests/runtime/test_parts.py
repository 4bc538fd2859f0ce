"""The small parts alone: predicates, handlers, conditions, diffs, owner references."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import pytest

from setpoint import Controller, Result
from setpoint.runtime import (
    AnnotationsChanged,
    EventSource,
    GenerationChanged,
    LabelsChanged,
    Request,
    ResourceVersionChanged,
)
from setpoint.runtime._conditions import find_condition, remove_condition, set_condition
from setpoint.runtime._diff import apply_merge_patch, contains, merge_patch
from setpoint.runtime._handlers import (
    EnqueueForObject,
    EnqueueForOwner,
    map_to_owner_by_label,
)
from setpoint.runtime._ownership import AlreadyOwnedError, set_owner_reference


def obj(name: str = "o", **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", **metadata}}


def test_generation_changed_ignores_status_and_metadata_only_updates() -> None:
    p = GenerationChanged()
    assert p.update(obj(generation=1, resourceVersion="1"), obj(generation=2))
    assert not p.update(obj(generation=1, labels={"a": "1"}), obj(generation=1))


def test_label_annotation_and_version_predicates() -> None:
    assert LabelsChanged().update(obj(labels={"a": "1"}), obj(labels={"a": "2"}))
    assert not LabelsChanged().update(obj(labels={"a": "1"}), obj(labels={"a": "1"}))
    assert AnnotationsChanged().update(obj(), obj(annotations={"x": "y"}))
    assert not ResourceVersionChanged().update(obj(resourceVersion="5"),
                                               obj(resourceVersion="5"))


def test_predicates_combine_with_operators() -> None:
    either = GenerationChanged() | LabelsChanged()
    both = GenerationChanged() & LabelsChanged()
    old, new = obj(generation=1), obj(generation=1, labels={"a": "b"})
    assert either.update(old, new)
    assert not both.update(old, new)
    assert (~GenerationChanged()).update(old, new)


def test_owner_handler_maps_only_the_controller_owner_of_the_right_kind() -> None:
    child = obj(ownerReferences=[
        {"apiVersion": "bench.setpoint.dev/v2", "kind": "Widget", "name": "w", "uid": "1",
         "controller": True},
        {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget", "name": "other", "uid": "2"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "3",
         "controller": True},
    ])
    from setpoint.client import Kind

    handler = EnqueueForOwner(Kind("bench.setpoint.dev/v1", "Widget"))
    assert list(handler.requests(child)) == [Request("ns", "w")]
    every = EnqueueForOwner(Kind("bench.setpoint.dev/v1", "Widget"), only_controller=False)
    assert set(every.requests(child)) == {Request("ns", "w"), Request("ns", "other")}


def test_binding_applies_predicates_and_maps_updates_of_both_versions() -> None:
    seen: list[Request] = []
    binding = EventSource(EnqueueForObject(), [GenerationChanged()], seen.append)
    binding.on_update(obj(generation=1), obj(generation=1))
    assert seen == []
    binding.on_update(obj(generation=1), obj(generation=2))
    assert seen == [Request("ns", "o")]

    moved: list[Request] = []
    by_label = EventSource(_mapped("app"), [], moved.append)
    by_label.on_update(obj(labels={"app": "a"}), obj(labels={"app": "b"}))
    assert set(moved) == {Request("ns", "a"), Request("ns", "b")}


def _mapped(label: str) -> Any:
    from setpoint.runtime._handlers import EnqueueMapped

    return EnqueueMapped(map_to_owner_by_label(label))


def test_condition_transition_time_moves_only_when_status_changes() -> None:
    ticks = iter(["t1", "t2", "t3"])
    conditions: list[dict[str, Any]] = []
    assert set_condition(conditions, "Ready", False, reason="Starting", clock=lambda: next(ticks))
    assert conditions[0]["lastTransitionTime"] == "t1"
    assert set_condition(conditions, "Ready", False, reason="Waiting", observed_generation=2,
                         clock=lambda: next(ticks))
    assert conditions[0]["lastTransitionTime"] == "t1"
    assert conditions[0]["observedGeneration"] == 2
    assert not set_condition(conditions, "Ready", "False", reason="Waiting",
                             observed_generation=2, clock=lambda: next(ticks))
    assert set_condition(conditions, "Ready", True, reason="Up", clock=lambda: next(ticks))
    assert find_condition(conditions, "Ready") == {
        "type": "Ready", "status": "True", "lastTransitionTime": "t2", "reason": "Up",
        "message": "", "observedGeneration": 2}
    assert remove_condition(conditions, "Ready") and conditions == []
    with pytest.raises(ValueError):
        set_condition(conditions, "Ready", "Maybe", reason="X")


def test_contains_tolerates_server_defaults_but_not_differences() -> None:
    live = {"spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}],
                     "replicas": 1}, "metadata": {"name": "n", "uid": "u"}}
    assert contains(live, {"spec": {"containers": [{"name": "a", "image": "x"}]}})
    assert not contains(live, {"spec": {"containers": [{"name": "a", "image": "y"}]}})
    assert not contains(live, {"spec": {"replicas": True}})
    assert contains(live, {"spec": {"paused": None}})


def test_merge_patch_round_trips() -> None:
    live = {"ready": False, "old": 1, "nested": {"a": 1, "b": 2}}
    desired = {"ready": True, "nested": {"a": 1}}
    patch = merge_patch(live, desired)
    assert patch == {"ready": True, "old": None, "nested": {"b": None}}
    assert apply_merge_patch(live, patch) == desired
    assert merge_patch(desired, desired) == {}


def test_controller_owner_reference_is_set_once_and_guarded() -> None:
    owner = {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
             "metadata": {"name": "w", "namespace": "ns", "uid": "u1"}}
    child = obj()
    set_owner_reference(owner, child)
    set_owner_reference(owner, child)
    assert child["metadata"]["ownerReferences"] == [{
        "apiVersion": "bench.setpoint.dev/v1", "kind": "Widget", "name": "w", "uid": "u1",
        "controller": True, "blockOwnerDeletion": True}]
    other = {**owner, "metadata": {"name": "x", "namespace": "ns", "uid": "u2"}}
    with pytest.raises(AlreadyOwnedError):
        set_owner_reference(other, child)
    elsewhere = {**owner, "metadata": {"name": "w", "namespace": "other", "uid": "u3"}}
    with pytest.raises(ValueError):
        set_owner_reference(elsewhere, obj())


def test_builder_reads_like_the_sentence() -> None:
    from setpoint.client import Kind

    pod, sts = Kind("v1", "Pod"), Kind("apps/v1", "StatefulSet")
    memcached = Kind("cache.setpoint.dev/v1", "Memcached")
    ctrl = (Controller.for_(memcached).owns(sts)
            .watches(pod, map_to_owner_by_label="app.kubernetes.io/instance"))

    @ctrl.reconcile
    async def reconcile(ctx: Any, mc: Any) -> Result:
        return Result()

    assert ctrl.name == "memcached"
    assert [s.role for s in ctrl.watch_specs] == ["for", "owns", "watches"]
    assert ctrl.kinds() == [memcached, sts, pod]
    with pytest.raises(ValueError):
        ctrl.reconcile(reconcile)
    with pytest.raises(ValueError):
        ctrl.watches(pod)


def test_result_requeue_is_deprecated_as_in_controller_runtime() -> None:
    """controller-runtime pkg/reconcile/reconcile.go: ``Result.Requeue`` is "Deprecated: Use
    `RequeueAfter` instead"; Setpoint's ``Result(requeue=True)`` warns the same way."""
    with pytest.warns(DeprecationWarning, match="requeue_after"):
        assert Result(requeue=True).requeue
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Result(requeue_after=1.5).requeue_after == 1.5


def test_the_top_level_names_are_one_list() -> None:
    """``setpoint.__all__`` is made from its one list; the imports type checkers read name
    the same names, and each resolves to the public package's own object."""
    import ast
    import inspect

    import setpoint

    tree = ast.parse(inspect.getsource(setpoint))
    typed = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module != "__future__"
             and node.module != "typing" and node.module != "setpoint._lazy"
             for alias in node.names}
    assert typed == set(setpoint.__all__) - {"__version__"}
    for name in typed:
        assert getattr(setpoint, name) is getattr(
            importlib.import_module(setpoint._EXPORTS[name]), name)


def test_identity_of_a_typed_object_is_that_of_its_wire_dict() -> None:
    from examples.widget.api import Widget
    from setpoint.resources.models.core_v1 import ConfigMap, Namespace
    from setpoint.runtime._objects import KindKey, as_dict, identity

    objs: list[Any] = [
        ConfigMap(name="c", namespace="n"), ConfigMap(name="c"), Namespace(name="ns"),
        Widget.model_validate({"metadata": {"name": "w", "namespace": "d"},
                               "spec": {"message": "m", "size": 1}}),
    ]
    for obj in objs:
        for _ in range(2):  # the second from what is kept for the class
            assert identity(obj) == identity(as_dict(obj))
    assert identity(objs[0]) == (KindKey("v1", "ConfigMap"), "n", "c")
    assert identity({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}) \
        == (KindKey("v1", "ConfigMap"), "", "c")
