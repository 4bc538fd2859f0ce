"""What a reconcile gets: the object, a reader, a writer and helpers, bound to one request.

    @widgets.reconcile
    async def reconcile(ctx: Context[Widget], widget: Widget) -> Result:
        await ctx.apply(config_map_for(widget))          # owner reference set, no-op skipped
        widget.status.ready = True
        await ctx.update_status(widget)                  # sent only when it changed
        return Result()

Reads (``ctx.get``, ``ctx.list``, ``ctx.owned``, ``ctx.cache``) never leave the process.
Writes go through the manager's :class:`~setpoint.runtime._writer.Writer`: compared with the
cache first, recorded in it after. ``ctx.client`` is the plain client for anything else.
"""

from __future__ import annotations

import builtins
import functools
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

import orjson

from setpoint.client import Client, PropagationPolicy
from setpoint.client.answers import answer_like, real_class
from setpoint.machinery.objects import Obj
from setpoint.runtime import _conditions as cond
from setpoint.runtime._cache import Cache, Selector
from setpoint.runtime._events import EventRecorder
from setpoint.runtime._logs import BoundLogger
from setpoint.runtime._objects import (
    as_dict,
    clone,
    identity,
    kind_key,
    meta,
    name_of,
    namespace_of,
)
from setpoint.runtime._ownership import has_finalizer, is_being_deleted, set_owner_reference
from setpoint.runtime._ownwrites import Origin
from setpoint.runtime._reconcile import Request
from setpoint.runtime._writer import OperationResult, Writer

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")
U = TypeVar("U")


class ObjectEvents:
    """The event recorder, aimed at the object being reconciled."""

    def __init__(self, recorder: EventRecorder | None, regarding: Obj,
                 log: BoundLogger | None = None) -> None:
        self._recorder = recorder
        self._regarding = regarding
        self._log = log

    def __repr__(self) -> str:
        return f"ObjectEvents({self._regarding.get('kind')} {name_of(self._regarding)})"

    def normal(self, reason: str, note: str, *, action: str | None = None,
               related: object | None = None) -> None:
        """Record a ``Normal`` event about the reconciled object."""
        self._logged("Normal", reason, note)
        if self._recorder is not None:
            self._recorder.normal(self._regarding, reason, note, action=action,
                                  related=related)

    def warning(self, reason: str, note: str, *, action: str | None = None,
                related: object | None = None) -> None:
        """Record a ``Warning`` event about the reconciled object."""
        self._logged("Warning", reason, note)
        if self._recorder is not None:
            self._recorder.warning(self._regarding, reason, note, action=action,
                                   related=related)

    def _logged(self, type_: str, reason: str, note: str) -> None:
        if self._log is not None:
            self._log.info("event_recorded", type=type_, reason=reason, note=note)


