"""Live graphs benchmark: update throughput, query latency with a change log, compaction.

Three parts, each on a copy of a graph file in a scratch folder (never the repository):

1. ``throughput``: ``Graph.open(path, writable=True)``, then commits of 1, 100 and 10,000
   edges (random pairs of existing nodes plus ~5 % new nodes), each commit durable (fsync)
   when it returns; then removals of existing edges in the same batch sizes. Reports edges
   per second and the median commit latency.
2. ``latency``: a copy with 0.1 %, 1 % and 10 % of its edges changed through the log (half
   added, half removed; committed in batches of 10,000), queried against the compacted file
   of the same graph, in the same run and interleaved (A, B, A, B, ... over the same nodes):
   warm (pages in memory, after a warm-up pass) and cold (the file and log evicted from the
   page cache before each query). One node's embedding (d=512, eps=1e-5, 1 thread) through
   the Python API. Reports medians and the ratio live / compacted (goal <= 1.3x at 1 %).
3. ``compaction``: a larger graph with many changed edges: ``compact`` in a child process
   (wall time and peak RSS from ``wait4``), against converting the same final edge list from
   a text file with ``convert`` (also a child). Goal: compaction >= 5x faster.

The results go to ``benches/results/live.json`` (with --smoke into a temporary folder) with
the machine, load and commit.

Examples::

    python benches/live.py --smoke
    python benches/live.py --dataset blogcatalog --compact-dataset cnr_2000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS,
    dataset_graph,
    evict,
    machine_info,
    percentile,
    print_table,
    read_csr,
    write_json,
)


def synthetic_file(path: Path, n: int, m: int, seed: int, work: Path) -> None:
    """Like :func:`synthetic`, built out of core from an ``.npy`` edge array (large sizes)."""
    from instant_embedding.readers import convert

    rng = np.random.default_rng(seed)
    src = (rng.pareto(1.5, m) * n / 50).astype(np.int64) % n
    dst = rng.integers(0, n, m)
    keep = src != dst
    edges = np.stack([src[keep] * 3 + 7, dst[keep] * 3 + 7], 1)
    del src, dst, keep
    tmp = work / "synthetic.npy"
    np.save(tmp, edges)
    del edges
    convert(str(tmp), str(path))
    tmp.unlink()


def synthetic(path: Path, n: int, m: int, seed: int) -> None:
    """A seeded random graph with skewed degrees and int64 ids with gaps."""
    import instant_embedding as ie

    rng = np.random.default_rng(seed)
    src = (rng.pareto(1.5, m) * n / 50).astype(np.int64) % n
    dst = rng.integers(0, n, m)
    keep = src != dst
    ids = np.arange(n, dtype=np.int64) * 3 + 7
    ie.Graph.from_edges(ids[src[keep]], ids[dst[keep]], nodes=ids).save(path)


def edge_arrays(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst) internal indices of every edge once (undirected: u <= v), and the ids."""
    h = read_csr(path)
    ip = h["indptr"].astype(np.int64)
    deg = np.diff(ip)
    src = np.repeat(np.arange(len(deg), dtype=np.int64), deg)
    dst = h["indices"].astype(np.int64)
    keep = src <= dst if not h["directed"] else np.ones(len(src), bool)
    ids = h["ids"] if h["ids"] is not None else np.arange(len(deg), dtype=np.int64)
    return src[keep], dst[keep], np.asarray(ids)


