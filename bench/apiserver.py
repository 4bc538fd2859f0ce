"""Benchmark of the embedded API server, side by side with its floor.

The floor is the same HTTP stack with no API machinery: the server's own HTTP layer (uvicorn)
over the same TLS and token check, keeping request bodies in a dict. Ratios to it show what
Kubernetes semantics (validation, managed fields, storage, watch fan-out) cost on top of HTTP.

    .venv/bin/python bench/apiserver.py [--quick] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import ssl
import subprocess
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, Server, median_min_max, ratio, run_concurrently, spread
from bench.loadgen import LoadGenerator, Target, get_phase, post_phase
from bench.procstats import usage

CONCURRENCY = 16  # aiohttp clients for the LISTs and watches
CONNECTIONS = 8  # per load generator process
DEPTH = 4  # requests pipelined on each connection
NS = "bench"


# -- the floor: the same HTTP and TLS, no API machinery --------------------------------------
def _floor_main(port_queue: Any, cert_dir: str, source: str | None = None,
                at_once: bool = False) -> None:
    import socket

    if source is not None:  # the HTTP layer of that tree (a baseline's floor)
        sys.path.insert(0, source)

    import uvloop

    from setpoint.cluster.authentication.tls import ensure_certs
    from setpoint.cluster.endpoints.http import Request, Response
    from setpoint.cluster.endpoints.httpserver import HTTPServer

    token = "floor-token"
    certs = ensure_certs(Path(cert_dir), ["127.0.0.1"])
    objects: dict[str, bytes] = {}
    revision = 0

    async def handle(request: Request) -> Response:
        nonlocal revision
        if request.headers.get("authorization") != f"Bearer {token}":
            return Response(status=401)
        if request.method == "POST":
            body = orjson.loads(await request.body(4 * 1024 * 1024))
            revision += 1
            body["metadata"]["resourceVersion"] = str(revision)
            created = orjson.dumps(body)
            objects[request.path + "/" + body["metadata"]["name"]] = created
            return Response(created, 201, "application/json")
        if request.method == "GET":
            stored = objects.get(request.path)
            if stored is None:
                prefix = request.path + "/"
                items = [orjson.loads(v) for k, v in objects.items() if k.startswith(prefix)]
                return Response(orjson.dumps({"items": items}), 200, "application/json")
            return Response(stored, 200, "application/json")
        return Response(status=405)

    bearer = f"Bearer {token}".encode()

    def answer_at_once(scope: MutableMapping[str, Any]) -> Response | None:
        """``handle``'s GET of one object, given without a task (--floor-at-once)."""
        if scope["method"] != "GET" or scope["query_string"] \
                or (b"authorization", bearer) not in scope["headers"]:
            return None
        stored = objects.get(scope["path"])
        return None if stored is None else Response(stored, 200, "application/json")

    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        sock.setblocking(False)
        server = HTTPServer(handle, at_once=answer_at_once) if at_once \
            else HTTPServer(handle)
        await server.start(sock, certs.ssl_context(Path(cert_dir)))
        port_queue.put((sock.getsockname()[1], certs.ca_pem.decode(), token))
        await asyncio.Event().wait()

    uvloop.run(main())  # as `setpoint cluster up` runs


class Floor:
    def __init__(self, source: Path | None = None, at_once: bool = False) -> None:
        self.source = source
        self.at_once = at_once

    def start(self) -> Floor:
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        queue: Any = multiprocessing.get_context("spawn").Queue()
        self.proc = multiprocessing.get_context("spawn").Process(
            target=_floor_main, args=(queue, self._tmp.name,
                                      None if self.source is None else str(self.source),
                                      self.at_once),
            daemon=True)
        self.proc.start()
        port, self.ca, self.token = queue.get(timeout=30)
        self.url = f"https://127.0.0.1:{port}"
        return self

    def session(self) -> aiohttp.ClientSession:
        ctx = ssl.create_default_context(cadata=self.ca)
        return aiohttp.ClientSession(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}",
                                        "Content-Type": "application/json"},
            connector=aiohttp.TCPConnector(ssl=ctx, limit=64))

    def stop(self) -> None:
        self.proc.kill()
        self.proc.join()
        self._tmp.cleanup()


