"""Child processes that die with their parent, even one killed with SIGKILL (Linux).

A parent names itself in its children's environment (:func:`child_environment`, or
:func:`children_die_with_me` for every child it will spawn); each program of the project
calls :func:`die_with_parent` first thing. The child asks the kernel for a signal when its
parent dies (prctl(2) ``PR_SET_PDEATHSIG``), then closes the race of a parent that died
before that call: it has been reparented by then, so the parent it was named is no longer
among its ancestors, and it stops at once. A program started through another (a shell) is
left running while the named parent is still an ancestor; the kernel then signals it when
its own parent dies.

The signal follows the death of the parent *thread* that forked the child: spawn from the
main thread or from one that outlives the child.

Without the variable nothing changes: a program a person starts is never tied to its shell.
Only ctypes and ``os`` are imported, and only when the variable is set.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping

PARENT_PID = "SETPOINT_PARENT_PID"
"""The environment variable naming the process a child is to die with."""

_PR_SET_PDEATHSIG = 1


def child_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment by default) for a child that is to die with
    this process."""
    return {**(os.environ if env is None else env), PARENT_PID: str(os.getpid())}


def children_die_with_me() -> None:
    """Every child spawned from now on with this process's environment dies with it."""
    os.environ[PARENT_PID] = str(os.getpid())


def die_with_parent(death_signal: int = signal.SIGKILL) -> None:
    """If the environment names a parent, receive ``death_signal`` when it dies, and stop
    now if it has died already. The variable is taken out of this process's environment:
    its own children are named by :func:`child_environment`, never after a grandparent."""
    named = os.environ.get(PARENT_PID)
    if not named or named == str(os.getpid()):
        return  # not asked, or this process is the parent (a program run in-process)
    del os.environ[PARENT_PID]
    try:
        parent = int(named)
    except ValueError:
        return
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
    if parent not in _ancestors():
        os.kill(os.getpid(), death_signal)
        os._exit(128 + death_signal)  # a signal this process ignores or handles


def _ancestors() -> set[int]:
    """This process's parent, its parent's parent, and so on, from /proc."""
    found: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                # the command name (field 2) may hold spaces or parentheses: read after it
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return found
