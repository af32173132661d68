"""Embedding quality: node classification, link prediction, eps study, UMAP (paper H2).

Tasks (``--tasks``, comma separated):

``nc``
    Node classification with the paper's protocol: one-vs-rest logistic regression (one binary
    liblinear model per label), the number K of a test node's true labels known and its top-K
    scores predicted, Micro/Macro-F1 (%) as mean and 90% confidence interval (Student t, over
    ``--splits`` random train/test splits x ``--seeds`` hash seeds; peers: x ``--peer-seeds``).
    Classifier, the same for every method: ``StandardScaler`` fitted on the training rows, then
    ``LogisticRegression(solver="liblinear", C=0.003)`` (``--C``). For ours a second row uses
    the paper-style classifier (raw features, C=1) to show the classifier's effect.
``lp``
    Link prediction: 80/10/10 random edge split, embeddings of the training graph only, edge
    features hadamard / dot / cosine / L1 / L2 / average, a standardised logistic regression
    (C=1) trained on validation edges + as many sampled non-edges, ROC-AUC on test edges + as
    many sampled non-edges (``--lp-max-edges`` caps val/test edge counts).
``eps``
    The eps study (paper Fig. 3): Micro-F1, time per node and peak memory for each ``--eps-list``
    value, ours with value p+r and p; each point runs in a fresh subprocess (peak RSS growth).
    Plots ``docs/fig3_eps.png``.
``umap``
    UMAP of ours (p+r, d=512) on Cora coloured by label: ``docs/umap_cora.png``.

``--smoke`` runs every task on a small generated graph with planted labels (no shared data
needed, seconds) and writes into a temporary directory, never over committed results.

Usage::

    python benches/quality.py --smoke
    python benches/quality.py --tasks nc --datasets blogcatalog,ppi_homo_sapiens_lcc --dims 512
    python benches/quality.py --tasks lp --datasets blogcatalog,ego_facebook,soc_slashdot0902
    python benches/quality.py --tasks eps --datasets blogcatalog,ppi_homo_sapiens_lcc

Results are merged into ``--out`` (default ``benches/results/quality.json``): a record with the
same key (task, dataset, method, dim, ...) replaces the old one, so tasks can run separately.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
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
import _quality_peers as P  # noqa: E402

# Label fraction per data set: the paper's 10% for BlogCatalog and PPI (the paper's PPI table
# heads its first column "1%"; 10% of the labelled nodes is what reproduces it).
FRACTIONS = {"blogcatalog": 0.1, "ppi_homo_sapiens_lcc": 0.1, "cora": 0.1, "pubmed": 0.1}
PAPER_KEY = {"blogcatalog": ("Blogcatalog", "10.00%"), "ppi_homo_sapiens_lcc": ("PPI", "1.00%")}
OPS = ("hadamard", "dot", "cosine", "l1", "l2", "average")


# --------------------------------------------------------------------------- data
class Data:
    """A graph (edge arrays, ``ie.Graph``) with optional labels (dense 0/1 ``(n, L)``)."""

    def __init__(
        self,
        name: str,
        u: np.ndarray,
        v: np.ndarray,
        n: int,
        y: np.ndarray | None,
        path: Path | None = None,
    ) -> None:
        import instant_embedding as ie

        self.name, self.u, self.v, self.n, self.y = name, u, v, n, y
        self.graph = ie.Graph.open(path) if path else ie.Graph.from_edges(u, v, num_nodes=n)


def load_dataset(name: str) -> Data:
    root = C.datasets_dir()
    if root is None:
        raise FileNotFoundError("no shared datasets folder (set IE_SHARED)")
    path = C.dataset_graph(name)
    n = int(C.dataset_stats(name)["nodes"])
    u, v = C.read_edge_tsv(root / name / "edges.tsv.gz")
    y = None
    lab = root / name / "labels.tsv.gz"
    if lab.is_file():
        with gzip.open(lab, "rb") as f:
            a = np.loadtxt(f, dtype=np.int64, ndmin=2)
        y = np.zeros((n, int(a[:, 1].max()) + 1), dtype=np.int8)
        y[a[:, 0], a[:, 1]] = 1
    return Data(name, u, v, n, y, path)


def smoke_dataset(seed: int = 0) -> Data:
    """Planted partition: 4 blocks of 60 nodes, dense inside, sparse across; a node's label is
    its block, plus (multi-label) label 4 for even-numbered nodes of blocks 0 and 1."""
    rng = np.random.default_rng(seed)
    k, size = 4, 60
    n = k * size
    block = np.repeat(np.arange(k), size)
    iu, iv = np.triu_indices(n, 1)
    prob = np.where(block[iu] == block[iv], 0.15, 0.01)
    keep = rng.random(len(iu)) < prob
    y = np.zeros((n, k + 1), dtype=np.int8)
    y[np.arange(n), block] = 1
    y[(block < 2) & (np.arange(n) % 2 == 0), k] = 1
    return Data("smoke", iu[keep].astype(np.int64), iv[keep].astype(np.int64), n, y)


# --------------------------------------------------------------------------- embeddings
def embed(
    data: Data,
    method: str,
    dim: int,
    seed: int,
    eps: float,
    graph: Any = None,
    u: np.ndarray | None = None,
    v: np.ndarray | None = None,
    normalize: str = "none",
    threads: int = 2,
) -> tuple[np.ndarray, float]:
    """Embedding of every node and its wall time in seconds. ``method`` is ``ie-p+r``,
    ``ie-p``, ``ie-log1p``, any of them with ``-s<k>`` for ``smooth=k`` (e.g.
    ``ie-log1p-s2``), or a peer name; ``graph``/``u``/``v`` override the data set's graph
    (for LP); ``normalize`` is ours' output scale."""
    g = graph if graph is not None else data.graph
    u = data.u if u is None else u
    v = data.v if v is None else v
    t = time.perf_counter()
    if method.startswith("ie-"):
        import instant_embedding as ie

        value, _, smooth = method[3:].partition("-s")
        m = ie.InstantEmbedding(
            dim, eps=eps, seed=seed, value=value, smooth=int(smooth or 0), normalize=normalize
        )
        x = m.embed_all(g, threads=threads)
    else:
        x = P.embed_peer(method, u, v, data.n, dim, seed=seed, threads=threads)
    return np.asarray(x, dtype=np.float32), time.perf_counter() - t


