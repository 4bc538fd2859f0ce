"""Controllers: the builder that wires one, and the workers that run it.

    widgets = (Controller.for_(Widget)
               .owns(ConfigMap)
               .watches(Pod, map_to_owner_by_label="app.kubernetes.io/instance"))

    @widgets.reconcile
    async def reconcile(ctx: Context[Widget], widget: Widget) -> Result: ...

A :class:`Controller` is only a definition (module-level, reusable by several managers, as
in tests with two replicas); a manager turns it into a :class:`RunningController` with its
own queue and workers. Events of the primary kind enqueue the object; events of owned kinds
enqueue their controller owner; watched kinds enqueue what their map function returns.
Workers take requests from the queue (one worker per request at a time) and call the
reconciler: an exception retries it with per-item backoff, :class:`TerminalError` does not
(its backoff kept, as controller-runtime keeps it),
``Result(requeue_after=...)`` comes back after that delay.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from setpoint.client import Kind, ResourceInfo
from setpoint.machinery.objects import Obj
from setpoint.resources._rbac import Permissions, PolicyRule
from setpoint.runtime._cache import Cache
from setpoint.runtime._context import Context
from setpoint.runtime._events import EventRecorder
from setpoint.runtime._handlers import (
    EnqueueForObject,
    EnqueueForOwner,
    EnqueueMapped,
    Handler,
    MapFunc,
    map_to_owner_by_label,
)
from setpoint.runtime._informer import Informer
from setpoint.runtime._logs import BoundLogger
from setpoint.runtime._metrics import Metrics
from setpoint.runtime._objects import (
    KindKey,
    clone,
    decode,
    key_of,
    kind_key,
    object_key,
)
from setpoint.runtime._ownwrites import Origin
from setpoint.runtime._predicates import Predicate
from setpoint.runtime._ratelimit import RateLimiter
from setpoint.runtime._reconcile import (
    Reconciler,
    ReconcileResultError,
    Request,
    Result,
    TerminalError,
)
from setpoint.runtime._retries import FailureLog
from setpoint.runtime._source import EventSource
from setpoint.runtime._workqueue import ShutDown, WorkQueue
from setpoint.runtime._writer import Writer

log = logging.getLogger("setpoint.runtime._controller")

T = TypeVar("T")

ReconcileFunc = Callable[[Context[T], T], Awaitable[Result | None]]

@dataclass(frozen=True)
class WatchSpec:
    """One source of requests: a kind, how its events map to requests, and filters."""

    kind: Any
    handler: Handler
    predicates: tuple[Predicate, ...] = ()
    role: str = "watches"
    """``for``, ``owns`` or ``watches`` (read by RBAC generation)."""


@dataclass
class Options:
    """Per-controller settings; None means "the manager's default"."""

    max_concurrent_reconciles: int | None = None
    rate_limiter: Callable[[], RateLimiter] | None = None
    reconcile_timeout: float | None = None
    cache_sync_timeout: float | None = None
    """Seconds its start waits for its kinds' caches to sync (controller-runtime's
    ``controller.Options.CacheSyncTimeout``); None: the manager's ``cache_sync_timeout``."""


class ReconcileSignatureError(TypeError):
    """A reconcile function the controller cannot call as ``await func(ctx, obj)``."""


class NoReconcilerError(ValueError):
    """A controller started without a reconcile function or Reconciler."""


def check_reconcile_signature(func: Callable[..., Any]) -> None:
    """Refuse, where it is declared, a reconcile function that is not ``async`` or does not
    take ``(ctx, obj)``: otherwise the mistake only shows at the first reconcile, as a
    retried error in the log (a sync function's None cannot be awaited)."""
    code = getattr(func, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    name = getattr(func, "__qualname__", repr(func))
    if not (inspect.iscoroutinefunction(func)
            or inspect.iscoroutinefunction(type(func).__call__)):
        raise ReconcileSignatureError(
            f"reconcile function {name}{where} is not async: declare it `async def "
            f"{name}(ctx, obj)` (the controller awaits it)")
    try:
        signature = inspect.signature(func)
        signature.bind(None, None)
    except (TypeError, ValueError):
        raise ReconcileSignatureError(
            f"reconcile function {name}{_signature_text(func)}{where} cannot be called with "
            f"(ctx, obj): declare it `async def {name}(ctx, obj)`") from None


def _checked_result(outcome: object, reconcile: object) -> Result:
    """``outcome`` as the Result it must be: ``None`` is ``Result()``; anything else (a
    bool, a dict, a number of seconds, as other frameworks take) is refused naming the
    function and the fix, inside the reconcile's error handling, instead of failing past it
    and ending the worker silently."""
    if outcome is None:
        return Result()
    if isinstance(outcome, Result):
        return outcome
    code = getattr(reconcile, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    name = getattr(reconcile, "__qualname__", type(reconcile).__qualname__)
    raise ReconcileResultError(
        f"reconcile function {name}{where} returned {outcome!r} "
        f"({type(outcome).__name__}): return None or a Result "
        f"(Result(requeue_after=SECONDS) to reconcile again later; raise to retry)")


class ObjectDoesNotFitError(TerminalError):
    """The reconciled object is not valid for its typed class (a field the class requires
    and the object lacks, a value of another type): the class and the CRD the server holds
    disagree. Retrying cannot help; the object's next change, or the operator restarted
    with a class that fits, reconciles it again."""


def _decode_reconciled(cls: type[Any], raw: Obj) -> Any:
    try:
        return decode(cls, clone(raw))
    except ValueError as exc:  # pydantic's ValidationError, without importing pydantic
        errors = getattr(exc, "errors", None)
        if errors is None:
            raise
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '<object>'}: {error['msg']}"
            for error in errors())
        module = cls.__module__
        raise ObjectDoesNotFitError(
            f"{cls.__name__} {key_of(raw)}"
            f" does not fit class {module}.{cls.__qualname__}: {problems}: the CRD on the "
            f"server is not the class's; apply what `setpoint generate crds {module}` "
            f"writes, and give fields added since a default") from None


