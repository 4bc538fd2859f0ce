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
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Server, median_min_max, run_concurrently

CONCURRENCY = 16
NS = "bench"


# -- the floor: the same HTTP and TLS, no API machinery --------------------------------------
def _floor_main(port_queue: Any, cert_dir: str) -> None:
    import socket

    import uvloop

    from setpoint.cluster.authentication.tls import ensure_certs
    from setpoint.cluster.endpoints.http import HTTPServer, Request, Response

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
            data = orjson.dumps(body)
            objects[request.path + "/" + body["metadata"]["name"]] = data
            return Response(data, 201, "application/json")
        if request.method == "GET":
            data = objects.get(request.path)
            if data is None:
                prefix = request.path + "/"
                items = [orjson.loads(v) for k, v in objects.items() if k.startswith(prefix)]
                return Response(orjson.dumps({"items": items}), 200, "application/json")
            return Response(data, 200, "application/json")
        return Response(status=405)

    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        sock.setblocking(False)
        server = HTTPServer(handle)
        await server.start(sock, certs.ssl_context(Path(cert_dir)))
        port_queue.put((sock.getsockname()[1], certs.ca_pem.decode(), token))
        await asyncio.Event().wait()

    uvloop.run(main())  # as `setpoint cluster up` runs


class Floor:
    def start(self) -> Floor:
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        queue: Any = multiprocessing.get_context("spawn").Queue()
        self.proc = multiprocessing.get_context("spawn").Process(
            target=_floor_main, args=(queue, self._tmp.name), daemon=True)
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


async def creates(session: aiohttp.ClientSession, n: int, offset: int = 0) -> float:
    path = f"/api/v1/namespaces/{NS}/configmaps"

    async def one(i: int) -> None:
        async with session.post(path, data=orjson.dumps(configmap(offset + i))) as r:
            assert r.status == 201, await r.text()
            await r.read()

    return n / await run_concurrently(n, CONCURRENCY, one)


async def gets(session: aiohttp.ClientSession, n: int, existing: int) -> float:
    async def one(i: int) -> None:
        path = f"/api/v1/namespaces/{NS}/configmaps/cm-{i % existing:06d}"
        async with session.get(path) as r:
            assert r.status == 200
            await r.read()

    return n / await run_concurrently(n, CONCURRENCY, one)


async def list_seconds(session: aiohttp.ClientSession, namespace: str) -> float:
    started = time.perf_counter()
    async with session.get(f"/api/v1/namespaces/{namespace}/configmaps") as r:
        assert r.status == 200
        await r.read()
    return time.perf_counter() - started


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


async def bench_setpoint(n_create: int, list_sizes: list[int]) -> dict[str, float]:
    server = Server("--no-workloads").start()  # the API server alone
    out: dict[str, float] = {"startup_s": server.startup_seconds}
    try:
        async with server.session() as s:
            async with s.post("/api/v1/namespaces", data=orjson.dumps(
                    {"metadata": {"name": NS}})) as r:
                assert r.status == 201
            out["creates_per_s"] = await creates(s, n_create)
            out["gets_per_s"] = await gets(s, n_create * 2, n_create)
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
                out[f"list_{size}_s"] = min([await list_seconds(s, ns) for _ in range(3)])
        out["watch_latency_1_ms"] = 1000 * await watch_latency(server, 1)
        out["watch_latency_50_ms"] = 1000 * await watch_latency(server, 50)
    finally:
        server.stop()
    return out


async def bench_floor(n_create: int, list_sizes: list[int]) -> dict[str, float]:
    floor = Floor().start()
    out: dict[str, float] = {}
    try:
        async with floor.session() as s:
            out["creates_per_s"] = await creates(s, n_create)
            out["gets_per_s"] = await gets(s, n_create * 2, n_create)
            for size in list_sizes:
                ns = f"list-{size}"

                async def one(i: int, ns: str = ns) -> None:
                    async with s.post(f"/api/v1/namespaces/{ns}/configmaps",
                                      data=orjson.dumps(configmap(i))) as r:
                        await r.read()

                await run_concurrently(size, CONCURRENCY, one)
                out[f"list_{size}_s"] = min([await list_seconds(s, ns) for _ in range(3)])
    finally:
        floor.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, one run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    n_create, sizes, runs = (500, [1000], 1) if args.quick else (5000, [1000, 10000], args.runs)
    results: dict[str, list[dict[str, float]]] = {"setpoint": [], "floor": []}
    for _ in range(runs):
        results["setpoint"].append(asyncio.run(bench_setpoint(n_create, sizes)))
        results["floor"].append(asyncio.run(bench_floor(n_create, sizes)))
    summary: dict[str, Any] = {"machine": f"{os.cpu_count()} cores", "runs": runs,
                               "creates": n_create, "concurrency": CONCURRENCY}
    for who, rows in results.items():
        summary[who] = {k: median_min_max([r[k] for r in rows]) for k in rows[0]}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
