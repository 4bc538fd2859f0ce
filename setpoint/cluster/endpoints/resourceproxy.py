"""``pods/proxy``, ``services/proxy`` and ``nodes/proxy``: a request passed on to what the
object names.

kube-apiserver finds a location for the path's ``[scheme:]name[:port]`` and hands the
request to apimachinery's upgrade-aware proxy (k8s.io/kubernetes 1.32):

- a pod (pkg/registry/core/pod/strategy.go ``ResourceLocation``): its first IP, refused
  with 400 ``address not allowed`` unless it is a global unicast address (no loopback, no
  link-local: so a pod of the process runtime, on 127.x, cannot be reached this way, as a
  real cluster would not reach one either); the port given or its first container port;
- a service (pkg/registry/core/service/storage/storage.go ``ResourceLocation``): a port
  number is first turned into the service port's name (503 ``no service port %d found for
  service %q``), then the service's Endpoints give an address that is a pod of the same
  namespace with that IP (``isValidAddress``), else 503 ``no endpoints available for
  service %q``;
- a node (pkg/registry/core/node/strategy.go ``ResourceLocation``): the kubelet's address
  and port (or the port asked for), refused with 400 ``address not allowed`` unless every
  address of the host is global unicast (``isProxyableHostname``).

Then (apimachinery pkg/util/proxy upgradeaware.go ``ServeHTTP``): a GET or HEAD of the
bare ``.../proxy`` is redirected to ``.../proxy/`` (301); the request goes on with the
caller's headers (its ``Host`` too: the reverse proxy keeps ``req.Host``) less its credentials
and the hop-by-hop ones, plus ``X-Forwarded-Uri`` (transport.go) and ``X-Forwarded-For``
(httputil.ReverseProxy); the
answer comes back with its status, headers (less the CORS ones: corsRemovingTransport) and
body as it streams. A backend that cannot be reached is transport.go's 503 ServiceUnavailable
``error trying to reach service: <Go's dial error>``. An object that runs in the simulation
(a pod on a simulated node) has nothing listening: the answer is that 503 at once, with the
reason spelled out, instead of a dial that would wait for its timeout.

A redirect to the backend itself comes back under the proxy's path (transport.go
``rewriteURL``). Not done: rewriting the links of ``text/html`` answers
(``rewriteResponse``), upgrade requests to ``https`` backends (those to ``http`` ones are
joined as the pod streams' are), and ``https`` backends' client certificates.
"""

from __future__ import annotations

import ipaddress
import posixpath
import random
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

from setpoint.cluster.aggregator.proxy import PATH_SAFE, go_error_text
from setpoint.cluster.endpoints import podstreams
from setpoint.cluster.endpoints.http import BodyTooLarge, Request, Response, StreamResponse
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Reader

_VALID_SCHEMES = ("", "http", "https")
# net/http's hop-by-hop headers, and what authenticated the caller (filters/authentication.go
# deletes Authorization, impersonation.go the Impersonate-* headers)
_NOT_FORWARDED = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                            "proxy-authorization", "te", "trailer", "transfer-encoding",
                            "upgrade", "authorization", "content-length"})
_CORS = frozenset({"access-control-allow-credentials", "access-control-allow-headers",
                   "access-control-allow-methods", "access-control-allow-origin",
                   "access-control-expose-headers", "access-control-max-age"})
_NOT_RETURNED = _NOT_FORWARDED | _CORS | {"date", "host"}
MAX_PROXIED_BODY = 3 * 1024 * 1024  # the server's own request body limit
CONNECT_TIMEOUT_S = 30.0  # the proxy transport's net.Dialer


@dataclass(frozen=True)
class Location:
    """Where a proxied request goes, and why nothing would answer there (a simulation)."""

    scheme: str
    host: str
    port: str
    simulated: str | None = None

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.port else host


def split_scheme_name_port(ident: str) -> tuple[str, str, str] | None:
    """apimachinery util/net ``SplitSchemeNamePort``: ``name``, ``name:port`` or
    ``scheme:name:port``; None when the form or the scheme is not valid."""
    parts = ident.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    return (scheme, name, port) if name and scheme in _VALID_SCHEMES else None


def _global_unicast(raw: str) -> bool:
    """Go's ``net.IP.IsGlobalUnicast`` of ``ParseIPSloppy(raw)``."""
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv4Address) and ip == ipaddress.IPv4Address(
            "255.255.255.255"):
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)


def _get(store: Reader, registry: Registry, resource: str, ns: str, name: str) -> Obj:
    rt = registry.require("", "v1", resource)
    obj = store.get(rt.storage_key, ns, name)
    if obj is None:
        raise errors.not_found(resource, name)
    return obj


