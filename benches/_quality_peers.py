"""Peer embedding methods for ``benches/quality.py`` (benchmark-only dependencies).

Every peer takes the same input, an undirected graph as two int64 endpoint arrays ``u < v``
(each edge once) over node ids ``0..n-1``, and returns an ``(n, dim)`` float32 matrix whose
row ``i`` is node ``i`` (isolated nodes get whatever the peer gives them, or zeros).

- ``fastrp``: the ``fastrp`` package, FastRP with the paper's weights ``[0, 0, 1, 6]``.
- ``prone``: ``nodevectors.ProNE`` (randomised tSVD + Chebyshev spectral propagation).
- ``cleora``: ``pycleora.embed`` with 4 iterations, no whitening (row order fixed up from the
  peer's entity ids).
- ``deepwalk``: uniform random walks (vectorised numpy) + gensim ``Word2Vec`` skip-gram with
  hierarchical softmax (DeepWalk's objective).
- ``node2vec``: second-order biased walks (``p``, ``q``; rejection sampling, vectorised) +
  gensim skip-gram with negative sampling.

Walk budgets are modest (see :data:`WALKS`), smaller than the original papers' (80 walks of
length 40 for DeepWalk, 10 x 80 for node2vec): the machine has two shared cores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PEERS = ("fastrp", "prone", "cleora", "deepwalk", "node2vec")

# Walk settings of the two skip-gram peers (walks per node, walk length, window, epochs).
WALKS: dict[str, Any] = {"walks": 10, "length": 40, "window": 5, "epochs": 1, "p": 1.0, "q": 0.5}


def _csr(u: np.ndarray, v: np.ndarray, n: int) -> Any:
    import scipy.sparse as sp

    rows = np.concatenate([u, v])
    cols = np.concatenate([v, u])
    a = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    a.sort_indices()
    a.data[:] = 1.0
    return a


def embed_peer(
    name: str, u: np.ndarray, v: np.ndarray, n: int, dim: int, seed: int = 0, threads: int = 2
) -> np.ndarray:
    """Embed the graph ``(u, v)`` with peer ``name``; returns ``(n, dim)`` float32."""
    a = _csr(u, v, n)
    if name == "fastrp":
        from fastrp import FastRP

        model = FastRP(dim, weights=[0.0, 0.0, 1.0, 6.0], seed=seed, undirected=False)
        x = np.asarray(model.fit_transform(a))
    elif name == "prone":
        from nodevectors import ProNE

        x = np.asarray(ProNE(n_components=dim).fit_transform(a))
    elif name == "cleora":
        import pycleora

        src = np.repeat(np.arange(n), np.diff(a.indptr))
        keep = src < a.indices
        lines = [f"{s} {t}" for s, t in zip(src[keep].tolist(), a.indices[keep].tolist())]
        graph = pycleora.SparseMatrix.from_iterator(
            iter(lines), "complex::reflexive::node", num_workers=threads
        )
        y = pycleora.embed(
            graph,
            feature_dim=dim,
            num_iterations=4,
            whiten=False,
            seed=seed,
            num_workers=threads,
        )
        x = np.zeros((n, dim), dtype=np.float32)
        x[np.asarray([int(e) for e in graph.entity_ids], dtype=np.int64)] = y
    elif name in ("deepwalk", "node2vec"):
        x = _skipgram(a, n, dim, seed, threads, biased=(name == "node2vec"))
    else:
        raise ValueError(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
    if x.shape != (n, dim):
        raise RuntimeError(f"{name}: got shape {x.shape}, expected {(n, dim)}")
    return np.ascontiguousarray(x, dtype=np.float32)


def random_walks(
    a: Any, walks: int, length: int, seed: int, p: float = 1.0, q: float = 1.0, biased: bool = False
) -> np.ndarray:
    """``walks`` walks of ``length`` nodes from every node (rows of the result).

    Uniform (DeepWalk) or node2vec second-order walks with return parameter ``p`` and in-out
    parameter ``q`` (rejection sampling against the largest of ``1/p, 1, 1/q``). A walk at an
    isolated node stays there.
    """
    rng = np.random.default_rng(seed)
    n = a.shape[0]
    ip = a.indptr.astype(np.int64)
    ix = a.indices.astype(np.int64)
    deg = np.diff(ip)
    keys = np.repeat(np.arange(n, dtype=np.int64), deg) * n + ix  # sorted: rows, then cols
    starts = np.tile(np.arange(n, dtype=np.int64), walks)
    out = np.empty((len(starts), length), dtype=np.int64)
    out[:, 0] = starts
    wmax = max(1.0 / p, 1.0, 1.0 / q)

    def step(cur: np.ndarray) -> np.ndarray:
        d = deg[cur]
        r = (rng.random(len(cur)) * np.maximum(d, 1)).astype(np.int64)
        return np.where(d > 0, ix[np.minimum(ip[cur] + r, len(ix) - 1)], cur)

    for t in range(1, length):
        cur = out[:, t - 1]
        if not biased or t == 1:
            out[:, t] = step(cur)
            continue
        prev = out[:, t - 2]
        nxt = np.empty_like(cur)
        todo = np.arange(len(cur))
        while len(todo):
            c, pr = cur[todo], prev[todo]
            x = step(c)
            k = pr * n + x
            pos = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
            w = np.where(x == pr, 1.0 / p, np.where(keys[pos] == k, 1.0, 1.0 / q))
            ok = (rng.random(len(todo)) * wmax < w) | (deg[c] == 0)
            nxt[todo[ok]] = x[ok]
            todo = todo[~ok]
        out[:, t] = nxt
    return out


def _skipgram(a: Any, n: int, dim: int, seed: int, threads: int, biased: bool) -> np.ndarray:
    from gensim.models import Word2Vec

    w = WALKS
    walks = random_walks(a, w["walks"], w["length"], seed, p=w["p"], q=w["q"], biased=biased)
    sentences = walks.tolist()
    del walks
    model = Word2Vec(
        sentences,
        vector_size=dim,
        window=w["window"],
        min_count=0,
        sg=1,
        hs=0 if biased else 1,
        negative=5 if biased else 0,
        workers=threads,
        epochs=w["epochs"],
        seed=seed,
    )
    x = np.zeros((n, dim), dtype=np.float32)
    keys = np.asarray(model.wv.index_to_key, dtype=np.int64)
    x[keys] = model.wv.vectors
    return x
