"""KubePlus's relationship annotations on a CRD, declared on a typed custom resource.

An operator says on its CRD what the instances of its kind create and how they relate to
other objects, so that platform tools (``setpoint graph``, KubePlus's ``kubectl
connections``) can find an application stack's objects without knowing the operator. The
five annotations and their value syntax are KubePlus's (cloud-ark/kubeplus ``Guidelines.md``,
``Operator-annotations.md``, ``details.rst``)::

    resource/composition: Deployment, Service, Secret
    resource/usage: moodle-operator-usage
    resource/annotation-relationship: >-
      on:Ingress, key:cert-manager.io/cluster-issuer, value:INSTANCE.metadata.name
    resource/label-relationship: on:PersistentVolumeClaim, key:app, value:INSTANCE.metadata.name
    resource/label-relationship: on:Deployment, value:INSTANCE.spec.selector
    resource/specproperty-relationship: >-
      on:INSTANCE.spec.mySQLServiceName, value:Service.spec.metadata.name

Several relationships of one form go in one annotation separated by ``;``. Declared on a
class, they land on the generated CRD::

    class Moodle(CustomResource, group="moodle.example.com", version="v1",
                 composition=["Deployment", "Service"],
                 relationships=[SpecPropertyRelationship("spec.mysqlCluster",
                                                         "MysqlCluster.metadata.name")]):
        ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

COMPOSITION = "resource/composition"
USAGE = "resource/usage"
ANNOTATION_RELATIONSHIP = "resource/annotation-relationship"
LABEL_RELATIONSHIP = "resource/label-relationship"
SPECPROPERTY_RELATIONSHIP = "resource/specproperty-relationship"

INSTANCE = "INSTANCE"

__all__ = [
    "ANNOTATION_RELATIONSHIP",
    "COMPOSITION",
    "LABEL_RELATIONSHIP",
    "SPECPROPERTY_RELATIONSHIP",
    "USAGE",
    "AnnotationRelationship",
    "LabelRelationship",
    "Relationship",
    "RelationshipSyntaxError",
    "SpecPropertyRelationship",
    "crd_annotations",
    "parse_composition",
    "parse_relationships",
]


class RelationshipSyntaxError(ValueError):
    """An annotation value that is not in KubePlus's syntax."""


@dataclass(frozen=True)
class AnnotationRelationship:
    """Objects of kind ``on`` whose annotation ``key`` holds the instance's ``value`` path
    (``INSTANCE.metadata.name``); with ``contains`` the annotation is a comma-separated
    list that holds it (KubePlus's ``value:contains(INSTANCE...)``)."""

    on: str
    key: str
    value: str = "metadata.name"
    contains: bool = False

    def to_annotation(self) -> str:
        value = f"{INSTANCE}.{self.value}"
        if self.contains:
            value = f"contains({value})"
        return f"on:{self.on}, key:{self.key}, value:{value}"


@dataclass(frozen=True)
class LabelRelationship:
    """Objects of kind ``on`` whose label ``key`` equals the instance's ``value`` path, or,
    without a key, whose labels match the label selector (a map, or a
    ``matchLabels``/``matchExpressions`` selector) at the instance's ``value`` path."""

    on: str
    value: str
    key: str | None = None

    def to_annotation(self) -> str:
        key = f" key:{self.key}," if self.key else ""
        return f"on:{self.on},{key} value:{INSTANCE}.{self.value}"


@dataclass(frozen=True)
class SpecPropertyRelationship:
    """The instance's property ``on`` (``spec.mySQLServiceName``) names an object of
    ``kind`` by its field ``field`` (``metadata.name``)."""

    on: str
    target: str
    """``Kind.path``: ``Service.metadata.name`` (KubePlus writes ``Service.spec.metadata.name``)."""

    @property
    def kind(self) -> str:
        return self.target.split(".", 1)[0]

    @property
    def field(self) -> str:
        path = self.target.split(".", 1)[1] if "." in self.target else "metadata.name"
        # KubePlus's own examples say ``Service.spec.metadata.name`` for the name
        return path.removeprefix("spec.") if path == "spec.metadata.name" else path

    def to_annotation(self) -> str:
        return f"on:{INSTANCE}.{self.on}, value:{self.target}"


