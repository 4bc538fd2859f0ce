"""How much typed decoding, encoding and copying one reconcile of the Widget example costs.

A reconcile's objects are dicts in the cache and typed models only at the edge
(``setpoint/runtime/_objects.py``): every ``model_validate`` is a decode, every
``model_dump`` an encode (whole or in part) and every ``clone`` a deep copy. The counts
are of the whole operator process, from the change to the Widget until it is reconciled
and quiet, so a copy made outside the reconcile (informer, cache, writer) counts too.

    .venv/bin/pytest -q -s tests/runtime/test_reconcile_work.py     # prints the counts
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from examples.widget.api import Widget
from examples.widget.operator import widgets
from setpoint.client import Client, Kind
from setpoint.resources import _model
from setpoint.resources._model import Model
from setpoint.runtime import _objects
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter

WIDGET = Kind("bench.setpoint.dev/v1", "Widget")


@contextlib.contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count typed decodes, typed encodes and deep copies made anywhere in the runtime."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _patched(monkeypatch)


def _patched(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    dump = Model.model_dump
    # the classmethod's function, to call with the class the patched one is called with
    validate: Callable[..., Model] = inspect.getattr_static(Model, "model_validate").__func__

    def counted_dump(self: Model, **options: Any) -> dict[str, Any]:
        counts["encode"] += 1
        return dump(self, **options)

    def counted_validate(cls: type[Model], /, data: Any, **options: Any) -> Model:
        counts["decode"] += 1
        return validate(cls, data, **options)

    status_dump = _model.status_only_dump

    def counted_status_dump(obj: Any) -> dict[str, Any] | None:
        dumped = status_dump(obj)
        if dumped is not None:  # the status model's own dump, not model_dump's
            counts["encode"] += 1
        return dumped

    monkeypatch.setattr(Model, "model_dump", counted_dump)
    monkeypatch.setattr(Model, "model_validate", classmethod(counted_validate))
    monkeypatch.setattr(_model, "status_only_dump", counted_status_dump)
    # decode asks pydantic's validator at once only for classes whose model_validate is
    # pydantic's own, as it found them: found again, the counting one is called
    monkeypatch.setattr(_objects, "_PLAIN_VALIDATION", {})
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("setpoint.runtime"):
            continue
        clone = getattr(module, "clone", None)
        if callable(clone) and getattr(clone, "__module__", "").startswith("setpoint.runtime"):
            monkeypatch.setattr(module, "clone", _counted(clone, counts))
    return counts


def _counted(clone: Callable[[Any], Any], counts: Counter[str]) -> Callable[[Any], Any]:
    def counted(data: Any) -> Any:
        counts["copy"] += 1
        return clone(data)
    return counted


async def test_one_widget_reconcile_encodes_once_per_write_and_leaves_its_answers_unread(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, monkeypatch: pytest.MonkeyPatch) -> None:
    await setpoint_cluster.install(Widget)
    reconciles: list[str] = []
    reconcile = widgets.reconcile_func
    assert reconcile is not None

    async def counted_reconcile(ctx: Any, widget: Any) -> Any:
        reconciles.append(widget.metadata.name)
        return await reconcile(ctx, widget)

    monkeypatch.setattr(widgets, "reconcile_func", counted_reconcile)
    runner = await run_manager(widgets)
    assert runner.manager is not None
    running = runner.manager.running_controllers[0]

    def idle() -> bool:
        return len(running.queue) == 0 and running.queue.processing == 0

    phases: dict[str, Counter[str]] = {}
    # the test's own reads and writes are dicts: only the operator's work is counted
    with counting() as created:
        await k8s.create({"apiVersion": WIDGET.api_version, "kind": "Widget",
                          "metadata": {"name": "w"}, "spec": {"message": "one"}})
        await wait_for(WIDGET, "w", lambda w: (w.get("status") or {}).get("ready"))
        await wait_for(idle)
        phases["create"] = Counter(created)
    with counting() as changed:
        await k8s.patch(WIDGET, "w", {"spec": {"message": "two"}})
        await wait_for(WIDGET, "w", lambda w: w["status"].get("observedGeneration") == 2)
        await wait_for(idle)
        phases["change"] = Counter(changed)

    print()
    for phase, counts in phases.items():
        print(f"{phase}: decode={counts['decode']} "
              f"encode={counts['encode']} copy={counts['copy']}")
    assert reconciles == ["w", "w"]  # one reconcile per change: own writes do not echo
    for phase, counts in phases.items():
        # one decode of the Widget, one of the ConfigMap to mutate when it exists, none of
        # the writes' answers the reconcile drops (validated when first read:
        # setpoint/client/answers.py); one encode per write; a copy under each decode of
        # the cache
        assert counts["decode"] == {"create": 1, "change": 2}[phase], counts
        assert counts["encode"] <= 2, counts
        assert counts["copy"] <= 2, counts
