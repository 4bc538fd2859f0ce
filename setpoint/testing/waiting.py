"""Waiting for a condition instead of sleeping.

    await wait_for(lambda: len(runner.manager.cache.list(ConfigMap)) == 3)
    await wait_for_object(client, Widget, "w", lambda w: w.status.ready)
    await wait_for_object(client, ConfigMap, "w-cfg", gone=True)

Conditions on one object follow the object with a watch, so they are checked on every
change and on nothing else. Any other condition (a plain or async callable) is polled with
a short, growing interval. A condition that raises ``AssertionError`` counts as not met yet
(so ``assert`` statements work as conditions). On timeout :class:`WaitTimeout` says what
was awaited and shows the last state seen.
"""

from __future__ import annotations

import asyncio
import inspect
import pprint
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from setpoint.client import Client, GoneError, ResourceRef

T = TypeVar("T")

_NOT_SEEN = object()


class WaitTimeout(AssertionError):
    """A condition was not met in time; the message shows the last state seen."""


def describe(condition: Callable[..., Any]) -> str:
    """``name (file:line)`` of a callable, for failure messages."""
    name = getattr(condition, "__qualname__", None) or repr(condition)
    code = getattr(condition, "__code__", None)
    if code is not None:
        return f"{name} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"
    return name


def _shown(value: Any) -> str:
    if value is _NOT_SEEN:
        return "nothing (the condition was never evaluated)"
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            value = dump(by_alias=True, exclude_none=True)
        except TypeError:
            value = dump()
    return pprint.pformat(value, width=100, sort_dicts=False)


async def _evaluate(condition: Callable[..., Any], *args: Any) -> tuple[Any, str | None]:
    """(value, failed assertion message) of one evaluation."""
    try:
        value = condition(*args)
        if inspect.isawaitable(value):
            value = await value
    except AssertionError as exc:
        return False, str(exc) or "assertion failed"
    return value, None


async def wait_for(condition: Callable[[], Any | Awaitable[Any]], *, timeout: float = 10.0,
                   message: str = "", max_interval: float = 0.1) -> Any:
    """Wait until ``condition()`` (sync or async) returns something truthy; return it.

    The condition is checked at once, then at intervals growing from 5 ms to
    ``max_interval`` (raise it for conditions that are costly to evaluate). Raises
    :class:`WaitTimeout` after ``timeout`` seconds, showing the last value the condition
    returned (or the last assertion it failed).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    interval = 0.005
    last: Any = _NOT_SEEN
    last_assertion: str | None = None
    while True:
        value, last_assertion = await _evaluate(condition)
        if last_assertion is None and value:
            return value
        last = value
        remaining = deadline - loop.time()
        if remaining <= 0:
            seen = f"last assertion: {last_assertion}" if last_assertion \
                else f"last value: {_shown(last)}"
            raise WaitTimeout(f"{message or describe(condition)} not met within {timeout}s; "
                              f"{seen}")
        await asyncio.sleep(min(interval, remaining))
        interval = min(interval * 2, max_interval)


async def wait_for_object(
    client: Client, kind: ResourceRef, name: str,
    condition: Callable[[Any], Any | Awaitable[Any]] | None = None, *,
    namespace: str | None = None, gone: bool = False, timeout: float = 10.0,
) -> Any:
    """Wait until object ``name`` of ``kind`` exists and satisfies ``condition`` (just
    exists, without one); with ``gone=True``, until it no longer exists. Returns the
    object (None when waiting for it to go). ``namespace`` defaults to the client's for
    namespaced kinds.

    The object is followed with a watch (re-opened if the server ends it), so the
    condition is checked on each change. Raises :class:`WaitTimeout` showing the last
    state of the object seen.
    """
    info = await client.resolve(kind)
    ns = (namespace or client.namespace) if info.namespaced else None
    where = f"{ns}/{name}" if ns else name
    what = "to be deleted" if gone else (
        f"to satisfy {describe(condition)}" if condition else "to exist")
    state: dict[str, Any] = {"last": _NOT_SEEN, "assertion": None}

    async def check(obj: Any) -> bool:
        state["last"] = obj
        if gone:
            return obj is None
        if obj is None:
            return False
        if condition is None:
            return True
        value, state["assertion"] = await _evaluate(condition, obj)
        return state["assertion"] is None and bool(value)

    async def follow() -> Any:
        resource_version: str | None = None
        while True:
            if resource_version is None:
                # the current state first: a watch from "now" would not say it is absent
                page = await client.list(kind, namespace=ns,
                                         field_selector=f"metadata.name={name}")
                current = page.items[0] if page.items else None
                if await check(current):
                    return current
                resource_version = page.resource_version
            watch = client.watch(kind, namespace=ns, name=name,
                                 resource_version=resource_version, timeout_seconds=60)
            try:
                async with watch:
                    async for event_type, obj in watch:
                        if event_type == "BOOKMARK":
                            continue
                        current = None if event_type == "DELETED" else obj
                        if await check(current):
                            return current
            except GoneError:
                resource_version = None
                continue
            resource_version = watch.resource_version

    try:
        return await asyncio.wait_for(follow(), timeout)
    except TimeoutError:
        last = state["last"]
        seen = "it was never seen" if last is _NOT_SEEN else (
            "it does not exist" if last is None else f"last seen:\n{_shown(last)}")
        if state["assertion"]:
            seen = f"last assertion: {state['assertion']}; {seen}"
        raise WaitTimeout(f"{info.kind} {where}: waited {timeout}s {what}; {seen}") from None
