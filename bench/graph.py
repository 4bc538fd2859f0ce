"""Graph query time for one stack among 10,000 unrelated objects: one-shot and warm.

Side by side in one run:

- **one-shot**: ``load_cache`` (each kind listed once, in parallel) then the stack query,
  what ``setpoint graph`` does; its **floor** is the same parallel LISTs alone, with no
  graph: what any tool that reads the cluster once must pay;
- **warm**: the query against a cache already filled (informers running, no API call);
  its **peer** is the same walk done by scanning every object at each step instead of
  the cache's indexes, as tools that list everything and filter do.

The cluster is embedded in this process (2 cores shared); the unrelated objects share the
stack's namespace, so no namespace index helps. Reproduce: ``.venv/bin/python bench/graph.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import median_min_max, ratio, spread
from setpoint.client import Client
from setpoint.platform import ObjectRef, StackGraph, load_cache
from setpoint.platform.edges import owner_targets, pod_selector, reference_targets
from setpoint.platform.kinds import builtin_kinds
from setpoint.testing.clusters import fresh_cluster

ROOT = ObjectRef("", "Service", "default", "web")


def _pod(name: str, app: str, volumes: list[Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"containers": [{"name": "a", "image": "nginx"}],
                     "volumes": volumes or []}}


def _objects(unrelated: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(unrelated // 4):
        app = f"u-{i}"
        meta = {"name": app, "namespace": "default"}
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
        out.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta})
        out.append(_pod(app, app))
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                    "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}})
    meta = {"name": "web", "namespace": "default"}
    out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
    out.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta})
    volumes = [{"name": "c", "configMap": {"name": "web"}},
               {"name": "s", "secret": {"secretName": "web"}}]
    out += [_pod(f"web-{i}", "web", volumes) for i in range(3)]
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    return out


async def _create(client: Client, objects: list[dict[str, Any]]) -> None:
    queue = list(objects)

    async def worker() -> None:
        while queue:
            await client.create(queue.pop())

    await asyncio.gather(*(worker() for _ in range(16)))


def naive_stack(graph: StackGraph, root: ObjectRef) -> set[ObjectRef]:
    """The same walk (owners, selectors, references) by scanning every object each step."""
    everything = list(graph.objects())
    seen, todo = {root}, [root]
    by_ref = dict(everything)
    while todo:
        ref = todo.pop()
        obj = by_ref[ref]
        found = []
        selector = pod_selector(ref.group, ref.kind, obj)
        uid = (obj.get("metadata") or {}).get("uid")
        for other, other_obj in everything:
            if selector is not None and other.kind == "Pod" and other.namespace == \
                    ref.namespace and selector.matches(other_obj["metadata"].get("labels")):
                found.append(other)
            if any(u == uid for _, u in owner_targets(other_obj)):
                found.append(other)
        for t in reference_targets(ref.group, ref.kind, obj):
            target = ObjectRef(t.group, t.kind, t.namespace, t.name)
            if target in by_ref:
                found.append(target)
        for other in found:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


async def measure(runs: int, warm_runs: int, unrelated: int) -> dict[str, Any]:
    async with fresh_cluster() as cluster:
        client = cluster.client()
        await _create(client, _objects(unrelated))
        one_shot, floor = [], []
        for _ in range(runs):
            start = time.perf_counter()
            await asyncio.gather(*(client.list(k.ref) for k in builtin_kinds()))
            floor.append(_ms(start))
            start = time.perf_counter()
            graph = StackGraph(await load_cache(client))
            stack = graph.stack(ROOT)
            one_shot.append(_ms(start))
        size = len(stack.objects)
        graph.stack(ROOT)  # indexes built once, as a watching process has them
        warm, peer = [], []
        for _ in range(warm_runs):
            start = time.perf_counter()
            graph.stack(ROOT)
            warm.append(_ms(start))
        for _ in range(max(3, warm_runs // 20)):
            start = time.perf_counter()
            naive = naive_stack(graph, ROOT)
            peer.append(_ms(start))
        assert ROOT in naive and len(naive) <= size
        return {"unrelated": unrelated, "stack_objects": size, "one_shot_ms": one_shot,
                "floor_ms": floor, "warm_ms": warm, "peer_ms": peer}


def report(r: dict[str, Any]) -> str:
    return "\n".join([
        f"one stack ({r['stack_objects']} objects) among {r['unrelated']:,} unrelated objects",
        "| measure | setpoint | floor / peer | setpoint / other |", "|---|---|---|---|",
        f"| one-shot query (list every kind, build, walk), ms | {spread(r['one_shot_ms'], 1)} "
        f"| {spread(r['floor_ms'], 1)} (the LISTs alone) | "
        f"{ratio(r['one_shot_ms'], r['floor_ms'])} |",
        f"| warm query (watched cache), ms | {spread(r['warm_ms'], 3)} | "
        f"{spread(r['peer_ms'], 1)} (scan every object) | {ratio(r['warm_ms'], r['peer_ms'], 4)} |",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm-runs", type=int, default=200)
    parser.add_argument("--unrelated", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" /
                        "graph.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs, args.warm_runs, args.unrelated))
    args.out.write_text(json.dumps(result, indent=1))
    print(report(result))
    median = median_min_max(result["one_shot_ms"])[0]
    print(f"aims: one-shot {median:.0f} ms (< 1000), warm "
          f"{median_min_max(result['warm_ms'])[0]:.2f} ms (< 10)")


if __name__ == "__main__":
    main()
