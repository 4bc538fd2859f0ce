"""The HTTP front (k8s.io/apiserver/pkg/endpoints): routing, request info, filters,
negotiation, watch streaming, discovery, tables and printer columns."""
