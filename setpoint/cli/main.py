"""The ``setpoint`` command line."""

from __future__ import annotations

import click

from setpoint.cli.cluster import cluster


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="setpoint")
def cli() -> None:
    """Setpoint: write, test and run Kubernetes operators in Python."""


cli.add_command(cluster)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
