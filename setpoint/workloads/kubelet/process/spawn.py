"""Starting container processes so that none outlives the cluster, each in its own mounts.

Every container runs under its shim (:mod:`.shim`, :func:`start_container_process`), which
leads the container's session (``setsid``: its process group is the container, so one
signal reaches everything it started), gets :data:`.shim.STOP_CONTAINER` when its parent
dies (``PR_SET_PDEATHSIG``), and, where we are root, a private mount namespace
(``unshare(CLONE_NEWNS)``) in which the program's volumes are bind-mounted at their real
``mountPath`` (``/etc/config`` exists for it and for nobody else). The shim is a child
subreaper: a child that daemonizes (double fork, ``setsid``) stays its descendant and
dies when the container ends, root or not.

A :class:`Reaper` process, started first, is told every container's process group (the
shim's pid); when the cluster process dies, however it dies (``kill -9`` included), the
reaper's stdin reaches end-of-file and it asks each shim to stop its container, then
kills what is left of each group.

As root, a daemon also stays in the container's mount namespace, which it inherits: as a
PID namespace's end kills all its members (pid_namespaces(7)), the end of a container
kills every process of its mount namespace (:func:`kill_mount_namespace`; this reaches
what ``kubectl exec`` started there too), and so does the reaper. A
:class:`MountNamespace` holds the namespace open, so its identity (the nsfs inode) cannot
pass to a new container meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import fcntl
import functools
import inspect
import os
import signal
import stat
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process import shim
from setpoint.workloads.kubelet.process.shim import STOP_CONTAINER

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


class ContainerInitError(OSError):
    """A step of the child's setup between fork and exec failed: ``strerror`` names the
    step and the system's error, as runc's init does ("error mounting ... : not a
    directory")."""


def _go_error_text(errno: int) -> str:
    # Go's syscall.Errno strings are strerror(3) with a lower-case first letter
    text = os.strerror(errno)
    return text[:1].lower() + text[1:]


class ChildSetup:
    """The function run in the child between fork and exec (see :func:`preexec`). Python's
    subprocess reports only "Exception occurred in preexec_fn." when it raises; with
    ``run(report_fd)`` the failing step and its errno are written to ``report_fd`` first
    (close-on-exec: a child that reaches exec closes it unwritten), for
    :func:`start_container_process` to raise as a :class:`ContainerInitError`."""

    def __init__(self, binds: Sequence[tuple[str, str, bool]], isolate: bool,
                 join_namespace_of: int | None, cwd: str, tty: int | None,
                 death_signal: int) -> None:
        self.binds, self.isolate = tuple(binds), isolate
        self.join_namespace_of, self.cwd, self.tty = join_namespace_of, cwd, tty
        self.death_signal = death_signal

    def __call__(self) -> None:
        self.run(None)

    def run(self, report_fd: int | None) -> None:
        step = "setsid"
        try:
            for name in self._steps():
                step = name
        except OSError as exc:
            if report_fd is not None:
                with contextlib.suppress(OSError):
                    os.write(report_fd, f"{exc.errno or 0}\0{step}".encode())
            raise

    def _steps(self) -> Iterator[str]:
        """Each step, named (yielded) before it runs: the name of a failing one is the
        last yielded."""
        yield "setsid"
        os.setsid()
        if self.tty is not None:
            yield "set the controlling terminal"
            fcntl.ioctl(self.tty, termios.TIOCSCTTY, 0)
        _libc.prctl(PR_SET_PDEATHSIG, self.death_signal, 0, 0, 0)
        if self.join_namespace_of is not None:
            yield f"open /proc/{self.join_namespace_of}/ns/mnt"
            fd = os.open(f"/proc/{self.join_namespace_of}/ns/mnt", os.O_RDONLY)
            yield "setns"
            _check(_libc.setns(fd, CLONE_NEWNS), "setns")
            os.close(fd)
            if self.cwd:
                yield f"chdir to cwd ({self.cwd!r} set in config.json)"
                os.chdir(self.cwd)  # joining a mount namespace moves to its root directory
            return
        if not self.isolate:
            return
        yield "unshare"
        _check(_libc.unshare(CLONE_NEWNS), "unshare")
        yield "make / rprivate"
        _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make-rprivate")
        for source, target, read_only in self.binds:
            # libcontainer/rootfs_linux.go prepareRootfs: "error mounting %q to rootfs at
            # %q: %w"
            yield f'error mounting "{source}" to rootfs at "{target}": stat {source}'
            # a missing source must not make its mount point: it would be made a file (on
            # the machine's filesystem, outside any pod's cleanup), and every directory
            # bound there later would fail "not a directory"
            is_dir = stat.S_ISDIR(os.stat(source).st_mode)
            yield f'error mounting "{source}" to rootfs at "{target}": create mount point'
            # the runtime made the mount point before the fork; make it again if it went
            # meanwhile (another pod's removal, of this cluster or another one)
            _make_mount_point(target, is_dir)
            yield f'error mounting "{source}" to rootfs at "{target}": bind'
            _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC,
                               None), f"bind {target}")
            if read_only:
                _libc.mount(b"none", target.encode(), None,
                            MS_BIND | MS_REC | MS_RDONLY | 32, None)  # 32: MS_REMOUNT


