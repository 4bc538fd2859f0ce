"""Helpers of the webhook tests (no tests here): a typed kind, AdmissionReviews as the
kube-apiserver writes them, and a client that POSTs them to a running WebhookServer over
HTTPS, trusting only the server's CA."""

from __future__ import annotations

import base64
import contextlib
import ssl
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

import aiohttp
import orjson
from pydantic import Field

from setpoint.resources import CustomResource, Model
from setpoint.runtime import WebhookServer


class MemcachedSpec(Model):
    replicas: int = Field(3, ge=1)
    topology: Literal["sharded", "replicated"] | None = None
    image: str | None = None


class Memcached(CustomResource, group="cache.example.com", version="v1"):
    """A typed kind to admit."""

    spec: MemcachedSpec = Field(default_factory=MemcachedSpec)


def memcached(name: str = "m", **spec: Any) -> dict[str, Any]:
    """A Memcached as the API server stores it (server-set metadata included)."""
    return {
        "apiVersion": "cache.example.com/v1", "kind": "Memcached",
        "metadata": {
            "name": name, "namespace": "default", "uid": "6f1c2d7e-0000-4000-8000-000000000001",
            "resourceVersion": "42", "generation": 1,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "cache"},
            "managedFields": [{
                "manager": "kubectl", "operation": "Apply",
                "apiVersion": "cache.example.com/v1", "time": "2024-05-01T10:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
        },
        "spec": spec,
    }


def review(operation: str, obj: dict[str, Any] | None = None,
           old: dict[str, Any] | None = None, *,
           gvk: tuple[str, str, str] = ("cache.example.com", "v1", "Memcached"),
           resource: str = "memcacheds", dry_run: bool = False, user: str = "alice",
           api_version: str = "admission.k8s.io/v1") -> dict[str, Any]:
    """An AdmissionReview request as the kube-apiserver sends it."""
    group, version, kind = gvk
    source = obj or old or {}
    meta = source.get("metadata") or {}
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions",
                    "DELETE": "DeleteOptions"}.get(operation, "CreateOptions")
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": user, "uid": "u-1",
                     "groups": ["system:masters", "system:authenticated"]},
        "object": obj, "oldObject": old, "dryRun": dry_run,
        "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"},
    }
    return {"kind": "AdmissionReview", "apiVersion": api_version, "request": request}


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch a review response carries (empty when none)."""
    if "patch" not in response:
        assert "patchType" not in response
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


@contextlib.asynccontextmanager
async def running(*hooks: Any, **options: Any) -> AsyncIterator[WebhookServer]:
    """A started WebhookServer on a free port with a generated certificate."""
    options.setdefault("port", 0)
    options.setdefault("generate_certs", True)
    server = WebhookServer(hooks, **options)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def post(server: WebhookServer, path: str, body: dict[str, Any] | bytes, *,
               content_type: str = "application/json",
               method: str = "POST") -> tuple[int, Any]:
    """POST ``body`` over HTTPS as the API server would; the status and decoded JSON (or
    text when the answer is not JSON)."""
    assert server.ca_pem is not None
    tls = ssl.create_default_context(cadata=server.ca_pem.decode())
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with aiohttp.ClientSession() as session, session.request(
            method, server.url + path, data=data, headers={"Content-Type": content_type},
            ssl=tls) as resp:
        text = await resp.text()
        try:
            return resp.status, orjson.loads(text)
        except orjson.JSONDecodeError:
            return resp.status, text


async def admit(server: WebhookServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a review that must be read, and return its ``response`` (uid checked)."""
    status, answer = await post(server, path, body)
    assert status == 200, answer
    assert answer["kind"] == "AdmissionReview"
    assert answer["apiVersion"] == body["apiVersion"]
    response: dict[str, Any] = answer["response"]
    assert response["uid"] == body["request"]["uid"]
    return response
