"""Repeated keys in JSON bodies are found whatever the strings around them hold.

A JSON body is parsed once with orjson, which keeps the last of repeated keys silently; the
server counts the members it got against the colons outside strings of the text, and parses
again the slow way only when they differ. These bodies put colons, quotes and backslashes in
keys and values, where a careless count would miss (or invent) a repetition.

Rule: a repeated key is a strict decoding error named by its path, reported as a Warning
under fieldValidation=Warn (the default) and a 400 under Strict, the last value winning.
Source: k8s.io/apiserver pkg/endpoints/handlers/create.go (strict decoding via
runtime.NewStrictDecodingError), k8s.io/apimachinery pkg/runtime/serializer/json/json.go
(sigs.k8s.io/json UnmarshalStrict: "duplicate field").
"""

from __future__ import annotations

import random
import string

import orjson
import pytest

from setpoint.cluster.serializer.decode import parse_body
from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import send
from tests.conftest import CallsTo

CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(("raw", "expected_data", "warnings"), [
    # a value holding ":" and an escaped quote, then the key repeated
    (b'{"metadata":{"name":"a"},"data":{"k":"x\\":y","k":"z"}}', {"k": "z"},
     ['duplicate field "data.k"']),
    # values holding colons, quotes and backslashes, nothing repeated
    (b'{"metadata":{"name":"a"},"data":{"a":"1:\\\\","b":"\\":\\""}}',
     {"a": "1:\\", "b": '":"'}, []),
    # a value that spells a repeated key is no repetition
    (b'{"metadata":{"name":"a"},"data":{"a":"\\",\\"a\\":\\"x"}}', {"a": '","a":"x'}, []),
    # an unknown field whose name holds a colon, repeated: reported once, as unknown
    (b'{"metadata":{"name":"a"},"x:y":1,"data":{"a":"b"},"x:y":2}', {"a": "b"},
     ['unknown field "x:y"']),
])
async def test_repeated_keys_are_warned_whatever_the_strings_hold(
        api: API, raw: bytes, expected_data: dict[str, str], warnings: list[str]) -> None:
    status, body, got = await send(api, "POST", CM, raw)
    assert (status, got) == (201, warnings)
    assert body["data"] == expected_data


async def test_a_repeated_key_under_strict_is_still_a_400(api: API) -> None:
    status, body, _ = await send(api, "POST", CM + "?fieldValidation=Strict",
                                 b'{"metadata":{"name":"a","name":"b"},"data":{"c":"::"}}')
    assert status == 400
    assert body["message"] == 'ConfigMap in version "v1" cannot be handled as a ConfigMap: ' \
        'strict decoding error: duplicate field "metadata.name"'


def _slow(raw: bytes) -> tuple[object, list[str]]:
    """The body parsed the way that reports repetitions (what the fast path must match)."""
    import json

    from setpoint.cluster.serializer import decode

    obj = json.loads(raw, object_pairs_hook=decode._struct_pairs)
    dupes: list[str] = []
    obj = decode._collect_dupes(obj, "", dupes)
    return decode._json_compatible(obj), dupes


def test_one_parse_finds_what_the_slow_parse_finds() -> None:
    """Random documents, some with a repeated key, with tricky strings and integers past
    int64 (Go makes those floats): the result, its types and the repetitions agree."""
    rng = random.Random(7)
    keys = ["a", 'b":', "c\\", "d:e", "é"]

    def value(depth: int) -> object:
        r = rng.random()
        if depth > 3 or r < 0.35:
            return rng.choice([0, -1, 2.5, 2**63, 2**63 - 1, None, True, "x:y",
                               '"', "".join(rng.choices(string.printable, k=5))])
        if r < 0.6:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 3))}

    def text(v: object) -> bytes:
        if isinstance(v, dict):
            items = list(v.items())
            if items and rng.random() < 0.3:
                items.append((items[0][0], value(2)))
            return b"{" + b",".join(orjson.dumps(k) + b":" + text(x) for k, x in items) + b"}"
        if isinstance(v, list):
            return b"[" + b",".join(text(x) for x in v) + b"]"
        return orjson.dumps(v)

    for _ in range(2000):
        raw = text(value(0))
        got = parse_body(raw, "application/json", kind="ConfigMap", track_duplicates=True)
        obj, dupes = _slow(raw)
        assert (repr(got.obj), got.duplicates) == (repr(obj), dupes), raw


@pytest.mark.parametrize("raw", [
    # a repeated key beside a colon spelled as an escape: as many colons in the text as in
    # the parsed value written again, but the key is repeated
    b'{"a":1,"a":2,"b":"\\u003a"}',
    b'{"k\\u003ax":{"a":"::","a":"::"}}',
    b'{"a":"::::","a":"x"}',
    b'{"f:a":{},"f:a":{}}',
])
def test_a_repeated_key_is_found_whatever_the_colons_of_its_strings(raw: bytes) -> None:
    got = parse_body(raw, "application/json", kind="ConfigMap", track_duplicates=True)
    obj, dupes = _slow(raw)
    assert dupes and (repr(got.obj), got.duplicates) == (repr(obj), dupes)


def test_a_body_with_colons_in_its_strings_is_not_scanned_string_by_string(
        calls_to: CallsTo) -> None:
    """Most bodies have colons in their strings (times, managed fields' ``f:`` keys): that
    they repeat no key is read from the colons of the parsed value written again by orjson,
    not by a regular expression taking every string out of the text nor by a walk of the
    value; the text is scanned only when a ``\\u`` escape may spell a colon."""
    from setpoint.cluster.serializer import decode

    scans = calls_to(decode, "_member_separators")
    walks = calls_to(decode, "_members_if_plain")
    body = {"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z",
                         "managedFields": [{"fieldsV1": {"f:data": {"f:k": {}}}}]},
            "data": {"k": "v:w"}}
    got = parse_body(orjson.dumps(body), "application/json", kind="ConfigMap",
                     track_duplicates=True)
    assert got.obj == body and got.duplicates == [] and scans == [] and walks == []
    escaped = b'{"data":{"k":"\\u003a","t":"1:2"}}'
    got = parse_body(escaped, "application/json", kind="ConfigMap", track_duplicates=True)
    assert got.obj == {"data": {"k": ":", "t": "1:2"}} and got.duplicates == []
    assert scans == [escaped]


def test_one_parse_finds_what_the_slow_parse_finds_with_escapes() -> None:
    """As above, with colons and quotes spelled as ``\\u`` escapes in keys and values."""
    rng = random.Random(11)
    pieces = ["a", "\\u003a", ":", "\\\"", "b\\u0022:", "\\\\u003a"]

    def string() -> bytes:
        return b'"' + "".join(rng.choices(pieces, k=rng.randint(0, 3))).encode() + b'"'

    def text(depth: int) -> bytes:
        r = rng.random()
        if depth > 3 or r < 0.35:
            return rng.choice([b"1", b"null", string(), string()])
        if r < 0.6:
            return b"[" + b",".join(text(depth + 1) for _ in range(rng.randint(0, 3))) + b"]"
        keys = [string() for _ in range(rng.randint(0, 3))]
        if keys and rng.random() < 0.3:
            keys.append(keys[0])
        return b"{" + b",".join(k + b":" + text(depth + 1) for k in keys) + b"}"

    for _ in range(2000):
        raw = text(0)
        got = parse_body(raw, "application/json", kind="ConfigMap", track_duplicates=True)
        obj, dupes = _slow(raw)
        assert (repr(got.obj), got.duplicates) == (repr(obj), dupes), raw