def _signature_text(func: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return ""

@dataclass
class Controller(Generic[T]):
    """A controller definition: what it is for, what it owns and watches, how it
    reconciles. Build it with :meth:`for_` and the chained methods."""

    for_kind: Any
    name: str = ""
    watch_specs: list[WatchSpec] = field(default_factory=list)
    read_kinds: list[Any] = field(default_factory=list)
    options: Options = field(default_factory=Options)
    reconcile_func: ReconcileFunc[T] | None = None
    reconciler_obj: Reconciler | None = None
    permissions: Permissions | None = None
    """Rules added with :meth:`permits` to those the declarations imply."""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = kind_key(self.for_kind).kind.lower()

    def __repr__(self) -> str:
        return f"Controller({self.name!r}, for={kind_key(self.for_kind)})"

    # -- the builder -----------------------------------------------------------------------

    # a typed class reconciles its instances; a Kind (or ResourceInfo, KindKey) the dicts
    @overload
    @classmethod
    def for_(cls, kind: type[T], *, predicates: Sequence[Predicate] = (),
             name: str | None = None) -> Controller[T]: ...
    @overload
    @classmethod
    def for_(cls, kind: Kind | ResourceInfo | KindKey, *, predicates: Sequence[Predicate] = (),
             name: str | None = None) -> Controller[Obj]: ...
    @classmethod
    def for_(cls, kind: Any, *, predicates: Sequence[Predicate] = (),
             name: str | None = None) -> Controller[Any]:
        """A controller that reconciles objects of ``kind`` (a typed class or ``Kind``)."""
        ctrl: Controller[Any] = cls(for_kind=kind, name=name or "")
        ctrl.watch_specs.append(WatchSpec(kind, EnqueueForObject(), tuple(predicates), "for"))
        return ctrl

    def owns(self, *kinds: Any, predicates: Sequence[Predicate] = (),
             only_controller: bool = True) -> Controller[T]:
        """Reconcile the owner when an object of these kinds changes (found through the
        controller ``ownerReference``)."""
        for kind in kinds:
            kind_key(kind)  # a kind it cannot tell fails here, at the line that names it
            handler = EnqueueForOwner(self.for_kind, only_controller=only_controller)
            self.watch_specs.append(WatchSpec(kind, handler, tuple(predicates), "owns"))
        return self

    def watches(self, kind: Any, *, map_func: MapFunc | None = None,
                map_to_owner_by_label: str | None = None, handler: Handler | None = None,
                predicates: Sequence[Predicate] = ()) -> Controller[T]:
        """Reconcile what ``map_func`` (or the object named by a label, or ``handler``)
        says when an object of ``kind`` changes."""
        kind_key(kind)
        chosen = [h for h in (map_func, map_to_owner_by_label, handler) if h is not None]
        if len(chosen) != 1:
            raise ValueError("watches() needs exactly one of map_func, "
                             "map_to_owner_by_label or handler")
        if handler is None:
            handler = EnqueueMapped(map_func if map_func is not None else
                                    map_to_owner_by_label_func(map_to_owner_by_label or ""))
        self.watch_specs.append(WatchSpec(kind, handler, tuple(predicates), "watches"))
        return self

    def reads(self, *kinds: Any) -> Controller[T]:
        """Cache these kinds for reads without reconciling on their changes."""
        self.read_kinds.extend(kinds)
        return self

    def permits(self, *rules: PolicyRule, permissions: Permissions | None = None,
                ) -> Controller[T]:
        """Allow more than the declarations imply (``generate rbac``, ``rbac=True``):
        PolicyRules as dicts (``{"apiGroups": [""], "resources": ["secrets"], "verbs":
        ["list"]}``) and/or :class:`Permissions`, for calls made with ``ctx.client``."""
        added = Permissions(rules=tuple(rules)) | (permissions or Permissions())
        self.permissions = added if self.permissions is None else self.permissions | added
        return self

    def with_options(self, *, max_concurrent_reconciles: int | None = None,
                     rate_limiter: Callable[[], RateLimiter] | None = None,
                     reconcile_timeout: float | None = None,
                     cache_sync_timeout: float | None = None) -> Controller[T]:
        """Set workers, the retry rate limiter (a factory), a timeout per reconcile, or
        how long its start waits for its caches to sync before it fails the manager
        (``cache_sync_timeout`` seconds: controller-runtime's ``CacheSyncTimeout``; the
        manager's, two minutes by default, otherwise)."""
        if cache_sync_timeout is not None:
            if not cache_sync_timeout > 0:  # NaN too
                raise ValueError(f"cache_sync_timeout must be a number of seconds above 0, "
                                 f"not {cache_sync_timeout!r}")
            self.options.cache_sync_timeout = cache_sync_timeout
        if max_concurrent_reconciles is not None:
            if max_concurrent_reconciles < 1:
                raise ValueError("max_concurrent_reconciles must be at least 1")
            self.options.max_concurrent_reconciles = max_concurrent_reconciles
        if rate_limiter is not None:
            self.options.rate_limiter = rate_limiter
        if reconcile_timeout is not None:
            self.options.reconcile_timeout = reconcile_timeout
        return self

    def reconcile(self, func: ReconcileFunc[T]) -> ReconcileFunc[T]:
        """Decorator: ``async def reconcile(ctx, obj) -> Result | None``. It is called with
        the object from the cache; not when the object is gone (use a finalizer to act on
        deletion)."""
        if self.reconciler_obj is not None or self.reconcile_func is not None:
            raise ValueError(f"controller {self.name!r} already has a reconciler")
        check_reconcile_signature(func)
        self.reconcile_func = func
        return func

    def reconciler(self, reconciler: Reconciler) -> Controller[T]:
        """Use a low-level :class:`Reconciler` (``reconcile(request) -> Result``)."""
        if self.reconciler_obj is not None or self.reconcile_func is not None:
            raise ValueError(f"controller {self.name!r} already has a reconciler")
        self.reconciler_obj = reconciler
        return self

    def kinds(self) -> list[Any]:
        """Every kind the controller needs cached."""
        return [spec.kind for spec in self.watch_specs] + list(self.read_kinds)


def map_to_owner_by_label_func(label: str) -> MapFunc:
    if not label:
        raise ValueError("map_to_owner_by_label needs a label key")
    return map_to_owner_by_label(label)


class RunningController:
    """A controller running in one manager: its queue, bindings and workers."""

    def __init__(self, definition: Controller[Any], *, cache: Cache, writer: Writer,
                 recorder: EventRecorder | None, metrics: Metrics,
                 informer_for: Callable[[object], Informer], default_workers: int = 1,
                 ) -> None:
        """Wire ``definition`` to what it runs on: the shared ``cache`` it reads, the
        ``writer`` its reconciles write through, the event ``recorder``, ``metrics``, and
        ``informer_for``, the shared informer of a kind (each watched kind's informer
        queues this controller's requests). ``default_workers`` is used when the
        definition does not set ``max_concurrent_reconciles``."""
        if definition.reconcile_func is None and definition.reconciler_obj is None:
            raise NoReconcilerError(
                f"controller {definition.name!r} has no reconcile function: decorate "
                "`async def reconcile(ctx, obj)` with @<controller>.reconcile, or give it "
                "a Reconciler with .reconciler(...)")
        self.definition = definition
        self.name = definition.name
        self.cache = cache
        self.writer = writer
        self.recorder = recorder
        opts = definition.options
        self.workers = opts.max_concurrent_reconciles or default_workers
        limiter = opts.rate_limiter() if opts.rate_limiter is not None else None
        self.queue: WorkQueue[Request] = WorkQueue(
            self.name, rate_limiter=limiter, metrics=metrics.queue(self.name))
        self.for_key: KindKey = kind_key(definition.for_kind)
        self._tasks: list[asyncio.Task[None]] = []
        self.started = asyncio.Event()
        """Set once its workers run (its caches synced, its manager leading)."""
        self._log = BoundLogger(log, controller=self.name)
        self._failures = FailureLog()
        self._timeout = opts.reconcile_timeout
        self._m_total = {r: metrics.reconcile_total.labels(self.name, r)
                         for r in ("success", "error", "requeue", "requeue_after")}
        self._m_errors = metrics.reconcile_errors.labels(self.name)
        self._m_terminal = metrics.terminal_errors.labels(self.name)
        self._m_time = metrics.reconcile_time.labels(self.name)
        self._m_active = metrics.active_workers.labels(self.name)
        self._m_panics = metrics.reconcile_panics.labels(self.name)
        metrics.track_unfinished_work(self.name, self.queue.unfinished_work)
        metrics.max_concurrent.labels(self.name).set(self.workers)
        for spec in definition.watch_specs:
            informer_for(spec.kind).add_handler(EventSource(
                # the queue's own add (what enqueue does), a call fewer per event
                spec.handler, spec.predicates, self.queue.add, controller=self.name))
        for kind in definition.read_kinds:
            informer_for(kind)

    def __repr__(self) -> str:
        return f"RunningController({self.name!r}, workers={self.workers}, queue={self.queue!r})"

    def enqueue(self, request: Request) -> None:
        """Queue a request (the echo of a reconcile's own write is filtered before, by
        :meth:`EventSource.on_own_write`)."""
        self.queue.add(request)

    def start(self) -> None:
        """Start the workers (the caches must have synced)."""
        for i in range(self.workers):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"{self.name}-{i}"))
        self.started.set()

    async def stop(self, timeout: float) -> bool:
        """Stop taking requests and let in-flight reconciles finish within ``timeout``
        (then they are cancelled); returns whether they all finished."""
        drained = await self.queue.shutdown_with_drain(timeout)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        return drained

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except ShutDown:
                return
            self._m_active.inc()
            # _origin's reading, in the loop: once per reconcile
            cached = self.cache.store_for(self.for_key).get(
                f"{request.namespace}/{request.name}" if request.namespace else request.name)
            generation = (cached.get("metadata") or {}).get("generation") \
                if cached is not None else None
            origin = Origin(self.name, request, self.for_key,
                            generation if isinstance(generation, int) else None)
            try:
                with self.writer.reconciling(origin):
                    await self._process(request, origin)
            finally:
                self._m_active.dec()
                self.queue.done(request)

    async def _process(self, request: Request, origin: Origin) -> None:
        # 12 hex digits, as uuid4().hex[:12] gave, without building a UUID per reconcile
        reconcile_id = "%012x" % random.getrandbits(48)  # noqa: UP031 (a third cheaper)
        # controller-runtime's field names: controller, namespace, name, reconcileID
        logger = self._log.bind(namespace=request.namespace or None, name=request.name,
                                reconcileID=reconcile_id)
        started = time.perf_counter()
        # asked once: the two lines below are DEBUG, as controller-runtime's per-reconcile
        # lines, and their fields cost more than the question
        debug = log.isEnabledFor(logging.DEBUG)
        if debug:
            logger.debug("reconciling")
        try:
            call = self._reconcile(request, origin, logger)
            result = await (asyncio.wait_for(call, self._timeout) if self._timeout else call)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except TerminalError as exc:
            self._m_errors.inc()
            self._m_terminal.inc()
            self._m_total["error"].inc()
            # not retried, yet not forgotten: controller-runtime's reconcileHandler calls
            # Forget only on success and before a RequeueAfter, so the failures before a
            # terminal error still count towards the backoff of the next one
            self._failures.forget(request)
            logger.error("reconcile_failed_terminal", error=str(exc))
            return
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Python's nearest to a Go panic (SystemExit from a library, a custom
                # BaseException): counted and retried as an error, as controller-runtime
                # recovers a reconciler's panic (pkg/internal/controller/controller.go,
                # ReconcilePanics) instead of losing the worker
                self._m_panics.inc()
            self._m_errors.inc()
            self._m_total["error"].inc()
            retry_in = self.queue.add_rate_limited(request)
            self._failures.report(logger, request, exc, retry_in,
                                  self.queue.num_requeues(request))
            return
        finally:
            self._m_time.observe(time.perf_counter() - started)
        if result.requeue_after:
            self.queue.forget(request)
            self.queue.add_after(request, result.requeue_after)
            self._m_total["requeue_after"].inc()
        elif result.requeue:
            self.queue.add_rate_limited(request)
            self._m_total["requeue"].inc()
        else:
            self.queue.forget(request)
            self._m_total["success"].inc()
        self._failures.forget(request)
        if debug:
            logger.debug("reconciled", seconds=round(time.perf_counter() - started, 6))

    async def _reconcile(self, request: Request, origin: Origin,
                         logger: BoundLogger) -> Result:
        definition = self.definition
        if definition.reconciler_obj is not None:
            result = await definition.reconciler_obj.reconcile(request)
            return _checked_result(result, definition.reconciler_obj.reconcile)
        assert definition.reconcile_func is not None
        store = self.cache.store_for(self.for_key)
        raw = store.get(object_key(request.namespace or None, request.name))
        if raw is None:
            logger.debug("reconcile_skipped_object_gone")
            return Result()
        # the reconcile gets its own copy: typed, or the dict (then ctx.raw is that too)
        typed = isinstance(definition.for_kind, type)
        obj = _decode_reconciled(definition.for_kind, raw) if typed else clone(raw)
        ctx: Context[Any] = Context(
            request=request, obj=obj, raw=raw if typed else obj, raw_is_shared=typed,
            writer=self.writer, recorder=self.recorder, log=logger, controller=self.name,
            origin=origin,
        )
        outcome = await definition.reconcile_func(ctx, obj)
        return _checked_result(outcome, definition.reconcile_func)