# -- measurements -----------------------------------------------------------------------------
def configmap(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:06d}", "labels": {"bench": "yes", "i": str(i % 10)}},
            "data": {"key": "value", "index": str(i)}}


def loaded_phases(target: Target, pid: int, n_create: int, processes: int,
                  ) -> dict[str, float]:
    """Creates then gets from the load generator: throughput, and the server process's CPU
    per request (user+system from /proc) and how busy it was (CPU seconds per wall second:
    1.0 is one core, the most a one-process server can give)."""
    out: dict[str, float] = {}
    load = LoadGenerator(target, processes=processes, connections=CONNECTIONS, depth=DEPTH)
    try:
        path = f"/api/v1/namespaces/{NS}/configmaps"
        objects = [configmap(i) for i in range(n_create)]
        names = [o["metadata"]["name"] for o in objects]
        gets = [names[i % n_create] for i in range(2 * n_create)]
        for what, phase in (("creates", post_phase(path, objects)),
                            ("gets", get_phase(path + "/%s", gets))):
            elapsed, clients_cpu, server_cpu = load.run(
                phase, lambda: usage(pid).cpu_seconds)
            n = len(phase.names)
            out[f"{what}_per_s"] = n / elapsed
            out[f"{what}_server_cpu_ms"] = 1000 * server_cpu / n
            out[f"{what}_client_cpu_ms"] = 1000 * clients_cpu / n
            out[f"{what}_server_busy"] = server_cpu / elapsed
    finally:
        load.close()
    return out


async def list_seconds(session: aiohttp.ClientSession, namespace: str,
                       accept_encoding: str = "identity") -> float:
    """One LIST, read whole (and decoded). ``identity`` keeps the answer plain; ``gzip`` is
    what kubectl and client-go send (Go's transport), which the server compresses once the
    list is over 128 KiB (endpoints/contentencoding.py)."""
    started = time.perf_counter()
    async with session.get(f"/api/v1/namespaces/{namespace}/configmaps",
                           headers={"Accept-Encoding": accept_encoding}) as r:
        assert r.status == 200
        await r.read()
    return time.perf_counter() - started


async def list_phase(session: aiohttp.ClientSession, namespace: str, size: int,
                     pid: int) -> dict[str, float]:
    """The best of three LISTs, plain and gzipped, with the server's CPU for each."""
    out: dict[str, float] = {}
    for suffix, encoding in (("", "identity"), ("_gzip", "gzip")):
        best, cpu = float("inf"), float("inf")
        for _ in range(3):
            before = usage(pid).cpu_seconds
            best = min(best, await list_seconds(session, namespace, encoding))
            cpu = min(cpu, usage(pid).cpu_seconds - before)
        out[f"list_{size}{suffix}_s"] = best
        out[f"list_{size}{suffix}_server_cpu_s"] = cpu
    return out


