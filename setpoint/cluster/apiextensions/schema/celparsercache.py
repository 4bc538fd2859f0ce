"""The CEL parser's LALR analysis, kept between processes in the user's private cache.

lark builds its LALR tables from the grammar each time a process first parses CEL: some
0.6 s of CPU on the first CRD write with a rule, in every server and every test process
that starts one. lark can save the analysis and load it back (``Lark.save``/``Lark.load``),
but it saves with pickle, and loading a pickle runs whatever it names: so the file lives
only in a directory the user alone can write (``$XDG_CACHE_HOME/setpoint`` or
``~/.cache/setpoint``, 0700, never a shared temporary directory as lark's own ``cache=True``
uses), is named by a digest of the grammar, lark's version and the options, and is written
to a private temporary file and renamed into place, so no process reads half of another's
write. Anything amiss (no home, a directory others may write, a file that does not load)
means the tables are built as before, never a failed parse.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

_T = TypeVar("_T")


def load_or_build(key: str, build: Callable[[], _T], load: Callable[[IO[bytes]], _T]) -> _T:
    """The object saved under ``key`` by an earlier process (``load`` of its file), else
    ``build()``, saved for the next one when it has a ``save(file)`` method."""
    directory = _private_cache_directory()
    if directory is None:
        return build()
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = directory / f"cel-parser-{sys.implementation.cache_tag}-{digest}.pickle"
    try:
        with path.open("rb") as saved:
            if _ours_alone(os.fstat(saved.fileno())):
                return load(saved)
    except Exception:  # none yet, or damaged: only a missed cache
        pass
    built = build()
    _save(built, directory, path)
    return built


def _save(built: object, directory: Path, path: Path) -> None:
    save = getattr(built, "save", None)
    if save is None:
        return
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".cel-parser-")
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as file:
            save(file)
        os.replace(temporary, path)
    except Exception:  # a cache that cannot be written is only a miss
        Path(temporary).unlink(missing_ok=True)


def _private_cache_directory() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or ""
    try:
        root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
        directory = root / "setpoint"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except (OSError, RuntimeError):  # RuntimeError: no home directory to be found
        return None
    return directory if _ours_alone(info) else None


def _ours_alone(info: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (a file another user could replace
    is never unpickled)."""
    return info.st_uid == os.geteuid() and not stat.S_IMODE(info.st_mode) & 0o022
