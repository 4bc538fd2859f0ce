"""The log backend (k8s.io/apiserver plugin/pkg/audit/log/backend.go): each event written
as it is processed, one line each, in the ``json`` format (an ``audit.k8s.io/v1`` Event) or
the ``legacy`` one (``audit.EventString``), to a file or, for ``-``, standard output.

The file is made as kube-apiserver makes it (pkg/server/options/audit.go ``ensureLogFile``:
its directory 0700, the file 0600, appended to) and then written through lumberjack's
rotation (``rotation.py``). This backend writes when it is called: kube-apiserver's
default ``--audit-log-mode=blocking`` calls it on the request's path, ``batch`` from the
buffer (``buffered.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from setpoint.cluster.audit.backend import Event
from setpoint.cluster.audit.event import encoded, legacy_line
from setpoint.cluster.audit.metrics import plugin_error
from setpoint.cluster.audit.rotation import RotatingFile

STDOUT = "-"
PLUGIN_NAME = "log"


class LogBackend:
    """Events written by :meth:`process_events` as each comes."""

    def __init__(self, path: str, *, format: str = "json",
                 max_age: int = 0, max_backups: int = 0, max_size: int = 0,
                 compress: bool = False) -> None:
        self.path = path
        self.format = format
        self._file: RotatingFile | None = None
        if path != STDOUT:
            target = Path(path)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(target, os.O_CREAT | os.O_APPEND | os.O_RDWR, 0o600))
            self._file = RotatingFile(path, max_size_mb=max_size, max_backups=max_backups,
                                      max_age_days=max_age, compress=compress)

    def __repr__(self) -> str:
        return f"LogBackend(path={self.path!r}, format={self.format!r})"

    def process_events(self, events: list[Event]) -> bool:
        """``ProcessEvents``: each event written (a batch in one write where rotation
        allows); False if they could not be."""
        if self.format == "legacy":
            lines = [legacy_line(e).encode() for e in events]
        else:
            lines = [encoded(e) for e in events]
        try:
            if self._file is None:
                view = memoryview(b"".join(lines))
                while view:
                    view = view[os.write(1, view):]
            else:
                self._file.write_lines(lines)
        except (OSError, ValueError) as exc:
            plugin_error(PLUGIN_NAME, _error_text(exc), events)
            return False
        return True

    async def shutdown(self) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.stop()


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)
