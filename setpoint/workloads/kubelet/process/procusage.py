"""What a process container uses, measured from ``/proc``, for ``kubectl top``.

metrics-server reports what the kubelet measures in each container's cgroup: CPU as a rate
over a window and memory as the working set. A process container has no cgroup of its own
(docs/process-runtime.md), but it is a process group: the runtime starts every container as
the leader of its own group, and everything it forks stays in it. So a container's usage is
its group's:

- CPU: the growth of the members' user and system time, including the time of children they
  have already reaped (``cutime``/``cstime``, so a process that exits between two samples is
  not lost), divided by the wall time between the samples. A group's first sample has no
  rate yet (metrics-server, too, reports a container only from its second scrape): its CPU
  reads 0 until the next window; an average since the start would make a young process
  look busy.
- Memory: the sum of the members' resident set sizes, but for the group's leader, the
  container's shim (.shim), which is ours rather than the program's. Pages shared between
  members count once per member, which overstates a forking server a little; a cgroup's
  working set would count them once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from setpoint.workloads.kubelet.usage import NANO, Usage

PROC = Path("/proc")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
MIN_WINDOW = 1.0
"""Seconds between two samples of a group: a shorter window would report noise (CPU time
is counted in whole clock ticks, 10 ms)."""

FORGET_AFTER = 300.0
"""Seconds after which a group not measured again is forgotten."""

# /proc/PID/stat fields after the command's closing parenthesis, counted from ``state``
# (proc(5) numbers them from 1 with pid; state is field 3)
_PGRP, _UTIME, _CSTIME, _RSS = 5 - 3, 14 - 3, 17 - 3, 24 - 3


@dataclass(frozen=True)
class GroupSample:
    """A process group's CPU time in clock ticks and resident memory in bytes."""

    cpu_ticks: int
    rss_bytes: int


def sample_groups(groups: Collection[int], proc: Path = PROC) -> dict[int, GroupSample]:
    """One sample of each of ``groups`` that has a live member."""
    wanted = set(groups)
    totals: dict[int, tuple[int, int]] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            raw = (proc / entry.name / "stat").read_bytes()
        except OSError:
            continue  # exited while we looked
        fields = raw[raw.rfind(b")") + 2:].split()
        group = int(fields[_PGRP])
        if group not in wanted:
            continue
        cpu, rss = totals.get(group, (0, 0))
        cpu += sum(int(f) for f in fields[_UTIME:_CSTIME + 1])
        if int(entry.name) != group:  # the leader is the container's shim, not its program
            rss += int(fields[_RSS]) * PAGE_SIZE
        totals[group] = (cpu, rss)
    return {group: GroupSample(*values) for group, values in totals.items()}


class UsageMeter:
    """Measures process groups; keeps each group's last sample (a rate needs two)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, proc: Path = PROC,
                 min_window: float = MIN_WINDOW) -> None:
        self.clock = clock
        self.proc = proc
        self.min_window = min_window
        self._last: dict[int, tuple[float, int, Usage]] = {}  # group -> (at, ticks, usage)

    def __repr__(self) -> str:
        return f"UsageMeter(groups={len(self._last)})"

    def measure(self, groups: Collection[int]) -> dict[int, Usage]:
        """The usage of each of ``groups`` that still runs."""
        now = self.clock()
        due = [g for g in groups
               if g not in self._last or now - self._last[g][0] >= self.min_window]
        samples = sample_groups(due, self.proc) if due else {}
        out: dict[int, Usage] = {}
        for group in groups:
            sample = samples.get(group)
            if sample is None:
                if group in self._last and group not in due:
                    out[group] = self._last[group][2]
                else:
                    self._last.pop(group, None)
                continue
            out[group] = usage = Usage(self._cpu_nanos(group, sample, now), sample.rss_bytes)
            self._last[group] = (now, sample.cpu_ticks, usage)
        # each pod is measured on its own: forget only groups nobody asked about for long
        # (their processes are gone), not the other pods' groups
        for stale in [g for g, (at, _, _) in self._last.items() if now - at > FORGET_AFTER]:
            del self._last[stale]
        return out

    def _cpu_nanos(self, group: int, sample: GroupSample, now: float) -> int:
        last = self._last.get(group)
        if last is None:
            return 0
        ticks, seconds = sample.cpu_ticks - last[1], now - last[0]
        if seconds <= 0:
            return 0
        return max(0, round(ticks / CLOCK_TICKS / seconds * NANO))
