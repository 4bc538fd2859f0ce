"""``setpoint generate``: CRDs, RBAC and deployment manifests from an operator's code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from setpoint.cli.targets import TargetError, permissions_of, split_target


@click.group()
def generate() -> None:
    """Write the YAML an operator needs in a cluster."""


def _output(documents: list[dict[str, Any]], output: Path | None) -> None:
    from setpoint.resources import dump_yaml

    if output is None:
        click.echo(dump_yaml(documents), nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(dump_yaml(documents))
    click.echo(f"wrote {output}", err=True)


def _undeclared(namespace: dict[str, object]) -> str:
    """Why classes a module defines are no custom resources: a class without ``group`` is
    taken for an abstract base, which is seldom what ``version=`` alone meant."""
    from setpoint.resources import CustomResource

    names = [value.__name__ for value in namespace.values()
             if isinstance(value, type) and issubclass(value, CustomResource)
             and value is not CustomResource and value.__declaration__ is None
             and value.__module__ == namespace.get("__name__")]
    if not names:
        return ""
    return (f": {', '.join(names)} {'has' if len(names) == 1 else 'have'} no group (a base "
            f"class, then): declare `class {names[0]}(CustomResource, group=\"example.com\", "
            f"version=\"v1\")`")


@generate.command("crds")
@click.argument("module")
@click.option("-o", "--output", type=click.Path(),
              help="A file for all CRDs, or a directory (ending in / or existing) for one "
                   "file per CRD, named <group>_<plural>.yaml. Default: standard output.")
def crds(module: str, output: str | None) -> None:
    """The CRDs of the CustomResource classes in MODULE (a module, a package with its
    submodules, or a .py file)."""
    from setpoint.resources import CRDError, SchemaError, discover_resources, generate_crds

    target: str | Path = module
    if module.endswith(".py"):
        target = Path(module)
        if not target.exists():
            raise TargetError(f"file {module!r} not found")
    else:
        from setpoint.cli.targets import import_module

        imported = import_module(split_target(module)[0])  # a missing one: one line
    try:
        documents = generate_crds(discover_resources(target))
    except (CRDError, SchemaError) as exc:
        raise TargetError(f"cannot generate CRDs: {exc}") from None
    if not documents:
        raise TargetError(f"{module!r} defines no CustomResource classes"
                          + _undeclared(vars(imported) if target is module else {}))
    if output is not None and (output.endswith("/") or Path(output).is_dir()):
        directory = Path(output)
        directory.mkdir(parents=True, exist_ok=True)
        for crd in documents:
            spec = crd["spec"]
            _output([crd], directory / f"{spec['group']}_{spec['names']['plural']}.yaml")
        return
    _output(documents, Path(output) if output is not None else None)


def _name(default: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", default.lower()).strip("-")
    return name or "operator"


LEADER_ELECT = click.option(
    "--leader-elect/--no-leader-elect", default=None,
    help="Grant what `setpoint run --leader-elect` needs: get, create and update of its "
         "Lease and create and patch of Events in the Lease's namespace (kubebuilder's "
         "leader_election_role.yaml). Default: the Manager's setting (leader_election).")


def _with_leader_election(permissions: Any, leader_elect: bool | None) -> Any:
    import dataclasses

    if leader_elect is None:
        return permissions
    return dataclasses.replace(permissions, leader_election=leader_elect)


def _lease_namespace(manager: str | None) -> str | None:
    """The Manager's ``leader_election_namespace``, where its Lease (and so its Role) is."""
    if manager is None:
        return None
    from setpoint.cli.targets import resolve

    settings = getattr(resolve(manager)[2], "settings", None)
    namespace = getattr(settings, "leader_election_namespace", None)
    return namespace if isinstance(namespace, str) and namespace else None


@generate.command("rbac")
@click.argument("target", metavar="MODULE[:ATTRIBUTE]")
@click.option("--name", help="Name of the roles and the ServiceAccount. Default: the "
                             "Manager's name.")
@click.option("--namespace", "-n", default="default", show_default=True,
              help="Namespace of the operator's ServiceAccount.")
@LEADER_ELECT
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path))
def rbac(target: str, name: str | None, namespace: str, leader_elect: bool | None,
         output: Path | None) -> None:
    """Least-privilege Roles and bindings from what the controllers in TARGET declare they
    watch, own and write (or from its `permissions`)."""
    from setpoint.resources import generate_rbac

    permissions, manager = permissions_of(target)
    permissions = _with_leader_election(permissions, leader_elect)
    name = name or _default_name(target, manager)
    _output(generate_rbac(permissions, name=name, namespace=namespace,
                          leader_election_namespace=_lease_namespace(manager)), output)