def preexec(binds: Sequence[tuple[str, str, bool]], isolate: bool,
            join_namespace_of: int | None = None, cwd: str = "",
            tty: int | None = None,
            death_signal: int = signal.SIGKILL) -> ChildSetup:
    """The function run in the child between fork and exec (no Python threads there);
    ``tty`` becomes the new session's controlling terminal (``exec -t``); the child gets
    ``death_signal`` when we die (a container's shim: :data:`.shim.STOP_CONTAINER`)."""
    return ChildSetup(binds, isolate, join_namespace_of, cwd, tty, death_signal)


def init_error(report: bytes) -> ContainerInitError | None:
    """The child's report of its failed setup step (see :class:`ChildSetup`), if any."""
    word, _, step = report.decode(errors="replace").partition("\0")
    if not word.isdigit():
        return None
    errno = int(word)
    return ContainerInitError(errno, f"{step}: {_go_error_text(errno)}")


def start_error_message(program: str, exc: BaseException) -> str:
    """What containerd reports for a container whose process cannot start: runc's
    ``exec: ...`` error (Go's exec.LookPath: not found on $PATH, or the path's stat error),
    wrapped by the shim and containerd's task creation."""
    if isinstance(exc, FileNotFoundError):
        detail = (f'exec: "{program}": stat {program}: no such file or directory'
                  if "/" in program else
                  f'exec: "{program}": executable file not found in $PATH')
    elif isinstance(exc, ContainerInitError):
        # libcontainer/process_linux.go (initProcess).start: "error during container init"
        detail = f"error during container init: {exc.strerror}"
    elif isinstance(exc, PermissionError):
        detail = f'exec: "{program}": permission denied'
    else:
        detail = str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)
    return ("failed to create containerd task: failed to create shim task: OCI runtime "
            "create failed: runc create failed: unable to start container process: "
            f"{detail}: unknown")


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


def _namespace_members(inode: int, proc: str = "/proc") -> list[int]:
    """The processes in the mount namespace ``inode`` (never ours: the host's namespace is
    not a container's)."""
    if os.stat(f"{proc}/self/ns/mnt").st_ino == inode:
        return []
    members = []
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            try:
                if os.stat(f"{proc}/{entry.name}/ns/mnt").st_ino == inode:
                    members.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile, or not ours to see
    return members


