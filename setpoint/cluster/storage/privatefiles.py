"""Files only the cluster's owner may read: the data directory, the database, the CA and
service-account keys, the admin token and kubeconfigs.

Each file is created with its final mode (``os.open`` with 0600, then written), never
written first and tightened after: between the two another local user could open it and
keep the descriptor. Directories are made 0700 for the same reason.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600


def private_directory(path: Path, *, tighten: bool = True) -> Path:
    """Create ``path`` mode 0700 (missing parents get the default mode). An existing one is
    tightened to 0700 when ``tighten`` and it is ours and not a shared directory (sticky,
    as ``/tmp``). Otherwise a warning is worth giving only when the user can act on it and
    it matters: the directory is ours, not sticky, and others may write in it (and so
    replace the 0600 files it holds; reading it shows only their names). Another user's
    directory, or a shared sticky one, is left without a word: no chmod of ours fixes it."""
    try:
        path.mkdir(mode=PRIVATE_DIRECTORY)
        return path
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=PRIVATE_DIRECTORY)
        return path
    except FileExistsError:
        pass
    info = path.stat()
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077 == 0:
        return path
    ours_alone = info.st_uid == os.geteuid() and not info.st_mode & stat.S_ISVTX
    if tighten and ours_alone:
        path.chmod(PRIVATE_DIRECTORY)
    elif ours_alone and mode & 0o022:
        log.warning("directory %s is mode %o: other users can replace the files in it; "
                    "chmod 700 %s", path, mode, path)
    return path


def private_file(path: Path, *, create: bool = False) -> None:
    """Make ``path`` 0600: an existing file (written by an older version) is tightened, a
    missing one is created empty with that mode when ``create``."""
    if create:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE))
    try:
        if stat.S_IMODE(path.stat().st_mode) != PRIVATE_FILE:
            path.chmod(PRIVATE_FILE)
    except FileNotFoundError:
        pass


def read_private(path: Path) -> bytes:
    """Read a key or token, first tightening a file an older version left readable."""
    private_file(path)
    return path.read_bytes()


def write_private(path: Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data``, 0600 from the first byte (a temporary file renamed
    into place, so a reader never sees half a key either)."""
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)  # a leftover temporary file keeps its old mode otherwise
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(raw)
    finally:
        os.close(fd)
    os.replace(tmp, path)
