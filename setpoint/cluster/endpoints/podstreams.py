"""``pods/log``, ``pods/exec``, ``pods/attach`` and ``pods/portforward``: the kubelet's streams.

kube-apiserver answers these by proxying to the kubelet of the pod's node
(k8s.io/kubernetes pkg/registry/core/pod/rest/log.go and subresources.go, with the locations
of pkg/registry/core/pod/strategy.go). It checks what it can itself first: the log options
(pkg/apis/core/validation ValidatePodLogOptions), the pod exists, the container is one of its
own (or the pod has exactly one), the pod is on a node, the node exists and has an address.
Then it reaches ``<node address>:<status.daemonEndpoints.kubeletEndpoint.Port>``:

- a log is a GET whose body is streamed back (genericrest.LocationStreamer; a kubelet's
  error answer becomes a Status with its code and body, NewGenericHttpResponseChecker);
- exec, attach and port-forward go through apimachinery's upgrade-aware proxy: the request
  is sent on with its ``Upgrade`` headers, and once the kubelet answers 101 the two
  connections are joined byte for byte, so WebSocket (``v5``/``v4.channel.k8s.io``, port
  forwarding's SPDY tunnel) and SPDY/3.1 all pass unchanged; an answer other than 101 is
  handed back as it is.

The node addresses are tried in kubeadm's ``--kubelet-preferred-address-types``
(InternalIP, ExternalIP, Hostname: cmd/kubeadm/app/phases/controlplane/manifests.go), since
a node's InternalIP is where its kubelet listens here. The process runtime's kubelets serve
plain HTTP on loopback addresses.

A pod that runs in the simulation (on a node whose runtime is ``simulated://``, or with the
process runtime's ``sim.setpoint.dev/ProcessRuntime=False`` condition) has no kubelet
stream: the answer is the one a real cluster gives when the kubelet cannot be reached, a
500 Status with Go's dial error (``Get "<url>": ...`` for logs, ``error dialing backend:
...`` for the upgraded streams), with the reason spelled out.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from setpoint.cluster.endpoints.collections import requesting_user
from setpoint.cluster.endpoints.http import Request, Response, Send, StreamResponse
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.cluster.endpoints.responses import status_response
from setpoint.cluster.endpoints.warningheaders import warning_headers
from setpoint.cluster.registry.admissionpoints import connect_steps
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors, fielderrors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.admission.webhook.dispatcher import WebhookAdmission
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.storage import Reader

# subresource -> (the kubelet's path, whether it names a container, the methods it serves)
STREAMS: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "log": ("containerLogs", True, ("GET",)),
    "exec": ("exec", True, ("GET", "POST")),
    "attach": ("attach", True, ("GET", "POST")),
    "portforward": ("portForward", False, ("GET", "POST")),
}
PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
DEFAULT_KUBELET_PORT = 10250
SIMULATED_RUNTIME = "simulated://"
FALLBACK_CONDITION = "sim.setpoint.dev/ProcessRuntime"
UNREACHABLE = ("the kubelet of node {node} is simulated and runs no containers, so it serves "
               "no logs, exec, attach or port-forward")
POD_SIMULATED = ("pod {pod} runs in the simulated runtime ({why}), so its kubelet serves no "
                 "logs, exec, attach or port-forward for it")
MAX_ERROR_BODY = 50_000  # NewGenericHttpResponseChecker's maxReadLength
MAX_RESPONSE_HEAD = 64 * 1024
_HOP_HEADERS = {"authorization", "host", "content-length", "transfer-encoding",
                "impersonate-user", "impersonate-group", "impersonate-uid"}
# exec/attach query parameters and their names on the kubelet's side (streamParams)
_EXEC_PARAMS = (("stdin", "input"), ("stdout", "output"), ("stderr", "error"), ("tty", "tty"))


async def connect(store: Reader, registry: Registry, rt: ResourceType, ns: str, name: str,
                  subresource: str, request: Request) -> Response:
    """The answer to a stream request, or the StatusError kube-apiserver would give."""
    path, has_container, methods = STREAMS[subresource]
    method = request.method
    if method not in methods:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
        raise errors.method_not_supported(f"{rt.resource}/{subresource}",
                                          verb.get(method, method.lower()), rt.group)
    query = request.query
    params: list[tuple[str, str]] = []
    if subresource == "log":
        params = _log_params(query, name)
    elif subresource == "portforward":
        forwarded_ports(request)  # decoded before the pod is read (getRequestOptions)
    pod = store.get(rt.storage_key, ns, name)
    if pod is None:
        raise errors.not_found(rt.resource, name, rt.group)
    spec = pod.get("spec") or {}
    container = _container(pod, name, query.get("container", "")) if has_container else ""
    node_name = spec.get("nodeName") or ""
    if not node_name:
        if subresource == "log":
            return Response(b"", 200, "text/plain")  # LocationStreamer without a location
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    node, host, port = kubelet_address(store, registry, node_name)
    if subresource != "log" and not is_upgrade_request(request):
        # upgradeaware.go ServeHTTP: UpgradeRequired, once the location is known
        raise errors.bad_request("Upgrade request required")
    target = f"{host}:{port}"
    location = f"/{path}/{quote(ns)}/{quote(name)}" + (f"/{quote(container)}"
                                                       if has_container else "")
    if subresource != "log":
        params = _stream_params(subresource, request)
    location += f"?{urlencode(params)}" if params else ""
    why = simulated_reason(node, pod, node_name, name)
    if why is not None:
        if subresource == "log":
            raise StatusError(500, "", f'Get "https://{target}{location.split("?")[0]}": '
                                       f"dial tcp {target}: {why}")
        raise StatusError(500, "", f"error dialing backend: dial tcp {target}: {why}")
    if subresource == "log":
        return await _stream_log(host, port, location, name)
    return await upgrade_proxy(host, port, location, request)


# -- the log -------------------------------------------------------------------------------

def _go_bool(raw: str) -> bool:
    """runtime.Convert_Slice_string_To_bool: only "0" and "false" (any case) are false."""
    return not (raw == "0" or raw.lower() == "false")


def _go_int64(raw: str) -> int:
    """strconv.ParseInt(s, 10, 64), with its error as the parameter codec reports it."""
    if re.fullmatch(r"[+-]?[0-9]+", raw):
        value = int(raw)
        if -(1 << 63) <= value < (1 << 63):
            return value
        raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": value out of range')
    raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax')


def _go_time(raw: str) -> datetime | None:
    """metav1.Time's query form: RFC 3339 (time.RFC3339), empty or "null" for none."""
    if raw in ("", "null"):
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
                            raw):
            raise ValueError
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise errors.bad_request(f'parsing time "{raw}" as "2006-01-02T15:04:05Z07:00": '
                                 f"cannot parse \"{raw}\" as \"2006\"") from None


