"""A process's peak resident memory and CPU time, read from /proc (Linux, no psutil)."""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    peak_rss_mib: float
    cpu_seconds: float


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
    return Usage(peak_kib / 1024, (utime + stime) / _TICKS)