class Context(Generic[T]):
    """One reconcile's view of the world.

    ``obj`` is the reconciled object as the cache held it when the reconcile started
    (typed when the controller is for a typed class); ``raw`` is its dict.
    """

    def __init__(self, *, request: Request, obj: T, raw: Obj, writer: Writer,
                 recorder: EventRecorder | None, log: BoundLogger, controller: str,
                 origin: Origin | None = None, raw_is_shared: bool = False) -> None:
        """``raw_is_shared``: ``raw`` is the cache's own dict, read here but copied before
        :attr:`raw` hands it out (a typed reconcile rarely asks for it)."""
        self.request = request
        self.obj = obj
        self._raw = raw
        self._raw_is_shared = raw_is_shared
        self.controller = controller
        self.log = log
        self.events = ObjectEvents(recorder, raw, log)
        self._writer = writer
        self._origin = origin if origin is not None else Origin.of(controller, request, raw)
        """Whose writes these are (passed along, so that writes from tasks the reconcile
        starts count too): their echoes do not queue this request again."""

    @property
    def raw(self) -> Obj:
        """The reconciled object's dict as the reconcile started with it (or as a
        finalizer change left it): the reconcile's own copy."""
        if self._raw_is_shared:
            self._raw, self._raw_is_shared = clone(self._raw), False
        return self._raw

    def __repr__(self) -> str:
        return f"Context({self.controller}, {self.request})"

    @property
    def client(self) -> Client:
        """The API client, for anything the helpers here do not cover."""
        return self._writer.client

    @property
    def cache(self) -> Cache:
        """The shared cache: every read a controller makes of a watched kind."""
        return self._writer.cache

    # -- reads -----------------------------------------------------------------------------

    # the reads are typed like the cache's: a typed class gives its instances, any other
    # reference (a Kind, a GVR) copies of the dicts

    @overload
    def get(self, kind: type[U], name: str, namespace: str | None = None) -> U | None: ...
    @overload
    def get(self, kind: object, name: str, namespace: str | None = None) -> Any: ...
    def get(self, kind: object, name: str, namespace: str | None = None) -> Any:
        """An object of a watched kind from the cache (``namespace`` defaults to the
        request's), or None."""
        return self.cache.get(kind, name, self.request.namespace if namespace is None
                              else namespace)

    @overload
    def list(self, kind: type[U], *, labels: Selector = None,
             fields: str | Mapping[str, str] | None = None,
             all_namespaces: bool = False) -> builtins.list[U]: ...
    @overload
    def list(self, kind: object, *, labels: Selector = None,
             fields: str | Mapping[str, str] | None = None,
             all_namespaces: bool = False) -> builtins.list[Any]: ...
    def list(self, kind: object, *, labels: Selector = None,
             fields: str | Mapping[str, str] | None = None,
             all_namespaces: bool = False) -> builtins.list[Any]:
        """Objects of a watched kind in the request's namespace (or everywhere)."""
        namespace = None if all_namespaces else (self.request.namespace or None)
        return self.cache.list(kind, namespace=namespace, labels=labels, fields=fields)

    @overload
    def owned(self, kind: type[U]) -> builtins.list[U]: ...
    @overload
    def owned(self, kind: object) -> builtins.list[Any]: ...
    def owned(self, kind: object) -> builtins.list[Any]:
        """Objects of ``kind`` that name the reconciled object as an owner."""
        return self.cache.owned_by(kind, str(meta(self._raw).get("uid")))

    @property
    def deleting(self) -> bool:
        """True once deletion of the reconciled object was requested."""
        return is_being_deleted(self._latest())

    # -- writes ----------------------------------------------------------------------------

    def set_owner(self, obj: Obj) -> Obj:
        """Make the reconciled object the controller owner of the dict ``obj``."""
        return set_owner_reference(self._raw, obj, controller=True)

    def _own(self, obj: Obj) -> None:
        self.set_owner(obj)

    async def apply(self, obj: U, *, owner: bool = True, force: bool = True) -> U:
        """Server-side apply ``obj`` with the controller's field manager, taking ownership
        of conflicting fields (``force``), with the reconciled object as controller owner
        (``owner``); namespace defaults to the request's. Skipped when the cache shows the
        object already as wanted."""
        body = self._prepare(obj, owner)
        before = self._version_of(body)
        result = await self._writer.apply(body, force=force, origin=self._origin)
        self._log_write("apply", body, before)
        # a dict given, a dict returned: U is a dict type there
        return cast(U, result) if isinstance(obj, dict) else _retyped(obj, result)

    async def apply_status(self, obj: U | None = None, *, force: bool = True) -> U:
        """Server-side apply the status of ``obj`` (default: the reconciled object)."""
        target: Any = self.obj if obj is None else obj
        body = as_dict(target)
        m = meta(body)
        status_only = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
                       "metadata": {"name": m.get("name"), "namespace": m.get("namespace")},
                       "status": body.get("status") or {}}
        before = self._version_of(status_only)
        result = await self._writer.apply(status_only, force=force, status=True,
                                          origin=self._origin)
        self._log_write("apply_status", status_only, before)
        # a dict given, a dict returned: U is a dict type there
        return cast(U, result) if isinstance(target, dict) else _retyped(target, result)

    async def create_or_update(self, obj: U, mutate: Callable[[U], None] | None = None, *,
                               owner: bool = True) -> tuple[U, OperationResult]:
        """Create ``obj`` or update the existing object with ``mutate`` (called on the
        current state, or on ``obj`` when creating); nothing is sent when unchanged."""
        return await self._create_or(self._writer.create_or_update, obj, mutate, owner)

    async def create_or_patch(self, obj: U, mutate: Callable[[U], None] | None = None, *,
                              owner: bool = True) -> tuple[U, OperationResult]:
        """As :meth:`create_or_update`, but merge-patch what ``mutate`` changed, the status
        included (controller-runtime's ``CreateOrPatch``): ``updated``, ``updatedStatus``,
        ``updatedStatusOnly`` or ``unchanged``."""
        return await self._create_or(self._writer.create_or_patch, obj, mutate, owner)

    async def _create_or(self, write: Any, obj: U, mutate: Callable[[U], None] | None,
                         owner: bool) -> tuple[U, OperationResult]:
        key, namespace, name = identity(obj)
        is_self = key == kind_key(self._raw) and name == self.request.name \
            and (namespace or self.request.namespace) == self.request.namespace
        prepare = self._own if owner and not is_self else None
        result: U
        result, operation = await write(
            obj, mutate, prepare, origin=self._origin, namespace=self.request.namespace or None)
        if operation is not OperationResult.UNCHANGED \
                and self.log.logger.isEnabledFor(logging.DEBUG):
            self._log_written("create" if operation is OperationResult.CREATED else "update",
                              key.kind,
                              namespace or self.request.namespace, name)
        return result, operation

    async def delete(self, obj_or_kind: Any, name: str | None = None,
                     namespace: str | None = None, *,
                     propagation_policy: PropagationPolicy | str | None = "Background",
                     ) -> bool:
        """Delete an object (given whole, or by kind and name); False when already gone."""
        if name is None:
            body = as_dict(obj_or_kind)
            kind, name = kind_key(body), name_of(body)
            namespace = namespace or namespace_of(body) or None
        else:
            kind = kind_key(obj_or_kind)
        if namespace is None:
            namespace = self.request.namespace or None
        key = kind_key(kind)
        cached = self._writer.cached(key, namespace, name) or \
            self._writer.cached(key, None, name)
        pending = cached is not None and bool(meta(cached).get("deletionTimestamp"))
        deleted = await self._writer.delete(kind, name, namespace,
                                            propagation_policy=propagation_policy)
        if deleted and not pending:
            self._log_written("delete", key.kind, namespace or "", name)
        return deleted

    async def update_status(self, obj: U | None = None) -> U:
        """Make the server's status equal ``obj``'s (default: the reconciled object); only
        the difference from the cached status is sent, and nothing when there is none."""
        target: Any = self.obj if obj is None else obj
        # the write's DEBUG line asked for here, before its helpers are called (per event)
        before = self._version_of(target) \
            if self.log.logger.isEnabledFor(logging.DEBUG) else None
        result: U = await self._writer.update_status(target, origin=self._origin)
        if self.log.logger.isEnabledFor(logging.DEBUG):
            self._log_write("update_status", target, before)
        return result

    async def patch_status(self, patch: Mapping[str, Any], obj: U | None = None) -> U:
        """Merge-patch the status (``{"ready": True}``), unless it already reads so."""
        target: Any = self.obj if obj is None else obj
        before = self._version_of(target)
        result: U = await self._writer.patch_status(target, patch, origin=self._origin)
        self._log_write("patch_status", target, before)
        return result

    # -- finalizers ------------------------------------------------------------------------

    def has_finalizer(self, finalizer: str) -> bool:
        return has_finalizer(self._latest(), finalizer)

    async def add_finalizer(self, finalizer: str) -> bool:
        """Add ``finalizer`` to the reconciled object; returns whether a write was made."""
        latest = self._latest()
        current = list(meta(latest).get("finalizers") or [])
        if finalizer in current:
            return False
        self._raw, self._raw_is_shared = as_dict(await self._writer.patch_metadata(
            dict(latest), {"finalizers": [*current, finalizer]}, origin=self._origin)), False
        self.log.info("finalizer_added", finalizer=finalizer)
        return True

    async def remove_finalizer(self, finalizer: str) -> bool:
        """Remove ``finalizer`` from the reconciled object (letting a pending deletion
        finish); returns whether a write was made."""
        latest = self._latest()
        current = list(meta(latest).get("finalizers") or [])
        if finalizer not in current:
            return False
        remaining = [f for f in current if f != finalizer]
        self._raw, self._raw_is_shared = as_dict(await self._writer.patch_metadata(
            dict(latest), {"finalizers": remaining or None}, origin=self._origin)), False
        self.log.info("finalizer_removed", finalizer=finalizer)
        return True

    # -- conditions ------------------------------------------------------------------------

    def set_condition(self, type_: str, status: bool | str | None, *, reason: str,
                      message: str = "", obj: Any = None) -> bool:
        """Set a ``metav1.Condition`` in ``status.conditions`` of ``obj`` (default: the
        reconciled object), in memory, with ``observedGeneration`` from its generation, as
        apimachinery's ``meta.SetStatusCondition`` does (``lastTransitionTime`` moves only
        when ``status`` does; None is ``Unknown``); returns whether it changed. Write it
        with :meth:`update_status`. This is the one way to set a condition."""
        target = self.obj if obj is None else obj
        conditions, store = _conditions_of(target)
        changed = cond.set_condition(conditions, type_, status, reason=reason, message=message,
                                     observed_generation=_generation_of(target))
        if changed:
            store(conditions)
            self._log_condition(target, type_, cond.status_string(status), reason, message)
        return changed

    def remove_condition(self, type_: str, obj: Any = None) -> bool:
        """Remove the condition ``type_`` from ``obj`` (default: the reconciled object), in
        memory; returns whether it was there."""
        conditions, store = _conditions_of(self.obj if obj is None else obj)
        removed = cond.remove_condition(conditions, type_)
        if removed:
            store(conditions)
        return removed

    def get_condition(self, type_: str, obj: Any = None) -> dict[str, Any] | None:
        """The condition ``type_`` of ``obj`` (default: the reconciled object) as a dict."""
        conditions, _ = _conditions_of(self.obj if obj is None else obj)
        return cond.find_condition(conditions, type_)

    # -- logs ------------------------------------------------------------------------------
    # An event, a condition change and a finalizer are INFO (what changed, once); a write
    # is DEBUG, as controller-runtime logs its per-reconcile lines only at V(5)
    # (pkg/internal/controller/controller.go, "Reconcile successful"): a reconcile writes
    # on every event, and two INFO lines per event were a sixth of an operator's CPU.
    # Errors and requeues are the controller's (_controller.py). The reconciled object's
    # namespace/name are bound to self.log, the written one's added.

    def _version_of(self, obj: object) -> str | None:
        """The cached resourceVersion of the object ``obj`` names (None when not cached
        or when DEBUG is off, since only the write log needs it)."""
        if not self.log.logger.isEnabledFor(logging.DEBUG):
            return None
        key, namespace, name = identity(obj)
        cached = self._writer.cached(key, namespace or self.request.namespace or None, name) \
            or self._writer.cached(key, None, name)
        return str(meta(cached).get("resourceVersion")) if cached is not None else None

    def _log_write(self, verb: str, sent: object, before: str | None) -> None:
        """Log a write unless the writer skipped it (the answer is the cached version:
        read from the cache, which holds the answer, so a typed answer stays unread)."""
        if before is not None and self._version_of(sent) == before:
            return
        if not self.log.logger.isEnabledFor(logging.DEBUG):
            return
        key, namespace, name = identity(sent)
        self._log_written(verb, key.kind, namespace, name)

    def _log_written(self, verb: str, kind: str, namespace: str, name: str) -> None:
        if not self.log.logger.isEnabledFor(logging.DEBUG):
            return  # before the line's fields are built
        self.log.debug("object_written", verb=verb, kind=kind,
                      object=f"{namespace}/{name}" if namespace else name)

    def _log_condition(self, target: object, type_: str, status: str, reason: str,
                       message: str) -> None:
        if not self.log.logger.isEnabledFor(logging.INFO):
            return
        fields: dict[str, Any] = {}
        if target is not self.obj:
            key, namespace, name = identity(target)
            fields = {"kind": key.kind, "object": f"{namespace}/{name}" if namespace else name}
        self.log.info("condition_changed", type=type_, status=status, reason=reason,
                      message=message or None, **fields)

    # -- helpers ---------------------------------------------------------------------------

    def _latest(self) -> Obj:
        """The freshest known dict of the reconciled object (cache, else what we hold)."""
        cached = self._writer.cached(kind_key(self._raw), self.request.namespace or None,
                                     self.request.name)
        return cached if cached is not None else self._raw

    def _is_self(self, body: Obj) -> bool:
        return kind_key(body) == kind_key(self._raw) and name_of(body) == self.request.name \
            and (namespace_of(body) or self.request.namespace) == self.request.namespace

    def _with_namespace(self, body: Obj) -> Obj:
        if not meta(body).get("namespace") and self.request.namespace:
            body = {**body, "metadata": {**meta(body), "namespace": self.request.namespace}}
        return body

    def _prepare(self, obj: object, owner: bool) -> Obj:
        body = self._with_namespace(dict(as_dict(obj)))
        if owner and not self._is_self(body):
            body = {**body, "metadata": dict(meta(body))}
            set_owner_reference(self._raw, body, controller=True)
        return body


