""".npy edge arrays (memory-mapped files) and numpy edge arrays in memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import _core
from .._core import ReadOptions
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import CHUNK_EDGES, Chunk, Output, PathLike, build, build_into
from ._convert import register


def from_numpy(
    edges: Any,
    *,
    directed: bool = False,
    weighted: bool | None = None,
    num_nodes: int | None = None,
    self_loops: str = "keep",
    merge: str = "sum",
    output: PathLike | None = None,
    memory_limit: int | str | None = None,
) -> Graph:
    """Build a graph from a numpy edge array.

    ``self_loops``, ``merge``, ``output`` and ``memory_limit`` are as in :func:`convert` (no
    ``output``: an in-memory graph).

    Parameters
    ----------
    edges : ndarray, shape (k, 2) or (k, 3)
        One edge per row: ``src, dst`` integer ids, and a weight in the third column if
        present. A float array is accepted when its id columns hold whole numbers. A
        ``numpy.memmap`` (e.g. ``np.load(path, mmap_mode="r")``) is streamed in chunks when
        ``output`` is given.
    directed : bool, default False
    weighted : bool, optional
        Default: weighted iff the array has a third column.
    num_nodes : int, optional
        Ids are ``0..num_nodes-1`` (keeps isolated nodes); otherwise the ids found.

    Raises
    ------
    GraphFormatError
        Non-integer ids, invalid weights (NaN, infinite, <= 0), with the row number.
    """
    a = edges if isinstance(edges, np.ndarray) else np.asarray(edges)
    opts = ReadOptions(self_loops=self_loops, merge=merge, memory_limit=memory_limit)
    weighted = _edge_array(a, weighted, "edges")
    chunks = _numpy_chunks(a, weighted, "edges")
    return build(chunks, opts, output, directed=directed, weighted=weighted, num_nodes=num_nodes)[0]


def _edge_array(a: np.ndarray, weighted: bool | None, where: str) -> bool:
    """Whether the edge array ``a``, checked to be ``(k, 2)`` or ``(k, 3)``, is weighted."""
    if a.ndim != 2 or a.shape[1] not in (2, 3):
        raise GraphFormatError(
            f"{where}: expected an edge array of shape (k, 2) or (k, 3), got {a.shape}"
        )
    if weighted and a.shape[1] != 3:
        raise ValueError(f"{where}: weighted=True needs a third (weight) column")
    return a.shape[1] == 3 if weighted is None else bool(weighted)


def _numpy_chunks(a: np.ndarray, weighted: bool, where: str) -> Iterator[Chunk]:
    for start in range(0, a.shape[0], CHUNK_EDGES):
        block = np.asarray(a[start : start + CHUNK_EDGES])
        s, d = (_core.node_ids(block[:, i], "int", where, str(i), start) for i in (0, 1))
        yield s, d, _core.edge_weights(block[:, 2], where, start, "2") if weighted else None


def read_npy(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Streams a memory-mapped ``(k, 2)`` or ``(k, 3)`` edge array in slices."""
    try:
        a = np.load(paths[0], mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise GraphFormatError(f"{paths[0]}: not a readable .npy array: {e}") from None
    weighted = _edge_array(a, opts.weighted, paths[0])
    how = {"directed": bool(opts.directed), "weighted": weighted, "require_edges": paths[0]}
    return build_into(_numpy_chunks(a, weighted, paths[0]), opts, out, **how)


register("npy", read_npy)
