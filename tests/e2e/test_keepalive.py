"""The fuzz tests' keep-alive client sends what httpx would have sent for the same request:
the same method, request target (httpx's URL parsing: percent-encoding, dot segments removed)
and headers, so that moving the fuzz off httpx changed none of the requests it makes."""

from __future__ import annotations

import ssl
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.e2e.keepalive import KeepAliveClient
from tests.e2e.test_properties import ACCEPTS, BODIES, CONTENT_TYPES, PATHS, QUERIES

BASE = "https://127.0.0.1:6443"
TOKEN = "Bearer abc"


# one client of each (an SSL context costs more than all the comparisons): only their
# request heads are computed, nothing is sent
HTTP = httpx.Client(base_url=BASE, headers={"Authorization": TOKEN})
OURS = KeepAliveClient(HTTP, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


Head = tuple[str, str, list[tuple[str, str]]]


def heads(method: str, url: str, body: bytes | None,
          headers: dict[str, str]) -> tuple[Head, Head]:
    """(httpx's method, target and headers, the keep-alive client's), headers sorted."""
    request = HTTP.build_request(method, url, content=body, headers=headers)
    theirs = (request.method, request.url.raw_path.decode("ascii"),
              sorted((k.lower(), v) for k, v in request.headers.multi_items()))
    ours = OURS.head(method, url, body, headers)
    return theirs, (ours[0], ours[1], sorted((k.lower(), v) for k, v in ours[2]))


@pytest.mark.parametrize(("method", "url", "body", "headers"), [
    ("GET", "/api/v1/namespaces/default/configmaps", None, {}),
    ("get", "/api/v1/../v1/./namespaces/a%2Fb/configmaps/%ZZ x", None, {}),
    ("POST", "/api/v1/namespaces", None, {}),
    ("PATCH", "/apis/apps/v1/namespaces/p/deployments/web", b"", {
        "Content-Type": "application/merge-patch+json"}),
    ("GET", "/api/v1/pods", b"", {"Accept": "application/yaml"}),
    ("PROPFIND", "/apis/x/", b'{"a": 1}', {"content-type": "text/plain", "accept": "*/*"}),
    ("DELETE", "/api/v1/namespaces/p/configmaps?" + urlencode({"q": b"\xed\xa0\x80"}),
     b"\x00", {}),
    ("GET", "/api/v1/namespaces/\u00fc/pods?labelSelector=a in (b,c)&x=%", None, {}),
])
def test_the_head_is_httpxs(method: str, url: str, body: bytes | None,
                            headers: dict[str, str]) -> None:
    theirs, ours = heads(method, url, body, headers)
    assert ours == theirs


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
                               "PROPFIND", "get"]),
       path=PATHS, query=QUERIES, body=BODIES, content_type=CONTENT_TYPES, accept=ACCEPTS)
def test_the_random_requests_heads_are_httpxs(method: str, path: str, query: dict[str, str],
                                              body: bytes | None, content_type: str,
                                              accept: str | None) -> None:
    url = path + ("?" + urlencode(query) if query else "")
    headers = {"Content-Type": content_type} if content_type else {}
    if accept:
        headers["Accept"] = accept
    theirs, ours = heads(method, url, body, headers)
    assert ours == theirs