def _retyped(obj: U, body: Obj) -> U:
    """``body`` as an instance of ``obj``'s class."""
    cls = real_class(type(obj))
    validate = getattr(cls, "model_validate", None) or getattr(cls, "from_dict", None)
    if validate is None:
        raise TypeError(f"{cls.__name__} has neither model_validate() nor from_dict()")
    # validated when first read, as every typed write answer (setpoint/client/answers.py)
    return answer_like(cls, orjson.dumps(body))


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    # pydantic is loaded here, on first use: a manager of dicts never needs it
    from pydantic import TypeAdapter

    return TypeAdapter(annotation)


def _generation_of(obj: Any) -> int | None:
    """``metadata.generation`` of a dict or typed object, without encoding the latter."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else getattr(obj, "metadata", None)
    if metadata is None:
        return None
    generation = metadata.get("generation") if isinstance(metadata, dict) \
        else getattr(metadata, "generation", None)
    return generation if isinstance(generation, int) else None


def _conditions_of(obj: Any) -> tuple[list[dict[str, Any]], Callable[[list[Any]], None]]:
    """The conditions of ``obj`` as a list of dicts, and how to store them back."""
    if isinstance(obj, dict):
        status = obj.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        return conditions, lambda value: status.__setitem__("conditions", value)
    status = getattr(obj, "status", None)
    if status is None:
        raise ValueError(f"{type(obj).__name__} has no status to hold conditions")
    items = [dict(as_dict(c)) for c in getattr(status, "conditions", None) or []]

    def store(value: list[Any]) -> None:
        field = type(status).model_fields.get("conditions") \
            if hasattr(type(status), "model_fields") else None
        if field is not None:
            value = _adapter(field.annotation).validate_python(value)
        status.conditions = value

    return items, store
