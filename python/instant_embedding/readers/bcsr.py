"""VERSE / XGFS ``.bcsr`` binary CSR files (memory-mapped, read in row slices)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._progress import ByteProgress
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import CHUNK_EDGES, Chunk, PathLike, build, check_weights
from ._options import ReadOptions
from ._registry import register


@dataclass
class _Bcsr:
    nv: int
    ne: int
    offsets: np.ndarray  # int32[nv] row starts
    edges: np.ndarray  # int32[ne]
    weights: np.ndarray | None  # float32[ne]

    def row_end(self, i: int) -> int:
        return int(self.offsets[i]) if i < self.nv else self.ne


def _read_bcsr(path: PathLike) -> _Bcsr:
    """Memory-map a VERSE/XGFS ``.bcsr`` file after validating its header and size."""
    p = os.fspath(path)
    size = os.path.getsize(p)
    with open(p, "rb") as f:
        head = f.read(20)
    if len(head) < 4 or head[:4] != b"XGFS":
        raise GraphFormatError(
            f"{p}: not a VERSE .bcsr file (magic {head[:4]!r}, expected b'XGFS')"
        )
    if len(head) < 20:
        raise GraphFormatError(f"{p}: truncated header ({size} bytes; needs 20)")
    nv, ne = (int(x) for x in np.frombuffer(head, dtype="<i8", count=2, offset=4))
    if nv < 0 or ne < 0:
        raise GraphFormatError(f"{p}: negative sizes in header (nv={nv}, ne={ne})")
    if nv > 2**31 or ne > 2**31 - 1:
        raise GraphFormatError(f"{p}: nv={nv}, ne={ne} exceed the int32 limits of the format")
    base = 20 + 4 * nv + 4 * ne
    if size == base:
        weighted = False
    elif size == base + 4 * ne:
        weighted = True
    else:
        raise GraphFormatError(
            f"{p}: file size {size} does not match the header (nv={nv}, ne={ne}): expected "
            f"{base} bytes (unweighted) or {base + 4 * ne} (weighted); truncated or not a "
            ".bcsr file"
        )
    mm = np.memmap(p, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
    offsets = mm[20 : 20 + 4 * nv].view("<i4")
    edges = mm[20 + 4 * nv : base].view("<i4")
    weights = mm[base:].view("<f4") if weighted else None
    if nv:
        if offsets[0] != 0:
            raise GraphFormatError(f"{p}: first row start is {int(offsets[0])}, expected 0")
        step = 1 << 24
        prev = 0
        for a in range(0, nv, step):
            o = np.asarray(offsets[a : a + step], dtype=np.int64)
            diffs = np.diff(np.concatenate([[prev], o]))
            if (diffs < 0).any() or o[-1] > ne:
                i = a + int(np.flatnonzero((diffs < 0) | (o > ne))[0])
                raise GraphFormatError(
                    f"{p}: row starts are not non-decreasing within 0..ne at node {i} "
                    f"(start {int(offsets[i])}, ne={ne})"
                )
            prev = int(o[-1])
    elif ne:
        raise GraphFormatError(f"{p}: ne={ne} edges but no nodes")
    return _Bcsr(nv, ne, offsets, edges, weights)


def _bcsr_chunks(b: _Bcsr, where: str, keep: str, weighted: bool) -> Iterator[Chunk]:
    """Arcs of a .bcsr file in chunks; keep='all' or 'upper' (src <= dst)."""
    nv = b.nv
    row = 0
    while row < nv:
        start = b.row_end(row) if row else 0
        # rows [row, stop) hold about CHUNK_EDGES arcs (at least one row)
        stop = int(np.searchsorted(b.offsets, start + CHUNK_EDGES, side="right"))
        stop = min(max(stop, row + 1), nv)
        end = b.row_end(stop)
        counts = np.diff(np.append(np.asarray(b.offsets[row:stop], dtype=np.int64), end))
        src = np.repeat(np.arange(row, stop, dtype=np.int64), counts)
        dst = np.asarray(b.edges[start:end], dtype=np.int64)
        bad = (dst < 0) | (dst >= nv)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise GraphFormatError(
                f"{where}: edge {start + i} (from node {int(src[i])}) points to node "
                f"{int(dst[i])}, outside 0..{nv - 1}"
            )
        w = None
        if weighted:
            w = check_weights(
                np.asarray(b.weights[start:end], dtype=np.float64)
                if b.weights is not None
                else np.ones(end - start),
                where,
                start,
                None,
                "edge",
            )
        if keep == "upper":
            m = src <= dst
            src, dst = src[m], dst[m]
            w = None if w is None else w[m]
        yield src, dst, w
        row = stop


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _bcsr_symmetric(b: _Bcsr, where: str, weighted: bool) -> bool:
    """Whether the arc multiset equals its transpose (hash-sum test, streaming, O(1) memory).

    Compares the wrapping sums of a 64-bit mixing hash of ``(u, v[, w])`` and of ``(v, u[, w])``
    over all arcs: equal for a symmetric matrix, and unequal with probability ``1 - 2**-64``
    otherwise.
    """
    fwd = np.uint64(0)
    rev = np.uint64(0)
    with np.errstate(over="ignore"):
        for s, d, w in _bcsr_chunks(b, where, "all", weighted):
            su, du = s.astype(np.uint64), d.astype(np.uint64)
            salt = (
                np.uint64(0)
                if w is None
                else _splitmix(w.astype(np.float32).view(np.uint32).astype(np.uint64))
            )
            fwd += np.sum(_splitmix(((su << np.uint64(32)) | du) ^ salt), dtype=np.uint64)
            rev += np.sum(_splitmix(((du << np.uint64(32)) | su) ^ salt), dtype=np.uint64)
    return bool(fwd == rev)


def read_bcsr(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams the arcs of a .bcsr file, after a streaming symmetry test when needed."""
    path = paths[0]
    directed = opts.directed
    b = _read_bcsr(path)
    has_w = b.weights is not None
    weighted = has_w if opts.weighted is None else opts.weighted
    symmetric = None
    if directed is None or not directed:
        symmetric = _bcsr_symmetric(b, path, weighted)
    if directed is None:
        directed = not symmetric
    if directed:
        keep = "all"
    elif symmetric:
        keep = "upper"
    elif weighted:
        raise ValueError(
            f"{path}: the weighted .bcsr graph is not symmetric, so it cannot be read as "
            "undirected; pass directed=True"
        )
    else:
        keep = "all"  # unweighted: the union of both directions
    bar = ByteProgress(b.ne, progress, "arcs")

    def chunks() -> Iterator[Chunk]:
        for c in _bcsr_chunks(b, path, keep, weighted):
            yield c
            bar.set(min(b.ne, bar.done + len(c[0])))

    try:
        return build(
            chunks(), opts, out, directed=bool(directed), weighted=weighted, num_nodes=b.nv
        )
    finally:
        bar.close()


register("bcsr", read_bcsr)
