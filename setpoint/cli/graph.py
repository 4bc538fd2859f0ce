"""``setpoint graph KIND NAME``: the relationship graph of the stack ``NAME`` belongs to."""

from __future__ import annotations

import asyncio
import sys

import click

from setpoint.cli.platformopts import client_options, connect


@click.command()
@click.argument("kind")
@click.argument("name")
@click.option("--namespace", "-n", default=None,
              help="The object's namespace. Default: the kubeconfig context's.")
@click.option("--output", "-o", type=click.Choice(["tree", "json", "dot", "png", "html"]),
              default="tree", show_default=True,
              help="png draws with Graphviz's dot; html is one self-contained page.")
@click.option("--file", "-f", "path", type=click.Path(dir_okay=False, writable=True),
              help="Write there instead of standard output (png needs it or a pipe).")
@client_options
def graph(kind: str, name: str, namespace: str | None, output: str, path: str | None,
          kubeconfig: str | None, context: str | None) -> None:
    """Every object of the stack KIND NAME belongs to, each edge labelled with its relation.

    Reads each kind once (in parallel) and walks ownerReferences, label selectors, spec
    references and the KubePlus relationship annotations of the CRDs.
    """
    from setpoint.platform import NotFound, Stack, StackGraph, load_cache
    from setpoint.platform.render import RENDERERS, RenderError, to_png
    from setpoint.platform.resourcenames import served_resources

    async def build() -> Stack:
        async with connect(kubeconfig, context) as client:
            cache = await load_cache(client)
            found = StackGraph(cache)
            served = await served_resources(client, cache)
            root = found.resolve(kind, name, namespace or client.namespace, served)
            return found.stack(root)

    try:
        stack = asyncio.run(build())
        data = to_png(stack) if output == "png" else RENDERERS[output](stack).encode()
    except (NotFound, RenderError) as exc:
        raise click.ClickException(str(exc)) from None
    if path:
        with open(path, "wb") as out:
            out.write(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
