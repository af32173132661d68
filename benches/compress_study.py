"""Compressed embeddings: hash into a wide space, then one label-free linear map to ``dim``.

The study behind the ``wide_dim`` setting. For every labelled data set it embeds every node at
a wide dimension ``W`` with the library (``embed_all``), fits a linear map ``W -> dim`` on a
sample of nodes drawn by a seeded rule (numpy, independent of the kernel's fit), applies it to
every row and scores node classification with ``benches/quality.py``'s protocol:

- tuned: ``StandardScaler`` + liblinear one-vs-rest logistic regression, the best ``C`` of
  ``{0.003, 0.01, 0.03}`` (by test score, as for every row alike);
- untuned (the paper's protocol): raw features, ``C = 1``;

at 10 % and 90 % labels. Maps (``--maps``):

``direct``
    no map: the library hashed straight into ``dim`` (today's output).
``pca``
    the top ``dim`` right singular vectors of the sample's wide rows (uncentred): ``x V``.
``bpca``
    ``pca`` of the sample's rows with each column ``j`` scaled by ``sqrt(rms / rms_j)``
    (``rms_j`` its root mean square over the sample, ``rms`` that of all non-zero columns),
    the scale folded into the map: the kernel's fit.
``pca-c``
    the same as ``pca`` after centring on the sample's mean: ``(x - mean) V``.
``spca``
    the top ``dim`` principal directions (uncentred) of the sample's rows with each entry
    replaced by its signed square root, applied to the node's own (untransformed) row.
``wpca``
    centred and whitened: each component divided by its singular value (times ``sqrt(s)``).
``gauss``
    a fixed random Gaussian ``W x dim`` map (``N(0, 1/dim)``): the fit-free baseline.
``cross<m>``
    directions along which a node and its neighbours agree: the top ``dim`` eigenvectors
    (largest eigenvalues) of the symmetrised cross-covariance ``(X^T B + B^T X) / 2`` of the
    sample's rows ``X`` and the means ``B`` of at most ``m`` seeded random neighbours' rows of
    each sampled node (``cross0``: all neighbours; an isolated node's own row); applied to the
    node's own row as every other map.
``pcross<m>``
    ``cross<m>`` within the top ``2 dim`` principal directions ``U`` (uncentred) of the sample's
    rows: ``U`` times the top ``dim`` eigenvectors of ``U^T (X^T B + B^T X) U / 2`` (a fit that
    needs only the ``2 dim`` projections of each neighbour's row).
``smooth<m>``
    the top ``dim`` principal directions (uncentred) of the one-hop smoothed rows
    ``(X + B) / 2`` (``B`` as above), applied to the node's own row.
``kernel``
    the library's own fitted map (``InstantEmbedding(dim, wide_dim=W).fit(g)``): the
    configuration shipped.

An item is ``map:W:sample:dim[:eps[:value[:normalize]]]``; ``normalize`` ``l2`` scales every
output row to unit length (the kernel's ``normalize="l2"``; numpy's rows likewise).

Peers (``--peers``, e.g. ``fastrp,prone``) are scored by the same classifier at each ``dim``.

Usage::

    python benches/compress_study.py --smoke
    nice python benches/compress_study.py --datasets blogcatalog,cora --dims 32,64,128,256
    python benches/compress_study.py --cost --datasets blogcatalog --dims 64,128,256
    python benches/compress_study.py --cost --datasets blogcatalog --dims 128 \
        --cost-variants value=log1p,eps=5e-5
    python benches/compress_study.py --cost --datasets PATH/TO/any.graph --dims 128

Results go to ``--out`` (default ``benches/results/compress_study.json``), merged by key.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import _quality_peers as P  # noqa: E402
import quality as Q  # noqa: E402

CS = (0.003, 0.01, 0.03)
FRACTIONS = (0.1, 0.9)
DATASETS = ("blogcatalog", "ppi_homo_sapiens", "ppi_homo_sapiens_lcc", "cora", "pubmed")


def sample_nodes(n: int, size: int, seed: int) -> np.ndarray:
    """The fit's sample: ``min(n, size)`` distinct nodes drawn uniformly by a seeded rule."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=min(n, size), replace=False))


