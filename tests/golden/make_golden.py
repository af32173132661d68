"""Writes the golden files that pin the graph format and the embedding numbers across releases.

``tests/kernel/test_golden.py`` checks that

- building each graph from its edge list (``<name>.tsv``) gives ``<name>.graph`` byte for byte
  (the file format and the builder's output are unchanged), and
- embedding the committed ``<name>.graph`` with each configuration in ``golden.json`` gives the
  rows stored there bit for bit (the reader, the push, the projection and smoothing are
  unchanged), as do the PPR vectors stored there.

Every parameter is given explicitly, so a change of a *default* does not change these files.
If the test fails, something a user would see changed: a file written by one release would
read differently in another, or the same call would give other numbers. When that change is
deliberate (a new format version, a new spec version of the numbers), regenerate the files,
review the diff and say so in CHANGELOG.md::

    python tests/golden/make_golden.py

The edge lists are generated here once and committed; regenerating keeps them unless
``--new-edges`` is given.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import instant_embedding as ie
import numpy as np

HERE = Path(__file__).resolve().parent

# name -> how the graph is built from its edge list
GRAPHS = {
    "int_undirected": {"ids": "int", "directed": False, "weighted": False},
    "int64_directed_weighted": {"ids": "int64", "directed": True, "weighted": True},
    "str_weighted": {"ids": "str", "directed": False, "weighted": True},
    "str_directed": {"ids": "str", "directed": True, "weighted": False},
}

# Every parameter explicit (no default is relied on).
CONFIGS = [
    {
        "dim": 16,
        "alpha": 0.2,
        "eps": 1e-4,
        "seed": 7,
        "variant": "standard",
        "value": "p+r",
        "normalize": "none",
        "smooth": 0,
        "max_touched": 1_000_000,
    },
    {
        "dim": 12,
        "alpha": 0.35,
        "eps": 3e-4,
        "seed": 2**40 + 3,
        "variant": "lazy",
        "value": "log1p",
        "normalize": "none",
        "smooth": 1,
        "max_touched": 1_000_000,
    },
    {
        "dim": 8,
        "alpha": 0.1,
        "eps": 1e-3,
        "seed": 0,
        "variant": "standard",
        "value": "p",
        "normalize": "none",
        "smooth": 0,
        "max_touched": 1_000_000,
    },
    {
        "dim": 16,
        "alpha": 0.15,
        "eps": 1e-4,
        "seed": 3,
        "variant": "standard",
        "value": "p+r",
        "normalize": "ln_n",
        "smooth": 1,
        "max_touched": 1_000_000,
    },
]
PPR = {"alpha": 0.25, "eps": 1e-4, "variant": "standard"}
NODES_PER_GRAPH = 8


def _new_edges(name: str) -> list[tuple[str, str, str]]:
    spec = GRAPHS[name]
    rng = np.random.default_rng(sorted(GRAPHS).index(name))
    n, m = 36, 90
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.2, 0, rng.integers(0, n, m))  # a hub
    src[:3], dst[:3] = [5, 5, 9], [6, 6, 9]  # a repeated edge and a self-loop
    if spec["directed"]:
        src = np.where(src >= n - 3, src - 3, src)  # the last three nodes are dangling
    if spec["ids"] == "int":
        label = [str(i) for i in range(n)]
    elif spec["ids"] == "int64":
        label = [str(int(x)) for x in rng.choice(2**62, n, replace=False) - 2**61]
    else:
        names = ["Ünïcødé", "zoë", "a", "b b", "", "🙂"] + [f"node-{i:02d}" for i in range(n)]
        label = names[:n]
    w = rng.integers(1, 40, m) / 8
    return [(label[a], label[b], f"{x:g}") for a, b, x in zip(src, dst, w)]


def read_edges(name: str) -> list[tuple[str, str, str]]:
    with open(HERE / f"{name}.tsv", encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if not line.startswith("#")]


def build(name: str) -> ie.Graph:
    """The graph ``name`` from its committed edge list."""
    spec = GRAPHS[name]
    rows = read_edges(name)
    if spec["ids"] == "str":
        src = [a for a, _, _ in rows]
        dst = [b for _, b, _ in rows]
    else:
        src = np.array([int(a) for a, _, _ in rows], dtype=np.int64)
        dst = np.array([int(b) for _, b, _ in rows], dtype=np.int64)
    w = [float(x) for _, _, x in rows] if spec["weighted"] else None
    num_nodes = 36 if spec["ids"] == "int" else None
    return ie.Graph.from_edges(src, dst, weights=w, directed=spec["directed"], num_nodes=num_nodes)


def f32_hex(a: np.ndarray) -> str:
    """float32 values as their bit patterns (exact), space-separated."""
    return " ".join(f"{x:08x}" for x in np.asarray(a, dtype="<f4").view("<u4").tolist())


def f64_hex(a: np.ndarray) -> str:
    return " ".join(struct.pack(">d", float(x)).hex() for x in a)


def golden_nodes(g: ie.Graph) -> list:
    ids = g.ids(np.arange(g.num_nodes))
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    pick = np.linspace(0, g.num_nodes - 1, NODES_PER_GRAPH).astype(int).tolist()
    return [ids[i] for i in pick]


def compute(g: ie.Graph) -> dict:
    nodes = golden_nodes(g)
    out: dict = {"nodes": nodes, "rows": [], "ppr": []}
    for cfg in CONFIGS:
        rows = ie.InstantEmbedding(**cfg, threads=1).embed(g, nodes)
        out["rows"].append([f32_hex(r) for r in rows])
    for v in nodes[:3]:
        ids, p, r = ie.ppr(g, v, **PPR, return_residual=True)
        out["ppr"].append(
            {
                "node": v,
                "ids": list(ids.tolist() if hasattr(ids, "tolist") else ids),
                "p": f64_hex(p),
                "r": f64_hex(r),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new-edges", action="store_true", help="draw new edge lists too")
    args = ap.parse_args()
    golden: dict = {
        "spec": "docs/SPEC.md, format version 1",
        "configs": CONFIGS,
        "ppr": PPR,
        "graphs": {},
    }
    for name in GRAPHS:
        tsv = HERE / f"{name}.tsv"
        if args.new_edges or not tsv.exists():
            with open(tsv, "w", encoding="utf-8") as f:
                f.write(f"# golden graph {name}: src, dst, weight (see make_golden.py)\n")
                f.writelines("\t".join(e) + "\n" for e in _new_edges(name))
        g = build(name)
        g.save(HERE / f"{name}.graph")
        golden["graphs"][name] = compute(ie.Graph.open(HERE / f"{name}.graph"))
    with open(HERE / "golden.json", "w", encoding="utf-8") as f:
        json.dump(golden, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
