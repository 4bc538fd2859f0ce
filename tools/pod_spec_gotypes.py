"""Write setpoint/cluster/registry/podspec_gotypes.json: the Go struct of every type a PodSpec
reaches, from k8s.io/api v0.32.0 core/v1 types.go (its Go field names, JSON names and types
in declaration order), for the go-cmp diff ValidatePodUpdate quotes
(setpoint/cluster/registry/podspecdiff.py, which makes PodSpec and PodSecurityContext the
internal core types they are).

Usage: python tools/pod_spec_gotypes.py [/path/to/k8s.io/api]  (default /tmp/gosrc/api)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.S | re.M)
_NAMED = re.compile(r"^type (\w+) (string|int32|int64|bool)$", re.M)
_OUT = Path(__file__).resolve().parent.parent / "setpoint/cluster/registry/podspec_gotypes.json"


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/gosrc/api")
    text = (root / "core/v1/types.go").read_text()
    structs: dict[str, list[list[str]]] = {}
    for name, body in _STRUCT.findall(text):
        fields = []
        for line in body.splitlines():
            m = re.match(r"^\t(\w+)(?:\s+([\w.*\[\]]+))?\s+`json:\"([^\"]*)\"", line)
            if not m:
                continue
            go_name, go_type, tag = m.groups()
            json_name = tag.split(",")[0]
            if go_type is None:  # an embedded struct: its name is its type
                go_type = go_name
            fields.append([go_name, json_name, go_type, "inline" if ",inline" in tag else ""])
        structs[name] = fields
    named = dict(_NAMED.findall(text))
    reachable: dict[str, list[list[str]]] = {}
    todo = ["PodSpec", "PodSecurityContext", "ResourceRequirements"]
    while todo:
        name = todo.pop()
        if name in reachable or name not in structs:
            continue
        reachable[name] = structs[name]
        for _, _, go_type, _ in structs[name]:
            base = re.sub(r"^(\*|\[\])+", "", go_type)
            if base.startswith("map["):
                base = base.split("]", 1)[1]
            base = re.sub(r"^(\*|\[\])+", "", base)
            todo.append(base)
    _OUT.write_text(json.dumps({"source": "k8s.io/api v0.32.0 core/v1/types.go",
                                "structs": reachable, "named": named},
                               indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
