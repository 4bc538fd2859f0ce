"""LIST: snapshots at a resourceVersion, selectors, and pagination with continue tokens."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import orjson

from setpoint.cluster.registry import fieldlabels
from setpoint.cluster.registry.admissionpoints import Steps
from setpoint.cluster.registry.continuetoken import decode_continue, encode_continue
from setpoint.cluster.registry.options import NOT_OLDER_THAN, ListOptions
from setpoint.cluster.registry.storagecodec import StorageCodec
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.storage import Store
from setpoint.cluster.storage.scan import Scan
from setpoint.cluster.storage.versioner import parse_uint_error
from setpoint.machinery import errors, fielderrors, fields, gojson, labels
from setpoint.machinery.objects import Obj

# watch_cache.go resourceVersionTooHighRetrySeconds: the retry a too new read is told
RV_TOO_HIGH_RETRY_SECONDS = 1

EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


class Filter:
    """Label and field selectors of a list or watch, compiled once."""

    def __init__(self, codec: StorageCodec, rt: ResourceType, opts: ListOptions) -> None:
        self._rt = rt
        # a CR converted by webhook has the same metadata in every version: a selector on
        # metadata alone is matched as stored
        self._view = codec.from_storage if rt.conversion_webhook is None else _as_stored
        self._labels = labels.parse(opts.label_selector) if opts.label_selector else None
        self._fields = None
        if opts.field_selector:
            self._fields = fieldlabels.convert_field_selector(
                rt, fields.parse(opts.field_selector))
        self.empty = self._labels is None and self._fields is None
        # a selectable field of a CR converted by webhook is read from the object converted
        # to the version asked for (each version's storage decodes, and its cacher filters,
        # converted objects: apiextensions customresource_handler.go, strategy.go GetAttrs):
        # matches() leaves it to matches_converted(), after the webhook has converted
        self.fields_after_conversion = rt.conversion_webhook is not None and \
            self._fields is not None and any(
                r.field not in ("metadata.name", "metadata.namespace")
                for r in self._fields.requirements)

    def cache_index(self, namespaced_request: bool) -> Callable[[Obj], bool] | None:
        """The watch cache's index a LIST from it reads through, as a test of a stored
        object: pods are indexed by spec.nodeName and metadata.namespace, used when the
        field selector pins one (the namespace's only for a request across namespaces: a
        namespaced one lists its prefix anyway). The cache reads only the index's objects,
        so only they decide whether a full page has more.
        Source: k8s.io/kubernetes pkg/registry/core/pod/strategy.go (MatchPod IndexFields,
        Indexers), k8s.io/apiserver pkg/storage/selection_predicate.go (MatcherIndex),
        cacher/watch_cache.go (WaitUntilFreshAndList: ByIndex)."""
        if self._fields is None or self._rt.group or self._rt.kind != "Pod":
            return None
        node = self._fields.requires_exact_match("spec.nodeName")
        if node is not None:
            return lambda obj: _text((obj.get("spec") or {}).get("nodeName")) == node
        namespace = self._fields.requires_exact_match("metadata.namespace")
        if namespace is not None and not namespaced_request:
            return lambda obj: _text(obj["metadata"].get("namespace")) == namespace
        return None

    @property
    def label_pairs(self) -> tuple[tuple[str, str], ...]:
        """The labels every match carries, for the store's label index."""
        return self._labels.equalities if self._labels is not None else ()

    def matches(self, obj: Obj) -> bool:
        if self._labels is not None and not self._labels.matches(
                obj["metadata"].get("labels") or {}):
            return False
        if self._fields is not None and not self.fields_after_conversion:
            view = self._view(self._rt, obj)
            return bool(self._fields.matches(self._rt.strategy.field_labels(self._rt, view)))
        return True

    def matches_converted(self, obj: Obj) -> bool:
        """The field selector on an object converted to the version listed or watched."""
        return self._fields is None or bool(
            self._fields.matches(self._rt.strategy.field_labels(self._rt, obj)))


# etcd's answer to a read at a revision it has not reached (mvcc.ErrFutureRev), which
# etcd3's interpretListError passes through: a 500 with no reason
FUTURE_REVISION = "etcdserver: mvcc: required revision is a future revision"


def parse_rv(value: str) -> int:
    """``APIObjectVersioner.ParseResourceVersion`` (k8s.io/apiserver/pkg/storage/
    api_object_versioner.go): "" and "0" are 0; anything else must be a uint64, or it is a
    storage ``InvalidError``, which no layer above turns into a Status: a 500 with no reason
    worded as the field error (see :func:`invalid_rv_bad_request` for etcd's reads)."""
    if value in ("", "0"):
        return 0
    why = parse_uint_error(value)
    if why:
        raise errors.StatusError(500, "", fielderrors.error_text(fielderrors.invalid(
            "resourceVersion", value, why)))
    return int(value)


