"""Benchmark of the embedded cluster's workloads, side by side with its floor.

The simulation: ``cluster up --nodes 10`` (nodes, scheduler, simulated kubelets and the
Deployment/ReplicaSet controllers, all in the server's process) is given 100 Deployments of 10
replicas; the clock stops when every Deployment reports 10 available replicas (seen on a
watch). Then the pod template of every Deployment changes (its ``VERSION`` variable) and the
clock stops when every Deployment has 10 updated and available replicas and no pod of the old
template is left. Both are run once per termination grace period asked for (``--grace``).

The floor: a bare API server (``cluster up --no-workloads``) with 10 Nodes written by the
benchmark, and a plain aiohttp client (16 requests in flight) doing only the writes that make
a pod Ready (create it, bind it through ``pods/binding``, write Running and Ready through
``pods/status``) for the same 1,000 pods; for the rollout, the same three writes for each
replacement pod and a delete with ``gracePeriodSeconds=0`` of the pod it replaces: 3 writes
per pod, 4 per replaced pod, none of them the Deployment status the simulation's clock reads.

The second floor, "floor (faithful writes)" (``bench/workload_faithful.py``): the same kind of
server and client making the writes a real 1.32 cluster makes for each Deployment, at the
fewest its controllers' rules allow (the ReplicaSets, their scaling and status, the
Deployment status, the Events of the controllers, the scheduler and the kubelet's container
start): 8.8 writes per pod to Ready and 13.8 per replaced pod, plus the driver's own two
writes per Deployment. Both floors are reported, and the simulation's CPU against each
(``--no-faithful`` leaves the second out). The simulation's and the faithful floor's raw
results (``--json``) also hold the requests their server answered in each phase
(``ready_requests_by``, ``rollout_requests_by``: its ``apiserver_request_total`` by verb and
resource), so that a request's server CPU can be told from how many requests were made.

    .venv/bin/python bench/workloads.py [--quick] [--runs 3] [--grace 5,0] [--exact-timing]
        [--node-pods 110] [--no-faithful] [--json FILE] [--docs docs/benchmarks.md]

Results and what they mean: docs/benchmarks.md, section Workloads.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import workload_objects as objects
from bench.common import Server, run_concurrently
from bench.procstats import tree_usage as usage
from bench.procstats import usage as server_usage
from bench.watching import Mirror
from bench.workload_census import Converged, PodCensus, rolled_out
from bench.workload_faithful import FaithfulWrites
from bench.workload_objects import NS, REPLICAS
from bench.workloads_report import report, write_docs_section
from setpoint.workloads.kubelet.options import KubeletOptions

CONCURRENCY = 16
# Deployments written at once by the faithful floor; each sends its pods' writes together
FAITHFUL_CONCURRENCY = 4
FAITHFUL = "floor (faithful writes)"
NODE_PODS = 110  # the default of `cluster up`: 1,100 slots for 1,000 pods
READY_TIMEOUT = 900.0
ROLLOUT_TIMEOUT = 1800.0

Result = dict[str, Any]


class ServerLog:
    """Reads the server's output in a thread, so that a full pipe never blocks the server,
    keeping the last lines for an error report."""

    def __init__(self, server: Server) -> None:
        assert server.proc is not None and server.proc.stdout is not None
        self.lines: collections.deque[str] = collections.deque(maxlen=40)
        self._stdout = server.proc.stdout
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._stdout:
            self.lines.append(line.decode(errors="replace").rstrip())

    def tail(self) -> str:
        return "\n".join(self.lines)


async def _expect(response: aiohttp.ClientResponse, *statuses: int) -> Any:
    body = await response.read()
    if response.status not in statuses:
        raise RuntimeError(f"{response.method} {response.url.path}: {response.status} "
                           f"{body[:300]!r}")
    return orjson.loads(body) if body else None


async def _requests(session: aiohttp.ClientSession) -> collections.Counter[str]:
    """The requests the server has answered so far, by ``VERB resource[/subresource]``
    (its ``apiserver_request_total``, WATCH and LIST included): with the server's CPU, a
    request's cost in the simulation against the floor's, whatever the client."""
    async with session.get("/metrics") as r:
        text = (await _expect_text(r))
    counts: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, _, value = line.rpartition(" ")
        found = dict(_LABEL.findall(labels))
        resource = found.get("resource", "") + (
            "/" + found["subresource"] if found.get("subresource") else "")
        counts[f"{found.get('verb', '')} {resource}".strip()] += int(float(value))
    return counts


_LABEL = re.compile(r'(\w+)="([^"]*)"')


async def _expect_text(response: aiohttp.ClientResponse) -> str:
    body = await response.read()
    if response.status != 200:
        raise RuntimeError(f"{response.url.path}: {response.status} {body[:300]!r}")
    return body.decode()


def _count_between(before: collections.Counter[str], after: collections.Counter[str],
                   out: Result, phase: str) -> None:
    """``out``'s ``PHASE_requests`` (the total) and ``PHASE_requests_by``."""
    between = after - before
    out[f"{phase}_requests"] = sum(between.values())
    out[f"{phase}_requests_by"] = dict(between.most_common())


