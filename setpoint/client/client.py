"""The Kubernetes API client: CRUD, patch, apply, list, watch and subresources.

Every method takes the resource the way it is most natural at the call site: an object (dict
or typed) for create/update/apply, and for the others a resource reference (a typed class,
:class:`~setpoint.client.resources.Kind`, :class:`~setpoint.client.resources.GVR` or
:class:`~setpoint.client.resources.ResourceInfo`) plus a name. Typed classes come back as
typed instances, everything else as plain dicts.

Namespaces: for one object, the ``namespace`` argument wins, then the object's own
``metadata.namespace``, then the client's default namespace. For ``list`` and ``watch``,
``namespace=None`` means all namespaces, as in controller-runtime.
"""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar, cast, overload

import orjson

from setpoint.client.answers import answer_like, decoded_like
from setpoint.client.config import ClusterConfig, load_config, load_incluster, load_kubeconfig
from setpoint.client.decoding import json_object
from setpoint.client.echoes import WriteAnswers
from setpoint.client.errors import GoneError
from setpoint.client.flowcontrol import DISABLED, RateLimiter, rate_limiter_for
from setpoint.client.options import ObjectList, PatchType, PropagationPolicy, delete_options
from setpoint.client.resources import GVR, Discovery, Kind, ResourceInfo, ResourceRef
from setpoint.client.transport import (
    USER_AGENT,
    RequestHook,
    Response,
    RetryPolicy,
    StreamResponse,
    Transport,
)
from setpoint.client.typed import decoder_for, is_typed_class, to_body
from setpoint.client.watch import Watch, watch_params
from setpoint.machinery.objects import Obj

T = TypeVar("T")
ObjT = TypeVar("ObjT")  # an object passed in and handed back: dict or typed

DictRef = ResourceInfo | Kind | GVR


