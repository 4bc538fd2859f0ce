"""What the platform commands share: the kubeconfig options and a client from them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import click

from setpoint.client import Client, ConfigError, load_config

F = TypeVar("F", bound=Callable[..., Any])


def client_options(func: F) -> F:
    func = click.option("--context", help="The kubeconfig context. Default: its current one.")(
        func)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False),
                        help="Default: $KUBECONFIG, in-cluster, or ~/.kube/config.")(func)


@contextlib.asynccontextmanager
async def connect(kubeconfig: str | None, context: str | None) -> AsyncIterator[Client]:
    try:
        config = load_config(kubeconfig, context=context)
        client = Client(config)  # (which refuses a server that is no http(s) URL)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    async with client:
        yield client
