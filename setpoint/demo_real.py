"""``make demo-real``: the memcached operator on the process runtime, with real memcached.

The same operator as ``make demo``, on a cluster whose kubelets run real programs
(``setpoint cluster up --runtime process``, docs/process-runtime.md): its backend pods run
memcached and its proxy pods the mcrouter stand-in, each pod on its own loopback address and
the proxy behind its Service's ClusterIP. The demo talks the memcached protocol to them:

1. a sharded pool of 3: sets and gets through the proxy, and how the keys spread over the
   shards (each key on the shard mcrouter's ``Ch3`` hash picks);
2. a scale-up to 4: once the proxies run the new configuration, the new backend receives
   its share of new keys;
3. a replicated pool of 2: every write goes to both replicas; one replica is killed (its pod
   deleted, held by a finalizer so that the StatefulSet cannot replace it while we look), and
   once the operator routes around it, every key is still read through the proxy.

Needs memcached (``apt-get install -y memcached``; ``make demo-real`` installs it when run
as root).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import textwrap
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from setpoint.demo import NAME, REPOSITORY, Demo, DemoError, install_operator, main, say, step

REPLICATED = "replicas"
HOLD = "demo.setpoint.dev/hold"
KEYS = 90
T = TypeVar("T")


def memcached(name: str, replicas: int, topology: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: cache.setpoint.dev/v1
        kind: Memcached
        metadata:
          name: {name}
        spec:
          replicas: {replicas}
          topology: {topology}
          proxy:
            replicas: 1
        """)


