"""Container logs in the CRI format, and reading them back as the kubelet serves them.

Each line a container writes becomes ``<RFC 3339 nano time> <stream> <tag> <text>`` in its
log file (pkg/kubelet/kuberuntime/logs/logs.go: tag ``F`` for a full line, ``P`` for a
partial one cut at the runtime's buffer size). One file per container instance; the
kubelet keeps the current and the previous instance (``--previous``).

A log is bounded as the kubelet's container log manager bounds it
(pkg/kubelet/logs/container_log_manager.go, ``containerLogMaxSize`` 10Mi and
``containerLogMaxFiles`` 5): once the file reaches the size, ``rotateLog`` removes what
an earlier rotation left half done (``<log>.*.tmp``, a file whose ``.gz`` exists), removes
the oldest rotated files past ``max_files - 2``, gzip-compresses the rotated files left
(``compressLog``: ``<file>.tmp`` renamed ``<file>.gz``, the file's mode kept) and renames the
current file ``<log>.<timestamp>``, left uncompressed (``rotateLatestLog``), and a new one
is started. Reads serve the current file, as the kubelet's ``ReadLogs`` does (so
``--previous``, the previous instance's own current file, is never compressed), and a
follow moves on through the rotated files to the new one. Differences: the size is checked
as lines are written (the kubelet looks every 10 s, so its files overshoot), and the
timestamp has microseconds (so two rotations in a second keep their order).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

MAX_LINE = 16 * 1024  # containerd's default max_container_log_line_size
MAX_SIZE = 10 * 1024 * 1024  # the kubelet's containerLogMaxSize default (10Mi)
MAX_FILES = 5  # containerLogMaxFiles
COMPRESS_SUFFIX = ".gz"  # container_log_manager.go compressSuffix
TMP_SUFFIX = ".tmp"  # and tmpSuffix


@dataclass(frozen=True)
class LogRotatePolicy:
    """The container log manager's policy; a negative ``max_size`` disables rotation."""

    max_size: int = MAX_SIZE
    max_files: int = MAX_FILES

    def __post_init__(self) -> None:
        if self.max_files <= 1:  # NewContainerLogManager refuses it too
            raise ValueError(f"invalid MaxFiles {self.max_files}, must be > 1")


class LogWriter:
    """One container instance's log file, shared by its stdout and stderr copies (so a
    rotation moves both to the new file)."""

    def __init__(self, path: Path, policy: LogRotatePolicy | None = None) -> None:
        self.path = path
        self.policy = policy or LogRotatePolicy()
        self.lock = asyncio.Lock()
        self._fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, line: bytes) -> None:
        os.write(self._fd, line)
        if 0 <= self.policy.max_size <= os.fstat(self._fd).st_size:
            self._rotate()

    def _rotate(self) -> None:
        rotated = []
        for log in sorted(self.path.parent.glob(f"{self.path.name}.*")):
            if log.name.endswith(TMP_SUFFIX) or \
                    log.with_name(log.name + COMPRESS_SUFFIX).exists():
                log.unlink(missing_ok=True)  # cleanupUnusedLogs: an interrupted rotation's
            else:
                rotated.append(log)
        excess = max(0, len(rotated) - (self.policy.max_files - 2))
        for old in rotated[:excess]:
            old.unlink(missing_ok=True)  # oldest first: a reader of the newest goes on
        for log in rotated[excess:]:
            if not log.name.endswith(COMPRESS_SUFFIX):
                _compress_log(log)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S.%f")
        os.rename(self.path, self.path.with_name(f"{self.path.name}.{stamp}"))
        os.close(self._fd)
        self._fd = self._open()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _compress_log(log: Path) -> None:
    """compressLog: gzip ``log`` into ``<log>.tmp``, rename it ``<log>.gz``, remove ``log``
    (a reader that has it open reads on)."""
    tmp = log.with_name(log.name + TMP_SUFFIX)
    try:
        mode = log.stat().st_mode & 0o777
        with log.open("rb") as source, \
                os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") \
                as target, gzip.GzipFile(filename="", mode="wb", fileobj=target) as packed:
            shutil.copyfileobj(source, packed)
        os.rename(tmp, log.with_name(log.name + COMPRESS_SUFFIX))
        log.unlink()
    finally:
        tmp.unlink(missing_ok=True)


