"""Table output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), as kubectl gets it.

``to_table`` turns objects into a meta.k8s.io Table: the built-in kinds get the columns of
the apiserver's printers (``printers.py``), custom resources the columns of their CRD
version (``additionalPrinterColumns``, or a single Age column), and every other kind the
default Name / Created At. Rows carry the object as PartialObjectMetadata, in full, or not
at all, per ``includeObject``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from setpoint.cluster.endpoints import jsonpath
from setpoint.cluster.endpoints.durations import age, human_duration, parse_time, rfc3339
from setpoint.cluster.endpoints.printer_table import PRINTERS
from setpoint.cluster.endpoints.printers import Column, doc, name_column
from setpoint.cluster.registry import ResourceType
from setpoint.machinery.gofmt import go_float
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import definitions

INCLUDE_OBJECT = ("None", "Metadata", "Object")


def to_table(rt: ResourceType, objects: list[Obj], *, list_meta: Mapping[str, Any] | None,
             include_object: str = "Metadata", now: datetime | None = None,
             table_version: str = "v1", no_headers: bool = False,
             subresource: str = "") -> Obj:
    """The Table for ``objects`` of type ``rt`` (or of its ``subresource``: a Scale has
    columns of its own).

    ``list_meta`` is the list's metadata (resourceVersion, continue, remainingItemCount);
    for a single object pass None and the object's resourceVersion is used. ``no_headers``
    leaves out the column definitions (watch events after the first).
    """
    if include_object not in INCLUDE_OBJECT:
        raise ValueError(f"includeObject must be one of {INCLUDE_OBJECT}")
    now = now or datetime.now(UTC)
    columns, cells_of = _scale_converter(rt) if subresource == "scale" else _converter(rt)
    order = row_order(rt)
    if order is not None and list_meta is not None:
        objects = sorted(objects, key=order)
    rows = []
    for obj in objects:
        cells, conditions = cells_of(obj, now)
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(rt, obj, include_object, table_version)
        rows.append(row)
    metadata: Obj = {}
    if list_meta is not None:
        for key in ("resourceVersion", "continue", "remainingItemCount"):
            value = list_meta.get(key)
            if value not in (None, ""):
                metadata[key] = value
    elif len(objects) == 1:
        rv = objects[0].get("metadata", {}).get("resourceVersion")
        if rv:
            metadata["resourceVersion"] = rv
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{table_version}",
            "metadata": metadata,
            "columnDefinitions": None if no_headers else [c.definition() for c in columns],
            "rows": rows}


class WatchTables:
    """Turns watch event objects into Tables; only the first carries column definitions.

    The apiserver omits the headers after the first event of a watch, since the client
    printed them already.
    """

    def __init__(self, rt: ResourceType, *, include_object: str = "Metadata",
                 table_version: str = "v1") -> None:
        self._rt = rt
        self._include = include_object
        self._version = table_version
        self._sent_headers = False

    def __call__(self, obj: Obj, now: datetime | None = None) -> Obj:
        table = to_table(self._rt, [obj], list_meta=None, include_object=self._include,
                         now=now, table_version=self._version, no_headers=self._sent_headers)
        self._sent_headers = True
        return table


def row_order(rt: ResourceType) -> Callable[[Obj], Any] | None:
    """How a kind's list printer orders its rows, if it does (printFlowSchemaList)."""
    if rt.is_custom:
        return None
    printer = PRINTERS.get((rt.group, rt.kind))
    return None if printer is None else printer.order