def invalid_rv_bad_request(value: str) -> int:
    """As :func:`parse_rv` for reads served by etcd3's store, which wraps the error in a
    400 (``resolveGetListRev``: "invalid resource version: ...")."""
    try:
        return parse_rv(value)
    except errors.StatusError as err:
        raise errors.bad_request(f"invalid resource version: {err.message}") from None


def served_from_etcd(opts: ListOptions) -> bool:
    """Whether the watch cache hands a LIST to etcd (``shouldDelegateList`` in
    k8s.io/apiserver/pkg/storage/cacher/cacher.go, 1.32 with ConsistentListFromCache):
    continuations, Exact, and the legacy exact read (a limit with a resourceVersion but no
    match)."""
    rv, match = opts.resource_version, opts.resource_version_match
    legacy_exact = opts.limit > 0 and not match and rv not in ("", "0")
    return bool(opts.continue_token) or (match not in ("", NOT_OLDER_THAN)) or legacy_exact


def cache_wait_revision(opts: ListOptions) -> int:
    """The revision the watch cache waits for before it serves a LIST or WATCH (0: none);
    an unparsable resourceVersion is :func:`parse_rv`'s 500, raised before any wait. A LIST
    waits unless it goes to etcd (cacher.go GetList → watch_cache.go WaitUntilFreshAndList);
    a WATCH only when it sends initial events (cacher.go
    waitUntilWatchCacheFreshAndForceAllEvents): any other watch starts at once and skips
    the events up to its resourceVersion."""
    if opts.watch:
        return parse_rv(opts.resource_version) if opts.send_initial_events else 0
    if served_from_etcd(opts):
        return 0
    return parse_rv(opts.resource_version)


def too_large(wanted: int, current: int) -> errors.StatusError:
    """The watch cache's answer when it has not reached ``wanted`` (watch_cache.go
    waitUntilFreshAndBlock)."""
    return errors.too_large_resource_version(wanted, current, RV_TOO_HIGH_RETRY_SECONDS)


def _as_stored(rt: ResourceType, obj: Obj) -> Obj:
    return obj


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def list_steps(store: Store, codec: StorageCodec, rt: ResourceType, ns: str | None,
               opts: ListOptions) -> Steps[Obj]:
    """A LIST: one page of the matching objects, converted together when they must be."""
    listed = list_stored(store, codec, rt, ns, opts)
    items = yield from codec.present_all_steps(rt, [orjson.loads(r) for r in listed["items"]])
    listed["items"] = [list_item(rt, obj) for obj in items]
    return listed


def list_stored(store: Store, codec: StorageCodec, rt: ResourceType, ns: str | None,
                opts: ListOptions) -> Obj:
    """A LIST's answer with its page of objects as stored, as their JSON (bytes: to decode and
    present with ``list_item``, or served as they are by ``list_items_json``). Reading them
    costs the keys visited; nothing is decoded unless a selector must look inside."""
    flt = Filter(codec, rt, opts)
    start = ""  # the key to start at (a continuation's), relative to the prefix listed
    at: int | None = None  # the revision to list at; None: now
    limit = opts.limit
    if opts.continue_token:
        # etcd3 store.go GetList: the token is decoded first, then resolveGetListRev; a
        # token's revision below 0 asks for the latest, one etcd has not reached is
        # mvcc's ErrFutureRev
        token_revision, start = decode_continue(opts.continue_token)
        if opts.resource_version not in ("", "0"):
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue")
        revision = store.revision
        if token_revision > 0:
            if token_revision > store.revision:
                raise errors.StatusError(500, "", FUTURE_REVISION)
            at = revision = token_revision
    elif served_from_etcd(opts):
        revision = store.revision
        wanted = invalid_rv_bad_request(opts.resource_version)
        if wanted:  # Exact, or the legacy exact read of a page
            if wanted > store.revision:
                raise errors.StatusError(500, "", FUTURE_REVISION)
            at = revision = wanted
    else:
        # the watch cache: at least the resourceVersion asked for; it ignores the limit of
        # a read at "0" (cacher.go computeListLimit)
        revision = store.revision
        wanted = parse_rv(opts.resource_version)
        if wanted > store.revision:
            raise too_large(wanted, store.revision)
        if opts.resource_version == "0":
            limit = 0
    # etcd keys: /<resource>/<namespace>/<name>; a continue key is relative to the prefix
    # listed (k8s.io/apiserver/pkg/storage/etcd3/store.go GetList)
    prefix = "" if rt.namespaced and ns is None else f"{ns or ''}/"
    scan = store.scan(rt.storage_key, prefix, prefix + start if start else "", at,
                      flt.label_pairs, inclusive=True)
    if scan is None:
        if opts.continue_token:
            # etcd3/errors.go handleCompactedErrorForPaging: the answer carries a token that
            # resumes at the same key at the latest revision
            expired = errors.resource_expired(EXPIRED_CONTINUE)
            expired.continue_token = encode_continue(-1, start)
            raise expired
        raise errors.resource_expired("The resourceVersion for the provided list is too old.")
    if flt.fields_after_conversion:
        limit = 0  # every candidate: page_converted() pages the converted matches
    follows: Callable[[str], int] = scan.count_after
    index = None if opts.continue_token or served_from_etcd(opts) else flt.cache_index(
        ns is not None)
    if index is not None:
        def indexed_follows(last: str) -> int:
            rest = store.scan(rt.storage_key, prefix, last, at)
            return int(rest is not None and any(index(orjson.loads(raw)) for _, raw in rest))
        follows = indexed_follows
    return _page(rt, flt, scan, prefix, revision, limit, follows)


