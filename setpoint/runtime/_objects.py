"""Reading Kubernetes objects the same way whether they are dicts or typed models.

The runtime keeps every object as the JSON dict the server sent (cheap to store, cheap to
compare) and turns it into the user's typed class only at the edge, when a reconciler or a
cache read asks for that class. These helpers are the few accessors the machinery needs on
those dicts, plus the conversions at the edge.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard, TypeVar, cast

import orjson

from setpoint.client import GVR, Kind, ResourceInfo
from setpoint.client.typed import from_body, is_typed_class, to_body
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T")


class KindKey(NamedTuple):
    """What identifies a kind inside the runtime: ``apiVersion`` and ``kind``."""

    api_version: str
    kind: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


class KindNameError(TypeError):
    """A kind named by a string (``owns("ConfigMap")``, as kopf spells kinds) where its class
    or a ``Kind`` is wanted."""


_KIND_KEYS: dict[tuple[str, str], KindKey] = {}
_CLASS_KEYS: dict[type, KindKey] = {}
"""Typed classes met by :func:`kind_key` (classes are few and live as long as the process)."""
_INSTANCE_KEYS: dict[type, KindKey] = {}
"""The same, for the classes of typed instances met."""


def _kind_key_of(api_version: str, kind: str) -> KindKey:
    if len(_KIND_KEYS) >= 4096:  # a bound: kinds are few, but the dicts come from outside
        _KIND_KEYS.clear()
    key = _KIND_KEYS[(api_version, kind)] = KindKey(api_version, kind)
    return key


def kind_key(ref: object) -> KindKey:
    """The :class:`KindKey` of a typed class, a :class:`Kind`, a :class:`ResourceInfo`,
    a :class:`KindKey` or an object (dict or typed instance)."""
    if type(ref) is dict:  # first: the runtime asks this of every object it handles
        api_version, kind = ref.get("apiVersion"), ref.get("kind")
        # a KindKey per kind, not per call: the tuple's lookup costs less than building
        # a named tuple (a Python-level __new__), several times per write
        if isinstance(api_version, str) and isinstance(kind, str):
            known = _KIND_KEYS.get((api_version, kind))
            return known if known is not None else _kind_key_of(api_version, kind)
        raise ValueError("object has no apiVersion and kind")
    if type(ref) is KindKey:
        return ref
    # a typed class, or an instance of one, met before: its class names its kind
    known = _CLASS_KEYS.get(ref) if isinstance(ref, type) else _INSTANCE_KEYS.get(type(ref))
    if known is not None:
        return known
    if isinstance(ref, KindKey):
        return ref
    if isinstance(ref, Kind | ResourceInfo):
        return KindKey(ref.api_version, ref.kind)
    if is_typed_class(ref):
        # is_typed_class checked both are str class attributes
        cls = cast(type, ref)
        known = _CLASS_KEYS[cls] = KindKey(cls.api_version, cls.kind)  # type: ignore[attr-defined]
        return known
    if isinstance(ref, Mapping):
        api_version, kind = ref.get("apiVersion"), ref.get("kind")
        if isinstance(api_version, str) and isinstance(kind, str):
            return KindKey(api_version, kind)
        raise ValueError("object has no apiVersion and kind")
    if isinstance(ref, GVR):
        raise TypeError(f"{ref!r}: name the kind (a typed class or Kind), not the resource")
    if is_typed_class(type(ref)):
        # only a typed class's instance that none of the checks above took comes here
        known = _INSTANCE_KEYS[type(ref)] = kind_key(type(ref))
        return known
    if isinstance(ref, str):
        raise KindNameError(_string_kind_message(ref))
    raise TypeError(f"cannot tell the kind of {ref!r}: name it by its class (a typed "
                    "resource) or Kind(apiVersion, kind)")


def _string_kind_message(name: str) -> str:
    """What to write instead of a kind named by a string (as kopf and kubectl spell them):
    the built-in class of that name, or the closest, when there is one."""
    import difflib
    import re
    from pathlib import Path

    import setpoint.resources.models as models

    # the generated modules, read as text: importing every one would cost a second
    found: dict[str, str] = {}
    for module in sorted(Path(models.__file__).parent.glob("*_v*.py")):
        for cls in re.findall(r"^class (\w+)\(Resource\)", module.read_text(), re.M):
            found.setdefault(cls.lower(), f"from setpoint.resources.models.{module.stem} "
                                          f"import {cls}")
    wanted = name.rstrip("s").lower() if name.lower() not in found else name.lower()
    close = difflib.get_close_matches(wanted, list(found), n=1, cutoff=0.8)
    if close:
        cls = found[close[0]].rpartition(" ")[2]
        return (f"the kind {name!r} is a string: name a kind by its class: did you mean "
                f"{cls} ({found[close[0]]})?")
    return (f"the kind {name!r} is a string: name a kind by its class (a CustomResource "
            f"or a built-in such as ConfigMap) or by Kind(apiVersion, kind)")


_REFS: dict[KindKey, Kind] = {}
"""One (frozen) ``Kind`` per KindKey: a write asks for its kind's several times."""


