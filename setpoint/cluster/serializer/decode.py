"""Request bodies: JSON/YAML parsing, duplicate and unknown fields.

The real apiserver decodes built-in kinds into Go structs: a value of the wrong JSON type is a
400, an unknown field is dropped (and reported according to ``fieldValidation``), and a
duplicate key is reported the same way. This module parses a body and finds its duplicate
keys; :mod:`.typeddecode` checks the parsed value against the kind's OpenAPI schema.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from setpoint.cluster.serializer.decodelimits import (
    JSON_STRING,
    ExcessiveAliasing,
    ExpandsTooLarge,
    TooDeep,
    check_json_depth,
    check_yaml,
)
from setpoint.cluster.serializer.gosyntax import go_syntax_error
from setpoint.cluster.serializer.goyamlerrors import go_yaml_error
from setpoint.cluster.serializer.goyamlscalars import InvalidBinary, go_safe_loader
from setpoint.cluster.serializer.yamlstrict import duplicate_key_errors
from setpoint.cluster.storage.store import request_too_large
from setpoint.machinery import errors
from setpoint.machinery.fielderrors import unmarshal_kind

FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")


@dataclass
class Decoded:
    """A parsed body with what strict decoding found in it."""

    obj: Any
    duplicates: list[str] = field(default_factory=list)
    # for each duplicate, the path of the member just before its repeat: the decoder reports
    # the repeat when it meets it, after everything in that member
    duplicates_after: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    # go-yaml's strict-mode errors for repeated keys of a YAML body ("line N: key ...")
    yaml_duplicates: list[str] = field(default_factory=list)
    yaml: bool = False
    # the JSON text whose number literals a typed decoder reads as written (a JSON body, or
    # the JSON or merge patch whose literals the patched object keeps): a float literal there
    # is no integer (see typeddecode.decode_builtin); None where Go decodes a value converted
    # first (YAML through sigs.k8s.io/yaml, a strategic merge patch's map)
    literals: bytes | None = None
    # a map converted into the typed object rather than JSON decoded (a strategic merge
    # patch's result, FromUnstructuredWithValidation): its unknown-field errors come sorted
    # by their text (k8s.io/apimachinery pkg/runtime/converter.go)
    from_unstructured: bool = False


class _Dupes(dict[str, Any]):
    """A dict that remembers which of its keys appeared more than once."""

    __slots__ = ("dupes",)
    dupes: list[tuple[str, str]]  # (key, the key of the member before its repeat)


def _decoded_into(prev: Any, value: Any) -> Any:
    """``value`` decoded into ``prev``, the member a repeated key of a Go struct already set
    (encoding/json decode.go, object and array): an object's members go into the existing
    struct or map, an array's elements into the existing slice's elements (its length then
    the new one's), anything else replaces. (Without the schema this also merges what Go
    replaces: a map's struct values and members with their own UnmarshalJSON, such as
    FieldsV1 or RawExtension, when one object repeats in both.)"""
    if isinstance(prev, dict) and isinstance(value, dict):
        merged = _Dupes(prev)
        merged.dupes = [*getattr(prev, "dupes", ()), *getattr(value, "dupes", ())]
        for k, v in value.items():
            merged[k] = _decoded_into(prev[k], v) if k in prev else v
        return merged if merged.dupes else dict(merged)
    if isinstance(prev, list) and isinstance(value, list):
        return [_decoded_into(prev[i], v) if i < len(prev) else v for i, v in enumerate(value)]
    return value


def _pairs_hook(pairs: list[tuple[str, Any]], *, into_struct: bool) -> dict[str, Any]:
    d: dict[str, Any] = {}
    dupes: list[tuple[str, str]] = []
    before = ""
    for k, v in pairs:
        if k in d:
            dupes.append((k, before))
            if into_struct:
                v = _decoded_into(d[k], v)
        d[k] = v
        before = k
    if dupes:
        out = _Dupes(d)
        out.dupes = dupes
        return out
    return d


def _struct_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return _pairs_hook(pairs, into_struct=True)


def _map_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return _pairs_hook(pairs, into_struct=False)


def _collect_dupes(obj: Any, path: str, out: list[str],
                   after: list[str] | None = None) -> Any:
    """Replace _Dupes by plain dicts, recording the paths of duplicated keys and of the
    member before each repeat."""
    if isinstance(obj, dict):
        if isinstance(obj, _Dupes):
            for k, before in obj.dupes:
                out.append(f"{path}.{k}" if path else k)
                if after is not None:
                    after.append(f"{path}.{before}" if path else before)
            obj = dict(obj)
        for k, v in obj.items():
            if isinstance(v, dict | list):
                obj[k] = _collect_dupes(v, f"{path}.{k}" if path else k, out, after)
        return obj
    if isinstance(obj, list):
        return [_collect_dupes(v, f"{path}[{i}]", out, after) for i, v in enumerate(obj)]
    return obj


def parse_body(raw: bytes, content_type: str, *, kind: str, track_duplicates: bool,
               into_struct: bool = True) -> Decoded:
    """Parse a JSON or YAML request body. ``kind`` names the expected kind in errors.

    ``into_struct``: Go decodes the body into a typed struct (a built-in kind), where a
    repeated key's value is decoded into the one before it, whatever ``fieldValidation``
    says; otherwise into a map (a custom resource's unstructured content, a patch
    document), where the last one wins."""
    if content_type in ("application/yaml", "application/apply-patch+yaml"):
        decoded = _parse_yaml(raw, kind, apply=content_type == "application/apply-patch+yaml")
        if track_duplicates and content_type == "application/yaml":
            decoded.yaml_duplicates = duplicate_key_errors(raw)
        return decoded
    try:
        check_json_depth(raw)
    except TooDeep as exc:
        raise _json_parse_error(kind, str(exc), raw) from None
    parse_failed = False
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        parse_failed = True  # fall through: NaN, huge exponents, lone surrogates, bad syntax
    else:
        if not track_duplicates and not into_struct:
            return Decoded(obj, literals=raw)
        if _plainly_unrepeated(obj, raw):
            # no key repeated, nothing for _json_compatible to change
            return Decoded(obj, literals=raw)
        members = _members_if_plain(obj)
        # every colon of the text separates a member or lies in a string, so as many colons
        # as members kept means none in strings and no key repeated; a body with colons in
        # its strings (times, images) has them counted without its strings
        if members == raw.count(b":") or members == _member_separators(raw):
            # no key repeated, nothing for _json_compatible to change
            return Decoded(obj, literals=raw)
    syntax = go_syntax_error(raw) if parse_failed else None
    if syntax is not None:  # what Go's scanner refuses (NaN too, which json.loads takes)
        raise _json_parse_error(kind, syntax, raw)
    try:
        obj = json.loads(_go_text(raw), object_pairs_hook=_struct_pairs if into_struct
                         else _map_pairs, parse_int=_go_integer)
    except ValueError as exc:
        raise _json_parse_error(kind, _json_error(exc), raw) from None
    dupes: list[str] = []
    after: list[str] = []
    obj = _collect_dupes(obj, "", dupes, after)
    if not track_duplicates:  # fieldValidation=Ignore: decoded alike, reported nowhere
        return Decoded(_json_compatible(obj), literals=raw)
    return Decoded(_json_compatible(obj), dupes, duplicates_after=after, literals=raw)


def _plainly_unrepeated(obj: Any, raw: bytes) -> bool:
    """Whether the JSON text ``raw``, which orjson parsed as ``obj``, repeats no key and
    holds no integer beyond int64, read in C-speed passes (most bodies).

    Written again by orjson, ``obj`` has one colon per member it kept and the colons of
    its strings; the text has one per member it spells and the same strings' colons,
    unless a ``\\u`` escape spells one. A repeated key is a member (and its strings'
    colons) that orjson dropped: the text has more colons. An integer beyond int64 needs
    a run of 19 digits. A text with an escape or such a run is left to the walk of its
    value (:func:`_members_if_plain`)."""
    if b"\\u" in raw or _LONG_DIGITS in raw.translate(_DIGITS_AS_ZEROS):
        return False
    try:
        return orjson.dumps(obj).count(b":") == raw.count(b":")
    except orjson.JSONEncodeError:
        return False


# the digits an integer beyond int64 takes at least (found in a string: only a longer way),
# looked for in the text with every digit made "0" and every other byte a space
_LONG_DIGITS = b"0" * 19
_DIGITS_AS_ZEROS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))


def _member_separators(raw: bytes) -> int:
    """The members of every object in the JSON text ``raw``: one colon each, outside strings
    (JSON has no other colon)."""
    return JSON_STRING.sub(b"", raw).count(b":")


def _members_if_plain(value: Any) -> int:
    """The members of every object in a value orjson parsed, or -1 when the value holds an
    integer beyond int64, which Go's decoder makes a float (see ``_json_compatible``).

    orjson keeps the last of repeated keys without a word; a parsed value with fewer members
    than its text has colons therefore repeated a key, and is parsed again the slow way,
    which reports each repetition as the apiserver does."""
    members = 0
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            members += len(node)
            children = node.values()
        elif kind is list:
            children = node
        else:
            return -1 if kind is int and node > _INT64 else members
        for v in children:
            kind = type(v)
            if kind is dict or kind is list:
                stack.append(v)
            elif kind is int and v > _INT64:
                return -1
    return members


def _json_parse_error(kind: str, detail: str, raw: bytes) -> errors.StatusError:
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): couldn't get "
        f"version/kind; json parse error: {detail} ({_excerpt(raw)})")


def check_type_meta(obj: Any, kind: str, raw: bytes) -> None:
    """The json serializer reads an object's apiVersion and kind into strings before anything
    else (apimachinery runtime/serializer/json/meta.go ``SimpleMetaFactory.Interpret``): the
    first of them, in the document's order, that is not a string (null is) fails the body."""
    if not isinstance(obj, dict):
        return
    for key, value in obj.items():
        if key in ("apiVersion", "kind") and value is not None and not isinstance(value, str):
            raise _json_parse_error(kind, f"json: cannot unmarshal {unmarshal_kind(value)} "
                                          f"into Go struct field .{key} of type string", raw)


