"""LIST continue tokens, as k8s.io/apiserver/pkg/storage/continue.go writes and reads them.

A token is unpadded URL-safe base64 (Go's ``base64.RawURLEncoding``) of the JSON
``{"v": "meta.k8s.io/v1", "rv": <revision>, "start": <key after the prefix listed>}``. The
etcd3 store reads it before anything else of a continued LIST and answers a token it cannot
read with a 400 "invalid continue token: ..." (etcd3/store.go GetList). A revision below 0
asks for the latest revision: the token a 410 for a compacted continuation carries
(etcd3/errors.go handleCompactedErrorForPaging).
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import string
from typing import Any

import orjson

from setpoint.machinery import errors

VERSION = "meta.k8s.io/v1"
INVALID_START_RV = ("continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)")
EMPTY_START_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
GENERIC_INVALID_KEY = "continue key is not valid"
UNRECOGNIZED_VERSION = "continue key is not valid: server does not recognize this encoded version"

_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")
# Go's encoding/json names for the JSON value a field could not take
_JSON_KINDS = {str: "string", bool: "bool", list: "array", dict: "object"}
_FIELDS = {"v": ("v", str), "rv": ("rv", int), "start": ("start", str)}


def encode_continue(revision: int, start: str) -> str:
    """``EncodeContinue``: ``start`` is the key to resume at, relative to the listed prefix."""
    data = orjson.dumps({"v": VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """``DecodeContinue``: the token's revision and its start key (relative to the listed
    prefix, path-cleaned); a 400 BadRequest as the etcd3 store words it otherwise."""
    try:
        return _decode(token)
    except ValueError as exc:
        raise errors.bad_request(f"invalid continue token: {exc}") from None


def _decode(token: str) -> tuple[int, str]:
    fields = _unmarshal(_raw_url_decode(token))
    version, revision, start = fields["v"], fields["rv"], fields["start"]
    if version != VERSION:
        raise ValueError(f"{UNRECOGNIZED_VERSION} {version}")
    if revision == 0:
        raise ValueError(INVALID_START_RV)
    if not start:
        raise ValueError(EMPTY_START_KEY)
    # path.Clean keeps a start key from reaching above the prefix listed
    key = start if start.startswith("/") else "/" + start
    if _go_path_clean(key) != key:
        raise ValueError(f"{GENERIC_INVALID_KEY}: {start}")
    return revision, key[1:]


def _raw_url_decode(token: str) -> bytes:
    """Go's ``RawURLEncoding.DecodeString``: no padding, line breaks skipped, the offset of
    the first byte it cannot take in the error."""
    text = token.replace("\r", "").replace("\n", "")
    for i, ch in enumerate(token):
        if ch not in _ALPHABET and ch not in "\r\n":
            raise ValueError(f"{GENERIC_INVALID_KEY}: illegal base64 data at input byte {i}")
    if len(text) % 4 == 1:
        raise ValueError(f"{GENERIC_INVALID_KEY}: illegal base64 data at input byte "
                         f"{len(token.rstrip(chr(13) + chr(10))) - 1}")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:  # not reached for the alphabet checked above
        raise ValueError(f"{GENERIC_INVALID_KEY}: {exc}") from None


def _unmarshal(data: bytes) -> dict[str, Any]:
    """``json.Unmarshal`` into ``continueToken``: fields matched without regard to case, a
    value of the wrong type an error naming the field, null and unknown keys ignored."""
    out: dict[str, Any] = {"v": "", "rv": 0, "start": ""}
    try:  # the standard library's decoder: integers of any size, as Go reads them first
        doc = json.loads(data.decode("utf-8", "replace"), parse_constant=_not_json)
    except ValueError:
        raise ValueError(f"{GENERIC_INVALID_KEY}: {_syntax_error(data)}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{GENERIC_INVALID_KEY}: json: cannot unmarshal {_kind(doc)} into Go "
                         "value of type storage.continueToken")
    for key, value in doc.items():
        known = _FIELDS.get(key.lower())
        if known is None or value is None:
            continue
        name, want = known
        int64 = isinstance(value, int) and not isinstance(value, bool) and \
            -(1 << 63) <= value < (1 << 63)
        if (want is int and int64) or (want is str and isinstance(value, str)):
            out[name] = value
        else:
            got = _kind(value)
            if got == "number":
                got = f"number {value}"
            raise ValueError(f"{GENERIC_INVALID_KEY}: json: cannot unmarshal {got} into Go "
                             f"struct field continueToken.{name} of type "
                             f"{'int64' if want is int else 'string'}")
    return out


def _not_json(name: str) -> None:
    raise ValueError(name)  # NaN and Infinity are no JSON to Go


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return _JSON_KINDS.get(type(value), "value")


def _syntax_error(data: bytes) -> str:
    """The first words of encoding/json's SyntaxError: the common cases only (the decoder
    differs in what it reports after the first character)."""
    text = data.lstrip(b" \t\r\n")
    if not text:
        return "unexpected end of JSON input"
    first = text[:1].decode("latin-1")
    if first not in '{["-0123456789tfn':
        return f"invalid character {_go_char(first)} looking for beginning of value"
    return "unexpected end of JSON input"


def _go_char(ch: str) -> str:
    """encoding/json's quoteChar."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    return repr(ch) if ch.isprintable() else f"'\\x{ord(ch):02x}'"


def _go_path_clean(path: str) -> str:
    """Go's ``path.Clean`` for a rooted path (POSIX keeps a leading "//"; Go does not)."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned
