"""The HTTP helper of the table-driven validation tests of built-in kinds (the module-scoped
server it talks to is the ``kube`` fixture of this directory's conftest), and the pod their
cases start from."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import httpx

MERGE = "application/merge-patch+json"


def pod(name: str, spec: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    """A pod of one container ``c`` (image ``i``) with ``container``'s keys, then ``spec``'s
    keys over its spec (a case's own ``containers`` replaces the one)."""
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "i", **container}]}
    body.update(copy.deepcopy(spec))
    return {"metadata": {"name": name}, "spec": body}


class Kube:
    """JSON in, (status, JSON) out, against the module's server."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        resp = self.http.request(method, path, json=body,
                                 headers={"Content-Type": content_type})
        return resp.status_code, resp.json()

    def reject(self, method: str, path: str, body: Any,
               content_type: str = "application/json") -> Counter[tuple[str, str]]:
        """The (field, reason) causes of a 422 Invalid answer, as a multiset (the
        conformance corpus compares them so)."""
        status, answer = self.call(method, path, body, content_type)
        assert (status, answer.get("reason")) == (422, "Invalid"), answer
        return Counter((c["field"], c["reason"]) for c in answer["details"]["causes"])

    def messages(self, method: str, path: str, body: Any,
                 content_type: str = "application/json") -> dict[str, list[str]]:
        status, answer = self.call(method, path, body, content_type)
        assert status == 422, answer
        out: dict[str, list[str]] = {}
        for c in answer["details"]["causes"]:
            out.setdefault(c["field"], []).append(c["message"])
        return out