def as_ref(ref: object) -> Any:
    """A reference the client can resolve: typed classes and Kinds as they are."""
    if isinstance(ref, KindKey):
        found = _REFS.get(ref)
        if found is None:
            found = Kind(ref.api_version, ref.kind)
            if len(_REFS) < 1024:
                _REFS[ref] = found
        return found
    return ref


as_dict: Callable[[object], Obj] = to_body
"""The wire dict of a dict or typed object (dicts are returned as they are): the client's
``to_body`` itself, not a function calling it (asked several times per write)."""


def _is_model(obj: object) -> TypeGuard[BaseModel]:
    """Whether ``obj`` is a pydantic model, without importing pydantic: a process that has
    not loaded it (a manager of dicts only, such as the cluster's workloads, which start
    0.1 s sooner without it) has no model to hand."""
    cls = type(obj)
    known = _MODEL_CLASSES.get(cls)
    if known is None:
        # per class: pydantic's metaclass is an ABCMeta, whose instance check is a
        # Python-level call (once per create)
        pydantic = sys.modules.get("pydantic")
        known = pydantic is not None and isinstance(obj, pydantic.BaseModel)
        if len(_MODEL_CLASSES) < 4096:  # a class made before pydantic was loaded is none
            _MODEL_CLASSES[cls] = known
    return known


_MODEL_CLASSES: dict[type, bool] = {}


def owned_dict(obj: object) -> Obj:
    """A wire dict of ``obj`` that the caller may change: a pydantic model's dump is new
    already; a dict (or another class's ``to_dict()``, which may hand out its own) is
    copied."""
    if _is_model(obj):
        return as_dict(obj)
    return clone(as_dict(obj))


_WITH_STATUS: dict[type, bool] = {}


def _has_status(cls: type[BaseModel]) -> bool:
    """Whether the model class has a ``status`` field (``model_fields`` is a property
    that builds its answer on each read; a class's fields do not change)."""
    has = _WITH_STATUS.get(cls)
    if has is None:
        has = _WITH_STATUS[cls] = "status" in cls.model_fields
    return has


_STATUS_MODELS: dict[type, bool] = {}
"""Per class met by :func:`with_status_only`: whether it is a pydantic model with a
``status`` field (a class is one or not for its whole life)."""


def with_status_only(obj: object) -> Obj:
    """The wire dict of ``obj`` as far as a status write needs it: a pydantic model's
    ``apiVersion``, ``kind`` and ``status`` alone (its ``status`` is absent when never
    set, as in a whole dump), anything else whole. Dicts are returned as they are."""
    cls = type(obj)
    status_model = _STATUS_MODELS.get(cls)
    if status_model is None:
        status_model = _is_model(obj) and _has_status(type(obj))
        if len(_STATUS_MODELS) < 4096:
            _STATUS_MODELS[cls] = status_model
    if status_model:
        # the status model's dump under the header, where the class allows (half the cost)
        model = sys.modules.get("setpoint.resources._model")
        dumped: Obj | None = model.status_only_dump(obj) if model is not None else None
        if dumped is not None:
            return dumped
        whole: Obj = obj.model_dump(  # type: ignore[attr-defined]
            mode="json", by_alias=True, include={"status"})
        return whole
    return to_body(obj)


_TYPED_MODELS: dict[type, KindKey | None] = {}
"""Per class: its kind when its instances are pydantic models of a typed class with a
``metadata`` field, else None (kept per class: a class's fields and kind are fixed once it
exists; one KindKey per class, not a new tuple per call)."""

_PLAIN_METADATA: dict[type, bool] = {}
"""Per class of a typed model or its ``metadata``: whether it is no Mapping (an ABC
instance check, a Python-level call, asked of every write several times)."""


def is_plain_class(cls: type) -> bool:
    """Whether instances of ``cls`` are no Mapping, asked once per class."""
    plain = _PLAIN_METADATA.get(cls)
    if plain is None:
        plain = not issubclass(cls, Mapping)
        if len(_PLAIN_METADATA) < 1024:
            _PLAIN_METADATA[cls] = plain
    return plain


def _is_typed_model_class(cls: type) -> bool:
    pydantic = sys.modules.get("pydantic")
    return (pydantic is not None and issubclass(cls, pydantic.BaseModel)
            and not issubclass(cls, Mapping) and is_typed_class(cls)
            and "metadata" in getattr(cls, "model_fields", {}))


