"""``setpoint cluster``: run the embedded Kubernetes API server."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click


@dataclass(frozen=True)
class WorkloadOptions:
    """What ``cluster up`` runs beside the API server (None: a bare API server)."""

    nodes: int
    node_cpu: str
    node_memory: str
    node_pods: int
    runtime: str = "simulated"
    loopback_network: int = 0


def _quantity(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from setpoint.machinery.quantity import Quantity, QuantityError

    try:
        if Quantity.parse(value).sign() < 0:
            raise QuantityError("negative")
    except (QuantityError, ValueError):
        raise click.BadParameter(f"{value!r} is not a quantity") from None
    return value


def default_data_dir() -> Path:
    from setpoint.client.config import local_cluster_dir

    return local_cluster_dir()


@click.group()
def cluster() -> None:
    """Run the embedded, Kubernetes-API-compatible cluster."""


@cluster.command("up")
@click.option("--data", "data", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the state, CA and token in DIR (survives restarts). "
                   "Default: $XDG_DATA_HOME/setpoint/cluster.")
@click.option("--memory", is_flag=True, help="Keep the state in memory only.")
@click.option("--port", type=click.IntRange(0, 65535), default=6443, show_default=True,
              help="Port to listen on; 0 picks a free one (the kubeconfig tells which).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback opens the API to the network.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the kubeconfig. Default: DIR/kubeconfig.")
@click.option("--nodes", type=click.IntRange(0), default=3, show_default=True,
              help="Simulated nodes to register (node-1 … node-N).")
@click.option("--node-cpu", default="4", show_default=True, callback=_quantity,
              help="CPU capacity of each node.")
@click.option("--node-memory", default="16Gi", show_default=True, callback=_quantity,
              help="Memory capacity of each node.")
@click.option("--node-pods", type=click.IntRange(0), default=110, show_default=True,
              help="Pod capacity of each node.")
@click.option("--runtime", type=click.Choice(["simulated", "process"]), default="simulated",
              show_default=True,
              help="Container runtime of the kubelets: simulated (pods run nothing) or process "
                   "(known images run as real local programs, each pod on its own loopback "
                   "address; see docs/process-runtime.md).")
@click.option("--no-workloads", is_flag=True,
              help="Serve a bare API server: no nodes, scheduler, kubelets or controllers.")
def up(data: Path | None, memory: bool, port: int, host: str, kubeconfig: Path | None,
       nodes: int, node_cpu: str, node_memory: str, node_pods: int, runtime: str,
       no_workloads: bool) -> None:
    """Serve the API until interrupted (SIGINT or SIGTERM).

    Unless --no-workloads, simulated nodes, a scheduler, kubelets and the built-in
    controllers run beside it, as clients of its API, so that workloads become Ready."""
    if data is not None and memory:
        raise click.UsageError("--data and --memory exclude each other: choose one.")
    if not memory and data is None:
        data = default_data_dir()
    workloads = None if no_workloads else WorkloadOptions(nodes, node_cpu, node_memory,
                                                           node_pods, runtime)
    try:
        _run(_serve(data, host, port, kubeconfig, workloads))
    except OSError as exc:
        click.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(1)


async def _start_workloads(kubeconfig: Path, options: WorkloadOptions) -> tuple[Any, Any]:
    """Start the workloads manager against the served API; (manager, client)."""
    from setpoint.client import Client, load_kubeconfig
    from setpoint.workloads.manager import build_manager
    from setpoint.workloads.settings import WorkloadSettings

    client = Client(load_kubeconfig(kubeconfig), field_manager="kube-controller-manager")
    settings = WorkloadSettings(nodes=options.nodes, node_cpu=options.node_cpu,
                                node_memory=options.node_memory, node_pods=options.node_pods,
                                runtime=options.runtime,
                                loopback_network=options.loopback_network)
    manager = build_manager(client, settings)
    try:
        await manager.start()
    except BaseException:
        await client.close()
        raise
    return manager, client


def _run(main: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop  # a faster event loop where the platform has it
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


async def _serve(data: Path | None, host: str, port: int, kubeconfig: Path | None,
                 workloads: WorkloadOptions | None = None) -> None:
    """Serve until a signal. The kubeconfig is written and "ready" printed only once the
    cluster is usable: its nodes Ready (as kind's ``--wait`` waits for the control-plane
    node), so ``kubectl get nodes`` right after shows them Ready. Until then the workloads
    reach the server through a private kubeconfig of their own."""
    import contextlib
    import dataclasses
    import tempfile

    from setpoint.cluster import serve
    from setpoint.cluster.authentication import kubeconfig as kubeconfig_file

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    ip_range = None
    claim: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if workloads is not None and workloads.runtime == "process":
        from setpoint.workloads.loopbacknet import NoFreeLoopbackNetwork, claim_loopback_network

        # real processes need addresses of their own: a loopback block no other cluster on
        # this machine holds; its Services' range is the --service-cluster-ip-range
        try:
            claim = claim_loopback_network()
        except NoFreeLoopbackNetwork as exc:
            click.echo(f"error: {exc}: stop one of them first", err=True)
            sys.exit(1)
        network = claim.network
        ip_range = network.services
        workloads = dataclasses.replace(workloads, loopback_network=network.index)
    with claim, tempfile.TemporaryDirectory(prefix="setpoint-up-") as private:
        internal = Path(private) / "kubeconfig"
        async with serve(data, host=host, port=port, kubeconfig=internal,
                         service_cluster_ip_range=ip_range) as running:
            where = f"data in {data}" if data is not None else "state in memory"
            click.echo(f"setpoint cluster serving at {running.url} ({where})")
            sys.stdout.flush()
            manager = client = None
            try:
                if workloads is not None:
                    try:
                        manager, client = await _start_workloads(internal, workloads)
                        click.echo(f"workloads running: {workloads.nodes} node(s), scheduler, "
                                   f"kubelets ({workloads.runtime} runtime), controllers")
                        sys.stdout.flush()
                        await _wait_nodes_ready(client, workloads.nodes, stop)
                    except Exception as exc:
                        click.echo(f"error: workloads did not start: {exc}", err=True)
                if not stop.is_set():
                    target = kubeconfig or (data / "kubeconfig" if data is not None
                                            else internal)
                    kubeconfig_file.write(target, running.url, running.ca_file.read_bytes(),
                                          running.token)
                    click.echo(f"kubeconfig: {target}")
                    click.echo(f"  export KUBECONFIG={target}")
                    click.echo("  kubectl get nodes" if workloads is not None
                               else "  kubectl get namespaces")
                    click.echo("ready")
                    click.echo("Press Ctrl+C to stop.")
                    sys.stdout.flush()
                await stop.wait()
            finally:
                # the controllers stop first, while the API server still answers them
                if manager is not None:
                    await manager.stop()
                if client is not None:
                    await client.close()
    click.echo("stopped")


NODE_READY_TIMEOUT = 60.0
"""How long ``cluster up`` waits for its nodes before it says ready anyway (with a
warning): a node kept NotReady on purpose in a persisted cluster must not block it."""


async def _wait_nodes_ready(client: Any, count: int, stop: asyncio.Event) -> None:
    """Wait until node-1 … node-COUNT report ``Ready=True``, by list and watch (or a
    signal, or the timeout)."""
    from setpoint.client import Kind

    node = Kind("v1", "Node")
    wanted = {f"node-{i}" for i in range(1, count + 1)}
    ready: set[str] = set()

    def observe(obj: Any) -> None:
        name = str((obj.get("metadata") or {}).get("name"))
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            ready.add(name)
        else:
            ready.discard(name)

    async def watch() -> None:
        listed = await client.list(node)
        for item in listed.items:
            observe(item)
        version = listed.resource_version
        while not wanted <= ready:
            async with client.watch(node, resource_version=version) as events:
                async for event_type, obj in events:
                    if event_type == "BOOKMARK":
                        version = obj["metadata"]["resourceVersion"]
                        continue
                    version = obj["metadata"]["resourceVersion"]
                    if event_type == "DELETED":
                        ready.discard(obj["metadata"]["name"])
                    else:
                        observe(obj)
                    if wanted <= ready:
                        return

    waiter = asyncio.ensure_future(watch())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({waiter, stopper}, timeout=NODE_READY_TIMEOUT,
                                     return_when=asyncio.FIRST_COMPLETED)
        if not done:
            missing = ", ".join(sorted(wanted - ready))
            click.echo(f"warning: nodes not Ready after {NODE_READY_TIMEOUT:.0f} s: {missing}",
                       err=True)
        elif waiter in done:
            waiter.result()
    finally:
        for task in (waiter, stopper):
            task.cancel()
