"""A named GET answered from the stored bytes keeps its connection's decisions
(``setpoint/cluster/endpoints/storedgets.py``), and answers exactly as the whole chain would:
the same bytes and headers as a fresh connection's, counted in ``apiserver_request_total``,
and anew as soon as what a decision was made from changes on the same connection: a
FlowSchema (k8s.io/apiserver pkg/util/flowcontrol/rule.go: the match is read from the
FlowSchemas in force), a RoleBinding (plugin/pkg/auth/authorizer/rbac/rbac.go: RBAC judges
every request from the bindings in force; kube-apiserver keeps no decision cache for it), an
object deleted (a 404 Status)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from setpoint.cluster import RunningCluster, serve

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
Answer = tuple[int, dict[str, str], bytes]


class Connection:
    """One keep-alive HTTP/1.1 connection over TLS: every request goes on it, in turn."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 host: str, headers: dict[str, str]) -> None:
        self.reader, self.writer, self.host, self.headers = reader, writer, host, headers

    @classmethod
    async def open(cls, cluster: RunningCluster, context: ssl.SSLContext,
                   headers: dict[str, str]) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", cluster.port,
                                                       ssl=context)
        return cls(reader, writer, f"127.0.0.1:{cluster.port}", headers)

    async def call(self, method: str, path: str, body: object = None) -> Answer:
        data = b"" if body is None else orjson.dumps(body)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}",
                 *(f"{k}: {v}" for k, v in self.headers.items()),
                 f"Content-Length: {len(data)}"]
        if body is not None:
            lines.append("Content-Type: application/json")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *header_lines = head.rstrip("\r\n").split("\r\n")
        headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers.setdefault(name.lower(), value.strip())
        assert "close" not in headers.get("connection", ""), head
        return (int(status_line.split()[1]), headers,
                await self.reader.readexactly(int(headers["content-length"])))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[RunningCluster]:
    async with serve(state_dir=tmp_path / "state") as running:
        yield running


def _context(cluster: RunningCluster) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cluster.ca_file))


async def _admin(cluster: RunningCluster) -> Connection:
    return await Connection.open(cluster, _context(cluster),
                                 {"Authorization": f"Bearer {cluster.token}"})