def kill_mount_namespace(inode: int, patience: float = 10.0) -> None:
    """SIGKILL every process of a container's mount namespace, again while any is left
    (one may fork while we scan), for at most ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while (members := _namespace_members(inode)) and time.monotonic() < deadline:
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)  # let the kernel finish the exits before looking again


class MountNamespace:
    """A container's mount namespace, held open (see module); ``inode`` is None when the
    container shares ours (no isolation) or ended before we looked."""

    def __init__(self, pid: int) -> None:
        self._fd: int | None = None
        self.inode: int | None = None
        try:
            self._fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        inode = os.fstat(self._fd).st_ino
        if inode == os.stat("/proc/self/ns/mnt").st_ino:
            self.close()
            return
        self.inode = inode

    def kill_members(self) -> None:
        if self.inode is not None:
            kill_mount_namespace(self.inode)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def stop_container_processes(shim: int) -> None:
    """Have a container's shim kill all of the container (see :mod:`.shim`); SIGCONT, as
    a paused (stopped) shim would not act on it before."""
    for sig in (STOP_CONTAINER, signal.SIGCONT):
        with contextlib.suppress(OSError):
            os.kill(shim, sig)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2:][:1] != b"Z"


async def start_container_process(argv: Sequence[str], preexec_fn: Callable[[], None],
                                  container_pidfd: int | None = None,
                                  **options: Any) -> asyncio.subprocess.Process:
    """Start ``argv`` under its shim (see :mod:`.shim`); the returned process is the
    shim's, which leads the container's group and ends as the program ends. Raises the
    ``OSError`` of a program that cannot be executed, as ``create_subprocess_exec``
    would for the program itself. ``container_pidfd``: a command exec'd in a container,
    whose shim (behind this pidfd) it must not outlive."""
    status_read, status_write = os.pipe()
    # os.pipe is close-on-exec (PEP 446): the child's setup reports a failure on it
    report_read, report_write = os.pipe()
    watch = () if container_pidfd is None else (container_pidfd,)
    setup: Callable[[], None] = preexec_fn
    if isinstance(preexec_fn, ChildSetup):
        setup = functools.partial(preexec_fn.run, report_write)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", shim.__file__, str(os.getpid()), str(status_write),
            *map(str, watch), "--", *argv, preexec_fn=setup,
            pass_fds=(status_write, *watch), **options)
    except subprocess.SubprocessError as exc:
        os.close(status_read)
        cause = _read_report(report_read)
        if cause is not None:
            raise cause from exc
        raise
    except BaseException:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
        os.close(report_read)
        os.close(report_write)
    with os.fdopen(status_read, "rb") as status:
        # the shim writes before it ends or closes the pipe as its program starts: quick
        word = await asyncio.to_thread(status.read)
    if word:
        await proc.wait()
        errno = int(word)
        raise OSError(errno, os.strerror(errno), argv[0])
    return proc


def _read_report(read_end: int) -> ContainerInitError | None:
    """What a child whose setup failed wrote (before it failed: no waiting)."""
    os.set_blocking(read_end, False)
    try:
        return init_error(os.read(read_end, 4096))
    except OSError:
        return None  # nothing written: the setup failed before a step was named


_REAPER = r"""
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups = {}
for line in sys.stdin:
    word = line.strip()
    if word.startswith("-"):
        namespace = groups.pop(int(word[1:]), None)
        if namespace is not None:
            namespace.close()
    elif word:
        # open at once: the namespace stays this container's while we hold it
        groups[int(word)] = MountNamespace(int(word))
# each group is led by its container's shim: it kills the whole container (its death
# signal has told it already; this is for a shim that missed it), then we make sure
for pgid in groups:
    stop_container_processes(pgid)
deadline = time.monotonic() + 10
for pgid in groups:
    while alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for namespace in groups.values():
    namespace.kill_members()
"""


def _reaper_source() -> str:
    """The reaper's program: this module's namespace helpers and the loop above (it
    imports nothing of ours, so it starts fast and without the project's imports)."""
    helpers = "\n\n".join(inspect.getsource(f) for f in (
        _namespace_members, kill_mount_namespace, MountNamespace, stop_container_processes,
        alive))
    header = ("from __future__ import annotations\nimport contextlib, os, signal, sys, time\n"
              f"STOP_CONTAINER = {int(STOP_CONTAINER)}\n")
    return header + helpers + _REAPER


class Reaper:
    """A process that kills every registered process group when we die (see module)."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", _reaper_source()],
                                      stdin=subprocess.PIPE, text=True,
                                      start_new_session=True)

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