def page_converted(codec: StorageCodec, rt: ResourceType, ns: str | None, opts: ListOptions,
                   listed: Obj, converted: list[Obj]) -> Obj:
    """``listed`` (from list_stored) with its items replaced by the ``converted`` ones that
    the field selector matches, a page of them when a limit applies, its continue token
    resuming after the page's last object as list_stored's would."""
    flt = Filter(codec, rt, opts)
    if not flt.fields_after_conversion:
        return {**listed, "items": converted}
    limit = opts.limit
    if opts.resource_version == "0" and not served_from_etcd(opts):
        limit = 0  # the watch cache ignores the limit of a read at "0"
    # matched as the storage decodes them: with their schema's defaults
    matched = [obj for obj in converted if flt.matches_converted(codec.with_defaults(rt, obj))]
    meta = dict(listed["metadata"])
    if limit and len(matched) > limit:
        matched = matched[:limit]
        last = matched[-1]["metadata"]
        key = last["name"] if not rt.namespaced or ns is not None \
            else f"{last.get('namespace', '')}/{last['name']}"
        meta["continue"] = encode_continue(int(meta["resourceVersion"]), key + "\x00")
    return {**listed, "metadata": meta, "items": matched}


def _page(rt: ResourceType, flt: Filter, scan: Scan, prefix: str,
          revision: int, limit: int, follows: Callable[[str], int]) -> Obj:
    """One page of ``scan``'s matches; ``follows(last)``: how many keys the storage read
    holds after the page's last (0: none, and no continue token)."""
    out: list[bytes] = []
    cont = ""
    remaining: int | None = None
    last = ""
    for key, obj in scan:
        if not flt.empty and not flt.matches(orjson.loads(obj)):
            continue
        out.append(obj)
        last = key
        if limit and len(out) == limit:
            break
    if limit and len(out) == limit:
        # a full page has more whenever any key of the range follows its last, matching or
        # not (cacher.go GetList: hasMoreListItems = i < len(objs)-1; etcd3 store.go
        # GetList: the bucket full with keys left); the next page starts after it
        following = follows(last)
        if following:
            cont = encode_continue(revision, last[len(prefix):] + "\x00")
            if flt.empty:
                remaining = following
    # custom resource lists are unstructured: they always carry the continue key
    meta: Obj = {"continue": "", "resourceVersion": str(revision)} if rt.is_custom else {
        "resourceVersion": str(revision)}
    if cont:
        meta["continue"] = cont
        if remaining is not None:
            meta["remainingItemCount"] = remaining
    return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": out}


def list_item(rt: ResourceType, obj: Obj) -> Obj:
    if rt.is_custom:
        return obj
    # items of built-in lists carry no kind/apiVersion (the list says them)
    return {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}


def list_items_json(rt: ResourceType, raws: list[bytes]) -> bytes:
    """``list_item`` of stored objects served as stored (``StorageCodec.serves_stored``), on
    their JSON, comma-separated: a built-in item loses its leading kind and apiVersion
    without being decoded, and the page is copied once."""
    if rt.is_custom:
        return b",".join(raws)
    first, second = _type_heads(rt.kind, rt.api_version)
    skip = len(first)  # both orders are as long
    tails: list[memoryview] = []  # each item after its "{"
    for raw in raws:
        if raw.startswith(first) or raw.startswith(second):
            tails.append(memoryview(raw)[skip:])
        else:  # kind and apiVersion elsewhere, or another version's
            tails.append(memoryview(gojson.dumps(list_item(rt, orjson.loads(raw))))[1:])
    return b"{" + b",{".join(tails) if tails else b""


@lru_cache(maxsize=1024)
def _type_heads(kind: str, api_version: str) -> tuple[bytes, bytes]:
    """How a stored object of the type begins when its kind and apiVersion come first."""
    return (orjson.dumps({"kind": kind, "apiVersion": api_version})[:-1] + b",",
            orjson.dumps({"apiVersion": api_version, "kind": kind})[:-1] + b",")
