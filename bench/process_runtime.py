"""The process runtime: time from ``kubectl apply`` of a 3-pod memcached StatefulSet to all
pods Ready, and what the runtime costs per pod while idle.

One process runs the embedded cluster and its workloads on the process runtime (as
``setpoint cluster up --runtime process`` does); kubectl applies a headless Service and a
StatefulSet of 3 memcached pods (``podManagementPolicy: Parallel``, a tcpSocket readiness
probe every second); the clock stops when the StatefulSet reports 3 ready replicas. Then,
with the pods idle for ``--idle`` seconds, it reads from /proc: the cluster process's
resident memory with the pods against before them, and its CPU while idle, each divided by
the pods (the runtime's overhead: kubelet bookkeeping, probes, log copying, the service
proxy and DNS), and the memcached processes' own memory and CPU (the programs themselves).

    .venv/bin/python bench/process_runtime.py --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import summarize_runs
from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import serve
from setpoint.workloads.loopbacknet import claim_loopback_network
from setpoint.workloads.manager import build_manager
from setpoint.workloads.settings import WorkloadSettings

PODS = 3
STATEFULSET = Kind("apps/v1", "StatefulSet")
NODE = Kind("v1", "Node")
_TICKS = os.sysconf("SC_CLK_TCK")
MANIFEST = f"""
apiVersion: v1
kind: Service
metadata: {{name: cache}}
spec:
  clusterIP: None
  selector: {{app: cache}}
  ports: [{{name: memcache, port: 11211}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: cache}}
spec:
  replicas: {PODS}
  serviceName: cache
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: cache}}}}
  template:
    metadata: {{labels: {{app: cache}}}}
    spec:
      containers:
      - name: memcached
        image: memcached:1.6
        args: ["-m", "16"]
        ports: [{{name: memcache, containerPort: 11211}}]
        readinessProbe: {{tcpSocket: {{port: memcache}}, periodSeconds: 1}}
"""


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def memcached_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-x", "memcached"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


async def nodes_ready(client: Client) -> None:
    """Until at least one node is registered and every node is Ready."""
    while True:
        nodes = (await client.list(NODE)).items
        if nodes and all(any(c.get("type") == "Ready" and c.get("status") == "True"
                             for c in (n.get("status") or {}).get("conditions", []))
                         for n in nodes):
            return
        await asyncio.sleep(0.01)


async def one_run(idle: float) -> dict[str, float]:
    # a loopback block of its own, so it runs beside the tests (setpoint.workloads.loopbacknet)
    with tempfile.TemporaryDirectory(prefix="bench-process-") as tmp, \
            claim_loopback_network() as network:
        kubeconfig = Path(tmp) / "kubeconfig"
        async with serve(kubeconfig=kubeconfig, service_cluster_ip_range=network.services):
            client = Client(load_kubeconfig(kubeconfig))
            manager_client = Client(load_kubeconfig(kubeconfig))
            manager = build_manager(manager_client, WorkloadSettings(
                runtime="process", loopback_network=network.index))
            await manager.start()
            try:
                await nodes_ready(client)
                before = memcached_pids()
                rss_before = rss_mib(os.getpid())
                manifest = Path(tmp) / "cache.yaml"
                manifest.write_text(MANIFEST)
                start = time.perf_counter()
                proc = await asyncio.create_subprocess_exec(
                    "kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir",
                    str(Path(tmp) / "cache"), "apply", "-f", str(manifest),
                    stdout=asyncio.subprocess.DEVNULL)
                await proc.wait()
                while True:
                    sts = await client.get(STATEFULSET, "cache", namespace="default")
                    if (sts.get("status") or {}).get("readyReplicas") == PODS:
                        break
                    await asyncio.sleep(0.01)
                ready = time.perf_counter() - start
                await asyncio.sleep(1.0)
                pids = [p for p in memcached_pids() if p not in before]
                rss_after = rss_mib(os.getpid())
                cpu0 = cpu_seconds(os.getpid())
                programs0 = sum(cpu_seconds(p) for p in pids)
                await asyncio.sleep(idle)
                cpu = (cpu_seconds(os.getpid()) - cpu0) / idle
                programs = (sum(cpu_seconds(p) for p in pids) - programs0) / idle
                return {"ready_s": ready,
                        "runtime_rss_mib_per_pod": (rss_after - rss_before) / PODS,
                        "runtime_idle_cpu_pct_per_pod": 100 * cpu / PODS,
                        "memcached_rss_mib": statistics.mean(rss_mib(p) for p in pids),
                        "memcached_idle_cpu_pct": 100 * programs / max(1, len(pids))}
            finally:
                await manager.stop()
                await manager_client.close()
                await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0)
    options = parser.parse_args()
    results = [asyncio.run(one_run(options.idle)) for _ in range(options.runs)]
    print(json.dumps({"machine": f"{os.cpu_count()} cores", "runs": options.runs,
                      **summarize_runs(results)}, indent=2))


if __name__ == "__main__":
    main()
