"""Running an operator in the background of a test: start, crash, restart, stop.

    runner = await run_manager(manager)      # the plugin's fixture builds one of these
    ...
    await runner.crash()                      # stop(graceful=False): in-flight work is lost
    await runner.restart()                    # a new process, as after a pod restart

A :class:`~setpoint.runtime.Manager` runs once; a restart is a new manager built from the
same controllers and settings (controllers are definitions, reusable by any number of
managers), with an empty cache, as a restarted operator pod has. The runner always builds
its managers itself, pointed at the test's cluster (or its fault proxy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from setpoint.client import Client, ClusterConfig
from setpoint.resources import Permissions
from setpoint.runtime import Controller, Manager, ManagerSettings
from setpoint.runtime._webhook.registration import Registration, register, unregister
from setpoint.testing.serviceaccounts import grant as grant_permissions
from setpoint.testing.serviceaccounts import remove as remove_service_account
from setpoint.testing.serviceaccounts import run_as_service_account


class OperatorRunner:
    """One operator under test (see the module docstring).

    ``manager`` is the manager running now (or the last one, once stopped); ``starts``
    counts how many have been started.
    """

    def __init__(self, controllers: Sequence[Controller[Any]], settings: ManagerSettings,
                 config: Callable[[], ClusterConfig], *, webhooks: Sequence[Any] = (),
                 register_webhooks: bool = True, rbac: bool = False) -> None:
        self.controllers = list(controllers)
        self.settings = settings
        self.webhooks = list(webhooks)
        self.register_webhooks = register_webhooks
        self.rbac = rbac
        self._config = config
        self._registration: Registration | None = None
        self._rbac_objects: list[dict[str, Any]] = []
        self.manager: Manager | None = None
        self.starts = 0

    @classmethod
    def of(cls, target: Manager | Controller[Any] | Sequence[Controller[Any]],
           config: Callable[[], ClusterConfig], *, namespace: str | None = None,
           register_webhooks: bool = True, rbac: bool = False,
           **settings: Any) -> OperatorRunner:
        """A runner for a manager's controllers, webhooks and settings, or for controllers
        with default settings; ``settings`` override fields of :class:`ManagerSettings`.
        ``namespace`` (when given) limits the operator to the test's namespace. The
        webhooks serve on a free loopback port with a certificate of their own, and unless
        ``register_webhooks`` is False the cluster is pointed at them while they run.
        With ``rbac`` the operator runs as its own service account, bound to exactly the
        roles ``setpoint generate rbac`` writes for it, as it would in a cluster; a
        controller added to the running manager is granted its declarations too, before
        its informers list."""
        webhooks: list[Any] = []
        if isinstance(target, Manager):
            controllers, base, webhooks = target.controllers, target.settings, target.webhooks
        elif isinstance(target, Controller):
            controllers, base = [target], ManagerSettings()
        else:
            controllers, base = list(target), ManagerSettings()
        overrides: dict[str, Any] = {"graceful_shutdown_timeout": min(
            base.graceful_shutdown_timeout, 10.0), "kubeconfig": None}
        if base.http_port is not None:
            overrides["http_port"] = 0  # never a fixed port in tests
        if webhooks:
            overrides.update(webhook_host="127.0.0.1", webhook_port=0,
                             webhook_generate_certs=True)
        if namespace is not None:
            overrides["namespace"] = namespace
        overrides.update(settings)
        return cls(controllers, dataclasses.replace(base, **overrides), config,
                   webhooks=webhooks, register_webhooks=register_webhooks, rbac=rbac)

    def __repr__(self) -> str:
        names = [c.name for c in self.controllers]
        return f"OperatorRunner({names}, running={self.running}, starts={self.starts})"

    @property
    def running(self) -> bool:
        return self.manager is not None and self.manager.ready

    async def start(self) -> Manager:
        """Start a new manager and return it once its caches have synced."""
        if self.running:
            raise RuntimeError("the operator is already running")
        settings = dataclasses.replace(self.settings)
        config = self._config()
        if self.rbac:
            config, written = await run_as_service_account(
                config, self.controllers, settings)
            self._remember(written)
        manager = Manager(self.controllers, settings=settings, config=config,
                          webhooks=self.webhooks)
        if self.rbac:
            manager.add_permissions_grant(self._grant)
        self.manager = manager
        await manager.start()
        self.starts += 1
        if self.webhooks and self.register_webhooks:
            # the administrator registers them: the operator's own RBAC need not allow it
            async with Client(self._config()) as admin:
                self._registration = await register(manager.webhook_server, manager.webhooks,
                                                     self.settings.name, admin)
        return manager

    async def _grant(self, permissions: Permissions) -> None:
        """Grant a running manager's grown permissions (a controller was added to it)."""
        self._remember(await grant_permissions(self._config(), permissions,
                                               self.settings.name))

    def _remember(self, written: list[dict[str, Any]]) -> None:
        """Keep what was written for removal at stop (once each, whatever a crash left)."""
        known = {_identity(obj) for obj in self._rbac_objects}
        self._rbac_objects += [obj for obj in written if _identity(obj) not in known]

    async def stop(self) -> None:
        """Stop gracefully: in-flight reconciles finish, the lease is released, and the
        webhook configurations go first (a crash leaves them, pointing at nothing, as a
        crashed operator's do: writes they cover then fail until it is back)."""
        if self.manager is None:
            return
        if self._registration is not None and self.manager.ready:
            async with Client(self._config()) as admin:
                await unregister(admin, self._registration)
            self._registration = None
        await self.manager.stop()
        if self._rbac_objects:
            await remove_service_account(self._config(), self._rbac_objects)
            self._rbac_objects = []

    async def crash(self) -> None:
        """Stop as a killed process would: everything cancelled at once, in-flight
        reconciles cut wherever they were, the lease kept until it expires."""
        if self.manager is not None:
            await self.manager.stop(graceful=False)

    async def restart(self, *, crash: bool = False) -> Manager:
        """Stop (gracefully, or as a crash) and start a fresh manager."""
        await (self.crash() if crash else self.stop())
        return await self.start()


def _identity(obj: dict[str, Any]) -> tuple[str, str, str | None, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]