def rotated_logs(path: Path) -> list[Path]:
    """The rotated files of a log, oldest first, compressed or not (GetAllLogs without the
    current one and without a compression's temporary file)."""
    return sorted(p for p in path.parent.glob(f"{path.name}.*")
                  if not p.name.endswith(TMP_SUFFIX))


def _open_log(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.name.endswith(COMPRESS_SUFFIX) else path.open("rb")


def rfc3339nano(ts: float) -> str:
    whole = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    nanos = round((ts % 1) * 1e9) % 1_000_000_000
    return f"{whole}.{nanos:09d}Z"


async def copy_stream(reader: asyncio.StreamReader, writer: LogWriter, stream: str) -> None:
    """Copy what a container writes on ``stream`` into its CRI log until EOF."""
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
                async with writer.lock:
                    writer.write(line)
    except (ValueError, asyncio.LimitOverrunError):
        pass


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
                   now: float | None = None,
                   gone: Callable[[], bool] | None = None) -> AsyncIterator[bytes]:
    """The log as the kubelet serves it; with ``follow``, keeps reading new lines until
    ``running`` is cleared (the container exited) and the file is drained, or until
    ``gone()`` says the reader left."""
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
    async for line in _follow(path, offset, running, gone):
        out = _render(line + b"\n", opts)
        if out is not None:
            yield out


async def _follow(path: Path, offset: int, running: asyncio.Event | None,
                  gone: Callable[[], bool] | None = None) -> AsyncIterator[bytes]:
    """Each line (without its newline) written to the log after ``offset``, while
    ``running``; on a rotation, the rest of the old file then the next ones (as the
    kubelet's ``waitLogs`` reopens a rotated log)."""
    pending = b""
    last = ""  # the time of the last line yielded: where the next file starts after it
    fh: io.BufferedIOBase = path.open("rb")
    try:
        fh.seek(offset)
        while True:
            chunk = fh.read()
            if chunk:
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    last = line.split(b" ", 1)[0].decode(errors="replace")
                    yield line
                continue
            if _rotated(path, fh.fileno()):
                chunk = fh.read()  # what came between the last read and the rename
                done = os.fstat(fh.fileno()).st_ino
                fh.close()
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    last = line.split(b" ", 1)[0].decode(errors="replace")
                    yield line
                fh = _open_log(_next_log(path, done, last))
                continue
            if running is None or not running.is_set() or (gone is not None and gone()):
                return
            # a log file has no change notification we can await portably: look again
            # shortly (the kubelet uses fsnotify with a one-second fallback poll)
            await asyncio.sleep(0.1)
    finally:
        fh.close()


def _next_log(path: Path, done: int, last: str) -> Path:
    """The file written after the one (inode ``done``) a follower finished, whose last
    line was written at ``last``: the next rotated file, else the current one. Rotations
    here come as fast as lines are written, so a follower may find several, and the file
    it finished may be compressed or removed meanwhile: then the next is the first whose
    first line is later than ``last`` (the times are fixed-width, so they compare as
    strings); one removed meanwhile was the oldest."""
    rotated = rotated_logs(path)
    for index, candidate in enumerate(rotated):
        with contextlib.suppress(FileNotFoundError):
            if candidate.stat().st_ino == done:
                return rotated[index + 1] if index + 1 < len(rotated) else path
    for candidate in rotated:
        try:
            with _open_log(candidate) as fh:
                first = fh.readline().split(b" ", 1)[0].decode(errors="replace")
        except (OSError, EOFError):
            continue  # removed meanwhile (the oldest), or being written as we looked
        if first > last:
            return candidate
    return path


def _rotated(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except FileNotFoundError:
        return False  # between the rename and the new file: look again later


async def follow_records(path: Path, running: asyncio.Event) -> AsyncIterator[tuple[str, bytes]]:
    """(stream, text) of each line written to the log from now on, while ``running``:
    what ``kubectl attach`` shows."""
    async for line in _follow(path, path.stat().st_size, running):
        parts = line.split(b" ", 3)
        if len(parts) == 4:
            yield parts[1].decode(), parts[3] + (b"\n" if parts[2] == b"F" else b"")
