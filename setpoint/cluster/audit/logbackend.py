"""The log backend: one JSON audit.k8s.io/v1 Event per line (k8s.io/apiserver
plugin/pkg/audit/log/backend.go, format ``json``), to a file or, for ``-``, standard output.

The file is made as kube-apiserver makes it (pkg/server/options/audit.go
``ensureLogFile``: its directory 0700, the file 0600, appended to). Go writes each event as
the request passes the stage; here a stage only queues the event, and the queue is encoded
and written in one write a short moment later (or when it grows long, and at shutdown), so
that a request pays for a dict copy, not for JSON and a system call. Rotation
(``--audit-log-maxage``/``-maxbackup``/``-maxsize``) is not implemented.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import orjson

from setpoint.cluster.audit.event import micro_time
from setpoint.machinery import gojson

log = logging.getLogger("setpoint.cluster.audit")

FLUSH_DELAY_S = 0.05
FLUSH_EVENTS = 512
# the Event's fields in the order of its Go struct (apis/audit/v1/types.go), as it is written
FIELD_ORDER = ("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
               "impersonatedUser", "sourceIPs", "userAgent", "objectRef", "responseStatus",
               "requestObject", "responseObject", "requestReceivedTimestamp",
               "stageTimestamp", "annotations")
STDOUT = "-"


def _ordered(event: dict[str, Any]) -> dict[str, Any]:
    """The event's fields in Go's order, its timestamps as ``metav1.MicroTime``."""
    out = {k: event[k] for k in FIELD_ORDER if k in event}
    out["requestReceivedTimestamp"] = micro_time(event["requestReceivedTimestamp"])
    out["stageTimestamp"] = micro_time(event["stageTimestamp"])
    return out


class LogBackend:
    """Events queued by :meth:`process`, written by :meth:`flush`."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path == STDOUT:
            self._fd = 1
        else:
            target = Path(path)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fd = os.open(target, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
        self._pending: list[dict[str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._failed = False

    def __repr__(self) -> str:
        return f"LogBackend(path={self.path!r}, pending={len(self._pending)})"

    def process(self, event: dict[str, Any]) -> None:
        """Queue one stage's event (``ProcessEvents``)."""
        self._pending.append(event)
        if len(self._pending) >= FLUSH_EVENTS:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # (no loop: a caller outside the server; write at once)
                self.flush()
                return
            self._timer = loop.call_later(FLUSH_DELAY_S, self.flush)

    def flush(self) -> None:
        """Encode and write what is queued, in one write."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if not pending:
            return
        # one pass of Go's escapes over all the lines: orjson writes no raw newline
        lines = gojson.go_text(b"\n".join(orjson.dumps(_ordered(ev)) for ev in pending)
                               + b"\n")
        try:
            view = memoryview(lines)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            if not self._failed:  # (said once: every later event would say it again)
                log.error("audit_log_write_failed path=%s error=%s", self.path, exc)
            self._failed = True
        else:
            self._failed = False

    def close(self) -> None:
        """Write what is queued and close the file (standard output stays open)."""
        self.flush()
        if self._fd != 1:
            os.close(self._fd)
            self._fd = -1