async def _namespace(session: aiohttp.ClientSession) -> None:
    """Create the namespace and wait for its ``default`` ServiceAccount, without which
    pod admission refuses pods."""
    async with session.post("/api/v1/namespaces",
                            data=orjson.dumps({"metadata": {"name": NS}})) as r:
        await _expect(r, 201)
    ready = asyncio.Event()
    accounts = await Mirror(session, f"/api/v1/namespaces/{NS}/serviceaccounts",
                            lambda kind, sa: ready.set() if sa["metadata"]["name"] == "default"
                            and kind != "DELETED" else None).start()
    try:
        await accounts.wait(ready, 60)
    finally:
        await accounts.stop()


async def _nodes_ready(session: aiohttp.ClientSession, count: int) -> None:
    """Wait until ``count`` Nodes report Ready (the simulated kubelets registered)."""
    ready = asyncio.Event()
    names: set[str] = set()

    def on_node(kind: str, node: dict[str, Any]) -> None:
        is_ready = kind != "DELETED" and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or ())
        (names.add if is_ready else names.discard)(node["metadata"]["name"])
        if len(names) >= count:
            ready.set()

    nodes = await Mirror(session, "/api/v1/nodes", on_node).start()
    try:
        await nodes.wait(ready, 120)
    finally:
        await nodes.stop()


def _base(contender: str, grace: int | None, run: int, deployments: int,
          held: float | None = None) -> Result:
    return {"contender": contender, "grace": grace, "held_s": held, "run": run,
            "deployments": deployments, "pods": deployments * REPLICAS,
            "nodes": objects.NODES, "load_before": os.getloadavg()[0], "error": ""}


# -- the simulation ----------------------------------------------------------------------------
async def simulate(server: Server, deployments: int, grace: int, out: Result,
                   exact_timing: bool = False) -> None:
    """Create the Deployments, wait for them to be available, roll them all out; fill
    ``out`` with the timings, the server's CPU and memory, and the pod census peaks."""
    pid = server.pid()
    async with server.session(limit=CONCURRENCY + 8) as session:
        await _nodes_ready(session, objects.NODES)
        await _namespace(session)
        converged = Converged(deployments)
        census = PodCensus()
        pods = deployments * REPLICAS
        census.stamp_when("ready v1", pods)
        census.stamp_when("ready v2", pods)
        watch_deployments = await Mirror(
            session, f"/apis/apps/v1/namespaces/{NS}/deployments", converged.on_event).start()
        watch_pods = await Mirror(session, f"/api/v1/namespaces/{NS}/pods",
                                  census.on_event).start()
        try:
            requests_before = await _requests(session)
            before, server_before = usage(pid), server_usage(pid)
            started = time.perf_counter()

            async def create(i: int) -> None:
                async with session.post(f"/apis/apps/v1/namespaces/{NS}/deployments",
                                        data=orjson.dumps(
                                            objects.deployment(i, grace, exact_timing))) as r:
                    await _expect(r, 201)

            await run_concurrently(deployments, CONCURRENCY, create)
            await watch_deployments.wait(converged.done, READY_TIMEOUT)
            ready, server_ready = usage(pid), server_usage(pid)
            requests_ready = await _requests(session)
            _count_between(requests_before, requests_ready, out, "ready")
            await watch_pods.wait(census.reached("ready v1", pods), READY_TIMEOUT)
            # the API server's own share (the rest is the workloads' child process)
            out["ready_server_cpu_s"] = server_ready.cpu_seconds - server_before.cpu_seconds
            out["ready_s"] = converged.done_at - started
            out["pods_ready_s"] = census.reached_at[("ready v1", pods)] - started
            out["ready_cpu_s"] = ready.cpu_seconds - before.cpu_seconds
            out["ready_peak_rss_mib"] = ready.peak_rss_mib

            converged.retarget(rolled_out(generation=2), watch_deployments.objects)
            census.wait_gone("1")
            census.reset_peaks()
            started = time.perf_counter()

            async def update(i: int) -> None:
                async with session.patch(
                        f"/apis/apps/v1/namespaces/{NS}/deployments/"
                        f"{objects.deployment_name(i)}",
                        data=orjson.dumps(objects.template_patch("2")),
                        headers={"Content-Type": "application/strategic-merge-patch+json"}
                ) as r:
                    await _expect(r, 200)

            await run_concurrently(deployments, CONCURRENCY, update)
            await watch_deployments.wait(converged.done, ROLLOUT_TIMEOUT)
            await watch_pods.wait(census.gone, ROLLOUT_TIMEOUT)
            done = usage(pid)
            out["rollout_server_cpu_s"] = server_usage(pid).cpu_seconds - server_ready.cpu_seconds
            _count_between(requests_ready, await _requests(session), out, "rollout")
            await watch_pods.wait(census.reached("ready v2", pods), ROLLOUT_TIMEOUT)
            out["rollout_s"] = max(converged.done_at, census.gone_at) - started
            out["rollout_pods_ready_s"] = census.reached_at[("ready v2", pods)] - started
            out["rollout_cpu_s"] = done.cpu_seconds - ready.cpu_seconds
            out["peak_rss_mib"] = done.peak_rss_mib
            out["rollout_peaks"] = {k: census.peaks[k] for k in
                                    ("pods", "terminating", "unschedulable")}
            out["watch_events"] = watch_deployments.events + watch_pods.events
        finally:
            await watch_deployments.stop()
            await watch_pods.stop()


