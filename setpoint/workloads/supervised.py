"""The workloads as a program of their own, run and supervised by ``setpoint cluster up``.

    python -m setpoint.workloads.supervised '{"nodes": 3, ...}'   (WorkloadSettings as JSON)

The nodes, scheduler, kubelets and controllers are clients of the API server, as
kube-controller-manager, kube-scheduler and the kubelets are separate programs beside a
kube-apiserver; in a process of their own they use the second core instead of the server's.

The program imports the SDK and the nodes area first, while its parent is still starting the
server, and the other areas until the server serves (what is left then is imported as it is
installed, after ``nodes-ready``), then talks with its parent in lines:

- stdin, from the parent: the path of a kubeconfig once the server serves, and then nothing.
  End of file is the order to stop: the parent closed it, or the parent is gone (even killed
  with SIGKILL, its end of the pipe closes), so the workloads never outlive it.
- stdout, to the parent: ``started`` once the manager runs (with the nodes area alone:
  the kubelets' node status and the node lifecycle controller), then ``nodes-ready`` when
  every node reports Ready and the node lifecycle controller has lifted its ``not-ready``
  taint, or ``nodes-not-ready NAMES`` after :data:`NODE_READY_TIMEOUT`; or
  ``error MESSAGE`` if the workloads could not start. The scheduler, the kubelets' pod
  workers and the other controllers are added to the running manager right after either
  report (:mod:`setpoint.workloads.startorder`): at ``nodes-ready`` they are starting, and
  what is created then is handled once their caches have listed it. ``running`` follows
  once every one of them runs its workers (or ``error MESSAGE`` if the manager stopped on
  its own first: caches that did not sync).

SIGINT and SIGTERM stop it too. It runs in a process group of its own, so a terminal's
Ctrl+C reaches only the parent, which then closes its stdin.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # the program's start is imports (a tenth less CPU without the cyclic collector, which
    # has little to free among modules and classes): it runs again once they are done, over
    # what is made from then on (as in setpoint.cli.cluster.resume_collector)
    gc.disable()
    from setpoint.parentdeath import die_with_parent

    die_with_parent()  # before the imports: a parent killed meanwhile is noticed now

import asyncio
import importlib
import json
import logging
import select
import signal
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.client.transport import IDLE_CONNS_PER_HOST
from setpoint.runtime import Manager
from setpoint.runtime._manager import Runnable
from setpoint.workloads.manager import enabled_areas, install_areas, new_manager
from setpoint.workloads.nodes import node_registration
from setpoint.workloads.settings import WorkloadSettings
from setpoint.workloads.startorder import split_areas, take_after_nodes_ready

log = logging.getLogger(__name__)

NODE_READY_TIMEOUT = 60.0
"""How long to wait for the nodes before telling the parent they are not all Ready: a node
kept NotReady on purpose in a persisted cluster must not block ``cluster up``."""

_NODE = Kind("v1", "Node")
_NOT_READY_TAINT = "node.kubernetes.io/not-ready"

COLLECTOR_THRESHOLDS = (10_000, 50, 10)
"""The cyclic collector's thresholds in this process (Python's are 700, 10, 10). Nearly all
of the simulation's garbage is freed by reference counting (a 3,000-pod rollout left about
12,000 objects in cycles for the collector, against hundreds of millions allocated), and
its objects live for a request or an informer's event, often longer than 700 allocations
apart in an event loop with hundreds of requests in flight. At 700 they were moved to the
oldest generation by the thousand, whose full collections walk every cached pod: 21% of the
process's CPU at 10,000 pods, 0.6 s per full collection (docs/benchmarks.md, Workloads,
sixth pass). A young generation of 10,000 lets them die young; one collection of the middle
generation per 50 young ones keeps what survives from reaching the oldest."""


def settings_from_json(text: str) -> WorkloadSettings:
    """The settings a parent passed (only WorkloadSettings' own fields; tuples as lists)."""
    given = json.loads(text)
    known = {f.name for f in fields(WorkloadSettings)}
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in given.items() if k in known}
    return WorkloadSettings(**values)


_PARENT = sys.stdout
"""The pipe to the parent; ``main`` points ``sys.stdout`` at stderr, so that nothing else
printed reads as a message."""


def _say(line: str) -> None:
    _PARENT.write(line + "\n")
    _PARENT.flush()