async def watch_latency(server: Server, watchers: int, events: int = 200) -> float:
    offset = 900_000 + 1000 * watchers
    """Median seconds from a write's acknowledgement start to its event on every watcher."""
    sent: dict[str, float] = {}
    latencies: list[float] = []
    async with server.session(limit=watchers + 4) as session:
        async with session.get(f"/api/v1/namespaces/{NS}/configmaps?limit=1") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        ready = asyncio.Event()
        opened = 0

        async def watcher() -> None:
            nonlocal opened
            url = (f"/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}"
                   "&labelSelector=watch%3Dyes")
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
                opened += 1
                if opened == watchers:
                    ready.set()
                seen = 0
                async for line in resp.content:
                    ev = orjson.loads(line)
                    name = ev["object"]["metadata"]["name"]
                    latencies.append(time.perf_counter() - sent[name])
                    seen += 1
                    if seen == events:
                        return

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        await asyncio.wait_for(ready.wait(), 30)
        for i in range(events):
            body = configmap(offset + i)
            body["metadata"]["labels"]["watch"] = "yes"
            sent[body["metadata"]["name"]] = time.perf_counter()
            async with session.post(f"/api/v1/namespaces/{NS}/configmaps",
                                    data=orjson.dumps(body)) as r:
                assert r.status == 201
            await asyncio.sleep(0.002)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    latencies.sort()
    return latencies[len(latencies) // 2]




async def bench_setpoint(n_create: int, list_sizes: list[int], processes: int,
                         source: Path = ROOT) -> dict[str, float]:
    server = Server("--no-workloads", source=source).start()  # the API server alone
    out: dict[str, float] = {"startup_s": server.startup_seconds}
    try:
        async with server.session() as s, s.post("/api/v1/namespaces", data=orjson.dumps(
                {"metadata": {"name": NS}})) as r:
            assert r.status == 201
        out.update(loaded_phases(Target(server.url, server.ca, server.token), server.pid(),
                                 n_create, processes))
        async with server.session() as s:
            for size in list_sizes:
                ns = f"list-{size}"
                async with s.post("/api/v1/namespaces", data=orjson.dumps(
                        {"metadata": {"name": ns}})) as r:
                    assert r.status == 201

                async def one(i: int, ns: str = ns) -> None:
                    async with s.post(f"/api/v1/namespaces/{ns}/configmaps",
                                      data=orjson.dumps(configmap(i))) as r:
                        assert r.status == 201
                        await r.read()

                await run_concurrently(size, CONCURRENCY, one)
                out.update(await list_phase(s, ns, size, server.pid()))
        out["watch_latency_1_ms"] = 1000 * await watch_latency(server, 1)
        out["watch_latency_50_ms"] = 1000 * await watch_latency(server, 50)
    finally:
        server.stop()
    return out


async def bench_floor(n_create: int, list_sizes: list[int], processes: int,
                      source: Path | None = None, at_once: bool = False) -> dict[str, float]:
    floor = Floor(source, at_once).start()
    out: dict[str, float] = {}
    try:
        assert floor.proc.pid is not None
        out.update(loaded_phases(Target(floor.url, floor.ca, floor.token), floor.proc.pid,
                                 n_create, processes))
        async with floor.session() as s:
            for size in list_sizes:
                ns = f"list-{size}"

                async def one(i: int, ns: str = ns) -> None:
                    async with s.post(f"/api/v1/namespaces/{ns}/configmaps",
                                      data=orjson.dumps(configmap(i))) as r:
                        await r.read()

                await run_concurrently(size, CONCURRENCY, one)
                out.update(await list_phase(s, ns, size, floor.proc.pid))
    finally:
        floor.stop()
    return out


def bare_interpreter_seconds(runs: int = 5) -> float:
    """The machine's speed as a yardstick: the best start of a bare ``python -S -I -c pass``."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-I", "-c", "pass"], check=True)
        best = min(best, time.perf_counter() - started)
    return best


ROWS = [("ConfigMap creates/s", "creates_per_s", 0),
        ("server CPU per create, ms", "creates_server_cpu_ms", 3),
        ("server busy during creates, cores", "creates_server_busy", 2),
        ("load generator CPU per create, ms", "creates_client_cpu_ms", 3),
        ("ConfigMap gets/s", "gets_per_s", 0),
        ("server CPU per get, ms", "gets_server_cpu_ms", 3),
        ("server busy during gets, cores", "gets_server_busy", 2),
        ("load generator CPU per get, ms", "gets_client_cpu_ms", 3),
        ("LIST of 1,000 ConfigMaps, ms", "list_1000_s", 1),
        ("LIST of 10,000 ConfigMaps, ms", "list_10000_s", 1),
        ("server CPU per LIST of 10,000, ms", "list_10000_server_cpu_s", 1),
        ("LIST of 10,000 ConfigMaps, gzip asked (as kubectl), ms", "list_10000_gzip_s", 1),
        ("server CPU per gzipped LIST of 10,000, ms", "list_10000_gzip_server_cpu_s", 1),
        ("watch delivery, 1 watcher, ms", "watch_latency_1_ms", 2),
        ("watch delivery, 50 watchers, ms", "watch_latency_50_ms", 2),
        ("process start to ready, s", "startup_s", 2)]


def table(results: dict[str, list[dict[str, float]]]) -> str:
    """The results as a Markdown table: median (min-max) per contender, and the ratios of
    the medians to the floor (and to the baseline, when one ran)."""
    who = list(results)
    head = ["measure", *who, *(f"{w} / floor" for w in who if w != "floor")]
    if "baseline" in who:
        head.append("setpoint / baseline")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, key, digits in ROWS:
        scale = 1000.0 if key.startswith("list_") else 1.0
        cells = {w: [scale * r[key] for r in rows if key in r] for w, rows in results.items()}
        if not any(cells.values()):
            continue
        row = [label, *(spread(cells[w], digits) for w in who)]
        row += [ratio(cells[w], cells["floor"]) for w in who if w != "floor"]
        if "baseline" in who:
            row.append(ratio(cells["setpoint"], cells["baseline"]))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2,
                        help="load generator processes (default 2)")
    parser.add_argument("--baseline", type=Path,
                        help="also run the server of this source tree (e.g. an export of "
                             "main), interleaved with this one, for before/after ratios")
    parser.add_argument("--baseline-floor", action="store_true",
                        help="also run the floor on the baseline's HTTP layer (the floor "
                             "shares the server's HTTP layer, so a change there is its too)")
    parser.add_argument("--floor-at-once", action="store_true",
                        help="also run the floor answering its GETs at once, without a task "
                             "each (the HTTP layer's AtOnce, as the server's remembered GETs)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    n_create, sizes, runs = (1000, [1000], 1) if args.quick else (5000, [1000, 10000], args.runs)
    results: dict[str, list[dict[str, float]]] = {"setpoint": [], "floor": []}
    if args.floor_at_once:
        results["floor_at_once"] = []
    if args.baseline:
        results["baseline"] = []
        if args.baseline_floor:
            results["baseline_floor"] = []
    yardstick = bare_interpreter_seconds()
    for _ in range(runs):  # interleaved, so that drift on the machine hits all alike
        results["setpoint"].append(asyncio.run(bench_setpoint(n_create, sizes, args.processes)))
        results["floor"].append(asyncio.run(bench_floor(n_create, sizes, args.processes)))
        if args.floor_at_once:
            results["floor_at_once"].append(asyncio.run(bench_floor(
                n_create, sizes, args.processes, at_once=True)))
        if args.baseline:
            results["baseline"].append(asyncio.run(bench_setpoint(
                n_create, sizes, args.processes, args.baseline.resolve())))
            if args.baseline_floor:
                results["baseline_floor"].append(asyncio.run(bench_floor(
                    n_create, sizes, args.processes, args.baseline.resolve())))
    summary: dict[str, Any] = {
        "machine": f"{os.cpu_count()} cores", "bare_interpreter_s": round(yardstick, 4),
        "load_average_1min": os.getloadavg()[0], "runs": runs, "creates": n_create,
        "load": {"processes": args.processes, "connections": CONNECTIONS, "depth": DEPTH}}
    for who, rows in results.items():
        summary[who] = {k: median_min_max([r[k] for r in rows]) for k in rows[0]}
    print(json.dumps(summary, indent=2))
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({**summary, "table": table(results)}, indent=2))


if __name__ == "__main__":
    main()
