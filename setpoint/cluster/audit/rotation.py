"""The audit log file, rotated as kube-apiserver's is: gopkg.in/natefinch/lumberjack.v2
(v2.2.1) ``Logger``, which pkg/server/options/audit.go ``getWriter`` gives
``--audit-log-maxsize``, ``--audit-log-maxbackup``, ``--audit-log-maxage`` and
``--audit-log-compress``.

A write that would take the file past ``max_size`` megabytes (100 when 0) first moves the
file aside as ``<name>-<UTC time as 2006-01-02T15-04-05.000><ext>`` and starts a new one
with its mode (``openNew``); then the backups beyond the ``max_backups`` newest, and those
whose name's time is more than ``max_age`` days old, are removed, and with ``compress`` the
others gzipped (``millRunOnce``; lumberjack does this in a goroutine of its own, here on a
thread). A single write larger than the limit is refused (``Write``)."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

MEGABYTE = 1024 * 1024
DEFAULT_MAX_SIZE_MB = 100
BACKUP_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"  # Go's "2006-01-02T15-04-05.000" with .%03d
COMPRESS_SUFFIX = ".gz"


def backup_name(path: Path, now: datetime) -> Path:
    """``backupName``: the time (UTC, milliseconds) between the name and its extension."""
    stem, ext = _prefix_and_ext(path)
    stamp = now.astimezone(UTC).strftime(BACKUP_TIME_FORMAT) + f".{now.microsecond // 1000:03d}"
    return path.with_name(f"{stem}{stamp}{ext}")


def _prefix_and_ext(path: Path) -> tuple[str, str]:
    """``prefixAndExt``: the base name less filepath.Ext, and a dash."""
    name = path.name
    dot = name.rfind(".")
    ext = name[dot:] if dot >= 0 else ""
    return name[:len(name) - len(ext)] + "-", ext


def _time_from_name(name: str, prefix: str, ext: str) -> datetime | None:
    """``timeFromName``: the time a backup's name holds, or None for another file."""
    if not name.startswith(prefix) or not name.endswith(ext) or len(name) < len(prefix) + len(ext):
        return None
    stamp = name[len(prefix):len(name) - len(ext)]
    whole, dot, millis = stamp.partition(".")
    if not dot or len(millis) != 3 or not millis.isdigit():
        return None
    try:
        parsed = datetime.strptime(whole, BACKUP_TIME_FORMAT)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC, microsecond=int(millis) * 1000)


