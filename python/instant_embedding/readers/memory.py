"""Graphs already in memory: scipy.sparse matrices, networkx graphs, pandas DataFrames."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .. import _core
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import Chunk, PathLike, build, need, resolve_columns
from ._options import ReadOptions


def from_scipy(
    matrix: Any,
    *,
    directed: bool | None = None,
    weighted: bool | None = None,
    self_loops: str = "keep",
    output: PathLike | None = None,
) -> Graph:
    """Build a graph from a square scipy.sparse adjacency matrix (any sparse format).

    Entry ``A[i, j]`` is an edge ``i -> j`` with weight ``A[i, j]``. Node ids are
    ``0..n-1`` with ``n = A.shape[0]`` (rows without entries are isolated nodes).

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
    directed : bool, optional
        Default: undirected if the matrix is symmetric, directed otherwise. An undirected
        graph takes each edge once from the upper triangle of a symmetric matrix. With
        ``directed=False`` an unweighted asymmetric matrix is symmetrised (union of both
        directions); a weighted asymmetric one is refused (symmetrise it first, e.g. with
        ``A.maximum(A.T)``).
    weighted : bool, optional
        Default: weighted unless every stored value is 1.
    self_loops : {"keep", "drop"}, default "keep"
        Diagonal entries.
    output : path, optional
        Write a graph file and return it opened; default: an in-memory graph.

    Returns
    -------
    Graph

    Raises
    ------
    ValueError
        A non-square matrix, negative, NaN or infinite values, or a weighted asymmetric
        matrix with ``directed=False``.
    """
    sp = need("scipy.sparse", "scipy", "from_scipy")
    if not sp.issparse(matrix):
        raise TypeError(
            f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}; for an edge "
            "array use from_numpy, for a dense adjacency matrix wrap it in "
            "scipy.sparse.csr_array(dense)"
        )
    src, dst, w, n, directed_out, weighted_out = scipy_edges(
        matrix, directed, weighted, self_loops, "matrix"
    )
    g, _ = build(
        iter([(src, dst, w)]),
        ReadOptions(directed=directed_out),
        output,
        directed=directed_out,
        weighted=weighted_out,
        num_nodes=n,
    )
    return g


def scipy_edges(
    matrix: Any, directed: bool | None, weighted: bool | None, self_loops: str, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, bool, bool]:
    """(src, dst, weights, n, directed, weighted) of a sparse adjacency matrix."""
    sp = need("scipy.sparse", "scipy", "reading a sparse matrix")
    ReadOptions(self_loops=self_loops)  # checks the choice
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{where}: adjacency matrix must be square, got shape {matrix.shape}")
    a = sp.csr_matrix(matrix)
    if a.dtype.kind == "c":
        raise ValueError(f"{where}: complex matrix values cannot be edge weights")
    a = a.astype(np.float32 if a.dtype.kind == "b" else np.float64)
    a.sum_duplicates()
    a.eliminate_zeros()
    n = a.shape[0]
    coo = a.tocoo()
    bad = np.flatnonzero(~(np.isfinite(coo.data) & (coo.data > 0)))
    if len(bad):
        i = int(bad[0])
        raise GraphFormatError(
            f"{where}: entry ({coo.row[i]}, {coo.col[i]}) = {coo.data[i].item()!r}; edge weights "
            "must be finite and > 0"
        )
    if weighted is None:
        weighted = bool(a.data.size) and not bool(np.all(a.data == 1))
    p = a if weighted else a.astype(bool)
    symmetric = (p != p.T).nnz == 0
    if directed is None:
        directed = not symmetric
    if not directed:
        if symmetric:
            a = sp.triu(a, format="csr")
        elif weighted:
            raise ValueError(
                f"{where}: the weighted matrix is not symmetric, so it cannot be read as an "
                "undirected graph; pass directed=True, or symmetrise it first "
                "(e.g. A.maximum(A.T) or A + A.T)"
            )
    coo = a.tocoo()
    src, dst = coo.row.astype(np.int64), coo.col.astype(np.int64)
    w = coo.data.astype(np.float64) if weighted else None
    if self_loops == "drop":
        keep = src != dst
        src, dst, w = src[keep], dst[keep], None if w is None else w[keep]
    return src, dst, w, n, bool(directed), bool(weighted)


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

    Parameters
    ----------
    graph : networkx.Graph
    weight : str or None, default "weight"
        Edge attribute holding the weight (missing on an edge: 1). None ignores weights.
    weighted : bool, optional
        Default: weighted iff some edge has the ``weight`` attribute.
    self_loops : {"keep", "drop"}, default "keep"
    merge : {"sum", "max"}, default "sum"
    output : path, optional
        Write a graph file and return it opened; default: an in-memory graph.

    Returns
    -------
    Graph
    """
    if not (hasattr(graph, "is_directed") and hasattr(graph, "edges") and hasattr(graph, "nodes")):
        raise TypeError(f"from_networkx needs a networkx graph, got {type(graph).__name__}")
    try:  # the kernel's id boundary: all int or all str
        nodes = _core.node_ids(list(graph.nodes), "auto", "networkx graph", "node", 0)
    except GraphFormatError as e:
        raise TypeError(f"{e}; relabel first, e.g. networkx.relabel_nodes(G, str)") from None
    edges = list(graph.edges(data=True))
    if weight is None:
        weighted = False
    elif weighted is None:
        weighted = any(weight in d for _, _, d in edges)
    s, t = (
        _core.node_ids([e[i] for e in edges], "auto", "networkx graph", "edge", 0) for i in (0, 1)
    )
    w = None
    if weighted:
        ws = np.asarray([d.get(weight, 1.0) for _, _, d in edges], dtype=object)
        w = _core.edge_weights(ws, "networkx graph", 0, str(weight))
    g, _ = build(
        iter([(s, t, w)]),
        ReadOptions(self_loops=self_loops, merge=merge),
        output,
        directed=bool(graph.is_directed()),
        weighted=bool(weighted),
        nodes=nodes,
    )
    return g


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

    Parameters
    ----------
    df : pandas.DataFrame or iterable of DataFrames
        E.g. ``pd.read_csv(path, chunksize=1_000_000)``: chunks are streamed to the
        out-of-core builder when ``output`` is given.
    src, dst : str or int, optional
        Column names (or positions) of the endpoints. Default: the first pair of common
        names (src/dst, source/target, source/destination, from/to, u/v, node1/node2, in any
        case), else the first two columns, as ``instant-embedding convert`` does; a column
        without a name (``""`` or pandas' ``Unnamed: 0``, an index written by ``to_csv``) is
        skipped.
    weight : str or int, optional
        Weight column; default: a column named "weight" (or "weights", "w") if present,
        unless ``weighted=False``.
    directed : bool, default False
    weighted : bool, optional
        Default: weighted iff a weight column is given or named "weight", as in
        :func:`convert`.
    id_kind : {"auto", "int", "str"}, default "auto"
        "str" keeps numeric-looking ids as strings; "int" parses string ids as integers.
    self_loops, merge, output, memory_limit, tmp_dir
        As in :func:`convert`.

    Returns
    -------
    Graph
    """
    pd = need("pandas", "pandas", "from_pandas")
    opts = ReadOptions(
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
    if weighted is None:
        # As convert reads a table: a column named "weight" is the weight unless weighted=False.
        names = [str(c) for c in first.columns]
        weighted = resolve_columns(names, src, dst, weight, None, "DataFrame")[2] is not None
    frames = itertools.chain([first], frames)
    return build(
        _pandas_chunks(frames, src, dst, weight, bool(weighted), opts.id_kind, "DataFrame"),
        opts,
        output,
        directed=bool(directed),
        weighted=bool(weighted),
    )[0]


def _pandas_chunks(
    frames: Iterable[Any], src: Any, dst: Any, weight: Any, weighted: bool, id_kind: str, where: str
) -> Iterator[Chunk]:
    pd = need("pandas", "pandas", "from_pandas")
    row0 = 0
    cols: tuple[int, int, int | None] | None = None
    for frame in frames:
        names = [str(c) for c in frame.columns]
        if cols is None:
            cols = resolve_columns(names, src, dst, weight, weighted, where)
        s_i, d_i, w_i = cols
        s, d = (_pandas_ids(frame.iloc[:, i], id_kind, where, names[i], row0) for i in (s_i, d_i))
        w = None
        if weighted and w_i is not None:
            wcol = frame.iloc[:, w_i]
            numeric = pd.api.types.is_numeric_dtype(wcol.dtype)
            wv = (
                wcol.to_numpy(dtype=np.float64, na_value=np.nan)
                if numeric
                else wcol.to_numpy(object)
            )
            w = _core.edge_weights(wv, where, row0, names[w_i])
        yield s, d, w
        row0 += len(frame)


def _pandas_ids(col: Any, id_kind: str, where: str, name: str, row0: int) -> Any:
    if col.hasnans:  # None: the kernel names the first missing row
        values = col.to_numpy(dtype=object, na_value=None)
    elif getattr(col.dtype, "kind", "O") in "iu" and not isinstance(col.dtype, np.dtype):
        values = col.to_numpy(dtype=np.int64 if col.dtype.kind == "i" else np.uint64)
    else:
        values = col.to_numpy() if isinstance(col.dtype, np.dtype) else col.to_numpy(dtype=object)
    return _core.node_ids(values, id_kind, where, name, row0)
