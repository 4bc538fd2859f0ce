"""CPU per create of the embedded server, user and system apart, and of the floor.

A quick look at where a create's CPU goes between the process's own code (user) and the
kernel (system: send(2), recv(2), epoll, loopback TCP), for the server at ``--source`` and the
floor, each under the same load of 5,000 ConfigMap creates from ``bench/loadgen.py``.

    .venv/bin/python bench/apiserver_split.py [--creates 5000] [--source DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.apiserver import CONNECTIONS, DEPTH, NS, Floor, configmap
from bench.common import ROOT, Server
from bench.loadgen import LoadGenerator, Target, post_phase

_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def _creates(target: Target, pid: int, n: int) -> tuple[float, float]:
    load = LoadGenerator(target, connections=CONNECTIONS, depth=DEPTH)
    try:
        path = f"/api/v1/namespaces/{NS}/configmaps"
        phase = post_phase(path, [configmap(i) for i in range(n)])
        before = _cpu(pid)
        load.run(phase, lambda: 0.0)
        after = _cpu(pid)
    finally:
        load.close()
    return tuple(1000 * (a - b) / n for a, b in zip(after, before, strict=True))  # type: ignore[return-value]


async def _namespace(server: Server) -> None:
    async with server.session() as s, s.post("/api/v1/namespaces", data=orjson.dumps(
            {"metadata": {"name": NS}})) as r:
        assert r.status == 201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--creates", type=int, default=5000)
    parser.add_argument("--source", type=Path, default=ROOT)
    args = parser.parse_args()
    server = Server("--no-workloads", source=args.source.resolve()).start()
    try:
        asyncio.run(_namespace(server))
        user, system = _creates(Target(server.url, server.ca, server.token), server.pid(),
                                args.creates)
    finally:
        server.stop()
    print(f"server: {user:.3f} ms user + {system:.3f} ms system per create")
    floor = Floor().start()
    try:
        assert floor.proc.pid is not None
        user, system = _creates(Target(floor.url, floor.ca, floor.token), floor.proc.pid,
                                args.creates)
    finally:
        floor.stop()
    print(f"floor:  {user:.3f} ms user + {system:.3f} ms system per create")


if __name__ == "__main__":
    main()
