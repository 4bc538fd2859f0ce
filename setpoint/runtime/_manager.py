"""The manager: one client, one shared cache, many controllers, one lifecycle.

Start order, as controller-runtime's: the webhook server (when there are webhooks: it
serves on every replica, leader or not, and conversions must answer before any cache
lists a converted kind), the probe/metrics server, then the informers of every
kind any controller needs (each kind is listed and watched once, whoever needs it), then,
once they have synced, the controllers' workers, and with leader election only after this
process holds the lease (standby replicas keep a warm cache and report ready).

Controllers and runnables added after start run too, as controller-runtime's
``Manager.Add`` after ``Start`` (pkg/manager/runnable_group.go, ``runnableGroup.Add``): a
controller's new kinds get their informers on the shared cache at once (once the
permission grants, if any, have granted what it declares), and its workers run once those
have synced and this process leads; a runnable starts at once if the runnables already
run, else with them on election. Both are stopped with the rest.

A list or watch the server refuses (403: RBAC not granted yet) or fails is retried with
backoff by its informer, as client-go's reflector retries it, each refusal logged with the
rule that would end it; the manager gives up only when a controller's caches have not
synced within its ``cache_sync_timeout`` (its own, else the manager's), as
controller-runtime's controller does (see ``_startup``).

Graceful shutdown reverses it: stop taking requests and let in-flight reconciles finish
(``graceful_shutdown_timeout``), then flush events, release the lease, stop the informers
and the probe server, and last the webhook server. ``stop(graceful=False)`` is a crash:
everything is cancelled and the lease is left to expire (for fault-injection tests).

    async with manager.running():        # in tests
        ...
    await manager.run()                  # in a process: until SIGTERM/SIGINT
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from setpoint.client import Client, ClusterConfig, load_config
from setpoint.machinery.eventloop import quiet_closed_tls_writes
from setpoint.runtime._cache import Cache
from setpoint.runtime._controller import Controller, RunningController
from setpoint.runtime._events import EventRecorder
from setpoint.runtime._informer import Informer, drop_managed_fields
from setpoint.runtime._leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    default_identity,
)
from setpoint.runtime._logs import format_fields
from setpoint.runtime._metrics import Metrics
from setpoint.runtime._objects import KindKey, kind_key
from setpoint.runtime._permissions import manager_permissions
from setpoint.runtime._retries import error_text
from setpoint.runtime._settings import CacheScope, ManagerSettings
from setpoint.runtime._startup import CacheSyncTimeout, refusal_text, wait_for_caches
from setpoint.runtime._writer import Writer

if TYPE_CHECKING:  # imported when used: aiohttp's server costs a start without webhooks
    from setpoint.client import ApiError
    from setpoint.resources._rbac import Permissions
    from setpoint.runtime._probes import ProbeServer
    from setpoint.runtime._webhook.server import WebhookServer

log = logging.getLogger(__name__)


# a coroutine function: it becomes a task of its own (asyncio.create_task takes coroutines)
Runnable = Callable[["Manager"], Coroutine[Any, Any, None]]

PermissionsGrant = Callable[["Permissions"], Awaitable[None]]
"""Grants a manager's permissions (what its controllers declare) to its identity, as a
deployer applies the roles ``setpoint generate rbac`` writes: the testing kit's
``run_manager(..., rbac=True)`` is one."""

# what a step that only cancels or closes local things gets even past the deadline
_CANCELLATION = 1.0


async def _within(seconds: float, step: str, work: Awaitable[Any]) -> None:
    """Await one shutdown step for at most ``seconds``, then abandon (cancel) it."""
    try:
        await asyncio.wait_for(work, seconds)
    except TimeoutError:
        log.warning("manager_shutdown_step_abandoned step=%r after=%.1fs", step, seconds)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the stop itself is cancelled, not only this step
    except Exception as exc:
        log.warning("manager_shutdown_step_failed step=%r error=%r", step, exc)


class ManagerStoppingError(RuntimeError):
    """Something was added to a manager whose stop has begun (controller-runtime's
    ``errRunnableGroupStopped``: "can't accept new runnable as stop procedure is already
    engaged")."""


class Manager:
    """Runs controllers over one shared cache (see the module docstring)."""

    def __init__(
        self, controllers: Sequence[Controller[Any]] = (), *,
        settings: ManagerSettings | None = None, client: Client | None = None,
        config: ClusterConfig | None = None, webhooks: Sequence[Any] = (),
    ) -> None:
        self.settings = settings or ManagerSettings()
        self._stopping = False
        self._wired = False
        """Whether start has made the controllers added so far RunningControllers: one
        added from then on is wired (and started) by :meth:`add` itself."""
        self.controllers: list[Controller[Any]] = []
        for ctrl in controllers:
            self.add(ctrl)
        self.webhook_server: WebhookServer | None = None
        """The HTTPS server of the webhooks, once started (its ``url`` and ``ca_pem``)."""
        self.webhooks: list[Any] = []
        for hook in webhooks:
            self.add_webhook(hook)
        self.metrics = Metrics()
        self.cache = Cache()
        self.informers: dict[KindKey, Informer] = {}
        self._client = client
        self._own_client = client is None
        self._config = config
        self._writer: Writer | None = None
        self.recorder: EventRecorder | None = None
        self.elector: LeaderElector | None = None
        self.running_controllers: list[RunningController] = []
        self._wired_at_start: list[RunningController] = []
        self._informer_tasks: list[asyncio.Task[None]] = []
        self._elector_task: asyncio.Task[None] | None = None
        self._workers_task: asyncio.Task[None] | None = None
        self._probes: ProbeServer | None = None
        self._stop_task: asyncio.Task[None] | None = None
        self._started = False
        self._informers_running = False
        self._ready = False
        self._workers_started = False
        self._leading = asyncio.Event()
        """Set once the workers run (at start, or on election with leader election)."""
        self._added_starts: list[asyncio.Task[None]] = []
        """Controllers added after start, each waiting for its caches and leadership."""
        self._grants: list[PermissionsGrant] = []
        self._held_informers: list[KindKey] | None = None
        """While an added controller is wired with grants to await: its new informers,
        started once the grants have granted what it declares."""
        self._done = asyncio.Event()
        self.error: BaseException | None = None
        """Why the manager stopped on its own (lost leadership, or the caches of a controller
        added after start that did not sync), if it did."""
        self.runnables: list[Runnable] = []
        self._runnable_tasks: list[asyncio.Task[None]] = []
        # the probes' named checks, as controller-runtime's AddHealthzCheck/AddReadyzCheck
        self._healthz_checks: list[tuple[str, Callable[[], str | None]]] = [
            ("ping", lambda: None), ("shutdown", self._not_stopping)]
        self._readyz_checks: list[tuple[str, Callable[[], str | None]]] = [
            ("shutdown", self._not_stopping), ("webhook", self._webhook_ready),
            ("cache-sync", self._caches_synced)]

    def __repr__(self) -> str:
        names = [c.name for c in self.controllers]
        return f"Manager({self.settings.name!r}, controllers={names}, ready={self._ready})"

    # -- wiring ----------------------------------------------------------------------------

    def add(self, controller: Controller[Any]) -> None:
        """Add a controller. Added after :meth:`start`, it starts at once (its kinds not yet
        cached get their informers, a kind already cached replays its objects to it) and
        its workers run once its informers have synced and this manager leads; a refused
        list or watch is retried meanwhile, and caches that do not sync within its
        ``cache_sync_timeout`` (its own, else the manager's) stop the manager with that
        error (naming it, each kind and each refusal), as
        controller-runtime's manager stops on a controller's ``failed to wait for caches
        to sync``. Raises :class:`ManagerStoppingError` once :meth:`stop` has begun."""
        self._refuse_when_stopping(f"controller {controller.name!r}")
        if any(c.name == controller.name for c in self.controllers):
            raise ValueError(f"a controller named {controller.name!r} is already added")
        if not self._wired:
            self.controllers.append(controller)
            return
        self._held_informers = [] if self._grants else None
        try:
            running = self._run_controller(controller)  # a definition it refuses is not added
        finally:
            held, self._held_informers = self._held_informers or [], None
        self.controllers.append(controller)
        self.running_controllers.append(running)
        log.info("controller_added name=%s kinds=%d", controller.name,
                 len(controller.kinds()))
        self._added_starts.append(asyncio.create_task(
            self._start_added(running, held), name=f"start-controller-{controller.name}"))

    def add_permissions_grant(self, grant: PermissionsGrant) -> None:
        """Await ``grant(permissions)`` with this manager's permissions (its controllers'
        declarations, as ``setpoint generate rbac`` reads them) each time a controller is
        added after start, before that controller's new informers list: what grants the
        operator its roles in a test grants an added controller's too. A grant that fails
        is logged; the informers then retry what the server refuses."""
        self._grants.append(grant)

    def _refuse_when_stopping(self, what: str) -> None:
        if self._stopping:
            raise ManagerStoppingError(
                f"cannot add {what} to manager {self.settings.name!r}: it is stopping (or "
                "stopped); add it before stop(), or to a new Manager")

    def add_webhook(self, hook: Any) -> None:
        """Serve an admission ``Webhook`` or a ``Conversion`` (anything with
        ``endpoints(client)``); added after :meth:`start`, it is served at once."""
        if not callable(getattr(hook, "endpoints", None)):
            raise TypeError(f"{hook!r} is not a webhook (it has no endpoints())")
        self.webhooks.append(hook)
        if self.webhook_server is not None:
            self.webhook_server.register(hook)

    def add_healthz_check(self, name: str, check: Callable[[], str | None]) -> None:
        """Add a named liveness check to ``/healthz`` (controller-runtime's
        ``AddHealthzCheck``): ``check`` returns None when healthy, else why not (shown
        only on ``/healthz/<name>``). Names are unique per endpoint."""
        _add_check(self._healthz_checks, name, check)

    def add_readyz_check(self, name: str, check: Callable[[], str | None]) -> None:
        """Add a named readiness check to ``/readyz`` (``AddReadyzCheck``), as
        :meth:`add_healthz_check`."""
        _add_check(self._readyz_checks, name, check)

    def add_runnable(self, runnable: Runnable) -> None:
        """Run ``runnable(manager)`` alongside the controllers, once the caches have synced
        (and this manager leads): background loops such as heartbeats. It is cancelled at
        stop; it should return only when its work is done. Added once they run, it starts
        at once; raises :class:`ManagerStoppingError` once :meth:`stop` has begun."""
        self._refuse_when_stopping(f"runnable {runnable!r}")
        self.runnables.append(runnable)
        if self._workers_started:
            self._launch(runnable)

    @property
    def client(self) -> Client:
        """The API client (created at start from the settings' kubeconfig, or the
        environment, when none was given)."""
        if self._client is None:
            config = self._config or load_config(self.settings.kubeconfig,
                                                 context=self.settings.context)
            self._client = Client(config, field_manager=self.settings.name,
                                  qps=self.settings.client_qps,
                                  burst=self.settings.client_burst)
        return self._client

    @property
    def writer(self) -> Writer:
        """Cache-aware writes (what ``ctx.apply`` and friends use)."""
        if self._writer is None:
            self._writer = Writer(self.client, self.cache, self.informers, self.settings.name)
        return self._writer

    def informer_for(self, kind: object) -> Informer:
        """The shared informer of ``kind``, created on first request."""
        key = kind_key(kind)
        informer = self.informers.get(key)
        if informer is None:
            scope = self._scope_for(key)
            transform = scope.transform or (
                drop_managed_fields if self.settings.drop_managed_fields else None)
            informer = Informer(
                self.client, kind, store=self.cache.store_for(key, create=True),
                namespace=self.settings.namespace, label_selector=scope.label_selector,
                field_selector=scope.field_selector, transform=transform,
                on_refused=self._informer_refused,
            )
            self.informers[key] = informer
            if self._held_informers is not None:
                self._held_informers.append(key)
            elif self._informers_running:
                self._run_informer(key)
        return informer

    def _run_informer(self, key: KindKey) -> None:
        self._informer_tasks.append(asyncio.create_task(
            self.informers[key].run(), name=f"informer-{key}"))

    def _informer_refused(self, informer: Informer, verb: str, error: ApiError,
                          retry_in: float) -> None:
        """Log a refused list or watch once, with what would end it (client-go's
        ``DefaultWatchErrorHandler`` logs each failure: tools/cache/reflector.go)."""
        try:
            fix = refusal_text(informer.kind, informer, self.client.config,
                               lambda: manager_permissions(self))
        except Exception as exc:  # the log line must not stop the informer's retries
            fix = f"{error.code} {error.message} ({error_text(exc)})"
        log.warning("informer_refused kind=%s verb=%s code=%d %s retry_in=%.2f",
                    informer.kind, verb, error.code, format_fields({"error": fix}), retry_in)

    def _scope_for(self, key: KindKey) -> CacheScope:
        for ref, scope in self.settings.cache_scopes.items():
            if kind_key(ref) == key:
                return scope
        return CacheScope()

    @property
    def http_port(self) -> int | None:
        """The port of ``/healthz``, ``/readyz`` and ``/metrics`` once started."""
        return self._probes.port if self._probes is not None else None

    @property
    def webhook_port(self) -> int | None:
        """The HTTPS port of the webhooks once started (None without webhooks)."""
        return self.webhook_server.port if self.webhook_server is not None else None

    @property
    def ready(self) -> bool:
        """Caches synced and not shutting down (what ``/readyz`` answers)."""
        return self._ready and not self._stopping

    @property
    def leader(self) -> bool:
        """Whether this manager's controllers run (always, without leader election)."""
        return self.elector.leader if self.elector is not None else self._started

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start everything and return once the caches have synced (and, without leader
        election, the workers run). Lists and watches the server refuses are retried
        meanwhile (RBAC granted late lets it start); raises
        :class:`~setpoint.runtime._startup.CacheSyncTimeout` (a ``TimeoutError``; its
        ``StartupRefused`` form naming each refusal and its fix) when a controller's
        caches do not sync within its ``cache_sync_timeout`` (its own, else the
        manager's), naming that controller."""
        if self._started:
            raise RuntimeError("the manager is already started")
        self._started = True
        quiet_closed_tls_writes()  # a peer dropping a TLS connection is no traceback
        settings = self.settings
        client = self.client
        hook = client.transport.on_request
        if hook is None:
            client.transport.on_request = self.metrics.on_request
        else:
            def both(record: Any, first: Any = hook) -> None:
                first(record)
                self.metrics.on_request(record)
            client.transport.on_request = both
        if settings.record_events:
            self.recorder = EventRecorder(client, reporting_controller=settings.name)
            await self.recorder.start()
        self.running_controllers = [self._run_controller(c) for c in self.controllers]
        self._wired_at_start = list(self.running_controllers)
        self._wired = True
        if self.webhooks:
            await self._start_webhooks()
        if settings.http_port is not None:
            from setpoint.runtime._probes import ProbeServer

            self._probes = ProbeServer(self.metrics, healthz=self._healthz_checks,
                                       readyz=self._readyz_checks)
            await self._probes.start(settings.http_host, settings.http_port)
        # every informer asked for so far (the controllers' above included) runs once; those
        # asked for from now on start as they are created
        self._informers_running = True
        for key in self.informers:
            self._run_informer(key)
        try:
            await self._wait_for_start_caches()
        except BaseException:  # timed out, or cancelled by a signal: stop at once
            await self.stop(graceful=False)
            raise
        self._ready = True
        if settings.leader_election:
            self.elector = LeaderElector(client, LeaderElectionConfig(
                name=settings.leader_election_id or f"{settings.name}-leader",
                namespace=settings.leader_election_namespace or client.namespace,
                identity=settings.identity or default_identity(),
                lease_duration=settings.lease_duration,
                renew_deadline=settings.renew_deadline, retry_period=settings.retry_period,
                release_on_cancel=settings.leader_election_release_on_cancel,
            ), on_change=self._on_leader_change, record_event=self._leader_election_event)
            self.writer.leading = self.elector.check_leading
            # every write a leader makes is checked alike: the writer's, a reconcile's own
            # through ctx.client, and its events (the elector renews with the plain client)
            checked = client.with_write_check(self.elector.check_leading)
            self.writer.client = checked
            if self.recorder is not None:
                self.recorder.client = checked
            self.metrics.leader.labels(self.elector.config.name).set(0)
            self._elector_task = asyncio.create_task(self.elector.run(), name="leader-election")
            self._elector_task.add_done_callback(self._elector_done)
            self._workers_task = asyncio.create_task(self._start_when_elected())
        else:
            self._start_workers()
        log.info("manager_started name=%s controllers=%d kinds=%d", settings.name,
                 len(self.running_controllers), len(self.informers))

    async def _wait_for_start_caches(self) -> None:
        """Wait for each controller's caches within its own ``cache_sync_timeout``, as each
        controller-runtime controller's ``Start`` waits for its sources
        (``startEventSourcesAndQueueLocked``), and for the informers no controller needs
        (asked for with :meth:`informer_for`) within the manager's; the first that times
        out is raised (naming its controller), the others are no longer waited for."""
        waits: list[Coroutine[Any, Any, None]] = []
        claimed: set[KindKey] = set()
        for running in self._wired_at_start:
            kinds = _controller_kinds(running)
            claimed.update(kinds)
            waits.append(self._wait_for_controller_caches(
                running, {k: self.informers[k] for k in kinds}))
        rest = {k: i for k, i in self.informers.items() if k not in claimed}
        if rest:
            waits.append(wait_for_caches(rest, self.settings.cache_sync_timeout,
                                         self.client.config, lambda: manager_permissions(self)))
        tasks = [asyncio.ensure_future(w) for w in waits]
        if not tasks:
            return
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:  # in the controllers' order, when several ran out at once
                failure = task.exception() if task.done() and not task.cancelled() else None
                if failure is not None:
                    raise failure
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _wait_for_controller_caches(self, running: RunningController,
                                    informers: dict[KindKey, Informer],
                                    ) -> Coroutine[Any, Any, None]:
        own = running.definition.options.cache_sync_timeout
        timeout = own if own is not None else self.settings.cache_sync_timeout
        return wait_for_caches(informers, timeout, self.client.config,
                               lambda: manager_permissions(self), controller=running.name)

    def _leader_election_event(self, lease: dict[str, Any], message: str) -> None:
        """client-go's LeaseLock.RecordEvent: a Normal ``LeaderElection`` event about the
        Lease, in its namespace (what the leader election Role's events grant is for)."""
        if self.recorder is not None:
            regarding = {**lease, "apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
            self.recorder.normal(regarding, "LeaderElection", message)

    async def _start_webhooks(self) -> None:
        settings = self.settings
        from setpoint.runtime._webhook.server import WebhookServer

        self.webhook_server = WebhookServer(
            host=settings.webhook_host, port=settings.webhook_port,
            cert_dir=settings.webhook_cert_dir, generate_certs=settings.webhook_generate_certs,
            client=self.client, metrics=self.metrics)
        try:
            for hook in self.webhooks:
                self.webhook_server.register(hook)
            await self.webhook_server.start()
        except BaseException:
            await self.stop(graceful=False)
            raise

    def _run_controller(self, controller: Controller[Any]) -> RunningController:
        return RunningController(
            controller, cache=self.cache, writer=self.writer, recorder=self.recorder,
            metrics=self.metrics, informer_for=self.informer_for,
            default_workers=self.settings.max_concurrent_reconciles)

    def _start_workers(self) -> None:
        # the controllers added after start are not among these: each starts itself
        # (_start_added) once its own caches have synced
        for rc in self._wired_at_start:
            rc.start()
        self._workers_started = True
        self._leading.set()
        for runnable in self.runnables:
            self._launch(runnable)

    def _launch(self, runnable: Runnable) -> None:
        task = asyncio.create_task(runnable(self), name=f"runnable-{runnable!r}")
        task.add_done_callback(self._runnable_done)
        self._runnable_tasks.append(task)

    async def _start_added(self, running: RunningController, held: list[KindKey]) -> None:
        """Start a controller added after start: grant what it declares (the permission
        grants, if any), start its ``held`` informers (the kinds it brought to the cache),
        wait for its informers to sync, as controller-runtime's informer cache waits for a
        new informer's sync (pkg/cache/internal/informers.go ``Get``) and its controller
        for its sources' (``startEventSourcesAndQueueLocked``, within ``CacheSyncTimeout``;
        refusals are retried meanwhile), then for leadership (pkg/manager/runnable_group.go:
        an added runnable joins the leader election group, started on election), then run
        its workers."""
        if self._grants:
            await self._grant_permissions(running.name)
        if self._stopping:
            return
        for key in held:
            self._run_informer(key)
        unsynced = {k: self.informers[k] for k in _controller_kinds(running)
                    if not self.informers[k].has_synced}
        try:
            await self._wait_for_controller_caches(running, unsynced)
        except CacheSyncTimeout as exc:
            # the controller's Start returns this error to the manager's errChan, and
            # controllerManager.Start returns it: the manager stops (pkg/manager/internal.go)
            log.error("manager_stopping_controller_not_started controller=%s %s",
                      running.name, format_fields({"error": str(exc)}))
            if not self._stopping:
                self.error = exc
                self._stop_task = asyncio.get_running_loop().create_task(self.stop())
            return
        await self._leading.wait()
        if not self._stopping:
            running.start()
            log.info("controller_started name=%s workers=%d", running.name, running.workers)

    async def _grant_permissions(self, controller: str) -> None:
        permissions = manager_permissions(self)
        for grant in self._grants:
            try:
                await grant(permissions)
            except Exception as exc:
                log.error("manager_permissions_grant_failed controller=%s %s", controller,
                          format_fields({"error": error_text(exc)}))

    def _runnable_done(self, task: asyncio.Task[None]) -> None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            log.error("runnable_failed name=%s %s", task.get_name(),
                      format_fields({"error": error_text(failure)}))

    async def _start_when_elected(self) -> None:
        assert self.elector is not None
        await self.elector.elected.wait()
        if not self._stopping:
            self._start_workers()

    def _on_leader_change(self, leader: bool) -> None:
        if self.elector is not None:
            self.metrics.leader.labels(self.elector.config.name).set(1 if leader else 0)

    def _elector_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._stopping:
            return
        self.error = task.exception()
        log.error("manager_stopping_leadership_lost error=%r", self.error)
        self._stop_task = asyncio.get_running_loop().create_task(self.stop(graceful=False))

    async def stop(self, *, graceful: bool = True) -> None:
        """Stop: finish in-flight reconciles, then flush events, release the lease, stop
        informers and the server, all within ``graceful_shutdown_timeout`` (the pod's
        grace period should be at least that): each step gets what the earlier ones left,
        and a step that does not finish in time (an API that no longer answers) is
        abandoned. With ``graceful=False``, cancel everything at once and keep the lease
        (a crash)."""
        if self._stopping:
            await self._done.wait()
            return
        self._stopping = True
        timeout = self.settings.graceful_shutdown_timeout if graceful else 0.0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def left() -> float:
            return max(deadline - loop.time(), 0.0)

        try:
            if self._workers_task is not None:
                self._workers_task.cancel()
            current = asyncio.current_task()
            added = [t for t in self._added_starts if t is not current]
            for task in added:
                task.cancel()
            await asyncio.gather(*added, return_exceptions=True)
            for task in self._runnable_tasks:
                task.cancel()
            await asyncio.gather(*self._runnable_tasks, return_exceptions=True)
            self._runnable_tasks = []
            results = await asyncio.gather(*(rc.stop(timeout)
                                             for rc in self.running_controllers))
            if not all(results):
                log.warning("manager_shutdown_timeout in_flight_cancelled=true")
            if self.recorder is not None:  # a leader's events are written while it leads
                await _within(left() + _CANCELLATION, "flush events",
                              self.recorder.stop(timeout=min(left(), 5.0)))
            if self._elector_task is not None:
                if self.elector is not None and not graceful:
                    self.elector.config.release_on_cancel = False
                self._elector_task.cancel()  # releases the lease, if there is time left
                await _within(left() + _CANCELLATION, "release the lease",
                              asyncio.gather(self._elector_task, return_exceptions=True))
            self._informers_running = False
            for task in self._informer_tasks:
                task.cancel()
            await asyncio.gather(*self._informer_tasks, return_exceptions=True)
            self._informer_tasks = []
            if self._probes is not None:
                await _within(left() + _CANCELLATION, "stop the probe server",
                              self._probes.stop())
            if self.webhook_server is not None:
                await _within(left() + _CANCELLATION, "stop the webhook server",
                              self.webhook_server.stop())
            if self._own_client and self._client is not None:
                await _within(left() + _CANCELLATION, "close the client",
                              self._client.close())
        finally:
            self._ready = False
            self._done.set()
            log.info("manager_stopped name=%s graceful=%s", self.settings.name, graceful)

    async def wait(self) -> None:
        """Wait until the manager has stopped (by :meth:`stop` or lost leadership)."""
        await self._done.wait()

    async def wait_for_controllers(self) -> bool:
        """Wait until the workers of every controller added so far run, those added to the
        running manager too (their caches synced, this manager leading): True; or until
        the manager has stopped first (``error`` says why, if on its own): False. What a
        program that adds controllers to a running manager waits on before it says they
        run."""
        if not self._wired:
            raise RuntimeError("the manager is not started: wait for its controllers after "
                               "start()")
        running = asyncio.ensure_future(asyncio.gather(
            *(rc.started.wait() for rc in self.running_controllers)))
        stopped = asyncio.ensure_future(self._done.wait())
        waiters: set[asyncio.Future[Any]] = {running, stopped}
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (running, stopped):
                waiter.cancel()
            await asyncio.gather(running, stopped, return_exceptions=True)
        return running in done

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Manager]:
        """``async with manager.running():`` started inside, stopped gracefully after."""
        await self.start()
        try:
            yield self
        finally:
            await self.stop()

    async def run(self) -> None:
        """Run until SIGTERM or SIGINT (then stop gracefully) or until leadership is lost
        (then raise :class:`~setpoint.runtime._leaderelection.LeaderElectionLost`)."""
        loop = asyncio.get_running_loop()
        stop_requested = asyncio.Event()
        installed = []
        collector = _tune_collector(self.settings.collector_thresholds)
        waiter = asyncio.create_task(stop_requested.wait())
        done_waiter = asyncio.create_task(self._done.wait())
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop_requested.set)
                installed.append(sig)
        try:
            starting = asyncio.create_task(self.start())
            await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not starting.done():
                # a signal while the caches sync (an API that does not answer): stop now
                starting.cancel()
                await asyncio.gather(starting, return_exceptions=True)
            else:
                await starting  # raises what start raised (caches that never synced)
                await asyncio.wait({waiter, done_waiter},
                                   return_when=asyncio.FIRST_COMPLETED)
            await self.stop()
        finally:
            waiter.cancel()
            done_waiter.cancel()
            for sig in installed:
                loop.remove_signal_handler(sig)
            if collector is not None:
                gc.set_threshold(*collector)
        if self.error is not None:
            raise self.error

    # -- probes ----------------------------------------------------------------------------

    def _not_stopping(self) -> str | None:
        return "shutting down" if self._stopping else None

    def _webhook_ready(self) -> str | None:
        return self.webhook_server.check() if self.webhook_server is not None else None

    def _caches_synced(self) -> str | None:
        if self._ready:
            return None
        unsynced = [str(k) for k, i in self.informers.items() if not i.has_synced]
        return "caches not synced: " + ", ".join(unsynced)


def _controller_kinds(running: RunningController) -> list[KindKey]:
    """The kinds a controller needs cached, each once, in the order it declares them."""
    return list(dict.fromkeys(kind_key(k) for k in running.definition.kinds()))


def _add_check(checks: list[tuple[str, Callable[[], str | None]]], name: str,
               check: Callable[[], str | None]) -> None:
    if not name or "/" in name:
        raise ValueError(f"a check needs a name without '/' (it is a path): {name!r}")
    if any(existing == name for existing, _ in checks):
        raise ValueError(f"there is already a check named {name!r}")
    checks.append((name, check))


_PYTHONS_THRESHOLDS = (700, 10, 10)


def _tune_collector(thresholds: tuple[int, int, int] | None) -> tuple[int, ...] | None:
    """Set the collector's ``thresholds`` over Python's own; returns those to put back
    (None: nothing was changed, as when the program chose its own)."""
    before = gc.get_threshold()
    if thresholds is None or before != _PYTHONS_THRESHOLDS:
        return None
    gc.set_threshold(*thresholds)
    return before
