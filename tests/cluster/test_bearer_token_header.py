"""The ``Authorization`` header is read as kube-apiserver's bearer token authenticator reads
it (k8s.io/apiserver pkg/authentication/request/bearertoken/bearertoken.go
``AuthenticateRequest``): the scheme in any case, the token the second of at most three parts
split on single spaces. An extra space before the token names an empty token: no credentials
(401 here, where anonymous requests are refused) and a warning, which the 401 carries since
the warning recorder wraps authentication (k8s.io/apiserver pkg/server/config.go
``DefaultBuildHandlerChain``)."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from setpoint.cluster import RunningCluster

EXTRA_SPACE = ('299 - "the provided Authorization header contains extra space before the '
               'bearer token, and is ignored"')


async def _get(cluster: RunningCluster, authorization: bytes) -> tuple[int, list[bytes]]:
    """The status and Warning headers of a GET sent with exactly this header (raw, since
    HTTP clients tidy the value)."""
    tls = ssl.create_default_context(cafile=str(cluster.ca_file))
    reader, writer = await asyncio.open_connection("127.0.0.1", cluster.port, ssl=tls,
                                                   server_hostname="127.0.0.1")
    try:
        writer.write(b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: " + authorization + b"\r\nConnection: close\r\n\r\n")
        head = (await reader.read()).split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    finally:
        writer.close()
    warnings = [line.split(b":", 1)[1].strip() for line in head
                if line.lower().startswith(b"warning:")]
    return int(head[0].split()[1]), warnings


@pytest.mark.parametrize("template", [b"bearer %s", b"BEARER %s", b"Bearer %s trailing words",
                                      b"  Bearer %s  "])
async def test_the_scheme_is_any_case_and_words_after_the_token_are_ignored(
        cluster: RunningCluster, template: bytes) -> None:
    assert await _get(cluster, template % cluster.token.encode()) == (200, [])


async def test_an_extra_space_before_the_token_hides_it_with_a_warning(
        cluster: RunningCluster) -> None:
    status, warnings = await _get(cluster, b"Bearer  " + cluster.token.encode())
    assert (status, warnings) == (401, [EXTRA_SPACE.encode()])
    # a token glued to the scheme, or no token at all, is no bearer token: no warning
    assert await _get(cluster, b"Bearer" + cluster.token.encode()) == (401, [])
    assert await _get(cluster, b"Bearer ") == (401, [])
