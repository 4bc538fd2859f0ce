"""The kubeconfig a started cluster writes for kubectl and clients."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from setpoint.cluster.storage.privatefiles import private_directory, write_private

CONTEXT = "setpoint"


def render(server: str, ca_pem: bytes, token: str, namespace: str = "default") -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca_pem).decode(),
        }}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {
            "cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write(path: Path, server: str, ca_pem: bytes, token: str) -> None:
    """Write a kubeconfig 0600 (it carries the admin token); a missing directory is made
    0700, an existing one (``~/.kube``) is left as it is."""
    private_directory(path.parent, tighten=False)
    write_private(path, render(server, ca_pem, token))
