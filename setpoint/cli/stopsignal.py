"""SIGINT and SIGTERM as a request to stop, from the first moment of a command's start.

A Go program registers its handler before it does anything else (``signal.NotifyContext``;
kube-apiserver's ``SetupSignalContext`` in k8s.io/apiserver pkg/server/signal.go), so that a
signal during its start is never lost: the start runs under a context the signal cancels.
``asyncio``'s ``loop.add_signal_handler`` can only be installed once the event loop runs,
after the imports and, in ``cluster up``, after the workloads' child is spawned; until then
Python's default SIGINT handler raised ``KeyboardInterrupt`` wherever the start was (or,
once ``asyncio.Runner`` ran, cancelled the main task, which a start may swallow), and
SIGTERM killed the command outright, its child left to notice alone.

:class:`StopSignal` is installed first thing, with plain ``signal.signal`` (which works with
or without a loop: asyncio and uvloop both run Python-level handlers promptly); it records
the signal, and once a loop is bound (:meth:`StopSignal.event`) also sets an
``asyncio.Event`` on it. Installed, it also keeps ``asyncio.Runner`` from installing its own
SIGINT handler (it does so only over Python's default one).
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a loop runs: ``cluster up`` installs this before that
    import asyncio

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal:
    """The first SIGINT or SIGTERM, recorded from :meth:`install` on."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def install(self) -> None:
        for sig in SIGNALS:
            signal.signal(sig, self._handle)

    @property
    def requested(self) -> bool:
        """A signal has come (checked synchronously, between the start's steps)."""
        return self.received is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        loop, event = self._loop, self._event
        if loop is not None and event is not None and not loop.is_closed():
            # a Python signal handler runs between two bytecodes of the main thread,
            # perhaps inside the loop's own code: hand the event to the loop
            loop.call_soon_threadsafe(event.set)

    def event(self) -> asyncio.Event:
        """An event of the running loop, set by a signal that came or comes."""
        import asyncio

        event = asyncio.Event()
        # in this order: a signal between two of these lines is either seen below or
        # handed to the loop by the handler
        self._event = event
        self._loop = asyncio.get_running_loop()
        if self.received is not None:
            event.set()
        return event
