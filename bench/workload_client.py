"""CPU of the SDK's client and informer path as the workloads' process uses it, alone.

    .venv/bin/python bench/workload_client.py [--pods 1000] [--runs 3] [--root DIR ...]

A client process (the SDK of each tree given with ``--root``, this tree by default) holds a
pod informer on one namespace and makes, with 25 connections (the workloads' bound), the
writes the simulation's controllers make per pod: a create and an Event POST (the
ReplicaSet controller's), a binding and an Event POST (the scheduler's), a status merge
patch (the kubelet's), then a delete; each create and status answer recorded in the
informer as a controller's ``Writer`` records it, so its watch event is an echo. Counted
over that phase only, with ``perf stat`` switched on and off by the client itself: the
client process's user instructions (steady at any load) and its CPU time; the server (this
tree's, the same for every client) runs in its own process and is not counted. The trees
are run interleaved, ``--runs`` times each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 25
NAMESPACE = "bench"


def pod(i: int) -> dict[str, Any]:
    """A pod as the ReplicaSet controller creates it from a Deployment's template."""
    labels = {"app": "web-3", "pod-template-hash": "6f8d9c7b5"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"web-3-6f8d9c7b5-{i:05d}", "generateName": "web-3-6f8d9c7b5-",
            "namespace": NAMESPACE, "labels": labels},  # no owner: the server's garbage
        # collector would delete a pod whose owner does not exist
        "spec": {"containers": [{
            "name": "app", "image": "registry.k8s.io/pause:3.9",
            "env": [{"name": "VERSION", "value": "1"}],
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "terminationGracePeriodSeconds": 0}}


def event(i: int, reason: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"web-3-6f8d9c7b5-{i:05d}.{reason.lower()}",
                     "namespace": NAMESPACE},
        "eventTime": "2026-11-27T18:00:00.000000Z", "reportingController": "bench",
        "reportingInstance": "bench-1", "action": reason, "reason": reason,
        "type": "Normal", "note": f"{reason} pod web-3-6f8d9c7b5-{i:05d}",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": NAMESPACE,
                      "name": f"web-3-6f8d9c7b5-{i:05d}"}}


def status(node: str) -> dict[str, Any]:
    now = "2026-11-27T18:00:01Z"
    return {"status": {
        "phase": "Running", "hostIP": "10.0.0.2", "podIP": "10.1.0.3", "startTime": now,
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": now}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                 "ContainersReady")],
        "containerStatuses": [{
            "name": "app", "ready": True, "restartCount": 0, "started": True,
            "image": "registry.k8s.io/pause:3.9", "imageID": "sha256:" + "a" * 64,
            "containerID": "containerd://" + "b" * 64, "state": {"running": {
                "startedAt": now}}}]}}


