"""The audit filters of the handler chain (k8s.io/apiserver pkg/endpoints/filters):
``WithAuditInit`` (the Audit-Id of every answer, ``audit_init.go``), ``WithAudit`` (the
stages of a request the policy audits, ``audit.go``) and ``WithFailedAuthenticationAudit``
(``authn_audit.go``). The policy, the event and the log are ``setpoint.cluster.audit``.

Where they stand in the chain, as in ``DefaultBuildHandlerChain``: the Audit-Id first of
all; the audit event after authentication and before impersonation, so that ``user`` is
who authenticated and ``impersonatedUser`` whom they act as."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
import time
from collections.abc import AsyncIterator
from contextvars import Token
from typing import TYPE_CHECKING, Any

import orjson

from setpoint.cluster.audit import context as audit_context
from setpoint.cluster.audit.backend import Backend, Result
from setpoint.cluster.audit.context import AuditContext, level_at_least, without_managed_fields
from setpoint.cluster.audit.event import audit_context as new_context
from setpoint.cluster.audit.event import emit, response_status, source_ips, user_info
from setpoint.cluster.audit.metrics import AUDIT_METRICS
from setpoint.cluster.endpoints.http import Request, Response, StreamResponse
from setpoint.cluster.endpoints.podstreams import TunnelResponse
from setpoint.cluster.endpoints.requestdeadline import TIMEOUT_STATUS
from setpoint.machinery.gofmt import go_quote

if TYPE_CHECKING:
    from setpoint.cluster.audit.policy import Policy, RequestAttributes

_STATUS_PREFIX = b'{"kind":"Status"'


def audit_id_of(request: Request) -> str:
    """``withAuditInit``: the client's own Audit-ID, as sent, or a new UUID."""
    return request.headers.get("audit-id") or _ids.new()


class _RandomUUIDs:
    """Version 4 UUIDs (``uuid.New``) as text, unique in this process and across runs: the
    first 74 random bits drawn again every 4096 IDs, the last 48 bits counting. Every answer
    carries one, and ``str(uuid.uuid4())`` (a system call and a UUID object each) cost as
    much as a fifth of a whole GET served from memory."""

    __slots__ = ("counter", "left", "prefix")
    _VARIANT = "89ab" * 4  # RFC 4122's variant: the top bits of the 17th digit are 10

    def __init__(self) -> None:
        self.prefix = ""
        self.counter = itertools.count()
        self.left = 0

    def new(self) -> str:
        self.left -= 1
        if self.left < 0:
            h = os.urandom(16).hex()
            variant = self._VARIANT[int(h[16], 16)]
            self.prefix = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-"
            self.counter = itertools.count(int(h[20:], 16) & 0x7FFFFFFFFFFF)
            self.left = 4095
        return f"{self.prefix}{next(self.counter):012x}"


_ids = _RandomUUIDs()
new_audit_id = _ids.new  # (an answer whose client sent no Audit-ID of its own)


class AuditStoreFailed(Exception):
    """A ``blocking-strict`` backend could not store the RequestReceived event: the request
    is not served (filters/audit.go ``WithAudit``)."""


def store_failed_response(request: Request) -> Response:
    """``responsewriters.InternalError`` (``http.Error``): text, not a Status."""
    text = f"Internal Server Error: {go_quote(request.request_uri)}: failed to store audit event"
    response = Response((_sanitize(text) + "\n").encode(), 500, "text/plain; charset=utf-8")
    response.add_header("X-Content-Type-Options", "nosniff")
    return response


