"""``make demo``: a memcached pool behind mcrouter, run by its operator on the embedded cluster.

1. starts the embedded cluster (``setpoint cluster up --memory --port 0``) with its nodes,
   scheduler, kubelets and controllers;
2. installs the Memcached CRD (``setpoint generate crds``) and runs the operator
   (``setpoint run operators.memcached.operator:manager``);
3. applies a Memcached and follows it until it is Available;
4. scales it with ``kubectl scale``, shows the new proxy configuration and the rollout;
5. prints the resulting objects and stops everything.

Everything happens in a temporary directory: its own kubeconfig, kubectl cache and HOME;
no other cluster is ever touched. Run it from the repository (the operator lives in
``operators/``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from setpoint.parentdeath import child_environment

REPOSITORY = Path(__file__).resolve().parents[1]
NAME = "demo"
SAMPLE = textwrap.dedent(f"""\
    apiVersion: cache.setpoint.dev/v1
    kind: Memcached
    metadata:
      name: {NAME}
    spec:
      replicas: 3
      topology: sharded
      resources:              # requests == limits: Guaranteed pods
        requests: {{cpu: 100m, memory: 128Mi}}
        limits: {{cpu: 100m, memory: 128Mi}}
      proxy:
        replicas: 2
""")
TIMEOUT = 40.0


class DemoError(Exception):
    """A step did not do what it should; the message says which."""


def step(title: str) -> None:
    print(f"\n\033[1m==> {title}\033[0m", flush=True)


def say(text: str) -> None:
    print(textwrap.indent(text.rstrip("\n"), "    "), flush=True)


class OperatorThread:
    """The memcached operator's Manager in a thread with its own event loop, logging to a
    file; started and stopped from the demo's (synchronous) main thread."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="memcached-operator",
                                        daemon=True)

    def start(self) -> None:
        handler = logging.FileHandler(self.log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        self._thread.start()
        if not self.ready.wait(timeout=TIMEOUT) or self.error is not None:
            raise DemoError(f"the operator did not start: {self.error!r}")

    def failed(self) -> bool:
        return self.error is not None or (self.ready.is_set() and not self._thread.is_alive())

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=20)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.error = exc
            self.ready.set()

    async def _main(self) -> None:
        sys.path.insert(0, str(REPOSITORY))
        from operators.memcached.operator import manager as configured
        from setpoint.runtime import Manager

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        settings = dataclasses.replace(configured.settings, http_port=None,
                                       kubeconfig=str(self.kubeconfig))
        manager = Manager(configured.controllers, settings=settings)
        await manager.start()
        if manager.elector is not None:
            await manager.elector.elected.wait()
        self.ready.set()
        await self._stop.wait()
        await manager.stop()


