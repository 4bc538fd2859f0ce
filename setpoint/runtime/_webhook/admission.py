"""Admission webhooks for one kind: a defaulter that mutates, a validator that judges.

    hooks = Webhook.for_(Memcached)

    @hooks.default
    async def default(ctx: AdmissionContext[Memcached], mc: Memcached) -> None:
        mc.spec.topology = mc.spec.topology or "sharded"     # mutate in place

    @hooks.validate(operations=("CREATE", "UPDATE", "DELETE"))
    async def validate(ctx, mc: Memcached, old: Memcached | None, operation: str
                       ) -> list[str] | None:
        if mc.spec.replicas > 64:
            raise Denied("at most 64", field="spec.replicas", value=mc.spec.replicas)
        return ["topology 'replicated' is deprecated"] if mc.spec.topology == ... else None

    manager = Manager([memcached], webhooks=[hooks])

As controller-runtime's ``CustomDefaulter``/``CustomValidator``: the defaulter gets the
decoded object (typed for a typed class, a dict for a ``Kind``) and the server answers with
the JSON Patch from the object as sent to the object as left; DELETE is never defaulted.
The validator gets the object the request is about (the object being deleted on DELETE),
the stored object before it (UPDATE and DELETE; None on CREATE) and the operation; it
returns warnings, or raises :class:`~setpoint.runtime._webhook.denial.Denied` to refuse.
Paths follow controller-runtime: ``/mutate-<group with dashes>-<version>-<kind>`` and
``/validate-…``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from setpoint.client import Kind, ResourceInfo
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj
from setpoint.resources._custom import plural_of
from setpoint.resources._webhooks import AdmissionRegistration
from setpoint.runtime._logs import BoundLogger
from setpoint.runtime._objects import KindKey, as_dict, clone, decode, kind_key
from setpoint.runtime._webhook.denial import Denied
from setpoint.runtime._webhook.endpoint import Answer, Endpoint
from setpoint.runtime._webhook.review import (
    OPERATIONS,
    AdmissionRequest,
    AdmissionResponse,
    ReviewError,
    UserInfo,
    allowed,
    decode_review,
    encode_review,
    errored,
    json_patch,
    refused,
    review_error,
    status_result,
)

if TYPE_CHECKING:
    from setpoint.client import Client

__all__ = ["AdmissionContext", "HookOptions", "Webhook", "default_name", "default_path"]

log = logging.getLogger("setpoint.runtime._webhook")

T = TypeVar("T")

DefaultFunc = Callable[["AdmissionContext[T]", T], "Awaitable[T | None] | T | None"]
ValidateFunc = Callable[["AdmissionContext[T]", T, "T | None", str],
                        "Awaitable[list[str] | None] | list[str] | None"]

DEFAULT_OPERATIONS = ("CREATE", "UPDATE")


class AdmissionContext(Generic[T]):
    """What a handler knows about the request it judges.

    ``operation`` is ``CREATE``, ``UPDATE`` or ``DELETE``; ``kind`` the request's
    ``{group, version, kind}``; ``dry_run`` True when nothing will be persisted (a handler
    with side effects must skip them); ``request`` the whole request, ``request.raw`` as
    received. ``client`` is the manager's API client (None when served without one).
    Warnings added with :meth:`warn` reach the user with the answer, as do those a
    validator returns.
    """

    def __init__(self, request: AdmissionRequest, *, log: BoundLogger,
                 client: Client | None = None) -> None:
        self.request = request
        self.log = log
        self.client = client
        self.warnings: list[str] = []

    def __repr__(self) -> str:
        return (f"AdmissionContext({self.operation} {self.kind.get('kind', '')} "
                f"{self.namespace + '/' if self.namespace else ''}{self.name})")

    @property
    def operation(self) -> str:
        return self.request.operation

    @property
    def namespace(self) -> str:
        return self.request.namespace

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def user_info(self) -> UserInfo:
        return self.request.user_info

    @property
    def dry_run(self) -> bool:
        return self.request.dry_run

    @property
    def kind(self) -> dict[str, str]:
        return self.request.kind

    @property
    def sub_resource(self) -> str:
        return self.request.sub_resource

    @property
    def options(self) -> dict[str, Any] | None:
        """The operation's options (``CreateOptions``, ``UpdateOptions``, ``DeleteOptions``)."""
        return self.request.options

    def warn(self, message: str) -> None:
        """Send ``message`` back as a warning (``kubectl`` prints ``Warning: …``)."""
        self.warnings.append(message)


