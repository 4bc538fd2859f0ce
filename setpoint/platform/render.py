"""A stack drawn as text, JSON, Graphviz DOT, PNG (through Graphviz's ``dot``) or one
self-contained interactive HTML page (no network: the script and styles are inline)."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from setpoint.platform.graph import Edge, Stack
from setpoint.platform.kinds import ObjectRef


class RenderError(RuntimeError):
    """The output cannot be made here (Graphviz missing for png)."""


def _node(ref: ObjectRef) -> dict[str, str]:
    return {"id": str(ref), "group": ref.group, "kind": ref.kind,
            "namespace": ref.namespace, "name": ref.name}


def to_json(stack: Stack) -> str:
    data: dict[str, Any] = {
        "root": str(stack.root),
        "nodes": [_node(r) | ({"usage": stack.usage[r]} if r in stack.usage else {})
                  for r in sorted(stack.objects, key=str)],
        "edges": [{"source": str(e.source), "target": str(e.target), "relation": e.relation}
                  for e in stack.sorted_edges()],
    }
    return json.dumps(data, indent=2)


def to_tree(stack: Stack) -> str:
    """The stack as an indented tree from the root; an object met again is marked ``(*)``;
    each line names the relation that reached it (``<-`` when the edge points at its parent)."""
    around: dict[ObjectRef, list[tuple[str, str, ObjectRef]]] = defaultdict(list)
    for edge in stack.sorted_edges():
        around[edge.source].append(("->", edge.relation, edge.target))
        around[edge.target].append(("<-", edge.relation, edge.source))
    lines = [str(stack.root)]
    shown = {stack.root}

    def walk(ref: ObjectRef, prefix: str) -> None:
        children = [c for c in around[ref] if c[2] != ref]
        for i, (arrow, relation, other) in enumerate(children):
            last = i == len(children) - 1
            again = other in shown
            label = f"{relation}{'' if arrow == '->' else ' <-'}"
            lines.append(f"{prefix}{'└─' if last else '├─'} [{label}] {other}"
                         f"{' (*)' if again else ''}")
            if not again:
                shown.add(other)
                walk(other, prefix + ("   " if last else "│  "))

    walk(stack.root, "")
    return "\n".join(lines) + "\n"


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(stack: Stack) -> str:
    lines = ["digraph stack {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    for ref in sorted(stack.objects, key=str):
        style = ", style=bold" if ref == stack.root else ""
        label = f"{ref.kind}\\n{ref.namespace + '/' if ref.namespace else ''}{ref.name}"
        lines.append(f"  {_dot_id(str(ref))} [label={_dot_id(label)}{style}];")
    for edge in stack.sorted_edges():
        lines.append(f"  {_dot_id(str(edge.source))} -> {_dot_id(str(edge.target))} "
                     f"[label={_dot_id(edge.relation)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_png(stack: Stack) -> bytes:
    dot = shutil.which("dot")
    if dot is None:
        raise RenderError("png needs Graphviz's dot (Debian package graphviz)")
    done = subprocess.run([dot, "-Tpng"], input=to_dot(stack).encode(), capture_output=True,
                          check=False, timeout=60)
    if done.returncode != 0:
        raise RenderError(f"dot failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def layers(stack: Stack) -> dict[ObjectRef, int]:
    """Each object's distance from the root, edges taken either way (the HTML's columns)."""
    around: dict[ObjectRef, set[ObjectRef]] = defaultdict(set)
    for edge in stack.edges:
        around[edge.source].add(edge.target)
        around[edge.target].add(edge.source)
    depth = {stack.root: 0}
    frontier = [stack.root]
    while frontier:
        nxt = []
        for ref in frontier:
            for other in sorted(around[ref], key=str):
                if other not in depth:
                    depth[other] = depth[ref] + 1
                    nxt.append(other)
        frontier = nxt
    return depth


# the page: inline style and script, the stack's JSON put in its data element
_PAGE = (Path(__file__).parent / "stack.html").read_text(encoding="utf-8")


def to_html(stack: Stack) -> str:
    depth = layers(stack)
    data = json.loads(to_json(stack))
    for node in data["nodes"]:
        ref = next(r for r in stack.objects if str(r) == node["id"])
        node["layer"] = depth.get(ref, 0)
    # "</" must not end the script element early: JSON allows "<\\/"
    payload = json.dumps(data).replace("</", "<\\/")
    return _PAGE.replace("__TITLE__", html.escape(str(stack.root))).replace("__DATA__", payload)


def edges_of(stack: Stack) -> list[Edge]:
    return stack.sorted_edges()


RENDERERS = {"tree": to_tree, "json": to_json, "dot": to_dot, "html": to_html}