def _pod_simulated(store: Reader, registry: Registry, pod: Obj) -> str | None:
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    nodes = registry.require("", "v1", "nodes")
    node = store.get(nodes.storage_key, "", node_name) if node_name else None
    if node is None:
        return None
    name = (pod.get("metadata") or {}).get("name", "")
    why = podstreams.simulated_reason(node, pod, node_name, name)
    return None if why is None else f"nothing listens there: pod {name} runs in the simulation"


def pod_location(store: Reader, registry: Registry, ns: str, ident: str) -> Location:
    """pod/strategy.go ``ResourceLocation``."""
    split = split_scheme_name_port(ident)
    if split is None:
        raise errors.bad_request(f'invalid pod request "{ident}"')
    scheme, name, port = split
    pod = _get(store, registry, "pods", ns, name)
    if not port:
        for container in (pod.get("spec") or {}).get("containers") or ():
            if container.get("ports"):
                port = str(container["ports"][0].get("containerPort", ""))
                break
    status = pod.get("status") or {}
    ips = status.get("podIPs") or []
    ip = str(ips[0].get("ip", "")) if ips else str(status.get("podIP") or "")
    if not _global_unicast(ip):
        raise errors.bad_request("address not allowed")
    return Location(scheme, ip, port, _pod_simulated(store, registry, pod))


def service_location(store: Reader, registry: Registry, ns: str, ident: str) -> Location:
    """service/storage/storage.go ``ResourceLocation`` (with ``isValidAddress``)."""
    split = split_scheme_name_port(ident)
    if split is None:
        raise errors.bad_request(f'invalid service request "{ident}"')
    scheme, name, port_name = split
    if port_name.lstrip("+-").isdigit():  # strconv.ParseInt succeeds: a port number
        number = int(port_name)
        service = _get(store, registry, "services", ns, name)
        for service_port in (service.get("spec") or {}).get("ports") or ():
            if service_port.get("port") == number:
                port_name = str(service_port.get("name") or "")
                break
        else:
            raise StatusError(503, "ServiceUnavailable",
                              f'no service port {number} found for service "{name}"')
    endpoints = _get(store, registry, "endpoints", ns, name)
    subsets = endpoints.get("subsets") or []
    if not subsets:
        raise StatusError(503, "ServiceUnavailable",
                          f'no endpoints available for service "{name}"')
    seed = random.randrange(len(subsets))  # (a spread, not a secret)
    for i in range(len(subsets)):
        subset = subsets[(seed + i) % len(subsets)]
        addresses = subset.get("addresses") or []
        for subset_port in subset.get("ports") or ():
            if (subset_port.get("name") or "") != port_name or not addresses:
                continue
            start = random.randrange(len(addresses))
            for j in range(len(addresses)):
                address = addresses[(start + j) % len(addresses)]
                pod = _endpoint_pod(store, registry, ns, address)
                if pod is not None:
                    return Location(scheme, str(address.get("ip", "")),
                                    str(subset_port.get("port", "")),
                                    _pod_simulated(store, registry, pod))
    raise StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{ident}"')


def _endpoint_pod(store: Reader, registry: Registry, ns: str, address: Obj) -> Obj | None:
    """``isValidAddress``: the pod of the address's targetRef, in this namespace, with
    this IP; None when it is not one."""
    ref = address.get("targetRef") or {}
    if not ref or ref.get("namespace") != ns:
        return None
    pods = registry.require("", "v1", "pods")
    pod = store.get(pods.storage_key, ns, str(ref.get("name") or ""))
    if pod is None:
        return None
    ips = [p.get("ip") for p in (pod.get("status") or {}).get("podIPs") or ()]
    return pod if address.get("ip") in ips else None


def node_location(store: Reader, registry: Registry, ident: str) -> Location:
    """node/strategy.go ``ResourceLocation``: the kubelet, unless another port is asked."""
    split = split_scheme_name_port(ident)
    if split is None:
        raise errors.bad_request(f'invalid node request "{ident}"')
    scheme, name, port = split
    node, host, kubelet_port = podstreams.kubelet_address(store, registry, name)
    if not _global_unicast(host):
        # isProxyableHostname: an address (or a name resolving to one) not allowed
        raise errors.bad_request("address not allowed")
    runtime = ((node.get("status") or {}).get("nodeInfo") or {}).get(
        "containerRuntimeVersion") or ""
    simulated = (f'nothing listens there: the kubelet of node "{name}" is simulated'
                 if runtime.startswith(podstreams.SIMULATED_RUNTIME) else None)
    if not port or port == str(kubelet_port):
        # the kubelet's own transport; its scheme is the connection info's (https)
        return Location("https", host, str(kubelet_port), simulated)
    return Location(scheme, host, port, simulated)


def locate(store: Reader, registry: Registry, rt: ResourceType, ns: str,
           ident: str) -> Location:
    if rt.resource == "pods":
        return pod_location(store, registry, ns, ident)
    if rt.resource == "services":
        return service_location(store, registry, ns, ident)
    return node_location(store, registry, ident)


