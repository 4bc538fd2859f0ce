"""A process's peak resident memory and CPU time, read from /proc (Linux, no psutil)."""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    peak_rss_mib: float
    cpu_seconds: float
    system_seconds: float = 0.0
    """The part of ``cpu_seconds`` spent in the kernel (socket writes and reads)."""


def children(pid: int) -> list[int]:
    """The direct children of a process (every thread's children, from /proc)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            continue
    return found


def tree_usage(pid: int) -> Usage:
    """:func:`usage` summed over a process and its descendants (``cluster up`` runs its
    workloads in a child process): CPU added up, peak RSS added up."""
    total = usage(pid)
    for child in children(pid):
        try:
            part = tree_usage(child)
        except (FileNotFoundError, ProcessLookupError):
            continue
        total = Usage(total.peak_rss_mib + part.peak_rss_mib,
                      total.cpu_seconds + part.cpu_seconds,
                      total.system_seconds + part.system_seconds)
    return total


def usage(pid: int) -> Usage:
    """VmHWM (the peak resident set) and user+system CPU of a running process."""
    peak_kib = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak_kib = int(line.split()[1])
                break
    with open(f"/proc/{pid}/stat") as f:
        # the command name (field 2) may hold spaces: split after its closing parenthesis
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return Usage(peak_kib / 1024, (utime + stime) / _TICKS, stime / _TICKS)
