"""A write's watch event that arrives before the write's answer is still known as its echo.

Under load the watch event of a status write often reaches the informer before the HTTP
answer of that write has been read. The informer stores the event at once (reads see it),
but holds its dispatch to the handlers until the write's answer, failure or cancellation
is known: the exact echo is then an own write (the reconcile that made it is not queued
again), anything else is dispatched as it would have been, so no change is ever lost
(controller-runtime's contract, pkg/reconcile/reconcile.go: "Reconciliation is
level-based"; client-go's reflector hands out each watch event once,
tools/cache/reflector.go).

The race is made deterministic, not hoped for: the manager's transport keeps the answer
of each Widget status write from the Writer until the informer's store holds that answer's
resourceVersion, i.e. until its watch event has been received and stored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest

from setpoint.client import Client, TransportError
from setpoint.client.transport import Response
from setpoint.cluster import RunningCluster
from setpoint.runtime import Context, Controller, Manager, Result
from setpoint.runtime._informer import Informer
from setpoint.runtime._objects import kind_key, resource_version_of
from tests.runtime.conftest import CONFIGMAP, WIDGET, make_manager, widget
from tests.runtime.widgets import Widget
from tests.waiting import quiet_period, wait_for

pytestmark = pytest.mark.usefixtures("widgets_crd")

Then = Callable[[Any], Awaitable[None]]


class EventBeforeAnswer:
    """Wraps the manager's transport: the answer of a Widget status write reaches the
    Writer only once the watch event of that write is in the informer's store; ``then``
    runs after that (with the answer) and may raise, as a lost answer would."""

    def __init__(self, manager: Manager, then: Then | None = None) -> None:
        self.store = manager.cache.store_for(kind_key(WIDGET), create=True)
        self.then = then
        self.held = 0
        transport = manager.client.transport
        self._request = transport.request
        transport.request = self  # type: ignore[method-assign]

    async def __call__(self, method: str, path: str, **kw: Any) -> Response:
        resp = await self._request(method, path, **kw)
        if method != "PATCH" or not path.startswith("/apis/bench.setpoint.dev/") or \
                not path.endswith("/status"):
            return resp
        answer = orjson.loads(resp.body)
        rv = int(resource_version_of(answer))
        key = f"{answer['metadata']['namespace']}/{answer['metadata']['name']}"

        def event_stored() -> bool:
            cached = self.store.get(key)
            return cached is not None and int(resource_version_of(cached)) >= rv

        await wait_for(event_stored)
        self.held += 1
        if self.then is not None:
            await self.then(answer)
        return resp


class Reconciles:
    """A Widget controller that writes the status once per generation and counts its
    reconciles (the messages it saw, in order)."""

    def __init__(self, name: str = "widget") -> None:
        self.seen: list[str] = []
        self.controller: Controller[Widget] = Controller.for_(Widget, name=name)

        @self.controller.reconcile
        async def reconcile(ctx: Context[Widget], obj: Widget) -> Result:
            self.seen.append(obj.spec.message)
            await ctx.patch_status({"ready": True,
                                    "observedGeneration": obj.metadata.generation})
            return Result()


class Watcher:
    """A second controller that only reads: it hears every change of a Widget."""

    def __init__(self) -> None:
        self.ready_seen = asyncio.Event()
        self.controller: Controller[Widget] = Controller.for_(Widget, name="watcher")

        @self.controller.reconcile
        async def reconcile(ctx: Context[Widget], obj: Widget) -> Result:
            if obj.status.ready:
                self.ready_seen.set()
            return Result()


async def observed(client: Client, generation: int) -> bool:
    w = await client.get(WIDGET, "w", namespace="default")
    return (w.get("status") or {}).get("observedGeneration") == generation


async def test_an_echo_arriving_before_its_answer_does_not_requeue_its_reconcile(
        cluster: RunningCluster, client: Client) -> None:
    reconciles = Reconciles()
    manager = make_manager(cluster, [reconciles.controller])
    race = EventBeforeAnswer(manager)
    async with manager.running():
        await client.create(widget("w", message="one"))
        await wait_for(lambda: observed(client, 1))
        await wait_for(lambda: race.held == 1)
        await quiet_period()  # a requeue for the echo would reconcile again meanwhile
        assert reconciles.seen == ["one"]


async def test_an_outside_change_while_a_write_is_in_flight_is_reconciled(
        cluster: RunningCluster, client: Client) -> None:
    """The user's change lands after the echo and before the answer: its event is held
    with the echo's, then dispatched as the change it is."""
    reconciles = Reconciles()
    manager = make_manager(cluster, [reconciles.controller])

    async def change_spec(answer: Any) -> None:
        if answer["spec"]["message"] != "one":
            return
        changed = await client.patch(WIDGET, "w", {"spec": {"message": "two"}},
                                     namespace="default")
        rv = int(resource_version_of(changed))
        await wait_for(lambda: int(resource_version_of(race.store.get("default/w") or {
            "metadata": {"resourceVersion": "0"}})) >= rv)

    race = EventBeforeAnswer(manager, change_spec)
    async with manager.running():
        await client.create(widget("w", message="one"))
        await wait_for(lambda: observed(client, 2))
        await quiet_period()
        assert reconciles.seen == ["one", "two"]


