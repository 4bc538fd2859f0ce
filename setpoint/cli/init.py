"""``setpoint init DIR``: scaffold an operator project (see :mod:`setpoint.cli.scaffold`)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from setpoint.cli.scaffold import Project, package_of, render

# kubebuilder's rules: a DNS-1123 subdomain group, a CamelCase kind
_GROUP = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def _setpoint_source() -> str:
    """What the project's Makefile installs Setpoint from: this checkout when Setpoint
    runs from one (it is not on PyPI under that name yet), else the package name."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "setpoint" / "__init__.py").is_file():
        return str(root)
    return "setpoint"


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--group", default="example.com", show_default=True,
              help="The API group of the custom resource (a DNS subdomain).")
@click.option("--kind", default="Guestbook", show_default=True,
              help="The kind of the custom resource (CamelCase).")
@click.option("--name", help="The project's name. Default: the directory's name.")
@click.option("--force", is_flag=True, help="Write into a directory that is not empty.")
def init(directory: Path, group: str, kind: str, name: str | None, force: bool) -> None:
    """Scaffold an operator project in DIRECTORY: an API type, a controller, tests on the
    embedded cluster, a Makefile (test, run, manifests, deploy), a Dockerfile, a README."""
    if not _GROUP.match(group) or len(group) > 253:
        raise click.BadParameter(f"{group!r} is not a DNS subdomain (e.g. webapp.example.com)",
                                 param_hint="--group")
    if not _KIND.match(kind):
        raise click.BadParameter(f"{kind!r} is not a CamelCase kind (e.g. Guestbook)",
                                 param_hint="--kind")
    if directory.exists() and any(directory.iterdir()) and not force:
        raise click.UsageError(f"{directory} is not empty: choose a new directory, or pass "
                               "--force to write into it")
    project_name = name or directory.resolve().name
    project = Project(name=project_name, package=package_of(project_name), group=group,
                      kind=kind, setpoint=_setpoint_source())
    files = render(project)
    for relative, text in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    click.echo(f"wrote {len(files)} files to {directory} ({kind} in {group}/v1, package "
               f"{project.package})")
    click.echo(f"  cd {directory} && make test")