def sync(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(work())


class Pool:
    """One Memcached's pods, seen through kubectl, reached over the memcached protocol."""

    def __init__(self, demo: Demo, name: str) -> None:
        self.demo = demo
        self.name = name

    def pods(self, component: str) -> list[dict[str, Any]]:
        items = self.demo.get("pods", "-l", f"app.kubernetes.io/name={component},"
                              f"app.kubernetes.io/instance={self.name}")["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def backends(self) -> list[dict[str, Any]]:
        return sorted(self.pods("memcached"),
                      key=lambda p: int(p["metadata"]["name"].rsplit("-", 1)[1]))

    def proxy(self, mc: dict[str, Any]) -> str:
        """The proxy Service's ClusterIP, once every ready endpoint behind it is a proxy pod
        that runs the Memcached's current configuration (the rollout is over)."""
        configuration = mc["status"]["configuration"]

        def rolled() -> bool:
            current = {p["status"].get("podIP") for p in self.pods("mcrouter")
                       if (p["metadata"].get("annotations") or {}).get(
                           "cache.setpoint.dev/configuration") == configuration}
            slices = self.demo.get("endpointslices", "-l",
                                   f"kubernetes.io/service-name={self.name}")["items"]
            ready = {a for s in slices for e in s.get("endpoints") or ()
                     if (e.get("conditions") or {}).get("ready") for a in e["addresses"]}
            return bool(ready) and ready <= current

        self.demo.wait(rolled, f"the proxies of {self.name} to run {configuration}")
        return str(self.demo.get("service", self.name)["spec"]["clusterIP"])

    def items(self) -> dict[str, int]:
        """How many keys each backend holds (memcached's ``stats`` curr_items)."""
        from operators.memcached.mcclient import MemcacheClient

        async def count() -> dict[str, int]:
            out = {}
            for pod in self.backends():
                async with MemcacheClient(pod["status"]["podIP"]) as backend:
                    out[pod["metadata"]["name"]] = await backend.items()
            return out

        return sync(count)

    def show_items(self) -> dict[str, int]:
        counts = self.items()
        say("  ".join(f"{pod}: {n} keys" for pod, n in counts.items()))
        return counts


def set_all(address: str, keys: list[str]) -> None:
    from operators.memcached.mcclient import MemcacheClient

    async def write() -> None:
        async with MemcacheClient(address) as proxy:
            for key in keys:
                reply = await proxy.set(key, f"value of {key}")
                if reply != "STORED":
                    raise DemoError(f"set {key} through the proxy answered {reply}")

    sync(write)
    say(f"set {len(keys)} keys through the proxy at {address}:11211")


def get_all(address: str, keys: list[str]) -> int:
    """How many of ``keys`` the proxy returns with their value."""
    from operators.memcached.mcclient import MemcacheClient

    async def read() -> int:
        async with MemcacheClient(address) as proxy:
            return sum([await proxy.get(key) == f"value of {key}" for key in keys])

    found = sync(read)
    say(f"got {found} of {len(keys)} keys back through the proxy")
    return found


def sharded(demo: Demo) -> None:
    from setpoint.workloads.kubelet.process.mcrouter import furc_hash

    step(f"A sharded pool: 3 memcached backends behind an mcrouter proxy ({NAME})")
    demo.kubectl("apply", "-f", "-", stdin=memcached(NAME, 3, "sharded"))
    pool = Pool(demo, NAME)
    mc = demo.follow(3)
    address = pool.proxy(mc)
    keys = [f"key-{i}" for i in range(KEYS)]
    set_all(address, keys)
    if get_all(address, keys) != len(keys):
        raise DemoError("the proxy lost keys of a healthy sharded pool")
    counts = pool.show_items()
    if sum(counts.values()) != len(keys) or not all(counts.values()):
        raise DemoError(f"the keys did not spread over every shard once: {counts}")
    shards = list(counts)
    say("each key lives on the shard Ch3 picks: " + ", ".join(
        f"{key} -> {shards[furc_hash(key.encode(), len(shards))]}" for key in keys[:4]))

    step("Scaling the sharded pool to 4 with kubectl scale")
    demo.kubectl("scale", f"memcached/{NAME}", "--replicas=4")
    mc = demo.follow(4)
    address = pool.proxy(mc)
    set_all(address, [f"new-{i}" for i in range(KEYS)])
    counts = pool.show_items()
    newest = list(counts)[-1]  # the backends in ordinal order: the new one is last
    if not counts.get(newest):
        raise DemoError(f"the new backend {newest} received no key: {counts}")
    say(f"the new backend {newest} received {counts[newest]} of the {KEYS} new keys")


def replicated(demo: Demo) -> None:
    step(f"A replicated pool: 2 memcached replicas, every write to both ({REPLICATED})")
    demo.kubectl("apply", "-f", "-", stdin=memcached(REPLICATED, 2, "replicated"))
    pool = Pool(demo, REPLICATED)
    mc = demo.follow(2, REPLICATED)
    address = pool.proxy(mc)
    keys = [f"key-{i}" for i in range(KEYS // 2)]
    set_all(address, keys)
    if set(pool.show_items().values()) != {len(keys)}:
        raise DemoError("a replica is missing keys")

    victim, survivor = pool.backends()
    victim_name = victim["metadata"]["name"]
    step(f"Killing the replica {victim_name}")
    say("a finalizer holds the pod's name, so that the StatefulSet cannot replace it with "
        "an empty memcached while we read")
    demo.kubectl("patch", "pod", victim_name, "--type=merge",
                 "-p", f'{{"metadata":{{"finalizers":["{HOLD}"]}}}}', show=False)
    demo.kubectl("delete", "pod", victim_name, "--wait=false")
    try:
        alive = f"{survivor['status']['podIP']}:11211"

        def routed_around() -> dict[str, Any] | None:
            found: dict[str, Any] = demo.get("memcached", REPLICATED)
            return found if (found.get("status") or {}).get("backends") == [alive] else None

        mc = demo.wait(routed_around, f"the operator to route {REPLICATED} around "
                       f"{victim_name}")
        say(f"the operator routes around it: backends {mc['status']['backends']}")
        if get_all(pool.proxy(mc), keys) != len(keys):
            raise DemoError("a replicated key was lost with one replica")
    finally:
        demo.kubectl("patch", "pod", victim_name, "--type=merge",
                     "-p", '{"metadata":{"finalizers":null}}', show=False)


def run(demo: Demo) -> None:
    step("Starting the embedded cluster on the process runtime: "
         "setpoint cluster up --memory --port 0 --runtime process")
    demo.start_cluster()
    install_operator(demo)
    sharded(demo)
    replicated(demo)
    step("The resulting pods: real processes, each on its own loopback address")
    demo.kubectl("get", "pods", "-o", "wide")


def real_main() -> int:
    if shutil.which("memcached") is None:
        print("memcached is not installed: apt-get update && apt-get install -y memcached",
              file=sys.stderr)
        return 1
    sys.path.insert(0, str(REPOSITORY))  # the operator and its client live in operators/
    return main(run, runtime="process")


if __name__ == "__main__":
    sys.exit(real_main())