async def child(kubeconfig: str, pods: int, ctl: str, ack: str) -> dict[str, float]:
    """The measured client: runs in its own process, the tree under test first on its path."""
    from setpoint.client import Client, Kind
    from setpoint.runtime._informer import Informer

    client = Client.from_kubeconfig(kubeconfig, max_connections=CONNECTIONS)
    await client.create({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": NAMESPACE}})
    await client.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    pods_kind = Kind("v1", "Pod")
    informer = Informer(client, pods_kind, namespace=NAMESPACE)
    deleted = asyncio.Event()
    gone = 0

    class Handler:
        def on_add(self, obj: Any) -> None:
            pass

        def on_update(self, old: Any, new: Any) -> None:
            pass

        def on_delete(self, obj: Any) -> None:
            nonlocal gone
            gone += 1
            if gone == pods:
                deleted.set()

    informer.add_handler(Handler())
    running = asyncio.create_task(informer.run())
    await informer.wait_synced()
    bound = asyncio.Semaphore(CONNECTIONS * 2)

    async def one(i: int) -> None:
        async with bound:
            made = await client.create(pod(i))
            informer.record_write(made)
            await client.create(event(i, "SuccessfulCreate"))
            name = made["metadata"]["name"]
            await client.request(
                "POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding",
                body={"apiVersion": "v1", "kind": "Binding",
                      "metadata": {"name": name, "namespace": NAMESPACE},
                      "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
            await client.create(event(i, "Scheduled"))
            patched = await client.patch_status(pods_kind, name,
                                                status("node-1"), namespace=NAMESPACE)
            informer.record_write(patched)
            await client.delete(pods_kind, name,
                                namespace=NAMESPACE, grace_period_seconds=0)

    # read-write: opening a FIFO so never blocks, whichever end perf opens first
    with open(os.open(ctl, os.O_RDWR), "w") as control, \
            open(os.open(ack, os.O_RDWR)) as acked:
        control.write("enable\n")
        control.flush()
        acked.readline()
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(pods)))
        await asyncio.wait_for(deleted.wait(), 600)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        control.write("disable\n")
        control.flush()
        acked.readline()
    running.cancel()
    await client.close()
    return {"cpu_s": cpu, "wall_s": wall, "lists": informer.lists,
            "watches": informer.watches}


def run_one(root: Path, kubeconfig: Path, pods: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="setpoint-bench-client-"))
    ctl, ack, out = work / "ctl", work / "ack", work / "perf.txt"
    os.mkfifo(ctl)
    os.mkfifo(ack)
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        ["perf", "stat", "-x", ",", "-e", "instructions:u,instructions:k,task-clock", "-D", "-1",
         "--control", f"fifo:{ctl},{ack}", "-o", str(out), "--", sys.executable,
         str(ROOT / "bench" / "workload_client.py"), "--child", str(kubeconfig),
         "--pods", str(pods), "--ctl", str(ctl), "--ack", str(ack)],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # perf opens both FIFOs before it starts the client, each open blocking until the
    # other end is open: held here (the client opens its own ends, read-write)
    with open(os.open(ctl, os.O_RDWR), "w"), open(os.open(ack, os.O_RDWR)):
        stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"client of {root} failed:\n{stdout}\n{stderr}")
    result: dict[str, float] = json.loads(stdout.strip().splitlines()[-1])
    for line in out.read_text().splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[0].replace(".", "").isdigit():
            result[parts[2]] = float(parts[0])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, action="append")
    parser.add_argument("--child")
    parser.add_argument("--ctl")
    parser.add_argument("--ack")
    args = parser.parse_args(argv)
    if args.child:
        import uvloop

        result = uvloop.run(child(args.child, args.pods, args.ctl, args.ack))
        print(json.dumps(result))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.common import Server, bare_interpreter_s

    roots = [r.resolve() for r in (args.root or [ROOT])]
    print(f"load {os.getloadavg()[0]:.1f}, bare interpreter {bare_interpreter_s():.3f} s")
    results: dict[Path, list[dict[str, float]]] = {r: [] for r in roots}
    for run in range(args.runs):
        for root in roots:
            server = Server("--no-workloads").start()
            try:
                result = run_one(root, server.kubeconfig, args.pods)
            finally:
                server.stop()
            results[root].append(result)
            per = result["instructions:u"] / args.pods / 1e6
            kernel = result.get("instructions:k", 0.0) / args.pods / 1e6
            print(f"run {run} {root}: {per:.3f} M user instructions per pod "
                  f"({kernel:.3f} M kernel), "
                  f"cpu {result['cpu_s']:.2f} s, wall {result['wall_s']:.2f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    for root, runs in results.items():
        per = sorted(r["instructions:u"] / args.pods / 1e6 for r in runs)
        cpu = sorted(r["cpu_s"] for r in runs)
        print(f"{root}: median {per[len(per) // 2]:.3f} M instructions per pod "
              f"({per[0]:.3f}-{per[-1]:.3f}), cpu median {cpu[len(cpu) // 2]:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
