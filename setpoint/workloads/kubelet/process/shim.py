"""A container's shim: the process between the runtime and a container's program that
makes sure nothing the container started outlives it, root or not.

containerd runs every container under a shim (containerd-shim-runc-v2) that makes itself a
child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, containerd's
runtime/v2/shim/shim_unix.go ``subreaper`` → sys/reaper ``SetSubreaper``) and, inside the
container's PID namespace, a process that daemonizes (double fork, ``setsid``) is still
killed with the namespace (pid_namespaces(7)). Without root there is no PID namespace (and
no mount namespace) to hold a daemon, so this shim does the subreaper's half for real: an
orphan anywhere below it is reparented to it (prctl(2), PR_SET_CHILD_SUBREAPER), so every
process the container ever started stays its descendant, found by a /proc walk of parent
ids. When the program ends, or the runtime asks (:data:`STOP_CONTAINER`), or the runtime
dies (``PR_SET_PDEATHSIG`` is :data:`STOP_CONTAINER`, set by the runtime's preexec, so
``kill -9`` of the cluster included), the shim SIGKILLs all its descendants until none is
left, reaps them, and ends as its program ended (the same exit code, or killed by the same
signal), so the runtime reads the program's status from the shim's.

The shim leads the container's session and process group (the runtime signals the group);
signals meant for the program (SIGTERM, a terminal's SIGINT ...) reach the shim too and it
ignores them. Run as ``python -I -S shim.py <runtime pid> <status fd> [<pidfd>] -- <argv>``:
it imports only the standard library, and reports a failed exec of the program (``errno``)
on the status fd, closing it without a word once the program runs.

A command run in a running container (``kubectl exec``, exec probes and hooks; given a
pidfd, pidfd_open(2), of the container's shim) joins the container as runc exec does
(libcontainer/process_linux.go ``setnsProcess``: the container's PID namespace, which
nothing outlives): what it leaves running, a daemon too, lives on after the command ends
and dies with the container. Its shim is then two processes (:func:`exec_main`): the one the
runtime waits for, which ends as the command ends, and a *keeper* below it, the command's
parent and a child subreaper in a process group of its own (so killing the command's group,
a client that left or a probe that timed out, spares it), which stays while anything the
command started is alive and kills all of it when the container's shim ends (its pidfd
becomes readable, poll(2)).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_CONTAINER = signal.SIGRTMIN + 2
"""Sent to the shim (its pid, not its group): kill the container, all of it. A real-time
signal, so no program sends it to its own group by accident."""
_IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP,
            signal.SIGTTIN, signal.SIGTTOU, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
_WATCHED = {signal.SIGCHLD, STOP_CONTAINER}


def descendants(root: int, proc: str = "/proc") -> list[int]:
    """The live processes below ``root``, by their parent ids in ``/proc/<pid>/stat``
    (proc(5): the state and ppid follow the command's closing parenthesis)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{proc}/{entry.name}/stat", "rb") as stat:
                raw = stat.read()
        except OSError:
            continue  # exited while we looked
        state, ppid = raw[raw.rfind(b")") + 2:].split()[:2]
        if state != b"Z":  # a zombie is dead already, waiting to be reaped
            children.setdefault(int(ppid), []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _ignore(signum: int, frame: object) -> None:
    """A handler rather than SIG_IGN: exec resets handled signals, so the program gets the
    default dispositions back (an ignored one would stay ignored)."""


def _reap(program: int, status: int | None) -> int | None:
    """Reap every child that ended (orphans are ours now); the program's wait status."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == program:
            status = wait_status


def _kill_descendants(program: int, status: int | None) -> int:
    """SIGKILL everything below us, again while anything is left (one may fork while we
    look; its orphans come back to us), then reap all of it."""
    while pids := descendants(os.getpid()):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        status = _reap(program, status)
        time.sleep(0.001)  # let the kernel finish the exits before looking again
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == program:
            status = wait_status
    assert status is not None
    return status


def _program_setup() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    # should the shim itself be SIGKILLed, its program goes with it
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _end_as(status: int) -> None:
    """Exit as the program did: its code, or killed by its signal (no core file)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal whose default is not to end the process
    os._exit(os.waitstatus_to_exitcode(status))


def _stop_with(container: int) -> None:
    """Send ourselves :data:`STOP_CONTAINER` once the process behind the pidfd ``container``
    has ended (a thread, whose signals stay blocked: they go to the main one)."""
    def watch() -> None:
        while not select.select([container], [], [])[0]:
            pass
        os.kill(os.getpid(), STOP_CONTAINER)
    threading.Thread(target=watch, daemon=True).start()


def _to_null() -> None:
    """The command holds the session's streams; we must not keep them open after it."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _close_all_but(*keep: int) -> None:
    """Close every descriptor above the standard ones but ``keep``: a copy of the exec's
    streams left open in a shim would hold them open after the command ends."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) not in keep:
            with contextlib.suppress(OSError):
                os.close(int(name))


def _keep(status_fd: int, container: int, report: int, group: int,
          program: list[str]) -> None:
    """The keeper of an exec (see module): run the command in ``group`` (the exec's), write
    its wait status on ``report``, stay while anything it started lives; when the
    container ends, kill all of it."""
    os.setpgid(0, 0)
    _close_all_but(status_fd, container, report)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _stop_with(container)

    def setup() -> None:
        os.setpgid(0, group)
        _program_setup()
    try:
        child = subprocess.Popen(program, preexec_fn=setup)
    except (OSError, subprocess.SubprocessError) as exc:
        errno = exc.errno if isinstance(exc, OSError) and exc.errno else 1
        os.write(status_fd, f"{errno}".encode())
        os._exit(127)
    os.close(status_fd)
    _to_null()
    status: int | None = None
    stopped = False
    while not stopped:
        status = _reap(child.pid, status)
        if status is not None:
            if report >= 0:
                with contextlib.suppress(OSError):  # the exec's shim was killed
                    os.write(report, f"{status}".encode())
                os.close(report)
                report = -1
            if not descendants(os.getpid()):
                os._exit(0)
        stopped = signal.sigwaitinfo(_WATCHED).si_signo == STOP_CONTAINER
    child.returncode = 0  # reaped here; keeps Popen from waiting for it again
    status = _kill_descendants(child.pid, status)
    if report >= 0:
        with contextlib.suppress(OSError):
            os.write(report, f"{status}".encode())
    os._exit(0)


def exec_main(runtime: int, status_fd: int, container: int, program: list[str]) -> None:
    """The shim of an exec (see module): start the keeper, pass it :data:`STOP_CONTAINER`
    (our death signal, or the runtime's word), end as the command ended."""
    for sig in _IGNORED:
        signal.signal(sig, _ignore)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    if os.getppid() != runtime:
        os._exit(137)
    report_read, report_write = os.pipe()
    group = os.getpid()
    keeper = os.fork()
    if keeper == 0:
        os.close(report_read)
        _keep(status_fd, container, report_write, group, program)
    _close_all_but(report_read)
    _to_null()

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(keeper, STOP_CONTAINER)
    signal.signal(STOP_CONTAINER, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {STOP_CONTAINER})
    with os.fdopen(report_read, "rb") as report:
        word = report.read()
    signal.pthread_sigmask(signal.SIG_BLOCK, {STOP_CONTAINER})
    # no word: the keeper was killed, or the command could not start (the runtime reads
    # its errno on the status fd)
    _end_as(int(word) if word else signal.SIGKILL)


def main(argv: list[str]) -> None:
    separator = argv.index("--")
    runtime, status_fd, program = int(argv[1]), int(argv[2]), argv[separator + 1:]
    if separator == 4:
        exec_main(runtime, status_fd, int(argv[3]), program)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    for sig in _IGNORED:
        signal.signal(sig, _ignore)
    if os.getppid() != runtime:
        os._exit(137)  # the runtime died before our death signal was armed: start nothing
    try:
        child = subprocess.Popen(program, preexec_fn=_program_setup)
    except OSError as exc:
        os.write(status_fd, f"{exc.errno}".encode())
        os._exit(127)
    os.close(status_fd)
    _to_null()
    status: int | None = None
    while (status := _reap(child.pid, status)) is None:
        if signal.sigwaitinfo(_WATCHED).si_signo == STOP_CONTAINER:
            break
    child.returncode = 0  # reaped here; keeps Popen from waiting for it again
    _end_as(_kill_descendants(child.pid, status))


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

if __name__ == "__main__":
    main(sys.argv)
