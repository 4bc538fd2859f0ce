"""The CRD machinery of the embedded server (what ``apiextensions-apiserver`` does).

Pure functions over plain dicts: CRD defaulting, validation and status; per-version custom
resource schemas that prune, default and validate (OpenAPI and CEL); printer columns.
"""

from .columns import column_definitions, evaluate_column, printer_columns, row_cells
from .definition import default_crd, storage_version, validate_crd
from .resource import (
    CustomResourceSchema,
    strict_decoding_error,
    unknown_field_warnings,
)
from .status import crd_status, initial_status, prepare_update_status

__all__ = [
    "CustomResourceSchema",
    "column_definitions",
    "crd_status",
    "default_crd",
    "evaluate_column",
    "initial_status",
    "prepare_update_status",
    "printer_columns",
    "row_cells",
    "storage_version",
    "strict_decoding_error",
    "unknown_field_warnings",
    "validate_crd",
]