def identity(obj: object) -> tuple[KindKey, str, str]:
    """The kind, namespace and name of a dict or typed object; a typed object's are read
    from its ``metadata`` without encoding the whole object."""
    cls = type(obj)
    if cls in _TYPED_MODELS:
        typed = _TYPED_MODELS[cls]
    else:
        typed = _TYPED_MODELS[cls] = KindKey(
            cls.api_version, cls.kind) if _is_typed_model_class(cls) else None  # type: ignore[attr-defined]
    if typed is not None:
        # a typed model (asked of every write, several times): its class names the kind,
        # with none of kind_key's checks (an ABC instance check among them)
        metadata = obj.metadata  # type: ignore[attr-defined]
        if metadata is not None and (_PLAIN_METADATA.get(type(metadata))
                                     or is_plain_class(type(metadata))):
            return (typed,
                    str(getattr(metadata, "namespace", None) or ""),
                    str(getattr(metadata, "name", None) or ""))
    metadata = None if cls is dict or isinstance(obj, Mapping) \
        else getattr(obj, "metadata", None)
    if metadata is None or isinstance(metadata, Mapping):
        body = as_dict(obj)
        return kind_key(body), namespace_of(body), name_of(body)
    return (kind_key(obj), str(getattr(metadata, "namespace", None) or ""),
            str(getattr(metadata, "name", None) or ""))


_PLAIN_VALIDATION: dict[type, bool] = {}
"""Per class met by :func:`decode`: whether it is typed and ``from_body`` would come down to
pydantic's own ``model_validate`` (``Model.from_dict`` and ``BaseModel.model_validate`` not
overridden), so its validator can be asked at once. A class's methods do not change once
it exists."""


def _validates_plainly(cls: type) -> bool:
    plain = _PLAIN_VALIDATION.get(cls)
    if plain is None:
        model = sys.modules.get("setpoint.resources._model")
        pydantic = sys.modules.get("pydantic")
        plain = (model is not None and pydantic is not None and is_typed_class(cls)
                 and getattr(getattr(cls, "from_dict", None), "__func__", None)
                 is model.Model.from_dict.__func__
                 and getattr(getattr(cls, "model_validate", None), "__func__", None)
                 is pydantic.BaseModel.model_validate.__func__)
        if len(_PLAIN_VALIDATION) < 4096:
            _PLAIN_VALIDATION[cls] = plain
    return plain


def decode(cls: object, data: Obj) -> Any:
    """``data`` as an instance of ``cls`` when it is a typed class, else the dict itself."""
    if isinstance(cls, type) and cls is not dict and (
            _PLAIN_VALIDATION.get(cls) or _validates_plainly(cls)):
        # what Model.from_dict → BaseModel.model_validate end in, without their two calls
        # and class attribute reads (each a Python-level __getattr__ hook on a pydantic
        # class: about 700 instructions), a reconcile's typed object or two per event;
        # the validator is read each time, as model_rebuild may replace it
        return cls.__pydantic_validator__.validate_python(data)  # type: ignore[attr-defined]
    if is_typed_class(cls):
        return from_body(cast(type[Any], cls), data)
    return data


def clone(data: Obj) -> Obj:
    """A deep copy of a JSON-compatible dict (a JSON round trip is faster than deepcopy)."""
    copied: Obj = orjson.loads(orjson.dumps(data))  # no cast(): a Python call per copy
    return copied


_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` of a dict object (an empty mapping when missing)."""
    return obj.get("metadata") or {}


# The accessors below read ``metadata`` themselves rather than through meta(): the runtime
# asks them about 40 times per event (issue 12, fourteenth pass: a call each spared).

def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or _NO_METADATA).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or _NO_METADATA).get("namespace") or "")


def resource_version_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or _NO_METADATA).get("resourceVersion") or "")


def object_key(namespace: str | None, name: str) -> str:
    """The store key: ``namespace/name``, or ``name`` for cluster-scoped objects."""
    return f"{namespace}/{name}" if namespace else name


def key_of(obj: Mapping[str, Any]) -> str:
    """The store key of a dict object (:func:`object_key` of its namespace and name)."""
    m = obj.get("metadata") or _NO_METADATA
    namespace, name = m.get("namespace"), m.get("name")
    if type(name) is not str:
        name = str(name or "")
    return f"{namespace}/{name}" if namespace else name


def field_value(obj: Mapping[str, Any], path: str) -> str | None:
    """The value at a dotted path (``status.phase``) as a field selector sees it."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if node is None or isinstance(node, dict | list):
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)