class RotatingFile:
    """lumberjack's ``Logger``: lines appended, the file rotated first when one would take
    it past its limit."""

    def __init__(self, path: str, *, max_size_mb: int = 0, max_backups: int = 0,
                 max_age_days: int = 0, compress: bool = False) -> None:
        self.path = Path(path)
        self.max_bytes = (max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE
        self.max_backups = max_backups
        self.max_age_days = max_age_days
        self.compress = compress
        self._fd = -1
        self._size = 0
        self._mill_wanted = threading.Event()
        self._mill: threading.Thread | None = None
        self._lock = threading.Lock()  # (the mill thread and a rotation share the directory)
        self._stopping = False

    def __repr__(self) -> str:
        return f"RotatingFile(path={str(self.path)!r}, max_bytes={self.max_bytes})"

    def write_lines(self, lines: list[bytes]) -> None:
        """Each line as ``Write`` writes it: a line that would take the file past its limit
        rotates it first, a line larger than the limit is refused (ValueError; OSError when
        the file cannot be written). The lines between rotations go in one system call."""
        pending: list[bytes] = []
        pending_size = 0
        for line in lines:
            if len(line) > self.max_bytes:
                raise ValueError(f"write length {len(line)} exceeds maximum file size "
                                 f"{self.max_bytes}")
            if self._fd < 0:
                self._open_existing_or_new(len(line))
            if self._size + pending_size + len(line) > self.max_bytes:
                if pending:
                    self._write_all(b"".join(pending))
                    pending, pending_size = [], 0
                if self._size + len(line) > self.max_bytes:
                    self._rotate()
            pending.append(line)
            pending_size += len(line)
        if pending:
            self._write_all(b"".join(pending))

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            self._size += written
            view = view[written:]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def stop(self) -> None:
        """Close the file and end the mill's thread once its run is done."""
        self.close()
        if self._mill is not None:
            self._stopping = True
            self._mill_wanted.set()
            self._mill.join(timeout=5)
            self._mill = None

    def _open_existing_or_new(self, length: int) -> None:
        self._start_mill()
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self._open_new()
            return
        if size + length >= self.max_bytes:
            self._rotate()
            return
        try:
            self._fd = os.open(self.path, os.O_APPEND | os.O_WRONLY)
        except OSError:
            self._open_new()
            return
        self._size = size

    def _rotate(self) -> None:
        self.close()
        self._open_new()
        self._start_mill()

    def _open_new(self) -> None:
        self.path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        mode = 0o600
        with self._lock:
            try:
                info = self.path.stat()
            except FileNotFoundError:
                pass
            else:
                mode = info.st_mode & 0o7777
                os.rename(self.path, backup_name(self.path, datetime.now(UTC)))
            self._fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode)
            os.chmod(self.path, mode)  # (the umask does not narrow what is copied)
        self._size = 0

    def _start_mill(self) -> None:
        """``mill``: one run of the mill wanted; its thread started the first time."""
        if not (self.max_backups or self.max_age_days or self.compress):
            return
        self._mill_wanted.set()
        if self._mill is None:
            self._mill = threading.Thread(target=self._mill_run, name="audit-log-mill",
                                          daemon=True)
            self._mill.start()

    def _mill_run(self) -> None:
        while True:
            self._mill_wanted.wait()
            self._mill_wanted.clear()
            if self._stopping:
                return
            with contextlib.suppress(OSError):  # lumberjack: "what am I going to do, log this?"
                self.mill_once()

    def mill_once(self) -> None:
        """``millRunOnce``."""
        prefix, ext = _prefix_and_ext(self.path)
        backups: list[tuple[datetime, Path]] = []
        with self._lock:
            for entry in self.path.parent.iterdir():
                if entry.is_dir():
                    continue
                when = _time_from_name(entry.name, prefix, ext) \
                    or _time_from_name(entry.name, prefix, ext + COMPRESS_SUFFIX)
                if when is not None:
                    backups.append((when, entry))
        backups.sort(key=lambda b: b[0], reverse=True)  # newest first
        remove: list[Path] = []
        if 0 < self.max_backups < len(backups):
            preserved: set[str] = set()
            remaining = []
            for when, entry in backups:
                preserved.add(entry.name.removesuffix(COMPRESS_SUFFIX))
                if len(preserved) > self.max_backups:
                    remove.append(entry)
                else:
                    remaining.append((when, entry))
            backups = remaining
        if self.max_age_days > 0:
            cutoff = datetime.now(UTC) - timedelta(days=self.max_age_days)
            remove += [entry for when, entry in backups if when < cutoff]
            backups = [(when, entry) for when, entry in backups if when >= cutoff]
        for entry in remove:
            entry.unlink(missing_ok=True)
        if self.compress:
            for _, entry in backups:
                if not entry.name.endswith(COMPRESS_SUFFIX):
                    _compress(entry)


def _compress(source: Path) -> None:
    """``compressLogFile``: gzipped beside itself with its mode, then removed."""
    target = source.with_name(source.name + COMPRESS_SUFFIX)
    mode = source.stat().st_mode & 0o7777
    fd = os.open(target, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, mode)
    try:
        with open(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as gz, \
                source.open("rb") as src:
            shutil.copyfileobj(src, gz)
    except OSError:
        target.unlink(missing_ok=True)
        raise
    source.unlink()