def _row_object(rt: ResourceType, obj: Obj, include: str, version: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        # asTable (k8s.io/apiserver/pkg/endpoints/handlers/response.go) converts each row's
        # object to the request's version, which sets its kind and apiVersion: list items
        # carry neither, and kubectl decodes rows by them (``get --sort-by``)
        return {"kind": rt.kind, "apiVersion": rt.api_version, **obj}
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata", {})}


CellsOf = Callable[[Obj, datetime], tuple[list[Any], list[Obj]]]


def _converter(rt: ResourceType) -> tuple[list[Column], CellsOf]:
    if rt.is_custom and rt.crd is not None:
        return _custom_converter(rt)
    printer = PRINTERS.get((rt.group, rt.kind))
    if printer is not None:
        return printer.columns, printer.cells
    return _default_converter()


# -- the scale subresource ------------------------------------------------------------------

def _scale_converter(rt: ResourceType) -> tuple[list[Column], CellsOf]:
    """A Scale's columns. The built-in ScaleRESTs convert with their store's TableGenerator
    (pkg/registry/apps/deployment/storage/storage.go ``ScaleREST.ConvertToTable``), whose
    handlers include ``printScale`` (pkg/printers/internalversion/printers.go: Name without
    a format, Desired, Available, Age); a custom resource's scale scope has a tableconvertor
    of its own (apiextensions-apiserver pkg/apiserver/customresource_handler.go
    ``scaleScope.TableConvertor``, columns from helpers.go ``getScaleColumnsForVersion``)."""
    if rt.is_custom:
        return _columns_converter([
            {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas",
             "description": "Number of desired replicas"},
            {"name": "Available", "type": "integer", "jsonPath": ".status.replicas",
             "description": "Number of actual replicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
             "description": meta_doc("creationTimestamp")}])
    scaling = "io.k8s.api.autoscaling.v1."
    columns = [Column("Name", "string", meta_doc("name")),
               Column("Desired", "integer", doc(scaling + "ScaleSpec", "replicas")),
               Column("Available", "integer",
                      doc(scaling + "ScaleStatus", "replicas")),
               Column("Age", "string", meta_doc("creationTimestamp"))]

    def cells(obj: Obj, now: datetime) -> tuple[list[Any], list[Obj]]:
        meta = obj.get("metadata", {})
        return [meta.get("name", ""), int((obj.get("spec") or {}).get("replicas") or 0),
                int((obj.get("status") or {}).get("replicas") or 0),
                age(meta.get("creationTimestamp"), now)], []
    return columns, cells


# -- the default: Name, Created At --------------------------------------------------------

def _default_converter() -> tuple[list[Column], CellsOf]:
    columns = [name_column(), Column("Created At", "date", meta_doc("creationTimestamp"))]

    def cells(obj: Obj, now: datetime) -> tuple[list[Any], list[Obj]]:
        meta = obj.get("metadata", {})
        return [meta.get("name", ""), rfc3339(meta.get("creationTimestamp"))], []
    return columns, cells


# -- custom resources ---------------------------------------------------------------------

def _crd_columns(rt: ResourceType) -> list[Mapping[str, Any]]:
    spec = (rt.crd or {}).get("spec", {})
    for version in spec.get("versions") or ():
        if version.get("name") == rt.version:
            columns = version.get("additionalPrinterColumns")
            if columns:
                return list(columns)
            break
    else:
        if spec.get("additionalPrinterColumns"):  # v1beta1-style top-level columns
            return list(spec["additionalPrinterColumns"])
    return [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
             "description": meta_doc("creationTimestamp")}]


def _custom_converter(rt: ResourceType) -> tuple[list[Column], CellsOf]:
    return _columns_converter(_crd_columns(rt))


def _columns_converter(specs: list[Mapping[str, Any]]) -> tuple[list[Column], CellsOf]:
    """apiextensions-apiserver's tableconvertor.New over CRD-style column definitions."""
    columns = [name_column()]
    paths: list[list[tuple[str, Any]]] = []
    for spec in specs:
        path = spec.get("jsonPath", "")
        try:
            steps = jsonpath.parse(path)
        except jsonpath.JSONPathError:
            # tableconvertor.New returns the columns before the one it cannot parse, and
            # the CRD handler serves with those
            break
        paths.append(steps)
        columns.append(Column(
            spec.get("name", ""), spec.get("type", "string"),
            spec.get("description") or
            f"Custom resource definition column (in JSONPath format): {path}",
            priority=int(spec.get("priority") or 0), format=spec.get("format") or ""))

    def cells(obj: Obj, now: datetime) -> tuple[list[Any], list[Obj]]:
        out: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for column, steps in zip(columns[1:], paths, strict=True):
            found = jsonpath.find(obj, steps)
            out.append(cell_for_json_value(column.type, found[0], now) if found else None)
        return out, []
    return columns, cells


def cell_for_json_value(column_type: str, value: Any, now: datetime) -> Any:
    """A custom column's cell: the value coerced to the column type, or None when it is not."""
    if value is None:
        return None
    if column_type == "string":
        return go_text(value)
    if column_type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return int(value)
        return None
    if column_type == "number":
        if isinstance(value, bool):
            return None
        if not isinstance(value, int | float):
            return None
        number = float(value)
        # a float64 cell: encoding/json writes one with no fraction without any ("2", not
        # "2.0"), as a JSON integer is written
        return int(number) if number.is_integer() and abs(number) < 2**63 else number
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        ts = parse_time(value)
        if ts is None:
            return "<invalid>"
        return human_duration((now - ts).total_seconds())
    return None


def go_text(value: Any) -> str:
    """How kubectl's jsonpath prints one value: strings raw, numbers as Go's %v, else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    return go_json(value)


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it: sorted keys, floats without ``.0``."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{go_json(v)}"
                              for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        # Go spells exponents without padding (1e-07 -> 1e-7) and uses them below 1e-6 only
        return re.sub(r"e([+-])0*(\d)", r"e\1\2", text) if "e" in text else text
    return json.dumps(value, ensure_ascii=False)


def meta_doc(field: str) -> str:
    """The ObjectMeta description of ``field`` (column descriptions quote it)."""
    schema = definitions().get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").field(field)
    return schema.description if schema else ""
