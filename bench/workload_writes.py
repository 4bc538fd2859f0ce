"""What the simulated cluster writes per pod, by verb and resource, while pods become Ready
and while they roll out, and the watches it holds with the events each sends: the census
behind the Workloads section of docs/benchmarks.md.

    .venv/bin/python bench/workload_writes.py [--deployments 20] [--grace 0]

A bare API server (``cluster up --no-workloads``) in its own process; the workloads (nodes,
scheduler, kubelets, controllers: ``setpoint.workloads.supervised.run``) in this process,
reaching the server through the testing kit's :class:`~setpoint.testing.ApiProxy`, which
counts every request by Kubernetes verb and resource. The driver's own requests (the
Deployments, its watches) go to the server directly and are not counted. The floor writes 3
per pod to make it Ready (create, binding, status) and 4 per replaced pod in a rollout.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import workload_objects as objects
from bench.common import Server, run_concurrently
from bench.watching import Mirror
from bench.workload_census import Converged, PodCensus, rolled_out
from bench.workload_objects import NS, REPLICAS
from bench.workloads import CONCURRENCY, _expect, _namespace
from setpoint.client import load_kubeconfig
from setpoint.testing import ApiProxy
from setpoint.testing.requestinfo import RequestInfo
from setpoint.workloads.settings import WorkloadSettings
from setpoint.workloads.supervised import run as run_workloads

WRITES = ("create", "update", "patch", "delete", "deletecollection")


class WatchCountingProxy(ApiProxy):
    """The proxy, counting the events of every watch it forwards (one JSON line each), by
    resource and selectors, and the watches opened the same way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watch_events: Counter[str] = Counter()
        self.watch_chunks: Counter[str] = Counter()  # reads of the stream, as they came
        self.watches_opened: Counter[str] = Counter()

    async def _stream(self, request: web.Request, info: RequestInfo,
                      upstream: aiohttp.ClientResponse,
                      headers: CIMultiDict[str]) -> web.StreamResponse:
        key = _watch_key(info, request)
        self.watches_opened[key] += 1
        counted: Any = _Counted(upstream, self, key)  # stands in for the response
        return await super()._stream(request, info, counted, headers)


def _watch_key(info: RequestInfo, request: web.Request) -> str:
    selectors = " ".join(f"{k}={request.query[k]}" for k in ("labelSelector", "fieldSelector")
                         if request.query.get(k))
    scope = f"ns/{info.namespace} " if info.namespace else ""
    group = f".{info.group}" if info.group else ""
    return f"{info.resource}{group} {scope}{selectors}".rstrip()


class _Counted:
    """A watch's upstream response whose chunks are counted by their newlines (events)."""

    def __init__(self, upstream: aiohttp.ClientResponse, proxy: WatchCountingProxy,
                 key: str) -> None:
        self._upstream = upstream
        self._proxy = proxy
        self._key = key
        self.content = self

    async def iter_any(self) -> AsyncIterator[bytes]:
        async for chunk in self._upstream.content.iter_any():
            self._proxy.watch_events[self._key] += chunk.count(b"\n")
            self._proxy.watch_chunks[self._key] += 1
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._upstream, name)


def watch_table(proxy: WatchCountingProxy, pods: int) -> list[str]:
    """Watches open now by resource and selectors, and the events sent to them."""
    open_now: Counter[str] = Counter()
    for info in proxy.open_watches:
        open_now[f"{info.resource}{'.' + info.group if info.group else ''}"] += 1
    lines = [f"  open watches: {dict(sorted(open_now.items()))}"]
    for key, n in sorted(proxy.watch_events.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {key:<70} {n:>7} {n / pods:6.2f}/pod"
                     f" ({proxy.watches_opened.get(key, 0)} opened,"
                     f" {n / max(proxy.watch_chunks[key], 1):.2f} per read)")
    total = sum(proxy.watch_events.values())
    lines.append(f"  {'watch events':<70} {total:>7} {total / pods:6.2f}/pod")
    return lines


class Counts(Counter[str]):
    """Requests by ``verb resource[.group][/subresource]``, with the status code when it
    failed (a proxy observer)."""

    def __call__(self, info: RequestInfo, status: int | None) -> None:
        group = f".{info.group}" if info.group else ""
        sub = f"/{info.subresource}" if info.subresource else ""
        failed = f" ({status})" if status is not None and status >= 400 else ""
        self[f"{info.verb} {info.resource or info.path}{group}{sub}{failed}"] += 1