def _parse_yaml(raw: bytes, kind: str, *, apply: bool) -> Decoded:
    if raw.lstrip()[:1] == b"{":
        # JSON is YAML, and most apply bodies are JSON: the JSON parser is far faster (and
        # the server's own applies at start never load PyYAML)
        try:
            check_json_depth(raw)
            return Decoded(_json_compatible(orjson.loads(raw)))
        except (orjson.JSONDecodeError, TooDeep):
            pass  # YAML flow syntax that is not JSON, or go-yaml's own depth error
    import yaml  # on first use: not loaded before the first request (start-up time)

    try:
        # the events are counted before the document is built: composing a deep document
        # recurses, and an aliased one is expanded by everything that walks it afterwards
        check_yaml(raw)
        # go-yaml v2's Unmarshal (under sigs.k8s.io/yaml) reads the stream's first document
        # and ignores the rest
        obj = next(iter(yaml.load_all(raw, Loader=go_safe_loader())), None)  # a SafeLoader
    except ExpandsTooLarge as exc:
        # kube-apiserver expands it (sigs.k8s.io/yaml) and etcd refuses what it stores
        raise request_too_large(exc.size) or errors.internal(str(exc)) from None
    except (yaml.YAMLError, TooDeep, ExcessiveAliasing, InvalidBinary) as exc:
        raise _yaml_syntax_error(kind, _yaml_error(exc), raw, apply=apply) from None
    return Decoded(_json_compatible(obj), yaml=True)


