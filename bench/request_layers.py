"""User instructions per request in each layer of the SDK's client, as the workloads use it.

    .venv/bin/python bench/request_layers.py [--root DIR ...] [--requests 2000]

A child process (the SDK of each tree given with ``--root``, this tree by default) makes
core/v1 Event POSTs, 50 at once over 25 kept-alive TLS connections (the workloads'
bound), through one layer each time:

- ``none``: the Event's dict and its JSON, a task and a semaphore per request, no request;
- ``pool``: the request's bytes built by hand and sent with ``ConnectionPool.send``
  (``setpoint.client.http1``: TLS, httptools, the answer's headers), the answer decoded;
- ``transport``: ``Transport.request`` (retries, records, metrics, target and headers);
- ``client``: ``Client.create`` (the resource's path, parameters, the answer decoded and
  remembered).

Each child runs under ``perf stat -e instructions:u`` twice, with ``--requests`` and with a
fifth of them; the difference over the difference in requests is the cost of one request
without the child's start (steady at any load). The server (this tree's, the same for
every child) is not counted. Results: docs/benchmarks.md, Workloads, seventeenth pass.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODES = ("none", "pool", "transport", "client")
CONNECTIONS = 25
IN_FLIGHT = 50


def event(i: int, tag: str) -> dict[str, Any]:
    """A core/v1 Event as the scheduler's recorder writes one."""
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"p-{tag}-{i:06d}.1800000000000000", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "default",
                           "name": f"p-{i}", "uid": "u"},
        "reason": "Scheduled", "message": f"Successfully assigned default/p-{i} to node-1",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": "2026-11-27T18:00:00Z", "lastTimestamp": "2026-11-27T18:00:00Z",
        "count": 1, "type": "Normal", "reportingComponent": "default-scheduler",
        "reportingInstance": ""}


async def child(kubeconfig: str, mode: str, requests: int) -> None:
    """The measured client: runs in its own process, the tree under test first on its path."""
    import orjson

    from setpoint.client import Client

    client = Client.from_kubeconfig(kubeconfig, max_connections=CONNECTIONS)
    tag = f"{mode}-{os.getpid()}"
    await client.create(event(0, tag + "-warm"))  # the connection and discovery first
    transport = client.transport
    loop = asyncio.get_running_loop()
    auth = transport.config.auth
    creds = auth.known() if auth is not None else None
    authorization = creds.authorization if creds is not None else None
    bound = asyncio.Semaphore(IN_FLIGHT)

    async def one(i: int) -> None:
        async with bound:
            made = event(i, tag)
            if mode == "client":
                await client.create(made)
                return
            body = orjson.dumps(made)
            if mode == "transport":
                answer = await transport.request(
                    "POST", "/api/v1/namespaces/default/events",
                    params={"fieldManager": "bench"}, body=body)
                orjson.loads(answer.body)
            elif mode == "pool":
                block = transport._header_block(authorization, "application/json")
                request = (
                    "POST /api/v1/namespaces/default/events?fieldManager=bench HTTP/1.1\r\n"
                    f"Host: {transport._host_header}\r\n{block}"
                    f"Content-Length: {len(body)}\r\n\r\n").encode() + body
                pool = transport._connection_pool(loop)
                tls = transport._ssl_context(creds) if creds is not None else None
                sent = await pool.send(request, tls, transport.config.tls_server_name or None)
                orjson.loads(sent.body)

    await asyncio.gather(*(one(i) for i in range(requests)))
    await client.close()


def instructions(root: Path, kubeconfig: Path, mode: str, requests: int) -> float:
    out = Path(tempfile.mkdtemp(prefix="setpoint-bench-layers-")) / "perf.txt"
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run(
        ["perf", "stat", "-x", ",", "-e", "instructions:u", "-o", str(out), "--",
         sys.executable, str(ROOT / "bench" / "request_layers.py"), "--child",
         str(kubeconfig), "--mode", mode, "--requests", str(requests)],
        cwd=root, env=env, check=True)
    for line in out.read_text().splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2].startswith("instructions"):
            return float(parts[0])
    raise RuntimeError(f"no instruction count in {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append")
    parser.add_argument("--requests", type=int, default=2500)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--child")
    parser.add_argument("--mode")
    args = parser.parse_args(argv)
    if args.child:
        import uvloop

        uvloop.run(child(args.child, args.mode, args.requests))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.common import Server, bare_interpreter_s

    roots = [r.resolve() for r in (args.root or [ROOT])]
    print(f"load {os.getloadavg()[0]:.1f}, bare interpreter {bare_interpreter_s():.3f} s")
    server = Server("--no-workloads").start()
    try:
        few = args.requests // 5
        for root in roots:
            for mode in args.modes.split(","):
                many = instructions(root, server.kubeconfig, mode, args.requests)
                base = instructions(root, server.kubeconfig, mode, few)
                per = (many - base) / (args.requests - few)
                print(f"{root} {mode}: {per / 1e3:.1f} k user instructions per request",
                      flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