# --------------------------------------------------------------------------- classification
def classify(
    x: np.ndarray, y: np.ndarray, frac: float, split: int, c: float, scale: bool
) -> tuple[float, float]:
    """One split: OvR liblinear LR, top-K prediction. Returns (micro, macro) F1 in %."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import StandardScaler

    labeled = np.flatnonzero(y.sum(1) > 0)
    perm = np.random.RandomState(1000 + split).permutation(labeled)
    ntr = max(1, int(round(frac * len(labeled))))
    tr, te = perm[:ntr], perm[ntr:]
    xtr, xte = x[tr].astype(np.float64), x[te].astype(np.float64)
    if scale:
        sc = StandardScaler().fit(xtr)
        xtr, xte = sc.transform(xtr), sc.transform(xte)
    ytr, yte = y[tr], y[te]
    s = np.empty((len(te), y.shape[1]))
    for j in range(y.shape[1]):
        col = ytr[:, j]
        if col.min() == col.max():  # label absent (or everywhere) in the training rows
            s[:, j] = 1e6 if col[0] else -1e6
            continue
        clf = LogisticRegression(C=c, solver="liblinear", max_iter=1000)
        s[:, j] = clf.fit(xtr, col).decision_function(xte)
    k = yte.sum(1)
    order = np.argsort(-s, axis=1, kind="stable")
    pred = np.zeros_like(yte)
    rank = np.empty_like(order)
    rank[np.arange(len(te))[:, None], order] = np.arange(y.shape[1])[None, :]
    pred[rank < k[:, None]] = 1
    return (
        100 * f1_score(yte, pred, average="micro"),
        100 * f1_score(yte, pred, average="macro", zero_division=0),
    )


def ci90(a: list[float]) -> float:
    """Half-width of the 90% Student-t confidence interval of the mean."""
    if len(a) < 2:
        return float("nan")
    from scipy.stats import t

    return float(t.ppf(0.95, len(a) - 1) * np.std(a, ddof=1) / math.sqrt(len(a)))


def summarize(runs: list[tuple[float, float]]) -> dict[str, Any]:
    mi = [r[0] for r in runs]
    ma = [r[1] for r in runs]
    return {
        "micro": float(np.mean(mi)),
        "micro_ci90": ci90(mi),
        "micro_sd": float(np.std(mi)),
        "macro": float(np.mean(ma)),
        "macro_ci90": ci90(ma),
        "runs": len(runs),
    }


def paper_row(dataset: str, method: str, dim: int) -> dict[str, Any] | None:
    res = C.paper_results()
    if res is None or dataset not in PAPER_KEY:
        return None
    key, col = PAPER_KEY[dataset]
    try:
        r = res["classification"][key][method][str(dim)][col]
    except KeyError:
        return None
    return {
        "micro": r["micro"],
        "micro_ci90": r["micro_ci"],
        "macro": r["macro"],
        "macro_ci90": r["macro_ci"],
    }


def task_nc(data: Data, args: argparse.Namespace, out: Results) -> None:
    frac = args.fraction if args.fraction else FRACTIONS.get(data.name, 0.1)
    rows = []
    for dim in args.dims:
        for method in args.methods:
            is_ours = method.startswith("ie-")
            if not is_ours and dim not in args.peer_dims.get(method, args.dims):
                continue
            seeds = range(args.seeds if is_ours else args.peer_seeds)
            classifiers = [("std", args.C, True)]
            if is_ours and method == "ie-p+r":
                classifiers.append(("raw", 1.0, False))
            runs: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in classifiers}
            times = []
            try:
                for seed in seeds:
                    x, secs = embed(
                        data,
                        method,
                        dim,
                        seed,
                        args.eps,
                        normalize=args.normalize,
                        threads=args.threads,
                    )
                    times.append(secs)
                    for split in range(args.splits):
                        for cname, c, scale in classifiers:
                            runs[cname].append(classify(x, data.y, frac, split, c, scale))
            except Exception as e:  # a peer that fails is recorded, not fatal
                rec = {
                    "task": "nc",
                    "dataset": data.name,
                    "method": method,
                    "dim": dim,
                    "error": f"{type(e).__name__}: {e}",
                }
                print(f"  {method} d={dim}: FAILED {rec['error']}", flush=True)
                out.add(rec)
                continue
            for cname, c, scale in classifiers:
                rec = {
                    "task": "nc",
                    "dataset": data.name,
                    "method": method,
                    "dim": dim,
                    "eps": args.eps if is_ours else None,
                    "normalize": args.normalize if is_ours else None,
                    "classifier": f"{'StandardScaler+' if scale else 'raw '}LR C={c:g}",
                    "fraction": frac,
                    "splits": args.splits,
                    "seeds": len(seeds),
                    "embed_s": float(np.mean(times)),
                    "threads": args.threads,
                    "embed_us_per_node": 1e6 * float(np.mean(times)) / data.n,
                    **summarize(runs[cname]),
                }
                out.add(rec)
                rows.append(rec)
                print(
                    f"  {data.name} {method} d={dim} {rec['classifier']}: micro "
                    f"{rec['micro']:.2f} ± {rec['micro_ci90']:.2f} macro {rec['macro']:.2f}"
                    f" ({rec['embed_s']:.1f} s)",
                    flush=True,
                )
        for m in ("InstantEmbedding", "FastRP", "DeepWalk", "node2vec", "VERSE"):
            pr = paper_row(data.name, m, dim)
            if pr:
                rec = {
                    "task": "nc",
                    "dataset": data.name,
                    "method": f"paper:{m}",
                    "dim": dim,
                    "classifier": "paper",
                    **pr,
                }
                out.add(rec)
                rows.append(rec)
        out.save()
    C.print_table(
        rows,
        [
            "dataset",
            "method",
            "dim",
            "classifier",
            "micro",
            "micro_ci90",
            "macro",
            "macro_ci90",
            "embed_s",
        ],
    )


# --------------------------------------------------------------------------- link prediction
def edge_split(u: np.ndarray, v: np.ndarray, n: int, seed: int, max_edges: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    m = len(u)
    perm = rng.permutation(m)
    ntest = nval = m // 10
    te, va, tr = perm[:ntest], perm[ntest : ntest + nval], perm[ntest + nval :]
    te, va = te[:max_edges], va[:max_edges]
    existing = set((u * n + v).tolist())

    def nonedges(k: int) -> np.ndarray:
        out: list[tuple[int, int]] = []
        while len(out) < k:
            a = rng.integers(0, n, 2 * k)
            b = rng.integers(0, n, 2 * k)
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            for x, y in zip(lo.tolist(), hi.tolist()):
                if x != y and x * n + y not in existing:
                    out.append((x, y))
                    existing.add(x * n + y)
                    if len(out) == k:
                        break
        return np.asarray(out, dtype=np.int64)

    return {
        "train": (u[tr], v[tr]),
        "val": (np.stack([u[va], v[va]], 1), nonedges(len(va))),
        "test": (np.stack([u[te], v[te]], 1), nonedges(len(te))),
    }


def edge_features(x: np.ndarray, pairs: np.ndarray, op: str) -> np.ndarray:
    a, b = x[pairs[:, 0]].astype(np.float64), x[pairs[:, 1]].astype(np.float64)
    if op == "hadamard":
        return a * b
    if op == "average":
        return (a + b) / 2
    if op == "l1":
        return np.abs(a - b)
    if op == "l2":
        return (a - b) ** 2
    if op == "dot":
        return (a * b).sum(1, keepdims=True)
    if op == "cosine":
        na = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        return ((a * b).sum(1) / np.where(na > 0, na, 1.0))[:, None]
    raise ValueError(op)


def lp_auc(x: np.ndarray, split: dict[str, Any], op: str) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def xy(part: str) -> tuple[np.ndarray, np.ndarray]:
        pos, neg = split[part]
        f = np.vstack([edge_features(x, pos, op), edge_features(x, neg, op)])
        return f, np.r_[np.ones(len(pos)), np.zeros(len(neg))]

    fv, yv = xy("val")
    ft, yt = xy("test")
    clf = make_pipeline(
        StandardScaler(), LogisticRegression(C=1.0, solver="liblinear", max_iter=1000)
    )
    clf.fit(fv, yv)
    return 100 * float(roc_auc_score(yt, clf.decision_function(ft)))


def task_lp(data: Data, args: argparse.Namespace, out: Results) -> None:
    import instant_embedding as ie

    split = edge_split(data.u, data.v, data.n, 7, args.lp_max_edges)
    tu, tv = split["train"]
    gtrain = ie.Graph.from_edges(tu, tv, num_nodes=data.n)
    rows = []
    for dim in args.lp_dims:
        for method in args.methods:
            if not method.startswith("ie-") and dim not in args.peer_dims.get(method, [dim]):
                continue
            if method in args.lp_skip.get(data.name, ()):
                continue
            rec: dict[str, Any] = {
                "task": "lp",
                "dataset": data.name,
                "method": method,
                "dim": dim,
                "val_edges": len(split["val"][0]),
                "test_edges": len(split["test"][0]),
                "train_edges": len(tu),
            }
            try:
                x, secs = embed(data, method, dim, 0, args.eps, graph=gtrain, u=tu, v=tv)
                rec["embed_s"] = secs
                for op in OPS:
                    rec[op] = lp_auc(x, split, op)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {e}"
            out.add(rec)
            rows.append(rec)
            print(
                "  "
                + json.dumps(
                    {k: (round(v, 2) if isinstance(v, float) else v) for k, v in rec.items()}
                ),
                flush=True,
            )
        out.save()
    C.print_table(rows, ["dataset", "method", "dim", *OPS, "embed_s"])


# --------------------------------------------------------------------------- eps study
def eps_worker(argv: list[str]) -> None:
    """Subprocess: embed one (dataset, eps, value) and print time/memory + embedding path."""
    name, eps, value, dim, npy = argv[0], float(argv[1]), argv[2], int(argv[3]), argv[4]
    import instant_embedding as ie

    data = smoke_dataset() if name == "smoke" else None
    g = data.graph if data else ie.Graph.open(C.dataset_graph(name))
    base = C.rss_anon()
    hwm0 = C.peak_rss()
    m = ie.InstantEmbedding(dim, eps=eps, value=value, normalize="none")
    t = time.perf_counter()
    x = m.embed_all(g, threads=2)
    secs = time.perf_counter() - t
    np.save(npy, x)
    peak = C.peak_rss()
    print(
        json.dumps(
            {
                "embed_s": secs,
                "us_per_node": 1e6 * secs / g.num_nodes,
                "peak_rss_mib": peak / 2**20,
                "peak_growth_mib": (peak - max(hwm0, base)) / 2**20,
                "output_mib": x.nbytes / 2**20,
            }
        )
    )


def task_eps(data: Data, args: argparse.Namespace, out: Results) -> None:
    rows = []
    frac = args.fraction if args.fraction else FRACTIONS.get(data.name, 0.1)
    for value in ("p+r", "p"):
        for eps in args.eps_list:
            with tempfile.TemporaryDirectory() as td:
                npy = os.path.join(td, "x.npy")
                cmd = [
                    sys.executable,
                    __file__,
                    "--eps-worker",
                    data.name,
                    repr(eps),
                    value,
                    str(args.eps_dim),
                    npy,
                ]
                try:
                    r = subprocess.run(
                        cmd, capture_output=True, text=True, check=True, timeout=args.eps_timeout
                    )
                except subprocess.TimeoutExpired:
                    rec = {
                        "task": "eps",
                        "dataset": data.name,
                        "value": value,
                        "eps": eps,
                        "error": f"timeout after {args.eps_timeout} s",
                    }
                    out.add(rec)
                    print(f"  {data.name} {value} eps={eps:g}: timeout", flush=True)
                    continue
                res = json.loads(r.stdout.strip().splitlines()[-1])
                x = np.load(npy)
            runs = [classify(x, data.y, frac, s, args.C, True) for s in range(args.eps_splits)]
            rec = {
                "task": "eps",
                "dataset": data.name,
                "value": value,
                "eps": eps,
                "dim": args.eps_dim,
                "fraction": frac,
                "classifier": f"StandardScaler+LR C={args.C:g}",
                **res,
                **summarize(runs),
            }
            out.add(rec)
            rows.append(rec)
            print(
                f"  {data.name} {value} eps={eps:g}: micro {rec['micro']:.2f} "
                f"{rec['us_per_node']:.1f} us/node peak +{rec['peak_growth_mib']:.0f} MiB",
                flush=True,
            )
            out.save()
    C.print_table(
        rows, ["dataset", "value", "eps", "micro", "macro", "us_per_node", "peak_growth_mib"]
    )


def plot_eps(out: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [r for r in out.records.values() if r.get("task") == "eps" and "micro" in r]
    names = sorted({r["dataset"] for r in recs})
    if not names:
        return
    fig, axes = plt.subplots(len(names), 3, figsize=(13, 3.4 * len(names)), squeeze=False)
    for i, ds in enumerate(names):
        for value, style in (("p+r", "o-"), ("p", "s--")):
            rr = sorted(
                (r for r in recs if r["dataset"] == ds and r["value"] == value),
                key=lambda r: -r["eps"],
            )
            if not rr:
                continue
            e = [r["eps"] for r in rr]
            axes[i][0].plot(e, [r["micro"] for r in rr], style, label=f"value={value}")
            axes[i][1].plot(e, [r["us_per_node"] for r in rr], style, label=f"value={value}")
            axes[i][2].plot(e, [r["peak_growth_mib"] for r in rr], style, label=f"value={value}")
        for j, yl in enumerate(
            ("Micro-F1 (%)", "time per node (us, 2 threads)", "peak RSS growth (MiB)")
        ):
            ax = axes[i][j]
            ax.set_xscale("log")
            ax.invert_xaxis()
            ax.set_xlabel("eps")
            ax.set_ylabel(yl)
            ax.set_title(ds)
            ax.legend(fontsize=8)
            if j == 1:
                ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


# --------------------------------------------------------------------------- umap
def task_umap(data: Data, args: argparse.Namespace, out: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import umap

    x, _ = embed(data, "ie-p+r", 512, 0, args.eps)
    t = time.perf_counter()
    z = umap.UMAP(n_components=2, random_state=0, metric="cosine").fit_transform(x)
    secs = time.perf_counter() - t
    lab = np.argmax(data.y, 1)
    fig, ax = plt.subplots(figsize=(7, 7))
    ax.scatter(z[:, 0], z[:, 1], c=lab, cmap="tab10", s=3)
    ax.set_title(f"UMAP of InstantEmbedding (p+r, d=512, eps={args.eps:g}) on {data.name}")
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.add({"task": "umap", "dataset": data.name, "png": C.repo_relative(path), "umap_s": secs})
    out.save()
    print(f"wrote {path}")


# --------------------------------------------------------------------------- results
class Results:
    """Records keyed by their identifying fields, merged into an existing JSON file."""

    KEY = ("task", "dataset", "method", "dim", "classifier", "value", "eps", "normalize", "splits")
    # What a record made before a key field existed had (ours was never normalised).
    KEY_DEFAULTS = {"normalize": "none"}

    def __init__(self, path: Path, meta: dict[str, Any], merge: bool) -> None:
        self.path, self.meta = path, meta
        self.records: dict[str, dict[str, Any]] = {}
        if merge and path.is_file():
            with open(path) as f:
                old = json.load(f)
            for r in old.get("records", []):
                self.records[self._key(r)] = r
            self.meta["previous_runs"] = old.get("runs", [])

    def _key(self, r: dict[str, Any]) -> str:
        ours = str(r.get("method", "")).startswith("ie-") or r.get("task") == "eps"
        return json.dumps([r.get(k, self.KEY_DEFAULTS.get(k) if ours else None) for k in self.KEY])

    def add(self, rec: dict[str, Any]) -> None:
        rec = dict(rec)
        rec["run_date"] = self.meta["machine"]["date"]
        self.records[self._key(rec)] = rec

    def save(self) -> None:
        runs = [
            *self.meta.get("previous_runs", []),
            {k: v for k, v in self.meta.items() if k != "previous_runs"},
        ]
        C.write_json(self.path, {"runs": runs, "records": list(self.records.values())})


# --------------------------------------------------------------------------- main
def _list(t: type) -> Any:
    return lambda s: [t(x) for x in s.split(",") if x]


def _peer_dims(s: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for item in filter(None, s.split(";")):
        k, v = item.split("=")
        out[k] = [int(x) for x in v.split(",")]
    return out


def _skip(s: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in filter(None, s.split(";")):
        k, v = item.split("=")
        out[k] = v.split(",")
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--eps-worker":
        eps_worker(argv[1:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny generated graph, all tasks, results in a temp dir",
    )
    ap.add_argument("--tasks", type=_list(str), default=["nc"], help="nc,lp,eps,umap")
    ap.add_argument(
        "--datasets",
        type=_list(str),
        default=["blogcatalog", "ppi_homo_sapiens_lcc", "cora", "pubmed"],
    )
    ap.add_argument("--dims", type=_list(int), default=[512])
    ap.add_argument(
        "--methods",
        type=_list(str),
        default=[
            "ie-p+r",
            "ie-p",
            "ie-log1p-s2",
            "fastrp",
            "prone",
            "cleora",
            "deepwalk",
            "node2vec",
        ],
        help="ie-p+r, ie-p, ie-log1p (each optionally -s<k> for smooth=k, e.g. "
        "ie-log1p-s2) and peers " + ",".join(P.PEERS),
    )
    ap.add_argument(
        "--peer-dims",
        type=_peer_dims,
        default=_peer_dims("fastrp=512;prone=128,512;cleora=512;deepwalk=128;node2vec=128"),
        help="dims each peer runs at, e.g. 'fastrp=512;prone=128,512'",
    )
    ap.add_argument(
        "--fraction",
        type=float,
        default=None,
        help="label fraction (default: 10%% on every data set)",
    )
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=5, help="hash seeds of ours")
    ap.add_argument("--peer-seeds", type=int, default=1, help="random seeds of each peer")
    ap.add_argument(
        "--eps",
        type=float,
        default=1e-5,
        help="eps of ours (default 1e-5: the published figures; the library's default is 1e-4)",
    )
    ap.add_argument(
        "--normalize",
        choices=["ln_n", "none"],
        default="none",
        help="output scale of ours in the node-classification task (default none: "
        "the published figures; ln_n: the library's default)",
    )
    ap.add_argument("--C", type=float, default=0.003, help="LR inverse regularisation")
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads of the node-classification embeddings (ours and peers)",
    )
    ap.add_argument("--lp-dims", type=_list(int), default=[128])
    ap.add_argument("--lp-max-edges", type=int, default=20000)
    ap.add_argument(
        "--lp-skip",
        type=_skip,
        default=_skip(""),
        help="methods to skip per data set, e.g. 'soc_slashdot0902=deepwalk'",
    )
    ap.add_argument("--eps-list", type=_list(float), default=[1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
    ap.add_argument("--eps-dim", type=int, default=512)
    ap.add_argument("--eps-splits", type=int, default=3)
    ap.add_argument("--eps-timeout", type=float, default=900)
    ap.add_argument("--out", type=Path, default=C.RESULTS / "quality.json")
    ap.add_argument("--docs", type=Path, default=C.REPO / "docs", help="where PNGs go")
    ap.add_argument("--no-merge", action="store_true", help="do not merge into --out")
    ap.add_argument(
        "--markdown",
        action="store_true",
        help="only print the tables of --out as markdown (runs nothing)",
    )
    args = ap.parse_args(argv)
    if args.markdown:
        markdown(args.out)
        return

    tmp = None
    if args.smoke:
        tmp = tempfile.mkdtemp(prefix="quality_smoke_")
        args.out, args.docs = Path(tmp) / "quality.json", Path(tmp)
        args.tasks = ["nc", "lp", "eps"] + (["umap"] if "umap" in args.tasks else [])
        args.datasets, args.dims, args.lp_dims = ["smoke"], [32], [32]
        args.seeds, args.splits, args.eps_list, args.eps_dim = 2, 2, [1e-2, 1e-4], 32
        args.eps_splits, args.fraction = 2, 0.3
        args.peer_dims = {p: [32] for p in P.PEERS}
        args.methods = [m for m in args.methods if m.startswith("ie-") or _importable(m)]
        args.lp_max_edges = 100
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))
    meta = {
        "machine": C.machine_info(),
        "command": " ".join(["python benches/quality.py", *argv]),
        "threads": args.threads,
        "args": {
            k: (C.repo_relative(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
        },
    }
    out = Results(args.out, meta, merge=not args.no_merge and not args.smoke)
    for name in args.datasets:
        data = smoke_dataset() if name == "smoke" else load_dataset(name)
        print(f"== {name}: n={data.n} m={len(data.u)}", flush=True)
        if "nc" in args.tasks and data.y is not None:
            task_nc(data, args, out)
        if "lp" in args.tasks:
            task_lp(data, args, out)
        if "eps" in args.tasks and data.y is not None:
            task_eps(data, args, out)
        if "umap" in args.tasks and data.y is not None and not args.smoke:
            task_umap(data, args, out, args.docs / f"umap_{name}.png")
    if "eps" in args.tasks and not args.smoke:  # smoke runs never touch docs/
        plot_eps(out, args.docs / "fig3_eps.png")
    out.save()
    print(f"results: {args.out}")
    if args.smoke:
        check_smoke(out)


def _f(x: Any, ci: Any = None) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if ci is None or (isinstance(ci, float) and ci != ci):
        return f"{x:.2f}"
    return f"{x:.2f} ± {ci:.2f}"


def markdown(path: Path) -> None:
    """Print the records of a results file as markdown tables (for docs/QUALITY.md)."""
    with open(path) as f:
        recs = json.load(f)["records"]
    nc = [r for r in recs if r["task"] == "nc"]
    print(
        "| dataset | method | d | classifier | Micro-F1 | Macro-F1 | splits x seeds "
        "| embed s (2 thr) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(
        nc, key=lambda r: (r["dataset"], r["dim"], r["method"].startswith("paper"), r["method"])
    ):
        if "error" in r:
            print(f"| {r['dataset']} | {r['method']} | {r['dim']} | | failed: {r['error']} | | | |")
            continue
        emb = f"{r['embed_s']:.2f}" if "embed_s" in r else "-"
        runs = f"{r['splits']} x {r['seeds']}" if "splits" in r else "-"
        method = r["method"]
        if method.startswith("ie-") and (r.get("eps"), r.get("normalize", "none")) != (
            1e-5,
            "none",
        ):
            method += f" (eps {r.get('eps'):g}, normalize {r.get('normalize', 'none')})"
        print(
            f"| {r['dataset']} | {method} | {r['dim']} | {r['classifier']} | "
            f"{_f(r['micro'], r.get('micro_ci90'))} | {_f(r['macro'], r.get('macro_ci90'))} "
            f"| {runs} | {emb} |"
        )
    lp = [r for r in recs if r["task"] == "lp"]
    if lp:
        print()
        print("| dataset | method | d | " + " | ".join(OPS) + " | embed s | val/test edges |")
        print("|---|---|---|" + "---|" * len(OPS) + "---|---|")
        for r in lp:
            if "error" in r:
                print(f"| {r['dataset']} | {r['method']} | {r['dim']} | failed: {r['error']} |")
                continue
            print(
                f"| {r['dataset']} | {r['method']} | {r['dim']} | "
                + " | ".join(_f(r[o]) for o in OPS)
                + f" | {r['embed_s']:.2f} | {r['val_edges']}/{r['test_edges']} |"
            )
    ep = [r for r in recs if r["task"] == "eps"]
    if ep:
        print()
        print(
            "| dataset | value | eps | Micro-F1 | Macro-F1 | splits | us/node (2 thr) "
            "| peak RSS growth MiB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in sorted(ep, key=lambda r: (r["dataset"], r["value"], -r["eps"])):
            if "error" in r:
                print(f"| {r['dataset']} | {r['value']} | {r['eps']:g} | {r['error']} | | | | |")
                continue
            print(
                f"| {r['dataset']} | {r['value']} | {r['eps']:g} | "
                f"{_f(r['micro'], r.get('micro_ci90'))} | {_f(r['macro'])} | "
                f"{r.get('runs', '-')} | {r['us_per_node']:.1f} | {r['peak_growth_mib']:.1f} |"
            )


def _importable(peer: str) -> bool:
    mod = {
        "fastrp": "fastrp",
        "prone": "nodevectors",
        "cleora": "pycleora",
        "deepwalk": "gensim",
        "node2vec": "gensim",
    }[peer]
    import importlib.util

    return importlib.util.find_spec(mod) is not None


def check_smoke(out: Results) -> None:
    """The planted labels must be recovered far above chance, links far above AUC 50."""
    recs = list(out.records.values())
    nc = [
        r
        for r in recs
        if r["task"] == "nc"
        and r["method"] == "ie-p+r"
        and r.get("classifier", "").startswith("Standard")
    ]
    lp = [r for r in recs if r["task"] == "lp" and r["method"] == "ie-p+r"]
    ok = bool(nc) and nc[0]["micro"] > 60 and bool(lp) and max(lp[0][op] for op in OPS) > 70
    ok = ok and any(r["task"] == "eps" and "micro" in r for r in recs)
    if not ok:
        raise SystemExit("smoke check failed: " + json.dumps(nc + lp))
    print("smoke OK")


if __name__ == "__main__":
    main()
