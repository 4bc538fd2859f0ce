"""Benchmark of the store: LISTs that cost what they return, writes that stay flat, memory.

Drives ``setpoint cluster up --no-workloads`` in its own process over TLS, as
``bench/apiserver.py`` does, and reports:

- creates/s of ConfigMaps (16 clients) per tenth of N objects, in memory and on SQLite
  (``--data``): flat from the first to the N-th object is the aim;
- a LIST of a one-item namespace beside N objects in other namespaces, alone and right after
  a write (the aim: at most 2 ms, whatever N);
- a LIST of 10,000 ConfigMaps, beside the floor of ``bench/apiserver.py`` (the same HTTP and
  TLS with no API machinery) in the same run;
- the server's resident memory per object, and what a full LIST of every object leaves
  behind once it is answered;
- on SQLite: restart to ready with N objects, and the first LIST after it.

    .venv/bin/python bench/store.py [--objects 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.apiserver import Floor, configmap
from bench.common import ROOT, Server, bare_interpreter_s, run_concurrently
from bench.procstats import usage

CONCURRENCY = 16
PER_NAMESPACE = 10_000  # the big namespaces hold this many each: a LIST of one is "10,000"
SEGMENTS = 10


def store_server(data: Path | None = None, source: Path = ROOT) -> Server:
    """``setpoint cluster up --no-workloads`` of the tree ``source``, in memory or on
    ``data`` (kept across restarts)."""
    return Server("--no-workloads", data=data, source=source)


async def _namespace(s: aiohttp.ClientSession, name: str) -> None:
    async with s.post("/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": name}})) as r:
        assert r.status in (201, 409), await r.text()


async def create_all(s: aiohttp.ClientSession, n: int,
                     pid: int) -> tuple[list[float], list[float]]:
    """Create ``n`` ConfigMaps in namespaces of PER_NAMESPACE each; creates/s per tenth, and
    the server process's CPU per create (ms, all its threads) per tenth: on a loaded machine
    the rate follows the load, the CPU per create follows the server."""
    for b in range((n + PER_NAMESPACE - 1) // PER_NAMESPACE):
        await _namespace(s, f"big-{b}")

    async def one(i: int) -> None:
        path = f"/api/v1/namespaces/big-{i // PER_NAMESPACE}/configmaps"
        async with s.post(path, data=orjson.dumps(configmap(i))) as r:
            assert r.status == 201, await r.text()
            await r.read()

    rates, cpu_ms = [], []
    step = n // SEGMENTS
    for seg in range(SEGMENTS):
        cpu = usage(pid).cpu_seconds
        async def one_of_segment(i: int, base: int = seg * step) -> None:
            await one(base + i)

        seconds = await run_concurrently(step, CONCURRENCY, one_of_segment)
        rates.append(step / seconds)
        cpu_ms.append(1000 * (usage(pid).cpu_seconds - cpu) / step)
    return rates, cpu_ms


async def list_ms(s: aiohttp.ClientSession, path: str) -> float:
    started = time.perf_counter()
    async with s.get(path) as r:
        assert r.status == 200, await r.text()
        await r.read()
    return 1000 * (time.perf_counter() - started)


async def small_lists(s: aiohttp.ClientSession, repeats: int = 20) -> tuple[float, float]:
    """Median ms of a LIST of the one-item namespace, alone and right after a write."""
    await _namespace(s, "small")
    lonely = configmap(0)
    lonely["metadata"]["labels"]["app"] = "lonely"  # the one object a label selector finds
    async with s.post("/api/v1/namespaces/small/configmaps", data=orjson.dumps(lonely)) as r:
        assert r.status in (201, 409)
    path = "/api/v1/namespaces/small/configmaps"
    await list_ms(s, path)
    alone = [await list_ms(s, path) for _ in range(repeats)]
    after = []
    for i in range(repeats):
        async with s.post("/api/v1/namespaces/big-0/configmaps",
                          data=orjson.dumps(configmap(990_000 + i))) as r:
            assert r.status == 201
        after.append(await list_ms(s, path))
    return statistics.median(alone), statistics.median(after)


async def bench_memory(n: int, source: Path) -> dict[str, Any]:
    server = store_server(source=source).start()
    out: dict[str, Any] = {}
    try:
        async with server.session() as s:
            await _namespace(s, "probe")
            rss0 = server.rss_mib()
            out["creates_per_s"], out["cpu_ms_per_create"] = await create_all(
                s, n, server.pid())
            out["rss_per_object_kb"] = (server.rss_mib() - rss0) * 1024 / n
            out["list_one_ms"], out["list_one_after_write_ms"] = await small_lists(s)
            selected = "/api/v1/configmaps?labelSelector=app%3Dlonely"
            out["list_label_one_of_all_ms"] = min([await list_ms(s, selected)
                                                   for _ in range(5)])
            await list_ms(s, "/api/v1/namespaces/big-0/configmaps")
            out["list_10000_ms"] = min([await list_ms(s, "/api/v1/namespaces/big-0/configmaps")
                                        for _ in range(5)])
            out["list_10000_limit_500_ms"] = min(
                [await list_ms(s, "/api/v1/namespaces/big-0/configmaps?limit=500")
                 for _ in range(5)])
            before = server.rss_mib()
            out["list_all_ms"] = await list_ms(s, "/api/v1/configmaps")
            await asyncio.sleep(1.0)  # quiet period: let the answer's buffers be released
            out["rss_kept_after_full_list_mib"] = server.rss_mib() - before
    finally:
        server.stop()
    return out


async def bench_sqlite(n: int, source: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="setpoint-bench-data-") as tmp:
        data = Path(tmp) / "cluster"
        server = store_server(data, source).start()
        try:
            async with server.session() as s:
                out["creates_per_s"], out["cpu_ms_per_create"] = await create_all(
                    s, n, server.pid())
        finally:
            server.stop()
        server = store_server(data, source).start()
        out["restart_to_ready_s"] = server.startup_seconds
        try:
            async with server.session() as s:
                out["first_list_10000_ms"] = await list_ms(
                    s, "/api/v1/namespaces/big-0/configmaps")
        finally:
            server.stop()
    return out


async def bench_floor() -> dict[str, Any]:
    floor = Floor().start()
    out: dict[str, Any] = {}
    try:
        async with floor.session() as s:
            async def one(i: int) -> None:
                async with s.post("/api/v1/namespaces/big-0/configmaps",
                                  data=orjson.dumps(configmap(i))) as r:
                    await r.read()

            await run_concurrently(PER_NAMESPACE, CONCURRENCY, one)
            path = "/api/v1/namespaces/big-0/configmaps"
            await list_ms(s, path)
            out["list_10000_ms"] = min([await list_ms(s, path) for _ in range(5)])
    finally:
        floor.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--only-sqlite", action="store_true")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="the source tree whose server to run (an export of main: before)")
    args = parser.parse_args()
    summary: dict[str, Any] = {"machine": f"{os.cpu_count()} cores",
                               "interpreter_start_s": min(bare_interpreter_s() for _ in range(5)),
                               "objects": args.objects, "concurrency": CONCURRENCY,
                               "source": str(args.source)}
    if not args.only_sqlite:
        summary["memory"] = asyncio.run(bench_memory(args.objects, args.source))
        summary["floor"] = asyncio.run(bench_floor())
        summary["list_10000_x_floor"] = (summary["memory"]["list_10000_ms"]
                                         / summary["floor"]["list_10000_ms"])
    if not args.skip_sqlite:
        summary["sqlite"] = asyncio.run(bench_sqlite(args.objects, args.source))
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
