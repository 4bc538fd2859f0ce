"""What the platform commands share: the kubeconfig options and a client from them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import click

from setpoint.client import (
    ApiError,
    Client,
    ClientError,
    ConfigError,
    RetryPolicy,
    UnauthorizedError,
    load_config,
)

F = TypeVar("F", bound=Callable[..., Any])

_COMMAND_RETRIES = RetryPolicy(refused_connections=False)


def client_options(func: F) -> F:
    func = click.option("--context", help="The kubeconfig context. Default: its current one.")(
        func)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False),
                        help="Default: $KUBECONFIG, in-cluster, or ~/.kube/config.")(func)


@contextlib.asynccontextmanager
async def connect(kubeconfig: str | None, context: str | None) -> AsyncIterator[Client]:
    """A client of the kubeconfig's cluster. A cluster that cannot be reached or refuses
    the credentials ends the command with one line, as kubectl's does, not a traceback."""
    try:
        config = load_config(kubeconfig, context=context)
        # (which refuses a server that is no http(s) URL); a refused connection ends the
        # command at once, as kubectl's does, instead of five backoffs per request
        client = Client(config, retry=_COMMAND_RETRIES)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        async with client:
            yield client
    except UnauthorizedError:
        raise click.ClickException(config.unauthorized_message()) from None
    except ClientError as exc:  # unreachable, TLS, an unknown kind
        raise click.ClickException(str(exc)) from None
    except ApiError as exc:
        raise click.ClickException(f"{exc.code} {exc.reason}: {exc.message}") from None

