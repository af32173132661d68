"""The paper's Figure 2 for us: per-node time and memory against |E| (log-log).

Reads ``benches/results/speed.json`` and ``speed_billion.json`` (``speed.py latency``; pass
other files to plot them instead) and plots, at one setting (default d=512, eps=1e-5, the
paper's), the median warm and cold time of one node's embedding and the memory one query adds,
against the graph's number of undirected edges, with the paper's InstantEmbedding per-node
times at the paper's graph sizes (``results.json``) for reference.

    python benches/plot_fig2.py [--dim 512] [--eps 1e-5] [--out docs/fig2_speed.png] \
        [benches/results/speed.json benches/results/speed_billion.json ...]

matplotlib is a benchmark-only dependency (benches/requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402


def load_rows(paths: list[Path], dim: int, eps: float) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        for r in data.get("rows", []):
            if r.get("dim") == dim and abs(r.get("eps", 0) - eps) <= eps * 1e-9:
                rows[r["graph"]] = r  # a later file overrides an earlier one
    return sorted(rows.values(), key=lambda r: r["edges"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--out", type=Path, default=C.REPO / "docs" / "fig2_speed.png")
    args = ap.parse_args(argv)
    inputs = args.inputs or [C.RESULTS / "speed.json", C.RESULTS / "speed_billion.json"]
    rows = load_rows(inputs, args.dim, args.eps)
    if not rows:
        sys.exit(f"no rows at d={args.dim}, eps={args.eps} in {[str(p) for p in inputs]}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = [r["edges"] for r in rows]
    warm = [r["warm"]["median_us"] / 1e3 for r in rows]
    cold = [r["cold"]["median_us"] / 1e3 if r.get("cold") else None for r in rows]
    mem = [r["memory"]["median_bytes"] / 2**20 if r.get("memory") else None for r in rows]

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    ax1.loglog(edges, warm, "o-", color="tab:blue", label="ours, warm (median)")
    ce = [(e, c) for e, c in zip(edges, cold) if c is not None]
    if ce:
        ax1.loglog(*zip(*ce), "s-", color="tab:orange", label="ours, cold (median)")
    paper = C.paper_results()
    if paper is not None:
        pts = []
        for name, size in paper["datasets"].items():
            t = paper["runtime_seconds"].get(name, {}).get(str(args.dim), {})
            if t.get("InstantEmbedding") is not None:
                pts.append((size[1], t["InstantEmbedding"] * 1e3, name))
        pts.sort()
        if pts:
            ax1.loglog(
                [p[0] for p in pts],
                [p[1] for p in pts],
                "^--",
                color="tab:gray",
                label="paper (its hardware, incl. loading)",
            )
            for x, y, name in pts:
                ax1.annotate(
                    name,
                    (x, y),
                    fontsize=7,
                    color="tab:gray",
                    xytext=(3, 3),
                    textcoords="offset points",
                )
    for r, x, y in zip(rows, edges, warm):
        ax1.annotate(r["graph"], (x, y), fontsize=7, xytext=(3, -9), textcoords="offset points")
    ax1.set_xlabel("|E| (undirected edges)")
    ax1.set_ylabel("time per node (ms)")
    ax1.set_title(f"Time to embed one node (d={args.dim}, eps={args.eps:g})")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)

    me = [(e, m) for e, m in zip(edges, mem) if m is not None and m > 0]
    if me:
        ax2.loglog(*zip(*me), "o-", color="tab:green", label="ours: memory one query adds")
    ax2.axhline(1.0, color="tab:gray", ls="--", lw=1, label="paper: < 1 MB")
    ax2.set_xlabel("|E| (undirected edges)")
    ax2.set_ylabel("MiB")
    ax2.set_title("Memory per query (beyond the shared page cache)")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=8)

    machines = set()
    for p in inputs:
        with open(p) as f:
            m = json.load(f).get("machine", {})
        machines.add(f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('date', '?')[:10]}")
    fig.suptitle("; ".join(sorted(machines)), fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out} ({len(rows)} graphs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