class Demo:
    """The cluster, the operator and kubectl, all inside ``work``."""

    def __init__(self, work: Path, kubectl: str, runtime: str = "simulated") -> None:
        self.work = work
        self.kubectl_binary = kubectl
        self.runtime = runtime
        self.kubeconfig = work / "kubeconfig"
        self.env = {**os.environ, "HOME": str(work), "KUBECONFIG": str(self.kubeconfig),
                    "PYTHONPATH": os.pathsep.join(
                        p for p in (str(REPOSITORY), os.environ.get("PYTHONPATH")) if p)}
        self.cluster: subprocess.Popen[str] | None = None
        self.operator: OperatorThread | None = None
        self.operator_log = work / "operator.log"

    # -- processes -------------------------------------------------------------------------

    def start_cluster(self) -> None:
        started = time.monotonic()
        self.cluster = subprocess.Popen(
            [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory",
             "--port", "0", "--runtime", self.runtime, "--kubeconfig", str(self.kubeconfig)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=child_environment(self.env), cwd=REPOSITORY)  # no cluster outlives the demo
        assert self.cluster.stdout is not None
        for line in self.cluster.stdout:
            if line.startswith("setpoint cluster serving"):
                say(line)
            if line.startswith("Press Ctrl+C"):
                break
        else:
            raise DemoError("the cluster did not start")
        # keep reading what it prints, so a full pipe never blocks it
        threading.Thread(target=self.cluster.stdout.read, daemon=True).start()
        self.wait(lambda: len(self.get("nodes")["items"]) > 0,
                  "the cluster's simulated nodes to register")
        nodes = [n["metadata"]["name"] for n in self.get("nodes")["items"]]
        say(f"API server and {len(nodes)} simulated nodes ({', '.join(nodes)}) ready in "
            f"{time.monotonic() - started:.1f}s")

    def start_operator(self) -> None:
        say("the Manager of `setpoint run operators.memcached.operator:manager`, run here in "
            "a thread of the demo (no probe port to collide with)")
        self.operator = OperatorThread(self.kubeconfig, self.operator_log)
        self.operator.start()
        say("caches synced; leader lease acquired")

    def stop(self) -> None:
        """The operator stops gracefully (finishes its reconciles, releases its lease), then
        the cluster gets SIGTERM."""
        if self.operator is not None:
            self.operator.stop()
            say("operator stopped")
        if self.cluster is not None and self.cluster.poll() is None:
            self.cluster.send_signal(signal.SIGTERM)
            try:
                self.cluster.wait(timeout=15)
                say(f"cluster stopped (exit {self.cluster.returncode})")
            except subprocess.TimeoutExpired:
                self.cluster.kill()
                self.cluster.wait()
                say("cluster killed: it did not stop within 15s")

    # -- kubectl ---------------------------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None, show: bool = True) -> str:
        """Run kubectl against the demo cluster only; echo the command and its output."""
        command = [self.kubectl_binary, "--kubeconfig", str(self.kubeconfig),
                   "--cache-dir", str(self.work / "kube-cache"), *args]
        if show:
            print(f"$ kubectl {' '.join(args)}", flush=True)
        done = subprocess.run(command, input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=30, check=False)
        if done.returncode != 0:
            raise DemoError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        if show:
            say(done.stdout)
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json", show=False))

    def wait(self, condition: Any, what: str, timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_operator()
            value = condition()
            if value:
                return value
            # each look is a kubectl process (a few hundred ms of CPU): looking more often
            # would take the CPU from the cluster and the operator it waits for
            time.sleep(0.5)
        raise DemoError(f"gave up waiting for {what} after {timeout:.0f}s")

    def check_operator(self) -> None:
        if self.operator is not None and self.operator.failed():
            raise DemoError("the operator stopped:\n" + self.operator_log.read_text()[-2000:])

    # -- the Memcached ---------------------------------------------------------------------

    def follow(self, replicas: int, name: str = NAME) -> dict[str, Any]:
        """Print the Memcached's progress as its status changes, until ``replicas`` backends
        serve and the proxies run the configuration that lists them."""
        last = ""
        started = time.monotonic()

        def settled() -> dict[str, Any] | None:
            nonlocal last
            mc = self.get("memcached", name)
            status = mc.get("status") or {}
            conditions = {c["type"]: c for c in status.get("conditions") or ()}
            progressing = conditions.get("Progressing", {
                "reason": "Pending", "message": "waiting for the operator's first status"})
            line = (f"ready {status.get('readyReplicas', 0)}/{mc['spec']['replicas']}  "
                    f"proxies {status.get('proxyReadyReplicas', 0)}/"
                    f"{mc['spec']['proxy']['replicas']}  "
                    f"{progressing['reason']}: {progressing['message']}")
            if line != last:
                say(f"[{time.monotonic() - started:4.1f}s] {line}")
                last = line
            available = conditions.get("Available", {}).get("status") == "True"
            done = status.get("observedGeneration") == mc["metadata"]["generation"] and \
                status.get("readyReplicas") == replicas and available and \
                progressing.get("reason") == "Complete"
            return mc if done else None

        mc: dict[str, Any] = self.wait(settled, f"{replicas} ready memcached pods")
        available = next(c for c in mc["status"]["conditions"] if c["type"] == "Available")
        say(f"Available: {available['message']}")
        return mc

    def show_configuration(self, mc: dict[str, Any]) -> None:
        name = mc["status"]["configuration"]
        cm = self.get("configmap", name)
        config = json.loads(cm["data"]["config.json"])
        say(f"ConfigMap {name} (immutable: {cm.get('immutable', False)}):")
        say(json.dumps(config, indent=2))


def install_operator(demo: Demo) -> None:
    """The Memcached CRD, generated from its Python class, and the operator, running."""
    step("Installing the Memcached CRD, generated from its Python class")
    # what `setpoint generate crds` writes, generated here: another interpreter would import
    # Setpoint and the operator again only to print it (seconds of the demo), and the
    # operator's thread imports them anyway
    from setpoint.resources import discover_resources, dump_yaml, generate_crds

    if str(REPOSITORY) not in sys.path:
        sys.path.insert(0, str(REPOSITORY))  # the operator lives in operators/
    crds = dump_yaml(generate_crds(discover_resources("operators.memcached.resource")))
    print("$ setpoint generate crds operators.memcached.resource | kubectl apply -f -")
    demo.kubectl("apply", "-f", "-", stdin=crds, show=False)
    demo.kubectl("wait", "--for=condition=Established",
                 "crd/memcacheds.cache.setpoint.dev", "--timeout=30s")

    step("Running the memcached operator")
    demo.start_operator()


def run(demo: Demo) -> None:
    step("Starting the embedded cluster: setpoint cluster up --memory --port 0")
    demo.start_cluster()
    install_operator(demo)

    step("Applying a Memcached: 3 sharded backends behind 2 mcrouter proxies")
    say(SAMPLE)
    demo.kubectl("apply", "-f", "-", stdin=SAMPLE)
    mc = demo.follow(3)
    demo.show_configuration(mc)
    first = mc["status"]["configuration"]

    step("Scaling to 5 with kubectl scale")
    demo.kubectl("scale", f"memcached/{NAME}", "--replicas=5")
    mc = demo.follow(5)
    second = mc["status"]["configuration"]
    say(f"proxy configuration {first} -> {second}")
    say(f"backends: {', '.join(mc['status']['backends'])}")
    demo.kubectl("get", "replicasets", "-l", f"app.kubernetes.io/instance={NAME}",
                 "-o", "custom-columns=REPLICASET:.metadata.name,"
                 "CONFIGURATION:.spec.template.metadata.annotations.cache\\.setpoint\\.dev/"
                 "configuration,DESIRED:.spec.replicas,READY:.status.readyReplicas")
    demo.kubectl("get", "events", "--field-selector", f"involvedObject.name={NAME}",
                 "-o", "custom-columns=REASON:.reason,MESSAGE:.message")

    step("The resulting objects")
    demo.kubectl("get", "memcached", NAME, "-o", "wide")
    demo.kubectl("get", "statefulsets,deployments,pods,services,configmaps", "-l",
                 f"app.kubernetes.io/instance={NAME}")


def main(scenario: Callable[[Demo], None] = run, runtime: str = "simulated") -> int:
    """Run ``scenario`` on a fresh cluster of ``runtime`` in a temporary directory."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("kubectl is not on the PATH; the demo drives the cluster with it.",
              file=sys.stderr)
        return 1
    if not (REPOSITORY / "operators" / "memcached").is_dir():
        print(f"the memcached operator is not in {REPOSITORY}/operators: run the demo from "
              "a checkout of the repository (make demo)", file=sys.stderr)
        return 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="setpoint-demo-") as tmp:
        demo = Demo(Path(tmp), kubectl, runtime)
        try:
            scenario(demo)
        except DemoError as exc:
            print(f"\ndemo failed: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        finally:
            step("Stopping the operator and the cluster")
            demo.stop()
    print(f"\ndone in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