Relationship = AnnotationRelationship | LabelRelationship | SpecPropertyRelationship

_ANNOTATION_OF: dict[type, str] = {
    AnnotationRelationship: ANNOTATION_RELATIONSHIP,
    LabelRelationship: LABEL_RELATIONSHIP,
    SpecPropertyRelationship: SPECPROPERTY_RELATIONSHIP,
}


def crd_annotations(
    composition: Sequence[str] = (), relationships: Iterable[Relationship] = (),
    usage: str | None = None,
) -> dict[str, str]:
    """The CRD annotations that declare ``composition``, ``relationships`` and ``usage``."""
    out: dict[str, str] = {}
    if composition:
        out[COMPOSITION] = ", ".join(composition)
    if usage:
        out[USAGE] = usage
    for rel in relationships:
        name = _ANNOTATION_OF[type(rel)]
        out[name] = f"{out[name]}; {rel.to_annotation()}" if name in out else rel.to_annotation()
    # parse back what was written: a declaration that cannot be read is a bug found now
    parse_relationships(out)
    return out


def parse_composition(annotations: Mapping[str, str]) -> list[str]:
    """The kinds of ``resource/composition``."""
    value = annotations.get(COMPOSITION) or ""
    return [kind.strip() for kind in value.split(",") if kind.strip()]


_INSTANCE_PATH = re.compile(r"^INSTANCE\.([A-Za-z0-9_.\-]+)$")
_CONTAINS = re.compile(r"^contains\((.*)\)$")


def _fields(text: str) -> dict[str, str]:
    """``on:X, key:Y, value:Z`` as a dict; the key may itself contain ``:`` or ``/``."""
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition(":")
        name = name.strip()
        if not sep or name not in ("on", "key", "value") or name in out:
            raise RelationshipSyntaxError(f"{text!r}: expected on:..., key:..., value:...")
        out[name] = value.strip()
    return out


def _instance_path(text: str, whole: str) -> str:
    match = _INSTANCE_PATH.match(text)
    if not match:
        raise RelationshipSyntaxError(f"{whole!r}: {text!r} must be INSTANCE.<field path>")
    return match.group(1)


def parse_relationships(annotations: Mapping[str, str]) -> list[Relationship]:
    """Every relationship the CRD ``annotations`` declare, in KubePlus's syntax."""
    out: list[Relationship] = []
    for name in (ANNOTATION_RELATIONSHIP, LABEL_RELATIONSHIP, SPECPROPERTY_RELATIONSHIP):
        for text in (annotations.get(name) or "").split(";"):
            if not text.strip():
                continue
            f = _fields(text)
            if "on" not in f or "value" not in f:
                raise RelationshipSyntaxError(f"{text!r}: on: and value: are required")
            if name == SPECPROPERTY_RELATIONSHIP:
                target = f["value"]
                if "key" in f or "." not in target or not target.split(".", 1)[0]:
                    raise RelationshipSyntaxError(f"{text!r}: value must be Kind.<field path>")
                out.append(SpecPropertyRelationship(_instance_path(f["on"], text), target))
                continue
            contains = _CONTAINS.match(f["value"])
            path = _instance_path(contains.group(1) if contains else f["value"], text)
            if name == ANNOTATION_RELATIONSHIP:
                if not f.get("key"):
                    raise RelationshipSyntaxError(f"{text!r}: key: is required")
                out.append(AnnotationRelationship(f["on"], f["key"], path, bool(contains)))
            else:
                if contains:
                    raise RelationshipSyntaxError(f"{text!r}: contains() is for annotations")
                out.append(LabelRelationship(f["on"], path, f.get("key") or None))
    return out
