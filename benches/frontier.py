"""Quality against cost: the settings frontier of InstantEmbedding, beside FastRP and ProNE.

For every labelled data set and every point of the grid ``eps`` x ``value`` x ``smooth`` x
``dim``, this measures node-classification quality (Micro/Macro-F1, the harness of
``benches/quality.py``: one-vs-rest liblinear logistic regression, top-K labels, 10 % of the
labelled nodes for training), the warm per-node latency (single-node ``embed`` calls, one
thread), the all-node time at 1 and 2 threads and the memory one query adds, with FastRP and
ProNE measured in the same run. Tasks (``--tasks``, comma separated, run in this order):

``screen``
    Every grid point, split 0 only, one C per smoothing level (``--screen-C``). The seed-0
    embedding is computed with ``embed_all(threads=1)`` (timed: the 1-thread all-node time),
    cached in ``benches/.cache/frontier/`` and timed again at 2 threads. ``smooth=1, 2`` rows
    are the library's own smoothing step (``_core.smooth``, what ``embed_all(smooth=k)``
    runs after the push; bit-identical, checked by ``--smoke``) applied to the cached rows; its
    time is measured once per (data set, dim, threads) and added. Latency: ``embed(g, [v],
    threads=1)`` on the same random nodes for every point, within a time budget per point.
    FastRP runs before and after each ``dim`` block (ratios use the mean of the two), ProNE once.
``capped``
    One-hop smoothing at bounded cost (a prototype on top of ``embed`` outputs, see
    :func:`smooth_capped`), for ``--capped-k`` x ``--capped-self`` on the ``--capped-points``:
    split-0 F1 and the warm latency of ``embed(g, [v] + S_k(v), threads=1)``.
``memory``
    Memory one query adds (fresh thread per query, fresh process, as in ``speed.py``) for
    every (eps, value, dim) at smooth 0, 1, 2.
``frontier``
    The candidate frontier (points not dominated in the screen by more than ``--margin``
    Micro-F1, on either time axis), plus ``--always`` points and the peers: 3 splits at each
    C of the grid (``--C-grid``); the record keeps every C and the best.
``paper``
    The paper's protocol (raw features, C = 1) against the tuned one (StandardScaler, best C of
    the grid) for output transforms of ``--paper-points`` (:data:`TRANSFORMS`), 3 splits, plus
    per-coordinate statistics of the raw output (ours and the peers).
``final``
    The timing of ``--final-points`` against FastRP, ``--rounds`` interleaved rounds at 1 and 2
    threads, and 1,000-node warm latency; load average before and after each round.

Results go to ``--out`` (default ``benches/results/frontier.json``), one record per
measurement, saved after each; a record already there is not measured again (resume). ``--plot``
writes ``docs/fig_frontier.png``; ``--markdown`` prints the tables of the docs.

Usage::

    python benches/frontier.py --smoke
    nice -n 15 python benches/frontier.py --tasks screen,capped,memory,frontier,paper
    python benches/frontier.py --tasks final --datasets blogcatalog --rounds 5
    python benches/frontier.py --plot --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import quality as Q  # noqa: E402

DATASETS = ["blogcatalog", "ppi_homo_sapiens_lcc", "cora", "pubmed", "ppi_homo_sapiens"]
EPS = [1e-3, 3e-4, 1e-4, 3e-5, 1e-5]
VALUES = ["p+r", "p", "log1p"]
SMOOTH = [0, 1, 2]
DIMS = [128, 512]
# Latency: nodes and seconds per point, by smoothing level (a smoothed query embeds the whole
# k-hop neighbourhood, so fewer nodes fit in the budget).
LAT_NODES = {0: 300, 1: 60, 2: 12}
LAT_BUDGET = {0: 1.0, 1: 1.5, 2: 1.0}
# Salt of the neighbour priority of capped smoothing ("neighbor" in ASCII).
CAP_SALT = 0x6E65696768626F72
M64 = (1 << 64) - 1


# --------------------------------------------------------------------------- records
class Store:
    """Records keyed by their identifying fields; saved atomically after every add."""

    KEY = (
        "kind",
        "dataset",
        "method",
        "eps",
        "value",
        "dim",
        "smooth",
        "transform",
        "protocol",
        "threads",
        "round",
        "stage",
    )

    def __init__(self, path: Path, meta: dict[str, Any], merge: bool) -> None:
        self.path, self.meta = path, meta
        self.records: dict[str, dict[str, Any]] = {}
        self.runs: list[dict[str, Any]] = []
        if merge and path.is_file():
            with open(path) as f:
                old = json.load(f)
            self.runs = old.get("runs", [])
            for r in old.get("records", []):
                self.records[self.key(r)] = r
        self.runs.append(meta)

    def key(self, r: dict[str, Any]) -> str:
        return json.dumps([r.get(k) for k in self.KEY])

    def get(self, **kw: Any) -> dict[str, Any] | None:
        return self.records.get(self.key(kw))

    def add(self, rec: dict[str, Any]) -> dict[str, Any]:
        rec = {
            **rec,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load": round(os.getloadavg()[0], 2),
        }
        self.records[self.key(rec)] = rec
        self.save()
        return rec

    def save(self) -> None:
        self.meta["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        C.write_json(self.path, {"runs": self.runs, "records": list(self.records.values())})

    def select(self, **kw: Any) -> list[dict[str, Any]]:
        return [r for r in self.records.values() if all(r.get(k) == v for k, v in kw.items())]


# --------------------------------------------------------------------------- data
def load(name: str) -> Q.Data:
    data = Q.smoke_dataset() if name == "smoke" else Q.load_dataset(name)
    if name == "smoke":  # a file-backed copy, like the real data sets (smoke: temp dir)
        path = Path(tempfile.mkdtemp(prefix="frontier_smoke_")) / "smoke.graph"
        data.graph.save(path)
        import instant_embedding as ie

        data.graph = ie.Graph.open(path)
    return data


def graph_path(data: Q.Data) -> Path:
    return Path(data.graph.path)


def csr(data: Q.Data) -> tuple[np.ndarray, np.ndarray]:
    c = C.read_csr(graph_path(data))
    return np.asarray(c["indptr"], dtype=np.int64), np.asarray(c["indices"], dtype=np.int64)


def hash_keys(data: Q.Data) -> np.ndarray:
    """key(j) of docs/SPEC.md §2 for every node (the id as u64, or FNV-1a of a string id)."""
    g = data.graph._native
    return np.array([g.hash_key(v) for v in range(data.n)], dtype=np.uint64)


def cache_file(data: Q.Data, eps: float, value: str, dim: int, seed: int = 0) -> Path:
    d = C.cache_dir() / "frontier" / data.name
    d.mkdir(parents=True, exist_ok=True)
    return d / f"e{eps:g}_{value}_d{dim}_s{seed}.npy"


# --------------------------------------------------------------------------- embeddings
def model(eps: float, value: str, dim: int, smooth: int = 0, seed: int = 0) -> Any:
    """Ours at one grid point, unscaled (``normalize="none"``): the study's transforms of the
    output (``--tasks paper``) start from the plain sums, and the scaled classifier does not
    see the scale."""
    import instant_embedding as ie

    return ie.InstantEmbedding(
        dim, eps=eps, value=value, smooth=smooth, seed=seed, normalize="none"
    )


def embed_rows(
    data: Q.Data, eps: float, value: str, dim: int, seed: int = 0, smoke: bool = False
) -> tuple[np.ndarray, float | None]:
    """Unsmoothed rows of every node and the 1-thread ``embed_all`` time (None if cached)."""
    path = cache_file(data, eps, value, dim, seed)
    if path.is_file() and not smoke:
        return np.load(path), None
    t = time.perf_counter()
    x = model(eps, value, dim, 0, seed).embed_all(data.graph, threads=1)
    secs = time.perf_counter() - t
    if not smoke:
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, x)
        os.replace(tmp, path)  # atomic: a concurrent run never reads half a file
    return x, secs


def smooth_step(data: Q.Data, rows: np.ndarray, threads: int) -> np.ndarray:
    """One step ``E <- D^-1 A E`` of the library (``embed_all(smooth=k)`` runs k of them)."""
    from instant_embedding import _core

    idx = np.arange(data.n, dtype=np.uint32)  # every node in order: sources == nodes
    cfg = _core.EmbeddingConfig(dim=rows.shape[1], smooth=1)
    return _core.smooth(data.graph._native, idx, rows, cfg, threads)


def splitmix64(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def capped_neighbours(
    indptr: np.ndarray, indices: np.ndarray, keys: np.ndarray, k: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """``S_k(v)`` for every node as a CSR (``ptr``, ``nbr``): the ``k`` out-neighbours ``u``
    of ``v`` with the smallest ``prio(u) = splitmix64(key(u) ^ CAP_SALT)`` (all of them when
    ``deg(v) <= k`` or ``k`` is None), listed in the node's storage order."""
    n = len(indptr) - 1
    deg = np.diff(indptr)
    row = np.repeat(np.arange(n, dtype=np.int64), deg)
    if k is None:
        return indptr.copy(), indices.copy()
    prio = splitmix64(keys[indices] ^ np.uint64(CAP_SALT))
    order = np.lexsort((np.arange(len(indices)), prio, row))  # by row, then prio, then slot
    rank = np.empty(len(indices), dtype=np.int64)
    rank[order] = np.arange(len(indices)) - indptr[row[order]]
    keep = rank < k  # storage order is kept: boolean mask over the original slots
    cnt = np.bincount(row[keep], minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(cnt, out=ptr[1:])
    return ptr, indices[keep]


def smooth_capped(rows: np.ndarray, ptr: np.ndarray, nbr: np.ndarray, own: str) -> np.ndarray:
    """One-hop smoothing at bounded cost, the formula proposed for the kernel:

    ``E'[v] = f32( (a_v * f64(E[v]) + sum_{u in S_k(v)} f64(E[u])) / (a_v + m_v) )``

    with ``m_v = |S_k(v)|``, the sum in f64 starting from the own term and adding the
    neighbours in storage order, one division, one rounding to float32; ``a_v`` is the weight
    of the own row: ``own="one"``: 1 (the mean of the node and its chosen neighbours),
    ``"half"``: ``m_v`` (half own row, half the neighbours' mean), ``"zero"``: 0 (the
    neighbours' mean alone; ``k=None`` then equals the library's ``smooth=1``). A node without
    neighbours keeps its row. Unweighted graphs (every labelled data set here).
    """
    cnt = np.diff(ptr)
    a = {"one": np.ones(len(cnt)), "half": cnt.astype(np.float64), "zero": np.zeros(len(cnt))}[own]
    acc = rows.astype(np.float64) * a[:, None]
    for t in range(int(cnt.max()) if len(cnt) else 0):
        live = np.flatnonzero(cnt > t)
        acc[live] += rows[nbr[ptr[live] + t]].astype(np.float64)
    den = a + cnt
    out = (acc / np.where(den > 0, den, 1.0)[:, None]).astype(np.float32)
    alone = cnt == 0
    out[alone] = rows[alone]
    return out


# --------------------------------------------------------------------------- peers
def _peer_child(argv: list[str]) -> None:
    """Subprocess: fit one peer ``repeats`` times, print the fit times; save the first
    embedding to ``npy`` (or not, when empty)."""
    which, path, dim, repeats, npy = argv[0], argv[1], int(argv[2]), int(argv[3]), argv[4]
    import scipy.sparse as sp

    c = C.read_csr(path)
    n = int(c["n"])
    a = sp.csr_matrix(
        (
            np.ones(len(c["indices"]), dtype=np.float64),
            (
                np.repeat(np.arange(n), np.diff(c["indptr"]).astype(np.int64)),
                np.asarray(c["indices"], np.int64),
            ),
        ),
        shape=(n, n),
    )
    times, cpu, x = [], [], None
    for _ in range(repeats):
        t, c0 = time.perf_counter(), cpu_s()
        if which == "fastrp":
            from fastrp import FastRP

            # The file stores both directions: undirected=False skips re-symmetrising.
            y = FastRP(dim, weights=[0.0, 0.0, 1.0, 6.0], seed=0, undirected=False).fit_transform(a)
        elif which == "prone":
            from nodevectors import ProNE

            y = ProNE(n_components=dim).fit_transform(a)
        else:
            raise ValueError(which)
        times.append(time.perf_counter() - t)
        cpu.append(cpu_s() - c0)
        if x is None:
            x = np.asarray(y, dtype=np.float32)
    if npy:
        np.save(npy, x)
    print(
        "RESULT "
        + json.dumps({"fit_s": times, "fit_cpu_s": cpu, "peak_rss_mib": C.peak_rss() / 2**20})
    )


def peer_available(which: str) -> bool:
    import importlib.util

    return importlib.util.find_spec({"fastrp": "fastrp", "prone": "nodevectors"}[which]) is not None


def run_peer(
    which: str,
    data: Q.Data,
    dim: int,
    threads: int,
    repeats: int = 1,
    save: bool = False,
    timeout: float = 1200,
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
    npy = str(C.cache_dir() / "frontier" / data.name / f"{which}_d{dim}.npy") if save else ""
    if npy:
        Path(npy).parent.mkdir(parents=True, exist_ok=True)
    try:
        p = subprocess.run(
            [
                sys.executable,
                __file__,
                "_peer",
                which,
                str(graph_path(data)),
                str(dim),
                str(repeats),
                npy,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": ((p.stderr.strip().splitlines() or ["no output"])[-1])[:300]}


# --------------------------------------------------------------------------- timing helpers
def nodes_for(data: Q.Data, count: int = 1000, seed: int = 0) -> list[Any]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.n, size=count)
    ids = data.graph.ids(idx)
    return list(ids) if isinstance(ids, list) else [int(x) for x in ids]


def latency(
    m: Any, g: Any, queries: list[list[Any]], budget: float, warmup: int = 3
) -> dict[str, Any]:
    """Warm wall time of ``m.embed(g, q, threads=1)`` for each query ``q`` (a list of ids),
    after ``warmup`` calls, until ``budget`` seconds have passed (at least 3 queries)."""
    for q in queries[:warmup]:
        m.embed(g, q, threads=1)
    ts: list[float] = []
    deadline = time.perf_counter() + budget
    for q in queries:
        t = time.perf_counter_ns()
        m.embed(g, q, threads=1)
        ts.append((time.perf_counter_ns() - t) / 1e3)
        if len(ts) >= 3 and time.perf_counter() > deadline:
            break
    a = np.asarray(ts)
    return {
        "lat_us": float(np.median(a)),
        "lat_p90_us": float(np.percentile(a, 90)),
        "lat_mean_us": float(a.mean()),
        "lat_n": len(ts),
    }


def cpu_s() -> float:
    """CPU seconds (user + system) of this process, all threads: what a run costs when the
    machine is shared (time spent waiting for a core is not counted)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_embed_all(m: Any, g: Any, threads: int) -> float:
    t = time.perf_counter()
    m.embed_all(g, threads=threads)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- screen
def smooth_times(data: Q.Data, dim: int, st: Store, repeats: int = 3) -> dict[int, float]:
    """Seconds of one library smoothing step over all rows, at 1 and 2 threads (median)."""
    out = {}
    for threads in (1, 2):
        rec = st.get(kind="smooth_step", dataset=data.name, dim=dim, threads=threads)
        if rec is None:
            rows = np.random.default_rng(0).standard_normal((data.n, dim)).astype(np.float32)
            ts = []
            for _ in range(repeats):
                t = time.perf_counter()
                smooth_step(data, rows, threads)
                ts.append(time.perf_counter() - t)
            rec = st.add(
                {
                    "kind": "smooth_step",
                    "dataset": data.name,
                    "dim": dim,
                    "threads": threads,
                    "secs": float(np.median(ts)),
                    "runs": ts,
                }
            )
        out[threads] = rec["secs"]
    return out


def peer_block(
    data: Q.Data,
    dim: int,
    st: Store,
    stage: str,
    args: argparse.Namespace,
    peers: tuple[str, ...] = ("fastrp",),
) -> None:
    """All-node time of each peer at 1 and 2 threads (the embedding saved for quality)."""
    for which in peers:
        if not peer_available(which) or data.name == "smoke":
            continue
        for threads in (1, 2):
            if st.get(
                kind="peer_time",
                dataset=data.name,
                method=which,
                dim=dim,
                threads=threads,
                stage=stage,
            ):
                continue
            r = run_peer(which, data, dim, threads, repeats=1, save=(threads == 2))
            st.add(
                {
                    "kind": "peer_time",
                    "dataset": data.name,
                    "method": which,
                    "dim": dim,
                    "threads": threads,
                    "stage": stage,
                    **r,
                }
            )
            print(
                f"  {which} d={dim} t={threads} [{stage}]: {r.get('fit_s', r.get('error'))}",
                flush=True,
            )


def task_screen(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    frac = Q.FRACTIONS.get(data.name, args.fraction)
    ids = nodes_for(data, 1000)
    for dim in args.dims:
        peer_block(data, dim, st, "before", args)
        steps = smooth_times(data, dim, st)
        for value in args.values:
            for eps in args.eps:
                todo = [
                    s
                    for s in args.smooth
                    if st.get(
                        kind="screen", dataset=data.name, eps=eps, value=value, dim=dim, smooth=s
                    )
                    is None
                ]
                if not todo:
                    continue
                x0, t1 = embed_rows(data, eps, value, dim, smoke=args.smoke)
                m0 = model(eps, value, dim)
                if t1 is None:  # cached rows: time a fresh 1-thread run
                    t1 = timed_embed_all(m0, data.graph, 1)
                t2 = timed_embed_all(m0, data.graph, 2)
                x = x0
                for s in range(max(todo) + 1):
                    if s > 0:
                        x = smooth_step(data, x, 2)
                    if s not in todo:
                        continue
                    lat = latency(
                        model(eps, value, dim, s),
                        data.graph,
                        [[v] for v in ids[: LAT_NODES[s]]],
                        LAT_BUDGET[s] * args.budget,
                        warmup=3 if s == 0 else 1,
                    )
                    c = args.screen_C[min(s, 1)]
                    mi, ma = Q.classify(x, data.y, frac, 0, c, True)
                    rec = st.add(
                        {
                            "kind": "screen",
                            "dataset": data.name,
                            "eps": eps,
                            "value": value,
                            "dim": dim,
                            "smooth": s,
                            "C": c,
                            "micro": mi,
                            "macro": ma,
                            "all_1t_s": t1 + s * steps[1],
                            "all_2t_s": t2 + s * steps[2],
                            "push_1t_s": t1,
                            "push_2t_s": t2,
                            **lat,
                        }
                    )
                    print(
                        f"  {data.name} d={dim} {value:5} eps={eps:g} s={s}: micro {mi:.2f} "
                        f"lat {rec['lat_us']:.0f} us all {rec['all_1t_s']:.2f}/"
                        f"{rec['all_2t_s']:.2f} s",
                        flush=True,
                    )
        peer_block(data, dim, st, "after", args, ("fastrp", "prone"))
    # peers' screen quality (same split and C as ours unsmoothed)
    for dim in args.dims:
        for which in ("fastrp", "prone"):
            npy = C.cache_dir() / "frontier" / data.name / f"{which}_d{dim}.npy"
            if not npy.is_file() or st.get(kind="screen", dataset=data.name, method=which, dim=dim):
                continue
            x = np.load(npy)
            mi, ma = Q.classify(x, data.y, frac, 0, args.screen_C[0], True)
            st.add(
                {
                    "kind": "screen",
                    "dataset": data.name,
                    "method": which,
                    "dim": dim,
                    "C": args.screen_C[0],
                    "micro": mi,
                    "macro": ma,
                }
            )
            print(f"  {data.name} {which} d={dim}: micro {mi:.2f}", flush=True)


# --------------------------------------------------------------------------- capped
def parse_points(s: str) -> list[tuple[str, float, int]]:
    """``value:eps:dim`` items, comma separated."""
    out = []
    for item in filter(None, s.split(",")):
        v, e, d = item.split(":")
        out.append((v, float(e), int(d)))
    return out


def task_capped(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    frac = Q.FRACTIONS.get(data.name, args.fraction)
    indptr, indices = csr(data)
    keys = hash_keys(data)
    sel = {k: capped_neighbours(indptr, indices, keys, k) for k in args.capped_k}
    ids_idx = np.random.default_rng(0).integers(0, data.n, size=1000)
    for value, eps, dim in args.capped_points:
        x0 = None
        for k in args.capped_k:
            ptr, nbr = sel[k]
            for own in args.capped_self:
                tag = f"cap{k}-{own}"
                if st.get(
                    kind="capped", dataset=data.name, eps=eps, value=value, dim=dim, smooth=tag
                ):
                    continue
                if x0 is None:
                    x0, _ = embed_rows(data, eps, value, dim, smoke=args.smoke)
                x = smooth_capped(x0, ptr, nbr, own)
                c = args.screen_C[0] if own != "zero" else args.screen_C[1]
                mi, ma = Q.classify(x, data.y, frac, 0, c, True)
                # Latency: the (m_v + 1) rows one capped query needs, in one embed call.
                qs = [
                    data.graph.ids(np.r_[v, nbr[ptr[v] : ptr[v + 1]]]).tolist()
                    for v in ids_idx[:300]
                ]
                lat = latency(model(eps, value, dim), data.graph, qs, args.budget)
                st.add(
                    {
                        "kind": "capped",
                        "dataset": data.name,
                        "eps": eps,
                        "value": value,
                        "dim": dim,
                        "smooth": tag,
                        "k": k,
                        "own": own,
                        "C": c,
                        "micro": mi,
                        "macro": ma,
                        "mean_rows": float(np.mean(np.diff(ptr)) + 1),
                        **lat,
                    }
                )
                print(
                    f"  {data.name} {value} eps={eps:g} d={dim} {tag}: micro {mi:.2f} "
                    f"lat {lat['lat_us']:.0f} us",
                    flush=True,
                )


# --------------------------------------------------------------------------- memory
def _mem_child(argv: list[str]) -> None:
    import instant_embedding as ie
    import speed

    path, spec = argv[0], json.loads(argv[1])
    g = ie.Graph.open(path)
    out = []
    for eps, value, dim, smooth in spec["points"]:
        m = model(eps, value, dim, smooth)
        m.threads = 1
        base = speed.null_delta(dim)
        ds = [
            max(0, speed._fresh_thread_delta(lambda v=v, m=m: m.embed(g, [v])) - base)
            for v in spec["ids"]
        ]
        out.append(
            {
                "eps": eps,
                "value": value,
                "dim": dim,
                "smooth": smooth,
                "mem_median_bytes": int(np.median(ds)),
                "mem_max_bytes": int(max(ds)),
            }
        )
    print("RESULT " + json.dumps(out))


def task_memory(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    pts = [
        (e, v, d, s)
        for d in args.dims
        for v in args.values
        for e in args.eps
        for s in args.smooth
        if st.get(kind="memory", dataset=data.name, eps=e, value=v, dim=d, smooth=s) is None
    ]
    if not pts:
        return
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="4096", MALLOC_TRIM_THRESHOLD_="0")
    spec = json.dumps({"points": pts, "ids": nodes_for(data, args.mem_nodes, seed=1)})
    p = subprocess.run(
        [sys.executable, __file__, "_mem", str(graph_path(data)), spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        print("  memory failed:", p.stderr[-500:], flush=True)
        return
    for r in json.loads(lines[0][7:]):
        st.add({"kind": "memory", "dataset": data.name, **r, "nodes": args.mem_nodes})
    print(f"  {data.name}: memory of {len(pts)} points", flush=True)


# --------------------------------------------------------------------------- frontier
def pareto(points: list[dict[str, Any]], tkey: str, margin: float) -> list[dict[str, Any]]:
    """Points that no other point beats on time (``tkey``, lower) and Micro-F1 (higher by
    more than ``margin``)."""
    keep = []
    for p in points:
        dominated = any(
            q[tkey] < p[tkey] and q["micro"] > p["micro"] + margin for q in points if q is not p
        )
        if not dominated:
            keep.append(p)
    return keep


def eval_splits(
    x: np.ndarray, data: Q.Data, cs: list[float], splits: int, frac: float, scale: bool = True
) -> dict[str, Any]:
    per = {}
    for c in cs:
        runs = [Q.classify(x, data.y, frac, s, c, scale) for s in range(splits)]
        per[f"{c:g}"] = Q.summarize(runs)
    best = max(per, key=lambda k: per[k]["micro"])
    return {"best_C": float(best), **per[best], "by_C": per}


def candidates(name: str, st: Store, margin: float, floor: float) -> list[dict[str, Any]]:
    """Screen points on the frontier of per-node latency (unsmoothed points: a smoothed
    query's cost grows with the neighbourhood) or of the all-node time (every point), whose
    Micro-F1 is at least FastRP's (d = 512, screen) minus ``floor``."""
    pts = [r for r in st.select(kind="screen", dataset=name) if "eps" in r]
    ref = st.get(kind="screen", dataset=name, method="fastrp", dim=512)
    low = (ref["micro"] - floor) if ref else -1.0
    cand = {id(p): p for p in pareto([p for p in pts if p["smooth"] == 0], "lat_us", margin)}
    cand.update({id(p): p for p in pareto(pts, "all_2t_s", margin)})
    return [p for p in cand.values() if p["micro"] >= low]


def task_frontier(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    frac = Q.FRACTIONS.get(data.name, args.fraction)
    pts = [] if args.only_always else candidates(data.name, st, args.margin, args.floor)
    keyed = {(p["eps"], p["value"], p["dim"], p["smooth"]) for p in pts}
    keyed |= {(e, v, d, s) for v, e, d, s in args.always}
    print(f"  {data.name}: {len(keyed)} frontier candidates", flush=True)
    for eps, value, dim, s in sorted(keyed, key=lambda t: (t[2], t[1], -t[0], t[3])):
        if st.get(kind="frontier", dataset=data.name, eps=eps, value=value, dim=dim, smooth=s):
            continue
        x, _ = embed_rows(data, eps, value, dim, smoke=args.smoke)
        for _ in range(s):
            x = smooth_step(data, x, 2)
        cs = args.C_grid[min(s, 1)]
        r = eval_splits(x, data, cs, args.splits, frac)
        st.add(
            {
                "kind": "frontier",
                "dataset": data.name,
                "eps": eps,
                "value": value,
                "dim": dim,
                "smooth": s,
                "splits": args.splits,
                **r,
            }
        )
        print(
            f"  {data.name} {value} eps={eps:g} d={dim} s={s}: micro {r['micro']:.2f} "
            f"± {r['micro_ci90']:.2f} (C {r['best_C']:g})",
            flush=True,
        )
    for dim in args.dims:
        for which in ("fastrp", "prone"):
            npy = C.cache_dir() / "frontier" / data.name / f"{which}_d{dim}.npy"
            if not npy.is_file() or st.get(
                kind="frontier", dataset=data.name, method=which, dim=dim
            ):
                continue
            r = eval_splits(
                np.load(npy), data, sorted(set(args.C_grid[0] + args.C_grid[1])), args.splits, frac
            )
            st.add(
                {
                    "kind": "frontier",
                    "dataset": data.name,
                    "method": which,
                    "dim": dim,
                    "splits": args.splits,
                    **r,
                }
            )
            print(
                f"  {data.name} {which} d={dim}: micro {r['micro']:.2f} (C {r['best_C']:g})",
                flush=True,
            )


# --------------------------------------------------------------------------- paper protocol
def _l2(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    nrm = np.sqrt((x64 * x64).sum(1, keepdims=True))
    return (x64 / np.where(nrm > 0, nrm, 1.0)).astype(np.float32)


def _ssqrt(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.sqrt(np.abs(x))).astype(np.float32)


# Output transforms (post-processing of the rows; ``n`` and ``d`` are the graph's node count
# and the dimension, so every transform stays local to the row).
TRANSFORMS: dict[str, Any] = {
    "none": lambda x, n: x,
    "l2": lambda x, n: _l2(x),
    "l2*sqrt(d)": lambda x, n: _l2(x) * np.float32(np.sqrt(x.shape[1])),
    "/ln(n)": lambda x, n: x / np.float32(np.log(n)),
    "ssqrt": lambda x, n: _ssqrt(x),
    "ssqrt+l2": lambda x, n: _l2(_ssqrt(x)),
    "log1p|x|": lambda x, n: (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32),
}


# Transforms that are a global rescaling of another give the same tuned (StandardScaler) result.
SCALE_OF = {"l2*sqrt(d)": "l2", "/ln(n)": "none"}


def coord_stats(x: np.ndarray) -> dict[str, Any]:
    """Per-coordinate and per-row statistics of an embedding (for the raw-classifier study)."""
    from scipy.stats import kurtosis

    x64 = x.astype(np.float64)
    sd = x64.std(0)
    nz = x64 != 0
    rn = np.sqrt((x64 * x64).sum(1))
    return {
        "abs_mean": float(np.abs(x64).mean()),
        "coord_sd_median": float(np.median(sd)),
        "coord_sd_max_over_min": float(sd.max() / max(sd.min(), 1e-12)),
        "coord_mean_over_sd_median": float(np.median(np.abs(x64.mean(0)) / (sd + 1e-12))),
        "kurtosis_median": float(np.median(kurtosis(x64, axis=0))),
        "nonzero_frac": float(nz.mean()),
        "row_norm_p10": float(np.percentile(rn, 10)),
        "row_norm_median": float(np.median(rn)),
        "row_norm_p90": float(np.percentile(rn, 90)),
        "row_norm_max_over_median": float(rn.max() / max(np.median(rn), 1e-12)),
    }


def task_paper(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    frac = Q.FRACTIONS.get(data.name, args.fraction)
    items: list[tuple[str, Any, dict[str, Any]]] = []
    for value, eps, dim, s in args.paper_points:
        items.append(
            (
                f"ours {value} eps={eps:g} d={dim} s={s}",
                (value, eps, dim, s),
                {"eps": eps, "value": value, "dim": dim, "smooth": s},
            )
        )
    for which in ("fastrp", "prone"):
        if (C.cache_dir() / "frontier" / data.name / f"{which}_d512.npy").is_file():
            items.append((which, which, {"method": which, "dim": 512}))
    for label, what, ident in items:
        if isinstance(what, str):
            x0 = np.load(C.cache_dir() / "frontier" / data.name / f"{what}_d512.npy")
        else:
            value, eps, dim, s = what
            x0, _ = embed_rows(data, eps, value, dim, smoke=args.smoke)
            for _ in range(s):
                x0 = smooth_step(data, x0, 2)
        if st.get(kind="stats", dataset=data.name, **ident) is None:
            st.add({"kind": "stats", "dataset": data.name, **ident, **coord_stats(x0)})
        tfs = args.transforms if not isinstance(what, str) else ["none", "l2"]
        for tf in tfs:
            x = TRANSFORMS[tf](x0, data.n)
            for proto in ("raw C=1", "tuned"):
                if st.get(kind="paper", dataset=data.name, transform=tf, protocol=proto, **ident):
                    continue
                same = st.get(
                    kind="paper",
                    dataset=data.name,
                    transform=SCALE_OF.get(tf),
                    protocol=proto,
                    **ident,
                )
                if proto == "tuned" and same:  # StandardScaler undoes a global scale
                    st.add({**same, "transform": tf, "same_as": SCALE_OF[tf]})
                    continue
                if proto == "raw C=1":
                    r = eval_splits(x, data, [1.0], args.splits, frac, scale=False)
                else:
                    r = eval_splits(
                        x, data, args.C_grid[min(ident.get("smooth", 0), 1)], args.splits, frac
                    )
                st.add(
                    {
                        "kind": "paper",
                        "dataset": data.name,
                        "transform": tf,
                        "protocol": proto,
                        **ident,
                        "splits": args.splits,
                        **r,
                    }
                )
                print(
                    f"  {data.name} {label} {tf:>10} {proto:8}: micro {r['micro']:.2f} "
                    f"(C {r['best_C']:g})",
                    flush=True,
                )
        if tfs != ["none", "l2"] and not isinstance(what, str):
            # the tuned protocol on raw features too (no scaler): what C does raw want?
            for tf in ("none", "l2"):
                x = TRANSFORMS[tf](x0, data.n)
                if st.get(
                    kind="paper", dataset=data.name, transform=tf, protocol="raw tuned", **ident
                ):
                    continue
                r = eval_splits(x, data, args.raw_C_grid, args.splits, frac, scale=False)
                st.add(
                    {
                        "kind": "paper",
                        "dataset": data.name,
                        "transform": tf,
                        "protocol": "raw tuned",
                        **ident,
                        "splits": args.splits,
                        **r,
                    }
                )
                print(
                    f"  {data.name} {label} {tf:>10} raw tuned: micro {r['micro']:.2f} "
                    f"(C {r['best_C']:g})",
                    flush=True,
                )


# --------------------------------------------------------------------------- final timing
def task_final(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    ids = nodes_for(data, 1000, seed=2)
    for rnd in range(args.rounds):
        for value, eps, dim, s in args.final_points:
            m = model(eps, value, dim, s)
            for threads in (1, 2):
                if st.get(
                    kind="final",
                    dataset=data.name,
                    eps=eps,
                    value=value,
                    dim=dim,
                    smooth=s,
                    threads=threads,
                    round=rnd,
                ):
                    continue
                load0, c0 = os.getloadavg()[0], cpu_s()
                secs = timed_embed_all(m, data.graph, threads)
                rec: dict[str, Any] = {
                    "kind": "final",
                    "dataset": data.name,
                    "eps": eps,
                    "value": value,
                    "dim": dim,
                    "smooth": s,
                    "threads": threads,
                    "round": rnd,
                    "all_s": secs,
                    "all_cpu_s": cpu_s() - c0,
                    "load_before": load0,
                }
                if threads == 1:
                    rec.update(
                        latency(
                            m,
                            data.graph,
                            [[v] for v in ids],
                            10.0 * args.budget if s == 0 else 2.0 * args.budget,
                        )
                    )
                st.add(rec)
                print(
                    f"  [{rnd}] {data.name} {value} eps={eps:g} d={dim} s={s} t={threads}: "
                    f"{secs:.3f} s {rec.get('lat_us', '')}",
                    flush=True,
                )
            if not peer_available("fastrp") or data.name == "smoke":
                continue
            for threads in (1, 2):
                if st.get(
                    kind="final",
                    dataset=data.name,
                    method="fastrp",
                    dim=dim,
                    threads=threads,
                    round=rnd,
                ):
                    continue
                load0 = os.getloadavg()[0]
                r = run_peer("fastrp", data, dim, threads)
                st.add(
                    {
                        "kind": "final",
                        "dataset": data.name,
                        "method": "fastrp",
                        "dim": dim,
                        "threads": threads,
                        "round": rnd,
                        "load_before": load0,
                        "all_s": r["fit_s"][0] if "fit_s" in r else None,
                        "all_cpu_s": r["fit_cpu_s"][0] if "fit_cpu_s" in r else None,
                        **r,
                    }
                )


# --------------------------------------------------------------------------- cold pages
PAGE = 4096
SPREAD_SLOTS, SPREAD_DEGREE = 65_000_000, 31.5  # the billion-edge graph: 65M nodes, 2.05B arcs


def _pages(lo: np.ndarray, hi: np.ndarray) -> set[int]:
    """Distinct pages of the byte ranges ``[lo, hi)`` (one section, page-aligned start)."""
    out: set[int] = set()
    for a, b in zip((lo // PAGE).tolist(), ((hi - 1) // PAGE).tolist()):
        out.update(range(a, b + 1))
    return out


def query_pages(
    deg: np.ndarray, off: np.ndarray, pos: np.ndarray, pushed: np.ndarray, checked: np.ndarray
) -> dict[str, int]:
    """Distinct 4 KiB pages one query reads from the graph file, by layout.

    ``pos[u]``: u's place in the file's node order, ``off[u]``: its row's first slot.
    ``"current"``: the threshold check of every ``checked`` node reads its ``indptr`` entries
    (degree), a pushed node then reads its row of 4-byte neighbour ids (docs/FORMAT.md).
    ``"degree in row"``: each row stores every neighbour's degree beside its id (8-byte
    entries), so a deposit knows the threshold without a lookup: only pushed nodes read
    ``indptr`` (their row's bounds) and their row.
    """

    def ip(nodes: np.ndarray) -> set[int]:
        return _pages(8 * pos[nodes], 8 * pos[nodes] + 16)

    cur_ip, cur_rows = ip(checked), _pages(4 * off[pushed], 4 * (off[pushed] + deg[pushed]))
    rows8 = _pages(8 * off[pushed], 8 * (off[pushed] + deg[pushed]))
    return {
        "current": len(cur_ip) + len(cur_rows),
        "current_indptr": len(cur_ip),
        "current_rows": len(cur_rows),
        "degree_in_row": len(ip(pushed)) + len(rows8),
        "pushed": len(pushed),
        "checked": len(checked),
    }


def task_pages(data: Q.Data, args: argparse.Namespace, st: Store) -> None:
    """Pages per cold query under the current layout and with neighbour degrees in the rows,
    in the file's node order and in a random order, from the exact push trace
    (``_core.ppr_state``: pushed = ``p > 0``, degree read = pushed or ``r > eps``)."""
    from instant_embedding import _core

    indptr, _ = csr(data)
    cfgs = {eps: _core.EmbeddingConfig(eps=eps) for eps in args.page_eps}  # alpha 0.15
    deg = np.diff(indptr)
    rng = np.random.default_rng(0)
    # "spread": the nodes scattered over SPREAD_SLOTS places of a file of that many nodes
    # (mean degree SPREAD_DEGREE), as a query on the billion-edge graph with shuffled ids sees
    # it: almost every node on its own indptr page and its own row page.
    orders = {
        "file": np.arange(data.n),
        "random": rng.permutation(data.n),
        "spread": np.sort(rng.choice(SPREAD_SLOTS, data.n, replace=False))[rng.permutation(data.n)],
    }
    seeds = np.random.default_rng(3).integers(0, data.n, size=args.page_nodes)
    for eps in args.page_eps:
        for oname, pos in orders.items():
            if st.get(kind="pages", dataset=data.name, eps=eps, stage=oname):
                continue
            if oname == "spread":
                off = np.round(pos * SPREAD_DEGREE).astype(np.int64)
            else:  # row offsets when rows are stored in this node order
                inv = np.argsort(pos)
                off = np.empty(data.n, dtype=np.int64)
                off[inv] = np.concatenate([[0], np.cumsum(deg[inv])[:-1]])
            counts = []
            for v in seeds.tolist():
                idx, p, r = _core.ppr_state(data.graph._native, v, cfgs[eps])
                idx = idx.astype(np.int64)
                counts.append(query_pages(deg, off, pos, idx[p > 0], idx[(p > 0) | (r > eps)]))
            med = {k: float(np.median([c[k] for c in counts])) for k in counts[0]}
            st.add(
                {
                    "kind": "pages",
                    "dataset": data.name,
                    "eps": eps,
                    "stage": oname,
                    "queries": len(counts),
                    **med,
                    "ratio": med["current"] / max(med["degree_in_row"], 1),
                }
            )
            print(
                f"  {data.name} eps={eps:g} {oname}: pages/query current {med['current']:.0f}"
                f" (indptr {med['current_indptr']:.0f}), degree in row "
                f"{med['degree_in_row']:.0f}",
                flush=True,
            )


# --------------------------------------------------------------------------- main
def _list(t: type) -> Any:
    return lambda s: [t(x) for x in s.split(",") if x]


def _points4(s: str) -> list[tuple[str, float, int, int]]:
    """``value:eps:dim:smooth`` items, comma separated."""
    out = []
    for item in filter(None, s.split(",")):
        v, e, d, k = item.split(":")
        out.append((v, float(e), int(d), int(k)))
    return out


def _cgrid(s: str) -> list[list[float]]:
    """Two C lists separated by ``/``: for smooth = 0, and for smooth >= 1."""
    a, _, b = s.partition("/")
    return [[float(x) for x in a.split(",")], [float(x) for x in (b or a).split(",")]]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_peer":
        _peer_child(argv[1:])
        return
    if argv and argv[0] == "_mem":
        _mem_child(argv[1:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny generated graph, temp output")
    ap.add_argument(
        "--tasks",
        type=_list(str),
        default=["screen", "frontier"],
        help="screen,capped,memory,frontier,paper,final,pages",
    )
    ap.add_argument("--datasets", type=_list(str), default=DATASETS)
    ap.add_argument("--eps", type=_list(float), default=EPS)
    ap.add_argument("--values", type=_list(str), default=VALUES)
    ap.add_argument("--smooth", type=_list(int), default=SMOOTH)
    ap.add_argument("--dims", type=_list(int), default=DIMS)
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument(
        "--screen-C",
        type=_list(float),
        default=[0.003, 0.01],
        help="screening C for smooth = 0 and for smooth >= 1",
    )
    ap.add_argument(
        "--C-grid",
        type=_cgrid,
        default=_cgrid("0.001,0.003,0.01/0.003,0.01,0.03"),
        help="C values tried on 3 splits, for smooth = 0 / smooth >= 1",
    )
    ap.add_argument("--raw-C-grid", type=_list(float), default=[0.01, 0.1, 1.0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument(
        "--floor",
        type=float,
        default=6.0,
        help="frontier candidates score at least FastRP's screen Micro-F1 minus this",
    )
    ap.add_argument(
        "--only-always",
        action="store_true",
        help="frontier task: evaluate the --always points only (a chosen subset)",
    )
    ap.add_argument(
        "--margin",
        type=float,
        default=0.0,
        help="Micro-F1 a point must lose by to count as dominated in the screen",
    )
    ap.add_argument(
        "--always",
        type=_points4,
        default=_points4("p+r:1e-5:512:0,p+r:1e-4:512:0,log1p:1e-3:512:2"),
        help="points always evaluated on 3 splits (value:eps:dim:smooth)",
    )
    ap.add_argument(
        "--capped-points",
        type=parse_points,
        default=parse_points("p+r:1e-4:512,log1p:1e-4:512,p+r:3e-5:512"),
    )
    ap.add_argument("--capped-k", type=_list(int), default=[4, 8, 16, 32])
    ap.add_argument("--capped-self", type=_list(str), default=["one", "half", "zero"])
    ap.add_argument(
        "--paper-points",
        type=_points4,
        default=_points4("p+r:1e-5:512:0,p+r:1e-4:512:0,log1p:1e-4:512:0"),
    )
    ap.add_argument("--transforms", type=_list(str), default=list(TRANSFORMS))
    ap.add_argument("--final-points", type=_points4, default=_points4("p+r:1e-4:512:0"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mem-nodes", type=int, default=5)
    ap.add_argument("--page-eps", type=_list(float), default=[1e-4, 1e-5])
    ap.add_argument("--page-nodes", type=int, default=200)
    ap.add_argument(
        "--import",
        dest="imports",
        type=_list(Path),
        default=[],
        help="merge the records of these result files first",
    )
    ap.add_argument("--budget", type=float, default=1.0, help="latency time budget factor")
    ap.add_argument("--out", type=Path, default=C.RESULTS / "frontier.json")
    ap.add_argument("--plot", type=Path, nargs="?", const=C.REPO / "docs" / "fig_frontier.png")
    ap.add_argument("--markdown", action="store_true", help="print the docs tables")
    args = ap.parse_args(argv)

    if args.smoke:
        tmp = Path(tempfile.mkdtemp(prefix="frontier_smoke_"))
        args.out, args.plot = tmp / "frontier.json", tmp / "fig_frontier.png"
        args.tasks = ["screen", "capped", "memory", "frontier", "paper", "final", "pages"]
        args.page_nodes, args.page_eps = 5, [1e-3]
        args.datasets, args.dims, args.eps = ["smoke"], [32], [1e-2, 1e-3]
        args.values, args.fraction, args.splits, args.rounds = ["p+r", "log1p"], 0.3, 2, 1
        args.always = [("p+r", 1e-3, 32, 0)]
        args.capped_points, args.capped_k = [("p+r", 1e-3, 32)], [4]
        args.paper_points = [("p+r", 1e-3, 32, 0)]
        args.final_points, args.mem_nodes, args.budget = [("p+r", 1e-3, 32, 1)], 2, 0.1
        Q.FRACTIONS["smoke"] = 0.3
    meta = {
        "machine": C.machine_info(),
        "command": " ".join(["benches/frontier.py", *argv]),
        "tasks": args.tasks,
    }
    st = Store(args.out, meta, merge=not args.smoke)
    for path in args.imports:
        with open(path) as f:
            other = json.load(f)
        seen = {json.dumps(r, sort_keys=True) for r in st.runs}
        st.runs.extend(
            r for r in other.get("runs", []) if json.dumps(r, sort_keys=True) not in seen
        )
        for r in other.get("records", []):
            st.records[st.key(r)] = r
        st.save()
    if args.smoke or not (args.markdown or args.plot):  # --plot / --markdown: report only
        for name in args.datasets:
            data = load(name)
            print(
                f"== {name}: n={data.n} m={len(data.u)} load {os.getloadavg()[0]:.1f}", flush=True
            )
            for task in args.tasks:
                {
                    "screen": task_screen,
                    "capped": task_capped,
                    "memory": task_memory,
                    "frontier": task_frontier,
                    "paper": task_paper,
                    "final": task_final,
                    "pages": task_pages,
                }[task](data, args, st)
            if args.smoke:
                check_smoke(data, st)
    if args.plot:
        plot(st, args.plot)
    if args.markdown:
        markdown(st)


def check_smoke(data: Q.Data, st: Store) -> None:
    """The library's smoothing step is what ``embed_all(smooth=k)`` computes; the capped
    prototype with every neighbour and no own row is the library's ``smooth=1``; quality is
    far above chance."""
    x0, _ = embed_rows(data, 1e-3, "p+r", 32, smoke=True)
    x2 = smooth_step(data, smooth_step(data, x0, 1), 2)
    lib = model(1e-3, "p+r", 32, 2).embed_all(data.graph, threads=2)
    assert np.array_equal(x2.view(np.uint32), lib.view(np.uint32)), "smooth_step != smooth=2"
    indptr, indices = csr(data)
    ptr, nbr = capped_neighbours(indptr, indices, hash_keys(data), None)
    mine = smooth_capped(x0, ptr, nbr, "zero")
    ref = smooth_step(data, x0, 1)
    assert np.array_equal(mine.view(np.uint32), ref.view(np.uint32)), "capped(all) != smooth=1"
    ptr4, nbr4 = capped_neighbours(indptr, indices, hash_keys(data), 4)
    assert np.diff(ptr4).max() <= 4 and set(nbr4[ptr4[0] : ptr4[1]]) <= set(
        indices[indptr[0] : indptr[1]]
    )
    best = max(r["micro"] for r in st.select(kind="frontier"))
    assert best > 60, f"smoke quality too low: {best}"
    print("smoke OK")


# --------------------------------------------------------------------------- reporting
def plot(st: Store, path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in DATASETS + ["smoke"] if st.select(kind="screen", dataset=n)]
    if not names:
        return
    colors = {"p+r": "tab:blue", "p": "tab:gray", "log1p": "tab:orange"}
    marks = {0: "o", 1: "s", 2: "^"}
    fig, axes = plt.subplots(len(names), 2, figsize=(12, 3.6 * len(names)), squeeze=False)
    for i, name in enumerate(names):
        pts = [r for r in st.select(kind="screen", dataset=name) if "eps" in r]
        for j, (tkey, xl) in enumerate(
            (
                ("lat_us", "warm time per node, 1 thread (µs)"),
                ("all_2t_s", "all nodes, 2 threads (s)"),
            )
        ):
            ax = axes[i][j]
            for r in pts:
                ax.scatter(
                    r[tkey],
                    r["micro"],
                    c=colors[r["value"]],
                    marker=marks[r["smooth"]],
                    s=18 if r["dim"] == 128 else 40,
                    alpha=0.8,
                    edgecolors="k" if r["dim"] == 512 else "none",
                    linewidths=0.4,
                )
            front = sorted(pareto(pts, tkey, 0.0), key=lambda r: r[tkey])
            ax.step(
                [r[tkey] for r in front],
                [r["micro"] for r in front],
                "k-",
                where="post",
                lw=0.8,
                alpha=0.6,
            )
            if j == 1:
                for which, mk in (("fastrp", "*"), ("prone", "P")):
                    for d in (128, 512):
                        q = st.get(kind="screen", dataset=name, method=which, dim=d)
                        ts = [
                            r["fit_s"][0]
                            for r in st.select(
                                kind="peer_time", dataset=name, method=which, dim=d, threads=2
                            )
                            if "fit_s" in r
                        ]
                        if q and ts:
                            ax.scatter(
                                np.mean(ts),
                                q["micro"],
                                marker=mk,
                                c="tab:green",
                                s=120 if d == 512 else 60,
                                edgecolors="k",
                                label=f"{which} d={d}",
                            )
                if ax.get_legend_handles_labels()[0]:
                    ax.legend(fontsize=7, loc="lower right")
            ax.set_xscale("log")
            ax.set_xlabel(xl)
            ax.set_ylabel("Micro-F1 (%), split 0")
            ax.set_title(name)
            ax.grid(alpha=0.3)
    handles = [
        plt.Line2D([], [], ls="", marker="o", c=c, label=f"value={v}") for v, c in colors.items()
    ]
    handles += [
        plt.Line2D([], [], ls="", marker=m, c="k", mfc="none", label=f"smooth={s}")
        for s, m in marks.items()
    ]
    fig.legend(handles=handles, loc="upper center", ncol=6, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")


def _peer_mean(st: Store, name: str, which: str, dim: int, threads: int) -> float | None:
    ts = [
        r["fit_s"][0]
        for r in st.select(kind="peer_time", dataset=name, method=which, dim=dim, threads=threads)
        if "fit_s" in r
    ]
    return float(np.mean(ts)) if ts else None


def markdown(st: Store) -> None:
    """The docs tables: per data set the screen grid (split 0) and the 3-split frontier."""
    for name in DATASETS:
        pts = [r for r in st.select(kind="screen", dataset=name) if "eps" in r]
        if not pts:
            continue
        eps = sorted({r["eps"] for r in pts}, reverse=True)
        print(f"\n#### {name}: screen (split 0), Micro-F1 / warm µs per node\n")
        print("| value, smooth, d | " + " | ".join(f"eps {e:g}" for e in eps) + " |")
        print("|---|" + "---:|" * len(eps))
        for d in DIMS:
            for v in VALUES:
                for s in SMOOTH:
                    cells = []
                    for e in eps:
                        r = st.get(kind="screen", dataset=name, eps=e, value=v, dim=d, smooth=s)
                        cells.append(f"{r['micro']:.1f} / {_s(r['lat_us'])}" if r else "–")
                    if any(c != "–" for c in cells):
                        print(f"| {v}, {s}, {d} | " + " | ".join(cells) + " |")
        for which in ("fastrp", "prone"):
            for d in DIMS:
                r = st.get(kind="screen", dataset=name, method=which, dim=d)
                if r:
                    print(
                        f"| {which} d={d}: {r['micro']:.1f}, all nodes "
                        f"{_s(_peer_mean(st, name, which, d, 1))} s (1 thr) / "
                        f"{_s(_peer_mean(st, name, which, d, 2))} s (2 thr) |"
                        + " |"
                        * (len(eps) - 1)
                    )
        fr = st.select(kind="frontier", dataset=name)
        if not fr:
            continue
        print(f"\n#### {name}: candidate frontier, 3 splits, best C\n")
        print(
            "| setting | d | Micro-F1 | Macro-F1 | C | warm µs/node | all nodes 1 thr s "
            "| 2 thr s | 2 thr / FastRP | KiB/query |"
        )
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in sorted(
            fr,
            key=lambda r: (
                r.get("method") or "",
                r["dim"],
                -(r.get("eps") or 0),
                r.get("smooth") or 0,
            ),
        ):
            f2 = _peer_mean(st, name, "fastrp", r["dim"], 2)
            head = (
                f"| {r['dim']} | {r['micro']:.2f} ± {r['micro_ci90']:.2f} | "
                f"{r['macro']:.2f} | {r['best_C']:g} |"
            )
            if r.get("method"):
                t1 = _peer_mean(st, name, r["method"], r["dim"], 1)
                t2 = _peer_mean(st, name, r["method"], r["dim"], 2)
                print(
                    f"| {r['method']} {head} – | {_s(t1)} | {_s(t2)} | "
                    f"{_s(t2 / f2 if t2 and f2 else None)} | – |"
                )
                continue
            sc = (
                st.get(
                    kind="screen",
                    dataset=name,
                    eps=r["eps"],
                    value=r["value"],
                    dim=r["dim"],
                    smooth=r["smooth"],
                )
                or {}
            )
            mem = (
                st.get(
                    kind="memory",
                    dataset=name,
                    eps=r["eps"],
                    value=r["value"],
                    dim=r["dim"],
                    smooth=r["smooth"],
                )
                or {}
            )
            t2 = sc.get("all_2t_s")
            memk = mem["mem_median_bytes"] / 1024 if "mem_median_bytes" in mem else None
            print(
                f"| `{r['value']}`, eps {r['eps']:g}, smooth {r['smooth']} {head} "
                f"{_s(sc.get('lat_us'))} | {_s(sc.get('all_1t_s'))} | {_s(t2)} | "
                f"{_s(t2 / f2 if t2 and f2 else None)} | {_s(memk)} |"
            )


def _s(x: Any) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


if __name__ == "__main__":
    main()
