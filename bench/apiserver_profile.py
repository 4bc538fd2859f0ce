"""Where the embedded server's CPU goes under a load of ConfigMap creates (or gets).

Starts ``setpoint cluster up --memory --no-workloads``, drives it with the load generator of
``bench/apiserver.py`` and profiles the server process while the load runs, in one of two ways:

- ``--sampler cpu`` (the default): a sampler inside the server on the process's CPU clock
  (``ITIMER_PROF``: a sample per millisecond of CPU, user and system), switched on and off by
  SIGUSR1 around the load. Time in C (TLS, system calls, orjson) counts for the Python
  function that called it. Shares are of CPU time, which is what the aims are about.
- ``--sampler py-spy``: py-spy (``pip install py-spy``; ptrace rights on the server) samples
  the stacks of the running server. On a loaded machine its samples are taken while the
  server is runnable but not running too, and those pile up where it is preempted: right
  after send(2) wakes the client. So it shows ~40 % in ``SSLProtocol._process_outgoing``
  although the server's system time is under a tenth of its CPU.

Prints the functions with the largest shares, inclusive and self.

    .venv/bin/python bench/apiserver_profile.py [--requests 20000] [--gets] [--top 30]
        [--list SIZE] [--sampler py-spy [--native] [--rate 500]]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import cpu_sampler as cpu_sampler_cli
from bench.apiserver import NS, configmap
from bench.common import ROOT, Server
from bench.loadgen import LoadGenerator, Target, get_phase, post_phase
from bench.procstats import usage


async def _namespace(server: Server) -> None:
    async with server.session() as s, s.post("/api/v1/namespaces", data=orjson.dumps(
            {"metadata": {"name": NS}})) as r:
        assert r.status == 201


def _print_top(title: str, rows: list[tuple[float, str]], total: float, top: int) -> None:
    print(f"-- {title}")
    for value, name in sorted(rows, reverse=True)[:top]:
        print(f"{100 * value / total:5.1f}%  {name.replace(str(ROOT) + '/', '')}")


def _report(raw: Path, top: int) -> None:
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
    parser.add_argument("--list", type=int, metavar="SIZE",
                        help="profile LISTs of a namespace of SIZE ConfigMaps (--requests "
                             "of them), not creates")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sampler", choices=["cpu", "py-spy"], default="cpu")
    parser.add_argument("--source", type=Path, default=ROOT, help="the tree to run")
    parser.add_argument("--rate", type=int, default=250, help="py-spy's samples per second")
    parser.add_argument("--native", action="store_true",
                        help="py-spy: include native frames (C extensions, uvloop)")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="setpoint-profile-")) / "profile"
    cpu_sampler = args.sampler == "cpu"
    launcher = (tuple(cpu_sampler_cli.launcher(out)) if cpu_sampler
                else ("-m", "setpoint.cli.main"))
    server = Server("--no-workloads", source=args.source.resolve(), launcher=launcher).start()
    try:
        asyncio.run(_namespace(server))
        load = LoadGenerator(Target(server.url, server.ca, server.token))
        path = f"/api/v1/namespaces/{NS}/configmaps"
        objects = [configmap(i) for i in range(args.requests)]
        if args.list is not None:
            load.run(post_phase(path, objects[:args.list]))
            phase = get_phase(path + "%s", [""] * args.requests)
        elif args.gets:
            load.run(post_phase(path, objects))
            phase = get_phase(path + "/%s", [o["metadata"]["name"] for o in objects])
        else:
            phase = post_phase(path, objects)
        if cpu_sampler:
            os.kill(server.pid(), signal.SIGUSR1)
        else:
            spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
            sampler = subprocess.Popen(
                [spy, "record", "--pid", str(server.pid()), "--rate", str(args.rate),
                 "--format", "raw", "--output", str(out),
                 *(("--native",) if args.native else ("--nonblocking",))],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed, _, cpu = load.run(phase, lambda: usage(server.pid()).cpu_seconds)
        if cpu_sampler:
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
    what = (f"LISTs of {args.list}" if args.list is not None
            else "gets" if args.gets else "creates")
    print(f"{args.requests} {what} in {elapsed:.2f} s, server CPU {cpu:.2f} s "
          f"({1000 * cpu / args.requests:.3f} ms per request, with the profiler on)")
    _report(out, args.top)


if __name__ == "__main__":
    main()
