"""Exports of a candidate tree: JSON, a networkx DiGraph, and one self-contained HTML file.

The HTML page loads nothing from the network: the tree's data (layout, metrics, IR diffs computed here
with difflib) is embedded as JSON, and the page draws it with inline SVG and plain JavaScript.
"""

from __future__ import annotations

import difflib
import html
import json
import math
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from leka.core.levels import LEVEL_SPECS

if TYPE_CHECKING:
    import networkx as nx

    from candidate_tree.store import Node, Tree

TEMPLATE = Path(__file__).with_name("view.html")
MAX_DIFF_CHARS = 60_000  # per node; a whole-module rewrite can produce a huge diff
MAX_TEXT_CHARS = 4_000  # error messages, profile summaries


def node_dict(n: Node) -> dict[str, Any]:
    return json.loads(n.model_dump_json())


def to_json(tree: Tree, path: str | Path | None = None) -> str:
    """All nodes (records, not artifact contents) as one JSON document; written to `path` if given."""
    doc = {"run_dir": str(tree.run_dir), "count": tree.count(),
           "nodes": [node_dict(n) for n in tree.nodes()]}
    text = json.dumps(doc, indent=1, sort_keys=True)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return text


def to_networkx(tree: Tree) -> nx.DiGraph:
    """A DiGraph with an edge parent -> child; node attributes are the node record's fields."""
    import networkx as nx

    g = nx.DiGraph()
    for n in tree.nodes():
        d = node_dict(n)
        d.pop("id")
        d["speedup"] = n.speedup
        g.add_node(n.id, **d)
        if n.parent is not None:
            g.add_edge(n.parent, n.id, level=n.level)
    return g


def layout(nodes: list[Node]) -> dict[int, tuple[float, int]]:
    """Tidy top-down layout: x = leaf slot (parents centred over their children), y = depth.
    Iterative, so a 10,000-deep chain does not hit the recursion limit."""
    kids: dict[int | None, list[int]] = {}
    ids = {n.id for n in nodes}
    for n in nodes:
        kids.setdefault(n.parent if n.parent in ids else None, []).append(n.id)
    pos: dict[int, tuple[float, int]] = {}
    next_leaf = 0.0
    for root in kids.get(None, []):
        stack: list[tuple[int, int, bool]] = [(root, 0, False)]
        while stack:
            nid, depth, done = stack.pop()
            ch = kids.get(nid, [])
            if done or not ch:
                if ch:
                    x = (pos[ch[0]][0] + pos[ch[-1]][0]) / 2
                else:
                    x, next_leaf = next_leaf, next_leaf + 1
                pos[nid] = (x, depth)
                continue
            stack.append((nid, depth, True))
            stack.extend((c, depth + 1, False) for c in reversed(ch))
        next_leaf += 0.5  # a gap between separate roots
    return pos


class _TextCache:
    """Text artifacts of recently seen nodes: a child is usually exported right after its parent."""

    def __init__(self, tree: Tree, size: int = 256):
        self.tree, self.size = tree, size
        self._d: OrderedDict[int, dict[str, str]] = OrderedDict()

    def get(self, nid: int) -> dict[str, str]:
        if nid in self._d:
            self._d.move_to_end(nid)
            return self._d[nid]
        texts = {k: v for k, v in self.tree.artifacts(nid).items() if isinstance(v, str)}
        self._d[nid] = texts
        if len(self._d) > self.size:
            self._d.popitem(last=False)
        return texts


def ir_diff(parent_texts: dict[str, str], texts: dict[str, str], pid: int, nid: int) -> tuple[str, str]:
    """Unified diff of the text artifacts a node shares with its parent: relax.py first, then the others
    by name (candidate.json last). Returns (diff, note)."""
    common = sorted(set(parent_texts) & set(texts), key=lambda k: (k != "relax.py", k == "candidate.json", k))
    if not common:
        return "", "no text artifact in common with the parent"
    chunks: list[str] = []
    for name in common:
        a, b = parent_texts[name], texts[name]
        if a == b:
            continue
        for line in difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                         fromfile=f"{pid}/{name}", tofile=f"{nid}/{name}", n=3):
            chunks.append(line if line.endswith("\n") else line + "\n")  # a last line without newline
    text = "".join(chunks)
    note = f"compared: {', '.join(common)}"
    if not text:
        note += " (identical)"
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n... diff truncated ({len(text)} chars in all)\n"
    return text, note


def _short(x: Any) -> Any:
    if isinstance(x, str) and len(x) > MAX_TEXT_CHARS:
        return x[:MAX_TEXT_CHARS] + " ...(truncated)"
    return x


def page_data(tree: Tree) -> dict[str, Any]:
    nodes = tree.nodes()
    pos = layout(nodes)
    by_id = {n.id: n for n in nodes}
    speeds = [s for n in nodes if (s := n.speedup) is not None and s > 0]
    lo, hi = (math.log(min(speeds)), math.log(max(speeds))) if speeds else (0.0, 0.0)
    best = [a] if (a := tree.answer()) else []
    cache = _TextCache(tree)
    out = []
    for n in nodes:
        s = n.speedup
        # size by log-speedup within this tree's range; unmeasured nodes are small and pale
        frac = ((math.log(s) - lo) / (hi - lo) if hi > lo else 1.0) if s is not None and s > 0 else None
        diff, note = "", "root: no parent to diff against"
        if n.parent is not None and n.parent in by_id:
            diff, note = ir_diff(cache.get(n.parent), cache.get(n.id), n.parent, n.id)
        metrics = ({k: _short(v) for k, v in n.result.model_dump(exclude_none=True).items()
                    if v not in ({}, [])} if n.result else None)
        profile = _short(json.dumps(n.profile, indent=1, sort_keys=True, default=str)) if n.profile else ""
        x, depth = pos[n.id]
        out.append({
            "id": n.id, "parent": n.parent, "level": n.level, "status": n.status.value, "speedup": s,
            "x": x, "depth": depth, "frac": frac, "hash": n.candidate_hash,
            "edit": n.edit.model_dump(mode="json") if n.edit else None,
            "metrics": metrics, "profile": profile, "route_reason": n.route_reason,
            "meta": {k: _short(v) for k, v in n.meta.items()}, "defer_left": n.defer_left,
            "artifacts": n.artifacts, "diff": diff, "diff_note": note, "created": n.created,
        })
    return {"nodes": out, "best": best[0].id if best else None, "count": len(out)}


def _embed(obj: Any) -> str:
    # Safe inside <script>: no "</script>", no "<!--"; the escapes are still valid JSON.
    return (json.dumps(obj, separators=(",", ":"), default=str)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def export_html(tree: Tree, path: str | Path, title: str | None = None) -> Path:
    page = TEMPLATE.read_text()
    title = title or f"LEKA candidate tree: {tree.run_dir.name}"
    legend = "\n    ".join(f'<span><i class="sw" style="background:{s.colour}"></i>{s.name} {html.escape(s.title)}</span>'
                          for s in LEVEL_SPECS.values())
    colours = json.dumps({s.name: s.colour for s in LEVEL_SPECS.values()})
    page = (page.replace("__TITLE__", html.escape(title)).replace("__LEGEND__", legend)
            .replace("__COLORS__", colours).replace("__DATA__", _embed(page_data(tree))))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
