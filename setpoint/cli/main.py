"""The ``setpoint`` command line.

Subcommands are imported only when they run: ``setpoint cluster up`` must not pay for the
SDK's imports (pydantic, the runtime) in its start-up time, and vice versa.
"""

from __future__ import annotations

import importlib

import click

from setpoint.parentdeath import die_with_parent

# command name -> "module:attribute" of its click command
COMMANDS = {
    "check": "setpoint.cli.check:check",
    "cluster": "setpoint.cli.cluster:cluster",
    "generate": "setpoint.cli.generate:generate",
    "graph": "setpoint.cli.graph:graph",
    "init": "setpoint.cli.init:init",
    "metrics": "setpoint.cli.metrics:metrics",
    "pod": "setpoint.workloads.podcli:pod",
    "node": "setpoint.workloads.cli:node",
    "run": "setpoint.cli.run:run",
}


class LazyGroup(click.Group):
    """A group whose subcommands are loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> object:
        """Ctrl+C before a command handles signals itself (the imports, the user's module,
        the checks of the flags) stops it as the default SIGINT disposition stops a Go
        program (kubectl, controller-runtime's managers before ``SetupSignalHandler``):
        silently, exit status 130 (128 + SIGINT), which shells read as interrupted; not
        click's "Aborted!" and status 1. Nothing runs yet at those points to be stopped."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            ctx.exit(130)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="setpoint")
def cli() -> None:
    """Setpoint: write, test and run Kubernetes operators in Python."""


def main() -> None:
    die_with_parent()  # when a parent asked for it: a test's server, cluster up's child
    cli()


if __name__ == "__main__":
    main()