def _log_params(query: Mapping[str, str], name: str) -> list[tuple[str, str]]:
    """Decode and validate PodLogOptions (log.go: ValidatePodLogOptions before the pod is
    read), and the kubelet's query as LogLocation builds it."""
    ints = {k: _go_int64(query[k]) for k in ("sinceSeconds", "tailLines", "limitBytes")
            if k in query}
    since_time = _go_time(query["sinceTime"]) if "sinceTime" in query else None
    causes = []
    if ints.get("tailLines", 0) < 0:
        causes.append(fielderrors.invalid("tailLines", ints["tailLines"],
                                          "must be greater than or equal to 0"))
    if ints.get("limitBytes", 1) < 1:
        causes.append(fielderrors.invalid("limitBytes", ints["limitBytes"],
                                          "must be greater than 0"))
    if "sinceSeconds" in ints and since_time is not None:
        causes.append(fielderrors.forbidden(
            "", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif ints.get("sinceSeconds", 1) < 1:
        causes.append(fielderrors.invalid("sinceSeconds", ints["sinceSeconds"],
                                          "must be greater than 0"))
    if causes:
        raise errors.invalid("PodLogOptions", name, causes)
    params = [(k, "true") for k in ("follow", "previous", "timestamps")
              if k in query and _go_bool(query[k])]
    if "sinceSeconds" in ints:
        params.append(("sinceSeconds", str(ints["sinceSeconds"])))
    if since_time is not None:
        params.append(("sinceTime", since_time.isoformat().replace("+00:00", "Z")))
    params += [(k, str(ints[k])) for k in ("tailLines", "limitBytes") if k in ints]
    return sorted(params)  # url.Values.Encode sorts by key


async def _stream_log(host: str, port: int, location: str, name: str) -> Response:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        raise StatusError(500, "", f'Get "http://{host}:{port}{location}": dial tcp '
                                   f"{host}:{port}: connect: {_reason(exc)}") from None
    # HTTP/1.0: the body is whatever comes until the kubelet closes
    writer.write(f"GET {location} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode())
    try:
        status, _, _ = parse_head(await reader.readuntil(b"\r\n\r\n"))
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
        writer.close()
        raise StatusError(500, "InternalError", "the kubelet's answer could not be read") \
            from None
    if not 200 <= status < 300:
        body = await reader.read(MAX_ERROR_BODY)
        writer.close()
        raise _kubelet_error(status, body.decode("utf-8", "replace").strip(), name)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while chunk := await reader.read(32 * 1024):
                yield chunk
        finally:
            writer.close()

    return StreamResponse(chunks(), writer.close, 200, "text/plain")


def _kubelet_error(status: int, body: str, name: str) -> StatusError:
    """apierrors.NewGenericServerResponse for pods/log, as the response checker makes it."""
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
               409: "Conflict", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
               503: "ServiceUnavailable", 504: "Timeout"}
    return StatusError(status, reasons.get(status, "Unknown"), body or "unknown",
                       name=name, kind="pods/log")


# -- exec, attach, port-forward ------------------------------------------------------------

async def admit_connect(webhooks: WebhookAdmission, rt: ResourceType, ns: str, name: str,
                        subresource: str, request: Request, user: Obj,
                        warnings: list[str]) -> None:
    """The admission of a CONNECT (exec, attach, port-forward), which precedes every other
    check (handlers/rest.go ConnectResource); a denial raises its StatusError. The webhooks'
    warnings are added to ``warnings`` as they answer, a denial's included."""
    if subresource == "log" or request.method not in STREAMS[subresource][2] \
            or not webhooks.configured():
        return
    obj = connect_options(subresource, request)
    await webhooks.run(lambda: connect_steps(rt, ns, name, subresource, obj, warnings), user)


def connect_options(subresource: str, request: Request) -> Obj:
    """The v1 PodExecOptions / PodAttachOptions / PodPortForwardOptions the query decodes
    to, as admission is sent it (fields in the Go struct's order, omitempty but
    PodExecOptions.command)."""
    query = request.query
    kind = {"exec": "PodExecOptions", "attach": "PodAttachOptions",
            "portforward": "PodPortForwardOptions"}[subresource]
    out: Obj = {"kind": kind, "apiVersion": "v1"}
    if subresource in ("exec", "attach"):
        for name, _ in _EXEC_PARAMS:
            if name in query and _go_bool(query[name]):
                out[name] = True
        if query.get("container"):
            out["container"] = query["container"]
        if subresource == "exec":
            out["command"] = request.query_values("command") or None
    else:
        ports = forwarded_ports(request)
        if ports:
            out["ports"] = ports
    return out


def forwarded_ports(request: Request) -> list[int]:
    """PodPortForwardOptions.ports from the query: metav1.Convert_Slice_string_To_Slice_int32
    (each value split at commas, each a 16-bit unsigned number), whose error is the
    request's 400 (handlers/rest.go ConnectResource)."""
    ports: list[int] = []
    for value in request.query_values("ports"):
        for part in value.split(","):
            if not re.fullmatch(r"[0-9]+", part):  # (ParseUint takes no sign)
                raise errors.bad_request(f'cannot convert to []int32: strconv.ParseUint: '
                                         f'parsing "{part}": invalid syntax')
            if int(part) > 0xFFFF:
                raise errors.bad_request(f'cannot convert to []int32: strconv.ParseUint: '
                                         f'parsing "{part}": value out of range')
            ports.append(int(part))
    return ports


def is_upgrade_request(request: Request) -> bool:
    """apimachinery httpstream ``IsUpgradeRequest``: a Connection header naming upgrade."""
    return any("upgrade" in value.lower() for value in request.header_values("connection"))


def _stream_params(subresource: str, request: Request) -> list[tuple[str, str]]:
    """strategy.go streamParams: PodExecOptions/PodAttachOptions/PodPortForwardOptions as
    the kubelet reads them."""
    query = request.query
    params: list[tuple[str, str]] = []
    if subresource in ("exec", "attach"):
        params = [(kubelet, "1") for ours, kubelet in _EXEC_PARAMS
                  if ours in query and _go_bool(query[ours])]
        if subresource == "exec":
            params += [("command", c) for c in request.query_values("command")]
    elif subresource == "portforward":
        ports = request.query_values("ports")
        if ports:
            params.append(("port", ",".join(ports)))
    return sorted(params, key=lambda kv: kv[0])


async def upgrade_proxy(host: str, port: int, location: str, request: Request) -> Response:
    """upgradeaware.go tryUpgrade: dial, send the request on, then join the connections; a
    backend that answers neither 101 nor an error is the responder's 500."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        raise StatusError(500, "", f"error dialing backend: dial tcp {host}:{port}: connect: "
                                   f"{_reason(exc)}") from None
    lines = [f"{request.method} {location} HTTP/1.1", f"Host: {host}:{port}"]
    for header in request.headers:
        if header not in _HOP_HEADERS:
            lines += [f"{header}: {v}" for v in request.header_values(header)]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        status, headers, _ = parse_head(head)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
        writer.close()
        raise StatusError(500, "", "error dialing backend: the kubelet closed the connection"
                          ) from None
    if status != 101 and status < 400:
        writer.close()
        raise StatusError(500, "", f"invalid upgrade response: status code {status}")
    if status != 101:
        length = int(headers.get("content-length", "0") or 0)
        body = await reader.readexactly(min(length, MAX_ERROR_BODY)) if length else b""
        writer.close()
        return TunnelResponse.echoed(head, body, status)
    return TunnelResponse(head, reader, writer)


class TunnelResponse(Response):
    """The kubelet's 101 and then both directions copied until either side ends; or, for
    an error answer to the upgrade, that answer echoed as it came and the connection
    closed (upgradeaware.go ``tryUpgrade``). Either way the connection is hijacked: none
    of the server's own headers (not even the Audit-Id) reach the client, and the audit
    event's code is the 101 ``Hijack`` fakes (filters/audit.go)."""

    __slots__ = ("_head", "_reader", "_writer", "on_end")

    def __init__(self, head: bytes, reader: asyncio.StreamReader | None,
                 writer: asyncio.StreamWriter | None, status: int = 101) -> None:
        super().__init__(b"", status)
        self._head, self._reader, self._writer = head, reader, writer
        # called once the tunnel is closed (the audit event's ResponseComplete)
        self.on_end: Callable[[], None] | None = None

    @classmethod
    def echoed(cls, head: bytes, body: bytes, status: int) -> TunnelResponse:
        """A backend's error answer to an upgrade, to be written back as it came."""
        return cls(head + body, None, None, status)

    async def send(self, send: Send, request: Request) -> None:
        client = request.hijack()
        client.write(self._head)
        reader, writer = self._reader, self._writer
        if reader is None or writer is None:  # an echoed answer: written, then closed
            client.close()
            if self.on_end is not None:
                self.on_end()
            return

        async def upstream() -> None:
            with contextlib.suppress(OSError):
                while data := await client.read():
                    writer.write(data)
                    await writer.drain()
                if writer.can_write_eof():
                    writer.write_eof()

        forward = asyncio.get_running_loop().create_task(upstream())
        try:
            with contextlib.suppress(OSError):
                while data := await reader.read(64 * 1024):
                    client.write(data)
        finally:
            forward.cancel()
            writer.close()
            client.close()
            if self.on_end is not None:
                self.on_end()


# -- locations -----------------------------------------------------------------------------

def parse_head(head: bytes) -> tuple[int, dict[str, str], str]:
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in header_lines:
        if ":" in line:
            key, value = line.split(":", 1)
            headers.setdefault(key.strip().lower(), value.strip())
    return status, headers, headers.get("content-type", "")


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


def simulated_reason(node: Obj, pod: Obj, node_name: str, name: str) -> str | None:
    """Why the pod's streams have no kubelet to come from, or None when they do."""
    runtime = ((node.get("status") or {}).get("nodeInfo") or {}).get(
        "containerRuntimeVersion") or ""
    if runtime.startswith(SIMULATED_RUNTIME):
        return UNREACHABLE.format(node=f'"{node_name}"')
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == FALLBACK_CONDITION and condition.get("status") == "False":
            why = condition.get("message") or condition.get("reason") or "no process runtime"
            return POD_SIMULATED.format(pod=name, why=why)
    return None


def _container(pod: Obj, name: str, container: str) -> str:
    """strategy.go's validateContainer: the container named, or the pod's only one."""
    spec = pod.get("spec") or {}
    containers: list[str] = [c.get("name", "") for c in spec.get("containers") or ()]
    init: list[str] = [c.get("name", "") for c in spec.get("initContainers") or ()]
    ephemeral: list[str] = [c.get("name", "") for c in spec.get("ephemeralContainers") or ()]
    # (the message lists containers and init containers only, as strategy.go's does)
    if not container:
        if len(containers) == 1:
            return containers[0]
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        message = (f"a container name must be specified for pod {name}, choose one of: "
                   f"[{' '.join(containers)}]")
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise errors.bad_request(message)
    if container not in (*containers, *init, *ephemeral):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def kubelet_address(store: Reader, registry: Registry, node_name: str,
                     ) -> tuple[Obj, str, int]:
    """pkg/kubelet/client's NodeConnectionInfoGetter: the node, its preferred address and
    its kubelet's port."""
    nodes = registry.get("", "v1", "nodes")
    node = store.get(nodes.storage_key, "", node_name) if nodes is not None else None
    if node is None:
        raise errors.not_found("nodes", node_name)
    status = node.get("status") or {}
    addresses = status.get("addresses") or []
    for kind in PREFERRED_ADDRESS_TYPES:
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
                        ).get("Port") or DEFAULT_KUBELET_PORT
                return node, address["address"], int(port)
    known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
    raise StatusError(500, "", f"no preferred addresses found; known addresses: [{known}]")


async def serve_connect(webhooks: WebhookAdmission, store: Reader, registry: Registry,
                        request: Request, rt: ResourceType, rp: ResourcePath) -> Response:
    """exec, attach, port-forward. The webhooks' warnings are Warning headers of an
    answer the server writes itself (a denial, the pod not found: filters/warning.go
    sets them on the response writer as they come), never of the kubelet's upgrade,
    whose head goes out as it came on the hijacked connection (upgradeaware.go)."""
    namespace, name = rp.namespace or "", rp.name or ""
    warnings: list[str] = []
    try:
        await admit_connect(webhooks, rt, namespace, name, rp.subresource, request,
                            requesting_user(request), warnings)
        return await connect(store, registry, rt, namespace, name, rp.subresource, request)
    except StatusError as err:
        if not warnings:
            raise
        resp = status_response(err)
    resp.headers += [("warning", h) for h in warning_headers(warnings)]
    return resp
