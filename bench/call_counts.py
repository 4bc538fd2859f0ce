"""The ``setpoint`` command line under cProfile switched on and off by SIGUSR1.

    python bench/call_counts.py OUT [setpoint arguments...]

The first SIGUSR1 starts a deterministic profile, the second stops it and writes the
``pstats`` file OUT. Its times are inflated by the profiler; its call counts are exact, so
``calls per event`` (``bench/operator_events.py --calls DIR``) shows what a change removed
whatever the machine's load.
"""

from __future__ import annotations

import cProfile
import signal
import sys
from pathlib import Path

profiler = cProfile.Profile()
running = False


def launcher(out: Path) -> list[str]:
    """The interpreter arguments that run the CLI under this profiler (see
    ``bench/cpu_sampler.py``: the source goes in by ``-c``)."""
    return ["-c", Path(__file__).read_text(), str(out)]


def toggle(out: str) -> None:
    global running
    if running:
        profiler.disable()
        profiler.dump_stats(out)
    else:
        profiler.enable()
    running = not running


if __name__ == "__main__":
    output = sys.argv[1]
    signal.signal(signal.SIGUSR1, lambda *_: toggle(output))
    sys.argv = ["setpoint", *sys.argv[2:]]
    from setpoint.cli.main import main
    main()
