"""Speed benchmark: per-node latency and memory, and all-node throughput against peers.

Two modes:

``latency`` (default)
    For each graph, d in --dims, eps in --eps: the wall time of one
    ``InstantEmbedding(dim, eps=eps).embed(graph, [v])`` call for --nodes random nodes (seeded),
    median and p99,

    - warm: the graph file fully in the page cache;
    - cold: before each query the graph is closed (unmapped), the file's pages are dropped with
      ``posix_fadvise(POSIX_FADV_DONTNEED)`` (checked with ``mincore``: the resident fraction
      after eviction is recorded) and the file is re-opened (O(1), timed separately), so the
      query itself faults in every page it reads;
    - memory one query adds: each of --mem-nodes queries runs in a fresh thread (fresh
      thread-local workspace); the growth of the process's anonymous memory
      (``/proc/self/smaps_rollup``) across the query, minus the same measurement for a 1-node
      graph. File pages of the mapping are shared page cache and are not counted.

    Beside ours: the paper's per-node time for the same data set (results.json) and, for the
    --numba-datasets rows, a plain numba implementation of the same push + projection
    (``numba_ref.py``) timed the same way in the same process (its embeddings are checked to be
    bit-identical to ours).

``throughput``
    All-node embedding time on --datasets (default soc_slashdot0902 and cnr_2000) at 1 and 2
    threads: our ``embed_all``, the numba reference, ``fastrp`` (FastRP(dim,
    weights=[0,0,1,6])) and ``pycleora`` (4 iterations), each peer in a fresh subprocess with
    its thread count fixed through the environment. Ratios are against ours at the same thread
    count. Input preparation (scipy CSR for fastrp, the edge iterator for pycleora) is timed
    separately and excluded from the fit time.

``--smoke``: a tiny generated graph, a few seconds, no shared data needed (for CI).

Examples::

    python benches/speed.py --smoke
    python benches/speed.py latency                     # every shared data set
    python benches/speed.py latency --datasets blogcatalog --eps 1e-5 --dims 512
    python benches/speed.py latency --graph /tmp/synth.graph --no-numba
    python benches/speed.py throughput
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

# --------------------------------------------------------------------------- graphs


def smoke_graph(path: Path, n: int = 2000, avg_deg: float = 10.0, seed: int = 0) -> Path:
    """A small power-law graph (numpy Chung–Lu, exponent 2.5) for smoke runs."""
    import instant_embedding as ie

    rng = np.random.default_rng(seed)
    w = (rng.pareto(1.5, n) + 1.0) * avg_deg / 3.0
    w = np.minimum(w, np.sqrt(w.sum()))
    m = int(n * avg_deg / 2)
    p = w / w.sum()
    u = rng.choice(n, m, p=p)
    v = rng.choice(n, m, p=p)
    keep = u != v
    g = ie.Graph.from_edges(u[keep], v[keep], num_nodes=n)
    g.save(path)
    return path


def resolve_graphs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    graphs: list[tuple[str, Path]] = []
    if args.smoke:
        d = Path(tempfile.mkdtemp(prefix="ie-speed-smoke-"))
        graphs.append(("smoke_chung_lu_2k", smoke_graph(d / "smoke.graph")))
        return graphs
    names = args.datasets
    if names is None:
        names = ["all"] if args.mode == "latency" else ["soc_slashdot0902", "cnr_2000"]
    if names == ["all"]:
        names = C.dataset_names()
        if not names and not args.graph:
            sys.exit("no shared datasets found (set IE_SHARED) and no --graph given")
    for name in names:
        if name == "none":
            continue
        graphs.append((name, C.dataset_graph(name)))
    for p in args.graph or []:
        graphs.append((Path(p).stem, Path(p)))
    if args.reorder:
        # Each graph also as a copy renumbered by Graph.reorder (same embeddings), written
        # next to it once and reused.
        import instant_embedding as ie

        for name, path in list(graphs):
            for method in args.reorder:
                out = path.with_name(f"{path.stem}.{method}.graph")
                if not out.exists() or out.stat().st_mtime < path.stat().st_mtime:
                    t = time.perf_counter()
                    g = ie.Graph.open(path)
                    if method == "random":  # baseline: a seeded random numbering
                        perm = np.random.default_rng(0).permutation(g.num_nodes)
                        g.reorder(out, order=perm)
                    else:
                        g.reorder(out, method=method)
                    print(
                        f"reordered {name} ({method}) in {time.perf_counter() - t:.1f} s",
                        flush=True,
                    )
                graphs.append((f"{name}~{method}", out))
    return graphs


# --------------------------------------------------------------------------- latency


def _pick_nodes(g: Any, count: int, seed: int) -> tuple[np.ndarray, list[Any]]:
    """``count`` random nodes (with replacement when count > n): internal indices and ids.

    Drawn by id rank, so a copy renumbered by ``Graph.reorder`` is timed on the same nodes.
    """
    rng = np.random.default_rng(seed)
    rank = rng.integers(0, g.num_nodes, size=count)
    if getattr(g, "permuted", False):
        nodes = g.nodes
        ids = sorted(nodes) if isinstance(nodes, list) else np.sort(nodes)
        idx = g.index([ids[int(r)] for r in rank] if isinstance(ids, list) else ids[rank])
    else:
        idx = rank.astype(np.uint32)  # unpermuted: rank == internal index
    ids = g.ids(idx)
    ids = list(ids) if isinstance(ids, list) else [int(x) for x in ids]
    return idx, ids


def _stats_us(ns: list[int], cpu_ns: list[int] | None = None) -> dict[str, Any]:
    a = np.asarray(ns, dtype=np.float64) / 1e3
    out = {
        "n": int(a.size),
        "median_us": float(np.median(a)) if a.size else float("nan"),
        "p99_us": C.percentile(a, 99),
        "mean_us": float(a.mean()) if a.size else float("nan"),
    }
    if cpu_ns:
        c = np.asarray(cpu_ns, dtype=np.float64) / 1e3
        out["cpu_median_us"] = float(np.median(c))
        out["cpu_p99_us"] = C.percentile(c, 99)
    return out


def _timed(fn: Any) -> tuple[int, int]:
    """(wall ns, this thread's CPU ns) of ``fn()``. The CPU time is what a query costs when
    the machine is shared: it excludes time spent waiting for a core (and for I/O)."""
    c0 = time.thread_time_ns()
    t0 = time.perf_counter_ns()
    fn()
    t1 = time.perf_counter_ns()
    c1 = time.thread_time_ns()
    return t1 - t0, c1 - c0


def measure_warm(path: Path, model: Any, ids: list[Any], budget: float) -> dict[str, Any]:
    import instant_embedding as ie

    C.warm(path)
    resident = C.residency(path)
    g = ie.Graph.open(path)
    for v in ids[:20]:  # warm the thread's workspace and the code paths
        model.embed(g, [v])
    times: list[int] = []
    cpu: list[int] = []
    deadline = time.perf_counter() + budget
    for v in ids:
        w, c = _timed(lambda v=v: model.embed(g, [v]))
        times.append(w)
        cpu.append(c)
        if time.perf_counter() > deadline:
            break
    out = _stats_us(times, cpu)
    out["resident_after_warm"] = resident
    # The native call alone (no facade: id lookup, argument checks), same nodes.
    from instant_embedding import _core

    idx = g.index(ids[: len(times)])
    core = []
    for i in idx:
        a = np.array([i], dtype=np.uint32)
        core.append(_timed(lambda a=a: _core.embed(g._native, a, model.config, 1))[1])
    out["core_cpu_median_us"] = float(np.median(core)) / 1e3
    # What a query does (kernel counters), on the first nodes.
    try:
        st = [_core.ppr_stats(g._native, int(i), model.config) for i in idx[:100]]
        for k in ("pushes", "touched", "support", "heap_bytes"):
            out[f"{k}_median"] = float(np.median([x[k] for x in st]))
    except (ImportError, AttributeError, TypeError):
        pass
    return out


def measure_cold(
    path: Path, model: Any, ids: list[Any], budget: float, prefetch: bool = False
) -> dict[str, Any]:
    """Cold queries: the file's pages evicted before each; ``prefetch`` opens the graph with
    ``Graph.open(path, prefetch=True)`` (read-ahead hints)."""
    import instant_embedding as ie

    times: list[int] = []
    cpu: list[int] = []
    opens: list[int] = []
    evicted: list[float] = []
    pages_read: list[float] = []
    npages = (os.path.getsize(path) + 4095) // 4096
    deadline = time.perf_counter() + budget
    g = None
    for i, v in enumerate(ids):
        g = None
        gc.collect()  # the previous Graph must be unmapped, or its pages cannot be dropped
        C.evict(path)
        check = i < 10
        if check:
            evicted.append(C.residency(path))
        t0 = time.perf_counter_ns()
        g = ie.Graph.open(path, prefetch=True) if prefetch else ie.Graph.open(path)
        t1 = time.perf_counter_ns()
        w, c = _timed(lambda v=v, g=g: model.embed(g, [v]))
        opens.append(t1 - t0)
        times.append(w)
        cpu.append(c)
        if check:
            pages_read.append(C.residency(path) * npages)
        if time.perf_counter() > deadline:
            break
    g = None
    gc.collect()
    out = _stats_us(times, cpu)
    out["open_median_us"] = float(np.median(opens)) / 1e3
    out["resident_after_evict_max"] = float(max(evicted)) if evicted else float("nan")
    out["pages_resident_after_query_median"] = float(np.median(pages_read))
    return out


def _anon_bytes() -> int:
    """Anonymous memory of this process, exact (page-table walk of smaps_rollup)."""
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) * 1024
    return C.rss_anon()


def _fresh_thread_delta(fn: Any) -> int:
    box: list[int] = []

    def run() -> None:
        a = _anon_bytes()
        fn()
        box.append(_anon_bytes() - a)

    tasks = len(os.listdir("/proc/self/task"))
    t = threading.Thread(target=run)
    t.start()
    t.join()
    # join() returns before the OS thread has run its TLS destructors (which free the native
    # workspace); wait until it is gone so the next measurement starts from a clean state.
    deadline = time.perf_counter() + 2.0
    while len(os.listdir("/proc/self/task")) > tasks and time.perf_counter() < deadline:
        time.sleep(0.001)
    return box[0]


_NULL_DELTA: dict[int, int] = {}


def null_delta(dim: int) -> int:
    """Memory a fresh thread's query adds on a 1-node graph (thread + call overhead)."""
    if dim not in _NULL_DELTA:
        import instant_embedding as ie

        g = ie.Graph.from_edges([0], [0], num_nodes=1)
        m = ie.InstantEmbedding(dim, threads=1)
        ds = [_fresh_thread_delta(lambda: m.embed(g, [0])) for _ in range(7)]
        _NULL_DELTA[dim] = int(np.median(ds))
    return _NULL_DELTA[dim]


def _memory_child(path: str, dim: int, eps: float, ids: list[Any]) -> dict[str, Any]:
    """Runs in a fresh process whose malloc returns every block >= 4 KiB to the kernel on free
    (``MALLOC_MMAP_THRESHOLD_=4096``), so a new thread's workspace cannot reuse memory freed by
    an earlier thread and the growth it causes is visible."""
    import instant_embedding as ie

    g = ie.Graph.open(path)
    model = ie.InstantEmbedding(dim, eps=eps, threads=1)
    base = null_delta(dim)
    ds = [_fresh_thread_delta(lambda v=v: model.embed(g, [v])) - base for v in ids]
    return {"deltas": ds, "null": base}


def measure_memory(path: Path, model: Any, ids: list[Any]) -> dict[str, Any]:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="4096", MALLOC_TRIM_THRESHOLD_="0")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(ids, f)
    try:
        p = subprocess.run(
            [sys.executable, __file__, "_mem", str(path), str(model.dim), str(model.eps), f.name],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        os.unlink(f.name)
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if not line:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    res = json.loads(line[0][7:])
    # Page granularity (4 KiB) noise can make a tiny delta negative: clamp at 0.
    ds = [max(0, d) for d in res["deltas"]]
    return {
        "n": len(ds),
        "median_bytes": int(np.median(ds)),
        "max_bytes": int(np.max(ds)),
        "null_bytes": res["null"],
        "method": "anonymous memory (smaps_rollup) retained after one query in a fresh thread, "
        "minus the same for a 1-node graph; fresh process, MALLOC_MMAP_THRESHOLD_=4096",
    }


def measure_numba(
    path: Path, dim: int, eps: float, ids_idx: np.ndarray, budget: float, ours: Any
) -> dict[str, Any] | None:
    import numba_ref

    if not numba_ref.available():
        return None
    import instant_embedding as ie

    ref = numba_ref.NumbaRef(C.read_csr(path))
    value = getattr(ours, "value", "p")
    norm = getattr(ours, "normalize", "none")
    ref.embed(ids_idx[:20], dim, eps=eps, value=value, normalize=norm)  # compile / warm
    times = []
    cpu = []
    deadline = time.perf_counter() + budget
    for i in ids_idx:
        a = np.array([i], dtype=np.uint32)
        w, c = _timed(lambda a=a: ref.embed(a, dim, eps=eps, value=value, normalize=norm))
        times.append(w)
        cpu.append(c)
        if time.perf_counter() > deadline:
            break
    out = _stats_us(times, cpu)
    g = ie.Graph.open(path)
    check = ids_idx[:50]
    mine = ours.embed(g, g.ids(check))
    out["bit_identical"] = bool(
        np.array_equal(
            mine.view(np.uint32),
            ref.embed(check, dim, eps=eps, value=value, normalize=norm).view(np.uint32),
        )
    )
    return out


def run_latency(args: argparse.Namespace) -> dict[str, Any]:
    import instant_embedding as ie

    rows = []
    for name, path in resolve_graphs(args):
        g = ie.Graph.open(path)
        n, e = g.num_nodes, g.num_edges
        idx, ids = _pick_nodes(g, args.nodes, args.seed)
        del g
        print(
            f"# {name}: n={n:,} |E|={e:,} file={os.path.getsize(path):,} B "
            f"load={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for eps in args.eps:
            for dim in args.dims:
                model = ie.InstantEmbedding(dim, eps=eps, threads=1)
                row: dict[str, Any] = {
                    "graph": name,
                    "nodes": n,
                    "edges": e,
                    "file_bytes": os.path.getsize(path),
                    "dim": dim,
                    "eps": eps,
                    "load_before": os.getloadavg()[0],
                }
                row["warm"] = measure_warm(path, model, ids, args.budget)
                if not args.no_cold:
                    row["cold"] = measure_cold(path, model, ids[: args.cold_nodes], args.budget)
                    if args.cold_prefetch:
                        row["cold_prefetch"] = measure_cold(
                            path, model, ids[: args.cold_nodes], args.budget, prefetch=True
                        )
                if args.mem_nodes:
                    row["memory"] = measure_memory(path, model, ids[: args.mem_nodes])
                paper = C.paper_runtime(name, dim)
                row["paper_ms"] = paper * 1e3 if paper is not None else None
                if name in args.numba_datasets and not args.no_numba:
                    row["numba"] = measure_numba(path, dim, eps, idx, args.budget, model)
                row["load_after"] = os.getloadavg()[0]
                rows.append(row)
                _print_latency_row(row)
    return {"rows": rows}


def _print_latency_row(r: dict[str, Any]) -> None:
    w, c, m, nb = r["warm"], r.get("cold"), r.get("memory"), r.get("numba")
    parts = [
        f"{r['graph']:>22} d={r['dim']:<4} eps={r['eps']:.0e}",
        f"warm med {w['median_us']:9.1f} us p99 {w['p99_us']:9.1f} "
        f"cpu med {w['cpu_median_us']:8.1f} (core {w['core_cpu_median_us']:.1f})",
    ]
    if c:
        parts.append(f"cold med {c['median_us']:9.1f} us p99 {c['p99_us']:9.1f}")
    if r.get("cold_prefetch"):
        parts.append(f"cold+prefetch med {r['cold_prefetch']['median_us']:9.1f} us")
    if m:
        parts.append(f"mem {m.get('median_bytes', float('nan')) / 1024:8.1f} KiB")
    if r.get("paper_ms") is not None:
        parts.append(f"paper {r['paper_ms']:.2f} ms")
    if nb:
        parts.append(
            f"numba cpu {nb['cpu_median_us']:.1f} us (ours/numba "
            f"{w['cpu_median_us'] / nb['cpu_median_us']:.2f}, "
            f"identical={nb['bit_identical']})"
        )
    print(" | ".join(parts), flush=True)


def latency_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        w, c, m, nb = r["warm"], r.get("cold") or {}, r.get("memory") or {}, r.get("numba") or {}
        out.append(
            {
                "graph": r["graph"],
                "|E|": f"{r['edges']:,}",
                "d": r["dim"],
                "eps": f"{r['eps']:.0e}",
                "warm med µs": w["median_us"],
                "warm p99 µs": w["p99_us"],
                "warm cpu med µs": w["cpu_median_us"],
                "warm cpu p99 µs": w["cpu_p99_us"],
                "cold med µs": c.get("median_us", float("nan")),
                "cold p99 µs": c.get("p99_us", float("nan")),
                "cold+prefetch med µs": (r.get("cold_prefetch") or {}).get("median_us"),
                "query mem KiB": m.get("median_bytes", float("nan")) / 1024,
                "paper ms": r.get("paper_ms"),
                "paper/ours": (r["paper_ms"] * 1e3 / w["median_us"]) if r.get("paper_ms") else None,
                "numba cpu µs": nb.get("cpu_median_us"),
                "ours/numba (cpu)": (w["cpu_median_us"] / nb["cpu_median_us"]) if nb else None,
            }
        )
    return out


# --------------------------------------------------------------------------- throughput


def ie_default_value() -> str:
    """The package's default projected value ("p+r" or "p"; "p" before the option existed)."""
    import instant_embedding as ie

    return getattr(ie.InstantEmbedding(8), "value", "p")


def ie_default_normalize() -> str:
    """The package's default output scale ("ln_n" or "none"; "none" before the option
    existed)."""
    import instant_embedding as ie

    return getattr(ie.InstantEmbedding(8), "normalize", "none")


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process, all threads."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peer_main(which: str, path: str, dim: int, threads: int, eps: float) -> dict[str, Any]:
    """One all-node run of ``which`` (runs in a fresh subprocess, see :func:`_run_peer`)."""
    csr = C.read_csr(path)
    n = int(csr["n"])
    res: dict[str, Any] = {"peer": which, "threads": threads}
    if which == "ours" or which.startswith("ours-"):
        import instant_embedding as ie

        # "ours-<value>[-s<k>]": another value and smooth=k (e.g. ours-log1p-s2).
        value, _, smooth = which[5:].partition("-s") if which != "ours" else ("p+r", "", "")
        g = ie.Graph.open(path)
        C.warm(path)
        m = ie.InstantEmbedding(dim, eps=eps, value=value, smooth=int(smooth or 0))
        m.embed(g, g.ids(np.arange(min(n, 4096))), threads=threads)  # start the pool
        t, c = time.perf_counter(), _cpu_s()
        x = m.embed_all(g, threads=threads)
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t, _cpu_s() - c
    elif which == "numba":
        import numba_ref

        ref = numba_ref.NumbaRef(csr)
        ref.warmup(dim)  # compile (cached on disk after the first run)
        value = ie_default_value()
        t, c = time.perf_counter(), _cpu_s()
        x = ref.embed_all(
            dim, eps=eps, threads=threads, value=value, normalize=ie_default_normalize()
        )
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t, _cpu_s() - c
    elif which == "fastrp":
        import scipy.sparse as sp
        from fastrp import FastRP

        t = time.perf_counter()
        data = np.ones(len(csr["indices"]), dtype=np.float64)
        a = sp.csr_matrix(
            (data, np.asarray(csr["indices"], np.int64), np.asarray(csr["indptr"], np.int64)),
            shape=(n, n),
        )
        res["prep_s"] = time.perf_counter() - t
        # The file already stores both directions: undirected=False skips re-symmetrising.
        model = FastRP(dim, weights=[0.0, 0.0, 1.0, 6.0], seed=0, undirected=False)
        t, c = time.perf_counter(), _cpu_s()
        x = model.fit_transform(a)
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t, _cpu_s() - c
    elif which == "pycleora":
        import pycleora

        t = time.perf_counter()
        ip, ix = np.asarray(csr["indptr"]), np.asarray(csr["indices"])
        src = np.repeat(np.arange(n), np.diff(ip).astype(np.int64))
        keep = src < ix
        lines = [f"{a} {b}" for a, b in zip(src[keep].tolist(), ix[keep].tolist())]
        graph = pycleora.SparseMatrix.from_iterator(
            iter(lines), "complex::reflexive::node", num_workers=threads
        )
        del lines
        res["prep_s"] = time.perf_counter() - t
        t, c = time.perf_counter(), _cpu_s()
        x = pycleora.embed(
            graph, feature_dim=dim, num_iterations=4, whiten=False, num_workers=threads
        )
        res["fit_s"], res["fit_cpu_s"] = time.perf_counter() - t, _cpu_s() - c
    else:
        raise ValueError(f"unknown peer {which!r}")
    res["shape"] = list(np.shape(x))
    res["peak_rss_mib"] = C.peak_rss() / 2**20
    return res


def _run_peer(
    which: str, path: Path, dim: int, threads: int, eps: float, timeout: float
) -> dict[str, Any]:
    env = dict(os.environ)
    for k in (
        "RAYON_NUM_THREADS",
        "NUMBA_NUM_THREADS",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
    ):
        env[k] = str(threads)
    try:
        p = subprocess.run(
            [sys.executable, __file__, "_peer", which, str(path), str(dim), str(threads), str(eps)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"peer": which, "threads": threads, "error": f"timeout after {timeout:.0f} s"}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"peer": which, "threads": threads, "error": err[:300]}


def run_throughput(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    peers = args.peers
    for name, path in resolve_graphs(args):
        for dim in args.dims:
            for threads in args.threads:
                res = {}
                for peer in peers:
                    r = _run_peer(peer, path, dim, threads, args.tp_eps, args.timeout)
                    res[peer] = r
                    print(
                        f"# {name} d={dim} threads={threads} {peer}: "
                        f"{r.get('fit_s', r.get('error'))} (load {os.getloadavg()[0]:.2f})",
                        flush=True,
                    )
                ours = res.get("ours", {}).get("fit_s")
                ours_cpu = res.get("ours", {}).get("fit_cpu_s")
                for r in res.values():
                    rows.append(
                        {
                            "graph": name,
                            "dim": dim,
                            "threads": threads,
                            "eps": args.tp_eps,
                            **r,
                            "ratio_vs_ours": (r["fit_s"] / ours) if ours and "fit_s" in r else None,
                            "cpu_ratio_vs_ours": (r["fit_cpu_s"] / ours_cpu)
                            if ours_cpu and "fit_cpu_s" in r
                            else None,
                        }
                    )
    return {"rows": rows}


def throughput_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "graph": r["graph"],
            "d": r["dim"],
            "threads": r["threads"],
            "peer": r["peer"],
            "fit s": r.get("fit_s"),
            "fit cpu s": r.get("fit_cpu_s"),
            "prep s": r.get("prep_s"),
            "peer/ours": r.get("ratio_vs_ours"),
            "peer/ours cpu": r.get("cpu_ratio_vs_ours"),
            "peak RSS MiB": r.get("peak_rss_mib"),
            "note": r.get("error", ""),
        }
        for r in rows
    ]


# --------------------------------------------------------------------------- main


def _floats(s: str) -> list[float]:
    return [float(x) for x in s.split(",") if x]


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def _strs(s: str) -> list[str]:
    return [x for x in s.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_peer":  # internal: one peer run in a fresh process
        which, path, dim, threads, eps = argv[1:6]
        print("RESULT " + json.dumps(peer_main(which, path, int(dim), int(threads), float(eps))))
        return 0
    if argv and argv[0] == "_mem":  # internal: memory per query in a fresh process
        path, dim, eps, ids_file = argv[1:5]
        with open(ids_file) as f:
            ids = json.load(f)
        print("RESULT " + json.dumps(_memory_child(path, int(dim), float(eps), ids)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", choices=["latency", "throughput"], default="latency")
    ap.add_argument("--smoke", action="store_true", help="tiny generated graph, a few seconds")
    ap.add_argument(
        "--datasets",
        type=_strs,
        default=None,
        help="comma list of shared data sets, 'all' or 'none' (default: all for "
        "latency, soc_slashdot0902,cnr_2000 for throughput)",
    )
    ap.add_argument("--graph", action="append", help="extra graph file (e.g. synthetic)")
    ap.add_argument("--nodes", type=int, default=1000, help="random query nodes per setting")
    ap.add_argument(
        "--reorder",
        type=_strs,
        default=None,
        help="also time each graph renumbered by these methods "
        "(communities, bfs, or random: a seeded random numbering as a baseline)",
    )
    ap.add_argument("--cold-nodes", type=int, default=1000)
    ap.add_argument("--mem-nodes", type=int, default=20)
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument(
        "--cold-prefetch",
        action="store_true",
        help="also measure cold queries with Graph.open(prefetch=True)",
    )
    ap.add_argument("--dims", type=_ints, default=None, help="default 128,512")
    ap.add_argument("--eps", type=_floats, default=[1e-4, 1e-5, 1e-6])
    ap.add_argument("--seed", type=int, default=0, help="seed of the random query nodes")
    ap.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="max seconds per measurement series (fewer nodes when exceeded)",
    )
    ap.add_argument("--numba-datasets", type=_strs, default=["blogcatalog", "smoke_chung_lu_2k"])
    ap.add_argument("--no-numba", action="store_true")
    ap.add_argument("--threads", type=_ints, default=[1, 2], help="throughput thread counts")
    ap.add_argument(
        "--peers",
        type=_strs,
        default=["ours", "numba", "fastrp", "pycleora"],
        help="ours, ours-<value>[-s<k>] (e.g. ours-log1p-s2: value and smooth=k), "
        "numba, fastrp, pycleora",
    )
    ap.add_argument("--tp-eps", type=float, default=1e-5, help="eps of our all-node run")
    ap.add_argument("--timeout", type=float, default=600.0, help="per-peer timeout (s)")
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = ap.parse_args(argv)
    if args.dims is None:
        args.dims = [512] if (args.smoke or args.mode == "throughput") else [128, 512]
    if args.smoke:
        args.nodes = min(args.nodes, 200)
        args.cold_nodes = min(args.cold_nodes, 20)
        args.mem_nodes = min(args.mem_nodes, 3)
        args.eps = args.eps if args.eps != [1e-4, 1e-5, 1e-6] else [1e-4]
        args.tp_eps = 1e-4
        args.budget = min(args.budget, 2.0)
        args.threads = [1]
        args.timeout = min(args.timeout, 60.0)
        if args.mode == "throughput":
            args.peers = [p for p in args.peers if p in ("ours", "numba")]
    if args.out is None:
        stem = (
            "throughput"
            if args.mode == "throughput"
            else ("speed_reorder" if args.reorder else "speed")
        )
        # Smoke results are not figures: they go to the ignored cache, not benches/results.
        args.out = (
            (C.cache_dir() / f"{stem}_smoke.json") if args.smoke else (C.RESULTS / f"{stem}.json")
        )

    t0 = time.time()
    machine = C.machine_info()
    res = run_latency(args) if args.mode == "latency" else run_throughput(args)
    res = {
        "benchmark": f"speed/{args.mode}",
        "command": "python benches/speed.py " + " ".join(argv),
        "machine": machine,
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.time() - t0, 1),
        "config": {
            k: (C.repo_relative(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
        },
        **res,
    }
    print()
    if args.mode == "latency":
        C.print_table(latency_table(res["rows"]))
    else:
        C.print_table(throughput_table(res["rows"]))
    C.write_json(args.out, res)
    print(
        f"\nwrote {args.out} ({res['wall_s']} s, load {machine['load_avg']} -> "
        f"{res['load_avg_end']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