async def bench_simulation(deployments: int, grace: int, run: int,
                           exact_timing: bool = False, node_pods: int = NODE_PODS) -> Result:
    """One simulation on a fresh ``cluster up``; a failure is recorded in ``error``."""
    # how long the simulated kubelet keeps a deleted pod's containers (and its node slot)
    held = grace if exact_timing else min(grace, KubeletOptions().grace_cap)
    out = _base("setpoint", grace, run, deployments, held)
    out["node_pods"] = node_pods
    server = Server("--nodes", str(objects.NODES), "--node-pods", str(node_pods)).start()
    log = ServerLog(server)
    try:
        await simulate(server, deployments, grace, out, exact_timing)
    except Exception as exc:  # one failed run is reported, the others still count
        out["error"] = f"{type(exc).__name__}: {exc}"
        print(traceback.format_exc(), "\n--- server output ---\n", log.tail(), file=sys.stderr)
    finally:
        server.stop()
    out["load_after"] = os.getloadavg()[0]
    return out


# -- the floors --------------------------------------------------------------------------------
async def _floor_nodes(session: aiohttp.ClientSession) -> None:
    """The Nodes a kubelet would register, written by the floor."""
    for i in range(objects.NODES):
        async with session.post("/api/v1/nodes", data=orjson.dumps(objects.node(i))) as r:
            await _expect(r, 201)
        async with session.patch(f"/api/v1/nodes/node-{i + 1}/status",
                                 data=orjson.dumps(objects.node_status(i)),
                                 headers={"Content-Type": "application/merge-patch+json"}
                                 ) as r:
            await _expect(r, 200)


async def floor(server: Server, deployments: int, out: Result) -> None:
    """The minimal writes that make the pods Ready, then replace them; fills ``out``."""
    pid = server.pid()
    pods = deployments * REPLICAS
    async with server.session(limit=CONCURRENCY + 8) as session:
        await _floor_nodes(session)
        await _namespace(session)

        async def make_ready(i: int, version: str) -> None:
            pod = objects.floor_pod(i, grace=0, version=version)
            name = pod["metadata"]["name"]
            path = f"/api/v1/namespaces/{NS}/pods"
            async with session.post(path, data=orjson.dumps(pod)) as r:
                await _expect(r, 201)
            node_index = i % objects.NODES
            async with session.post(f"{path}/{name}/binding", data=orjson.dumps(
                    objects.binding(name, f"node-{node_index + 1}"))) as r:
                await _expect(r, 201)
            async with session.patch(f"{path}/{name}/status",
                                     data=orjson.dumps(objects.running_status(i, node_index)),
                                     headers={"Content-Type": "application/merge-patch+json"}
                                     ) as r:
                await _expect(r, 200)

        async def replace(i: int) -> None:
            await make_ready(i, "2")
            old = objects.floor_pod(i, grace=0, version="1")["metadata"]["name"]
            async with session.delete(f"/api/v1/namespaces/{NS}/pods/{old}",
                                      params={"gracePeriodSeconds": "0"}) as r:
                await _expect(r, 200)

        before = usage(pid)
        out["ready_s"] = out["pods_ready_s"] = await run_concurrently(
            pods, CONCURRENCY, lambda i: make_ready(i, "1"))
        ready = usage(pid)
        out["ready_cpu_s"] = ready.cpu_seconds - before.cpu_seconds
        out["ready_peak_rss_mib"] = ready.peak_rss_mib
        out["rollout_s"] = out["rollout_pods_ready_s"] = await run_concurrently(
            pods, CONCURRENCY, replace)
        done = usage(pid)
        out["rollout_cpu_s"] = done.cpu_seconds - ready.cpu_seconds
        out["peak_rss_mib"] = done.peak_rss_mib


