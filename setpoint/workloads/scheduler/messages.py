"""The words kube-scheduler (v1.32) uses when a pod fits nowhere.

``FitError.Error()``: ``0/N nodes are available:`` followed by a histogram of the filter
reasons (``"<count> <reason>"``, sorted as strings, joined by ``", "``, ending with a
period), then what the DefaultPreemption PostFilter said, prefixed ``preemption:``. The
PostFilter's own message is a FitError over the nodes where preemption was considered:
``Preemption is not helpful for scheduling`` where a filter failed in a way evicting pods
cannot fix, ``No preemption victims found for incoming pod`` where no pod of lower
priority runs. For example::

    0/3 nodes are available: 1 node(s) had untolerated taint {node-role: x}, 2 Insufficient
    memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for
    scheduling, 2 No preemption victims found for incoming pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

NO_NODES_AVAILABLE = "no nodes available to schedule pods"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."


def histogram(reasons_per_node: Iterable[tuple[str, ...]]) -> str:
    """``"2 Insufficient cpu, 1 node(s) were unschedulable"`` (sorted as Go sorts)."""
    counts: Counter[str] = Counter()
    # a failed cycle has one row per node, mostly the same few: count the rows first (in C)
    for reasons, nodes in Counter(reasons_per_node).items():
        for reason in reasons:
            counts[reason] += nodes
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def fit_error(total_nodes: int, reasons_per_node: Iterable[tuple[str, ...]],
              post_filter: str = "") -> str:
    """The message of a ``FitError``."""
    message = f"0/{total_nodes} nodes are available:"
    reasons = histogram(reasons_per_node)
    if reasons:
        message += f" {reasons}."
    if post_filter:
        message += f" {post_filter}"
    return message


def pre_filter_error(total_nodes: int, message: str, post_filter: str = "") -> str:
    """The message of a ``FitError`` whose cycle a PreFilter plugin ended: its message
    alone, not repeated per node (``FitError.Error``'s ``PreFilterMsg``)."""
    text = f"0/{total_nodes} nodes are available: {message}."
    if post_filter:
        text += f" {post_filter}"
    return text


def preemption_message(total_nodes: int, reasons_per_node: Iterable[tuple[str, ...]]) -> str:
    """What DefaultPreemption answers when it finds no candidate: ``reasons_per_node`` holds
    every node's preemption reasons."""
    return "preemption: " + fit_error(total_nodes, reasons_per_node)
