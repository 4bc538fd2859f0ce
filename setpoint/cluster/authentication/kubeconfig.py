"""The kubeconfig a started cluster writes for kubectl and clients.

It is YAML as PyYAML's ``safe_dump`` writes it. Every start writes one before it serves
(``cluster up`` a second one before it says ready), and importing PyYAML costs about as much
CPU as the rest of ``serve()`` (docs/benchmarks.md, Start-up): so the text is written here
directly when every value is a string PyYAML would write plain, as it is (:func:`_plain`), and
by PyYAML otherwise. Both give the same bytes (tests/cluster/test_kubeconfig_file.py).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from setpoint.cluster.storage.privatefiles import private_directory, write_private

CONTEXT = "setpoint"

# What PyYAML writes as a plain scalar in block context (its Emitter.analyze_scalar) and
# reads back as a string (its Resolver): printable ASCII without spaces, "#", quotes, flow
# or other indicators, not ending with ":" (a mapping indicator there)...
_PLAIN_CHARS = re.compile(r"[A-Za-z0-9_./:+=\-]*[A-Za-z0-9_./+=\-]")
# ...and not read as another type: starting with a letter, only YAML 1.1's booleans and
# nulls resolve to something else (numbers and timestamps start with a digit, a sign or
# "."), and a value holding a letter that none of the resolvers' patterns contains is a
# string whatever it starts with (the patterns match whole values)
_NOT_STRINGS = {"yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false",
                "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null",
                "NULL"}
_NO_RESOLVER_LETTER = re.compile(r"[ghjkmpqvwGHJKMPQVW]")


def _plain(value: str) -> bool:
    """Whether PyYAML's ``safe_dump`` writes ``value`` as it is (no quotes)."""
    if _PLAIN_CHARS.fullmatch(value) is None:
        return False
    if value.startswith(("---", "...")):
        return False  # analyze_scalar: a document marker's start is always quoted
    if value[0].isalpha():
        return value not in _NOT_STRINGS
    return _NO_RESOLVER_LETTER.search(value) is not None


def _config(server: str, ca_data: str, token: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server,
            "certificate-authority-data": ca_data,
        }}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {
            "cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def render(server: str, ca_pem: bytes, token: str, namespace: str = "default") -> str:
    ca_data = base64.b64encode(ca_pem).decode()
    if not all(_plain(value) for value in (server, ca_data, token, namespace)):
        import yaml  # a value PyYAML would quote: let it

        return yaml.safe_dump(_config(server, ca_data, token, namespace), sort_keys=False)
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {CONTEXT}\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority-data: {ca_data}\n"
        "users:\n"
        f"- name: {CONTEXT}\n"
        "  user:\n"
        f"    token: {token}\n"
        "contexts:\n"
        f"- name: {CONTEXT}\n"
        "  context:\n"
        f"    cluster: {CONTEXT}\n"
        f"    user: {CONTEXT}\n"
        f"    namespace: {namespace}\n"
        f"current-context: {CONTEXT}\n"
        "preferences: {}\n"
    )


def write_json(path: Path, server: str, ca_pem: bytes, token: str) -> None:
    """The same kubeconfig as JSON (which YAML contains), 0600, for a program of ours that
    reads it with ``setpoint.client``, which reads JSON without loading PyYAML: ``cluster
    up``'s workloads' process, whose start is the critical path (docs/benchmarks.md,
    Start-up, eighteenth pass)."""
    import orjson

    config = _config(server, base64.b64encode(ca_pem).decode(), token, "default")
    private_directory(path.parent, tighten=False)
    write_private(path, orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n")


def write(path: Path, server: str, ca_pem: bytes, token: str) -> None:
    """Write a kubeconfig 0600 (it carries the admin token); a missing directory is made
    0700, an existing one (``~/.kube``) is left as it is."""
    private_directory(path.parent, tighten=False)
    write_private(path, render(server, ca_pem, token))
