"""Graphs already in memory: scipy.sparse matrices, networkx graphs, pandas DataFrames."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .. import _core
from .._core import ReadOptions
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import Chunk, PathLike, build, need


def from_scipy(
    matrix: Any,
    *,
    directed: bool | None = None,
    weighted: bool | None = None,
    self_loops: str = "keep",
    output: PathLike | None = None,
) -> Graph:
    """Build a graph from a square scipy.sparse adjacency matrix (any sparse format).

    Entry ``A[i, j]`` is an edge ``i -> j`` with weight ``A[i, j]``; node ids are ``0..n-1``
    (rows without entries are isolated nodes). ``self_loops`` and ``output`` are as in
    :func:`convert` (no ``output``: an in-memory graph).

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
    directed : bool, optional
        Default: undirected if the matrix is symmetric (each edge once, from the upper
        triangle), directed otherwise. With ``directed=False`` an unweighted asymmetric matrix
        is symmetrised (union of both directions); a weighted one is refused.
    weighted : bool, optional
        Default: weighted unless every stored value is 1.

    Raises
    ------
    ValueError
        A non-square matrix, negative, NaN or infinite values, or a weighted asymmetric
        matrix with ``directed=False`` (symmetrise it first, e.g. with ``A.maximum(A.T)``).
    """
    sp = need("scipy.sparse", "scipy", "from_scipy")
    if not sp.issparse(matrix):
        raise TypeError(
            f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}; for an edge "
            "array use from_numpy, for a dense adjacency matrix wrap it in "
            "scipy.sparse.csr_array(dense)"
        )
    src, dst, w, n, directed, weighted = scipy_edges(matrix, directed, weighted, "matrix")
    opts = ReadOptions(self_loops=self_loops)
    chunks = iter([(src, dst, w)])
    return build(chunks, opts, output, directed=directed, weighted=weighted, num_nodes=n)[0]


def scipy_edges(
    matrix: Any, directed: bool | None, weighted: bool | None, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, bool, bool]:
    """(src, dst, weights, n, directed, weighted) of a sparse adjacency matrix, read by the
    kernel's CSR walk (``_core.csr_edges``: the one ``.bcsr`` files are read with)."""
    sp = need("scipy.sparse", "scipy", "reading a sparse matrix")
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{where}: adjacency matrix must be square, got shape {matrix.shape}")
    if matrix.dtype.kind == "c":
        raise ValueError(f"{where}: complex matrix values cannot be edge weights")
    a = sp.csr_matrix(matrix, dtype=np.float64)
    a.sum_duplicates()
    a.eliminate_zeros()
    indptr, indices = a.indptr.astype(np.uint64), a.indices.astype(np.int64)
    return _core.csr_edges(indptr, indices, a.data, directed, weighted, where)


def from_networkx(
    graph: Any,
    *,
    weight: str | None = "weight",
    weighted: bool | None = None,
    self_loops: str = "keep",
    merge: str = "sum",
    output: PathLike | None = None,
) -> Graph:
    """Build a graph from a networkx graph (Graph, DiGraph, MultiGraph or MultiDiGraph).

    Node ids must be all ints or all strs (relabel other hashables first, e.g. with
    ``networkx.relabel_nodes(G, str)``). Isolated nodes are kept. Directedness follows
    ``graph.is_directed()``; parallel edges of multigraphs are merged by ``merge``.
    ``self_loops``, ``merge`` and ``output`` are as in :func:`convert`.

    Parameters
    ----------
    graph : networkx.Graph
    weight : str or None, default "weight"
        Edge attribute holding the weight (missing on an edge: 1). None ignores weights.
    weighted : bool, optional
        Default: weighted iff some edge has the ``weight`` attribute.
    """
    if not (hasattr(graph, "is_directed") and hasattr(graph, "edges") and hasattr(graph, "nodes")):
        raise TypeError(f"from_networkx needs a networkx graph, got {type(graph).__name__}")
    try:  # the kernel's id boundary: all int or all str
        nodes = _core.node_ids(list(graph.nodes), "auto", "networkx graph", "node", 0)
    except GraphFormatError as e:
        raise TypeError(f"{e}; relabel first, e.g. networkx.relabel_nodes(G, str)") from None
    edges = list(graph.edges(data=True))
    if weighted is None:
        weighted = weight is not None and any(weight in d for _, _, d in edges)
    weighted = bool(weighted) and weight is not None
    s, t = (
        _core.node_ids([e[i] for e in edges], "auto", "networkx graph", "edge", 0) for i in (0, 1)
    )
    w = None
    if weighted:
        ws = np.asarray([d.get(weight, 1.0) for _, _, d in edges], dtype=object)
        w = _core.edge_weights(ws, "networkx graph", 0, str(weight))
    opts = ReadOptions(self_loops=self_loops, merge=merge)
    directed = bool(graph.is_directed())
    return build(
        iter([(s, t, w)]), opts, output, directed=directed, weighted=weighted, nodes=nodes
    )[0]


def from_pandas(
    df: Any,
    src: str | int | None = None,
    dst: str | int | None = None,
    weight: str | int | None = None,
    *,
    directed: bool = False,
    weighted: bool | None = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    output: PathLike | None = None,
    memory_limit: int | str | None = None,
    tmp_dir: PathLike | None = None,
) -> Graph:
    """Build a graph from a pandas DataFrame of edges, or an iterable of DataFrame chunks.

    The columns are chosen by the rule ``convert`` reads a table's header with; ``id_kind``,
    ``self_loops``, ``merge``, ``output``, ``memory_limit`` and ``tmp_dir`` are as in
    :func:`convert`.

    Parameters
    ----------
    df : pandas.DataFrame or iterable of DataFrames
        E.g. ``pd.read_csv(path, chunksize=1_000_000)``: chunks are streamed to the
        out-of-core builder when ``output`` is given.
    src, dst : str or int, optional
        Column names (or positions) of the endpoints. Default: the first pair of common
        names (src/dst, source/target, from/to, u/v, ...), else the first two columns; a
        column without a name (``""`` or ``Unnamed: 0``, an index written by ``to_csv``) is
        skipped.
    weight : str or int, optional
        Weight column; default: a column named "weight" (or "weights", "w") if present,
        unless ``weighted=False``.
    directed : bool, default False
    weighted : bool, optional
        Default: weighted iff a weight column is given or named "weight".
    """
    pd = need("pandas", "pandas", "from_pandas")
    opts = ReadOptions(
        src_col=src,
        dst_col=dst,
        weight_col=weight,
        weighted=weighted,
        directed=directed,
        id_kind=id_kind,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )
    frames: Iterator[Any] = iter([df] if isinstance(df, pd.DataFrame) else df)
    first = next(frames, None)
    if first is None:
        raise GraphFormatError("DataFrame: no frames given")
    cols = _core.table_columns([str(c) for c in first.columns], opts, "DataFrame")
    chunks = _pandas_chunks(itertools.chain([first], frames), cols, opts.id_kind)
    return build(chunks, opts, output, directed=directed, weighted=cols[2] is not None)[0]


def _pandas_chunks(
    frames: Iterable[Any], cols: tuple[int, int, int | None], id_kind: str
) -> Iterator[Chunk]:
    row0 = 0
    for frame in frames:
        names = [str(c) for c in frame.columns]
        s, d = (
            _core.node_ids(frame.iloc[:, i], id_kind, "DataFrame", names[i], row0) for i in cols[:2]
        )
        w = None
        if cols[2] is not None:
            w = _core.edge_weights(frame.iloc[:, cols[2]], "DataFrame", row0, names[cols[2]])
        yield s, d, w
        row0 += len(frame)