def random_changes(path: Path, count: int, seed: int) -> tuple[Any, Any, Any, Any]:
    """``count`` changes: half new edges between existing nodes (5 % of them to new nodes),
    half removals of existing edges; as id arrays (add_src, add_dst, rm_src, rm_dst)."""
    src, dst, ids = edge_arrays(path)
    rng = np.random.default_rng(seed)
    n_add = count // 2
    n_rm = min(count - n_add, len(src))
    a = ids[rng.integers(0, len(ids), n_add)]
    b = ids[rng.integers(0, len(ids), n_add)]
    fresh = rng.random(n_add) < 0.05
    b[fresh] = ids.max() + 1 + rng.integers(0, max(1, n_add // 20), int(fresh.sum())) * 3
    pick = rng.choice(len(src), n_rm, replace=False)
    return a, b, ids[src[pick]], ids[dst[pick]]


def apply_changes(path: Path, changes: tuple[Any, ...], batch: int = 10_000) -> None:
    import instant_embedding as ie

    a, b, rs, rd = changes
    with ie.Graph.open(path, writable=True) as g:
        for k in range(0, max(len(a), len(rs)), batch):
            with g.batch():
                if k < len(a):
                    g.add_edges(a[k : k + batch], b[k : k + batch])
                if k < len(rs):
                    g.remove_edges(rs[k : k + batch], rd[k : k + batch])


# ------------------------------------------------------------------------------ parts
def part_throughput(base: Path, work: Path, sizes: list[int], total: int) -> list[dict]:
    import instant_embedding as ie

    rows = []
    for size in sizes:
        path = work / f"tp{size}.graph"
        shutil.copyfile(base, path)
        commits = max(3, total // size)
        a, b, _, _ = random_changes(base, 2 * size * commits, seed=size)
        _, _, rs, rd = random_changes(base, 2 * size * commits, seed=size + 1)
        with ie.Graph.open(path, writable=True) as g:
            for kind in ("add", "remove"):
                lat = []
                t0 = time.perf_counter()
                for c in range(commits):
                    s = slice(c * size, (c + 1) * size)
                    t = time.perf_counter()
                    if kind == "add":
                        g.add_edges(a[s], b[s])
                    else:
                        g.remove_edges(rs[s], rd[s])
                    lat.append(time.perf_counter() - t)
                dt = time.perf_counter() - t0
                rows.append(
                    {
                        "op": kind,
                        "batch_edges": size,
                        "commits": commits,
                        "edges_per_s": size * commits / dt,
                        "commits_per_s": commits / dt,
                        "commit_ms_median": 1e3 * percentile(lat, 50),
                        "commit_ms_p95": 1e3 * percentile(lat, 95),
                        "log_bytes": g.log_info()["bytes"],
                    }
                )
        for p in work.glob(f"tp{size}.graph*"):
            p.unlink()
    return rows


def part_latency(
    base: Path, work: Path, fractions: list[float], warm_q: int, cold_q: int
) -> list[dict]:
    import instant_embedding as ie

    model = ie.InstantEmbedding(dim=512, eps=1e-5, threads=1)
    m = ie.Graph.open(base).num_edges
    rows = []
    for frac in fractions:
        live = work / f"live{frac}.graph"
        comp = work / f"comp{frac}.graph"
        shutil.copyfile(base, live)
        count = max(2, int(m * frac))
        apply_changes(live, random_changes(base, count, seed=int(frac * 1e6)))
        # The same graph, compacted into a plain file.
        shutil.copyfile(live, comp)
        shutil.copyfile(str(live) + ".live", str(comp) + ".live")
        with ie.Graph.open(comp, writable=True) as g:
            g.compact()
        os.unlink(str(comp) + ".live")
        gl, gc = ie.Graph.open(live), ie.Graph.open(comp)
        info = gl.log_info()
        assert gc.log_info() is None and gl.num_edges == gc.num_edges
        nodes = list(gc.nodes)
        rng = np.random.default_rng(1)
        sample = [nodes[i] for i in rng.integers(0, len(nodes), warm_q)]
        same = np.array_equal(model.embed(gl, sample[:50]), model.embed(gc, sample[:50]))
        for g in (gl, gc):  # warm-up: tables built, pages in memory
            model.embed(g, sample)
        warm: dict[str, list[float]] = {"live": [], "compacted": []}
        for v in sample:
            for name, g in (("live", gl), ("compacted", gc)):
                t = time.perf_counter()
                model.embed(g, [v])
                warm[name].append(time.perf_counter() - t)
        del gl, gc
        cold: dict[str, list[float]] = {"live": [], "compacted": []}
        for v in sample[:cold_q]:
            for name, p in (("live", live), ("compacted", comp)):
                for f in (p, Path(str(p) + ".live")):
                    if f.exists():
                        evict(f)
                g = ie.Graph.open(p, prefetch=True)
                t = time.perf_counter()
                model.embed(g, [v])
                cold[name].append(time.perf_counter() - t)
                del g
        row = {
            "fraction_changed": frac,
            "changed_edges": count,
            "log_bytes": info["bytes"],
            "log_rows": info["changed_nodes"],
            "new_nodes": info["new_nodes"],
            "bit_identical": bool(same),
            "warm_us_live": 1e6 * percentile(warm["live"], 50),
            "warm_us_compacted": 1e6 * percentile(warm["compacted"], 50),
            "cold_ms_live": 1e3 * percentile(cold["live"], 50) if cold_q else None,
            "cold_ms_compacted": 1e3 * percentile(cold["compacted"], 50) if cold_q else None,
        }
        row["warm_ratio"] = row["warm_us_live"] / row["warm_us_compacted"]
        if cold_q:
            row["cold_ratio"] = row["cold_ms_live"] / row["cold_ms_compacted"]
        rows.append(row)
        for p in work.glob(f"*{frac}.graph*"):
            p.unlink()
    return rows


CHILD = r"""
import sys, time, json
import instant_embedding as ie
from instant_embedding.readers import convert
what, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if what == "compact":
    with ie.Graph.open(path, writable=True) as g:
        g.compact(threads=int(sys.argv[3]))
else:
    convert(sys.argv[3], path)
dt = time.perf_counter() - t
status = dict(l.split(":", 1) for l in open("/proc/self/status"))
kb = lambda k: int(status[k].split()[0])
print(json.dumps({"seconds": dt, "peak_rss_mib": kb("VmHWM") / 1024}))
"""


def child(args: list[str]) -> dict[str, Any]:
    # Peak RSS is the child's own VmHWM (of its address space after exec; it counts the
    # mapped pages of the files it reads, too): a fork's ru_maxrss would start at ours.
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def part_compaction(base: Path, work: Path, changes: int, threads: int) -> dict[str, Any]:
    import instant_embedding as ie

    live = work / "big.graph"
    shutil.copyfile(base, live)
    t = time.perf_counter()
    apply_changes(live, random_changes(base, changes, seed=5), batch=100_000)
    apply_s = time.perf_counter() - t
    g = ie.Graph.open(live)
    info, n, m = g.log_info(), g.num_nodes, g.num_edges
    del g
    comp = child(["compact", str(live), str(threads)])
    # The final edge list as text (from the compacted file), converted from scratch.
    src, dst, ids = edge_arrays(live)
    text = work / "final.tsv"
    with open(text, "w") as f:
        np.savetxt(f, np.stack([ids[src], ids[dst]], 1), fmt="%d", delimiter="\t")
    conv = child(["convert", str(work / "rebuilt.graph"), str(text)])
    same = ie.Graph.open(work / "rebuilt.graph").num_edges == m
    res = {
        "nodes": n,
        "edges": m,
        "changed_edges": changes,
        "apply_seconds": apply_s,
        "log_bytes": info["bytes"],
        "log_rows": info["changed_nodes"],
        "graph_bytes": os.path.getsize(live),
        "text_bytes": os.path.getsize(text),
        "compact_seconds": comp["seconds"],
        "compact_peak_rss_mib": comp["peak_rss_mib"],
        "convert_seconds": conv["seconds"],
        "convert_peak_rss_mib": conv["peak_rss_mib"],
        "speedup": conv["seconds"] / comp["seconds"],
        "same_edge_count": bool(same),
        "threads": threads,
    }
    for p in work.iterdir():
        if p.is_file() and p != base:
            p.unlink()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", default="blogcatalog", help="throughput and latency graph")
    ap.add_argument("--compact-dataset", default="cnr_2000", help="compaction graph")
    ap.add_argument("--compact-changes", type=int, default=1_000_000)
    ap.add_argument(
        "--compact-synthetic",
        type=int,
        default=0,
        help="compact a synthetic graph of this many edges instead of --compact-dataset",
    )
    ap.add_argument("--throughput-edges", type=int, default=20_000, help="per batch size")
    ap.add_argument("--warm", type=int, default=300, help="warm queries per setting")
    ap.add_argument("--cold", type=int, default=30, help="cold queries per setting")
    ap.add_argument("--threads", type=int, default=2, help="compaction threads")
    ap.add_argument("--scratch", default=None, help="scratch folder (default: system temp)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny run for CI (results in temp dir)")
    ap.add_argument(
        "--parts",
        default="throughput,latency,compaction",
        help="comma separated subset of throughput,latency,compaction",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))

    work = Path(tempfile.mkdtemp(prefix="livebench-", dir=args.scratch))
    res: dict[str, Any] = {"benchmark": "live", "machine": machine_info()}
    try:
        if args.smoke:
            base = work / "smoke.graph"
            synthetic(base, 2000, 12_000, seed=1)
            big = base
            sizes, total, fr = [1, 100], 200, [0.01, 0.1]
            warm_q, cold_q, changes = 20, 3, 2000
        else:
            base = dataset_graph(args.dataset)
            if args.compact_synthetic:
                big = work / "synthetic.graph"
                m = args.compact_synthetic
                synthetic_file(big, m // 10, m, seed=3, work=work)
            else:
                big = dataset_graph(args.compact_dataset)
            sizes, total, fr = [1, 100, 10_000], args.throughput_edges, [0.001, 0.01, 0.1]
            warm_q, cold_q, changes = args.warm, args.cold, args.compact_changes
        res["dataset"] = "synthetic" if args.smoke else args.dataset
        res["load_before"] = os.getloadavg()
        if "throughput" in parts:
            res["throughput"] = part_throughput(base, work, sizes, total)
            print_table(res["throughput"])
        if "latency" in parts:
            res["latency"] = part_latency(base, work, fr, warm_q, cold_q)
            print_table(res["latency"])
        if "compaction" in parts:
            res["compaction_dataset"] = (
                "synthetic"
                if args.smoke
                else f"synthetic-{args.compact_synthetic}"
                if args.compact_synthetic
                else args.compact_dataset
            )
            res["compaction"] = part_compaction(big, work, changes, args.threads)
            print(json.dumps(res["compaction"], indent=1))
        res["load_after"] = os.getloadavg()
        res["ru_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.smoke:
        assert all(r["bit_identical"] for r in res["latency"])
        assert res["compaction"]["same_edge_count"]
    # One result file: parts run separately are merged into it.
    out_old = Path(args.out) if args.out else RESULTS / "live.json"
    if not args.smoke and out_old.exists():
        old = json.loads(out_old.read_text())
        for k in ("throughput", "latency", "compaction", "compaction_dataset"):
            if k not in res and k in old:
                res[k] = old[k]
                res.setdefault("earlier_parts", {})[k] = old.get("machine", {})
    out = (
        Path(args.out)
        if args.out
        else (
            Path(tempfile.mkdtemp(prefix="livebench-out-")) / "live.json"
            if args.smoke
            else RESULTS / "live.json"
        )
    )
    write_json(out, res)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
