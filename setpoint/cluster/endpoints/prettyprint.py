"""The pretty serializer: which answers kube-apiserver writes as indented JSON.

k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate.go ``NegotiateOutputMediaType``
swaps the negotiated serializer for its ``PrettySerializer`` when the chosen Accept clause
says ``pretty=1`` (``acceptMediaTypeOptions``) or ``isPrettyPrint`` holds for the request.
Only JSON has a pretty serializer (apimachinery runtime/serializer/codec_factory.go, and the
CRD handler's in customresource_handler.go), which writes ``json.MarshalIndent(obj, "", "  ")``
(runtime/serializer/json/json.go ``doEncode``): two spaces, no newline at the end. Every
answer ``responsewriters.WriteObjectNegotiated`` writes takes it: an object, a list, a
Table, a write's answer, a Status error, a discovery document. A watch never does: its
stream serializer and the embedded objects' are the negotiated ones
(handlers/watch.go ``serveWatchHandler``: ``NegotiateOutputMediaTypeStream``).
"""

from __future__ import annotations

from setpoint.cluster.endpoints.http import Request, Response, StreamResponse
from setpoint.machinery.gojson import indented

# isPrettyPrint's "human" clients: browsers and the command-line HTTP tools (a prefix,
# case and all: "curl/8.5.0", "Wget/1.21", "Mozilla/5.0 (X11; ...)")
_HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")

# strconv.ParseBool's words; any other value is its error, which isPrettyPrint takes as false
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def is_pretty_print(request: Request) -> bool:
    """negotiate.go ``isPrettyPrint``: the ``pretty`` query parameter when it has a value
    (true by ParseBool; a value it refuses is false, not the User-Agent's say), else
    whether the User-Agent starts as a browser's, curl's or Wget's. The parameter is read
    only when the raw query holds the word (an escaped ``pr%65tty`` is not looked for)."""
    if b"pretty" in request.raw_query:
        value = request.query.get("pretty", "")
        if value:
            return value in _TRUE
    return request.headers.get("user-agent", "").startswith(_HUMAN_AGENTS)


def wants_pretty(response: Response, request: Request) -> bool:
    """Whether ``response`` (an API object as SerializeObject writes it) goes through the
    pretty serializer: it is JSON and its Accept clause or the request asks."""
    if not response.serialized or _media_type(response) != "application/json":
        return False
    return response.pretty or is_pretty_print(request)


async def pretty_printed(response: Response) -> Response:
    """``response`` indented as json.MarshalIndent writes it (a list streamed in pieces is
    held whole first: indenting follows the nesting across any piece's end)."""
    if isinstance(response, StreamResponse):
        body = b"".join([chunk async for chunk in response.chunks])
        whole = Response(indented(body), response.status, serialized=True)
        whole.headers = response.headers
        return whole
    response.body = indented(response.body)
    return response


def _media_type(response: Response) -> str:
    for name, value in response.headers:
        if name == "content-type":
            return value.split(";", 1)[0]
    return ""
