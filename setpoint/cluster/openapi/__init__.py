"""/openapi/v2 and /openapi/v3 documents built from the registry."""