class Client:
    """An asyncio client for one Kubernetes API server.

    ``config`` defaults to :func:`~setpoint.client.config.load_config` (kubeconfig or
    in-cluster). ``on_request`` is called after every HTTP attempt with a
    :class:`~setpoint.client.transport.RequestRecord` (for ``rest_client_requests_total``).
    ``field_manager`` names this client in managedFields for writes and server-side apply.
    Use as ``async with Client() as client:`` or call :meth:`close`.

    Client-side rate limiting is client-go's token bucket (:mod:`setpoint.client.flowcontrol`):
    ``qps`` requests a second with bursts of ``burst``. The default ``qps=-1`` turns it off,
    as controller-runtime's ``GetConfig`` does (the server's API Priority and Fairness
    decides); ``qps=0`` takes client-go's 5 with a burst of 10. ``rate_limiter`` (a
    :class:`~setpoint.client.flowcontrol.TokenBucketRateLimiter`, or one shared by several
    clients) wins over both, as ``rest.Config.RateLimiter``.
    """

    def __init__(
        self, config: ClusterConfig | None = None, *, retry: RetryPolicy | None = None,
        on_request: RequestHook | None = None, timeout: float = 30.0,
        max_connections: int = 100, field_manager: str = "setpoint",
        user_agent: str = USER_AGENT, qps: float = DISABLED, burst: int = 0,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        if rate_limiter is None:
            rate_limiter = rate_limiter_for(qps, burst)
        self.config = config if config is not None else load_config()
        self.field_manager = field_manager
        self.transport = Transport(
            self.config, retry=retry, on_request=on_request, timeout=timeout,
            max_connections=max_connections, user_agent=user_agent, rate_limiter=rate_limiter,
        )
        self.discovery = Discovery(self.transport)
        self._write_check: Callable[[], Awaitable[None]] | None = None
        self.write_answers = WriteAnswers()
        """The latest write answers of the resources an informer watches, so that their
        watch events are told without decoding them (:mod:`setpoint.client.echoes`;
        shared by the clients :meth:`with_write_check` makes)."""

    @classmethod
    def from_kubeconfig(
        cls, path: str | os.PathLike[str] | None = None, context: str | None = None,
        **options: Any,
    ) -> Client:
        """A client for a kubeconfig context (``path`` None: ``KUBECONFIG`` or the default)."""
        return cls(load_kubeconfig(path, context=context), **options)

    @classmethod
    def in_cluster(cls, **options: Any) -> Client:
        """A client for the pod's service account."""
        return cls(load_incluster(), **options)

    @property
    def namespace(self) -> str:
        """The default namespace (of the kubeconfig context or the service account)."""
        return self.config.namespace

    def __repr__(self) -> str:
        return f"Client(server={self.config.server!r}, namespace={self.namespace!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the connection pool."""
        await self.transport.close()

    async def resolve(self, resource: ResourceRef) -> ResourceInfo:
        """The :class:`ResourceInfo` a reference names (through discovery if needed)."""
        discovery = self.discovery
        return discovery.known(resource) or await discovery.resolve(resource)

    async def request(
        self, method: str, path: str, *, params: Mapping[str, str | int | bool | None] | None
        = None, body: Any = None, content_type: str = "application/json",
    ) -> Any:
        """Any other API call (``/version``, a proxy, a custom subresource): the decoded JSON
        answer, or the text when it is not JSON."""
        data = None if body is None else orjson.dumps(body)
        resp = await self._send(method, path, params=params, body=data,
                                            content_type=content_type)
        try:
            return orjson.loads(resp.body) if resp.body else None
        except orjson.JSONDecodeError:
            return resp.body.decode("utf-8", "replace")

    # -- reads -----------------------------------------------------------------------------

    @overload
    async def get(self, resource: type[T], name: str, *, namespace: str | None = None) -> T: ...
    @overload
    async def get(self, resource: DictRef, name: str, *, namespace: str | None = None) -> Obj: ...
    async def get(self, resource: ResourceRef, name: str, *, namespace: str | None = None) -> Any:
        """The object ``name``; raises ``NotFoundError`` when it does not exist."""
        return await self._object_call("GET", resource, name, namespace)

    @overload
    async def list(
        self, resource: type[T], *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        limit: int | None = None, continue_token: str | None = None,
        resource_version: str | None = None, resource_version_match: str | None = None,
    ) -> ObjectList[T]: ...
    @overload
    async def list(
        self, resource: DictRef, *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        limit: int | None = None, continue_token: str | None = None,
        resource_version: str | None = None, resource_version_match: str | None = None,
    ) -> ObjectList[Obj]: ...
    async def list(
        self, resource: ResourceRef, *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        limit: int | None = None, continue_token: str | None = None,
        resource_version: str | None = None, resource_version_match: str | None = None,
    ) -> ObjectList[Any]:
        """One page of objects (all of them when ``limit`` is None).

        ``namespace=None`` lists across all namespaces. Pass the answer's
        ``continue_token`` back to get the next page of the same snapshot.
        """
        info = await self.resolve(resource)
        params = {
            "labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit,
            "continue": continue_token, "resourceVersion": resource_version,
            "resourceVersionMatch": resource_version_match,
        }
        return await self._list_page(info, namespace, params, decoder_for(resource))

    async def _list_page(
        self, info: ResourceInfo, namespace: str | None,
        params: Mapping[str, str | int | bool | None], decode: Callable[[Obj], Any],
    ) -> ObjectList[Any]:
        resp = await self._send(
            "GET", info.path(namespace), params=params,
            template=info.template(bool(namespace) and info.namespaced, False),
        )
        doc = json_object(resp.body)
        meta = doc.get("metadata") or {}
        kind = info.kind
        items = []
        for item in doc.get("items") or []:
            # The server leaves apiVersion/kind off list items; put them back so every
            # object is self-describing, as client-go's decoder does.
            item.setdefault("apiVersion", info.api_version)
            item.setdefault("kind", kind)
            items.append(decode(item))
        return ObjectList(
            items=items, resource_version=meta.get("resourceVersion", ""),
            continue_token=meta.get("continue") or None,
            remaining_item_count=meta.get("remainingItemCount"), metadata=meta,
        )

    @overload
    async def list_all(
        self, resource: type[T], *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList[T]: ...
    @overload
    async def list_all(
        self, resource: DictRef, *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList[Obj]: ...
    async def list_all(
        self, resource: ResourceRef, *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList[Any]:
        """Every object, fetched ``page_size`` at a time from one consistent snapshot.

        The result's ``resource_version`` is the snapshot's, ready to watch from. When a
        continue token expires mid-way (410), the list is taken again in one request, as
        client-go's pager does.
        """
        info = await self.resolve(resource)
        decode = decoder_for(resource)
        params: dict[str, str | int | bool | None] = {
            "labelSelector": label_selector, "fieldSelector": field_selector,
            "limit": page_size,
        }
        page = first = await self._list_page(info, namespace, params, decode)
        items = list(page.items)
        while page.continue_token:
            try:
                page = await self._list_page(
                    info, namespace, {**params, "continue": page.continue_token}, decode,
                )
            except GoneError:
                return await self._list_page(info, namespace, {**params, "limit": None}, decode)
            items.extend(page.items)
        return ObjectList(items=items, resource_version=first.resource_version,
                          metadata=first.metadata)

    @overload
    def watch(
        self, resource: type[T], *, namespace: str | None = None, name: str | None = None,
        resource_version: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None, timeout_seconds: int | None = None,
        allow_bookmarks: bool = True, send_initial_events: bool = False,
        read_timeout: float | None = None, echoes: bool = False,
    ) -> Watch[T]: ...
    @overload
    def watch(
        self, resource: DictRef, *, namespace: str | None = None, name: str | None = None,
        resource_version: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None, timeout_seconds: int | None = None,
        allow_bookmarks: bool = True, send_initial_events: bool = False,
        read_timeout: float | None = None, echoes: bool = False,
    ) -> Watch[Obj]: ...
    def watch(
        self, resource: ResourceRef, *, namespace: str | None = None, name: str | None = None,
        resource_version: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None, timeout_seconds: int | None = None,
        allow_bookmarks: bool = True, send_initial_events: bool = False,
        read_timeout: float | None = None, echoes: bool = False,
    ) -> Watch[Any]:
        """A watch of changes after ``resource_version`` (None: from the current state,
        starting with synthetic ADDED events for what exists).

        ``name`` watches one object. ``send_initial_events`` asks for the initial state as
        events closed by a bookmark (a streaming list). The request is sent on the first
        iteration; an expired ``resource_version`` raises ``GoneError`` from it.
        ``read_timeout`` bounds the silence between two events (default: the server's
        ``timeout_seconds`` plus a margin, or unbounded). With ``echoes``, an ADDED or
        MODIFIED event whose object is byte for byte the answer to one of this client's
        recent writes of a resource in :attr:`write_answers` comes as an
        :class:`~setpoint.client.echoes.Echo` (its name and resourceVersion, the object
        undecoded until ``decode()``), for an informer that may already hold it.
        """
        params = watch_params(name, resource_version, label_selector, field_selector,
                              timeout_seconds, allow_bookmarks, send_initial_events)
        if read_timeout is None and timeout_seconds is not None:
            read_timeout = timeout_seconds + 30.0

        @asynccontextmanager
        async def open_stream() -> AsyncIterator[StreamResponse]:
            info = await self.resolve(resource)
            params["resourceVersion"] = watch.resource_version
            async with self.transport.stream(
                "GET", info.path(namespace), params=params, read_timeout=read_timeout,
                template=info.template(bool(namespace) and info.namespaced, False),
            ) as resp:
                yield resp

        watch: Watch[Any] = Watch(open_stream, decoder_for(resource), resource_version,
                                  description=_describe(resource, namespace),
                                  answers=self.write_answers if echoes else None)
        return watch

    # -- writes ----------------------------------------------------------------------------

    async def create(
        self, obj: ObjT, *, namespace: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, field_validation: str | None = None,
    ) -> ObjT:
        """Create ``obj``; returns the stored object (same type as ``obj``).
        Raises ``AlreadyExistsError`` when the name is taken."""
        body = to_body(obj)
        info = self._known_info(obj, body) or await self._info_for(obj, body)
        ns = self._namespace(info, namespace, body)
        params = self._write_params(dry_run, field_manager, field_validation)
        resp = await self._send(
            "POST", info.path(ns), params=params, body=orjson.dumps(body),
            template=info.template(info.namespaced, False),
        )
        answer: ObjT = self._answer(info, obj, resp.body)  # no cast(): a call per write
        return answer

    async def update(
        self, obj: ObjT, *, namespace: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, field_validation: str | None = None,
    ) -> ObjT:
        """Replace ``obj`` (PUT). With ``metadata.resourceVersion`` set, a concurrent change
        makes it fail with ``ConflictError``."""
        return await self._put(obj, None, namespace, dry_run, field_manager, field_validation)

    async def update_status(
        self, obj: ObjT, *, namespace: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, field_validation: str | None = None,
    ) -> ObjT:
        """Replace the status of ``obj`` through the status subresource."""
        return await self._put(obj, "status", namespace, dry_run, field_manager,
                               field_validation)

    @overload
    async def patch(
        self, resource: type[T], name: str, patch: Any, *, patch_type: PatchType = ...,
        namespace: str | None = None, subresource: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, force: bool | None = None,
        field_validation: str | None = None,
    ) -> T: ...
    @overload
    async def patch(
        self, resource: DictRef, name: str, patch: Any, *, patch_type: PatchType = ...,
        namespace: str | None = None, subresource: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, force: bool | None = None,
        field_validation: str | None = None,
    ) -> Obj: ...
    async def patch(
        self, resource: ResourceRef, name: str, patch: Any, *,
        patch_type: PatchType = PatchType.MERGE, namespace: str | None = None,
        subresource: str | None = None, dry_run: bool = False,
        field_manager: str | None = None, force: bool | None = None,
        field_validation: str | None = None,
    ) -> Any:
        """Patch the object ``name``: a list of operations for ``PatchType.JSON``, a (partial)
        object — dict or typed — for the others. ``force`` is for apply patches only."""
        info = self.discovery.known(resource) or await self.resolve(resource)
        body = patch if isinstance(patch, list) else to_body(patch)
        params = self._write_params(dry_run, field_manager, field_validation)
        if patch_type is PatchType.APPLY:
            params["fieldManager"] = field_manager or self.field_manager
            if force is not None:
                params["force"] = force
        ns = self._namespace(info, namespace, body if isinstance(body, dict) else None)
        resp = await self._send(
            "PATCH", info.path(ns, name, subresource), params=params, body=orjson.dumps(body),
            content_type=str(patch_type), idempotent=patch_type is not PatchType.JSON,
            template=info.template(info.namespaced, True, subresource),
        )
        if is_typed_class(resource):  # validated when first read, as decoded_like's
            return answer_like(cast(type[Any], resource), resp.body)
        answer = json_object(resp.body)
        self.write_answers.remember(info, resp.body, answer)
        return answer

    async def apply(
        self, obj: ObjT, *, field_manager: str | None = None, force: bool = False,
        namespace: str | None = None, subresource: str | None = None, dry_run: bool = False,
        field_validation: str | None = None,
    ) -> ObjT:
        """Server-side apply ``obj`` (the fields this manager wants to own) and return the
        result. ``force`` takes over fields other managers own instead of failing with
        ``ConflictError``; ``subresource="status"`` applies the status."""
        body = to_body(obj)
        info = self._known_info(obj, body) or await self._info_for(obj, body)
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("apply needs metadata.name")
        ns = self._namespace(info, namespace, body)
        params = self._write_params(dry_run, field_manager or self.field_manager,
                                    field_validation)
        params["force"] = force
        resp = await self._send(
            "PATCH", info.path(ns, name, subresource), params=params, body=orjson.dumps(body),
            content_type=str(PatchType.APPLY), idempotent=True,
            template=info.template(info.namespaced, True, subresource),
        )
        answer: ObjT = self._answer(info, obj, resp.body)  # no cast(): a call per write
        return answer

    async def delete(
        self, resource: ResourceRef, name: str, *, namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        grace_period_seconds: int | None = None, uid: str | None = None,
        resource_version: str | None = None, dry_run: bool = False,
    ) -> Obj:
        """Delete the object ``name``. ``uid``/``resource_version`` are preconditions (a
        mismatch fails with ``ConflictError``). Returns what the server answered: the
        object while finalizers or a grace period hold it, otherwise a Success Status."""
        info = await self.resolve(resource)
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                         if v is not None}
        body = delete_options(propagation_policy, grace_period_seconds, dry_run, preconditions)
        resp = await self._send(
            "DELETE", info.path(self._namespace(info, namespace, None), name),
            body=orjson.dumps(body), template=info.template(info.namespaced, True),
        )
        return json_object(resp.body)

    async def delete_collection(
        self, resource: ResourceRef, *, namespace: str | None = None,
        label_selector: str | None = None, field_selector: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        grace_period_seconds: int | None = None, dry_run: bool = False,
    ) -> Obj:
        """Delete every matching object of a namespace (the client's default namespace when
        ``namespace`` is None) or of a cluster-scoped resource; returns the server's list
        of what was deleted."""
        info = await self.resolve(resource)
        params = {"labelSelector": label_selector, "fieldSelector": field_selector}
        body = delete_options(propagation_policy, grace_period_seconds, dry_run, {})
        resp = await self._send(
            "DELETE", info.path(self._namespace(info, namespace, None)), params=params,
            body=orjson.dumps(body), template=info.template(info.namespaced, False),
        )
        return json_object(resp.body)

    # -- subresources ----------------------------------------------------------------------

    @overload
    async def get_status(
        self, resource: type[T], name: str, *, namespace: str | None = None,
    ) -> T: ...
    @overload
    async def get_status(
        self, resource: DictRef, name: str, *, namespace: str | None = None,
    ) -> Obj: ...
    async def get_status(
        self, resource: ResourceRef, name: str, *, namespace: str | None = None,
    ) -> Any:
        """The object read through its status subresource."""
        return await self._object_call("GET", resource, name, namespace, "status")

    @overload
    async def patch_status(
        self, resource: type[T], name: str, patch: Any, *, patch_type: PatchType = ...,
        namespace: str | None = None, dry_run: bool = False, field_manager: str | None = None,
        force: bool | None = None,
    ) -> T: ...
    @overload
    async def patch_status(
        self, resource: DictRef, name: str, patch: Any, *, patch_type: PatchType = ...,
        namespace: str | None = None, dry_run: bool = False, field_manager: str | None = None,
        force: bool | None = None,
    ) -> Obj: ...
    async def patch_status(
        self, resource: ResourceRef, name: str, patch: Any, *,
        patch_type: PatchType = PatchType.MERGE, namespace: str | None = None,
        dry_run: bool = False, field_manager: str | None = None, force: bool | None = None,
    ) -> Any:
        """Patch the status subresource (see :meth:`patch`)."""
        return await self.patch(
            resource, name, patch, patch_type=patch_type, namespace=namespace,
            subresource="status", dry_run=dry_run, field_manager=field_manager, force=force,
        )

    async def get_scale(self, resource: ResourceRef, name: str, *,
                        namespace: str | None = None) -> Obj:
        """The ``autoscaling/v1`` Scale of the object."""
        info = await self.resolve(resource)  # a Scale is never the typed class: use the info
        return cast(Obj, await self._object_call("GET", info, name, namespace, "scale"))

    async def update_scale(
        self, resource: ResourceRef, name: str, scale: Mapping[str, Any], *,
        namespace: str | None = None, dry_run: bool = False,
    ) -> Obj:
        """Replace the Scale (``spec.replicas``); ``metadata.resourceVersion`` in ``scale``
        makes it conditional."""
        info = await self.resolve(resource)
        resp = await self._send(
            "PUT", info.path(self._namespace(info, namespace, None), name, "scale"),
            params=self._write_params(dry_run, None, None), body=orjson.dumps(dict(scale)),
            template=info.template(info.namespaced, True, "scale"),
        )
        return json_object(resp.body)

    async def patch_scale(
        self, resource: ResourceRef, name: str, patch: Any, *,
        patch_type: PatchType = PatchType.MERGE, namespace: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """Patch the Scale, e.g. ``{"spec": {"replicas": 3}}``."""
        info = await self.resolve(resource)
        return await self.patch(
            info, name, patch, patch_type=patch_type, namespace=namespace,
            subresource="scale", dry_run=dry_run,
        )

    # -- helpers ---------------------------------------------------------------------------

    def with_write_check(self, check: Callable[[], Awaitable[None]]) -> Client:
        """This client, on the same connections, with ``check`` awaited before every write
        (every request but GET and HEAD); ``check`` raises to refuse it. Given a leader
        elector's ``check_leading``, every write through it is a current leader's. Closing
        either client closes the shared connections."""
        checked = copy.copy(self)
        checked._write_check = check
        return checked

    async def _send(self, method: str, path: str, **kw: Any) -> Response:
        if self._write_check is not None and method not in ("GET", "HEAD"):
            await self._write_check()
        return await self.transport.request(method, path, **kw)

    async def _object_call(
        self, method: str, resource: ResourceRef, name: str, namespace: str | None,
        subresource: str | None = None,
    ) -> Any:
        info = await self.resolve(resource)
        resp = await self._send(
            method, info.path(self._namespace(info, namespace, None), name, subresource),
            template=info.template(info.namespaced, True, subresource),
        )
        return decoder_for(resource)(json_object(resp.body))

    async def _put(
        self, obj: ObjT, subresource: str | None, namespace: str | None, dry_run: bool,
        field_manager: str | None, field_validation: str | None,
    ) -> ObjT:
        body = to_body(obj)
        info = self._known_info(obj, body) or await self._info_for(obj, body)
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("update needs metadata.name")
        resp = await self._send(
            "PUT", info.path(self._namespace(info, namespace, body), name, subresource),
            params=self._write_params(dry_run, field_manager, field_validation),
            body=orjson.dumps(body), template=info.template(info.namespaced, True, subresource),
        )
        answer: ObjT = self._answer(info, obj, resp.body)  # no cast(): a call per write
        return answer

    def _answer(self, info: ResourceInfo, sent: object, body: bytes) -> Any:
        """A write's answer typed like the object sent (:func:`decoded_like`); a dict
        answer remembered for its watch event (:attr:`write_answers`)."""
        answer = decoded_like(sent, body)
        if type(answer) is dict:
            self.write_answers.remember(info, body, answer)
        return answer

    def _known_info(self, obj: object, body: Mapping[str, Any]) -> ResourceInfo | None:
        """What :meth:`_info_for` answers without a request, else None (every write asks:
        its coroutines cost more than the answer)."""
        cls = type(obj)
        if is_typed_class(cls):
            return self.discovery.known(cls)
        return self.discovery.known_kind(body.get("apiVersion"), body.get("kind"))

    async def _info_for(self, obj: object, body: Mapping[str, Any]) -> ResourceInfo:
        if is_typed_class(type(obj)):
            return await self.resolve(type(obj))
        return await self.discovery.for_object(body)

    def _namespace(
        self, info: ResourceInfo, namespace: str | None, body: Mapping[str, Any] | None,
    ) -> str | None:
        if not info.namespaced:
            return None
        if namespace:
            return namespace
        if body is not None:
            ns = (body.get("metadata") or {}).get("namespace")
            if ns:
                return str(ns)
        return self.namespace

    def _write_params(
        self, dry_run: bool, field_manager: str | None, field_validation: str | None,
    ) -> dict[str, str | int | bool | None]:
        return {
            "dryRun": "All" if dry_run else None,
            "fieldManager": field_manager or self.field_manager,
            "fieldValidation": field_validation,
        }


def _describe(resource: ResourceRef, namespace: str | None) -> str:
    name = resource.__name__ if isinstance(resource, type) else repr(resource)
    return f"{name} in {namespace!r}" if namespace else f"{name} in all namespaces"


