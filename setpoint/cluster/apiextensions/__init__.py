"""CustomResourceDefinitions (what apiextensions-apiserver does): serving custom
resources, conversion webhooks, and under ``schema`` the structural-schema machinery."""