def _without_date(answer: Answer) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer without what differs on every answer: its date, and its Audit-Id (a new
    UUID each, audit_init.go), of which only the presence is kept."""
    status, headers, body = answer
    return status, [(k, v if k != "audit-id" else "<uuid>") for k, v in headers.items()
                    if k != "date"], body


async def _gets_counted(admin: Connection) -> float:
    status, _, body = await admin.call("GET", "/metrics")
    assert status == 200
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(body.decode())
               for s in f.samples if s.name == "apiserver_request_total"
               and s.labels["resource"] == "configmaps" and s.labels["verb"] == "GET"
               and s.labels["code"] == "200")


async def test_gets_on_one_connection_answer_as_a_fresh_connection_and_are_counted(
        cluster: RunningCluster) -> None:
    """Each GET on a kept connection is the bytes and headers a new connection is
    answered (content type, the PF UIDs, Cache-Control), each is counted, and a deleted
    object is the NotFound Status with the same headers as on a new connection."""
    admin = await _admin(cluster)
    for name in ("a", "b"):
        status, _, _ = await admin.call("POST", CONFIGMAPS, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": name}})
        assert status == 201
    before = await _gets_counted(admin)
    kept = [await admin.call("GET", f"{CONFIGMAPS}/{name}") for name in "abab"]
    fresh = []
    for name in "ab":
        once = await _admin(cluster)
        fresh.append(await once.call("GET", f"{CONFIGMAPS}/{name}"))
        await once.close()
    assert [_without_date(a) for a in kept] == [_without_date(a) for a in fresh * 2]
    assert kept[0][0] == 200 and orjson.loads(kept[0][2])["data"] == {"k": "a"}
    assert {"content-type", "cache-control", "x-kubernetes-pf-flowschema-uid"} <= \
        set(kept[0][1])
    assert await _gets_counted(admin) - before == 6

    assert (await admin.call("DELETE", f"{CONFIGMAPS}/a"))[0] == 200
    gone = await admin.call("GET", f"{CONFIGMAPS}/a")
    once = await _admin(cluster)
    assert _without_date(gone) == _without_date(await once.call("GET", f"{CONFIGMAPS}/a"))
    assert gone[0] == 404 and orjson.loads(gone[2])["reason"] == "NotFound"
    await once.close()
    await admin.close()


def _client_certificate(state: Path, tmp: Path, user: str, group: str) -> ssl.SSLContext:
    """A client certificate for ``user`` in ``group`` from the cluster's own CA, loaded
    into a context that trusts the cluster."""
    ca_key = serialization.load_pem_private_key((state / "ca.key").read_bytes(), None)
    ca = x509.load_pem_x509_certificate((state / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user),
                                     x509.NameAttribute(NameOID.ORGANIZATION_NAME, group)]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    cert_file, key_file = tmp / "client.crt", tmp / "client.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(cafile=str(state / "ca.crt"))
    context.load_cert_chain(cert_file, key_file)
    return context


async def _reader(cluster: RunningCluster, tmp_path: Path, admin: Connection) -> Connection:
    """A connection of user ``rita`` (group ``readers``, by a client certificate: x509.go
    reads CN and O), who may get the ConfigMap ``r`` through a RoleBinding."""
    for path, obj in (
            (CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r"}}),
            (f"{RBAC}/namespaces/default/roles", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "cm-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                           "verbs": ["get"]}]}),
            (f"{RBAC}/namespaces/default/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "cm-reader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": "cm-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                              "name": "readers"}]})):
        status, _, body = await admin.call("POST", path, obj)
        assert status == 201, body
    return await Connection.open(
        cluster, _client_certificate(tmp_path / "state", tmp_path, "rita", "readers"), {})


async def test_a_role_binding_deleted_between_gets_refuses_the_next(
        cluster: RunningCluster, tmp_path: Path) -> None:
    """rbac.go judges each request from the bindings in force: a certificate's user reads
    a ConfigMap through a RoleBinding on a kept connection, and once the binding is
    deleted the next GET on it is a 403 (classified by PF first: it carries the
    headers)."""
    admin = await _admin(cluster)
    reader = await _reader(cluster, tmp_path, admin)
    for _ in range(2):
        status, _, body = await reader.call("GET", f"{CONFIGMAPS}/r")
        assert status == 200, body
    assert (await admin.call("DELETE", f"{RBAC}/namespaces/default/rolebindings/cm-reader"
                             ))[0] == 200
    status, headers, body = await reader.call("GET", f"{CONFIGMAPS}/r")
    assert status == 403, body
    assert orjson.loads(body)["message"] == (
        'configmaps "r" is forbidden: User "rita" cannot get resource "configmaps" in API '
        'group "" in the namespace "default"')
    assert "x-kubernetes-pf-flowschema-uid" in headers
    await reader.close()
    await admin.close()


async def test_a_flow_schema_written_between_gets_classifies_the_next(
        cluster: RunningCluster, tmp_path: Path) -> None:
    """rule.go over the FlowSchemas in force: a schema for user ``rita`` written between
    two of her GETs on one connection takes the second from global-default, and its
    deletion gives global-default back."""
    admin = await _admin(cluster)
    reader = await _reader(cluster, tmp_path, admin)
    status, first, _ = await reader.call("GET", f"{CONFIGMAPS}/r")
    assert status == 200
    status, _, body = await admin.call("POST", f"{FC}/flowschemas", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "rita-first"},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                 "matchingPrecedence": 50,
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": "rita"}}],
                            "resourceRules": [{"verbs": ["get"], "apiGroups": [""],
                                               "resources": ["configmaps"],
                                               "namespaces": ["*"]}]}]}})
    assert status == 201, body
    uid = orjson.loads(body)["metadata"]["uid"]
    status, second, _ = await reader.call("GET", f"{CONFIGMAPS}/r")
    assert status == 200
    assert second["x-kubernetes-pf-flowschema-uid"] == uid != \
        first["x-kubernetes-pf-flowschema-uid"]
    assert (await admin.call("DELETE", f"{FC}/flowschemas/rita-first"))[0] == 200
    status, third, _ = await reader.call("GET", f"{CONFIGMAPS}/r")
    assert third["x-kubernetes-pf-flowschema-uid"] == first["x-kubernetes-pf-flowschema-uid"]
    await reader.close()
    await admin.close()


async def _pipelined(connection: Connection, paths: list[str],
                     headers: dict[str, str] | None = None) -> list[Answer]:
    """GETs of ``paths`` written in one write on ``connection`` (HTTP/1.1 pipelining),
    their answers read in turn."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    common = "".join(f"{k}: {v}\r\n" for k, v in connection.headers.items())
    connection.writer.write(b"".join(
        f"GET {path} HTTP/1.1\r\nHost: {connection.host}\r\n{common}{extra}\r\n".encode()
        for path in paths))
    answers = []
    for _ in paths:
        head = (await connection.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *lines = head.rstrip("\r\n").split("\r\n")
        got = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        answers.append((int(status_line.split()[1]), got,
                        await connection.reader.readexactly(int(got["content-length"]))))
    return answers


async def test_gets_answered_at_once_are_the_chains_answers(
        cluster: RunningCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Remembered GETs pipelined on one connection are answered by the HTTP layer at once
    (``Handler.answer_at_once``, no task each): the bytes and headers the whole chain
    gives on a fresh connection, in the order asked (a missing object's 404 among them),
    each counted, each with an Audit-Id of its own (audit_init.go: a new UUID unless the
    client sent one, which is echoed), and RBAC still judges each of a certificate's
    user's GETs (a RoleBinding deleted refuses the next batch)."""
    from setpoint.cluster.endpoints.storedgets import StoredGets

    at_once: list[str] = []
    answer_at_once = StoredGets.answer_at_once

    def recorded(self: StoredGets, scope: dict[str, object]) -> object:
        response = answer_at_once(self, scope)
        if response is not None:
            at_once.append(str(scope["path"]))
        return response

    monkeypatch.setattr(StoredGets, "answer_at_once", recorded)
    admin = await _admin(cluster)
    for name in ("a", "b"):
        assert (await admin.call("POST", CONFIGMAPS, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": name}}))[0] == 201
    reader = await _reader(cluster, tmp_path, admin)
    before = await _gets_counted(admin)
    paths = [f"{CONFIGMAPS}/{name}" for name in ("a", "b", "gone", "a")]
    await _pipelined(admin, paths[:1])  # (remembered for the connection: the chain's)
    kept = await _pipelined(admin, paths)
    # (the last one waits behind the 404, which the chain serves in a task)
    assert at_once == paths[:2]
    fresh = []
    for path in paths:
        once = await _admin(cluster)
        fresh.append(await once.call("GET", path))
        await once.close()
    assert [_without_date(a) for a in kept] == [_without_date(a) for a in fresh]
    assert [a[0] for a in kept] == [200, 200, 404, 200]
    ids = [a[1]["audit-id"] for a in kept + fresh]
    assert len(set(ids)) == len(ids)
    assert await _gets_counted(admin) - before == 1 + 3 + 3

    at_once.clear()
    echoed = await _pipelined(admin, paths[:2], {"Audit-ID": "mine"})
    echoed += await _pipelined(admin, paths[:2], {"Audit-ID": "mine"})
    assert [a[1]["audit-id"] for a in echoed] == ["mine"] * 4 and len(at_once) >= 2

    at_once.clear()
    r = f"{CONFIGMAPS}/r"
    assert [a[0] for a in await _pipelined(reader, [r])] == [200]  # (the chain's)
    assert [a[0] for a in await _pipelined(reader, [r, r])] == [200, 200]
    assert at_once == [r, r]
    assert (await admin.call("DELETE", f"{RBAC}/namespaces/default/rolebindings/cm-reader"
                             ))[0] == 200
    refused = await _pipelined(reader, [r, r])
    assert [a[0] for a in refused] == [403, 403]
    assert at_once == [r, r]
    await reader.close()
    await admin.close()
