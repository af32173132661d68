"""A plain numba implementation of InstantEmbedding's push + projection (the in-process reference).

The same algorithm as ``src/embed/ppr.rs`` + ``src/embed/project.rs`` (docs/SPEC.md), written
the obvious way: a reusable dense workspace (residual ``r``, estimate ``p``, a seen flag per
node) reset through a touched list, a FIFO ring queue, node ``w`` pushed while
``r[w] > eps * max(deg(w), 1)``, then the signed-hash projection
``w[dim(j)] += sign(j) * max(ln(x_j * n), 0)`` with each term rounded to a multiple of 2^-32
and summed exactly in integers (any visiting order gives the same sums),
where ``x_j = p_j + r_j`` (``value="p+r"``, the package default) or ``x_j = p_j``
(``value="p"``, the paper's Algorithm 2 literally), each sum divided by ``ln(max(n, 3))``
(``normalize="ln_n"``, the package default) or not (``"none"``) before its rounding to float32.
Float operations happen in the same order as in the Rust kernel, so the embeddings agree bit
for bit (``speed.py`` checks this).

Supports unweighted graphs with implicit or int64 ids (the benchmark graphs).

Use::

    ref = NumbaRef(read_csr(path))        # path: a graph file
    ref.embed(nodes, dim=512, alpha=0.15, eps=1e-4, seed=0)   # (len(nodes), dim) float32
    ref.embed_all(dim, alpha, eps, seed, threads=2)           # (n, dim) float32
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:
    import numba
    from numba import njit, prange
except ImportError:  # pragma: no cover - numba is a benchmark-only dependency
    numba = None

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def available() -> bool:
    return numba is not None


if numba is not None:

    @njit(cache=True, inline="always")
    def splitmix64(x):  # noqa: ANN001, ANN201 - numba
        z = np.uint64(x) + _M1
        z = (z ^ (z >> np.uint64(30))) * _M2
        z = (z ^ (z >> np.uint64(27))) * _M3
        return z ^ (z >> np.uint64(31))

    @njit(cache=True)
    def _push(indptr, indices, seed, alpha, eps, lazy, r, p, seen, touched, queue):  # noqa: ANN001, ANN201
        """Push from ``seed``; returns (touched count, edge updates). Workspace arrays are
        n-sized and must be clean (zero / False) on entry."""
        qcap = queue.shape[0]
        head = 0
        tail = 0
        nt = 0
        pushes = 0
        # deposit(seed, 1.0)
        thr = eps * max(float(indptr[seed + 1] - indptr[seed]), 1.0)
        old = r[seed]
        new = old + 1.0
        r[seed] = new
        if not seen[seed]:
            seen[seed] = True
            touched[nt] = seed
            nt += 1
        if new > thr and old <= thr:
            queue[tail] = seed
            tail = (tail + 1) % qcap
        while head != tail:
            w = queue[head]
            head = (head + 1) % qcap
            s = indptr[w]
            e = indptr[w + 1]
            deg = e - s
            rw = r[w]
            p[w] += alpha * rw
            spread = (1.0 - alpha) * rw
            if lazy:
                spread *= 0.5
                r[w] = spread
                if spread > eps * max(float(deg), 1.0):
                    queue[tail] = w
                    tail = (tail + 1) % qcap
            else:
                r[w] = 0.0
            if deg == 0:
                u = seed
                thr = eps * max(float(indptr[u + 1] - indptr[u]), 1.0)
                old = r[u]
                new = old + spread
                r[u] = new
                if not seen[u]:
                    seen[u] = True
                    touched[nt] = u
                    nt += 1
                if new > thr and old <= thr:
                    queue[tail] = u
                    tail = (tail + 1) % qcap
                continue
            unit = spread / float(deg)
            for k in range(s, e):
                u = indices[k]
                thr = eps * max(float(indptr[u + 1] - indptr[u]), 1.0)
                old = r[u]
                new = old + unit
                r[u] = new
                if not seen[u]:
                    seen[u] = True
                    touched[nt] = u
                    nt += 1
                if new > thr and old <= thr:
                    queue[tail] = u
                    tail = (tail + 1) % qcap
            pushes += deg
        return nt, pushes

    @njit(cache=True)
    def _project(touched, nt, p, r, with_r, keys, has_keys, n, dim, seed, divisor, out):  # noqa: ANN001, ANN201
        """Projection of the touched nodes' mass: terms rounded to multiples of 2^-32 and
        summed exactly in int64 (order-free, as the spec says; no overflow at these sizes),
        each sum divided by ``divisor`` (0: not divided)."""
        acc = np.zeros(dim, dtype=np.int64)
        seed_mix = splitmix64(np.uint64(seed))
        d = np.uint64(dim)
        for i in range(nt):
            j = touched[i]
            pj = p[j] + max(r[j], 0.0) if with_r else p[j]
            if pj > 0.0:
                v = np.log(pj * float(n))
                if v > 0.0:
                    key = np.uint64(keys[j]) if has_keys else np.uint64(j)
                    h = splitmix64(key ^ seed_mix)
                    b = ((h >> np.uint64(32)) * d) >> np.uint64(32)
                    t = np.int64(np.rint(v * 4294967296.0))
                    if (h & np.uint64(1)) == np.uint64(0):
                        acc[b] += t
                    else:
                        acc[b] -= t
        if divisor > 0.0:
            for k in range(dim):
                out[k] = np.float32(float(acc[k]) / 4294967296.0 / divisor)
        else:
            for k in range(dim):
                out[k] = np.float32(float(acc[k]) / 4294967296.0)

    @njit(cache=True)
    def _reset(touched, nt, r, p, seen):  # noqa: ANN001, ANN201
        for i in range(nt):
            u = touched[i]
            r[u] = 0.0
            p[u] = 0.0
            seen[u] = False

    @njit(cache=True)
    def _embed_nodes(
        indptr,
        indices,
        keys,
        has_keys,
        nodes,
        alpha,
        eps,
        lazy,
        with_r,
        seed,  # noqa: ANN001, ANN201
        dim,
        divisor,
        r,
        p,
        seen,
        touched,
        queue,
        out,
    ):
        n = indptr.shape[0] - 1
        total = 0
        for i in range(nodes.shape[0]):
            nt, pushes = _push(
                indptr, indices, nodes[i], alpha, eps, lazy, r, p, seen, touched, queue
            )
            total += pushes
            _project(touched, nt, p, r, with_r, keys, has_keys, n, dim, seed, divisor, out[i])
            _reset(touched, nt, r, p, seen)
        return total

    @njit(cache=True, parallel=True)
    def _embed_all(
        indptr,
        indices,
        keys,
        has_keys,
        alpha,
        eps,
        lazy,
        with_r,
        seed,
        dim,
        divisor,  # noqa: ANN001, ANN201
        chunks,
        out,
    ):
        n = indptr.shape[0] - 1
        nchunks = chunks.shape[0] - 1
        for c in prange(nchunks):
            r = np.zeros(n, dtype=np.float64)
            p = np.zeros(n, dtype=np.float64)
            seen = np.zeros(n, dtype=np.bool_)
            touched = np.empty(n, dtype=np.uint32)
            queue = np.empty(n + 1, dtype=np.uint32)
            nodes = np.arange(chunks[c], chunks[c + 1]).astype(np.uint32)
            _embed_nodes(
                indptr,
                indices,
                keys,
                has_keys,
                nodes,
                alpha,
                eps,
                lazy,
                with_r,
                seed,
                dim,
                divisor,
                r,
                p,
                seen,
                touched,
                queue,
                out[chunks[c] : chunks[c + 1]],
            )


def _with_r(value: str) -> bool:
    if value not in ("p+r", "p"):
        raise ValueError(f"value must be 'p+r' or 'p', got {value!r}")
    return value == "p+r"


def _divisor(normalize: str, n: int) -> float:
    """What each sum is divided by: ``ln(max(n, 3))`` (libm ``log``), or 0 for no division."""
    if normalize not in ("ln_n", "none"):
        raise ValueError(f"normalize must be 'ln_n' or 'none', got {normalize!r}")
    return math.log(max(n, 3)) if normalize == "ln_n" else 0.0


class NumbaRef:
    """The numba reference bound to one graph (the dict from ``_common.read_csr``)."""

    def __init__(self, csr: dict[str, Any]) -> None:
        if numba is None:
            raise ImportError("numba is not installed (pip install -r benches/requirements.txt)")
        if csr["weighted"] or csr["id_kind"] == "utf8":
            raise ValueError("the numba reference supports unweighted graphs with int ids")
        # Copy into RAM: the reference works on plain arrays (the Rust kernel reads the map).
        self.indptr = np.ascontiguousarray(csr["indptr"], dtype=np.int64)
        self.indices = np.ascontiguousarray(csr["indices"], dtype=np.uint32)
        self.n = int(csr["n"])
        ids = csr.get("ids")
        self.has_keys = ids is not None
        self.keys = (
            np.ascontiguousarray(ids).view(np.uint64)
            if ids is not None
            else np.zeros(1, dtype=np.uint64)
        )
        n = self.n
        self._r = np.zeros(n, dtype=np.float64)
        self._p = np.zeros(n, dtype=np.float64)
        self._seen = np.zeros(n, dtype=np.bool_)
        self._touched = np.empty(n, dtype=np.uint32)
        self._queue = np.empty(n + 1, dtype=np.uint32)
        self.last_pushes = 0

    def warmup(self, dim: int = 8) -> None:
        """Compile (or load from numba's cache) both entry points without real work."""
        self.embed(np.zeros(1, dtype=np.uint32), dim)
        _embed_all(
            self.indptr,
            self.indices,
            self.keys,
            self.has_keys,
            0.15,
            1e-4,
            False,
            True,
            np.uint64(0),
            int(dim),
            0.0,
            np.zeros(2, dtype=np.int64),
            np.empty((self.n, dim), dtype=np.float32),
        )

    def workspace_bytes(self) -> int:
        return sum(a.nbytes for a in (self._r, self._p, self._seen, self._touched, self._queue))

    def embed(
        self,
        nodes: np.ndarray,
        dim: int,
        alpha: float = 0.15,
        eps: float = 1e-4,
        seed: int = 0,
        lazy: bool = False,
        value: str = "p+r",
        normalize: str = "ln_n",
    ) -> np.ndarray:
        """Embeddings of internal node indices ``nodes`` (serial), shape (len, dim)."""
        nodes = np.ascontiguousarray(nodes, dtype=np.uint32)
        out = np.empty((len(nodes), dim), dtype=np.float32)
        self.last_pushes = _embed_nodes(
            self.indptr,
            self.indices,
            self.keys,
            self.has_keys,
            nodes,
            float(alpha),
            float(eps),
            bool(lazy),
            _with_r(value),
            np.uint64(seed),
            int(dim),
            _divisor(normalize, self.n),
            self._r,
            self._p,
            self._seen,
            self._touched,
            self._queue,
            out,
        )
        return out

    def embed_all(
        self,
        dim: int,
        alpha: float = 0.15,
        eps: float = 1e-4,
        seed: int = 0,
        lazy: bool = False,
        threads: int = 1,
        value: str = "p+r",
        normalize: str = "ln_n",
    ) -> np.ndarray:
        """All nodes, ``threads`` workers (numba prange over contiguous node chunks)."""
        numba.set_num_threads(int(threads))
        nchunks = max(1, 8 * int(threads))
        chunks = np.linspace(0, self.n, nchunks + 1).astype(np.int64)
        out = np.empty((self.n, dim), dtype=np.float32)
        _embed_all(
            self.indptr,
            self.indices,
            self.keys,
            self.has_keys,
            float(alpha),
            float(eps),
            bool(lazy),
            _with_r(value),
            np.uint64(seed),
            int(dim),
            _divisor(normalize, self.n),
            chunks,
            out,
        )
        return out
