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
   page cache before each query; opening the graph included). One node's embedding (the
   library's defaults, 1 thread) through the Python API. Reports medians and the ratio
   live / compacted (goal <= 1.3x at 1 %).
3. ``compaction``: a larger graph with many changed edges (``--compact-graph`` takes an
   existing file, e.g. the billion-edge one, changes it in place and deletes it): optionally
   cold and warm queries on it against a plain copy (``--compact-queries``), then ``compact``
   against converting the same final edge list from a text or ``.npy`` file with ``convert``.
   Applying the changes, compacting and converting each run in a fresh process (wall time and
   peak RSS), compaction and conversion from inputs evicted from the page cache. Goal:
   compaction >= 5x faster. ``--compact-string-ids`` runs it on a copy of the graph with
   string ids ``u0``, ``u1``, ... (written to Parquet and converted; the file given is kept).

The results go to ``benches/results/live.json`` (with --smoke into a temporary folder) with
the machine, load and commit.

Examples::

    python benches/live.py --smoke
    python benches/live.py --dataset blogcatalog --compact-dataset cnr_2000
    python benches/live.py --parts compaction --compact-graph /tmp/synth/synth_n65m.graph \
        --compact-changes 10000000 --compact-batch 2000000 --compact-queries 20 \
        --rebuild-from npy --memory-limit 4G --record-as compaction_billion_rebuild
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