async def faithful_floor(server: Server, deployments: int, out: Result) -> None:
    """The writes a real cluster makes (bench/workload_faithful.py), one Deployment's in
    order, several Deployments at a time; fills ``out`` as :func:`floor` does."""
    pid = server.pid()
    async with server.session(limit=CONCURRENCY + 8) as session:
        await _floor_nodes(session)
        await _namespace(session)
        writers = [FaithfulWrites(session, _expect, i) for i in range(deployments)]
        requests_before = await _requests(session)
        before = usage(pid)
        out["ready_s"] = out["pods_ready_s"] = await run_concurrently(
            deployments, FAITHFUL_CONCURRENCY, lambda i: writers[i].ready())
        ready = usage(pid)
        requests_ready = await _requests(session)
        _count_between(requests_before, requests_ready, out, "ready")
        out["ready_writes"] = sum(w.writes for w in writers)
        out["ready_cpu_s"] = ready.cpu_seconds - before.cpu_seconds
        out["ready_peak_rss_mib"] = ready.peak_rss_mib
        out["rollout_s"] = out["rollout_pods_ready_s"] = await run_concurrently(
            deployments, FAITHFUL_CONCURRENCY, lambda i: writers[i].rollout())
        done = usage(pid)
        _count_between(requests_ready, await _requests(session), out, "rollout")
        out["rollout_writes"] = sum(w.writes for w in writers) - out["ready_writes"]
        out["rollout_cpu_s"] = done.cpu_seconds - ready.cpu_seconds
        out["peak_rss_mib"] = done.peak_rss_mib


async def bench_floor(deployments: int, run: int, faithful: bool = False) -> Result:
    """One floor run on a fresh bare API server; a failure is recorded in ``error``."""
    out = _base(FAITHFUL if faithful else "floor", 0, run, deployments, 0.0)
    server = Server("--no-workloads").start()
    log = ServerLog(server)
    try:
        await (faithful_floor if faithful else floor)(server, deployments, out)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        print(traceback.format_exc(), "\n--- server output ---\n", log.tail(), file=sys.stderr)
    finally:
        server.stop()
    out["load_after"] = os.getloadavg()[0]
    return out


# -- the command -------------------------------------------------------------------------------
def _graces(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated seconds") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated seconds, >= 0")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="10 Deployments x 10 and one run (a smoke test)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deployments", type=int, default=100)
    parser.add_argument("--grace", type=_graces, default=[5, 0],
                        help="terminationGracePeriodSeconds of the pods, one simulation "
                             "each (default 5,0)")
    parser.add_argument("--exact-timing", action="store_true",
                        help="annotate the pods so that the simulated kubelet holds them for "
                             "their whole grace period instead of its cap")
    parser.add_argument("--node-pods", type=int, default=NODE_PODS,
                        help="pod capacity of each simulated node (default 110)")
    parser.add_argument("--nodes", type=int,
                        help="simulated nodes (default: one per 100 pods, 10 for 1,000)")
    parser.add_argument("--no-faithful", action="store_true",
                        help="leave out the second floor, the writes of a real cluster")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    parser.add_argument("--docs", type=Path,
                        help="replace the results block of the Workloads section of this "
                             "Markdown file (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    deployments, runs = (10, 1) if args.quick else (args.deployments, args.runs)
    objects.NODES = args.nodes or max(10, -(-deployments * REPLICAS // 100))
    results: list[Result] = []
    for run in range(runs):
        for grace in args.grace:
            results.append(asyncio.run(
                bench_simulation(deployments, grace, run, args.exact_timing, args.node_pods)))
            _progress(results[-1])
        results.append(asyncio.run(bench_floor(deployments, run)))
        _progress(results[-1])
        if not args.no_faithful:
            results.append(asyncio.run(bench_floor(deployments, run, faithful=True)))
            _progress(results[-1])
    command = "bench/workloads.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(results, command.strip(), cores=os.cpu_count() or 0)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.docs:
        write_docs_section(args.docs, text)
    return 1 if any(r["error"] for r in results) else 0


def _progress(result: Result) -> None:
    shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in result.items()}
    print(json.dumps(shown), file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
