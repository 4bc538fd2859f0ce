"""RBAC: the authorizer, the bootstrap policy, and the access reviews."""
