"""Limits on what a request body may decode into: nesting depth and YAML alias expansion.

A small body must not decode into a large or deep value. The apiserver's decoders carry two
such limits:

- nesting depth: Go's ``encoding/json`` scanner (``maxNestingDepth``, vendored by
  sigs.k8s.io/json) fails with ``invalid character '{' exceeded max depth``, and go-yaml
  (sigs.k8s.io/yaml/goyaml.v2, ``scannerc.go``: ``max_flow_level``/``max_indents``) with
  ``exceeded max depth of 10000``. Go's limit is 10000; this server's objects pass through
  recursive Python code (decoding, validation, managed fields) and orjson, which refuses to
  encode beyond 254 levels, so the limit here is ``MAX_DEPTH``, low enough that a list, a
  Table or a watch event wrapping the deepest accepted object still encodes. The wording is
  Go's, with this limit.
- alias expansion ("billion laughs"): go-yaml v2's ``decode.go`` counts every node it
  decodes and those decoded through an alias, and fails with ``document contains excessive
  aliasing`` once more than 100 aliased and 1000 total decodes have happened and the aliased
  share passes ``allowedAliasRatio`` (99% up to 400,000 decodes, falling to 10% at
  4,000,000). The same count runs here over the YAML event stream, without expanding
  anything, before the document is composed.
- an alias inside the node its anchor names (``&a [*a]``), which PyYAML would compose into a
  value that contains itself: go-yaml v2's ``decoder.alias`` fails with ``anchor 'a' value
  contains itself``.
- alias expansion in bytes: the ratio counts nodes, so a few aliases of one large scalar
  pass it and still make a document far larger than its body (999 aliases of a 3 KiB string
  are 3 MiB; of a 1 MiB string, 1 GiB once encoded). The text the aliases expand to is
  counted on the same events: beyond ``MAX_EXPANDED_BYTES`` (the body limit, which a
  document without aliases cannot pass) the document could never be stored, and is refused
  as the store refuses it, before anything expands it.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

import orjson

MAX_DEPTH = 200
# kube-apiserver's maxRequestBodyBytes (k8s.io/apiserver/pkg/server/config.go)
MAX_EXPANDED_BYTES = 3 * 1024 * 1024

# the JSON strings of a body (which may hold brackets), unrolled so that a long string
# costs one pass of the regex engine
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = b"{}[]"
_NOT_BRACKETS = bytes(c for c in range(256) if c not in _BRACKETS)
_STEP = [0] * 256
_STEP[ord("{")] = _STEP[ord("[")] = 1
_STEP[ord("}")] = _STEP[ord("]")] = -1


class TooDeep(Exception):
    """A body nested beyond ``MAX_DEPTH``; the message is Go's scanner's."""


class ExcessiveAliasing(Exception):
    """A YAML document whose aliases expand beyond go-yaml's allowed ratio."""


class SelfContainingAlias(ExcessiveAliasing):
    """A YAML alias to an anchor whose node is still open around it."""


class ExpandsTooLarge(Exception):
    """A YAML document whose aliases expand its text beyond ``MAX_EXPANDED_BYTES``."""

    def __init__(self, size: int) -> None:
        super().__init__(f"aliases expand the document to {size} bytes of text")
        self.size = size


def check_json_depth(raw: bytes) -> None:
    """Raise TooDeep when the JSON text ``raw`` nests arrays and objects beyond MAX_DEPTH.

    Runs in C-speed passes: a body with fewer brackets than the limit cannot be too deep,
    which is nearly every body, and others are scanned with their strings removed.
    """
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return
    brackets = JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    for i, depth in enumerate(accumulate(map(_STEP.__getitem__, brackets))):
        if depth > MAX_DEPTH:
            raise TooDeep(f"invalid character '{chr(brackets[i])}' exceeded max depth")


def nested_too_deep(value: Any) -> bool:
    """Whether a decoded value nests beyond MAX_DEPTH (a patch can deepen what it patches).

    Read from its JSON text in C-speed passes, as :func:`check_json_depth` reads a body (a
    patched pod is walked at every status patch); a value orjson will not encode (more than
    its 254 levels, an integer beyond 64 bits) is walked instead."""
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _walked_too_deep(value)
    if text.count(b"{") + text.count(b"[") <= MAX_DEPTH:
        return False
    brackets = JSON_STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH


def _walked_too_deep(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def _allowed_alias_ratio(decodes: int) -> float:
    # go-yaml v2 decode.go allowedAliasRatio, verbatim
    if decodes <= 400_000:
        return 0.99
    if decodes >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * ((decodes - 400_000) / 3_600_000)


def check_yaml(raw: bytes) -> None:
    """Walk the YAML events of ``raw``: TooDeep past MAX_DEPTH, ExcessiveAliasing when aliases
    expand as go-yaml refuses, ExpandsTooLarge when they expand its text beyond
    MAX_EXPANDED_BYTES. Syntax errors surface as ``yaml.YAMLError``, as from loading.

    Counting follows go-yaml's decoder: one decode per document, collection, scalar and alias
    node, and an alias decodes the whole anchored node again (all of it counted as aliased).
    The ratio only grows during an expansion, so checking at its end finds what go-yaml's
    per-node check finds.
    """
    import yaml  # on first use: not loaded before the first request (start-up time)

    try:
        _count_yaml(raw)
    except yaml.MarkedYAMLError as exc:
        if exc.problem != "exceeded maximum nesting depth" or exc.problem_mark is None:
            raise
        # libyaml's own limit (1000), met first when its scanner reads ahead of the events
        raise TooDeep(f"line {exc.problem_mark.line + 1}: exceeded max depth of "
                      f"{MAX_DEPTH}") from None


def _count_yaml(raw: bytes) -> None:
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    decodes = 0
    aliased = 0
    text = 0  # characters of scalar text the document expands to
    # anchor -> (decodes, text) of its node, expansions included
    anchors: dict[str, tuple[int, int]] = {}
    open_nodes: list[tuple[str | None, int, int]] = []  # (anchor, decodes, text when opened)
    for event in yaml.parse(raw, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            decodes += 1
            open_nodes.append((event.anchor, decodes - 1, text))
            if len(open_nodes) > MAX_DEPTH:
                # the parser marks every event it makes; a mark is optional only in the stubs
                line = event.start_mark.line + 1 if event.start_mark is not None else 0
                raise TooDeep(f"line {line}: exceeded max depth of "
                              f"{MAX_DEPTH}")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, opened, text_opened = open_nodes.pop()
            if anchor is not None:
                anchors[anchor] = (decodes - opened, text - text_opened)
        elif isinstance(event, yaml.ScalarEvent):
            decodes += 1
            text += len(event.value)
            if event.anchor is not None:
                anchors[event.anchor] = (1, len(event.value))
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, *_ in open_nodes):
                raise SelfContainingAlias(f"anchor '{event.anchor}' value contains itself")
            # an unknown anchor fails on loading
            size, size_text = anchors.get(event.anchor or "", (0, 0))
            decodes += 1 + size
            aliased += size
            text += size_text
            if text > MAX_EXPANDED_BYTES:
                raise ExpandsTooLarge(text)
            if (aliased > 100 and decodes > 1000
                    and aliased / decodes > _allowed_alias_ratio(decodes)):
                raise ExcessiveAliasing("document contains excessive aliasing")
        elif isinstance(event, yaml.DocumentStartEvent):
            decodes += 1
