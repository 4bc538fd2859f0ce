"""Watch streams: newline-delimited JSON events, read as an async iterator.

A :class:`Watch` opens its request on first iteration and yields :class:`WatchEvent`
``(type, object)`` pairs: ``ADDED``, ``MODIFIED``, ``DELETED`` and, when asked for,
``BOOKMARK``. It remembers the last ``resourceVersion`` it saw (bookmarks included) so a
caller can resume from there. An ``ERROR`` event is raised as the exception for its Status,
so an expired resourceVersion surfaces as :class:`~setpoint.client.errors.GoneError`
(``ExpiredError``) and an informer knows to relist.

The stream ends quietly when the server closes it (``timeoutSeconds``) or the connection
drops, as client-go's watcher does: the caller watches again from :attr:`resource_version`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, NamedTuple, TypeVar

import orjson

from setpoint.client.echoes import WriteAnswers
from setpoint.client.errors import ClientError, api_error_from_status
from setpoint.client.http1 import failures
from setpoint.client.transport import StreamResponse

log = logging.getLogger(__name__)

T = TypeVar("T")

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


class WatchEvent(NamedTuple, Generic[T]):
    """One watch event; unpacks as ``(type, object)``.

    ``object`` is decoded to the typed class the watch was opened with, except for
    ``BOOKMARK`` events, whose object is the bare dict the server sent (it carries only
    ``metadata.resourceVersion``), and, only on a watch opened with ``echoes`` (an
    informer's), the :class:`~setpoint.client.echoes.Echo` of a write's answer (not in
    the declared type: no other watch ever hands one out).
    """

    type: str
    object: T | dict[str, Any]


class WatchDecodeError(ClientError):
    """The server sent a line that is not a watch event."""


StreamOpener = Callable[[], AbstractAsyncContextManager[StreamResponse]]


def split_lines(pending: bytearray, chunk: bytes) -> Sequence[bytes]:
    """The whole non-blank lines that ``chunk`` completes after ``pending`` (the bytes of a
    line begun in earlier chunks), which is left holding the unfinished rest.

    The server mostly sends each event in a chunk of its own: that chunk is the line
    (orjson reads past the newline ending it), with no copy through the buffer; a chunk
    without a newline only grows ``pending``, so an object larger than a chunk is copied
    once, when its line ends.
    """
    end = chunk.find(b"\n")
    if end < 0:
        pending += chunk
        return ()
    if not pending and end == len(chunk) - 1:
        return (chunk,) if chunk.strip() else ()
    pending += chunk
    data = bytes(pending)
    pending.clear()
    *lines, rest = data.split(b"\n")
    pending += rest
    return [line for line in lines if line.strip()]


class Watch(Generic[T]):
    """An async iterator of :class:`WatchEvent`, and an async context manager that closes
    the stream.

    ``open_stream`` opens the HTTP response (resolving the resource first if need be);
    ``decode`` turns each object dict into ``T``. With ``answers``, a line whose object is
    one of them comes as its :class:`~setpoint.client.echoes.Echo`, undecoded.
    """

    def __init__(
        self, open_stream: StreamOpener, decode: Callable[[dict[str, Any]], T],
        resource_version: str | None = None, description: str = "",
        answers: WriteAnswers | None = None,
    ) -> None:
        self._open_stream = open_stream
        self._decode = decode
        self._answers = answers
        self._events: AsyncGenerator[WatchEvent[T], None] | None = None
        self._closed = False
        self.resource_version = resource_version
        """The last resourceVersion seen (from the request, events or bookmarks)."""
        self.description = description

    def __repr__(self) -> str:
        return f"Watch({self.description}, resource_version={self.resource_version!r})"

    def __aiter__(self) -> AsyncIterator[WatchEvent[T]]:
        # the events' generator itself, once open: an ``async for`` (an informer's, per
        # event) then steps it without __anext__'s coroutine around each step
        if self._closed:
            return self
        if self._events is None:
            self._events = self._run()
        return self._events

    async def __anext__(self) -> WatchEvent[T]:
        if self._closed:
            raise StopAsyncIteration
        if self._events is None:
            self._events = self._run()
        try:
            return await self._events.__anext__()
        except StopAsyncIteration:
            self._closed = True
            raise

    async def __aenter__(self) -> Watch[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop watching and release the connection; iteration ends."""
        self._closed = True
        if self._events is not None:
            await self._events.aclose()

    async def _run(self) -> AsyncGenerator[WatchEvent[T], None]:
        async with self._open_stream() as resp:
            buffer = bytearray()
            try:
                async for chunk in resp.content.iter_any():
                    for line in split_lines(buffer, chunk):
                        yield self._event(line)
            except Exception as exc:
                if not isinstance(exc, failures()):
                    raise
                log.debug("watch_stream_dropped watch=%r error=%s", self, exc)
                return
            if buffer.strip():
                yield self._event(bytes(buffer))

    def _event(self, line: bytes) -> WatchEvent[T]:
        if self._answers is not None:
            echoed = self._answers.echo(line)
            if echoed is not None:
                self.resource_version = echoed[1].resource_version
                echo: Any = echoed[1]  # no cast(): a Python call per own write's event
                return WatchEvent(echoed[0], echo)
        try:
            doc = orjson.loads(line)
            type_, obj = doc["type"], doc["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise WatchDecodeError(f"invalid watch event {line[:200]!r}: {exc}") from exc
        if type_ == ERROR:
            raise api_error_from_status(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = rv
        if type_ == BOOKMARK:
            return WatchEvent(type_, obj)
        return WatchEvent(type_, self._decode(obj))


def watch_params(name: str | None, resource_version: str | None, label_selector: str | None,
                 field_selector: str | None, timeout_seconds: int | None,
                 allow_bookmarks: bool, send_initial_events: bool,
                 ) -> dict[str, str | int | bool | None]:
    """The query of a watch: ``name`` as a ``metadata.name`` field selector; a streaming
    list (``send_initial_events``) asks for bookmarks and a NotOlderThan match."""
    if name:
        by_name = f"metadata.name={name}"
        field_selector = f"{field_selector},{by_name}" if field_selector else by_name
    params: dict[str, str | int | bool | None] = {
        "watch": True, "resourceVersion": resource_version,
        "labelSelector": label_selector, "fieldSelector": field_selector,
        "timeoutSeconds": timeout_seconds,
        "allowWatchBookmarks": True if allow_bookmarks or send_initial_events else None,
    }
    if send_initial_events:
        params["sendInitialEvents"] = True
        params["resourceVersionMatch"] = "NotOlderThan"
    return params