def strict_decoding_order(body: Decoded, unknown: list[str]) -> list[str]:
    """The strict decoding problems of a built-in kind's body in the order the apiserver
    lists them (k8s.io/apimachinery's json serializer over sigs.k8s.io/json): as the decoder
    meets them in the document (a YAML body is met as the JSON it converts to, keys sorted),
    and a repeated unknown field, or anything beneath one, only as unknown."""
    if not unknown and not body.duplicates:
        return []  # (most bodies: nothing to order, so no positions to number)
    positions: dict[str, int] = {}
    _number_paths(body.obj, "", positions, sort_keys=body.yaml)
    unknown_set = set(unknown)
    events: list[tuple[float, str]] = [
        (positions.get(p, len(positions)), f'unknown field "{p}"') for p in unknown]
    afters = body.duplicates_after or body.duplicates
    events += [(_after_member(positions, before), f'duplicate field "{p}"')
               for p, before in zip(body.duplicates, afters, strict=True)
               if not any(p == u or p.startswith((u + ".", u + "[")) for u in unknown_set)]
    events.sort(key=lambda e: e[0])
    return [text for _, text in events]


def _after_member(positions: dict[str, int], member: str) -> float:
    """A position just after ``member`` and everything beneath it, where a repeated key that
    follows it is met."""
    last = positions.get(member, len(positions))
    for path, position in positions.items():
        if position > last and path.startswith((member + ".", member + "[")):
            last = position
    return last + 0.5


