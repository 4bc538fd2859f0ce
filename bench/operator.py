"""The operator benchmark: the Widget operator with Setpoint, with kopf, and the floor.

    .venv/bin/python bench/operator.py                 # N = 100, 1000, 3000; 3 runs each
    .venv/bin/python bench/operator.py --quick         # N = 100, one run

For each N, run and contender, in this order so that drift hits all alike:

1. a fresh ``setpoint cluster up --memory`` in its own process, the Widget CRD installed;
2. the counting proxy (``bench/counting_proxy.py``) in its own process in front of it;
3. the contender in its own process, given the proxy's kubeconfig:
   - ``setpoint``: ``setpoint run examples.widget.operator:manager``;
   - ``setpoint-patch`` (on request): the same with ``create_or_patch`` for its ConfigMap
     (``bench/widget_patch.py``): a merge patch where ``setpoint`` sends a PUT;
   - ``kopf``: ``kopf run bench/kopf_widget.py --all-namespaces`` (kopf's defaults);
   - ``floor``: ``bench/floor_widget.py`` (a watch of Widgets and one of the ConfigMaps they
     own, 16 workers, plain aiohttp); ``floor-writes``: the same without the ConfigMap
     watch (the floor up to the twelfth pass), on request only;
4. once it watches Widgets: create N Widgets straight on the server, 16 at a time, and
   time until all show ``status.ready`` (followed by a watch of this driver); then change
   ``spec.message`` on all N and time until every ConfigMap holds the new message;
5. the requests the contender made, by verb (from the proxy), per phase, counted once the
   contender has gone quiet; then the requests it makes in ``--idle`` seconds of nothing
   happening (open watches excluded); its peak RSS and the CPU seconds of both phases.

Results go to ``--json`` (default ``bench/results/operator.json``) and a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import cpu_sampler
from bench.common import ROOT, Server, bare_interpreter_s, run_concurrently
from bench.operator_report import report
from bench.procstats import tree_usage, usage

CONCURRENCY = 16
NAMESPACE = "default"
WIDGETS = f"/apis/bench.setpoint.dev/v1/namespaces/{NAMESPACE}/widgets"
CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.bench.setpoint.dev"},
    "spec": {
        "group": "bench.setpoint.dev", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "message": {"type": "string"}}},
                # kopf's documentation asks for unknown status fields to be kept (it may
                # keep its progress there); the same CRD serves every contender
                "status": {"type": "object",
                           "x-kubernetes-preserve-unknown-fields": True,
                           "properties": {"ready": {"type": "boolean"},
                                          "observedGeneration": {"type": "integer"}}},
            }}},
        }],
    },
}


def contender_command(name: str, kubeconfig: Path, cpu_profile: Path | None = None,
                      ) -> list[str]:
    if name in ("setpoint", "baseline"):
        launcher = cpu_sampler.launcher(cpu_profile) if cpu_profile is not None \
            else ["-m", "setpoint.cli.main"]
        return [sys.executable, *launcher, "run",
                "examples.widget.operator:manager", "--kubeconfig", str(kubeconfig)]
    if name == "setpoint-patch":  # the same operator, its ConfigMap merge-patched, not PUT
        return [sys.executable, "-m", "setpoint.cli.main", "run", "bench.widget_patch:manager",
                "--kubeconfig", str(kubeconfig)]
    if name == "kopf":
        return [sys.executable, "-m", "kopf", "run", "bench/kopf_widget.py",
                "--all-namespaces"]
    if name == "floor":
        return [sys.executable, "bench/floor_widget.py", str(kubeconfig)]
    if name == "floor-writes":  # the floor of the passes up to the twelfth: no ConfigMap watch
        return [sys.executable, "bench/floor_widget.py", str(kubeconfig), "--writes-only"]
    raise ValueError(f"unknown contender {name!r}")


@dataclass
class RunResult:
    contender: str
    n: int
    run: int
    ready_seconds: float = 0.0
    update_seconds: float = 0.0
    create_requests: dict[str, int] = field(default_factory=dict)
    update_requests: dict[str, int] = field(default_factory=dict)
    create_by_resource: dict[str, int] = field(default_factory=dict)
    update_by_resource: dict[str, int] = field(default_factory=dict)
    idle_requests: dict[str, int] = field(default_factory=dict)
    peak_rss_mib: float = 0.0
    cpu_seconds: float = 0.0
    system_seconds: float = 0.0
    update_cpu_seconds: float = 0.0
    """The part of ``cpu_seconds`` spent in the update phase (N changes)."""
    server_cpu_seconds: float = 0.0
    """The API server's process and its children (the workloads) over both phases."""
    server_update_cpu_seconds: float = 0.0
    server_create_cpu_seconds: float = 0.0
    """The same over the create phase (to ready, and until the contender went quiet)."""
    server_create_instructions: float = 0.0
    """The API server process's user-space instructions in the create phase
    (``--count-server``: ``perf stat`` on it; its children not counted)."""
    proxy_update_cpu_seconds: float = 0.0
    create_latency: dict[str, list[float]] = field(default_factory=dict)
    update_latency: dict[str, list[float]] = field(default_factory=dict)
    """Per ``verb resource``: [requests, seconds in all, the longest], as the counting
    proxy timed them from its side (the server's answer, the machine's load in it)."""
    error: str = ""


