"""The ``setpoint`` command line with a CPU-time stack sampler, for the benchmarks' profiles.

    python bench/cpu_sampler.py OUT [setpoint arguments...]

SIGUSR1 switches sampling on and, the second time, off, writing the samples to OUT in
py-spy's raw format (``outer;...;inner count`` lines, read by ``bench/profile_top.py``). A
sample is taken per millisecond of the process's own CPU (``ITIMER_PROF``), so waiting and
preemption, which py-spy counts on a loaded machine, are not in it.
"""

from __future__ import annotations

import collections
import signal
import sys
from pathlib import Path
from types import FrameType

counts: collections.Counter[str] = collections.Counter()


def launcher(out: Path) -> list[str]:
    """The interpreter arguments that run the CLI under this sampler. The source goes in
    by ``-c``, so ``setpoint`` is imported from the working directory, as ``-m`` would: a
    benchmark's baseline runs another source tree that way."""
    return ["-c", Path(__file__).read_text(), str(out)]


def sample(_signum: int, frame: FrameType | None) -> None:
    stack = []
    while frame is not None:
        code = frame.f_code
        stack.append(f"{code.co_name} ({code.co_filename}:{frame.f_lineno})")
        frame = frame.f_back
    counts[";".join(reversed(stack))] += 1


def toggle(out: str) -> None:
    if signal.getitimer(signal.ITIMER_PROF)[0]:
        signal.setitimer(signal.ITIMER_PROF, 0)
        with open(out, "w") as f:
            f.writelines(f"{stack} {n}\n" for stack, n in counts.items())
    else:
        signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)


if __name__ == "__main__":
    output = sys.argv[1]
    signal.signal(signal.SIGPROF, sample)
    signal.signal(signal.SIGUSR1, lambda *_: toggle(output))
    sys.argv = ["setpoint", *sys.argv[2:]]
    from setpoint.cli.main import main
    main()