def _number_paths(value: Any, path: str, out: dict[str, int], *, sort_keys: bool) -> None:
    if isinstance(value, dict):
        for k in sorted(value) if sort_keys else value:
            child = f"{path}.{k}" if path else str(k)
            out.setdefault(child, len(out))
            _number_paths(value[k], child, out, sort_keys=sort_keys)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _number_paths(item, f"{path}[{i}]", out, sort_keys=sort_keys)


def _yaml_error(exc: Exception) -> str:
    if isinstance(exc, TooDeep | ExcessiveAliasing | InvalidBinary):
        return f"yaml: {exc}"  # go-yaml's failf prefix
    return go_yaml_error(exc)


def _yaml_syntax_error(kind: str, go_error: str, raw: bytes, *,
                       apply: bool) -> errors.StatusError:
    """A YAML body go-yaml refuses. An apply configuration is read by sigs.k8s.io/yaml's
    Unmarshal, which prefixes "error converting YAML to JSON", and patch.go's applyPatcher
    ("error decoding YAML: %v"); any other YAML body by the YAML serializer's
    ``yaml.YAMLToJSON`` (go-yaml's error as is), whose failure create.go and update.go
    report through handlers/rest.go transformDecodeError, the body summarized after it."""
    if apply:
        return errors.bad_request(
            f"error decoding YAML: error converting YAML to JSON: {go_error}")
    return errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                              f"{go_error} ({_excerpt(raw)})")


_INT64 = 2**63 - 1
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_compatible(value: Any) -> Any:
    """What Go's decoder would make of a parsed value: integers beyond int64 become floats,
    lone surrogates become U+FFFD, YAML timestamps and other scalars become their text."""
    if isinstance(value, dict):
        return {_json_compatible(str(k)): _json_compatible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_compatible(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return _beyond_int64(value) if abs(value) > _INT64 else value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            # one U+FFFD for each unpaired escape, as Go's unquoteBytes writes it; decoding
            # the surrogate's three UTF-8 bytes would make three
            return _LONE_SURROGATE.sub("\ufffd", value)
    return str(value)


def _beyond_int64(value: int) -> float:
    """An integer beyond int64 as the float64 Go's decoder makes of it; one beyond float64 is
    an infinity (a JSON literal has no such value: a typed field refuses it as its literal)."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _go_integer(literal: str) -> int | float:
    """An integer literal as Go's decoder reads it: beyond int64 a float64 (float() reads
    any length; int() refuses more than 4,300 digits, which encoding/json takes)."""
    if len(literal) <= 20:
        value = int(literal)
        return value if abs(value) <= _INT64 else float(value)
    return float(literal)


def _go_text(raw: bytes) -> str | bytes:
    """The body's text as Go's decoder reads its strings: each byte of invalid UTF-8 is a
    U+FFFD (sigs.k8s.io/json decode.go unquoteBytes), not an error."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "go-replace")
    return raw


def _replace_each_byte(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd" * (exc.end - exc.start), exc.end


codecs.register_error("go-replace", _replace_each_byte)


def _json_error(exc: Exception) -> str:
    msg = str(exc)
    if "Expecting" in msg and ("delimiter" in msg or "value" in msg):
        return "unexpected end of JSON input" if "char" in msg else msg
    return msg.split(":")[0]


def _excerpt(raw: bytes, limit: int = 30) -> str:
    """handlers/rest.go summarizeData(body, 30): an object's first 30 bytes as text, anything
    else in hex, " ..." when cut."""
    if not raw:
        return "<empty>"
    head = raw[:limit]
    text = head.decode("utf-8", "replace") if raw[:1] == b"{" else head.hex()
    return text + " ..." if len(raw) > limit else text
