"""Where the embedded server's CPU goes under a load of ConfigMap creates (or gets).

Starts ``setpoint cluster up --memory --no-workloads``, drives it with the load generator of
``bench/apiserver.py`` and profiles the server process while the load runs, in one of two ways:

- ``--sampler cprofile`` (the default): cProfile inside the server, timed by the thread's CPU
  clock, switched on and off by SIGUSR1 around the load. Shares are of CPU time, which is
  what the aims are about; cProfile's own overhead inflates small functions called often.
- ``--sampler py-spy``: py-spy (``pip install py-spy``; ptrace rights on the server) samples
  the stacks of the running server. On a loaded machine its samples are taken while the
  server is runnable but not running too, and those pile up where it is preempted: right
  after send(2) wakes the client. So it shows ~40 % in ``SSLProtocol._process_outgoing``
  although the server's system time is under a tenth of its CPU.

Prints the functions with the largest shares, inclusive and self.

    .venv/bin/python bench/apiserver_profile.py [--requests 20000] [--gets] [--top 30]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.apiserver import NS, configmap
from bench.common import ROOT, Server
from bench.loadgen import LoadGenerator, Target, get_phase, post_phase
from bench.procstats import usage

# the server's CLI under cProfile on the thread's CPU clock; SIGUSR1 switches it on and off
_CPROFILE = """
import cProfile, signal, sys, time
profile, on, out = cProfile.Profile(time.thread_time), [False], sys.argv[1]
def toggle(*_):
    (profile.disable if on[0] else profile.enable)()
    on[0] = not on[0]
    if not on[0]:
        profile.dump_stats(out)
signal.signal(signal.SIGUSR1, toggle)
sys.argv = ["setpoint", *sys.argv[2:]]
from setpoint.cli.main import main
main()
"""


async def _namespace(server: Server) -> None:
    async with server.session() as s, s.post("/api/v1/namespaces", data=orjson.dumps(
            {"metadata": {"name": NS}})) as r:
        assert r.status == 201


def _print_top(title: str, rows: list[tuple[float, str]], total: float, top: int) -> None:
    print(f"-- {title}")
    for value, name in sorted(rows, reverse=True)[:top]:
        print(f"{100 * value / total:5.1f}%  {name.replace(str(ROOT) + '/', '')}")


def _cprofile_report(path: Path, top: int) -> None:
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in stats.values())
    names = {key: f"{key[2]} ({key[0].rsplit('site-packages/', 1)[-1]}:{key[1]})"
             for key in stats}
    print(f"{total:.2f} CPU-s profiled")
    _print_top("inclusive (cumulative)", [(v[3], names[k]) for k, v in stats.items()], total,
               top)
    _print_top("self", [(v[2], names[k]) for k, v in stats.items()], total, top)


def _pyspy_report(raw: Path, top: int) -> None:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = [f.rsplit(":", 1)[0] + ")" if ":" in f else f for f in stack.split(";")]
        total += n
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    print(f"{total} samples")
    _print_top("inclusive", [(v, k) for k, v in inclusive.items()], total, top)
    _print_top("self", [(v, k) for k, v in own.items()], total, top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--gets", action="store_true", help="profile gets, not creates")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sampler", choices=["cprofile", "py-spy"], default="cprofile")
    parser.add_argument("--source", type=Path, default=ROOT, help="the tree to run")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="setpoint-profile-")) / "profile"
    cprofile = args.sampler == "cprofile"
    launcher = ("-c", _CPROFILE, str(out)) if cprofile else ("-m", "setpoint.cli.main")
    server = Server("--no-workloads", source=args.source.resolve(), launcher=launcher).start()
    try:
        asyncio.run(_namespace(server))
        load = LoadGenerator(Target(server.url, server.ca, server.token))
        path = f"/api/v1/namespaces/{NS}/configmaps"
        objects = [configmap(i) for i in range(args.requests)]
        if args.gets:
            load.run(post_phase(path, objects))
        phase = (get_phase(path + "/%s", [o["metadata"]["name"] for o in objects])
                 if args.gets else post_phase(path, objects))
        if cprofile:
            os.kill(server.pid(), signal.SIGUSR1)
        else:
            spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            sampler = subprocess.Popen(
                [spy, "record", "--pid", str(server.pid()), "--rate", "250", "--format",
                 "raw", "--output", str(out), "--nonblocking"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed, _, cpu = load.run(phase, lambda: usage(server.pid()).cpu_seconds)
        if cprofile:
            os.kill(server.pid(), signal.SIGUSR1)
            while not out.exists():
                time.sleep(0.05)
            time.sleep(0.5)  # the dump is written at once; let it finish
        else:
            sampler.send_signal(signal.SIGINT)  # py-spy writes its samples on SIGINT
            sampler.wait(timeout=60)
        load.close()
    finally:
        server.stop()
    what = "gets" if args.gets else "creates"
    print(f"{args.requests} {what} in {elapsed:.2f} s, server CPU {cpu:.2f} s "
          f"({1000 * cpu / args.requests:.3f} ms per request, with the profiler on)")
    (_cprofile_report if cprofile else _pyspy_report)(out, args.top)


if __name__ == "__main__":
    main()
