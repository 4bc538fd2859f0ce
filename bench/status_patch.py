"""CPU of one pod status write inside the API server, without HTTP: what the simulated
kubelets send most (a strategic merge patch of ``pods/status`` on a bound pod).

    .venv/bin/python bench/status_patch.py [--pods 1000] [--rounds 3] [--source DIR]

Creates ``--pods`` pods of the Workloads benchmark's template (bench/workload_objects.py),
binds them, then times one Running-and-Ready status patch of each (process CPU time per
patch, the median of ``--rounds``). ``--source`` runs the ``setpoint`` of another tree (a
copy of ``main`` made with ``git archive``) for a before/after pair in one session.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def status_patch(image: str, round_: int) -> dict[str, Any]:
    started = f"2024-01-01T00:00:{round_:02d}Z"
    condition = {"status": "True", "lastTransitionTime": started, "lastProbeTime": None}
    return {"status": {
        "phase": "Running", "podIP": "10.0.0.5", "hostIP": "10.1.0.1", "startTime": started,
        "conditions": [{"type": t, **condition} for t in ("Ready", "ContainersReady",
                                                          "Initialized")],
        "containerStatuses": [{
            "name": "app", "image": image, "imageID": "sha256:abc", "containerID": "sim://1",
            "ready": True, "started": True, "restartCount": round_,
            "state": {"running": {"startedAt": started}}, "lastState": {}}]}}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench import workload_objects as objects

    sys.path.insert(0, str(args.source.resolve()))
    import orjson

    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.registry.options import WriteOptions
    from setpoint.cluster.serializer.decode import Decoded

    api = APIServer(None, ca_pem=b"CA")
    api.start()
    pods = api.resource("", "v1", "pods")
    manager = WriteOptions(field_manager="kube-controller-manager")
    kubelet = WriteOptions(field_manager="kubelet")
    api.rest.create(api.resource("", "v1", "serviceaccounts"), "default",
                    Decoded({"metadata": {"name": "default"}}), manager)
    template = objects.pod_template("web", 0, "1")
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid",
             "controller": True, "blockOwnerDeletion": True}
    names = [f"web-{i}" for i in range(args.pods)]
    for name in names:
        body = {"apiVersion": "v1", "kind": "Pod", "spec": template["spec"],
                "metadata": {**template["metadata"], "name": name, "ownerReferences": [owner]}}
        api.rest.create(pods, "default", Decoded(body), manager)
        api.pod_binding.bind(pods, "default", name, {"apiVersion": "v1", "kind": "Binding",
                                              "metadata": {"name": name},
                                              "target": {"kind": "Node", "name": "node-1"}})
    per_patch = []
    for round_ in range(args.rounds):
        patch = orjson.dumps(status_patch(objects.IMAGE, round_))
        started = time.process_time()
        for name in names:
            api.rest.patch(pods, "default", name, patch,
                           "application/strategic-merge-patch+json", kubelet, "status")
        per_patch.append((time.process_time() - started) / len(names) * 1000)
    await api.stop()
    print(f"{args.source}: {statistics.median(per_patch):.3f} ms CPU per pods/status patch "
          f"(median of {args.rounds} rounds of {args.pods}; "
          f"{', '.join(f'{x:.3f}' for x in per_patch)})")


if __name__ == "__main__":
    asyncio.run(main())
