"""Duplicate mapping keys in a YAML (or JSON, which is YAML) body, as go-yaml v2 reports them.

sigs.k8s.io/yaml's ``UnmarshalStrict`` converts YAML to JSON with go-yaml v2's strict mode,
whose ``setMapIndex`` records ``line N: key "k" already set in map`` for each repeated key
(N: the line of the repeated key's value, 1-based), in the order the decoder completes them:
a value's own duplicates before its key's. The apiserver answers them for server-side apply
(endpoints/handlers/patch.go ``applyPatcher``) and for YAML bodies of create and update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.machinery.gofmt import go_quote

if TYPE_CHECKING:
    import yaml

YAML_ERRORS_PREFIX = "yaml: unmarshal errors:\n"


def duplicate_key_errors(raw: bytes) -> list[str]:
    """go-yaml's strict-mode messages for ``raw``'s repeated keys (none when it cannot be
    composed: the ordinary decoder has answered that already)."""
    import yaml  # on first use: not loaded before the first request (start-up time)

    text = raw.decode("utf-8", "replace")
    if text.lstrip()[:1] in ("{", "["):
        # JSON may be indented with tabs, which YAML's scanner refuses outside flow context;
        # in valid JSON a tab is whitespace only (raw tabs are not allowed in strings)
        text = text.replace("\t", " ")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    out: list[str] = []
    if node is not None:
        _walk(node, out, set())
    return out


def _walk(node: yaml.Node, out: list[str], seen_nodes: set[int]) -> None:
    import yaml

    if id(node) in seen_nodes:  # an alias: its duplicates were reported where it was defined
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk(item, out, seen_nodes)
    elif isinstance(node, yaml.MappingNode):
        keys: set[tuple[str, str]] = set()
        for key, value in node.value:
            _walk(value, out, seen_nodes)
            if not isinstance(key, yaml.ScalarNode):
                continue
            ident = (key.tag, key.value)
            if ident in keys:
                out.append(f"line {value.start_mark.line + 1}: key {_go_quoted(key)} "
                           "already set in map")
            keys.add(ident)


def _go_quoted(key: yaml.ScalarNode) -> str:
    """The key as Go's ``%#v`` prints it: strings quoted, numbers and booleans bare."""
    if key.tag.endswith((":int", ":float", ":bool")):
        return str(key.value)
    return go_quote(key.value)
