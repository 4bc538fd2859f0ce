"""Starting container processes so that none outlives the cluster, each in its own mounts.

Every container process leads its own session (``setsid``: its process group is the
container, so one signal reaches everything it started), asks the kernel to kill it when
its parent dies (``PR_SET_PDEATHSIG``), and, where we are root, gets a private mount
namespace (``unshare(CLONE_NEWNS)``) in which its volumes are bind-mounted at their real
``mountPath`` (``/etc/config`` exists for it and for nobody else).

``PR_SET_PDEATHSIG`` only covers the direct child: a shell's own children survive it. So a
:class:`Reaper` process, started first, is told every container's process group; when the
cluster process dies, however it dies (``kill -9`` included), the reaper's stdin reaches
end-of-file and it kills each group it was told of, then exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import signal
import subprocess
import sys
import termios
from collections.abc import Callable, Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_BIND = 4096
MS_RDONLY = 1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def mount_namespaces_available() -> bool:
    """Whether containers can get private mount namespaces (root on Linux)."""
    return sys.platform.startswith("linux") and os.geteuid() == 0


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def preexec(binds: Sequence[tuple[str, str, bool]], isolate: bool,
            join_namespace_of: int | None = None, cwd: str = "",
            tty: int | None = None) -> Callable[[], None]:
    """The function run in the child between fork and exec (no Python threads there);
    ``tty`` becomes the new session's controlling terminal (``exec -t``)."""
    def setup() -> None:
        os.setsid()
        if tty is not None:
            fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if join_namespace_of is not None:
            fd = os.open(f"/proc/{join_namespace_of}/ns/mnt", os.O_RDONLY)
            _check(_libc.setns(fd, CLONE_NEWNS), "setns")
            os.close(fd)
            if cwd:
                os.chdir(cwd)  # joining a mount namespace moves to its root directory
            return
        if not isolate:
            return
        _check(_libc.unshare(CLONE_NEWNS), "unshare")
        _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make-rprivate")
        for source, target, read_only in binds:
            # the runtime made the mount point before the fork; make it again if it went
            # meanwhile (another pod's removal, of this cluster or another one)
            _make_mount_point(target, os.path.isdir(source))
            _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC,
                               None), f"bind {target}")
            if read_only:
                _libc.mount(b"none", target.encode(), None,
                            MS_BIND | MS_REC | MS_RDONLY | 32, None)  # 32: MS_REMOUNT
    return setup


def _make_mount_point(target: str, is_dir: bool) -> None:
    if os.path.lexists(target):
        return
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))


def ensure_mount_point(target: Path, is_dir: bool) -> Path | None:
    """Create ``target`` on this machine when it is missing, so a bind mount can cover it
    (a bind needs an existing point); returns the topmost path created, for removal."""
    missing: Path | None = None
    probe = target
    while not probe.exists():
        missing = probe
        probe = probe.parent
    if missing is None:
        return None
    if is_dir:
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    return missing


def mounted_anywhere(target: Path, proc: Path = Path("/proc")) -> bool:
    """Whether a mount sits at or under ``target`` in any process's mount namespace: a
    container of another pod (or of another cluster) still uses the mount point. Removing
    it would detach that container's mount (Linux detaches mounts in other namespaces
    whose mount point is deleted), and its files would vanish under it."""
    needle = str(target)
    seen: set[int] = set()
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            namespace = os.stat(proc / entry.name / "ns" / "mnt").st_ino
            if namespace in seen:
                continue
            seen.add(namespace)
            text = (proc / entry.name / "mountinfo").read_text()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        for line in text.splitlines():
            fields = line.split(" ", 5)
            if len(fields) < 5:
                continue
            # proc(5): the mount point is field 5, with spaces escaped as \040
            point = fields[4].replace("\\040", " ")
            if point == needle or point.startswith(needle + "/"):
                return True
    return False


_REAPER = r"""
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    word = line.strip()
    if word.startswith("-"):
        groups.discard(int(word[1:]))
    elif word:
        groups.add(int(word))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class Reaper:
    """A process that kills every registered process group when we die (see module)."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", _REAPER], stdin=subprocess.PIPE,
                                      text=True, start_new_session=True)

    def __repr__(self) -> str:
        return f"Reaper(pid={self._proc.pid})"

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _send(self, line: str) -> None:
        stdin = self._proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.write(line + "\n")
                stdin.flush()
            except BrokenPipeError:
                pass

    def register(self, pgid: int) -> None:
        self._send(str(pgid))

    def unregister(self, pgid: int) -> None:
        self._send(f"-{pgid}")

    def close(self) -> None:
        """Stop the reaper, killing what is still registered."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