@dataclass(frozen=True)
class HookOptions:
    """How the API server calls the webhooks (the configuration's fields of these names)."""

    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int | None = None
    match_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    reinvocation_policy: str | None = None
    remove_unknown_fields: bool = False
    """Let the defaulter's patch remove fields the typed class does not keep (controller-
    runtime's ``DefaulterRemoveUnknownOrOmitableFields``); off, such removals are dropped."""


def default_path(prefix: str, key: KindKey) -> str:
    """controller-runtime's path: ``/<prefix>-<group, dots as dashes>-<version>-<kind>``
    (the core group leaves the group empty: ``/mutate--v1-pod``)."""
    version = key.api_version.rpartition("/")[2]
    return f"/{prefix}-{key.group.replace('.', '-')}-{version}-{key.kind.lower()}"


def default_name(prefix: str, key: KindKey) -> str:
    """A webhook name (it must be a qualified DNS name of three segments or more):
    ``<m|v><kind>-<version>.<group>``, with ``.setpoint.dev`` after a short group."""
    version = key.api_version.rpartition("/")[2]
    group = key.group or "core"
    if group.count(".") < 1:
        group = f"{group}.setpoint.dev"
    return f"{prefix}{key.kind.lower()}-{version}.{group}"


class Webhook(Generic[T]):
    """The admission webhooks of one kind; build it with :meth:`for_` and the decorators."""

    def __init__(self, kind: Any, *, resource: str | None = None,
                 mutate_path: str | None = None, validate_path: str | None = None,
                 name: str | None = None) -> None:
        self.kind = kind
        self.key = kind_key(kind)
        self.resource = resource or getattr(kind, "plural", None) or plural_of(self.key.kind)
        self.mutate_path = mutate_path or default_path("mutate", self.key)
        self.validate_path = validate_path or default_path("validate", self.key)
        self.mutate_name = f"m{name}" if name else default_name("m", self.key)
        self.validate_name = f"v{name}" if name else default_name("v", self.key)
        self.defaulter: DefaultFunc[T] | None = None
        self.validator: ValidateFunc[T] | None = None
        self.default_operations: tuple[str, ...] = DEFAULT_OPERATIONS
        self.validate_operations: tuple[str, ...] = DEFAULT_OPERATIONS
        self.options = HookOptions()

    def __repr__(self) -> str:
        parts = [p for p, f in ((self.mutate_path, self.defaulter),
                                (self.validate_path, self.validator)) if f is not None]
        return f"Webhook({self.key}, paths={parts})"

    # -- the builder -----------------------------------------------------------------------

    # a typed class admits its instances; a Kind (or ResourceInfo, KindKey) the dicts
    @overload
    @classmethod
    def for_(cls, kind: type[T], *, resource: str | None = None,
             mutate_path: str | None = None, validate_path: str | None = None,
             name: str | None = None) -> Webhook[T]: ...
    @overload
    @classmethod
    def for_(cls, kind: Kind | ResourceInfo | KindKey, *, resource: str | None = None,
             mutate_path: str | None = None, validate_path: str | None = None,
             name: str | None = None) -> Webhook[Obj]: ...
    @classmethod
    def for_(cls, kind: Any, *, resource: str | None = None,
             mutate_path: str | None = None, validate_path: str | None = None,
             name: str | None = None) -> Webhook[Any]:
        """The webhooks of ``kind`` (a typed class or ``Kind``). ``resource`` is the plural
        the configuration's rules name (default: the class's, else derived from the kind);
        paths default to controller-runtime's; ``name`` (a qualified name such as
        ``memcached.cache.example.com``) names the webhooks ``m<name>`` and ``v<name>``."""
        return cls(kind, resource=resource, mutate_path=mutate_path,
                   validate_path=validate_path, name=name)

    def with_options(self, **changes: Any) -> Webhook[T]:
        """Set :class:`HookOptions` fields (``failure_policy="Ignore"``,
        ``timeout_seconds=5``, ``namespace_selector={...}``, ``remove_unknown_fields=True``)."""
        self.options = replace(self.options, **changes)
        return self

    @overload
    def default(self, func: DefaultFunc[T], /) -> DefaultFunc[T]: ...

    @overload
    def default(self, func: None = None, /, *, operations: Sequence[str] = DEFAULT_OPERATIONS
                ) -> Callable[[DefaultFunc[T]], DefaultFunc[T]]: ...

    def default(self, func: DefaultFunc[T] | None = None, /, *,
                operations: Sequence[str] = DEFAULT_OPERATIONS) -> Any:
        """Decorator: ``async def default(ctx, obj) -> None`` mutates ``obj`` in place (or
        returns the object to admit instead), on ``operations`` (CREATE and UPDATE)."""
        ops = _operations(operations, allowed_ops=("CREATE", "UPDATE"))

        def register(f: DefaultFunc[T]) -> DefaultFunc[T]:
            if self.defaulter is not None:
                raise ValueError(f"{self!r} already has a defaulter")
            self.defaulter, self.default_operations = f, ops
            return f

        return register(func) if func is not None else register

    @overload
    def validate(self, func: ValidateFunc[T], /) -> ValidateFunc[T]: ...

    @overload
    def validate(self, func: None = None, /, *, operations: Sequence[str] = DEFAULT_OPERATIONS
                 ) -> Callable[[ValidateFunc[T]], ValidateFunc[T]]: ...

    def validate(self, func: ValidateFunc[T] | None = None, /, *,
                 operations: Sequence[str] = DEFAULT_OPERATIONS) -> Any:
        """Decorator: ``async def validate(ctx, obj, old, operation) -> list[str] | None``
        judges ``operations`` (CREATE and UPDATE; add DELETE to judge deletions): return
        warnings to admit, raise :class:`Denied` to refuse."""
        ops = _operations(operations, allowed_ops=("CREATE", "UPDATE", "DELETE"))

        def register(f: ValidateFunc[T]) -> ValidateFunc[T]:
            if self.validator is not None:
                raise ValueError(f"{self!r} already has a validator")
            self.validator, self.validate_operations = f, ops
            return f

        return register(func) if func is not None else register

    # -- what the server and the manifests need -------------------------------------------

    def endpoints(self, client: Client | None = None) -> list[Endpoint]:
        """The server paths of the registered handlers, answering with ``client`` in their
        context."""
        out: list[Endpoint] = []
        if self.defaulter is not None:
            out.append(Endpoint(self.mutate_path, self._server(self.admit_mutating, client)))
        if self.validator is not None:
            out.append(Endpoint(self.validate_path,
                                self._server(self.admit_validating, client)))
        if not out:
            raise ValueError(f"{self!r} has neither a defaulter nor a validator")
        return out

    def registrations(self) -> list[AdmissionRegistration]:
        """What the Mutating/ValidatingWebhookConfiguration says of these webhooks."""
        group, _, version = self.key.api_version.rpartition("/")
        o = self.options
        common: dict[str, Any] = dict(
            group=group, version=version, resource=self.resource,
            failure_policy=o.failure_policy, side_effects=o.side_effects,
            timeout_seconds=o.timeout_seconds, match_policy=o.match_policy,
            namespace_selector=o.namespace_selector, object_selector=o.object_selector)
        out: list[AdmissionRegistration] = []
        if self.defaulter is not None:
            out.append(AdmissionRegistration(
                "mutating", self.mutate_name, self.mutate_path,
                operations=self.default_operations,
                reinvocation_policy=o.reinvocation_policy, **common))
        if self.validator is not None:
            out.append(AdmissionRegistration(
                "validating", self.validate_name, self.validate_path,
                operations=self.validate_operations, **common))
        return out

    # -- answering -------------------------------------------------------------------------

    async def admit_mutating(self, request: AdmissionRequest,
                             client: Client | None = None) -> AdmissionResponse:
        """The defaulter's answer to ``request``."""
        uid = request.uid
        if self.defaulter is None or request.operation not in self.default_operations:
            return allowed(uid)
        if request.object is None:
            return errored(uid, 400, "there is no content to decode")
        ctx = self._context(request, self.mutate_path, client)
        defaulter = self.defaulter
        original = request.object

        async def run() -> AdmissionResponse:
            obj = self._decode(original)
            returned = await _call(defaulter, ctx, obj)
            mutated = as_dict(returned if returned is not None else obj)
            ops = json_patch(original, mutated)
            if not self.options.remove_unknown_fields:
                ops = self._drop_decoding_removals(original, ops)
            return AdmissionResponse(uid, True, status_result(200), patch=ops,
                                     warnings=ctx.warnings)

        return await self._guard(request, ctx, run)

    async def admit_validating(self, request: AdmissionRequest,
                               client: Client | None = None) -> AdmissionResponse:
        """The validator's answer to ``request``."""
        uid, op = request.uid, request.operation
        if op not in OPERATIONS:
            return errored(uid, 400, f'unknown operation request "{op}"')
        if self.validator is None or op not in self.validate_operations:
            return allowed(uid)
        needed = {"CREATE": (request.object,), "UPDATE": (request.object, request.old_object),
                  "DELETE": (request.old_object,)}[op]
        present = [raw for raw in needed if raw is not None]
        if len(present) != len(needed):
            return errored(uid, 400, "there is no content to decode")
        ctx = self._context(request, self.validate_path, client)
        validator = self.validator

        async def run() -> AdmissionResponse:
            if op == "DELETE":
                obj, old = self._decode(present[0]), self._decode(present[0])
            elif op == "UPDATE":
                obj, old = self._decode(present[0]), self._decode(present[1])
            else:
                obj, old = self._decode(present[0]), None
            warnings = await _call(validator, ctx, obj, old, op)
            if isinstance(warnings, str):
                warnings = [warnings]
            return allowed(uid, warnings=[*ctx.warnings, *(warnings or ())])

        return await self._guard(request, ctx, run)

    def _server(self, admit: Callable[[AdmissionRequest, Client | None],
                                      Awaitable[AdmissionResponse]],
                client: Client | None) -> Callable[[bytes, str], Awaitable[Answer]]:
        async def handle(body: bytes, content_type: str) -> Answer:
            try:
                api_version, request = decode_review(body, content_type)
            except ReviewError as exc:
                log.warning("admission_review_rejected error=%r", str(exc))
                return 400, review_error(str(exc))
            response = await admit(request, client)
            return 200, encode_review(api_version, response)
        return handle

    def _context(self, request: AdmissionRequest, path: str,
                 client: Client | None) -> AdmissionContext[T]:
        logger = BoundLogger(log, webhook=path, uid=request.uid, operation=request.operation,
                             namespace=request.namespace or None, name=request.name or None)
        return AdmissionContext(request, log=logger, client=client)

    def _decode(self, data: dict[str, Any]) -> T:
        try:
            # decode builds an instance of the webhook's kind, a T (or the dict for a Kind)
            return decode(self.kind, clone(data))  # type: ignore[no-any-return]
        except Exception as exc:
            raise _DecodeError(str(exc)) from exc

    def _drop_decoding_removals(self, original: dict[str, Any],
                                ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``ops`` without the removals that decoding alone causes (fields the typed class
        does not keep): a defaulter must not erase what it cannot see."""
        if not any(op.get("op") == "remove" for op in ops):
            return ops
        roundtrip = json_patch(original, as_dict(self._decode(original)))
        by_decoding = [op for op in roundtrip if op.get("op") == "remove"]
        return [op for op in ops if not (op.get("op") == "remove" and op in by_decoding)]

    async def _guard(self, request: AdmissionRequest, ctx: AdmissionContext[T],
                     run: Callable[[], Awaitable[AdmissionResponse]]) -> AdmissionResponse:
        """``run()``, with a handler's refusal or failure turned into the answer."""
        try:
            return await run()
        except asyncio.CancelledError:
            raise
        except _DecodeError as exc:
            ctx.log.warning("admission_decode_failed", error=str(exc))
            return errored(request.uid, 400, str(exc))
        except Denied as exc:
            ctx.log.info("admission_denied", message=exc.message)
            name = request.name or _name_of(request.object or request.old_object)
            status = exc.status(kind=request.kind.get("kind") or self.key.kind,
                                group=request.kind.get("group", self.key.group), name=name)
            return refused(request.uid, status, warnings=ctx.warnings)
        except StatusError as exc:
            return refused(request.uid, exc.to_status(), warnings=ctx.warnings)
        except Exception as exc:
            # a bug in the handler, as a Go panic: refuse with 500 rather than admit
            ctx.log.error("admission_handler_failed", error=repr(exc), exc_info=exc)
            return errored(request.uid, 500, f"internal error in webhook: {exc!r}")


class _DecodeError(Exception):
    """The object in the request is not a valid instance of the webhook's kind."""


def _name_of(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _operations(operations: Sequence[str], *, allowed_ops: tuple[str, ...]) -> tuple[str, ...]:
    ops = tuple(dict.fromkeys(op.upper() for op in operations))
    unknown = [op for op in ops if op not in allowed_ops]
    if unknown or not ops:
        raise ValueError(f"operations must be some of {list(allowed_ops)}, got {list(ops)}")
    return ops


async def _call(func: Callable[..., Any], *args: Any) -> Any:
    """Call a sync or async handler."""
    result = func(*args)
    if inspect.isawaitable(result):
        result = await result
    return result