def _schedulable_ready(node: Any) -> bool:
    """Ready=True, and the ``not-ready:NoSchedule`` taint TaintNodesByCondition admission
    created it with lifted by the node lifecycle controller: a pod created now is placed."""
    conditions = (node.get("status") or {}).get("conditions") or []
    taints = (node.get("spec") or {}).get("taints") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) \
        and not any(t.get("key") == _NOT_READY_TAINT and t.get("effect") == "NoSchedule"
                    for t in taints)


async def wait_nodes_ready(client: Client, names: set[str]) -> None:
    """Return once every node of ``names`` reports ``Ready=True`` and has lost its
    ``not-ready`` taint (by list, then watch)."""
    ready: set[str] = set()

    def observe(obj: Any) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        if _schedulable_ready(obj):
            ready.add(name)
        else:
            ready.discard(name)

    listed = await client.list(_NODE)
    for item in listed.items:
        observe(item)
    version = listed.resource_version
    while not names <= ready:
        async with client.watch(_NODE, resource_version=version) as events:
            async for event_type, obj in events:
                version = obj["metadata"]["resourceVersion"]
                if event_type == "BOOKMARK":
                    continue
                if event_type == "DELETED":
                    ready.discard(obj["metadata"]["name"])
                else:
                    observe(obj)
                if names <= ready:
                    return


class _NodesReady:
    """Hears the manager's node informer and sets :attr:`done` once every node of
    ``names`` is :func:`_schedulable_ready` in its store."""

    def __init__(self, store: Any, names: set[str]) -> None:
        self._store = store
        self._names = names
        self.done = asyncio.Event()
        self.check()

    def missing(self) -> set[str]:
        return {name for name in self._names
                if not _schedulable_ready(self._store.get(name) or {})}

    def check(self) -> None:
        if not self.missing():
            self.done.set()

    def on_add(self, obj: Any) -> None:
        self.check()

    def on_update(self, old: Any, new: Any) -> None:
        self.check()

    def on_delete(self, obj: Any) -> None:
        self.check()


async def _report_nodes(manager: Manager, settings: WorkloadSettings,
                        say: Callable[[str], None], reported: asyncio.Event,
                        held: list[Runnable], later: list[str], stop: asyncio.Event) -> None:
    """Say ``nodes-ready`` once the manager's cache holds every node Ready and rid of its
    not-ready taint, or ``nodes-not-ready NAMES`` after :data:`NODE_READY_TIMEOUT`; then
    install the ``later`` areas and add the ``held`` runnables to the running manager and
    set ``reported`` (what waits for the nodes starts: :mod:`setpoint.workloads.startorder`);
    if they cannot be installed, set ``stop`` and raise: the workloads end with that error.
    Say ``running`` once every controller runs its workers (``cluster up`` says so only
    then), or ``error MESSAGE`` and set ``stop`` if the manager stopped on its own first.

    The manager's node informer (which its node controllers watch anyway) tells, so the
    answer to the node lifecycle controller's taint-lifting write is heard on the watch
    already open, without a LIST and a WATCH of its own after ``started``."""
    names = {f"{settings.name_prefix}{i}" for i in range(1, settings.nodes + 1)}
    informer = manager.informer_for(_NODE)
    await informer.wait_synced()
    watching = _NodesReady(informer.store, names)
    informer.add_handler(watching)
    try:
        await asyncio.wait_for(watching.done.wait(), NODE_READY_TIMEOUT)
    except TimeoutError:
        say("nodes-not-ready " + ",".join(sorted(watching.missing())))
    else:
        say("nodes-ready")
    finally:
        informer.remove_handler(watching)
    if stop.is_set():
        # told to stop as the nodes went Ready: the manager is stopping, nothing is added
        # (Python 3.11's wait_for returns the result of a wait that ended as this task was
        # cancelled, instead of raising: bpo-42130)
        return
    try:
        install_areas(manager, settings, later)
        for runnable in held:
            manager.add_runnable(runnable)
    except Exception:
        # the parent hears only an exit by now: the child stops rather than run on with
        # nodes but no scheduler or controllers, and the log tells why
        log.exception("workloads_not_started areas=%s", ",".join(later))
        stop.set()
        raise
    reported.set()
    if await manager.wait_for_controllers():
        say("running")
    elif manager.error is not None:
        # stopped on its own (caches that did not sync): the workloads end, as for an
        # area that cannot be installed, rather than run on with no controllers
        say(f"error {manager.error}".replace("\n", " "))
        stop.set()


