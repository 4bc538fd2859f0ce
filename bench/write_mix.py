"""CPU of the Workloads benchmark's other writes inside the API server, without HTTP: Event
creates (``events.k8s.io/v1``, as the simulated controllers' recorders send them),
ReplicaSet ``status`` updates (PUT, as the ReplicaSet controller sends them), and Pod creates
from a ReplicaSet's template and their ``status`` updates (PUT, as a kubelet sends them).

    .venv/bin/python bench/write_mix.py [--objects 500] [--rounds 3] [--source DIR]
        [--only events|status|pods|podstatus] [--profile FILE]

Times ``--objects`` writes of each kind per round (process CPU per write, the median of
``--rounds``). ``--source`` runs the ``setpoint`` of another tree (a copy of ``main`` made
with ``git archive``) for a before/after pair in one session; ``--profile`` writes a cProfile
of the timed writes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def event(i: int, round_: int) -> dict[str, Any]:
    """What ``setpoint.runtime.EventRecorder`` posts for a ReplicaSet creating a pod."""
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"web-{i}.{round_:04x}{i:012x}", "namespace": "default"},
        "eventTime": f"2024-01-01T00:00:{round_:02d}.{i:06d}Z",
        "reportingController": "replicaset-controller",
        "reportingInstance": "replicaset-controller-sim", "action": "Create",
        "reason": "SuccessfulCreate", "type": "Normal",
        "note": f"Created pod: web-{i}-{round_}",
        "regarding": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "default",
                      "name": f"web-{i}", "uid": f"uid-{i}", "resourceVersion": "12"},
    }


def replicaset(i: int) -> dict[str, Any]:
    labels = {"app": f"web-{i}", "pod-template-hash": "abc"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"web-{i}", "namespace": "default", "labels": labels},
            "spec": {"replicas": 10, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "app", "image": "registry.k8s.io/pause:3.9",
                          "env": [{"name": "VERSION", "value": "1"}],
                          "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}


def rs_status(round_: int) -> dict[str, Any]:
    n = round_ % 10 + 1
    return {"replicas": 10, "fullyLabeledReplicas": 10, "readyReplicas": n,
            "availableReplicas": n, "observedGeneration": 1}


def pod(i: int, round_: int) -> dict[str, Any]:
    """A pod as the ReplicaSet controller creates it from ``replicaset(0)``'s template."""
    template = replicaset(0)["spec"]["template"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {**template["metadata"], "name": f"web-0-{round_}-{i}",
                         "namespace": "default"},
            "spec": template["spec"]}


def pod_status(round_: int) -> dict[str, Any]:
    ready = "True" if round_ % 2 else "False"
    return {"phase": "Running", "podIP": "10.0.0.1", "hostIP": "10.0.0.2",
            "startTime": "2024-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": ready,
                            "lastTransitionTime": f"2024-01-01T00:00:{round_:02d}Z"}]}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--only", choices=["events", "status", "pods", "podstatus"])
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.source.resolve()))

    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.registry.options import WriteOptions
    from setpoint.cluster.serializer.decode import Decoded

    api = APIServer(None, ca_pem=b"CA")
    api.start()
    events = api.resource("events.k8s.io", "v1", "events")
    replicasets = api.resource("apps", "v1", "replicasets")
    pods = api.resource("", "v1", "pods")
    kubelet = WriteOptions(field_manager="kubelet")
    recorder = WriteOptions(field_manager="replicaset-controller")
    names = [f"web-{i}" for i in range(args.objects)]
    for i in range(args.objects):
        api.rest.create(replicasets, "default", Decoded(replicaset(i)), recorder)
    profile = cProfile.Profile() if args.profile else None
    results = []
    service_accounts = api.resource("", "v1", "serviceaccounts")
    api.rest.create(service_accounts, "default", Decoded(  # (the controller's, not started)
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
                    recorder)
    for i in range(args.objects):  # the pods whose status is written
        api.rest.create(pods, "default", Decoded(pod(i, 99)), recorder)
    for kind in ("events", "status", "pods", "podstatus"):
        if args.only and kind != args.only:
            continue
        per_write = []
        for round_ in range(args.rounds):
            if kind == "events":
                bodies = [event(i, round_) for i in range(args.objects)]
            elif kind == "pods":
                bodies = [pod(i, round_) for i in range(args.objects)]
            elif kind == "podstatus":
                bodies = []
                for i in range(args.objects):
                    got = api.rest.get(pods, "default", f"web-0-99-{i}")
                    bodies.append({**got, "status": pod_status(round_)})
            else:
                bodies = []
                for name in names:
                    rs = api.rest.get(replicasets, "default", name)
                    bodies.append({**rs, "status": rs_status(round_)})
            if profile:
                profile.enable()
            started = time.process_time()
            if kind == "events":
                for body in bodies:
                    api.rest.create(events, "default", Decoded(body), recorder)
            elif kind == "pods":
                for body in bodies:
                    api.rest.create(pods, "default", Decoded(body), recorder)
            elif kind == "podstatus":
                for i, body in enumerate(bodies):
                    api.rest.update(pods, "default", f"web-0-99-{i}", Decoded(body), kubelet,
                                    "status")
            else:
                for name, body in zip(names, bodies, strict=True):
                    api.rest.update(replicasets, "default", name, Decoded(body), recorder,
                                    "status")
            per_write.append((time.process_time() - started) / args.objects * 1000)
            if profile:
                profile.disable()
        results.append(f"{kind}: {statistics.median(per_write):.3f} ms "
                       f"({', '.join(f'{x:.3f}' for x in per_write)})")
    await api.stop()
    if profile and args.profile:
        profile.dump_stats(str(args.profile))
    print(f"{args.source}: CPU per write, median of {args.rounds} rounds of {args.objects}: "
          + "; ".join(results))


if __name__ == "__main__":
    asyncio.run(main())