@generate.command("manifests")
@click.argument("target", metavar="MODULE[:ATTRIBUTE]")
@click.option("--image", required=True, help="The operator's container image.")
@click.option("--name", help="Name of the Deployment, ServiceAccount and roles. Default: "
                             "the Manager's name.")
@click.option("--namespace", "-n", default="default", show_default=True,
              help="Namespace to run the operator in.")
@click.option("--run", "run_target", metavar="MODULE:ATTRIBUTE",
              help="What the container runs. Default: the Manager found in TARGET.")
@click.option("--cert-manager", is_flag=True,
              help="Have cert-manager issue the webhook server's certificate and inject "
                   "its CA (only for a Manager with webhooks).")
@LEADER_ELECT
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path))
def manifests(target: str, image: str, name: str | None, namespace: str,
              run_target: str | None, cert_manager: bool, leader_elect: bool | None,
              output: Path | None) -> None:
    """The Namespace, ServiceAccount, RBAC and Deployment that run the operator in TARGET
    with `setpoint run`; for a Manager with webhooks also their Service, certificate mount
    and configurations."""
    from setpoint.cli.targets import resolve
    from setpoint.resources import generate_manifests

    permissions, manager = permissions_of(target)
    permissions = _with_leader_election(permissions, leader_elect)
    run_target = run_target or manager
    if run_target is None:
        raise TargetError(f"{target!r} holds no Manager: pass --run MODULE:ATTRIBUTE")
    name = name or _default_name(target, manager)
    webhooks = getattr(resolve(run_target)[2], "webhooks", [])
    # the Deployment runs as the RBAC was generated: the flag, when given, goes to its command
    args = () if leader_elect is None else (
        "--leader-elect" if leader_elect else "--no-leader-elect",)
    _output(generate_manifests(name, image, namespace, permissions, run=run_target,
                               webhooks=webhooks, cert_manager=cert_manager, args=args,
                               leader_election_namespace=_lease_namespace(manager)),
            output)


@generate.command("webhooks")
@click.argument("target", metavar="MODULE[:ATTRIBUTE]")
@click.option("--name", help="Prefix of the configurations: NAME-mutating, NAME-validating. "
                             "Default: the Manager's name.")
@click.option("--namespace", "-n", default="default", show_default=True,
              help="Namespace of the operator's webhook Service.")
@click.option("--service", default="webhook-service", show_default=True,
              help="The Service in front of the operator's webhook port (443 -> 9443).")
@click.option("--selector", default=None, metavar="KEY=VALUE",
              help="Pod selector of the Service. Default: app.kubernetes.io/name=NAME.")
@click.option("--url", default=None,
              help="Call this https:// base URL instead of a Service (no Service written).")
@click.option("--ca-bundle", "ca_bundle", type=click.Path(exists=True, dir_okay=False,
                                                          path_type=Path),
              help="PEM file of the CA that signed the webhook server's certificate.")
@click.option("--crds", "crds_module", default=None, metavar="MODULE",
              help="Also write the CRDs of MODULE, with spec.conversion set for the kinds "
                   "the Conversion webhooks convert.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path))
def webhooks(target: str, name: str | None, namespace: str, service: str, selector: str | None,
             url: str | None, ca_bundle: Path | None, crds_module: str | None,
             output: Path | None) -> None:
    """The Mutating/ValidatingWebhookConfigurations (and the Service they call) for the
    webhooks in TARGET."""
    from setpoint.cli.targets import webhooks_of
    from setpoint.resources._webhooks import (
        ClientConfig,
        generate_webhook_configurations,
        set_conversion_webhooks,
        webhook_service,
    )

    found = webhooks_of(target)
    name = name or _default_name(target, target if ":" in target else None)
    if url is not None and not url.startswith("https://"):
        raise click.BadParameter("the API server calls webhooks over https://", param_hint="--url")
    bundle = ca_bundle.read_bytes() if ca_bundle is not None else None
    client = ClientConfig(namespace=namespace, service=service, url=url, ca_bundle=bundle)
    documents = generate_webhook_configurations(found, name=name, client=client)
    if crds_module is not None:
        from setpoint.resources import discover_resources, generate_crds

        documents += set_conversion_webhooks(generate_crds(discover_resources(crds_module)),
                                             found, client=client)
    if url is None:
        key, _, value = (selector or f"app.kubernetes.io/name={name}").partition("=")
        if not key or not value:
            raise click.BadParameter("write KEY=VALUE", param_hint="--selector")
        documents.append(webhook_service(service, namespace, {key: value}))
    _output(documents, output)


def _default_name(target: str, manager: str | None) -> str:
    if manager is not None:
        from setpoint.cli.targets import resolve

        settings = getattr(resolve(manager)[2], "settings", None)
        settings_name = getattr(settings, "name", None)
        if settings_name and settings_name != "setpoint":
            return _name(settings_name)
    return _name(split_target(target)[0].rpartition(".")[2] + "-operator")
