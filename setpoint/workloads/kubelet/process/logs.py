"""Container logs in the CRI format, and reading them back as the kubelet serves them.

Each line a container writes becomes ``<RFC 3339 nano time> <stream> <tag> <text>`` in its
log file (pkg/kubelet/kuberuntime/logs/logs.go: tag ``F`` for a full line, ``P`` for a
partial one cut at the runtime's buffer size). One file per container instance; the
kubelet keeps the current and the previous instance (``--previous``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

MAX_LINE = 16 * 1024  # containerd's default max_container_log_line_size


def rfc3339nano(ts: float) -> str:
    whole = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    nanos = round((ts % 1) * 1e9) % 1_000_000_000
    return f"{whole}.{nanos:09d}Z"


async def copy_stream(reader: asyncio.StreamReader, path: Path, stream: str,
                      lock: asyncio.Lock) -> None:
    """Copy what a container writes on ``stream`` into its CRI log file until EOF."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            chunk = await reader.readline() if not reader.at_eof() else b""
            if not chunk:
                break
            while chunk:
                piece, chunk = chunk[:MAX_LINE], chunk[MAX_LINE:]
                full = piece.endswith(b"\n")
                text = piece[:-1] if full else piece
                tag = b"F" if full or (not chunk and reader.at_eof()) else b"P"
                stamp = f"{rfc3339nano(time.time())} {stream} ".encode()
                line = stamp + tag + b" " + text + b"\n"
                async with lock:
                    os.write(fd, line)
    except (ValueError, asyncio.LimitOverrunError):
        pass
    finally:
        os.close(fd)


@dataclass(frozen=True)
class LogOptions:
    """The kubelet's ``/containerLogs`` query (v1.PodLogOptions)."""

    follow: bool = False
    tail_lines: int | None = None
    since_seconds: float | None = None
    timestamps: bool = False


def _parse(line: bytes) -> tuple[str, bytes, bool] | None:
    """(timestamp, text, full) of one CRI log line."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    text = parts[3] if len(parts) == 4 else b""
    return parts[0].decode(), text, parts[2] == b"F"


def _epoch(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0


def _render(line: bytes, opts: LogOptions) -> bytes | None:
    parsed = _parse(line)
    if parsed is None:
        return None
    stamp, text, full = parsed
    end = b"\n" if full else b""
    return (stamp.encode() + b" " + text + end) if opts.timestamps else text + end


async def read_log(path: Path, opts: LogOptions, running: asyncio.Event | None = None,
                   now: float | None = None) -> AsyncIterator[bytes]:
    """The log as the kubelet serves it; with ``follow``, keeps reading new lines until
    ``running`` is cleared (the container exited) and the file is drained."""
    cutoff = (now or time.time()) - opts.since_seconds if opts.since_seconds else None
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    lines = data.splitlines(keepends=True)
    complete = lines if data.endswith(b"\n") else lines[:-1]
    offset = sum(len(x) for x in complete)
    if cutoff is not None:
        complete = [x for x in complete if (p := _parse(x)) and _epoch(p[0]) >= cutoff]
    if opts.tail_lines is not None:
        complete = complete[-opts.tail_lines:] if opts.tail_lines > 0 else []
    for line in complete:
        out = _render(line, opts)
        if out is not None:
            yield out
    if not opts.follow:
        return
    pending = b""
    with path.open("rb") as fh:
        fh.seek(offset)
        while True:
            chunk = fh.read()
            if chunk:
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    out = _render(line + b"\n", opts)
                    if out is not None:
                        yield out
                continue
            if running is None or not running.is_set():
                return
            # a log file has no change notification we can await portably: look again
            # shortly (the kubelet uses fsnotify with a one-second fallback poll)
            await asyncio.sleep(0.1)


async def follow_records(path: Path, running: asyncio.Event) -> AsyncIterator[tuple[str, bytes]]:
    """(stream, text) of each line written to the log from now on, while ``running``:
    what ``kubectl attach`` shows."""
    pending = b""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        while True:
            chunk = fh.read()
            if chunk:
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    parts = line.split(b" ", 3)
                    if len(parts) == 4:
                        yield parts[1].decode(), parts[3] + (b"\n" if parts[2] == b"F" else b"")
                continue
            if not running.is_set():
                return
            await asyncio.sleep(0.1)  # as read_log's follow: no portable change notification
