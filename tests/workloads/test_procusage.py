"""Measuring a process container from /proc (setpoint/workloads/kubelet/process/procusage.py),
on a /proc tree this test writes, so the numbers are exact.

The fields are those of proc(5): ``pgrp`` (5), ``utime``/``stime``/``cutime``/``cstime``
(14-17, clock ticks), ``starttime`` (22, ticks after boot), ``rss`` (24, pages).
"""

from __future__ import annotations

from pathlib import Path

from setpoint.workloads.kubelet.process.procusage import (
    CLOCK_TICKS,
    PAGE_SIZE,
    UsageMeter,
    sample_groups,
)
from setpoint.workloads.kubelet.usage import NANO


def write_stat(proc: Path, pid: int, group: int, *, utime: int = 0, stime: int = 0,
               cutime: int = 0, cstime: int = 0, start: int = 0, rss: int = 0,
               comm: str = "prog") -> None:
    fields = ["S", "1", str(group), str(group), "0", "-1", "0", "0", "0", "0", "0",
              str(utime), str(stime), str(cutime), str(cstime), "20", "0", "1", "0",
              str(start), "1000", str(rss)] + ["0"] * 28
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_group_sums_its_members_time_and_memory_and_ignores_other_groups(
        tmp_path: Path) -> None:
    # 40 leads the group: the container's shim, whose memory is not the program's
    write_stat(tmp_path, 40, 40, utime=10, stime=5, rss=100)
    write_stat(tmp_path, 41, 40, utime=3, cutime=2, cstime=1, rss=50, comm="a (tricky) name")
    write_stat(tmp_path, 50, 50, utime=1000, rss=7)
    (tmp_path / "self").mkdir()  # not a process directory

    samples = sample_groups([40], tmp_path)

    assert set(samples) == {40}
    assert samples[40].cpu_ticks == 10 + 5 + 3 + 2 + 1
    assert samples[40].rss_bytes == 50 * PAGE_SIZE


def test_cpu_is_the_growth_of_cpu_time_over_the_window_between_samples(tmp_path: Path) -> None:
    (tmp_path / "uptime").write_text("20.00 5.00\n")
    write_stat(tmp_path, 40, 40, utime=CLOCK_TICKS, start=10 * CLOCK_TICKS)
    clock = Clock()
    meter = UsageMeter(clock=clock, proc=tmp_path)

    # first sample: no rate yet, whatever the group used before
    assert meter.measure([40])[40].cpu_nanos == 0

    # within the minimum window the last measurement stands
    write_stat(tmp_path, 40, 40, utime=2 * CLOCK_TICKS, start=10 * CLOCK_TICKS)
    clock.now += 0.5
    assert meter.measure([40])[40].cpu_nanos == 0

    # half a core: 1 s of CPU time in the 2 s since the last sample
    clock.now += 1.5
    assert meter.measure([40])[40].cpu_nanos == NANO // 2


def test_a_group_that_no_longer_runs_is_not_reported_or_remembered(tmp_path: Path) -> None:
    (tmp_path / "uptime").write_text("20.00 5.00\n")
    write_stat(tmp_path, 40, 40, utime=5, start=CLOCK_TICKS)
    clock = Clock()
    meter = UsageMeter(clock=clock, proc=tmp_path)
    assert 40 in meter.measure([40])

    (tmp_path / "40" / "stat").unlink()
    (tmp_path / "40").rmdir()
    clock.now += 5
    assert meter.measure([40]) == {}
    assert "groups=0" in repr(meter)


def test_measuring_one_pod_keeps_the_history_of_the_others(tmp_path: Path) -> None:
    """Each pod's containers are measured on their own: a rate needs the group's previous
    sample, whichever pod was measured in between."""
    write_stat(tmp_path, 40, 40, utime=0)
    write_stat(tmp_path, 50, 50, utime=0)
    clock = Clock()
    meter = UsageMeter(clock=clock, proc=tmp_path)
    meter.measure([40])
    meter.measure([50])
    clock.now += 2
    write_stat(tmp_path, 40, 40, utime=2 * CLOCK_TICKS)
    assert meter.measure([40])[40].cpu_nanos == NANO  # one core over the 2 s