@pytest.mark.parametrize("outcome", ["failed", "cancelled"])
async def test_a_write_that_fails_or_is_cancelled_releases_the_held_event(
        cluster: RunningCluster, client: Client, outcome: str) -> None:
    """The answer is lost after the server applied the write (or the reconcile is
    cancelled by its timeout while waiting for it): the held event is dispatched as any
    change, so another controller hears of the new status."""
    reconciles, watcher = Reconciles(), Watcher()
    reconciles.controller.with_options(reconcile_timeout=3.0)
    manager = make_manager(cluster, [reconciles.controller, watcher.controller])
    first = True

    async def lose_the_answer(answer: Any) -> None:
        nonlocal first
        if not first:
            return
        first = False
        if outcome == "failed":
            raise TransportError("the answer was lost (test)")
        await asyncio.Event().wait()  # until the reconcile timeout cancels the write

    race = EventBeforeAnswer(manager, lose_the_answer)
    async with manager.running():
        await client.create(widget("w", message="one"))
        await wait_for(lambda: race.held >= 1)
        # well within the hold's own bound (the transport's timeout, 30 s)
        await asyncio.wait_for(watcher.ready_seen.wait(), timeout=15.0)
        assert reconciles.seen[0] == "one"


async def test_an_object_deleted_while_a_write_is_in_flight_stays_deleted_in_the_cache(
        cluster: RunningCluster, client: Client) -> None:
    """The deletion's event comes before the status write's answer: the answer, older than
    the deletion, must not put the object back into the cache (where every later read
    would find a Widget the server no longer has)."""
    reconciles, watcher = Reconciles(), Watcher()
    manager = make_manager(cluster, [reconciles.controller, watcher.controller])

    async def delete_it(answer: Any) -> None:
        await client.delete(WIDGET, "w", namespace="default")
        await wait_for(lambda: race.store.get("default/w") is None)

    race = EventBeforeAnswer(manager, delete_it)
    async with manager.running():
        await client.create(widget("w", message="one"))
        await wait_for(lambda: race.held == 1)
        await quiet_period()
        assert race.store.get("default/w") is None


# -- the informer alone: every held event comes out, once -----------------------------------


class Heard:
    def __init__(self, name: str) -> None:
        self.name = name
        self.events: list[str] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == self.name:
            self.events.append("add")

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if new["metadata"]["name"] == self.name:
            self.events.append("update")

    def on_delete(self, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == self.name:
            self.events.append("delete")


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {}}


@contextlib.asynccontextmanager
async def running_informer(client: Client, name: str) -> AsyncIterator[tuple[Informer, Heard]]:
    """A synced ConfigMap informer with a handler that hears the events of ``name``."""
    informer = Informer(client, CONFIGMAP, namespace="default")
    heard = Heard(name)
    informer.add_handler(heard)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 30)
        yield informer, heard
    finally:
        task.cancel()


async def test_a_held_event_is_released_at_the_writes_time_limit(client: Client) -> None:
    """A write that never ends (its writer stuck) holds its object's events only for the
    time limit it announced."""
    async with running_informer(client, "held") as (informer, heard):
        informer.begin_write("default/held", 0.5)
        await client.create(config_map("held"))
        await wait_for(lambda: heard.events == ["add"])
        informer.end_write("default/held")
        assert heard.events == ["add"]


async def test_a_relist_while_a_write_is_in_flight_first_releases_the_held_events(
        client: Client) -> None:
    """The events held before a relist are handed out before what the list finds, once
    (client-go's reflector replaces the store after a 410 Gone: tools/cache/reflector.go)."""
    async with running_informer(client, "relisted") as (informer, heard):
        informer.begin_write("default/relisted", 60.0)
        await client.create(config_map("relisted"))
        await wait_for(lambda: "default/relisted" in informer.store)
        await informer._list()  # as after a 410 Gone, the write still in flight
        assert heard.events == ["add"]
        informer.end_write("default/relisted")
        assert heard.events == ["add"]