async def _parent(loop: asyncio.AbstractEventLoop) -> asyncio.StreamReader:
    """Our stdin, the pipe from the parent, as a stream the event loop reads."""
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def _until_closed(reader: asyncio.StreamReader) -> None:
    while await reader.read(4096):
        pass


async def run(settings: WorkloadSettings, kubeconfig: Path, stop: asyncio.Event,
              say: Callable[[str], None] = _say) -> None:
    """Run the workloads against the API server of ``kubeconfig`` until ``stop``, telling
    ``say`` how they are (the lines of the module's docstring; ``cluster up
    --workloads-in-process`` passes its own)."""
    # the controllers' pod creates and the kubelets' status writes come in bursts of a
    # hundred: each opened its own TLS connection (client-go's HTTP/2 carries them on one)
    client = Client(load_kubeconfig(kubeconfig), field_manager="kube-controller-manager",
                    max_connections=IDLE_CONNS_PER_HOST)
    await run_with(client, settings, stop, say)


async def run_with(client: Client, settings: WorkloadSettings, stop: asyncio.Event,
                   say: Callable[[str], None]) -> None:
    """:func:`run` with this client (closed at the end)."""
    manager: Manager | None = None
    reporter: asyncio.Task[None] | None = None
    registering: asyncio.Future[list[str]] | None = None
    try:
        try:
            # only what makes the nodes Ready starts now (three informers, not twenty-five);
            # the scheduler, pod workers and controllers are added once they are reported
            first, later = split_areas(enabled_areas(settings))
            manager = new_manager(client)
            install_areas(manager, settings, first)
            # metrics-server's registration (and the aggregator's checks of it on the
            # server) waits until the nodes are reported: out of the window before ready
            reported = asyncio.Event()
            held = take_after_nodes_ready(manager)
            registration = node_registration(manager)
            if registration is not None and registration.events is not None:
                # the kubelets' node events (Starting, the conditions, NodeReady: about
                # twenty creates) are stamped as they happen and written once the nodes
                # are reported, not between the node writes that make them Ready
                registration.events.send_after(reported)
            # the kubelets register their nodes (Ready, as a kubelet's first status says)
            # while the controllers' caches fill, not after; the nodes area's own runnable
            # then waits for this registration instead of making another
            registering = registration.start(client) if registration is not None else None
            await manager.start()
            if registering is not None:
                await registering
        except Exception as exc:
            say(f"error {exc}".replace("\n", " "))
            return
        say("started")
        reporter = asyncio.ensure_future(_report_nodes(manager, settings, say, reported,
                                                         held, later, stop))
        await stop.wait()
        if reporter.done() and not reporter.cancelled() and reporter.exception():
            raise reporter.exception()  # type: ignore[misc]
    finally:
        if registering is not None:
            registering.cancel()
        if reporter is not None:
            reporter.cancel()
        # the controllers stop while the API server still answers them
        if manager is not None:
            await manager.stop()
        await client.close()


async def main_async(settings: WorkloadSettings) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    parent = await _parent(loop)
    first = asyncio.ensure_future(parent.readline())
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({first, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if stop.is_set() or not first.done() or not first.result().strip():
        first.cancel()
        return  # stopped, or the parent went away, before its server served
    closed = asyncio.ensure_future(_until_closed(parent))
    closed.add_done_callback(lambda _: stop.set())
    try:
        await run(settings, Path(first.result().decode().strip()), stop)
    finally:
        closed.cancel()


def _parent_has_spoken() -> bool:
    """Whether stdin holds the parent's first line (or its end): the server serves, and
    importing more now would delay the nodes (issue 12: without bytecode, compiling every
    area took longer than the server's start)."""
    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):
        return False  # no stdin to watch (run by hand): import everything now, as before


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    settings = settings_from_json(args[0] if args else "{}")
    sys.stdout = sys.stderr
    first, later = split_areas(enabled_areas(settings))
    for module_name in first:  # now, while the parent starts its server
        importlib.import_module(module_name)
    for module_name in later:
        if _parent_has_spoken():
            break  # the server serves: the rest is imported once the nodes are reported
        importlib.import_module(module_name)
    gc.freeze()  # the imports' objects stay out of the collections (they live as long)
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    gc.enable()
    try:
        import uvloop  # a faster event loop where the platform has it
    except ImportError:
        asyncio.run(main_async(settings))
    else:
        uvloop.run(main_async(settings))


if __name__ == "__main__":
    main()
