"""The kubelet's image manager: pull policies, which images a node holds, and their events.

A real kubelet asks its runtime's image service whether the image is on the machine
(``GetImageRef``) and pulls it by the container's ``imagePullPolicy``
(kubernetes/kubernetes pkg/kubelet/images/image_manager.go ``EnsureImageExists`` and
``shouldPullImage``). The simulation models a node's images as what its kubelet pulled
since the node was registered: a fresh node holds none, so its first pod of an image shows
``Pulling``/``Pulled: Successfully pulled``, the next ones ``already present on machine``,
and ``Never`` on a node without the image fails with ``ErrImageNeverPull``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from setpoint.workloads.kubelet.runtime import normalize_image

NORMAL, WARNING = "Normal", "Warning"

EventSink = Callable[[str, str, str], None]
"""``(type, reason, message)`` recorded about the container (its ``fieldPath``)."""


class ImageNeverPull(Exception):
    """images.ErrImageNeverPull: the image is absent and the policy forbids a pull; the
    message is the container's waiting message."""

    reason = "ErrImageNeverPull"


@dataclass(frozen=True)
class PulledImage:
    ref: str
    size: int


def image_size(image: str) -> int:
    """A stable simulated size in bytes (tens of MB, as common images compress to)."""
    digest = hashlib.sha256(normalize_image(image).encode()).digest()
    return 10_000_000 + int.from_bytes(digest[:4], "big") % 90_000_000


def pull_policy(spec: Mapping[str, Any]) -> str:
    """The container's policy; the API server defaults it (``Always`` for ``:latest`` or
    no tag, else ``IfNotPresent``: pkg/apis/core/v1/defaults.go SetDefaults_Container), so
    this only covers objects that skipped defaulting."""
    policy = spec.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = str(spec.get("image", ""))
    tagged = "@" in image or ":" in image.rsplit("/", 1)[-1]
    return "IfNotPresent" if tagged and not image.endswith(":latest") else "Always"


def should_pull(policy: str, present: bool) -> bool:
    """image_manager.go shouldPullImage."""
    if policy == "Never":
        return False
    return policy == "Always" or (policy == "IfNotPresent" and not present)


def go_duration(seconds: float) -> str:
    """Go's time.Duration String of a duration truncated to milliseconds."""
    ms = int(seconds * 1000)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest_ms = divmod(ms, 60_000)
    secs = f"{rest_ms / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    if minutes == 0:
        return secs
    hours, minutes = divmod(minutes, 60)
    return (f"{hours}h" if hours else "") + f"{minutes}m{secs}"


class ImageManager:
    """The images each node's kubelet holds, and the pulls that bring them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._present: dict[str, dict[str, PulledImage]] = {}

    def __repr__(self) -> str:
        return f"ImageManager(nodes={len(self._present)})"

    def present(self, node: str, image: str) -> bool:
        return normalize_image(image) in self._present.get(node, {})

    def mark_present(self, node: str, image: str, ref: str) -> None:
        """The node holds ``image`` (a restarted kubelet finds its containers' images)."""
        self._present.setdefault(node, {}).setdefault(
            normalize_image(image), PulledImage(ref, image_size(image)))

    async def ensure(self, node: str, spec: Mapping[str, Any],
                     pull: Callable[[str], Awaitable[str]], record: EventSink) -> str:
        """image_manager.go EnsureImageExists: the image's reference, pulled if the policy
        says so, with the events a real kubelet records (about the container)."""
        requested = str(spec.get("image", ""))
        held = self._present.setdefault(node, {})
        key = normalize_image(requested)
        known = held.get(key)
        if not should_pull(pull_policy(spec), known is not None):
            if known is not None:
                record(NORMAL, "Pulled",
                       f'Container image "{requested}" already present on machine')
                return known.ref
            message = (f'Container image "{requested}" is not present with pull policy '
                       "of Never")
            record(WARNING, "ErrImageNeverPull", message)
            raise ImageNeverPull(message)
        record(NORMAL, "Pulling", f'Pulling image "{requested}"')
        started = self._clock()
        ref = await pull(requested)
        took = go_duration(self._clock() - started)
        pulled = held[key] = PulledImage(ref, image_size(requested))
        # the puller's own duration and the one including the wait in its queue: the
        # simulation's pulls never queue, so both are the same
        record(NORMAL, "Pulled", f'Successfully pulled image "{requested}" in {took} '
                                 f"({took} including waiting). Image size: {pulled.size} "
                                 "bytes.")
        return ref
