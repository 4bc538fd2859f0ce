"""What the two descriptor generators share: the kubectl they read and the JSON they write.

``protobuf_descriptors.py`` (the built-in kinds' messages) and ``gnostic_descriptors.py``
(gnostic's OpenAPI v2 messages) both extract their table from the same kubectl 1.32 binary
and write it as compact JSON with one message per line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any


def default_kubectl() -> Path:
    """The kubectl 1.32 binary: ``kubectl.1.32`` beside the real kubectl, else kubectl itself."""
    found = shutil.which("kubectl")
    if not found:
        raise SystemExit("kubectl not found on PATH; pass --kubectl")
    real = Path(found).resolve()
    pinned = real.with_name("kubectl.1.32")
    return pinned if pinned.exists() else real


def kubectl_version(path: Path) -> str:
    """The ``gitVersion`` kubectl reports for itself."""
    out = subprocess.run([str(path), "version", "--client", "-o", "json"], check=True,
                         capture_output=True, text=True).stdout
    return str(json.loads(out)["clientVersion"]["gitVersion"])


def render(table: dict[str, Any]) -> str:
    """Compact JSON with one message per line, so that a regenerated table diffs readably."""
    def dump(v: Any) -> str:
        return json.dumps(v, separators=(",", ":"))

    head = {k: v for k, v in table.items() if k != "messages"}
    lines = [dump(head)[:-1] + ',"messages":{']
    items = list(table["messages"].items())
    for i, (name, fields) in enumerate(items):
        lines.append(f"{dump(name)}:{dump(fields)}" + ("," if i < len(items) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"
