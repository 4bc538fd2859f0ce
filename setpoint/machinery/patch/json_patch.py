"""JSON patch (RFC 6902, ``application/json-patch+json``) with the kube-apiserver's answers.

The operations themselves run through the ``jsonpatch`` library. Around it sits what the
apiserver adds: the strict decoding of the body into ``[]jsonPatchOp`` (400), the limit of
10000 operations (413), the generic 422 for any operation that cannot apply, and the
behaviours of the Go library it uses (``evanphx/json-patch`` v4) where RFC 6902 leaves room:
negative array indices, a missing ``value`` meaning ``null``, no whole-document pointer ``""``
(but for ``test``), a pointer's text before its first ``/`` ignored, and ``test`` comparing
values by their JSON text (``_jsontest``).

Instead of deep-copying the document, each operation first copies the containers on its
path (once per container), so the result shares every untouched subtree with the input.
Those containers are the ones Go's ``findObject`` turns into a ``partialDoc`` (a Go map), so
in the end their members are sorted as ``json.Marshal`` writes them: the result's order is
the order of the patched JSON text, in which the apiserver's strict decoder meets (and
warns about) unknown fields. An added value keeps its members' order (a raw ``lazyNode``).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import orjson

from setpoint.machinery.errors import StatusError, bad_request, request_entity_too_large
from setpoint.machinery.fielderrors import unmarshal_kind
from setpoint.machinery.patch._jsontest import Raw, raw_values, read_raw, test_passes
from setpoint.machinery.patch._status import unprocessable

MAX_OPERATIONS = 10000
# evanphx/json-patch's AccumulatedCopySizeLimit as kube-apiserver sets it
# (k8s.io/apiserver/pkg/server/config.go: JSONPatchMaxCopyBytes, 3 MiB): the bytes that all
# ``copy`` operations of one patch may add, measured as the JSON of each copied value
ACCUMULATED_COPY_SIZE_LIMIT = 3 * 1024 * 1024

_GO_INT = re.compile(r"[+-]?[0-9]+")
_MUTATING = frozenset({"add", "remove", "replace", "move", "copy"})
_INSERTING = frozenset({"add", "move", "copy"})
_WITH_VALUE = frozenset({"add", "replace"})
_APPLY_ERRORS = (KeyError, IndexError, TypeError, ValueError)  # and the libraries' own


def json_patch(doc: dict[str, Any], ops: Any, raw: bytes | None = None) -> dict[str, Any]:
    """Apply the JSON patch ``ops`` (a decoded JSON body) to ``doc``; return the result.
    ``raw``, the body as sent, lets a ``test`` compare values by their text as Go's library
    does (``_jsontest``); without it the operations' values are taken as JSON would write
    them.

    Raises ``StatusError``: 400 when the body does not decode into a list of operations
    (worded as Go's decoder words it), 413 above 10000 operations, and 422 Invalid with the
    generic message for an operation that cannot apply (a failed ``test``, a missing path,
    an unknown ``op``). ``doc`` and ``ops`` are never modified; the result shares the
    subtrees the patch does not touch with ``doc`` and inserted values with ``ops``.
    """
    operations = _decode(ops)
    if len(operations) > MAX_OPERATIONS:
        raise request_entity_too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, "
            f"got {len(operations)}"
        )
    result = dict(doc)
    # the copies made so far, kept alive so that their ids stay unique
    owned: dict[int, Any] = {id(result): result}
    copied = [0]
    texts = raw_values(raw) if any(isinstance(op, dict) and op.get("op") == "test"
                                   for op in operations) else None
    if texts is not None and len(texts) != len(operations):
        texts = None
    for i, op in enumerate(operations):
        if isinstance(op, dict) and op.get("op") == "test":
            _test(result, op, texts[i] if texts is not None else _text_of(op))
            _reach(result, op.get("path"), owned)
            continue
        result = _apply_one(result, op, owned, copied)
    _sort_reached(result, owned)
    return result


def _reach(root: dict[str, Any], pointer: Any, owned: dict[int, Any]) -> None:
    """Take the containers a passed ``test`` walked through (findObject converts them too)."""
    with contextlib.suppress(StatusError):  # a test of "" walks nothing
        _prepare(root, pointer, owned, False)


def _sort_reached(value: Any, owned: dict[int, Any]) -> None:
    """Sort, in place, the members of every object an operation walked through (ours)."""
    if isinstance(value, dict):
        if id(value) not in owned:
            return
        items = sorted(value.items())
        value.clear()
        value.update(items)
        for child in value.values():
            _sort_reached(child, owned)
    elif isinstance(value, list) and id(value) in owned:
        for child in value:
            _sort_reached(child, owned)


def _text_of(op: dict[str, Any]) -> Raw | None:
    """An operation's value as JSON writes it, when the body's own text is not at hand."""
    if "value" not in op:
        return None
    try:
        return read_raw(orjson.dumps(op["value"]).decode())
    except (TypeError, ValueError, RecursionError):
        return None


def _test(doc: dict[str, Any], op: dict[str, Any], text: Raw | None) -> None:
    """json-patch v4 ``test``: the pointer ``""`` compares the whole document; a missing
    object member reads as null; a bad pointer or array index fails it."""
    import jsonpointer

    pointer = op.get("path")
    if pointer == "":
        found, value = True, doc
    else:
        path, missing = _resolve(doc, pointer)
        found = not missing
        value = None
        if found:
            try:
                value = jsonpointer.resolve_pointer(doc, path)
            except (jsonpointer.JsonPointerException, *_APPLY_ERRORS) as e:
                raise unprocessable() from e
    try:
        passes = test_passes(found, value, text)
    except RecursionError as e:  # nested beyond what can be compared: Go's stack would not
        raise unprocessable() from e
    if not passes:
        raise unprocessable()


def _decode(ops: Any) -> list[Any]:
    """Check ``ops`` as ``json.Unmarshal`` into ``[]jsonPatchOp`` would, first error first."""
    if ops is None:
        return []
    if not isinstance(ops, list):
        raise _decode_error(f"cannot unmarshal {unmarshal_kind(ops)} into Go value of type "
                            "[]handlers.jsonPatchOp")
    for op in ops:
        if op is None:
            continue
        if not isinstance(op, dict):
            raise _decode_error(f"cannot unmarshal {unmarshal_kind(op)} into Go value of type "
                                "handlers.jsonPatchOp")
        for name, value in op.items():
            if name in ("op", "path", "from") and value is not None and not isinstance(value, str):
                raise _decode_error(f"cannot unmarshal {unmarshal_kind(value)} into Go struct "
                                    f"field jsonPatchOp.{name} of type string")
    return ops


def _decode_error(detail: str) -> StatusError:
    return bad_request(f"error decoding patch: json: {detail}")



def _apply_one(result: dict[str, Any], op: Any, owned: dict[int, Any],
               copied: list[int]) -> dict[str, Any]:
    # on first use: a server loads them at its first JSON patch, not at its start
    import jsonpatch
    import jsonpointer

    if not isinstance(op, dict):
        raise unprocessable()
    kind = op.get("op")
    operation = dict(op)
    if kind in _WITH_VALUE and "value" not in operation:
        operation["value"] = None
    try:
        if kind in _MUTATING:
            operation["path"] = _prepare(result, op.get("path"), owned, kind in _INSERTING)
        if kind == "move":
            operation["from"] = _prepare(result, op.get("from"), owned, False)
        elif kind == "copy":
            _prepare(result, op.get("from"), owned, False)  # findObject walks it too
            operation["from"] = _resolve(result, op.get("from"))[0]
            copied[0] += _copy_size(result, operation["from"])
            if copied[0] > ACCUMULATED_COPY_SIZE_LIMIT:
                # "Unable to complete the copy, the accumulated size increase of copy is
                # ..., exceeding the limit ...": the apiserver answers it as any failed op
                raise unprocessable()
        patched = jsonpatch.JsonPatch([operation]).apply(result, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
            *_APPLY_ERRORS) as e:
        raise unprocessable() from e
    # jsonpatch is untyped; applied to a dict, a patch gives a dict
    return patched  # type: ignore[no-any-return]


def _copy_size(root: Any, pointer: str) -> int:
    """The JSON size of the value a copy duplicates (0 when missing: the copy then fails)."""
    import jsonpointer

    try:
        value = jsonpointer.resolve_pointer(root, pointer)
    except jsonpointer.JsonPointerException:
        return 0
    try:
        return len(orjson.dumps(value))
    except TypeError:  # nested beyond what JSON encoding allows: copying it cannot succeed
        return ACCUMULATED_COPY_SIZE_LIMIT + 1


# -- pointers ----------------------------------------------------------------------------------

def _tokens(pointer: Any) -> list[str]:
    """The unescaped tokens of a JSON pointer as Go's ``findObject`` splits it: at every
    ``/``, the first piece dropped unread, so ``""`` and ``"a"`` address nothing while
    ``"x/data/a"`` is ``/data/a``."""
    if not isinstance(pointer, str) or "/" not in pointer:
        raise unprocessable()
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _pointer(tokens: list[str]) -> str:
    return "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in tokens)


def _array_token(token: str, size: int, inserting: bool) -> str:
    """An array index as Go's ``strconv.Atoi`` reads it, negatives counted from the end."""
    if not _GO_INT.fullmatch(token):
        return token
    index = int(token)
    if index < 0:
        # an insertion position ranges over len+1 slots, a lookup over len
        bound = size + 1 if inserting else size
        if index < -bound:
            return token
        index += bound
    return str(index)


def _prepare(root: Any, pointer: Any, owned: dict[int, Any], inserting: bool) -> str:
    """Copy every container on ``pointer``'s way that is not yet ours; return the pointer
    with array indices normalised for the ``jsonpatch`` library."""
    tokens = _tokens(pointer)
    container = root
    out: list[str] = []
    for i, token in enumerate(tokens):
        last = i == len(tokens) - 1
        if isinstance(container, list):
            token = _array_token(token, len(container), inserting and last)
        out.append(token)
        if last:
            break
        child, ok = _child(container, token)
        if not ok or not isinstance(child, (dict, list)):
            return _pointer(out + tokens[i + 1 :])
        if id(child) not in owned:
            child = dict(child) if isinstance(child, dict) else list(child)
            owned[id(child)] = child
            container[int(token) if isinstance(container, list) else token] = child
        container = child
    return _pointer(out)


def _resolve(root: Any, pointer: Any) -> tuple[str, bool]:
    """Normalise ``pointer`` without copying; also say whether its object member is missing."""
    tokens = _tokens(pointer)
    container = root
    out: list[str] = []
    for i, token in enumerate(tokens):
        if isinstance(container, list):
            token = _array_token(token, len(container), False)
        out.append(token)
        child, ok = _child(container, token)
        if not ok:
            missing = i == len(tokens) - 1 and isinstance(container, dict)
            return _pointer(out + tokens[i + 1 :]), missing
        container = child
    return _pointer(out), False


def _child(container: Any, token: str) -> tuple[Any, bool]:
    if isinstance(container, dict):
        return container.get(token), token in container
    if isinstance(container, list) and token.isdigit() and int(token) < len(container):
        return container[int(token)], True
    return None, False
