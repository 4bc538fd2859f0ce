"""The CRD conversion webhook: ``ConversionReview`` in, the objects in another version out.

    conversion = Conversion()                      # served at /convert

    @conversion.register(MemcachedV1, MemcachedV2)
    def v1_to_v2(old: MemcachedV1) -> MemcachedV2: ...

    @conversion.register(MemcachedV2, MemcachedV1)
    def v2_to_v1(new: MemcachedV2) -> MemcachedV1: ...

    manager = Manager([memcached], webhooks=[conversion])

Functions convert one version of a kind into another; typed classes get and return typed
objects, ``Kind`` references dicts (a dict returned with its input's ``apiVersion`` is
taken to be in the target version). Hub and spoke is no special case: when no function goes
straight from one version to the other, the shortest chain of registered conversions is used
(``v1 -> v2 (hub) -> v3``), so registering each spoke to and from the hub is enough, as
controller-runtime's ``Hub``/``Convertible``; pairwise functions win where they exist.

The API server only accepts a converted object whose metadata is unchanged apart from
labels and annotations, so the original metadata is put back with the converted labels and
annotations. Any failure answers ``result.status: Failure`` with the message; a body that
is not a ConversionReview gets HTTP 400.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from setpoint.machinery.objects import Obj
from setpoint.resources._webhooks import ConversionRegistration
from setpoint.runtime._objects import KindKey, as_dict, clone, decode, kind_key
from setpoint.runtime._webhook.endpoint import Answer, Endpoint
from setpoint.runtime._webhook.review import ReviewError, read_review

if TYPE_CHECKING:
    from setpoint.client import Client

__all__ = ["Conversion", "ConversionError"]

log = logging.getLogger("setpoint.runtime._webhook")

CONVERSION_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")

ConvertFunc = Callable[[Any], Any]


class ConversionError(Exception):
    """An object could not be converted (answered as a Failure result)."""


@dataclass(frozen=True)
class _Step:
    source: Any
    target: Any
    func: ConvertFunc


class Conversion:
    """The conversion functions of any number of kinds, served at one ``path``."""

    def __init__(self, path: str = "/convert") -> None:
        self.path = path
        # (group, kind) -> source apiVersion -> target apiVersion -> step
        self._graph: dict[tuple[str, str], dict[str, dict[str, _Step]]] = {}

    def __repr__(self) -> str:
        kinds = [f"{kind}.{group}" if group else kind for group, kind in self._graph]
        return f"Conversion({self.path!r}, kinds={kinds})"

    # -- registration ----------------------------------------------------------------------

    def register(self, source: Any, target: Any) -> Callable[[ConvertFunc], ConvertFunc]:
        """Decorator: ``func(obj) -> converted`` turns ``source`` objects into ``target``
        objects (typed classes or ``Kind`` references of one group and kind)."""
        def decorate(func: ConvertFunc) -> ConvertFunc:
            self.add(source, target, func)
            return func
        return decorate

    def add(self, source: Any, target: Any, func: ConvertFunc) -> None:
        """Register ``func`` as the conversion from ``source`` to ``target``."""
        src, dst = kind_key(source), kind_key(target)
        if (src.group, src.kind) != (dst.group, dst.kind):
            raise ValueError(f"{src} and {dst} are not versions of one group and kind")
        if src.api_version == dst.api_version:
            raise ValueError(f"conversion is not allowed between the same version {src}")
        edges = self._graph.setdefault((src.group, src.kind), {}).setdefault(
            src.api_version, {})
        if dst.api_version in edges:
            raise ValueError(f"a conversion from {src} to {dst} is already registered")
        edges[dst.api_version] = _Step(source, target, func)

    def kinds(self) -> list[tuple[str, str]]:
        """The (group, kind) pairs this webhook converts."""
        return list(self._graph)

    def registrations(self) -> list[ConversionRegistration]:
        """What the CRDs' ``spec.conversion`` should say (see ``set_conversion_webhooks``)."""
        return [ConversionRegistration(group, kind, self.path) for group, kind in self._graph]

    # -- converting ------------------------------------------------------------------------

    async def convert(self, obj: Obj, desired_api_version: str) -> Obj:
        """``obj`` in ``desired_api_version`` (itself when already there); raises
        :class:`ConversionError` when no chain of registered functions leads there."""
        key = kind_key(obj)
        if key.api_version == desired_api_version:
            return obj
        steps = self._route(key, desired_api_version)
        current: Obj = obj
        for step in steps:
            current = await self._apply(step, current)
        return _restore_metadata(obj, current, desired_api_version)

    def _route(self, key: KindKey, desired: str) -> list[_Step]:
        """The shortest chain of steps from ``key``'s version to ``desired`` (BFS)."""
        graph = self._graph.get((key.group, key.kind), {})
        if desired.rpartition("/")[0] != key.group:
            raise ConversionError(f"{key.api_version} {key.kind} cannot be converted to "
                                  f"another group ({desired})")
        came_from: dict[str, _Step | None] = {key.api_version: None}
        queue = deque([key.api_version])
        while queue:
            version = queue.popleft()
            if version == desired:
                break
            for target, step in graph.get(version, {}).items():
                if target not in came_from:
                    came_from[target] = step
                    queue.append(target)
        if desired not in came_from:
            raise ConversionError(f"no conversion of {key.kind} from {key.api_version} to "
                                  f"{desired} is registered")
        steps: list[_Step] = []
        version = desired
        while (back := came_from[version]) is not None:
            steps.append(back)
            version = kind_key(back.source).api_version
        return steps[::-1]

    @staticmethod
    async def _apply(step: _Step, obj: Obj) -> Obj:
        src, dst = kind_key(step.source), kind_key(step.target)
        try:
            result = step.func(decode(step.source, clone(obj)))
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            raise
        except ConversionError:
            raise
        except Exception as exc:
            raise ConversionError(f"converting {obj.get('kind')} from {src.api_version} to "
                                  f"{dst.api_version} failed: {exc}") from exc
        out = dict(as_dict(result))
        if isinstance(result, dict) and out.get("apiVersion") in (None, src.api_version):
            # a dict conversion that copied its input need not restate the version
            out["apiVersion"] = dst.api_version
        out.setdefault("apiVersion", dst.api_version)
        out.setdefault("kind", dst.kind)
        if (out["apiVersion"], out["kind"]) != (dst.api_version, dst.kind):
            raise ConversionError(f"the conversion to {dst} returned "
                                  f"{out['apiVersion']} {out['kind']}")
        return out

    # -- serving ---------------------------------------------------------------------------

    def endpoints(self, client: Client | None = None) -> list[Endpoint]:
        """The conversion path (``client`` is unused: conversions are pure functions)."""
        return [Endpoint(self.path, self.handle)]

    async def handle(self, body: bytes, content_type: str) -> Answer:
        """Answer one ConversionReview body."""
        try:
            api_version, request = _decode_review(body, content_type)
        except ConversionError as exc:
            log.warning("conversion_review_rejected error=%r", str(exc))
            return 400, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Failure", "message": str(exc), "reason": "BadRequest",
                         "code": 400}
        uid = str(request.get("uid") or "")
        desired = request.get("desiredAPIVersion")
        response: Obj
        try:
            if not isinstance(desired, str) or not desired:
                raise ConversionError("request.desiredAPIVersion is required")
            objects = request.get("objects") or []
            if not isinstance(objects, list) or not all(isinstance(o, dict) for o in objects):
                raise ConversionError("request.objects must be a list of objects")
            converted = [await self.convert(o, desired) for o in objects]
            response = {"uid": uid, "convertedObjects": converted,
                        "result": {"metadata": {}, "status": "Success"}}
        except (ConversionError, ValueError, TypeError) as exc:
            log.warning("conversion_failed uid=%s error=%r", uid, str(exc))
            response = {"uid": uid, "convertedObjects": None,
                        "result": {"metadata": {}, "status": "Failure", "message": str(exc)}}
        return 200, {"kind": "ConversionReview", "apiVersion": api_version,
                     "response": response}


def _decode_review(body: bytes, content_type: str) -> tuple[str, Obj]:
    try:
        return read_review(body, content_type, "ConversionReview", CONVERSION_VERSIONS,
                           "conversion request is nil")
    except ReviewError as exc:
        raise ConversionError(str(exc)) from None


def _restore_metadata(original: Obj, converted: Obj, desired: str) -> Obj:
    """``converted`` with ``original``'s metadata, except the converted labels and
    annotations (the only metadata the API server lets a conversion change)."""
    metadata = clone(original.get("metadata") or {})
    new_meta = converted.get("metadata") or {}
    for key in ("labels", "annotations"):
        value = new_meta.get(key)
        if value:
            metadata[key] = value
        else:
            metadata.pop(key, None)
    return {**converted, "apiVersion": desired, "metadata": metadata}
