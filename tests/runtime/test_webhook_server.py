"""The webhook server: TLS from a certificate directory (rotated without restart) or
generated, routing, readiness and the controller_runtime_webhook_* metrics."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from setpoint.runtime import Webhook, WebhookServer
from setpoint.runtime._webhook.certs import generate_serving_certificate
from tests.runtime.test_webhook_support import Memcached, admit, memcached, post, review, running

VALIDATE = "/validate-cache-example-com-v1-memcached"


def admitting() -> Webhook[Memcached]:
    hooks = Webhook.for_(Memcached)
    hooks.validate(lambda ctx, mc, old, op: None)
    return hooks


def write_certs(directory: Path) -> bytes:
    made = generate_serving_certificate(["127.0.0.1", "localhost"])
    (directory / "tls.crt").write_bytes(made.cert_pem)
    (directory / "tls.key").write_bytes(made.key_pem)
    return made.ca_pem


async def handshake(port: int, ca_pem: bytes) -> bool:
    """Whether a TLS client trusting only ``ca_pem`` accepts the server's certificate."""
    tls = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    except ssl.SSLCertVerificationError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


async def test_serves_the_certificate_found_in_the_cert_dir(tmp_path: Path) -> None:
    ca = write_certs(tmp_path)
    (tmp_path / "ca.crt").write_bytes(ca)
    async with running(admitting(), cert_dir=tmp_path, generate_certs=False) as server:
        assert server.ca_pem == ca
        assert not server.certs.generated
        response = await admit(server, VALIDATE, review("CREATE", memcached()))
        assert response["allowed"] is True


async def test_refuses_to_start_without_certificates_unless_allowed_to_make_them(
        tmp_path: Path) -> None:
    server = WebhookServer([admitting()], port=0, cert_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"tls\.crt"):
        await server.start()
    assert server.check() == "webhook server is not serving"
    async with running(admitting(), cert_dir=tmp_path) as generated:
        assert generated.certs.generated
        assert generated.ca_pem is not None and b"BEGIN CERTIFICATE" in generated.ca_pem
    assert not (tmp_path / "tls.crt").exists()  # generated certificates stay in memory


async def test_a_rotated_certificate_is_served_to_new_connections(tmp_path: Path) -> None:
    first = write_certs(tmp_path)
    async with running(admitting(), cert_dir=tmp_path, generate_certs=False,
                       reload_interval=3600) as server:
        assert server.port is not None
        assert await handshake(server.port, first)
        assert server.certs.reload_if_changed() is False
        second = write_certs(tmp_path)
        later = os.stat(tmp_path / "tls.crt").st_mtime + 10
        for name in ("tls.crt", "tls.key"):
            os.utime(tmp_path / name, (later, later))
        assert server.certs.reload_if_changed() is True
        assert await handshake(server.port, second)
        assert not await handshake(server.port, first)


async def test_webhooks_registered_after_start_are_served_and_paths_are_unique() -> None:
    async with running() as server:
        assert server.check() is None
        server.register(admitting())
        with pytest.raises(ValueError, match="already served"):
            server.register(admitting())
        response = await admit(server, VALIDATE, review("CREATE", memcached()))
        assert response["allowed"] is True
    assert server.check() == "webhook server is not serving"


def sample(server: WebhookServer, name: str, **labels: str) -> float:
    value = server.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_requests_are_counted_by_path_and_code_with_latency_and_in_flight() -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    hooks = Webhook.for_(Memcached)

    @hooks.validate
    async def validate(ctx: Any, mc: Memcached, old: Any, op: str) -> None:
        if mc.spec.image == "slow":
            entered.set()
            await release.wait()

    async with running(hooks) as server:
        await admit(server, VALIDATE, review("CREATE", memcached()))
        status, _ = await post(server, VALIDATE, b"nonsense")
        assert status == 400
        slow = asyncio.create_task(admit(server, VALIDATE,
                                         review("CREATE", memcached(image="slow"))))
        await entered.wait()
        assert sample(server, "controller_runtime_webhook_requests_in_flight",
                      webhook=VALIDATE) == 1
        release.set()
        await slow
        text = server.metrics.exposition().decode()
    assert sample(server, "controller_runtime_webhook_requests_total",
                  webhook=VALIDATE, code="200") == 2
    assert sample(server, "controller_runtime_webhook_requests_total",
                  webhook=VALIDATE, code="400") == 1
    assert sample(server, "controller_runtime_webhook_latency_seconds_count",
                  webhook=VALIDATE) == 3
    assert sample(server, "controller_runtime_webhook_requests_in_flight",
                  webhook=VALIDATE) == 0
    assert 'controller_runtime_webhook_latency_seconds_bucket{le="0.005",webhook=' in text


async def test_plain_http_is_not_answered() -> None:
    async with running(admitting()) as server, aiohttp.ClientSession() as session:
        url = server.url.replace("https://", "http://") + VALIDATE
        with pytest.raises(aiohttp.ClientError):
            async with session.post(url, data=b"{}") as resp:
                await resp.read()