def neighbour_means(xw: np.ndarray, adj: Any, idx: np.ndarray, m: int, seed: int) -> np.ndarray:
    """``B``: for each sampled node (``idx``), the mean of the wide rows of at most ``m``
    neighbours drawn without replacement by a seeded rule (all of them when ``m == 0`` or the
    degree is at most ``m``); an isolated node's own row."""
    rng = np.random.default_rng(seed + 29)
    b = np.empty((len(idx), xw.shape[1]))
    for r, v in enumerate(idx):
        nb = adj.indices[adj.indptr[v] : adj.indptr[v + 1]]
        if len(nb) == 0:
            nb = np.array([v])
        elif 0 < m < len(nb):
            nb = np.sort(rng.choice(nb, m, replace=False))
        b[r] = np.asarray(xw[nb], dtype=np.float64).mean(0)
    return b


def cross_directions(x: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """The top ``k`` eigenvectors (largest eigenvalues, W x k) of ``(X^T B + B^T X) / 2``, by
    Lanczos on the operator (never formed)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    w = x.shape[1]
    op = LinearOperator(
        (w, w), matvec=lambda q: (x.T @ (b @ q) + b.T @ (x @ q)) / 2, dtype=np.float64
    )
    vals, vecs = eigsh(op, k=min(k, w - 1), which="LA", tol=1e-8, v0=np.ones(w))
    return np.asarray(vecs[:, np.argsort(vals)[::-1]])


def fit_map(
    x: np.ndarray,
    kind: str,
    dim: int,
    seed: int,
    cache: dict[Any, Any] | None = None,
    b: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(V, mean)`` of the map ``(row - mean) @ V`` fitted on the sample ``x`` (s x W), with
    ``b`` the sampled nodes' neighbour means for the ``cross``/``smooth`` maps.

    The singular vectors come from ``eigh`` of the sample's s x s Gram matrix (exact in
    f64), computed once per sample and centring (``cache``) and cut to each ``dim``."""
    w = x.shape[1]
    if kind == "gauss":
        rng = np.random.default_rng(seed + 17)
        return rng.standard_normal((w, dim)) / np.sqrt(dim), np.zeros(w)
    if kind.startswith("cross"):
        assert b is not None
        return cross_directions(x.astype(np.float64), b, dim), np.zeros(w)
    if kind.startswith("pcross"):
        assert b is not None
        u, _ = fit_map(x, "pca", 2 * dim, seed, cache)
        xu, bu = x.astype(np.float64) @ u, b @ u
        h = xu.T @ bu
        vals, e = np.linalg.eigh((h + h.T) / 2)
        return u @ e[:, np.argsort(vals)[::-1][:dim]], np.zeros(w)
    centred = kind in ("pca-c", "wpca")
    # Keyed by the sample (and neighbour means) it was computed from, which the caller keeps.
    key: tuple[Any, ...] = (id(x), centred)
    if kind.startswith("smooth"):
        assert b is not None
        key = (id(x), id(b), "smooth")
        x = (x.astype(np.float64) + b) / 2
    if kind == "spca":
        key = (id(x), "spca")
        x = np.sign(x) * np.sqrt(np.abs(x.astype(np.float64)))
    scale = np.ones(w)
    if kind == "bpca":
        # The kernel's fit (SPEC §2c): columns balanced by sqrt(rms / rms_j) before the PCA.
        key = (id(x), "bpca")
        ms = (x.astype(np.float64) ** 2).mean(0)
        rms = np.sqrt(ms[ms > 0].mean()) if np.any(ms > 0) else 1.0
        scale = np.where(ms > 0, np.sqrt(rms / np.sqrt(np.where(ms > 0, ms, 1))), 1.0)
        x = x.astype(np.float64) * scale
    if cache is None or key not in cache:
        xf = x.astype(np.float64)
        mean = xf.mean(0) if centred else np.zeros(w)
        xc = xf - mean
        vals, u = np.linalg.eigh(xc @ xc.T)
        order = np.argsort(vals)[::-1]
        vals, u = np.maximum(vals[order], 0.0), u[:, order]
        rank = int(np.sum(vals > vals[0] * 1e-12)) if vals[0] > 0 else 0
        sing = np.sqrt(vals[:rank])
        vt = (xc.T @ u[:, :rank] / sing).T
        got = (sing, vt, mean)
        if cache is not None:
            cache[key] = got
    else:
        got = cache[key]
    sing, vt, mean = got
    v = np.zeros((w, dim))
    k = min(dim, vt.shape[0])
    v[:, :k] = vt[:k].T * scale[:, None]
    if kind == "wpca":
        scale = sing[:k] / np.sqrt(len(x))
        v[:, :k] /= np.where(scale > 0, scale, 1.0)
    return v, mean


def scores(x: np.ndarray, y: np.ndarray, splits: int, full: bool = True) -> dict[str, float]:
    """Micro-F1 (%) of both protocols at each label fraction (``full``) or at 10 % labels
    only (the ablations), mean over ``splits``."""
    out: dict[str, float] = {}
    for frac in FRACTIONS if full else FRACTIONS[:1]:
        tag = f"{int(frac * 100)}"
        best = max(
            float(np.mean([Q.classify(x, y, frac, s, c, True)[0] for s in range(splits)]))
            for c in CS
        )
        out[f"tuned_{tag}"] = best
        out[f"untuned_{tag}"] = float(
            np.mean([Q.classify(x, y, frac, s, 1.0, False)[0] for s in range(splits)])
        )
    return out


def wide_rows(data: Any, w: int, eps: float, value: str, cache: dict[Any, np.ndarray]) -> Any:
    import instant_embedding as ie

    key = (w, eps, value)
    if key not in cache:
        m = ie.InstantEmbedding(w, eps=eps, value=value)
        t = time.perf_counter()
        cache[key] = (np.asarray(m.embed_all(data.graph, threads=1)), time.perf_counter() - t)
    return cache[key]


def unit_rows(z: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (``normalize="l2"``); a zero row stays zero."""
    norm = np.linalg.norm(z.astype(np.float64), axis=1, keepdims=True)
    return (z / np.where(norm > 0, norm, 1.0)).astype(np.float32)


def adjacency(data: Any) -> Any:
    """The symmetric 0/1 adjacency (scipy CSR, column indices ascending) of ``data``."""
    import scipy.sparse as sp

    a = sp.coo_matrix((np.ones(len(data.u)), (data.u, data.v)), shape=(data.n, data.n))
    a = (a + a.T).tocsr()
    a.sort_indices()
    return a


def run_dataset(data: Any, args: argparse.Namespace, out: Q.Results) -> list[dict[str, Any]]:
    cache: dict[Any, Any] = {}
    svd_cache: dict[Any, Any] = {}
    samples: dict[Any, np.ndarray] = {}
    adj = None
    rows = []

    def record(method: str, dim: int, x: np.ndarray, extra: dict[str, Any], full: bool) -> None:
        t = time.perf_counter()
        rec = {
            "task": "compress",
            "dataset": data.name,
            "method": method,
            "dim": dim,
            "classifier": "tuned+untuned",
            "eps": extra.get("eps"),
            **extra,
            **scores(x, data.y, args.splits, full),
        }
        rec["classify_s"] = time.perf_counter() - t
        out.add(rec)
        out.save()
        rows.append(rec)
        nan = float("nan")
        print(
            f"  {data.name} {method:28s} d={dim:<4d} tuned {rec['tuned_10']:6.2f} "
            f"{rec.get('tuned_90', nan):6.2f}  untuned {rec['untuned_10']:6.2f} "
            f"{rec.get('untuned_90', nan):6.2f}",
            flush=True,
        )

    for peer in args.peers:
        for dim in args.peer_dims:
            x = P.embed_peer(peer, data.u, data.v, data.n, dim, seed=0, threads=1)
            record(peer, dim, np.asarray(x, dtype=np.float32), {"splits": args.splits}, True)
    specs = [(c, True) for c in args.configs] + [(c, False) for c in args.ablations]
    for spec, full in specs:
        # spec: map:W:sample:dim[:eps[:value[:normalize]]]
        parts = spec.split(":")
        kind, w, size, dim = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
        eps = float(parts[4]) if len(parts) > 4 and parts[4] else args.eps
        value = parts[5] if len(parts) > 5 and parts[5] else "p+r"
        normalize = parts[6] if len(parts) > 6 else "ln_n"
        extra: dict[str, Any] = {"eps": eps, "value": value, "splits": args.splits}
        if normalize != "ln_n":
            extra["normalize"] = normalize
        unit = (lambda z: unit_rows(z)) if normalize == "l2" else (lambda z: z)
        suffix = "" if normalize == "ln_n" else f" {normalize}"
        if kind == "direct":
            x, secs = wide_rows(data, dim, eps, value, cache)
            tag = f"direct{'' if value == 'p+r' else '-' + value}{suffix}"
            record(tag, dim, unit(x), extra, full)
            continue
        if kind == "kernel":
            import instant_embedding as ie

            m = ie.InstantEmbedding(
                dim, wide_dim=w, fit_nodes=size, eps=eps, value=value, normalize=normalize
            )
            t = time.perf_counter()
            m.fit(data.graph, threads=1)
            fit_s = time.perf_counter() - t
            t = time.perf_counter()
            z = m.embed_all(data.graph, threads=1)
            record(
                f"kernel W={w} s={size}{suffix}",
                dim,
                z,
                {**extra, "fit": "balanced", "fit_s": fit_s, "embed_s": time.perf_counter() - t},
                full,
            )
            continue
        xw, secs = wide_rows(data, w, eps, value, cache)
        idx = sample_nodes(data.n, size, 0)
        skey = (w, eps, value, size)
        if skey not in samples:
            samples[skey] = xw[idx]
        b = None
        if kind.startswith(("cross", "pcross", "smooth")):
            m = int(kind.lstrip("p").removeprefix("cross").removeprefix("smooth") or 0)
            bkey = (w, eps, value, size, m)
            if bkey not in samples:
                if adj is None:
                    adj = adjacency(data)
                samples[bkey] = neighbour_means(xw, adj, idx, m, 0)
            b = samples[bkey]
        t = time.perf_counter()
        v, mean = fit_map(samples[skey], kind, dim, 0, svd_cache, b)
        fit_s = time.perf_counter() - t
        z = unit(((xw.astype(np.float64) - mean) @ v).astype(np.float32))
        tag = f"{kind} W={w} s={size}" + ("" if value == "p+r" else f" {value}") + suffix
        record(tag, dim, z, {**extra, "wide": w, "sample": len(idx), "fit_s": fit_s}, full)
    return rows


def cost(name: str, args: argparse.Namespace, out: Q.Results) -> None:
    """Warm time per node (single-node ``embed(g, [v], threads=1)`` calls, median over
    ``--cost-nodes`` seeded random nodes, the models interleaved node by node so that load
    hits them alike) of today's default, of ``dim`` hashed directly and of the compressed
    outputs; and the fit's time (wall and CPU, 1 and 2 threads)."""
    import instant_embedding as ie

    if name == "smoke":
        g = Q.smoke_dataset().graph
    else:
        # A data set's name, or the path of any graph file (e.g. the billion-edge one).
        g = ie.Graph.open(name if name.endswith(".graph") else C.dataset_graph(name))
    models = {"default (d=512)": ie.InstantEmbedding()}
    for d in args.dims:
        models[f"direct d={d}"] = ie.InstantEmbedding(d)
        models[f"4096->{d}"] = ie.InstantEmbedding(d, wide_dim=4096)
        for item in args.cost_variants:
            # settings joined by "/", e.g. value=log1p/normalize=l2
            pairs = [kv.split("=") for kv in item.split("/")]
            setting = {k: float(v) if k == "eps" else v for k, v in pairs}
            models[f"4096->{d} {item}"] = ie.InstantEmbedding(d, wide_dim=4096, **setting)
    label_of_graph = Path(name).stem if name.endswith(".graph") else name
    rec: dict[str, Any] = {"task": "cost", "dataset": label_of_graph, "method": "cost", "dim": 0}
    for label, m in models.items():
        if m.compressed:
            for threads in (1, 2):
                t, c = time.perf_counter(), time.process_time()
                m.fit(g, threads=threads)
                rec[f"fit_wall_s {label} t{threads}"] = time.perf_counter() - t
                rec[f"fit_cpu_s {label} t{threads}"] = time.process_time() - c
    rng = np.random.default_rng(0)
    nodes = [g.nodes[i] for i in rng.integers(0, g.num_nodes, args.cost_nodes)]
    times: dict[str, list[float]] = {k: [] for k in models}
    for m in models.values():
        m.embed(g, nodes[:50], threads=1)  # warm: pages, workspaces, key tables
    for v in nodes:
        for label, m in models.items():
            t = time.perf_counter()
            m.embed(g, [v], threads=1)
            times[label].append(time.perf_counter() - t)
    base = float(np.median(times["default (d=512)"]))
    for label, ts in times.items():
        med = float(np.median(ts))
        rec[f"warm_us {label}"] = 1e6 * med
        rec[f"warm_ratio {label}"] = med / base
        print(
            f"  {label_of_graph} {label:16s} warm {1e6 * med:8.1f} us  ({med / base:.2f}x default)"
        )
    for k, v in rec.items():
        if k.startswith("fit_"):
            print(f"  {label_of_graph} {k}: {v:.3f}")
    rec["load_after"] = os.getloadavg()[0]
    out.add(rec)
    out.save()


def plot(paths: list[Path], target: Path) -> None:
    """Micro-F1 (tuned, 10 % labels) against dim: direct hashing, the library's fitted map,
    and FastRP / ProNE at 128, one panel per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = []
    for p in paths:
        with open(p) as f:
            recs += [r for r in json.load(f)["records"] if r.get("task") == "compress"]
    names = [d for d in DATASETS if any(r["dataset"] == d for r in recs)]
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        mine = [r for r in recs if r["dataset"] == name and "tuned_90" in r]
        for method, style, label in (
            ("direct", "o-", "hashed to dim"),
            ("kernel W=4096 s=2000", "s-", "4096 -> dim (fitted map)"),
        ):
            # The grid's records: one split, default value, eps and output scale.
            pts = sorted(
                (r["dim"], r["tuned_10"])
                for r in mine
                if r["method"] == method
                and r.get("splits", 1) == 1
                and r.get("value", "p+r") == "p+r"
                and r.get("eps", 1e-4) in (None, 1e-4)
                and r.get("normalize", "ln_n") == "ln_n"
            )
            if pts:
                ax.plot(*zip(*pts), style, label=label)
        for peer, marker in (("fastrp", "^"), ("prone", "v")):
            pts = [(r["dim"], r["tuned_10"]) for r in mine if r["method"] == peer]
            if pts:
                ax.plot(*zip(*pts), marker, ms=9, label=f"{peer} d=128", linestyle="none")
        ax.set_xscale("log", base=2)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("dim")
    axes[0][0].set_ylabel("Micro-F1, 10 % labels (tuned)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    print(f"wrote {target}")


def default_configs(dims: list[int]) -> list[str]:
    """The main grid, scored in full: direct, numpy PCA and the kernel's map at each dim."""
    cfgs = []
    for d in dims:
        cfgs += [f"direct:0:0:{d}", f"bpca:4096:2000:{d}", f"kernel:4096:2000:{d}"]
    return [*cfgs, "direct:0:0:512"]


def default_ablations() -> list[str]:
    """The choices, at dim 128 and 10 % labels: map kind, wide size, sample size, value, eps."""
    return [
        "pca:4096:2000:128",
        "pca-c:4096:2000:128",
        "wpca:4096:2000:128",
        "gauss:4096:2000:128",
        "pca:1024:2000:128",
        "pca:2048:2000:128",
        "pca:4096:1000:128",
        "pca:4096:4000:128",
        "pca:4096:2000:512",
        "pca:4096:2000:128::log1p",
        "pca:4096:2000:128:1e-5",
        "direct:0:0:128:1e-5",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--datasets", type=Q._list(str), default=list(DATASETS))
    ap.add_argument("--dims", type=Q._list(int), default=[32, 64, 128, 256])
    ap.add_argument(
        "--configs",
        type=Q._list(str),
        default=None,
        help="map:W:sample:dim[:eps[:value[:normalize]]] items scored in full (default: the "
        "study's grid over --dims)",
    )
    ap.add_argument(
        "--ablations",
        type=Q._list(str),
        default=None,
        help="more such items, scored at 10 %% labels only (default: the study's ablations)",
    )
    ap.add_argument("--peers", type=Q._list(str), default=["fastrp", "prone"])
    ap.add_argument("--peer-dims", type=Q._list(int), default=[128])
    ap.add_argument("--splits", type=int, default=1)
    ap.add_argument("--eps", type=float, default=1e-4)
    ap.add_argument("--out", type=Path, default=C.RESULTS / "compress_study.json")
    ap.add_argument("--smoke", action="store_true", help="a tiny planted graph, no shared data")
    ap.add_argument(
        "--cost",
        action="store_true",
        help="only the cost: warm time per node against the default, and the fit's time",
    )
    ap.add_argument("--cost-nodes", type=int, default=1000)
    ap.add_argument(
        "--cost-variants",
        type=Q._list(str),
        default=[],
        help="with --cost: the compressed output also with these settings, e.g. "
        "value=log1p,eps=5e-5,value=log1p/normalize=l2 (one model per item; '/' joins settings)",
    )
    ap.add_argument(
        "--plot",
        type=Q._list(Path),
        default=None,
        help="only plot these result files into docs/fig_compress.png",
    )
    args = ap.parse_args()
    if args.plot:
        plot(args.plot, C.REPO / "docs" / "fig_compress.png")
        return
    if args.configs is None:
        args.configs = default_configs(args.dims)
    if args.ablations is None:
        args.ablations = default_ablations()
    if args.smoke:
        args.cost_nodes = 20
        args.out = Path(tempfile.mkdtemp(prefix="compress_smoke_")) / "compress.json"
        args.datasets, args.peers = ["smoke"], []
        args.ablations = ["pca-c:256:100:8"]
        args.configs = [
            "direct:0:0:8",
            "pca:256:100:8",
            "wpca:256:100:8",
            "gauss:256:100:8",
            "cross4:256:100:8",
            "pcross4:256:100:8",
            "spca:256:100:8",
            "smooth0:256:100:8",
        ]
        try:
            import instant_embedding as ie

            if "wide_dim" in ie.InstantEmbedding().get_params():
                args.configs.append("kernel:256:100:8")
        except ImportError:
            pass
    meta = {"machine": C.machine_info(), "argv": sys.argv[1:], "splits": args.splits}
    out = Q.Results(args.out, meta, merge=not args.smoke)
    if args.cost:
        for name in args.datasets:
            cost(name, args, out)
        return
    for name in args.datasets:
        data = Q.smoke_dataset() if name == "smoke" else Q.load_dataset(name)
        print(f"{name}: {data.n} nodes", flush=True)
        rows = run_dataset(data, args, out)
        C.print_table(
            rows,
            ["dataset", "method", "dim", "tuned_10", "tuned_90", "untuned_10", "untuned_90"],
        )
    out.save()
    if args.smoke:
        args.dims = [8]
        cost("smoke", args, out)
        recs = [r for r in out.records.values() if r["task"] == "compress"]
        bad = [r for r in recs if not all(0 <= r[k] <= 100 for k in ("tuned_10", "untuned_10"))]
        if bad or not recs:
            raise SystemExit("smoke check failed: " + json.dumps(bad))
        print("smoke OK")


if __name__ == "__main__":
    main()
