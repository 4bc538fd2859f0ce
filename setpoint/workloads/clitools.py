"""What the ``setpoint node`` and ``setpoint pod`` commands share: reaching the cluster of a
kubeconfig and turning every failure into one line on stderr."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

T = TypeVar("T")

kubeconfig_option = click.option(
    "--kubeconfig", type=click.Path(dir_okay=False, path_type=Path), envvar="KUBECONFIG",
    help="The kubeconfig of the cluster. Default: $KUBECONFIG, else the one `setpoint "
         "cluster up` wrote ($XDG_DATA_HOME/setpoint/cluster/kubeconfig).")


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def run_against(kubeconfig: Path | None, action: Callable[[Any], Awaitable[T]], *,
                on_timeout: str | None = None) -> T:
    """Run ``action(client)`` against the cluster, turning failures into one line."""
    from setpoint.client import (
        ApiError,
        Client,
        ClientError,
        ConfigError,
        UnauthorizedError,
        load_kubeconfig,
        local_cluster_kubeconfig,
    )

    if kubeconfig is None:
        # these commands drive Setpoint's simulated workloads: the local cluster is the one
        kubeconfig = local_cluster_kubeconfig()
        if not kubeconfig.exists():
            fail(f"no cluster: no kubeconfig at {kubeconfig} (start one with `setpoint "
                 f"cluster up`), pass --kubeconfig FILE or set KUBECONFIG")
    elif not kubeconfig.exists():
        fail(f"kubeconfig {kubeconfig} does not exist")

    try:
        config = load_kubeconfig(kubeconfig)
    except ConfigError as exc:
        fail(f"invalid kubeconfig {kubeconfig}: {exc}")

    async def main() -> T:
        async with Client(config, field_manager="setpoint") as client:
            return await action(client)

    try:
        return asyncio.run(main())
    except ConfigError as exc:
        fail(f"invalid kubeconfig {kubeconfig}: {exc}")
    except UnauthorizedError:
        fail(config.unauthorized_message())
    except ApiError as exc:
        fail(getattr(exc, "message", None) or str(exc))
    except TimeoutError:
        fail(on_timeout or "the cluster did not answer in time")
    except (ClientError, OSError, ValueError) as exc:
        fail(str(exc))
