"""The PATCH algorithms of the Kubernetes API, as pure functions on JSON-compatible dicts.

- :func:`json_patch`: RFC 6902 (``application/json-patch+json``)
- :func:`merge_patch`: RFC 7386 (``application/merge-patch+json``)
- :func:`strategic_merge_patch`: Kubernetes strategic merge patch
  (``application/strategic-merge-patch+json``) for built-in kinds

Each raises ``StatusError`` carrying what the kube-apiserver answers for a patch that cannot
apply, never modifies its inputs, and returns a result that shares untouched subtrees with the
input document (copy a subtree before changing it in place). Whether a patch type is allowed
for a resource (415 for strategic merge on custom resources) is the server's decision.
"""

from setpoint.machinery.patch.json_patch import MAX_OPERATIONS, json_patch
from setpoint.machinery.patch.merge_patch import merge_patch
from setpoint.machinery.patch.strategic import strategic_merge_patch

__all__ = ["MAX_OPERATIONS", "json_patch", "merge_patch", "strategic_merge_patch"]
