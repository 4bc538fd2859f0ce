"""``setpoint metrics``: a stack's CPU, memory and storage; or every stack's, served to
Prometheus with CPU-seconds and byte-seconds for chargeback."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import sys

import click

from setpoint.cli.platformopts import client_options, connect


def _loopback(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"{address!r}: expected HOST:PORT", param_hint="--serve")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise click.BadParameter(f"{host!r} is not a loopback address", param_hint="--serve")
    return host, int(port)


@click.command()
@click.argument("kind", required=False)
@click.argument("name", required=False)
@click.option("--namespace", "-n", default=None, help="Default: the kubeconfig context's.")
@click.option("--output", "-o", type=click.Choice(["pretty", "json", "prometheus"]),
              default="pretty", show_default=True)
@click.option("--serve", "serve_address", metavar="HOST:PORT",
              help="Serve every stack root's figures at http://HOST:PORT/metrics (loopback).")
@click.option("--interval", type=float, default=15.0, show_default=True,
              help="Seconds between samples when serving.")
@client_options
def metrics(kind: str | None, name: str | None, namespace: str | None, output: str,
            serve_address: str | None, interval: float, kubeconfig: str | None,
            context: str | None) -> None:
    """CPU and memory (requests, limits, usage) and storage of the stack of KIND NAME."""
    if serve_address is not None:
        if kind or name:
            raise click.UsageError("--serve takes no KIND NAME: it serves every stack")
        _serve(_loopback(serve_address), interval, kubeconfig, context)
        return
    if not kind or not name:
        raise click.UsageError("KIND and NAME are required (or --serve HOST:PORT)")
    from setpoint.platform import NotFound, ObjectRef, StackGraph, load_cache
    from setpoint.platform.chargeback import exposition
    from setpoint.platform.resourcenames import served_resources
    from setpoint.platform.settle import gather_settled
    from setpoint.platform.usage import StackFigures, figures, pod_metrics, pretty

    async def measure() -> tuple[ObjectRef, StackFigures]:
        async with connect(kubeconfig, context) as client:
            cache, found = await gather_settled(load_cache(client), pod_metrics(client))
            graph = StackGraph(cache)
            served = await served_resources(client, cache)
            root = graph.resolve(kind, name, namespace or client.namespace, served)
            return root, figures(graph.stack(root), found)

    try:
        root, figs = asyncio.run(measure())
    except NotFound as exc:
        raise click.ClickException(str(exc)) from None
    if output == "json":
        text = json.dumps(figs.to_json(), indent=2) + "\n"
    elif output == "prometheus":
        text = exposition({root: figs})
    else:
        text = pretty(figs)
    sys.stdout.write(text)


def _serve(address: tuple[str, int], interval: float, kubeconfig: str | None,
           context: str | None) -> None:
    from prometheus_client import CollectorRegistry, start_http_server

    from setpoint.platform import StackGraph, Watch
    from setpoint.platform.chargeback import Chargeback
    from setpoint.platform.usage import pod_metrics

    async def run() -> None:
        async with connect(kubeconfig, context) as client:
            watch = Watch(client)
            await watch.start()
            chargeback = Chargeback(StackGraph(watch.cache))
            registry = CollectorRegistry(auto_describe=False)
            registry.register(chargeback)
            start_http_server(address[1], addr=address[0], registry=registry)
            click.echo(f"serving http://{address[0]}:{address[1]}/metrics", err=True)
            try:
                while True:
                    chargeback.sample(await pod_metrics(client))
                    await asyncio.sleep(interval)
            finally:
                await watch.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