class Tracker:
    """Follows Widgets and ConfigMaps with watches straight on the server."""

    def __init__(self, api: aiohttp.ClientSession) -> None:
        self.api = api
        self.ready: set[str] = set()
        self.observed: dict[str, int] = {}
        self.generation: dict[str, int] = {}
        self.messages: dict[str, str] = {}
        self.changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for path, handle in ((WIDGETS, self._widget), (CONFIGMAPS, self._config_map)):
            async with self.api.get(path) as resp:
                rv = (await resp.json(loads=orjson.loads))["metadata"]["resourceVersion"]
            self._tasks.append(asyncio.create_task(self._follow(path, rv, handle)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _follow(self, path: str, rv: str, handle: Callable[[dict[str, Any]], None],
                      ) -> None:
        while True:
            params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
            async with self.api.get(path, params=params,
                                    timeout=aiohttp.ClientTimeout(total=None)) as resp:
                async for line in resp.content:
                    event = orjson.loads(line)
                    obj = event["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        handle(obj)
                        self.changed.set()

    def _widget(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        self.generation[name] = obj["metadata"]["generation"]
        if status.get("ready"):
            self.ready.add(name)
        if status.get("observedGeneration") is not None:
            self.observed[name] = status["observedGeneration"]

    def _config_map(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name.endswith("-cfg"):
            self.messages[name] = (obj.get("data") or {}).get("message", "")

    async def until(self, condition: Callable[[], bool], timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while not condition():
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("the operator did not converge in time")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(remaining, 1.0))


class Control:
    """The counting proxy's control endpoint."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = aiohttp.ClientSession()

    async def counts(self) -> dict[str, Any]:
        async with self.session.get(self.url + "/counts") as resp:
            return dict(await resp.json())

    async def reset(self) -> None:
        async with self.session.post(self.url + "/reset") as resp:
            await resp.read()

    async def quiet(self, period: float = 1.0, timeout: float = 60.0) -> dict[str, Any]:
        """The counts once no request (watches aside) arrived for ``period`` seconds."""
        deadline = time.perf_counter() + timeout
        last = await self.counts()
        while time.perf_counter() < deadline:
            await asyncio.sleep(period)
            now = await self.counts()
            if _non_watch(now) == _non_watch(last):
                return now
            last = now
        return last

    async def close(self) -> None:
        await self.session.close()


def _non_watch(counts: dict[str, Any]) -> dict[str, int]:
    return {v: n for v, n in counts["by_verb"].items() if v != "watch"}


def _start_proxy(upstream: Path, out: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([sys.executable, "bench/counting_proxy.py", str(upstream),
                             str(out)], stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().split()
    if not line or line[0] != "ready":
        raise RuntimeError("the counting proxy did not start")
    return proc, line[1]


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _watching_widgets(control: Control, proc: subprocess.Popen[bytes],
                            timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited with {proc.returncode}")
        counts = await control.counts()
        if any(w.startswith("watch widgets") for w in counts["open_watches"]):
            await control.quiet(0.5)  # let it finish starting (kopf checks peering, …)
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("the operator never watched Widgets")


def _widget(i: int) -> dict[str, Any]:
    return {"apiVersion": "bench.setpoint.dev/v1", "kind": "Widget",
            "metadata": {"name": f"w{i:05d}"}, "spec": {"size": 1 + i % 5, "message": "one"}}


def _start_profile(py_spy: Path | None, out: Path | None, pid: int, name: str,
                   subprocesses: bool = False) -> subprocess.Popen[bytes] | None:
    """py-spy sampling the contender, or the server and its children (raw collapsed
    stacks, idle frames left out)."""
    if py_spy is None or out is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([str(py_spy), "record", "--pid", str(pid), "--format", "raw",
                             "--rate", "200", "-o", str(out / f"{name}.txt"),
                             *(["--subprocesses"] if subprocesses else [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _start_counting(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """``perf stat`` on one process (all its threads): its user-space instructions, which
    the machine's load does not change as it changes CPU time."""
    return subprocess.Popen(["perf", "stat", "-x", ",", "-e", "instructions:u,task-clock",
                             "-p", str(pid), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_counting(proc: subprocess.Popen[bytes], out: Path) -> float:
    """Stop ``perf stat`` and read its instructions:u (0 when it counted nothing)."""
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    for line in out.read_text().splitlines() if out.exists() else ():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] == "instructions:u" and parts[0].isdigit():
            return float(parts[0])
    return 0.0


def _stop_profile(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        proc.wait(timeout=60)


def _toggle_cpu_profile(operator: subprocess.Popen[bytes], out: Path | None, *,
                        on: bool) -> None:
    """Switch the contender's CPU sampler on, or off (then wait for its file)."""
    if out is None:
        return
    operator.send_signal(signal.SIGUSR1)
    deadline = time.perf_counter() + 30
    while not on and not out.exists() and time.perf_counter() < deadline \
            and operator.poll() is None:
        time.sleep(0.05)


async def run_one(contender: str, n: int, run: int, idle: float,
                  py_spy: Path | None = None, profiles: Path | None = None,
                  cpu_profile: bool = False, baseline: Path | None = None,
                  profile_phase: str = "both", count_server: bool = False) -> RunResult:
    result = RunResult(contender, n, run)
    cpu_out: Path | None = None
    if cpu_profile and contender in ("setpoint", "baseline") and profiles is not None:
        profiles.mkdir(parents=True, exist_ok=True)
        cpu_out = profiles / f"{contender}-{n}-{run}.cpu.txt"
        cpu_out.unlink(missing_ok=True)
    profiler: subprocess.Popen[bytes] | None = None
    server = Server().start()
    proxy: subprocess.Popen[bytes] | None = None
    operator: subprocess.Popen[bytes] | None = None
    control: Control | None = None
    workdir = Path(tempfile.mkdtemp(prefix="setpoint-bench-op-"))
    try:
        async with server.session(limit=CONCURRENCY * 2) as api:
            await define_widgets(api)
            proxy, control_url = _start_proxy(server.kubeconfig, workdir / "kubeconfig")
            control = Control(control_url)
            log = (workdir / "operator.log").open("wb")
            # "baseline" is the Setpoint contender from another source tree (--baseline)
            tree = baseline if contender == "baseline" and baseline is not None else ROOT
            operator = subprocess.Popen(
                contender_command(contender, workdir / "kubeconfig", cpu_out), cwd=tree,
                stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "KUBECONFIG": str(workdir / "kubeconfig"),
                     "PYTHONPATH": str(tree)})
            await _watching_widgets(control, operator)
            tracker = Tracker(api)
            await tracker.start()
            before = usage(operator.pid)
            server_before = tree_usage(server.pid())
            if profile_phase == "both":
                profiler = _start_profile(py_spy, profiles, operator.pid,
                                          f"{contender}-{n}-{run}")
            elif profile_phase == "create-server":
                profiler = _start_profile(py_spy, profiles, server.pid(),
                                          f"{contender}-{n}-{run}-server-create",
                                          subprocesses=True)
            _toggle_cpu_profile(operator, cpu_out, on=True)
            counting = _start_counting(server.pid(), workdir / "server-create.perf") \
                if count_server else None
            await control.reset()

            create = functools.partial(create_widget, api)

            started = time.perf_counter()
            await run_concurrently(n, CONCURRENCY, create)
            await tracker.until(lambda: len(tracker.ready) >= n, 60.0 + 0.3 * n)
            result.ready_seconds = time.perf_counter() - started
            counts = await control.quiet()
            result.create_requests = _non_watch(counts)
            result.create_by_resource = counts["by_resource"]
            result.create_latency = counts.get("latency", {})
            result.server_create_cpu_seconds = \
                tree_usage(server.pid()).cpu_seconds - server_before.cpu_seconds
            if counting is not None:
                result.server_create_instructions = _stop_counting(
                    counting, workdir / "server-create.perf")
            if profile_phase == "create-server":
                _stop_profile(profiler)
                profiler = None
            await control.reset()

            change = functools.partial(change_widget, api)

            if profile_phase == "update":
                profiler = _start_profile(py_spy, profiles, operator.pid,
                                          f"{contender}-{n}-{run}-update")
            update_before = usage(operator.pid)
            server_update_before = tree_usage(server.pid())
            proxy_update_before = usage(proxy.pid)
            started = time.perf_counter()
            await run_concurrently(n, CONCURRENCY, change)
            await tracker.until(lambda: sum(m == "two" for m in tracker.messages.values())
                                >= n, 60.0 + 0.3 * n)
            result.update_seconds = time.perf_counter() - started
            await tracker.until(lambda: sum(g >= 2 for g in tracker.observed.values()) >= n,
                                60.0 + 0.3 * n)
            counts = await control.quiet()
            result.update_requests = _non_watch(counts)
            result.update_by_resource = counts["by_resource"]
            result.update_latency = counts.get("latency", {})
            after = usage(operator.pid)
            server_after = tree_usage(server.pid())
            result.server_cpu_seconds = server_after.cpu_seconds - server_before.cpu_seconds
            result.server_update_cpu_seconds = \
                server_after.cpu_seconds - server_update_before.cpu_seconds
            result.proxy_update_cpu_seconds = \
                usage(proxy.pid).cpu_seconds - proxy_update_before.cpu_seconds
            _stop_profile(profiler)
            _toggle_cpu_profile(operator, cpu_out, on=False)
            result.cpu_seconds = after.cpu_seconds - before.cpu_seconds
            result.system_seconds = after.system_seconds - before.system_seconds
            result.update_cpu_seconds = after.cpu_seconds - update_before.cpu_seconds
            await control.reset()
            await asyncio.sleep(idle)  # measuring that nothing happens takes waiting
            result.idle_requests = _non_watch(await control.counts())
            result.peak_rss_mib = usage(operator.pid).peak_rss_mib
            await tracker.stop()
    except (TimeoutError, RuntimeError, AssertionError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if control is not None:
            await control.close()
        _stop_profile(profiler)
        _stop(operator)
        _stop(proxy)
        server.stop()
    return result


async def create_widget(api: aiohttp.ClientSession, i: int) -> None:
    """Widget ``i`` created."""
    async with api.post(WIDGETS, data=orjson.dumps(_widget(i))) as resp:
        assert resp.status == 201, await resp.text()


async def change_widget(api: aiohttp.ClientSession, i: int) -> None:
    """Widget ``i``'s message changed: what the operator must carry to its ConfigMap."""
    async with api.patch(f"{WIDGETS}/w{i:05d}",
                         data=orjson.dumps({"spec": {"message": "two"}}),
                         headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()


async def define_widgets(api: aiohttp.ClientSession) -> None:
    """Create the Widget CRD and wait until it is served."""
    async with api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        data=orjson.dumps(WIDGET_CRD)) as resp:
        assert resp.status == 201, await resp.text()
    for _ in range(200):
        async with api.get(WIDGETS) as resp:
            if resp.status == 200:
                return
        await asyncio.sleep(0.02)
    raise RuntimeError("the Widget CRD was never served")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N=100, one run")
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--contenders", default="setpoint,kopf,floor")
    parser.add_argument("--idle", type=float, default=5.0,
                        help="seconds of nothing happening in which requests are counted")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/operator.json")
    parser.add_argument("--py-spy", type=Path,
                        help="py-spy executable: sample each contender during both phases")
    parser.add_argument("--profiles", type=Path, default=ROOT / "bench/results/profiles",
                        help="where --py-spy and --cpu-profile write their collapsed stacks")
    parser.add_argument("--baseline", type=Path,
                        help="a source tree (git archive main | tar -x -C DIR) whose Setpoint "
                             "runs as the contender 'baseline', for before/after in one run")
    parser.add_argument("--profile-phase", choices=("both", "update", "create-server"),
                        default="both",
                        help="what --py-spy samples: the contender in both phases or the "
                             "update phase only, or the API server (and its children) in "
                             "the create phase")
    parser.add_argument("--cpu-profile", action="store_true",
                        help="sample the setpoint contender's stacks on its CPU clock "
                             "(in-process, every ms of CPU) during both phases")
    parser.add_argument("--count-server", action="store_true",
                        help="count the API server process's user-space instructions in "
                             "the create phase (perf stat): its work, whatever the load")
    args = parser.parse_args()
    sizes = [100] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 1 if args.quick else args.runs
    contenders = args.contenders.split(",")
    if args.baseline is not None and "baseline" not in contenders:
        contenders.insert(0, "baseline")
    results: list[RunResult] = []
    machine = [_machine()]
    for n in sizes:
        for run in range(runs):
            for contender in contenders:
                result = asyncio.run(run_one(contender, n, run, args.idle, args.py_spy,
                                             args.profiles, args.cpu_profile,
                                             args.baseline, args.profile_phase,
                                             args.count_server))
                results.append(result)
                print(json.dumps(asdict(result)), file=sys.stderr, flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    machine.append(_machine())
    command = " ".join(["bench/operator.py", *sys.argv[1:]])
    print(report([asdict(r) for r in results], command))
    print("Machine (before the runs, after them): " + "; ".join(machine))


def _machine() -> str:
    """The load and speed a run met: the 1-minute load average, and how long a bare
    interpreter takes to start (the yardstick every benchmark here states)."""
    return f"load {os.getloadavg()[0]:.1f}, bare interpreter {bare_interpreter_s() * 1000:.0f} ms"


if __name__ == "__main__":
    main()