def random_changes(path: Path, count: int, seed: int) -> tuple[Any, Any, Any, Any]:
    """``count`` changes: half new edges between existing nodes (5 % of them to new nodes),
    half removals of existing edges; as id arrays (add_src, add_dst, rm_src, rm_dst).

    Reads the file through memory maps and samples arcs, so it works on graphs larger than
    memory (the billion-edge one)."""
    h = read_csr(path)
    ip, nb = h["indptr"], h["indices"]
    n = len(ip) - 1
    ids = h["ids"]
    # String ids through the graph's own id table (the benchmarks' reader maps ints only).
    strings = h["id_kind"] == "utf8"
    if strings:
        import instant_embedding as ie

        str_ids = ie.Graph.open(path).ids
    rng = np.random.default_rng(seed)
    n_add = count // 2
    n_rm = min(count - n_add, int(ip[-1]))

    def to_ids(v: np.ndarray) -> np.ndarray:
        if strings:
            return np.asarray(str_ids(v), dtype=object)
        return np.asarray(ids[v]) if ids is not None else v.astype(np.int64)

    a = to_ids(rng.integers(0, n, n_add))
    b = to_ids(rng.integers(0, n, n_add))
    fresh = rng.random(n_add) < 0.05
    k = rng.integers(0, max(1, n_add // 20), int(fresh.sum()))
    # Implicit ids: new nodes n, n+1, ...; int64 ids: new ids above the largest, with gaps;
    # string ids: "new0", "new1", ...
    if strings:
        b[fresh] = np.char.add("new", k.astype(str))
    else:
        b[fresh] = n + k if ids is None else int(np.max(ids)) + 1 + 3 * k
    # Existing edges: uniform arcs, each undirected edge once (by its smaller endpoint).
    arcs = np.unique(rng.integers(0, int(ip[-1]), 2 * n_rm))
    src = np.searchsorted(ip, arcs, side="right") - 1
    dst = np.asarray(nb[arcs]).astype(np.int64)
    if not h["directed"]:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    pairs = np.unique(src * (n + 1) + dst)
    pairs = pairs[rng.permutation(len(pairs))[:n_rm]]
    out = (a, b, to_ids(pairs // (n + 1)), to_ids(pairs % (n + 1)))
    return tuple(x.astype(str) for x in out) if strings else out


def string_id_copy(src: Path, dst: Path, work: Path) -> None:
    """``src``'s graph with string ids (``u<index>``) at ``dst``: its edges written to Parquet
    (needs pyarrow) and converted with ``ie.convert``; isolated nodes are left out."""
    import instant_embedding as ie
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    h = read_csr(src)
    ip, nb = np.asarray(h["indptr"]).astype(np.int64), h["indices"]
    n, deg = len(ip) - 1, np.diff(np.asarray(h["indptr"]).astype(np.int64))

    def names(v: np.ndarray) -> Any:
        return pc.binary_join_element_wise("u", pc.cast(pa.array(v), pa.string()), "")

    edges = work / "string_ids.parquet"
    writer = None
    for v0 in range(0, n, 1_000_000):
        v1 = min(n, v0 + 1_000_000)
        s = np.repeat(np.arange(v0, v1, dtype=np.int64), deg[v0:v1])
        d = np.asarray(nb[ip[v0] : ip[v1]]).astype(np.int64)
        if not h["directed"]:
            s, d = s[s <= d], d[s <= d]
        t = pa.table({"src": names(s), "dst": names(d)})
        writer = writer or pq.ParquetWriter(edges, t.schema)
        writer.write_table(t)
    if writer is not None:
        writer.close()
    ie.convert(edges, dst, directed=h["directed"])
    edges.unlink()


def apply_changes(
    path: Path, changes: tuple[Any, ...], batch: int = 10_000
) -> dict[str, list[float]]:
    """Commits ``changes`` in batches; the seconds of each commit, split by whether the writer
    wrote the log's index file after it (a new file at ``PATH.live.index``)."""
    import instant_embedding as ie

    a, b, rs, rd = changes
    index = Path(str(path) + ".live.index")

    def ident() -> tuple[int, int] | None:
        try:
            st = index.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns)

    out: dict[str, list[float]] = {"with_index_write": [], "without": []}
    with ie.Graph.open(path, writable=True) as g:
        for k in range(0, max(len(a), len(rs)), batch):
            before = ident()
            t = time.perf_counter()
            with g.batch():
                if k < len(a):
                    g.add_edges(a[k : k + batch], b[k : k + batch])
                if k < len(rs):
                    g.remove_edges(rs[k : k + batch], rd[k : k + batch])
            dt = time.perf_counter() - t
            wrote = ident() not in (None, before)
            out["with_index_write" if wrote else "without"].append(dt)
    return out


def index_file_names(path: Path) -> str:
    """Which commit the log's index file names: ``last commit`` (the log's newest),
    ``earlier commit``, or ``none`` (no file)."""
    index, log = Path(str(path) + ".live.index"), Path(str(path) + ".live")
    if not index.exists() or not log.exists():
        return "none"
    named = int.from_bytes(index.read_bytes()[24:32], "little")
    with open(log, "rb") as f:
        slots = f.read(256)[128:256]
    # The superblock slot of the higher sequence number names the newest commit's trailer.
    seq, trailer = max(
        (
            int.from_bytes(slots[k : k + 8], "little"),
            int.from_bytes(slots[k + 8 : k + 16], "little"),
        )
        for k in (0, 64)
    )
    return "last commit" if named == trailer else "earlier commit"


# ------------------------------------------------------------------------------ parts
def log_bytes(path: Path) -> int:
    live = Path(str(path) + ".live")
    return live.stat().st_size if live.exists() else 0


def part_hub(work: Path, leaves: int, follows: int) -> list[dict]:
    """A star graph (one hub with ``leaves`` neighbours, built with ``Graph.from_edges``),
    then ``follows`` commits of one new edge each to the hub: from an existing leaf, and
    from a new node. Reports the log bytes and the time of each commit."""
    import instant_embedding as ie

    rows = []
    for kind in ("existing node", "new node"):
        path = work / "star.graph"
        leaf_ids = np.arange(1, leaves + 1, dtype=np.int64)
        ie.Graph.from_edges(np.zeros(leaves, dtype=np.int64), leaf_ids).save(path)
        rng = np.random.default_rng(7)
        sizes, times = [], []
        with ie.Graph.open(path, writable=True) as g:
            for k in range(follows):
                other = (
                    int(rng.integers(1, leaves + 1)) if kind == "existing node" else leaves + 1 + k
                )
                if kind == "existing node":
                    # The follower is a leaf whose edge to the hub was removed first (outside
                    # the timing), so the add is a new arc in the hub's row.
                    g.remove_edges([0], [other])
                before = log_bytes(path)
                t = time.perf_counter()
                g.add_edges([0], [other])
                times.append(time.perf_counter() - t)
                sizes.append(log_bytes(path) - before)
        rows.append(
            {
                "follower": kind,
                "hub_degree": leaves,
                "commits": follows,
                "log_bytes_per_commit_median": percentile(sizes, 50),
                "log_bytes_per_commit_max": max(sizes),
                "commit_ms_median": 1e3 * percentile(times, 50),
            }
        )
        for p in work.glob("star.graph*"):
            p.unlink()
    return rows


def part_random(work: Path, nodes: int, edges: int, runs: list[tuple[int, int]]) -> list[dict]:
    """A graph of ``edges`` uniformly random edges on ``nodes`` nodes (int ids and string
    ids), then, for each ``(adds, batch)`` of ``runs`` on a fresh copy, ``adds`` random edges
    in batches, each batch one durable commit. Reports edges per second (wall and process CPU
    time: the CPU figure is the one to compare on a shared machine) and the log's size against
    the graph file's."""
    import instant_embedding as ie

    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    most = max(a for a, _ in runs)
    add_s, add_d = rng.integers(0, nodes, most), rng.integers(0, nodes, most)
    rows = []
    for ids in ("int", "string"):

        def name(v: np.ndarray, ids: str = ids) -> Any:
            return v if ids == "int" else np.char.add("u", v.astype(str)).astype(object)

        base = work / "random-base.graph"
        ie.Graph.from_edges(name(src), name(dst)).save(base)
        a, b = name(add_s), name(add_d)
        for adds, batch in runs:
            path = work / "random.graph"
            shutil.copyfile(base, path)
            with ie.Graph.open(path, writable=True) as g:
                t0, c0 = time.perf_counter(), time.process_time()
                for k in range(0, adds, batch):
                    g.add_edges(a[k : min(k + batch, adds)], b[k : min(k + batch, adds)])
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
            rows.append(
                {
                    "ids": ids,
                    "edges_added": adds,
                    "changed_fraction": adds / edges,
                    "batch_edges": batch,
                    "edges_per_s": adds / dt,
                    "edges_per_cpu_s": adds / dc,
                    "log_bytes": log_bytes(path),
                    "log_over_file": log_bytes(path) / path.stat().st_size,
                }
            )
            for p in work.glob("random.graph*"):
                p.unlink()
        base.unlink()
    return rows


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


def major_faults() -> int:
    """Page faults of this process that read from disk so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def cold_query(path: Path, v: Any, model: Any) -> tuple[float, Any]:
    """One query on ``path`` with the file and its log evicted from the page cache first:
    seconds, opening included (it hints the log's tree), and the graph it opened."""
    import instant_embedding as ie

    for f in (path, Path(str(path) + ".live")):
        if f.exists():
            evict(f)
    t = time.perf_counter()
    g = ie.Graph.open(path, prefetch=True)
    model.embed(g, [v])
    return time.perf_counter() - t, g


def part_latency(
    base: Path, work: Path, fractions: list[float], warm_q: int, cold_q: int
) -> list[dict]:
    import instant_embedding as ie

    model = ie.InstantEmbedding(threads=1)
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
        # Every reference goes (the loops' `g` too): pages of a mapped file cannot be evicted.
        del gl, gc, g
        cold: dict[str, list[float]] = {"live": [], "compacted": []}
        for v in sample[:cold_q]:
            for name, p in (("live", live), ("compacted", comp)):
                cold[name].append(cold_query(p, v, model)[0])
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
import sys, time, json, threading
from pathlib import Path
import instant_embedding as ie
from instant_embedding.readers import convert
what, path = sys.argv[1], sys.argv[2]
if what == "apply":
    sys.path.insert(0, sys.argv[5])
    from live import apply_changes, random_changes
    changes = random_changes(Path(path), int(sys.argv[3]), seed=5)
# The process's own memory (anonymous RSS, without the mapped files), sampled every 20 ms.
anon = [0]
def sample():
    while True:
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                anon[0] = max(anon[0], int(line.split()[1]))
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
t = time.perf_counter()
commits = {}
if what == "apply":
    commits = apply_changes(Path(path), changes, batch=int(sys.argv[4]))
elif what == "compact":
    with ie.Graph.open(path, writable=True) as g:
        g.compact(threads=int(sys.argv[3]))
else:
    convert(sys.argv[3], path, memory_limit=sys.argv[4] or None)
dt = time.perf_counter() - t
status = dict(l.split(":", 1) for l in open("/proc/self/status"))
kb = lambda k: int(status[k].split()[0])
peak = {"peak_rss_mib": kb("VmHWM") / 1024, "peak_anon_mib": anon[0] / 1024}
print(json.dumps({"seconds": dt, **peak, "commits": commits}))
"""


def child(args: list[str]) -> dict[str, Any]:
    # Peak RSS is the child's own VmHWM (of its address space after exec; it counts the
    # mapped pages of the files it reads, too): a fork's ru_maxrss would start at ours.
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def write_edge_list(path: Path, out: Path, fmt: str, chunk_arcs: int = 1 << 25) -> int:
    """The graph file's edge list (each undirected edge once, by id) as TSV text or an
    ``.npy`` array (int32 ids when they fit), written in chunks of rows. Returns the edges."""
    h = read_csr(path)
    ip, nb, ids = h["indptr"], h["indices"], h["ids"]
    n = len(ip) - 1
    wide = ids is not None and (int(np.max(ids)) >= 2**31 or int(np.min(ids)) < 0)
    dtype = np.int64 if wide or n >= 2**31 else np.int32
    m = h["num_edges"]
    arr = np.lib.format.open_memmap(out, "w+", dtype, (m, 2)) if fmt == "npy" else None
    f = open(out, "w") if fmt == "text" else None
    written, lo = 0, 0
    while lo < n:
        hi = min(n, int(np.searchsorted(ip, int(ip[lo]) + chunk_arcs, side="right")))
        hi = max(hi, lo + 1)
        deg = np.diff(ip[lo : hi + 1].astype(np.int64))
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), deg)
        dst = np.asarray(nb[int(ip[lo]) : int(ip[hi])]).astype(np.int64)
        if not h["directed"]:
            keep = src <= dst
            src, dst = src[keep], dst[keep]
        if ids is not None:
            src, dst = np.asarray(ids[src]), np.asarray(ids[dst])
        if arr is not None:
            arr[written : written + len(src), 0] = src
            arr[written : written + len(src), 1] = dst
        else:
            assert f is not None
            np.savetxt(f, np.stack([src, dst], 1), fmt="%d", delimiter="\t")
        written += len(src)
        lo = hi
    if arr is not None:
        arr.flush()
        del arr
    if f is not None:
        f.close()
    assert written == m, (written, m)
    return written


def cold_and_warm(
    live: Path,
    comp: Path,
    nodes: list[Any],
    model: Any,
    warmup: int,
    steady_nodes: list[Any],
) -> dict[str, dict[str, list[float]]]:
    """Each node queried on the live graph and on its compacted copy, interleaved: cold (file
    and log evicted first; ``prefetch=True``), then warm (the same query again), then warm
    just opened (a reader opened without ``prefetch`` on the warm file, the node queried
    once untimed, then timed: the plain query code, not the read-ahead one); then steady:
    each of ``steady_nodes`` on one graph, then on the other (each graph open for ``warmup``
    queries on random nodes first)."""
    import instant_embedding as ie

    out: dict[str, dict[str, list[float]]] = {
        "cold": {"live": [], "compacted": []},
        "warm": {"live": [], "compacted": []},
        "warm_open": {"live": [], "compacted": []},
        # Page faults that read from disk during the timed warm and steady queries: a page
        # of a warm file that left the page cache meanwhile (memory pressure, or a host that
        # reclaims unmapped cache pages) makes a "warm" query partly cold.
        "major_faults": {"warm_live": [0], "warm_compacted": [0]},
    }
    for v in nodes:
        for name, p in (("live", live), ("compacted", comp)):
            seconds, g = cold_query(p, v, model)
            out["cold"][name].append(seconds)
            f = major_faults()
            t = time.perf_counter()
            model.embed(g, [v])
            out["warm"][name].append(time.perf_counter() - t)
            out["major_faults"][f"warm_{name}"][0] += major_faults() - f
            del g
            g = ie.Graph.open(p)
            model.embed(g, [v])
            t = time.perf_counter()
            model.embed(g, [v])
            out["warm_open"][name].append(time.perf_counter() - t)
            del g
    # Steady state of a long-running reader: each graph in turn opened once and warmed up
    # by queries on other nodes (enough work for a live graph to build its index in memory),
    # then each node queried twice, the second time timed. One graph at a time, the other's
    # pages evicted: two copies of a large graph need not fit in the page cache together
    # (on a 24 GB machine, two 10.8 GB files do not), and a page read from disk is not a
    # steady state.
    out["steady"] = {"live": [], "compacted": []}
    for name, p, other in (("live", live, comp), ("compacted", comp, live)):
        for f in (other, Path(str(other) + ".live")):
            if f.exists():
                evict(f)
        g = ie.Graph.open(p)
        every = g.nodes
        others = [every[int(i)] for i in np.random.default_rng(3).integers(0, len(every), warmup)]
        del every
        model.embed(g, others)
        faults = 0
        for v in steady_nodes:
            model.embed(g, [v])
            f = major_faults()
            t = time.perf_counter()
            model.embed(g, [v])
            out["steady"][name].append(time.perf_counter() - t)
            faults += major_faults() - f
        out["major_faults"][f"steady_{name}"] = [faults]
        del g
    # A reader just opened on a warm file, each of ``steady_nodes`` queried once (what a task
    # embedding its part of the nodes does; its first query loads the log's index file or
    # builds the level filter): each graph in turn, the other's pages evicted, and the live
    # graph again without its index file (hard links to its file and log, without it). The
    # pages the queries read are brought in by the same queries on another reader just
    # before: pages read but not mapped may leave the page cache on a VM (a read of the whole
    # file did not keep them there).
    # The live graph also with the index file of its last commit (written by ``write_index``
    # beside hard links), for a file the writer left for an earlier commit.
    bare = live.with_name("no_index_" + live.name)
    exact = live.with_name("last_index_" + live.name)
    for copy in (bare, exact):
        for src, dst in ((live, copy), (Path(str(live) + ".live"), Path(str(copy) + ".live"))):
            dst.unlink(missing_ok=True)
            if src.exists():
                os.link(src, dst)
    with ie.Graph.open(exact, writable=True) as w:
        w.write_index()
    out["open_distinct"] = {}
    for name, p, other in (
        ("live", live, comp),
        ("live_no_index", bare, comp),
        ("live_last_index", exact, comp),
        ("compacted", comp, live),
    ):
        for f in (other, Path(str(other) + ".live"), Path(str(other) + ".live.index")):
            if f.exists():
                evict(f)
        model.embed(ie.Graph.open(p), steady_nodes)
        g = ie.Graph.open(p)
        times = []
        f = major_faults()
        for v in steady_nodes:
            t = time.perf_counter()
            model.embed(g, [v])
            times.append(time.perf_counter() - t)
        out["open_distinct"][name] = times
        out["major_faults"][f"open_distinct_{name}"] = [major_faults() - f]
        del g
    for copy in (bare, exact):
        for f in (copy, Path(str(copy) + ".live"), Path(str(copy) + ".live.index")):
            f.unlink(missing_ok=True)
    return out


def part_compaction(
    base: Path,
    work: Path,
    changes: int,
    threads: int,
    batch: int,
    rebuild_from: str,
    queries: int,
    in_place: bool,
    memory_limit: str,
    warmup: int = 3000,
    steady_queries: int = 300,
) -> dict[str, Any]:
    """Apply ``changes`` edge changes in commits of ``batch``, optionally compare queries on
    the live graph with a compacted copy, then time ``compact`` against converting the final
    edge list from scratch (each in a fresh process)."""
    import instant_embedding as ie

    if in_place:
        live = base
    else:
        live = work / "big.graph"
        shutil.copyfile(base, live)
    # Each step in a fresh process: the writer's memory is not left to the steps after it.
    bench_dir = str(Path(__file__).resolve().parent)
    applied = child(["apply", str(live), str(changes), str(batch), bench_dir])
    g = ie.Graph.open(live)
    commits = applied["commits"]
    info, n, m = g.log_info(), g.num_nodes, g.num_edges
    res: dict[str, Any] = {
        "nodes": n,
        "edges": m,
        "changed_edges": changes,
        "commit_edges": batch,
        "apply_seconds": applied["seconds"],
        "apply_peak_rss_mib": applied["peak_rss_mib"],
        "apply_peak_anon_mib": applied["peak_anon_mib"],
        # Commits after which the writer wrote the log's index file, and each kind's median.
        "index_writes": len(commits["with_index_write"]),
        "commit_ms_with_index_write": 1e3 * percentile(commits["with_index_write"], 50)
        if commits["with_index_write"]
        else None,
        "commit_ms_without": 1e3 * percentile(commits["without"], 50),
        "index_file_names": index_file_names(live),
        "log_bytes": info["bytes"],
        "log_rows": info["changed_nodes"],
        "graph_bytes": os.path.getsize(live),
        "threads": threads,
    }
    if queries:
        # The same graph as a plain file (written by save, which is a rebuild's writer).
        comp = work / "saved.graph"
        t = time.perf_counter()
        g.save(comp)
        res["save_seconds"] = time.perf_counter() - t
        model = ie.InstantEmbedding(threads=1)
        rng = np.random.default_rng(2)
        every = g.nodes
        nodes = [every[int(i)] for i in rng.integers(0, n, queries)]
        # Steady queries are cheap: more of them, for a ratio that moves less between runs.
        steady_nodes = [
            every[int(i)] for i in np.random.default_rng(4).integers(0, n, steady_queries)
        ]
        del every
        gc = ie.Graph.open(comp)
        res["bit_identical"] = bool(
            np.array_equal(model.embed(g, nodes[:10]), model.embed(gc, nodes[:10]))
        )
        del g, gc
        q = cold_and_warm(live, comp, nodes, model, warmup, steady_nodes)
        res["steady_warmup_queries"] = warmup
        res["steady_queries"] = steady_queries
        for kind, unit, scale in (
            ("cold", "ms", 1e3),
            ("warm", "us", 1e6),
            ("warm_open", "us", 1e6),
            ("steady", "us", 1e6),
        ):
            for name in ("live", "compacted"):
                res[f"{kind}_{unit}_{name}"] = scale * percentile(q[kind][name], 50)
            res[f"{kind}_ratio"] = res[f"{kind}_{unit}_live"] / res[f"{kind}_{unit}_compacted"]
        # Fresh readers on distinct nodes: the first query (which loads the log's index file
        # or builds the level filter) and the median of the others.
        for name, times in q["open_distinct"].items():
            res[f"open_distinct_first_ms_{name}"] = 1e3 * times[0]
            res[f"open_distinct_us_{name}"] = 1e6 * percentile(times[1:], 50)
        for name in ("live", "live_no_index", "live_last_index"):
            res[f"open_distinct_ratio_{name}"] = (
                res[f"open_distinct_us_{name}"] / res["open_distinct_us_compacted"]
            )
        res["index_file_bytes"] = (
            os.path.getsize(f"{live}.live.index") if os.path.exists(f"{live}.live.index") else 0
        )
        for key, count in q["major_faults"].items():
            res[f"major_faults_{key}"] = int(count[0])
        res["query_model"] = model.get_params()
        comp.unlink()
    else:
        del g
    # Compaction and conversion both start from cold inputs (evicted from the page cache).
    evict(live)
    evict(Path(str(live) + ".live"))
    comp_run = child(["compact", str(live), str(threads)])
    res["compact_seconds"] = comp_run["seconds"]
    res["compact_peak_rss_mib"] = comp_run["peak_rss_mib"]
    res["compact_peak_anon_mib"] = comp_run["peak_anon_mib"]
    if rebuild_from == "none":  # no disk or time for a rebuild (the billion-edge graph)
        return res
    # The final edge list, converted from scratch.
    edges = work / ("final.tsv" if rebuild_from == "text" else "final.npy")
    t = time.perf_counter()
    write_edge_list(live, edges, rebuild_from)
    res["edge_list_write_seconds"] = time.perf_counter() - t
    res["rebuild_from"] = rebuild_from
    res["edge_list_bytes"] = os.path.getsize(edges)
    if in_place:  # disk for the conversion's runs and output (the billion-edge graph)
        live.unlink()
    rebuilt = work / "rebuilt.graph"
    evict(edges)
    conv = child(["convert", str(rebuilt), str(edges), memory_limit])
    edges.unlink()
    res["convert_seconds"] = conv["seconds"]
    res["convert_peak_rss_mib"] = conv["peak_rss_mib"]
    res["convert_peak_anon_mib"] = conv["peak_anon_mib"]
    res["convert_memory_limit"] = memory_limit
    res["speedup"] = conv["seconds"] / comp_run["seconds"]
    res["same_edge_count"] = bool(ie.Graph.open(rebuilt).num_edges == m)
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
    ap.add_argument(
        "--compact-graph",
        default=None,
        help="compact this graph file instead (changed in place, then DELETED: pass a copy)",
    )
    ap.add_argument("--compact-batch", type=int, default=100_000, help="edges per commit")
    ap.add_argument(
        "--compact-string-ids",
        action="store_true",
        help="run the compaction part on a copy of its graph with string ids (u0, u1, ...)",
    )
    ap.add_argument(
        "--rebuild-from",
        choices=["text", "npy", "none"],
        default="text",
        help="the final edge list's format for the from-scratch conversion (none: no rebuild)",
    )
    ap.add_argument(
        "--compact-queries",
        type=int,
        default=0,
        help="cold and warm queries on the changed graph against a saved plain copy",
    )
    ap.add_argument("--memory-limit", default="", help="memory limit of the conversion")
    ap.add_argument(
        "--steady-warmup", type=int, default=3000, help="queries before the steady-state ones"
    )
    ap.add_argument(
        "--steady-queries", type=int, default=300, help="steady-state queries (random nodes)"
    )
    ap.add_argument("--throughput-edges", type=int, default=20_000, help="per batch size")
    ap.add_argument("--warm", type=int, default=300, help="warm queries per setting")
    ap.add_argument("--cold", type=int, default=30, help="cold queries per setting")
    ap.add_argument("--threads", type=int, default=2, help="compaction threads")
    ap.add_argument("--scratch", default=None, help="scratch folder (default: system temp)")
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--record-as",
        default="compaction",
        help="key of the compaction part's record in the result file (one per graph)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny run for CI (results in temp dir)")
    ap.add_argument(
        "--parts",
        default="hub,random,throughput,latency,compaction",
        help="comma separated subset of hub,random,throughput,latency,compaction",
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))

    work = Path(tempfile.mkdtemp(prefix="livebench-", dir=args.scratch))
    res: dict[str, Any] = {"benchmark": "live"}
    try:
        if args.smoke:
            base = work / "smoke.graph"
            synthetic(base, 2000, 12_000, seed=1)
            big = base
            sizes, total, fr = [1, 100], 200, [0.01, 0.1]
            warm_q, cold_q, changes = 20, 3, 2000
        else:
            # The data set is read by the throughput and latency parts only.
            base = dataset_graph(args.dataset) if {"throughput", "latency"} & set(parts) else None
            if args.compact_graph:
                big = Path(args.compact_graph)
            elif args.compact_synthetic:
                big = work / "synthetic.graph"
                m = args.compact_synthetic
                synthetic_file(big, m // 10, m, seed=3, work=work)
            elif "compaction" in parts:
                big = dataset_graph(args.compact_dataset)
            if "compaction" in parts and args.compact_string_ids:
                copy = work / "string_ids.graph"
                string_id_copy(big, copy, work)
                big = copy
            sizes, total, fr = [1, 100, 10_000], args.throughput_edges, [0.001, 0.01, 0.1]
            warm_q, cold_q, changes = args.warm, args.cold, args.compact_changes
        command = "python benches/live.py " + " ".join(sys.argv[1:])

        def run_part(name: str, dataset: str, run: Any) -> Any:
            # Each part records where, when and how it ran: parts run separately share the file.
            rec: dict[str, Any] = {
                "command": command,
                "dataset": dataset,
                "machine": machine_info(),
                "load_before": os.getloadavg(),
            }
            rec["result"] = run()
            rec["load_after"] = os.getloadavg()
            res["parts"][name] = rec
            return rec["result"]

        res["parts"] = {}
        small = "synthetic" if args.smoke else args.dataset
        if "hub" in parts:
            leaves, follows = (20_000, 20) if args.smoke else (1_000_000, 20)
            print_table(run_part("hub", "star", lambda: part_hub(work, leaves, follows)))
        if "random" in parts:
            n, m, runs = (
                (2_000, 10_000, [(100, 100), (2_000, 100), (2_000, 1_000)])
                if args.smoke
                else (200_000, 1_000_000, [(10_000, 10_000), (100_000, 1_000), (100_000, 100_000)])
            )
            print_table(run_part("random", "uniform", lambda: part_random(work, n, m, runs)))
        if "throughput" in parts:
            print_table(
                run_part("throughput", small, lambda: part_throughput(base, work, sizes, total))
            )
        if "latency" in parts:
            print_table(
                run_part("latency", small, lambda: part_latency(base, work, fr, warm_q, cold_q))
            )
        if "compaction" in parts:
            name = (
                "synthetic"
                if args.smoke
                else Path(args.compact_graph).name
                if args.compact_graph
                else f"synthetic-{args.compact_synthetic}"
                if args.compact_synthetic
                else args.compact_dataset
            ) + (" (string ids)" if args.compact_string_ids else "")
            result = run_part(
                args.record_as,
                name,
                lambda: part_compaction(
                    big,
                    work,
                    changes,
                    args.threads,
                    batch=args.compact_batch,
                    rebuild_from=args.rebuild_from,
                    queries=3 if args.smoke else args.compact_queries,
                    in_place=bool(args.compact_graph) or args.compact_string_ids,
                    memory_limit=args.memory_limit,
                    warmup=20 if args.smoke else args.steady_warmup,
                    steady_queries=20 if args.smoke else args.steady_queries,
                ),
            )
            print(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.smoke and "latency" in res["parts"]:
        assert all(r["bit_identical"] for r in res["parts"]["latency"]["result"])
    if args.smoke and args.record_as in res["parts"]:
        assert res["parts"][args.record_as]["result"]["same_edge_count"]
    # One result file: parts run separately are merged into it.
    out_old = Path(args.out) if args.out else RESULTS / "live.json"
    if not args.smoke and out_old.exists():
        old = json.loads(out_old.read_text()).get("parts", {})
        res["parts"] = {**old, **res["parts"]}
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