def _sanitize(text: str) -> str:
    """errors.go's ``sanitizer``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def _settled(result: Result) -> bool:
    return await result if inspect.isawaitable(result) else result


class Auditor:
    """The audit policy and its backend, applied to each request."""

    def __init__(self, policy: Policy, backend: Backend) -> None:
        self.policy = policy
        self.backend = backend
        self._later: set[asyncio.Future[bool]] = set()

    def __repr__(self) -> str:
        return f"Auditor(rules={len(self.policy.rules)}, backend={self.backend!r})"

    def _sink(self, event: dict[str, Any]) -> Result:
        AUDIT_METRICS.observe_event()
        return self.backend.process_events([event])

    async def _stage(self, ac: AuditContext, stage: str) -> bool:
        """``processAuditEvent``: the stage's event to the backend, waited for when the
        backend blocks."""
        result = emit(ac, stage, self._sink)
        return await result if inspect.isawaitable(result) else bool(result)

    def _stage_later(self, ac: AuditContext, stage: str) -> None:
        """A stage emitted where nothing can wait for it (a cancelled request)."""
        result = emit(ac, stage, self._sink)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(_settled(result))
            self._later.add(task)
            task.add_done_callback(self._later.discard)

    async def begin(self, request: Request, audit_id: str, attrs: RequestAttributes,
                    object_ref: dict[str, str] | None, user: dict[str, Any] | None,
                    long_running: bool = False) -> tuple[AuditContext, Token[Any]] | None:
        """``evaluatePolicyAndCreateAuditEvent`` for ``user`` (who authenticated) and the
        RequestReceived stage; the event is the request's current one until :meth:`end`.
        None: not audited. AuditStoreFailed: the backend refused RequestReceived (only a
        blocking-strict one says so)."""
        config = self.policy.evaluate(user, attrs)
        AUDIT_METRICS.observe_policy_level(config.level)
        if config.level == "None":
            return None
        ac = self._context(request, audit_id, attrs, object_ref, config, user)
        ac.long_running = long_running
        if not await self._stage(ac, "RequestReceived"):
            AUDIT_METRICS.reject_request()
            raise AuditStoreFailed
        return ac, audit_context.activate(ac)

    def _context(self, request: Request, audit_id: str, attrs: RequestAttributes,
                 object_ref: dict[str, str] | None, config: Any,
                 user: dict[str, Any] | None) -> AuditContext:
        # the request's arrival, in wall-clock time (it was taken on the loop's clock)
        received = time.time() - (asyncio.get_running_loop().time() - request.received) \
            if request.received else time.time()
        return new_context(
            audit_id, config, request_uri=request.request_uri, verb=attrs.verb,
            user=user, ips=source_ips(request.headers, request.remote_host),
            user_agent=request.headers.get("user-agent", ""), object_ref=object_ref,
            received=received)

    @staticmethod
    def impersonated(ac: AuditContext, user: dict[str, Any]) -> None:
        """``LogImpersonatedUser``."""
        ac.event["impersonatedUser"] = user_info(user)

    async def end(self, begun: tuple[AuditContext, Token[Any]], response: Response) -> Response:
        """The answer's status (and at RequestResponse its object) and the last stages. A
        long-running request (``BasicLongRunningRequestCheck``: a watch, a proxy, exec,
        attach, port-forward, log) logs ResponseStarted as its answer begins, whatever it
        is (``auditResponseWriter.processCode``; 101 for an upgrade), and ResponseComplete
        once its stream or tunnel ends."""
        ac, token = begun
        audit_context.reset(token)
        event = ac.event
        status = _status_of(response)
        # a hijacked connection's code is the 101 Hijack fakes, whatever is echoed on it
        code = 101 if isinstance(response, TunnelResponse) else response.status
        event["responseStatus"] = response_status(code, status)
        if not isinstance(response, StreamResponse | TunnelResponse):
            if level_at_least(ac.config.level, "RequestResponse") and status is None:
                answered = _answered_object(response)
                if isinstance(answered, dict):
                    event["responseObject"] = without_managed_fields(answered) \
                        if ac.config.omit_managed_fields else answered
            elif status is not None and level_at_least(ac.config.level, "RequestResponse"):
                event["responseObject"] = status
        if ac.long_running or (isinstance(response, StreamResponse) and response.long_running):
            await self._stage(ac, "ResponseStarted")
        if isinstance(response, StreamResponse):
            response.chunks = self._completed(ac, response.chunks)
            return response
        if isinstance(response, TunnelResponse):
            response.on_end = lambda: self._stage_later(ac, "ResponseComplete")
            return response
        await self._stage(ac, "ResponseComplete")
        return response

    async def _completed(self, ac: AuditContext,
                         chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            self._stage_later(ac, "ResponseComplete")

    async def panicked(self, begun: tuple[AuditContext, Token[Any]],
                       error: BaseException) -> None:
        """The Panic stage of a request whose handler failed (Go's recovered panic)."""
        ac, token = begun
        audit_context.reset(token)
        ac.event["responseStatus"] = {
            "metadata": {}, "status": "Failure",
            "message": f"APIServer panic'd: {error}", "reason": "InternalError", "code": 500}
        await self._stage(ac, "Panic")

    def abandoned(self, begun: tuple[AuditContext, Token[Any]], request: Request) -> None:
        """ResponseComplete of a request whose handler was cancelled: past its deadline,
        the 504 its client was sent (timeout.go); else (the server stopping) audit.go's
        faked status for an answer never written, after a faked ResponseStarted for a
        long-running request."""
        ac, token = begun
        audit_context.reset(token)
        late = request.deadline is not None \
            and asyncio.get_running_loop().time() >= request.deadline
        ac.event["responseStatus"] = dict(TIMEOUT_STATUS) if late else {
            "metadata": {}, "status": "Success", "message": "Connection closed early",
            "code": 200}
        if ac.long_running and not late:
            self._stage_later(ac, "ResponseStarted")
        self._stage_later(ac, "ResponseComplete")

    async def failed_authentication(self, request: Request, audit_id: str,
                                    attrs: RequestAttributes,
                                    object_ref: dict[str, str] | None, code: int) -> None:
        """``WithFailedAuthenticationAudit``: one ResponseStarted event, with no user, whose
        message says which credentials were tried."""
        config = self.policy.evaluate(None, attrs)
        AUDIT_METRICS.observe_policy_level(config.level)
        if config.level == "None":
            return
        ac = self._context(request, audit_id, attrs, object_ref, config, None)
        ac.event["responseStatus"] = {"metadata": {}, "message": _auth_methods(request),
                                      "code": code}
        await self._stage(ac, "ResponseStarted")

    async def shutdown(self) -> None:
        """What the backends still hold written or sent (``Backend.Shutdown``)."""
        if self._later:
            await asyncio.gather(*self._later, return_exceptions=True)
        await self.backend.shutdown()


def object_ref_of(attrs: RequestAttributes, version: str) -> dict[str, str] | None:
    """The event's objectRef of a resource request (``LogRequestMetadata``)."""
    if not attrs.resource:
        return None
    return {"resource": attrs.resource, "namespace": attrs.namespace, "name": attrs.name,
            "apiGroup": attrs.group, "apiVersion": version,
            "subresource": attrs.subresource}


def decoded_patch(raw: bytes, content_type: str) -> Any:
    """A PATCH body as the event's requestObject (``LogRequestPatch``): JSON as sent; an
    apply patch in YAML as the JSON it reads as."""
    import yaml  # (only while auditing, for a PATCH)

    try:
        if content_type == "application/apply-patch+yaml":
            return yaml.safe_load(raw)
        return orjson.loads(raw)
    except (yaml.YAMLError, orjson.JSONDecodeError):
        return raw.decode("utf-8", "replace")


def _auth_methods(request: Request) -> str:
    """authn_audit.go ``getAuthMethods``."""
    methods = []
    if request.headers.get("authorization", "").lower().startswith("basic "):
        methods.append("basic")
    parts = request.headers.get("authorization", "").strip().split(" ")
    if len(parts) > 1 and parts[0].lower() == "bearer":
        methods.append("bearer")
    if request.query.get("access_token", "").strip():
        methods.append("access_token")
    if request.client_certificate is not None:
        methods.append("x509")
    if methods:
        return f"Authentication failed, attempted: {', '.join(methods)}"
    return "Authentication failed, no credentials provided"


def _content_type(response: Response) -> str:
    return next((v for n, v in response.headers if n == "content-type"), "")


def _answered_object(response: Response) -> Any:
    """The object an answer encodes, whichever representation was negotiated (the audit
    event logs the object, ``LogResponseObject``, not its encoding), or None."""
    ctype = _content_type(response).split(";", 1)[0]
    body = response.body
    if ctype == "application/json":
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    if ctype == "application/vnd.kubernetes.protobuf":
        from setpoint.machinery.protobuf import ProtobufError, decode

        try:
            return decode(body)
        except ProtobufError:
            return None
    if ctype == "application/yaml":
        import yaml

        try:
            return yaml.safe_load(body)
        except yaml.YAMLError:
            return None
    return None


def _status_of(response: Response) -> dict[str, Any] | None:
    """The answer's Status object, if it is one (what ``LogResponseObject`` copies)."""
    body = response.body
    if body.startswith(_STATUS_PREFIX):
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return status if isinstance(status, dict) else None
    if response.status < 400 or _content_type(response).startswith("application/json"):
        return None
    # an error Status negotiated as YAML or protobuf (ErrorNegotiated)
    answered = _answered_object(response)
    return answered if isinstance(answered, dict) and answered.get("kind") == "Status" \
        else None
