"""Small real graphs shipped with the package (work offline)."""

from __future__ import annotations

import numpy as np

from .graph import Graph

__all__ = ["karate", "karate_labels", "lesmis"]


def _read(name: str) -> list[list[str]]:
    from importlib import resources  # imported here: ~30 ms that `import instant_embedding` skips

    text = resources.files("instant_embedding").joinpath("data").joinpath(name).read_text("utf-8")
    return [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith("#")]


def karate() -> Graph:
    """Zachary's karate club: 34 nodes (ids 0..33), 78 undirected edges (Zachary 1977)."""
    rows = _read("karate.tsv")
    src = np.array([int(r[0]) for r in rows], dtype=np.int64)
    dst = np.array([int(r[1]) for r in rows], dtype=np.int64)
    return Graph.from_edges(src, dst, num_nodes=34)


def karate_labels() -> np.ndarray:
    """The club each karate member joined after the split (0 = Mr. Hi, 1 = Officer)."""
    rows = _read("karate.labels.tsv")
    return np.array([int(r[1]) for r in sorted(rows, key=lambda r: int(r[0]))], dtype=np.int64)


def lesmis() -> Graph:
    """Les Misérables co-appearances: 77 characters (string ids), 254 weighted edges."""
    rows = _read("lesmis.tsv")
    return Graph.from_edges(
        [r[0] for r in rows], [r[1] for r in rows], weights=[float(r[2]) for r in rows]
    )
