"""``setpoint cluster``: run the embedded Kubernetes API server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import click


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "setpoint" / "cluster"


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
def up(data: Path | None, memory: bool, port: int, host: str, kubeconfig: Path | None) -> None:
    """Serve the API until interrupted (SIGINT or SIGTERM)."""
    if data is not None and memory:
        raise click.UsageError("--data and --memory exclude each other: choose one.")
    if not memory and data is None:
        data = default_data_dir()
    try:
        import uvloop  # a faster event loop where the platform has it
    except ImportError:
        uvloop = None
    try:
        if uvloop is not None:
            uvloop.run(_serve(data, host, port, kubeconfig))
        else:
            asyncio.run(_serve(data, host, port, kubeconfig))
    except OSError as exc:
        click.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(1)


async def _serve(data: Path | None, host: str, port: int, kubeconfig: Path | None) -> None:
    from setpoint.cluster import serve

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(data, host=host, port=port, kubeconfig=kubeconfig) as running:
        where = f"data in {data}" if data is not None else "state in memory"
        click.echo(f"setpoint cluster serving at {running.url} ({where})")
        click.echo(f"kubeconfig: {running.kubeconfig}")
        click.echo(f"  export KUBECONFIG={running.kubeconfig}")
        click.echo("  kubectl get namespaces")
        click.echo("Press Ctrl+C to stop.", nl=True)
        sys.stdout.flush()
        await stop.wait()
    click.echo("stopped")