def table(counts: dict[str, int], pods: int) -> list[str]:
    """``verb resource: count (per pod)`` for the writes, most first, then the total."""
    writes = {k: v for k, v in counts.items() if k.split(" ", 1)[0] in WRITES}
    lines = [f"  {k:<55} {v:>7} {v / pods:6.2f}/pod"
             for k, v in sorted(writes.items(), key=lambda kv: -kv[1])]
    total = sum(writes.values())
    reads = sum(v for k, v in counts.items() if k.split(" ", 1)[0] not in WRITES)
    lines.append(f"  {'writes':<55} {total:>7} {total / pods:6.2f}/pod")
    lines.append(f"  {'reads (get, list, watch)':<55} {reads:>7} {reads / pods:6.2f}/pod")
    return lines


async def _events_by_reason(session: aiohttp.ClientSession) -> None:
    """The events of the namespace by reporting controller and reason, with the
    occurrences their series count."""
    async with session.get("/apis/events.k8s.io/v1/events") as r:
        listed = await _expect(r, 200)
    objects_by: Counter[str] = Counter()
    occurrences: Counter[str] = Counter()
    for event in listed["items"]:
        key = " ".join(str(v) for v in (event["metadata"]["namespace"],
                                        event.get("reportingController"), event.get("reason")))
        objects_by[key] += 1
        occurrences[key] += ((event.get("series") or {}).get("count") or 1)
    print("events (both phases): objects, occurrences")
    for key, n in objects_by.most_common():
        print(f"  {key:<55} {n:>7} {occurrences[key]:>7}")


async def census(deployments: int, grace: int, nodes: int) -> None:
    server = Server("--no-workloads").start()
    pods = deployments * REPLICAS
    stop = asyncio.Event()
    try:
        proxy = WatchCountingProxy(load_kubeconfig(server.kubeconfig))
        counts = Counts()
        proxy.observers.append(counts)
        await proxy.start()
        with tempfile.TemporaryDirectory(prefix="setpoint-writes-") as tmp:
            kubeconfig = proxy.write_kubeconfig(Path(tmp) / "kubeconfig")
            settings = WorkloadSettings(nodes=nodes)
            workloads = asyncio.ensure_future(
                run_workloads(settings, kubeconfig, stop, say=lambda line: None))
            async with server.session(limit=CONCURRENCY + 8) as session:
                await _namespace(session)
                converged, pod_census = Converged(deployments), PodCensus()
                watch_deployments = await Mirror(
                    session, f"/apis/apps/v1/namespaces/{NS}/deployments",
                    converged.on_event).start()
                watch_pods = await Mirror(session, f"/api/v1/namespaces/{NS}/pods",
                                          pod_census.on_event).start()
                counts.clear()
                proxy.watch_events.clear()
                proxy.watch_chunks.clear()

                async def create(i: int) -> None:
                    async with session.post(f"/apis/apps/v1/namespaces/{NS}/deployments",
                                            data=orjson.dumps(objects.deployment(i, grace))
                                            ) as r:
                        await _expect(r, 201)

                await run_concurrently(deployments, CONCURRENCY, create)
                await watch_deployments.wait(converged.done, 600)
                print(f"ready ({pods} pods):")
                print("\n".join(table(dict(counts), pods)))
                print("\n".join(watch_table(proxy, pods)))
                counts.clear()
                proxy.watch_events.clear()
                proxy.watch_chunks.clear()
                converged.retarget(rolled_out(generation=2), watch_deployments.objects)
                pod_census.wait_gone("1")

                async def update(i: int) -> None:
                    async with session.patch(
                            f"/apis/apps/v1/namespaces/{NS}/deployments/"
                            f"{objects.deployment_name(i)}",
                            data=orjson.dumps(objects.template_patch("2")),
                            headers={"Content-Type": "application/strategic-merge-patch+json"}
                    ) as r:
                        await _expect(r, 200)

                await run_concurrently(deployments, CONCURRENCY, update)
                await watch_deployments.wait(converged.done, 1200)
                await watch_pods.wait(pod_census.gone, 1200)
                print(f"rollout ({pods} pods replaced):")
                print("\n".join(table(dict(counts), pods)))
                print("\n".join(watch_table(proxy, pods)))
                await watch_deployments.stop()
                await watch_pods.stop()
                await _events_by_reason(session)
            stop.set()
            await workloads
        await proxy.stop()
    finally:
        stop.set()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deployments", type=int, default=20)
    parser.add_argument("--grace", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=0, help="default: one per 100 pods")
    args = parser.parse_args()
    nodes = args.nodes or max(2, -(-args.deployments * REPLICAS // 100))
    asyncio.run(census(args.deployments, args.grace, nodes))


if __name__ == "__main__":
    main()