def _unreachable(location: Location, reason: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", "error trying to reach service: dial tcp "
                       f"{location.address}: {reason}")


async def connect(store: Reader, registry: Registry, rt: ResourceType, ns: str, ident: str,
                  request: Request) -> Response:
    """The answer to a ``<kind>/proxy`` request, or the StatusError kube-apiserver's."""
    location = locate(store, registry, rt, ns, ident)
    marker = f"/{rt.resource}/{ident}/proxy"
    subpath = request.path[request.path.find(marker) + len(marker):]
    if not subpath and request.method in ("GET", "HEAD"):
        query = request.raw_query.decode("latin-1")
        return Response(b"", 301, None,
                        {"location": f"{request.path}/" + (f"?{query}" if query else "")})
    if location.simulated is not None:
        raise _unreachable(location, location.simulated)
    if podstreams.is_upgrade_request(request) and location.scheme in ("", "http"):
        # tryUpgrade: a connection of its own, joined once the backend answers 101
        query = request.raw_query.decode("latin-1")
        target = quote(subpath or "/", safe=PATH_SAFE) + (f"?{query}" if query else "")
        return await podstreams.upgrade_proxy(location.host, int(location.port or 80),
                                              target, request)
    return await _forward(location, request, subpath or "/",
                          request.path[:len(request.path) - len(subpath)])


def rewrite_location(raw: str, backend: str, request_host: str, prepend: str) -> str:
    """transport.go ``rewriteURL`` for a redirect's ``Location``: one that stays on the
    backend (or names the API server) is sent back under the proxy's path ``prepend``;
    another host, or a path not from the root, is left as it is."""
    parts = urlsplit(raw)
    host, path = parts.netloc, parts.path
    if (host and host not in (backend, request_host)) or not path.startswith("/"):
        return raw
    # the transport's scheme and host are the server request URL's (empty): they replace
    # the redirect's, unless it names the API server itself
    scheme, netloc = (parts.scheme, host) if host == request_host else ("", "")
    if not path.startswith(prepend):
        joined = posixpath.normpath(f"{prepend}/{path}")
        path = joined + "/" if path.endswith("/") and joined != "/" else joined
    return urlunsplit((scheme, netloc, path, parts.query, parts.fragment))


async def _forward(location: Location, request: Request, subpath: str,
                   prepend: str) -> Response:
    import aiohttp
    from multidict import CIMultiDict
    from yarl import URL

    try:
        body = await request.body(MAX_PROXIED_BODY)
    except BodyTooLarge:
        raise errors.request_entity_too_large("the request body is too large") from None
    scheme = location.scheme or "http"
    headers = [(n, v) for n, v in request.raw_header_items()
               if n.lower() not in _NOT_FORWARDED and not n.lower().startswith("impersonate-")
               and n.lower() not in ("x-forwarded-uri", "x-forwarded-host",
                                     "x-forwarded-proto", "x-forwarded-for")]
    forwarded_for = request.header_values("x-forwarded-for")
    if request.remote_host:
        forwarded_for.append(request.remote_host)
    # (transport.go sets -Host and -Proto from the request URL's, which a server's request
    # does not have)
    headers.append(("X-Forwarded-Uri", request.path))
    if forwarded_for:
        headers.append(("X-Forwarded-For", ", ".join(forwarded_for)))
    query = request.raw_query.decode("latin-1")
    url = URL(f"{scheme}://{location.address}{quote(subpath, safe=PATH_SAFE)}"
              + (f"?{query}" if query else ""), encoded=True)
    tls: ssl.SSLContext | bool = False
    if scheme == "https":
        # the proxy transport does not verify what it reaches (CreateProxyTransport)
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    session = aiohttp.ClientSession(auto_decompress=False,
                                    skip_auto_headers=("Accept-Encoding", "User-Agent",
                                                       "Content-Type"))
    try:
        resp = await session.request(
            request.method, url, headers=CIMultiDict(headers), data=body or None,
            ssl=tls, allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S))
    except Exception as exc:  # the transport's every failure is its 503
        await session.close()
        text = go_error_text(exc, location.address)
        raise StatusError(503, "ServiceUnavailable",
                          f"error trying to reach service: {text}") from None

    async def chunks() -> AsyncIterator[bytes]:
        try:
            async for chunk in resp.content.iter_any():
                yield chunk
        except aiohttp.ClientError:
            pass  # the backend went away mid-answer: the answer ends
        finally:
            resp.release()
            await session.close()

    answer = StreamResponse(chunks(), resp.close, resp.status)
    answer.headers = [(name.lower(), value) for name, value in resp.headers.items()
                      if name.lower() not in _NOT_RETURNED]
    if "Location" in resp.headers:
        moved = rewrite_location(resp.headers["Location"], location.address,
                                 request.headers.get("host", ""), prepend)
        answer.set_header("location", moved)
    return answer
