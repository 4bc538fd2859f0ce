"""One task per connection runs its requests, each in a context of its own.

uvicorn starts an asyncio task per request. In Python 3.11 every task is added to
``asyncio.tasks._all_tasks``, a ``WeakSet`` written in Python, and taken out again by a
weak-reference callback when it is freed: with the done callback that forgets it, that was
10-14 % of the server's CPU per GET (docs/benchmarks.md, ninth and eleventh passes). HTTP/1.1
answers a connection's requests one at a time anyway (a pipelined request waits for the
answer before it), so one task per connection, made at its first request and kept while it
is open, runs them in turn. When it is idle, a new request's first step is run at once, as
that task (``asyncio.tasks._enter_task``, as Python 3.12's eager tasks run a new task's first
step): one answered without waiting (a GET served from memory) costs no trip through the
event loop; one that waits is handed to the task, which drives it from there.

What a request sees is unchanged: it runs inside a task (``asyncio.current_task()``, timeouts
and cancellation work as before: what the task is woken with is passed on to the request,
as ``await`` passes it, PEP 380), in a copy of the context current where uvicorn would have
created its task (``Context.run`` around each step), so context variables set by one request
are never seen by the next. While a request runs, the task is in the server's task set
(uvicorn's ``server_state.tasks``), which the server's shutdown waits for and cancels.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
from asyncio.tasks import _enter_task, _leave_task  # (C functions; asyncio's own API)
from collections.abc import Coroutine, Generator
from typing import Any

Run = Coroutine[Any, Any, None]


class RequestRunner:
    """The requests of one connection, run one after the other by one task."""

    __slots__ = ("_closed", "_handed", "_loop", "_queued", "_tasks", "_transport", "_wakeup",
                 "_worker")

    def __init__(self, loop: asyncio.AbstractEventLoop, tasks: set[asyncio.Task[None]],
                 transport: asyncio.BaseTransport) -> None:
        self._loop = loop
        self._tasks = tasks  # the server's: those serving a request now
        self._transport = transport
        self._queued: collections.deque[tuple[Run, contextvars.Context]] = collections.deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._worker: asyncio.Task[None] | None = None
        # a request that waited in its first step, run at once: the task drives it next
        self._handed: tuple[Run, contextvars.Context, Any] | None = None
        self._closed = False

    def start(self, run: Run, context: contextvars.Context) -> None:
        """Run ``run`` (uvicorn's ``RequestResponseCycle.run_asgi``) in ``context``, after
        the requests started before it."""
        worker, wakeup = self._worker, self._wakeup
        if worker is not None and wakeup is not None and not wakeup.done() \
                and not self._queued:
            # the task is idle: the first step now, as the task (its timeouts and
            # cancellations reach the request, as ever)
            loop = self._loop
            try:
                _enter_task(loop, worker)
            except RuntimeError:  # (inside another task: never from uvicorn's callbacks)
                pass
            else:
                try:
                    waiting_on = context.run(run.send, None)
                except StopIteration:
                    return  # answered without waiting: most GETs
                finally:
                    _leave_task(loop, worker)
                self._tasks.add(worker)  # (serving a request from now on)
                self._handed = (run, context, waiting_on)
                wakeup.set_result(None)
                return
        self._queued.append((run, context))
        if worker is None:
            self._worker = self._loop.create_task(self._serve())
        else:
            self._wake()

    def connection_lost(self) -> None:
        """The connection is gone: the task ends once it has nothing left to run."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    async def _serve(self) -> None:
        queued, tasks = self._queued, self._tasks
        me = asyncio.current_task()
        assert me is not None
        try:
            while True:
                handed = self._handed
                if handed is not None:
                    self._handed = None
                    try:
                        await _Stepped(*handed)
                    finally:
                        tasks.discard(me)
                    continue
                if not queued:
                    if self._closed or self._transport.is_closing():
                        return
                    wakeup = self._wakeup = self._loop.create_future()
                    try:
                        await wakeup
                    except asyncio.CancelledError as exc:
                        handed = self._handed
                        if handed is None:
                            raise
                        # meant for the request handed over before the task woke
                        self._handed = None
                        self._wakeup = None
                        try:
                            await _Stepped(*handed, thrown=exc)
                        finally:
                            tasks.discard(me)
                        continue
                    self._wakeup = None
                    continue
                run, context = queued.popleft()
                tasks.add(me)
                try:
                    try:
                        waiting_on = context.run(run.send, None)
                    except StopIteration:
                        continue  # answered without waiting: most GETs
                    await _Stepped(run, context, waiting_on)
                finally:
                    tasks.discard(me)
        finally:
            self._worker = None
            self._wakeup = None
            if self._handed is not None:
                self._handed[0].close()
                self._handed = None
            for run, _ in queued:  # (cancelled with requests still queued: never started)
                run.close()
            queued.clear()


class _Stepped:
    """A coroutine that already ran up to its first wait, driven on in its own context:
    what it waits on goes to the task, and the task's wake-ups (a value, or an exception
    such as a timeout's cancellation) are passed on to it, as ``await`` would."""

    __slots__ = ("context", "coroutine", "thrown", "waiting_on")

    def __init__(self, coroutine: Run, context: contextvars.Context, waiting_on: Any,
                 thrown: BaseException | None = None) -> None:
        self.coroutine = coroutine
        self.context = context
        self.waiting_on = waiting_on
        self.thrown = thrown  # a cancellation that came before the task drove it

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, step, waiting_on = self.coroutine, self.context.run, self.waiting_on
        # as Task.cancel: the future waited on is cancelled, and its cancellation wakes the
        # request; what waits on no future is thrown the cancellation
        if self.thrown is not None and not (isinstance(waiting_on, asyncio.Future)
                                            and waiting_on.cancel()):
            try:
                waiting_on = step(coroutine.throw, self.thrown)
            except StopIteration:
                return
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # (thrown in by the task, a cancellation too)
                try:
                    waiting_on = step(coroutine.throw, exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = step(coroutine.send, sent)
                except StopIteration:
                    return
