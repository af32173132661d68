"""Fails when the kernel's production modules (src/, tests and the binding layer aside)
depend on each other in a cycle: each wing (graph, io, embed, live) sits above the ones it
uses. Reads `crate::...` paths, test modules excluded."""

from __future__ import annotations

import re
import sys
from pathlib import Path


def dependencies(src: Path) -> dict[str, set[str]]:
    deps: dict[str, set[str]] = {}
    for f in sorted(src.rglob("*.rs")):
        rel = f.relative_to(src).with_suffix("")
        if rel.parts[0] == "python":
            continue
        text = f.read_text()
        test = re.search(r"#\[cfg\(test\)\]\s*mod tests", text)
        if test:
            text = text[: test.start()]
        text = re.sub(r"//.*", "", text)
        parts = [p for p in rel.parts if p not in ("mod", "lib")]
        name = "::".join(parts) or "crate"
        found: set[str] = set()
        for m in re.finditer(r"crate::(\w+)(?:::(\w+))?", text):
            wing, module = m.group(1), m.group(2)
            found.add(wing + (f"::{module}" if module and module[0].islower() else ""))
        for m in re.finditer(r"use crate::(\w+)::\{([^}]*)\}", text, re.S):
            for item in m.group(2).split(","):
                head = item.strip().split("::")[0].strip()
                if head and head[0].islower() and head != "self":
                    found.add(f"{m.group(1)}::{head}")
        deps[name] = found - {name}
    return deps


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    nodes = set(deps)

    def resolve(d: str) -> str | None:
        if d in nodes:
            return d
        wing = d.split("::")[0]
        return wing if wing in nodes else None

    graph = {k: {r for d in v if (r := resolve(d)) and r != k} for k, v in deps.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    found = cycles(dependencies(Path(__file__).resolve().parent.parent / "src"))
    for c in found:
        print("dependency cycle:", " <-> ".join(c))
    sys.exit(1 if found else 0)
