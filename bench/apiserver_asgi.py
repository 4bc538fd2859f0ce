"""CPU per ConfigMap create (or GET) of the API alone: the ASGI application, in process.

No uvicorn, no TLS, no sockets, no load generator: an ``APIServer`` with its controllers
started, the handler ``setpoint cluster up`` serves (authentication, routing, RBAC, decoding,
admission, managed fields, validation, the store, the answer's JSON), called with one
request after another. What ``bench/apiserver.py`` measures besides this is the HTTP layer,
which the floor measures too. With ``--baseline DIR`` the same runs go to the tree in DIR
(an export of ``main``), interleaved, each tree in its own process.

    .venv/bin/python bench/apiserver_asgi.py [--baseline DIR] [--runs 5] [--creates 5000]
        [--gets]

With ``--gets`` the rounds are GETs of the ConfigMaps one round created, each once: what a
GET costs besides the HTTP layer (authentication, routing, negotiation, the stored bytes).

With ``--audit LEVEL`` this tree (not the baseline) audits every request at LEVEL (a policy
of one rule, the log a temporary file): ``--audit Metadata --baseline .`` is the cost of
auditing, ``--baseline <main>`` without it the cost of having it when it is off. The
environment's ``SETPOINT_BENCH_AUDIT_FLAGS`` gives more of ``cluster up``'s log flags
(``"--audit-log-mode=batch --audit-log-batch-max-size=512"``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


async def _measure(creates: int, rounds: int, gets: bool = False) -> float:
    """The least CPU per create (per GET with ``gets``), in microseconds, over ``rounds``
    rounds of ``creates`` requests."""
    import orjson

    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.endpoints.httpserver import asgi
    from setpoint.cluster.endpoints.server import Handler

    api = APIServer(None, ca_pem=b"CA")
    api.start()
    level = os.environ.get("SETPOINT_BENCH_AUDIT")
    if level:
        import tempfile

        from setpoint.cli.auditflags import audit_options
        from setpoint.cluster.audit.backends import build_backend
        from setpoint.cluster.audit.policy import policy_from_document
        from setpoint.cluster.endpoints.auditing import Auditor

        log = Path(tempfile.mkdtemp(prefix="setpoint-bench-")) / "audit.log"
        # SETPOINT_BENCH_AUDIT_FLAGS: more of cluster up's --audit-log-* flags, "name=value"
        flags = dict(f.split("=", 1) for f in os.environ.get(
            "SETPOINT_BENCH_AUDIT_FLAGS", "").split() if f)
        backend = build_backend(audit_options("", str(log), {
            "audit_" + k.removeprefix("--audit-").replace("-", "_"): v
            for k, v in flags.items()}))
        assert backend is not None
        app = asgi(Handler(api.front_parts(), "token", Auditor(policy_from_document({
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": level}]}),
            backend)))
    else:
        app = asgi(Handler(api.front_parts(), "token"))

    async def call(path: str, body: bytes, method: str = "POST") -> int:
        scope = {"type": "http", "method": method, "path": path, "query_string": b"",
                 "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer token"),
                             (b"content-type", b"application/json"),
                             (b"accept", b"application/json"),
                             (b"content-length", str(len(body)).encode()),
                             (b"user-agent", b"bench")]}
        received = False

        async def receive() -> dict[str, Any]:
            nonlocal received
            if not received:
                received = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client stays
            return {}

        sent: list[MutableMapping[str, Any]] = []

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)
        return int(sent[0]["status"])

    assert await call("/api/v1/namespaces", b'{"metadata":{"name":"bench"}}') == 201
    best = float("inf")
    if gets:
        path = "/api/v1/namespaces/bench/configmaps"
        for i in range(creates):
            body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": f"cm-{i:06d}"}, "data": {"key": "value", "index": str(i)}})
            assert await call(path, body) == 201
        for _ in range(rounds):
            start = time.process_time()
            for i in range(creates):
                assert await call(f"{path}/cm-{i:06d}", b"", "GET") == 200
            best = min(best, time.process_time() - start)
        await api.stop()
        return 1e6 * best / creates
    for r in range(rounds):
        bodies = [orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"cm-{r}-{i:06d}", "labels": {"bench": "yes", "i": str(i % 10)}},
            "data": {"key": "value", "index": str(i)}}) for i in range(creates)]
        start = time.process_time()
        for body in bodies:
            assert await call("/api/v1/namespaces/bench/configmaps", body) == 201
        best = min(best, time.process_time() - start)
    await api.stop()
    return 1e6 * best / creates


def _run_tree(source: Path, creates: int, rounds: int, gets: bool, audit: str = "") -> float:
    env = {**os.environ, "PYTHONPATH": str(source), "SETPOINT_BENCH_AUDIT": audit}
    out = subprocess.run([sys.executable, __file__, "--child", str(creates), str(rounds),
                          str(int(gets))],
                         env=env, cwd=source, check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="another source tree, run interleaved")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--creates", type=int, default=5000, help="creates per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per run (least counts)")
    parser.add_argument("--gets", action="store_true", help="GETs, not creates")
    parser.add_argument("--audit", default="", help="audit this tree's requests at LEVEL")
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        creates, rounds, gets = args.child
        print(asyncio.run(_measure(creates, rounds, bool(gets))))
        return
    trees = {"setpoint": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    results: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            results[name].append(_run_tree(tree, args.creates, args.rounds, args.gets,
                                           args.audit if name == "setpoint" else ""))
    summary: dict[str, Any] = {name: {"median_us": round(statistics.median(v), 1),
                                      "runs_us": [round(x, 1) for x in v]}
                               for name, v in results.items()}
    if args.baseline:
        ratios = [a / b for a, b in zip(results["setpoint"], results["baseline"], strict=True)]
        summary["setpoint/baseline"] = {"median": round(statistics.median(ratios), 2),
                                        "runs": [round(x, 2) for x in ratios]}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
