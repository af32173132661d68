"""Getting graphs in: readers of every supported input format into the graph file.

Two kinds of entry points:

- :func:`convert` reads files (text edge lists, CSV/TSV, Parquet files and directories,
  Arrow IPC files, MATLAB ``.mat``, VERSE ``.bcsr``, ``.npy`` edge arrays) and writes a graph
  file atomically. Large inputs are streamed chunk by chunk into the out-of-core builder, so
  the edge list never has to fit in memory.
- ``from_*`` functions take objects already in memory (scipy.sparse, networkx, pandas, Arrow,
  numpy) and return an in-memory :class:`~instant_embedding.Graph`, or write a graph file
  when ``output=`` is given.

Every reader reports bad input as :class:`~instant_embedding.GraphFormatError` (a
``ValueError``) naming the file, the line or row, and the offending text; the output path
never holds a partial file (the graph is written to a temporary file and renamed).
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import lzma
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from .errors import GraphFormatError
from .graph import Graph

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "FORMATS",
    "convert",
    "convert_with_stats",
    "detect_format",
    "from_arrow",
    "from_networkx",
    "from_numpy",
    "from_pandas",
    "from_scipy",
    "parse_size",
    "read_mat",
]

PathLike = str | os.PathLike[str]

#: Default memory budget of the out-of-core builder (bytes).
DEFAULT_MEMORY_LIMIT = 2 * 1024**3

#: Input formats :func:`convert` understands.
FORMATS = ("auto", "edgelist", "csv", "tsv", "parquet", "arrow", "mat", "bcsr", "npy", "webgraph")

_INT64_MAX = np.iinfo(np.int64).max
_CHUNK_EDGES = 1 << 20  # edges per chunk fed to the builder
_SNIFF_LINES = 50

# Common names of edge-list columns, tried in order when the caller names none.
_COLUMN_PAIRS = (
    ("src", "dst"),
    ("source", "target"),
    ("source", "destination"),
    ("from", "to"),
    ("u", "v"),
    ("node1", "node2"),
)
_WEIGHT_NAMES = ("weight", "weights", "w")

Chunk = tuple[Any, Any, Any]  # (src, dst, weights or None): int64 arrays or lists of str


# ====================================================================== small helpers
def _need(module: str, extra: str, what: str) -> Any:
    """Imports an optional dependency or explains which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise ImportError(
            f"{what} needs the optional dependency {top!r}: "
            f"pip install 'instant-embedding[{extra}]' (or pip install {top})"
        ) from None


def parse_size(value: int | str | None) -> int:
    """Parses a memory size: an int (bytes) or a string such as ``"2G"``, ``"512MiB"``, ``"1.5g"``.

    Returns
    -------
    int
        The size in bytes (binary units: ``1K = 1024``).
    """
    if value is None:
        return DEFAULT_MEMORY_LIMIT
    if isinstance(value, bool):
        raise TypeError("memory_limit must be an int or a size string such as '2G'")
    if isinstance(value, (int, np.integer)):
        if value <= 0:
            raise ValueError(f"memory_limit must be > 0, got {value}")
        return int(value)
    if not isinstance(value, str):
        raise TypeError(f"memory_limit must be an int or a size string, got {type(value).__name__}")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", value, re.IGNORECASE)
    if not m:
        raise ValueError(f"invalid size {value!r}; use e.g. 2G, 512M, 1.5GiB or a byte count")
    num = float(m.group(1))
    mult = 1024 ** " kmgt".index(m.group(2).lower() or " ")
    size = int(num * mult)
    if size <= 0:
        raise ValueError(f"memory_limit must be > 0, got {value!r}")
    return size


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return str(value)


def _check_output(output: PathLike, inputs: Sequence[str] = ()) -> str:
    out = os.fspath(output)
    if os.path.isdir(out):
        raise IsADirectoryError(f"{out}: output is a directory; give a file name like x.graph")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{out}: output directory {parent} does not exist")
    for p in inputs:
        if os.path.exists(p) and os.path.exists(out) and os.path.samefile(p, out):
            raise ValueError(f"{out}: output would overwrite the input file")
    return out


def _builder_cls() -> Any:
    return getattr(_core, "GraphBuilder", None)


def _rust_convert_text() -> Any:
    return getattr(_core, "convert_text", None)


# ====================================================================== progress
class _ConvertProgress:
    """Progress of a conversion in arbitrary units (bytes or rows); quiet unless asked."""

    def __init__(self, total: int | None, progress: Any, unit: str, desc: str = "converting"):
        self.total = total
        self.done = 0
        self._cb: Callable[[int, int], Any] | None = None
        self._bar: Any = None
        self._log_at = time.monotonic() + 5.0
        self._log = False
        self.desc = desc
        if callable(progress):
            self._cb = progress
        elif progress:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(
                    total=total,
                    desc=desc,
                    unit=unit,
                    unit_scale=True,
                    unit_divisor=1024 if unit == "B" else 1000,
                    leave=False,
                )
            except ImportError:
                self._log = True

    def set(self, done: int) -> None:
        if done <= self.done:
            return
        delta, self.done = done - self.done, done
        if self._bar is not None:
            self._bar.update(delta)
        elif self._cb is not None:
            self._cb(done, self.total if self.total is not None else -1)
        elif self._log and time.monotonic() > self._log_at:
            from ._progress import logger

            self._log_at = time.monotonic() + 5.0
            logger.info("%s: %d / %s", self.desc, done, self.total)

    def add(self, n: int) -> None:
        self.set(self.done + n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ====================================================================== edge sink
class _Sink:
    """Receives edge chunks and writes the graph file atomically.

    Uses the out-of-core ``_core.GraphBuilder`` (bounded memory) when the extension provides
    it; otherwise accumulates the chunks and builds in memory with :meth:`Graph.from_edges`.
    Either way the output appears only on :meth:`finish`.
    """

    def __init__(
        self,
        output: str,
        *,
        directed: bool,
        weighted: bool,
        id_kind: str,
        num_nodes: int | None,
        self_loops: str,
        merge: str,
        memory_limit: int,
        tmp_dir: str | None,
    ) -> None:
        self.output = output
        self.directed = directed
        self.weighted = weighted
        self.id_kind = id_kind  # "implicit" | "int" | "str"
        self.num_nodes = num_nodes
        self.self_loops = self_loops
        self.merge = merge
        self.edges_read = 0
        self.self_loops_dropped = 0
        self._chunks: list[Chunk] = []
        cls = _builder_cls()
        self._b = None
        if cls is not None:
            self._b = cls(
                output,
                directed=directed,
                weighted=weighted,
                id_kind=id_kind,
                num_nodes=num_nodes,
                self_loops=self_loops,
                merge=merge,
                memory_limit=memory_limit,
                tmp_dir=tmp_dir,
            )

    def add(self, src: Any, dst: Any, weights: Any) -> None:
        n = len(src)
        if n == 0:
            return
        if self.weighted and weights is None:
            weights = np.ones(n, dtype=np.float64)
        if not self.weighted:
            weights = None
        self.edges_read += n
        if self._b is not None:
            self._b.add_edges(src, dst, weights)
            return
        if self.self_loops == "drop":
            src, dst, weights, dropped = _drop_self_loops(src, dst, weights)
            self.self_loops_dropped += dropped
        self._chunks.append((src, dst, weights))

    def finish(self) -> dict[str, Any]:
        if self._b is not None:
            stats = dict(self._b.finish())
            stats.setdefault("edges_read", self.edges_read)
            return stats
        src, dst, w = _concat_chunks(self._chunks, self.id_kind == "str", self.weighted)
        self._chunks = []
        g = Graph.from_edges(
            src,
            dst,
            num_nodes=self.num_nodes,
            directed=self.directed,
            weights=w,
            merge=self.merge,
        )
        g.save(self.output)
        return {
            "edges_read": self.edges_read,
            "self_loops_dropped": self.self_loops_dropped,
            "num_nodes": g.num_nodes,
            "num_edges": g.num_edges,
        }

    def abort(self) -> None:
        self._chunks = []
        if self._b is not None:
            try:
                self._b.abort()
            except Exception:  # noqa: BLE001 - aborting must not mask the original error
                pass


def _drop_self_loops(src: Any, dst: Any, w: Any) -> tuple[Any, Any, Any, int]:
    if isinstance(src, np.ndarray):
        keep = src != dst
        dropped = int(len(src) - np.count_nonzero(keep))
        if dropped:
            src, dst = src[keep], dst[keep]
            w = None if w is None else w[keep]
        return src, dst, w, dropped
    keep_l = [i for i, (a, b) in enumerate(zip(src, dst)) if a != b]
    dropped = len(src) - len(keep_l)
    if dropped:
        src = [src[i] for i in keep_l]
        dst = [dst[i] for i in keep_l]
        w = None if w is None else np.asarray(w)[keep_l]
    return src, dst, w, dropped


def _concat_chunks(chunks: list[Chunk], strings: bool, weighted: bool) -> tuple[Any, Any, Any]:
    if strings:
        src: Any = [x for c in chunks for x in c[0]]
        dst: Any = [x for c in chunks for x in c[1]]
    else:
        src = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int64)
        dst = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, np.int64)
    w = None
    if weighted:
        w = np.concatenate([c[2] for c in chunks]) if chunks else np.zeros(0, np.float64)
    return src, dst, w


def _build(
    chunks: Iterable[Chunk],
    *,
    output: PathLike | None,
    directed: bool,
    weighted: bool,
    id_kind: str = "auto",
    num_nodes: int | None = None,
    nodes: Any = None,
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: int | str | None = None,
    tmp_dir: PathLike | None = None,
    require_edges: str | None = None,
) -> tuple[Graph, dict[str, Any]]:
    """Builds a graph from a stream of normalised chunks (in memory, or to ``output``)."""
    self_loops = _check_choice("self_loops", self_loops, ("keep", "drop"))
    merge = _check_choice("merge", merge, ("sum", "max"))
    if output is None or nodes is not None:
        collected: list[Chunk] = []
        kind = None
        dropped = 0
        read = 0
        for s, d, w in chunks:
            kind = _chunk_kind(s, kind, "input")
            read += len(s)
            if self_loops == "drop":
                s, d, w, k = _drop_self_loops(s, d, w)
                dropped += k
            if weighted and w is None:
                w = np.ones(len(s), dtype=np.float64)
            collected.append((s, d, w if weighted else None))
        if read == 0 and require_edges:
            raise GraphFormatError(f"{require_edges}: no edges found")
        src, dst, w = _concat_chunks(collected, kind == "str", weighted)
        g = Graph.from_edges(
            src,
            dst,
            num_nodes=num_nodes,
            directed=directed,
            weights=w,
            nodes=nodes,
            merge=merge,
        )
        stats = {"edges_read": read, "self_loops_dropped": dropped}
        if output is not None:
            out = _check_output(output)
            g.save(out)
            g = Graph.open(out)
        stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges)
        return g, stats

    out = _check_output(output)
    mem = parse_size(memory_limit)
    tmp = None if tmp_dir is None else os.fspath(tmp_dir)
    sink: _Sink | None = None
    kind = None
    try:
        for s, d, w in chunks:
            kind = _chunk_kind(s, kind, "input")
            if sink is None:
                if num_nodes is not None:
                    sink_kind = "implicit"
                else:
                    sink_kind = kind
                sink = _Sink(
                    out,
                    directed=directed,
                    weighted=weighted,
                    id_kind=sink_kind,
                    num_nodes=num_nodes,
                    self_loops=self_loops,
                    merge=merge,
                    memory_limit=mem,
                    tmp_dir=tmp,
                )
            sink.add(s, d, w)
        if sink is None or sink.edges_read == 0:
            if require_edges:
                raise GraphFormatError(f"{require_edges}: no edges found")
            if sink is None:
                sink = _Sink(
                    out,
                    directed=directed,
                    weighted=weighted,
                    id_kind="implicit" if num_nodes is not None else (kind or "int"),
                    num_nodes=num_nodes,
                    self_loops=self_loops,
                    merge=merge,
                    memory_limit=mem,
                    tmp_dir=tmp,
                )
        stats = sink.finish()
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    g = Graph.open(out)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges)
    return g, stats


def _chunk_kind(src: Any, prev: str | None, where: str) -> str:
    kind = "int" if isinstance(src, np.ndarray) else "str"
    if prev is not None and kind != prev and len(src):
        raise GraphFormatError(f"{where}: mixes integer and string node ids between chunks")
    return prev if (prev is not None and not len(src)) else kind


# ====================================================================== value normalisation
def _fmt_row(where: str, row: int) -> str:
    return f"{where}: row {row}"


def _norm_ids(values: Any, want: str, where: str, col: str, row0: int) -> Any:
    """Normalises one column of node ids to an int64 array or a list of str.

    ``want`` is "auto", "int" or "str"; ``row0`` is the row number of the first value (for
    error messages).
    """
    a = values if isinstance(values, np.ndarray) else np.asarray(values)
    if a.ndim != 1:
        raise GraphFormatError(f"{where}: column {col!r} must be one-dimensional")
    kind = a.dtype.kind
    if kind == "b":
        raise GraphFormatError(f"{where}: column {col!r} holds booleans, not node ids")
    if kind in "iu":
        if kind == "u" and a.size and a.dtype.itemsize == 8 and int(a.max()) > _INT64_MAX:
            i = int(np.flatnonzero(a > _INT64_MAX)[0])
            raise GraphFormatError(
                f"{_fmt_row(where, row0 + i)}: id {int(a[i])} in column {col!r} overflows int64"
            )
        ids: Any = a.astype(np.int64, copy=False)
    elif kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a)) | (np.abs(a) > 2.0**63)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            msg = "is missing" if np.isnan(a[i]) else f"{a[i].item()!r} is not an integer id"
            raise GraphFormatError(f"{_fmt_row(where, row0 + i)}: column {col!r}: value {msg}")
        ids = a.astype(np.int64)
    elif kind in "OUST":
        seq = a.tolist()
        if kind == "S":
            seq = [x.decode("utf-8") for x in seq]
        if all(type(x) is str for x in seq):
            ids = seq
        elif all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in seq):
            try:
                ids = np.asarray(seq, dtype=np.int64)
            except OverflowError:
                i = next(i for i, x in enumerate(seq) if not -(2**63) <= x <= _INT64_MAX)
                raise GraphFormatError(
                    f"{_fmt_row(where, row0 + i)}: id {seq[i]} in column {col!r} overflows int64"
                ) from None
        else:
            i = _first_bad_id(seq)
            x = seq[i]
            if x is None or (isinstance(x, float) and math.isnan(x)):
                raise GraphFormatError(f"{_fmt_row(where, row0 + i)}: column {col!r} is missing")
            raise GraphFormatError(
                f"{_fmt_row(where, row0 + i)}: column {col!r} holds {x!r} "
                f"({type(x).__name__}); node ids must be all int or all str"
            )
    else:
        raise GraphFormatError(
            f"{where}: column {col!r} has dtype {a.dtype}; node ids must be integers or strings"
        )
    return _coerce_ids(ids, want, where, col, row0)


def _first_bad_id(seq: list[Any]) -> int:
    """Index of the first value that is not an int/str id or differs in kind from the first."""

    def kind(x: Any) -> str | None:
        if type(x) is str:
            return "str"
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return "int"
        return None

    k0 = kind(seq[0])
    for i, x in enumerate(seq):
        k = kind(x)
        if k is None or k != k0:
            return i
    return 0


def _coerce_ids(ids: Any, want: str, where: str, col: str, row0: int) -> Any:
    if want == "str" and isinstance(ids, np.ndarray):
        return [str(x) for x in ids.tolist()]
    if want == "int" and not isinstance(ids, np.ndarray):
        out = np.empty(len(ids), dtype=np.int64)
        for i, x in enumerate(ids):
            try:
                v = int(x)
            except ValueError:
                raise GraphFormatError(
                    f"{_fmt_row(where, row0 + i)}: column {col!r}: {x!r} is not an integer id"
                ) from None
            if not -(2**63) <= v <= _INT64_MAX:
                raise GraphFormatError(
                    f"{_fmt_row(where, row0 + i)}: id {x} in column {col!r} overflows int64"
                )
            out[i] = v
        return out
    return ids


def _check_weights(
    w: Any, where: str, row0: int, col: str | None = "weight", unit: str = "row"
) -> np.ndarray:
    """Weights as float64, checked finite and > 0 (errors name the row and column)."""
    a = np.asarray(w)
    incol = "" if col is None else f" in column {col!r}"
    if a.dtype.kind not in "iuf":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError):
            for i, x in enumerate(a.tolist()):
                try:
                    float(x)
                except (TypeError, ValueError):
                    raise GraphFormatError(
                        f"{where}: {unit} {row0 + i}: non-numeric weight {x!r}{incol}"
                    ) from None
            raise
    a = a.astype(np.float64, copy=False)
    bad = ~(np.isfinite(a) & (a > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        x = float(a[i])
        what = "missing or NaN" if math.isnan(x) else ("infinite" if math.isinf(x) else "<= 0")
        raise GraphFormatError(
            f"{where}: {unit} {row0 + i}: weight {x!r}{incol} is {what}; "
            "weights must be finite and > 0"
        )
    return a


# ====================================================================== column resolution
def _resolve_columns(
    names: Sequence[str],
    src: int | str | None,
    dst: int | str | None,
    weight: int | str | None,
    weighted: bool | None,
    where: str,
) -> tuple[int, int, int | None]:
    """Maps column selections (index, name or None) to indices."""
    lower = [n.lower() for n in names]

    def idx(sel: int | str, what: str) -> int:
        if isinstance(sel, bool):
            raise TypeError(f"{what} must be a column name or index")
        if isinstance(sel, (int, np.integer)):
            if not 0 <= sel < len(names):
                raise ValueError(
                    f"{where}: {what} {sel} is out of range (the input has {len(names)} "
                    f"columns: {', '.join(names)})"
                )
            return int(sel)
        if sel in names:
            return list(names).index(sel)
        raise ValueError(f"{where}: no column named {sel!r} ({what}); columns: {', '.join(names)}")

    if src is None and dst is None:
        pair = next(
            (p for p in _COLUMN_PAIRS if p[0] in lower and p[1] in lower),
            None,
        )
        if pair is not None:
            s, d = lower.index(pair[0]), lower.index(pair[1])
        else:
            if len(names) < 2:
                raise GraphFormatError(f"{where}: needs at least two columns, found {names}")
            s, d = 0, 1
    else:
        s = idx(src if src is not None else 0, "src_col")
        d = idx(dst if dst is not None else 1, "dst_col")
    if s == d:
        raise ValueError(f"{where}: source and destination are the same column {names[s]!r}")
    w: int | None = None
    if weight is not None:
        if weighted is False:
            raise ValueError("weight_col was given but weighted=False")
        w = idx(weight, "weight_col")
    elif weighted is not False:
        found = next((lower.index(n) for n in _WEIGHT_NAMES if n in lower), None)
        if found is not None and found not in (s, d):
            w = found
        elif weighted:
            others = [i for i in range(len(names)) if i not in (s, d)]
            if len(others) == 1:
                w = others[0]
            else:
                raise ValueError(
                    f"{where}: weighted=True but no weight column is named; pass weight_col "
                    f"(columns: {', '.join(names)})"
                )
    if w is not None and w in (s, d):
        raise ValueError(f"{where}: the weight column is also an id column")
    return s, d, w


# ====================================================================== in-memory constructors
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
    self_loops : {"keep", "drop"}, default "keep"
    merge : {"sum", "max"}, default "sum"
        How weights of duplicate edges combine (unweighted duplicates are dropped).
    output : path, optional
        Write a graph file (atomically) and return it opened; default: an in-memory graph.
    memory_limit : int or str, optional
        Memory budget of the out-of-core builder when ``output`` is given (e.g. ``"2G"``).

    Returns
    -------
    Graph

    Raises
    ------
    GraphFormatError
        Non-integer ids, invalid weights (NaN, infinite, <= 0), with the row number.
    """
    a = edges if isinstance(edges, np.ndarray) else np.asarray(edges)
    if a.ndim != 2 or a.shape[1] not in (2, 3):
        raise ValueError(f"edges must have shape (k, 2) or (k, 3), got {a.shape}")
    if weighted is None:
        weighted = a.shape[1] == 3
    if weighted and a.shape[1] != 3:
        raise ValueError("weighted=True needs a third (weight) column")
    g, _ = _build(
        _numpy_chunks(a, bool(weighted), "edges"),
        output=output,
        directed=directed,
        weighted=bool(weighted),
        num_nodes=num_nodes,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
    )
    return g


def _numpy_chunks(a: np.ndarray, weighted: bool, where: str) -> Iterator[Chunk]:
    for start in range(0, max(a.shape[0], 1), _CHUNK_EDGES):
        block = np.asarray(a[start : start + _CHUNK_EDGES])
        if block.shape[0] == 0:
            return
        s = _norm_ids(block[:, 0], "int", where, "0", start)
        d = _norm_ids(block[:, 1], "int", where, "1", start)
        w = _check_weights(block[:, 2], where, start, "2") if weighted else None
        yield s, d, w


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
    sp = _need("scipy.sparse", "scipy", "from_scipy")
    if not sp.issparse(matrix):
        raise TypeError(
            f"from_scipy needs a scipy.sparse matrix, got {type(matrix).__name__}; for an edge "
            "array use from_numpy, for a dense adjacency matrix wrap it in "
            "scipy.sparse.csr_array(dense)"
        )
    src, dst, w, n, directed_out, weighted_out = _scipy_edges(
        matrix, directed, weighted, self_loops, "matrix"
    )
    g, _ = _build(
        iter([(src, dst, w)]),
        output=output,
        directed=directed_out,
        weighted=weighted_out,
        num_nodes=n,
        self_loops="keep",
    )
    return g


def _scipy_edges(
    matrix: Any, directed: bool | None, weighted: bool | None, self_loops: str, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, bool, bool]:
    """(src, dst, weights, n, directed, weighted) of a sparse adjacency matrix."""
    sp = _need("scipy.sparse", "scipy", "reading a sparse matrix")
    _check_choice("self_loops", self_loops, ("keep", "drop"))
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{where}: adjacency matrix must be square, got shape {matrix.shape}")
    a = sp.csr_matrix(matrix)
    if a.dtype.kind == "c":
        raise ValueError(f"{where}: complex matrix values cannot be edge weights")
    if a.dtype.kind == "b":
        a = a.astype(np.float32)
    else:
        a = a.astype(np.float64)
    a.sum_duplicates()
    a.eliminate_zeros()
    n = a.shape[0]
    data = a.data
    bad = ~(np.isfinite(data) & (data > 0))
    if bad.any():
        coo = a.tocoo()
        i = int(np.flatnonzero(~(np.isfinite(coo.data) & (coo.data > 0)))[0])
        raise GraphFormatError(
            f"{where}: entry ({coo.row[i]}, {coo.col[i]}) = {coo.data[i].item()!r}; edge weights "
            "must "
            "be finite and > 0"
        )
    if weighted is None:
        weighted = bool(data.size) and not bool(np.all(data == 1))
    if weighted:
        symmetric = (a != a.T).nnz == 0
    else:
        p = a.astype(bool)
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
    src = coo.row.astype(np.int64)
    dst = coo.col.astype(np.int64)
    w = coo.data.astype(np.float64) if weighted else None
    if self_loops == "drop":
        src, dst, w, _ = _drop_self_loops(src, dst, w)
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
    nodes = list(graph.nodes)
    if nodes and all(type(x) is str for x in nodes):
        pass
    elif all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in nodes):
        nodes = [int(x) for x in nodes]
    else:
        bad = nodes[_first_bad_id(nodes)]
        raise TypeError(
            f"node {bad!r} ({type(bad).__name__}): node ids must be all int or all str; "
            "relabel first, e.g. networkx.relabel_nodes(G, str)"
        )
    if weight is None:
        weighted = False
    elif weighted is None:
        weighted = any(weight in d for _, _, d in graph.edges(data=True))
    src: list[Any] = []
    dst: list[Any] = []
    ws: list[float] = []
    for u, v, d in graph.edges(data=True):
        src.append(u if type(u) is str else int(u))
        dst.append(v if type(v) is str else int(v))
        if weighted:
            ws.append(d.get(weight, 1.0))
    w = None
    if weighted:
        w = _check_weights(np.asarray(ws, dtype=object), "networkx graph", 0, str(weight))
    s: Any = src if nodes and type(nodes[0]) is str else np.asarray(src, dtype=np.int64)
    t: Any = dst if nodes and type(nodes[0]) is str else np.asarray(dst, dtype=np.int64)
    g, _ = _build(
        iter([(s, t, w)]),
        output=output,
        directed=bool(graph.is_directed()),
        weighted=bool(weighted),
        nodes=nodes,
        self_loops=self_loops,
        merge=merge,
    )
    return g


def from_pandas(
    df: Any,
    src: str | int | None = "src",
    dst: str | int | None = "dst",
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
    src, dst : str or int, default "src", "dst"
        Column names (or positions) of the endpoints; None tries common names
        (src/dst, source/target, from/to, u/v) and then the first two columns.
    weight : str or int, optional
        Weight column; default none (or a column named "weight" when ``weighted=True``).
    directed : bool, default False
    weighted : bool, optional
        Default: weighted iff a weight column is given.
    id_kind : {"auto", "int", "str"}, default "auto"
        "str" keeps numeric-looking ids as strings; "int" parses string ids as integers.
    self_loops, merge, output, memory_limit, tmp_dir
        As in :func:`convert`.

    Returns
    -------
    Graph
    """
    pd = _need("pandas", "pandas", "from_pandas")
    id_kind = _check_choice("id_kind", id_kind, ("auto", "int", "str"))
    frames = [df] if isinstance(df, pd.DataFrame) else df
    if weighted is None:
        weighted = weight is not None
    return _build(
        _pandas_chunks(frames, src, dst, weight, bool(weighted), id_kind, "DataFrame"),
        output=output,
        directed=directed,
        weighted=bool(weighted),
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )[0]


def _pandas_chunks(
    frames: Iterable[Any], src: Any, dst: Any, weight: Any, weighted: bool, id_kind: str, where: str
) -> Iterator[Chunk]:
    row0 = 0
    cols: tuple[int, int, int | None] | None = None
    for frame in frames:
        names = [str(c) for c in frame.columns]
        if cols is None:
            cols = _resolve_columns(names, src, dst, weight, weighted, where)
        s_i, d_i, w_i = cols
        s_name, d_name = names[s_i], names[d_i]
        s = _pandas_ids(frame.iloc[:, s_i], id_kind, where, s_name, row0)
        d = _pandas_ids(frame.iloc[:, d_i], id_kind, where, d_name, row0)
        w = None
        if weighted and w_i is not None:
            wcol = frame.iloc[:, w_i]
            pd = importlib.import_module("pandas")
            if pd.api.types.is_numeric_dtype(wcol.dtype):
                wv = wcol.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                wv = wcol.to_numpy(dtype=object)
            w = _check_weights(wv, where, row0, names[w_i])
        yield s, d, w
        row0 += len(frame)


def _pandas_ids(col: Any, id_kind: str, where: str, name: str, row0: int) -> Any:
    na = col.isna().to_numpy()
    if na.any():
        i = int(np.flatnonzero(na)[0])
        raise GraphFormatError(f"{_fmt_row(where, row0 + i)}: column {name!r} is missing")
    dt = col.dtype
    if getattr(dt, "kind", "O") in "iu" and not isinstance(dt, np.dtype):
        values = col.to_numpy(dtype=np.int64 if dt.kind == "i" else np.uint64)
    elif isinstance(dt, np.dtype):
        values = col.to_numpy()
    else:
        values = col.to_numpy(dtype=object)
    return _norm_ids(values, id_kind, where, name, row0)


def from_arrow(
    table: Any,
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
    """Build a graph from Arrow data: a Table, RecordBatch, RecordBatchReader or Dataset.

    Record batches are streamed to the out-of-core builder when ``output`` is given, so a
    ``RecordBatchReader`` or ``pyarrow.dataset.Dataset`` larger than memory works.

    Parameters
    ----------
    table : pyarrow.Table, RecordBatch, RecordBatchReader, Dataset, or iterable of batches
    src, dst : str or int, optional
        Endpoint columns; default: common names (src/dst, source/target, from/to, u/v),
        else the first two columns.
    weight : str or int, optional
        Weight column; default: a column named "weight" if present (unless
        ``weighted=False``).
    directed, weighted, id_kind, self_loops, merge, output, memory_limit, tmp_dir
        As in :func:`from_pandas` / :func:`convert`. ``weighted`` defaults to whether a
        weight column was found.

    Returns
    -------
    Graph
    """
    pa = _need("pyarrow", "arrow", "from_arrow")
    id_kind = _check_choice("id_kind", id_kind, ("auto", "int", "str"))
    schema, batches = _arrow_batches(pa, table)
    names = list(schema.names)
    cols = _resolve_columns(names, src, dst, weight, weighted, "table")
    return _build(
        _arrow_chunks(batches, cols, names, id_kind, "table"),
        output=output,
        directed=directed,
        weighted=cols[2] is not None,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )[0]


def _arrow_batches(pa: Any, obj: Any) -> tuple[Any, Iterable[Any]]:
    if isinstance(obj, pa.Table):
        return obj.schema, obj.to_batches(max_chunksize=_CHUNK_EDGES)
    if isinstance(obj, pa.RecordBatch):
        return obj.schema, [obj]
    if isinstance(obj, pa.RecordBatchReader):
        return obj.schema, obj
    try:
        import pyarrow.dataset as ds

        if isinstance(obj, ds.Dataset):
            return obj.schema, obj.to_batches(batch_size=_CHUNK_EDGES)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Iterable):
        it = iter(obj)
        first = next(it, None)
        if first is None:
            raise GraphFormatError("table: no record batches")
        if not isinstance(first, pa.RecordBatch):
            raise TypeError(f"expected pyarrow RecordBatches, got {type(first).__name__}")

        def chain() -> Iterator[Any]:
            yield first
            yield from it

        return first.schema, chain()
    raise TypeError(
        "from_arrow needs a pyarrow Table, RecordBatch, RecordBatchReader or Dataset, got "
        f"{type(obj).__name__}"
    )


def _arrow_chunks(
    batches: Iterable[Any],
    cols: tuple[int, int, int | None],
    names: Sequence[str],
    id_kind: str,
    where: str,
    progress: _ConvertProgress | None = None,
) -> Iterator[Chunk]:
    s_i, d_i, w_i = cols
    row0 = 0
    for batch in batches:
        names_now = list(batch.schema.names)
        if names_now != list(names):
            if not all(
                names[c] in names_now for c in (s_i, d_i) + ((w_i,) if w_i is not None else ())
            ):
                raise GraphFormatError(
                    f"{where}: a batch has columns {names_now}, expected {list(names)}"
                )
        s = _arrow_ids(_column(batch, names_now, names[s_i]), id_kind, where, names[s_i], row0)
        d = _arrow_ids(_column(batch, names_now, names[d_i]), id_kind, where, names[d_i], row0)
        w = None
        if w_i is not None:
            wcol = _column(batch, names_now, names[w_i])
            if wcol.null_count:
                i = int(np.flatnonzero(np.asarray(wcol.is_null()))[0])
                raise GraphFormatError(
                    f"{_fmt_row(where, row0 + i)}: weight in column {names[w_i]!r} is missing"
                )
            try:
                wv = wcol.to_numpy(zero_copy_only=False)
            except Exception:  # noqa: BLE001 - reported as non-numeric below
                wv = np.asarray(wcol.to_pylist(), dtype=object)
            w = _check_weights(wv, where, row0, names[w_i])
        yield s, d, w
        row0 += batch.num_rows
        if progress is not None:
            progress.add(batch.num_rows)


def _column(batch: Any, names_now: list[str], name: str) -> Any:
    return batch.column(names_now.index(name))


def _arrow_ids(col: Any, id_kind: str, where: str, name: str, row0: int) -> Any:
    import pyarrow as pa
    import pyarrow.types as pat

    if col.null_count:
        i = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise GraphFormatError(f"{_fmt_row(where, row0 + i)}: column {name!r} is missing")
    t = col.type
    if pat.is_dictionary(t):
        col = col.dictionary_decode()
        t = col.type
    if pat.is_integer(t) or pat.is_floating(t):
        values: Any = col.to_numpy(zero_copy_only=False)
    elif pat.is_string(t) or pat.is_large_string(t) or getattr(pat, "is_string_view", bool)(t):
        if not pat.is_string(t):
            col = col.cast(pa.large_string())
        return _coerce_ids(col.to_pylist(), id_kind, where, name, row0)
    elif pat.is_binary(t) or pat.is_large_binary(t):
        try:
            values = [x.decode("utf-8") for x in col.to_pylist()]
        except UnicodeDecodeError:
            raise GraphFormatError(
                f"{where}: column {name!r} holds bytes that are not UTF-8"
            ) from None
        return _coerce_ids(values, id_kind, where, name, row0)
    else:
        raise GraphFormatError(
            f"{where}: column {name!r} has type {t}; node ids must be integers or strings"
        )
    return _norm_ids(values, id_kind, where, name, row0)


# ====================================================================== format detection
_COMPRESSION_EXT = {
    ".gz": "gzip",
    ".gzip": "gzip",
    ".bz2": "bz2",
    ".zst": "zstd",
    ".zstd": "zstd",
    ".xz": "xz",
}
_EXT_FORMAT = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".mat": "mat",
    ".bcsr": "bcsr",
    ".npy": "npy",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
}
_MAGIC = (
    (b"PAR1", "parquet"),
    (b"XGFS", "bcsr"),
    (b"MATLAB", "mat"),
    (b"\x93NUMPY", "npy"),
    (b"ARROW1", "arrow"),
)


def _compression(path: str) -> str | None:
    """Compression of a file from its magic bytes (None: plain)."""
    with open(path, "rb") as f:
        head = f.read(6)
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:3] == b"BZh":
        return "bz2"
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return "zstd"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    return None


def detect_format(path: PathLike) -> str:
    """The input format of ``path``: from its extension, else its first bytes, else text.

    Returns one of ``"edgelist"``, ``"csv"``, ``"tsv"``, ``"parquet"``, ``"arrow"``,
    ``"mat"``, ``"bcsr"``, ``"npy"``, ``"webgraph"``. A directory is a Parquet (or Arrow)
    dataset. A WebGraph BV graph is named by its ``.properties`` file, its ``.graph`` file (one
    without this library's magic, with a ``.properties`` file beside it) or its basename.
    """
    p = os.fspath(path)
    if _webgraph_input(p):
        return "webgraph"
    if os.path.isdir(p):
        files = _dataset_files(p)
        if any(f.endswith((".arrow", ".feather", ".ipc")) for f in files) and not any(
            f.endswith((".parquet", ".pq")) for f in files
        ):
            return "arrow"
        return "parquet"
    base = p.lower()
    root, ext = os.path.splitext(base)
    if ext in _COMPRESSION_EXT:
        root, ext = os.path.splitext(root)
        return {".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}.get(ext, "edgelist")
    if ext in _EXT_FORMAT:
        return _EXT_FORMAT[ext]
    if not os.path.isfile(p):
        return "edgelist"
    with open(p, "rb") as f:
        head = f.read(8)
    if head.startswith(b"IEGRAPH\x00"):
        raise GraphFormatError(f"{p}: is already an instant-embedding graph file")
    if ext == ".graph":
        raise GraphFormatError(
            f"{p}: not an instant-embedding graph file, and there is no "
            f"{_root_name(p)}.properties beside it: if it is a WebGraph BV graph, give the "
            "path of its .properties file"
        )
    for magic, fmt in _MAGIC:
        if head.startswith(magic):
            return fmt
    return "edgelist"


def _root_name(path: str) -> str:
    """``path`` without its last extension."""
    return os.path.splitext(path)[0]


def _webgraph_input(p: str) -> bool:
    """Whether ``p`` names a WebGraph BV graph (see :func:`detect_format`)."""
    if p.endswith(".properties"):
        return os.path.isfile(p)
    if p.endswith(".graph"):
        if not os.path.isfile(_root_name(p) + ".properties"):
            return False
        with open(p, "rb") as f:
            return f.read(8) != b"IEGRAPH\x00"
    return not os.path.exists(p) and os.path.isfile(p + ".graph")


def _dataset_files(d: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(d):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "_")))
        for f in sorted(files):
            if not f.startswith((".", "_")):
                out.append(os.path.join(root, f))
    return out


# ====================================================================== convert()
def convert(
    input: PathLike | Sequence[PathLike],  # noqa: A002 - mirrors the CLI argument
    output: PathLike,
    *,
    format: str = "auto",  # noqa: A002
    directed: bool | None = False,
    weighted: bool | None = None,
    delimiter: str | None = None,
    comment: str = "#%",
    header: bool | None = None,
    src_col: int | str | None = None,
    dst_col: int | str | None = None,
    weight_col: int | str | None = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    var: str | None = None,
    properties: PathLike | None = None,
    memory_limit: int | str | None = None,
    tmp_dir: PathLike | None = None,
    progress: Any = False,
) -> Graph:
    """Convert input files into a graph file and open it.

    Parameters
    ----------
    input : path or list of paths
        One file, several files of the same format (text edge lists and Parquet/Arrow files are
        concatenated), or a directory of Parquet/Arrow shards.
    output : path
        The graph file to write. It appears atomically when complete; on any error no file is
        left at this path (an existing file there is untouched).
    format : str, default "auto"
        One of ``"edgelist"`` (whitespace/TAB/comma separated text), ``"csv"``, ``"tsv"``,
        ``"parquet"``, ``"arrow"`` (IPC/Feather), ``"mat"`` (MATLAB), ``"bcsr"`` (VERSE
        XGFS), ``"npy"`` (an int (k, 2) or (k, 3) edge array), ``"webgraph"`` (a WebGraph
        BV graph: ``BASENAME.graph`` + ``BASENAME.properties``, given as either file or the
        basename; node ids are ``0..n-1``). "auto" uses the extension (after a
        ``.gz``/``.bz2``/``.zst``/``.xz`` suffix), then the file's magic bytes, and falls back
        to a text edge list.
    directed : bool or None, default False
        Whether edges are directed. For matrices (``.mat``, ``.bcsr``) None means: undirected
        if the matrix is symmetric, directed otherwise.
    weighted : bool, optional
        Text: weighted iff ``weight_col`` is given (``weighted=True`` alone reads column 2).
        Tables: iff a weight column is given or named "weight". Matrices: iff some value
        is not 1.
    delimiter : str, optional
        Text field separator: default "," for ``.csv``, TAB for ``.tsv``, and otherwise a
        comma if the first data line has one, else runs of spaces/TABs. ``"\\t"``, ``"tab"``,
        ``"space"``/``"whitespace"`` are understood.
    comment : str, default "#%"
        Text lines starting with one of these characters (after spaces) are skipped, as are
        empty lines. SNAP ``#`` headers and KONECT ``%`` headers are skipped this way.
    header : bool, optional
        Whether the first data line of a text file holds column names. Default: True when a
        column is selected by name; otherwise detected (a first line whose id or weight fields
        are not numbers while the following lines' are).
    src_col, dst_col, weight_col : int or str, optional
        Columns by 0-based index or name. Defaults: text 0, 1 and none; tables: the first of
        src/dst, source/target, source/destination, from/to, u/v, else the first two columns.
    id_kind : {"auto", "int", "str"}, default "auto"
        "auto": integer ids if every id is an integer, else strings. "str" keeps ids such as
        ``007`` verbatim. Integer ids that are exactly ``0..n-1`` are stored implicitly.
    self_loops : {"keep", "drop"}, default "keep"
        Keep edges ``u -> u`` (stored once) or drop them.
    merge : {"sum", "max"}, default "sum"
        Duplicate edges: weights are summed or the maximum is kept; unweighted duplicates
        collapse to one edge. An undirected edge given as both ``u v`` and ``v u`` is a
        duplicate.
    var : str, optional
        ``.mat`` variable holding the adjacency matrix; default: the only sparse matrix
        (e.g. ``network`` in BlogCatalog's file).
    properties : path, optional
        WebGraph input: the ``.properties`` file, when it is not ``BASENAME.properties``
        beside ``BASENAME.graph``.
    memory_limit : int or str, optional
        Memory budget of the out-of-core builder, e.g. ``"2G"`` (default 2 GiB): edge buffers
        *and* the per-node structures (id map, counters, ``indptr``: about 16-40 bytes per
        node, which cannot spill). If those alone exceed it, the build still completes with
        small buffers, over the budget, and a ``RuntimeWarning`` says by how much; the
        returned stats have ``peak_node_bytes``.
    tmp_dir : path, optional
        Where the out-of-core builder spills sorted runs (default: its own choice).
    progress : bool or callable, default False
        True shows a progress bar (tqdm) or logs; a callable receives ``(done, total)``.

    Returns
    -------
    Graph
        The new file, memory-mapped.

    Raises
    ------
    GraphFormatError
        Unparseable input, naming the file, line (or row) and offending text: malformed line,
        wrong column count, non-numeric or non-positive/NaN/infinite weight, id overflow,
        empty file, bad ``.bcsr`` sizes, ...
    FileNotFoundError, IsADirectoryError, PermissionError
        File-system problems.
    ImportError
        The format needs an optional dependency that is missing (the message names it).
    """
    graph, _ = convert_with_stats(
        input,
        output,
        format=format,
        directed=directed,
        weighted=weighted,
        delimiter=delimiter,
        comment=comment,
        header=header,
        src_col=src_col,
        dst_col=dst_col,
        weight_col=weight_col,
        id_kind=id_kind,
        self_loops=self_loops,
        merge=merge,
        var=var,
        properties=properties,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        progress=progress,
    )
    return graph


def convert_with_stats(
    input: PathLike | Sequence[PathLike],  # noqa: A002
    output: PathLike,
    **kwargs: Any,
) -> tuple[Graph, dict[str, Any]]:
    """:func:`convert`, also returning a dict of statistics (edges read, dropped, ...)."""
    fmt = kwargs.pop("format", "auto")
    _check_choice("format", fmt, FORMATS)
    paths = (
        [os.fspath(input)]
        if isinstance(input, (str, os.PathLike))
        else [os.fspath(p) for p in input]
    )
    if not paths:
        raise ValueError("no input files given")
    if kwargs.get("properties") is not None and fmt == "auto":
        fmt = "webgraph"
    for p in paths:
        # A WebGraph basename names BASENAME.graph.
        if not os.path.exists(p) and not os.path.isfile(p + ".graph"):
            raise FileNotFoundError(f"{p}: no such file or directory")
    out = _check_output(output, paths)
    if fmt == "auto":
        fmts = {detect_format(p) for p in paths}
        if len(fmts) > 1:
            raise ValueError(f"inputs have different formats ({', '.join(sorted(fmts))})")
        fmt = fmts.pop()
    id_kind = _check_choice("id_kind", kwargs.get("id_kind", "auto"), ("auto", "int", "str"))
    kwargs["id_kind"] = id_kind
    _check_choice("self_loops", kwargs.get("self_loops", "keep"), ("keep", "drop"))
    _check_choice("merge", kwargs.get("merge", "sum"), ("sum", "max"))
    for p in paths:
        if os.path.isdir(p) and fmt not in ("parquet", "arrow"):
            raise IsADirectoryError(f"{p}: is a directory (only Parquet/Arrow datasets can be)")
    t0 = time.perf_counter()
    if fmt != "webgraph" and kwargs.pop("properties", None) is not None:
        raise ValueError(f"properties applies to webgraph input, not to {fmt} input")
    if fmt in ("edgelist", "csv", "tsv"):
        g, stats = _convert_text(paths, out, fmt, **kwargs)
    elif fmt in ("parquet", "arrow"):
        g, stats = _convert_table(paths, out, fmt, **kwargs)
    else:
        if len(paths) != 1:
            raise ValueError(f"format {fmt!r} takes exactly one input file, got {len(paths)}")
        reader = {
            "mat": _convert_mat,
            "bcsr": _convert_bcsr,
            "npy": _convert_npy,
            "webgraph": _convert_webgraph,
        }[fmt]
        g, stats = reader(paths[0], out, **kwargs)
    stats["format"] = fmt
    stats["seconds"] = time.perf_counter() - t0
    _warn_if_over_budget(stats, kwargs.get("memory_limit"))
    return g, stats


def _warn_if_over_budget(stats: dict[str, Any], memory_limit: Any) -> None:
    """Warn when the per-node structures alone exceeded ``memory_limit`` (the build went on)."""
    node_bytes = stats.get("peak_node_bytes")
    if not node_bytes:
        return
    limit = parse_size(memory_limit)
    if node_bytes > limit:
        n = max(int(stats.get("num_nodes") or 1), 1)
        warnings.warn(
            f"memory_limit {limit / 2**20:,.0f} MiB was exceeded: the id map, counters and "
            f"indptr of {n:,} nodes alone took {node_bytes / 2**20:,.0f} MiB "
            f"({node_bytes / n:.0f} B per node), which cannot spill to disk. Give at least "
            f"{(node_bytes + (256 << 20)) / 2**30:.1f} GiB to hold the limit.",
            RuntimeWarning,
            stacklevel=3,
        )


def _directed_flag(directed: bool | None, fmt: str) -> bool:
    if directed is None:
        raise ValueError(
            f"directed=None (detect from symmetry) applies to matrices, not to {fmt} input; "
            "pass directed=True or False"
        )
    return bool(directed)


# ---------------------------------------------------------------------- tables
def _convert_table(
    paths: list[str],
    out: str,
    fmt: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: Any = None,
    tmp_dir: Any = None,
    progress: Any = False,
    **ignored: Any,
) -> tuple[Graph, dict[str, Any]]:
    _reject_text_options(ignored, fmt)
    _need("pyarrow", "arrow", f"reading {fmt} files")
    import pyarrow.dataset as ds

    files: list[str] = []
    for p in paths:
        files.extend(_dataset_files(p) if os.path.isdir(p) else [p])
    if not files:
        raise GraphFormatError(f"{paths[0]}: no data files in the directory")
    where = paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"
    try:
        dataset = ds.dataset(files, format="parquet" if fmt == "parquet" else "ipc")
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for unreadable files
        raise GraphFormatError(f"{where}: cannot read as {fmt}: {e}") from None
    names = list(dataset.schema.names)
    cols = _resolve_columns(names, src_col, dst_col, weight_col, weighted, where)
    used = [names[c] for c in cols if c is not None]
    try:
        total = dataset.count_rows()
    except Exception:  # noqa: BLE001
        total = None
    bar = _ConvertProgress(total, progress, "rows")
    try:
        batches = dataset.to_batches(columns=used, batch_size=_CHUNK_EDGES)
        return _build(
            _guard_arrow(
                _arrow_chunks(
                    batches, (0, 1, 2 if cols[2] is not None else None), used, id_kind, where, bar
                ),
                where,
            ),
            output=out,
            directed=_directed_flag(directed, fmt),
            weighted=cols[2] is not None,
            self_loops=self_loops,
            merge=merge,
            memory_limit=memory_limit,
            tmp_dir=tmp_dir,
            require_edges=where,
        )
    finally:
        bar.close()


def _guard_arrow(chunks: Iterator[Chunk], where: str) -> Iterator[Chunk]:
    """Re-raises pyarrow's read errors (corrupt pages, ...) as GraphFormatError."""
    import pyarrow as pa

    while True:
        try:
            c = next(chunks)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise GraphFormatError(f"{where}: {e}") from None
        yield c


def _reject_text_options(opts: dict[str, Any], fmt: str) -> None:
    bad = {
        k: v
        for k, v in opts.items()
        if k in ("delimiter", "header", "var")
        and v not in (None, False)
        or (k == "comment" and v != "#%")
    }
    if bad:
        raise ValueError(f"option(s) {', '.join(sorted(bad))} do not apply to {fmt} input")


# ---------------------------------------------------------------------- WebGraph BV graphs
def _convert_webgraph(
    path: str,
    out: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    properties: PathLike | None = None,
    memory_limit: Any = None,
    tmp_dir: Any = None,
    progress: Any = False,
    **ignored: Any,
) -> tuple[Graph, dict[str, Any]]:
    """A BV graph, decoded in Rust by the ``webgraph`` crate into the out-of-core builder."""
    _reject_text_options(ignored, "webgraph")
    if any(c is not None for c in (src_col, dst_col, weight_col)):
        raise ValueError("src_col, dst_col and weight_col do not apply to webgraph input")
    if weighted:
        raise ValueError("weighted=True: a WebGraph BV graph has no arc weights")
    if id_kind == "str":
        raise ValueError("id_kind='str' does not apply to webgraph input: its ids are 0..n-1")
    if path.endswith(".graph"):
        graph_file = path
    elif path.endswith(".properties"):
        graph_file = _root_name(path) + ".graph"
    else:
        graph_file = path + ".graph"
    total = os.path.getsize(graph_file) if os.path.isfile(graph_file) else None
    bar = _ConvertProgress(total, progress, "B")
    try:
        stats = _core.convert_webgraph(
            path,
            out,
            properties=None if properties is None else os.fspath(properties),
            directed=_directed_flag(directed, "webgraph"),
            self_loops=self_loops,
            merge=merge,
            memory_limit=parse_size(memory_limit),
            tmp_dir=None if tmp_dir is None else os.fspath(tmp_dir),
            progress=(lambda done, _total=None: bar.set(int(done))) if progress else None,
        )
    finally:
        bar.close()
    g = Graph.open(out)
    stats = dict(stats)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges, edges_read=stats["source_arcs"])
    return g, stats


# ---------------------------------------------------------------------- numpy edge arrays
def _convert_npy(
    path: str,
    out: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: Any = None,
    tmp_dir: Any = None,
    progress: Any = False,
    id_kind: str = "auto",
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    **ignored: Any,
) -> tuple[Graph, dict[str, Any]]:
    _reject_text_options(ignored, "npy")
    if src_col is not None or dst_col is not None or weight_col is not None:
        raise ValueError("column options do not apply to .npy edge arrays (columns 0, 1, [2])")
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise GraphFormatError(f"{path}: not a readable .npy array: {e}") from None
    if a.ndim != 2 or a.shape[1] not in (2, 3):
        raise GraphFormatError(
            f"{path}: expected an edge array of shape (k, 2) or (k, 3), got {a.shape}"
        )
    if weighted is None:
        weighted = a.shape[1] == 3
    if weighted and a.shape[1] != 3:
        raise ValueError(f"{path}: weighted=True needs a third (weight) column")
    return _build(
        _numpy_chunks(a, bool(weighted), path),
        output=out,
        directed=_directed_flag(directed, "npy"),
        weighted=bool(weighted),
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        require_edges=path,
    )


# ---------------------------------------------------------------------- MATLAB
def _convert_mat(
    path: str,
    out: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    var: str | None = None,
    self_loops: str = "keep",
    progress: Any = False,
    memory_limit: Any = None,
    tmp_dir: Any = None,
    merge: str = "sum",
    id_kind: str = "auto",
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    **ignored: Any,
) -> tuple[Graph, dict[str, Any]]:
    ignored.pop("var", None)
    _reject_text_options(ignored, "mat")
    matrix = read_mat(path, var)
    src, dst, w, n, d_out, w_out = _scipy_edges(matrix, directed, weighted, self_loops, path)
    loops = int(matrix.diagonal().astype(bool).sum()) if self_loops == "drop" else 0
    g, stats = _build(
        iter([(src, dst, w)]),
        output=out,
        directed=d_out,
        weighted=w_out,
        num_nodes=n,
        self_loops="keep",
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )
    stats["self_loops_dropped"] = loops
    return g, stats


def read_mat(path: PathLike, var: str | None = None) -> Any:
    """Read the adjacency matrix stored in a MATLAB ``.mat`` file as a scipy.sparse matrix.

    Parameters
    ----------
    path : path
        A MATLAB v4/v5/v7 file (read with ``scipy.io.loadmat``) or a v7.3 (HDF5) file (needs
        ``h5py``).
    var : str, optional
        The variable name. Default: the only sparse matrix in the file; if there are several,
        ``network`` when present (BlogCatalog's convention).

    Returns
    -------
    scipy.sparse.csr_matrix
    """
    p = os.fspath(path)
    sio = _need("scipy.io", "scipy", "reading .mat files")
    sp = _need("scipy.sparse", "scipy", "reading .mat files")
    try:
        info = sio.whosmat(p)
    except NotImplementedError:
        return _read_mat_hdf5(p, var)
    except Exception as e:  # scipy raises ValueError/TypeError/OSError on garbage
        if _is_hdf5(p):
            return _read_mat_hdf5(p, var)
        raise GraphFormatError(f"{p}: not a readable MATLAB file: {e}") from None
    name = _pick_mat_var(p, [(n, cls, shape) for n, shape, cls in info], var)
    try:
        data = sio.loadmat(p, variable_names=[name])
    except Exception as e:  # noqa: BLE001
        raise GraphFormatError(f"{p}: cannot read variable {name!r}: {e}") from None
    m = data[name]
    if sp.issparse(m):
        return sp.csr_matrix(m)
    m = np.asarray(m)
    if m.ndim != 2 or m.dtype.kind not in "biuf":
        raise GraphFormatError(
            f"{p}: variable {name!r} is a {m.dtype} array of shape {m.shape}, not an adjacency "
            "matrix"
        )
    return sp.csr_matrix(m)


def _pick_mat_var(
    path: str, entries: list[tuple[str, str, tuple[int, ...]]], var: str | None
) -> str:
    listing = ", ".join(f"{n} ({c} {'x'.join(map(str, s))})" for n, c, s in entries) or "none"
    if var is not None:
        if var not in [e[0] for e in entries]:
            raise GraphFormatError(f"{path}: no variable {var!r}; variables: {listing}")
        return var
    sparse = [
        n
        for n, cls, shape in entries
        if cls == "sparse" and len(shape) == 2 and shape[0] == shape[1]
    ]
    if len(sparse) == 1:
        return sparse[0]
    if "network" in sparse:
        return "network"
    if not sparse:
        raise GraphFormatError(
            f"{path}: no square sparse matrix found; pass var=NAME (--var NAME). Variables: "
            f"{listing}"
        )
    raise GraphFormatError(
        f"{path}: several sparse matrices ({', '.join(sparse)}); choose one with var=NAME "
        f"(--var NAME)"
    )


def _is_hdf5(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(1024)
    return b"\x89HDF\r\n\x1a\n" in head[:8] or head[512:520] == b"\x89HDF\r\n\x1a\n"


def _read_mat_hdf5(path: str, var: str | None) -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError(
            f"{path} is a MATLAB v7.3 (HDF5) file: install h5py to read it "
            "(pip install 'instant-embedding[mat]' or pip install h5py), or re-save it in "
            "MATLAB with save(..., '-v7')"
        ) from None
    sp = _need("scipy.sparse", "scipy", "reading .mat files")
    with h5py.File(path, "r") as f:
        entries = []
        for name, obj in f.items():
            if name.startswith("#"):
                continue
            if isinstance(obj, h5py.Group) and "MATLAB_sparse" in obj.attrs:
                nrows = int(obj.attrs["MATLAB_sparse"])
                ncols = int(obj["jc"].shape[0]) - 1
                entries.append((name, "sparse", (nrows, ncols)))
            elif isinstance(obj, h5py.Dataset):
                cls = obj.attrs.get("MATLAB_class", b"?")
                cls = cls.decode("ascii", "replace") if isinstance(cls, bytes) else str(cls)
                entries.append((name, cls, tuple(reversed(obj.shape))))
        name = _pick_mat_var(path, entries, var)
        obj = f[name]
        if isinstance(obj, h5py.Group):
            if "MATLAB_sparse" not in obj.attrs:
                raise GraphFormatError(f"{path}: variable {name!r} is not a matrix")
            nrows = int(obj.attrs["MATLAB_sparse"])
            jc = np.asarray(obj["jc"], dtype=np.int64)
            ir = np.asarray(obj["ir"], dtype=np.int64) if "ir" in obj else np.zeros(0, np.int64)
            data = (
                np.asarray(obj["data"]) if "data" in obj else np.ones(ir.shape[0], dtype=np.float64)
            )
            if data.dtype.names:  # complex
                raise GraphFormatError(f"{path}: variable {name!r} is complex")
            return sp.csr_matrix(sp.csc_matrix((data, ir, jc), shape=(nrows, jc.shape[0] - 1)))
        arr = np.asarray(obj).T  # MATLAB stores column-major
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise GraphFormatError(f"{path}: variable {name!r} is not a numeric matrix")
        return sp.csr_matrix(arr)


# ---------------------------------------------------------------------- VERSE .bcsr
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
        # rows [row, stop) hold about _CHUNK_EDGES arcs (at least one row)
        stop = int(np.searchsorted(b.offsets, start + _CHUNK_EDGES, side="right"))
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
            w = _check_weights(
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


def _convert_bcsr(
    path: str,
    out: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: Any = None,
    tmp_dir: Any = None,
    progress: Any = False,
    id_kind: str = "auto",
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    **ignored: Any,
) -> tuple[Graph, dict[str, Any]]:
    _reject_text_options(ignored, "bcsr")
    b = _read_bcsr(path)
    has_w = b.weights is not None
    if weighted is None:
        weighted = has_w
    weighted = bool(weighted)
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
    bar = _ConvertProgress(b.ne, progress, "arcs")

    def chunks() -> Iterator[Chunk]:
        for c in _bcsr_chunks(b, path, keep, weighted):
            yield c
            bar.set(min(b.ne, bar.done + len(c[0])))

    try:
        return _build(
            chunks(),
            output=out,
            directed=bool(directed),
            weighted=weighted,
            num_nodes=b.nv,
            self_loops=self_loops,
            merge=merge,
            memory_limit=memory_limit,
            tmp_dir=tmp_dir,
        )
    finally:
        bar.close()


# ---------------------------------------------------------------------- text edge lists
@dataclass
class _TextSpec:
    delimiter: str | None  # None: runs of whitespace
    comment: bytes
    src: int
    dst: int
    weight: int | None
    skip: dict[str, int]  # raw lines to skip per file (header and the comments before it)


def _norm_delimiter(d: str | None, fmt: str) -> str | None:
    if d is None:
        return {"csv": ",", "tsv": "\t"}.get(fmt, "")
    low = d.lower()
    if low in ("\\t", "tab", "\t"):
        return "\t"
    if low in ("space", "whitespace", "ws", " "):
        return None
    if len(d) != 1 or d in '\r\n"':
        raise ValueError(f"delimiter must be one character (or 'tab'/'space'), got {d!r}")
    return d


def _open_binary(path: str) -> tuple[Any, Any]:
    """(line-iterable binary stream, raw file for progress by compressed bytes)."""
    comp = _compression(path)
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    try:
        if comp is None:
            return raw, raw
        if comp == "gzip":
            return gzip.GzipFile(fileobj=raw), raw
        if comp == "bz2":
            return bz2.BZ2File(raw), raw
        if comp == "xz":
            return lzma.LZMAFile(raw), raw
        try:
            import zstandard
        except ImportError:
            raise ImportError(
                f"{path} is zstd-compressed: install zstandard (pip install zstandard) or "
                "decompress it first"
            ) from None
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw)), raw
    except BaseException:
        raw.close()
        raise


def _data_lines(path: str, comment: bytes, limit: int) -> list[tuple[int, bytes]]:
    """The first ``limit`` non-empty, non-comment lines of a text file, with line numbers."""
    f, raw = _open_binary(path)
    out = []
    try:
        for lineno, line in enumerate(f, 1):
            if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            s = line.strip()
            if not s or s[0] in comment:
                continue
            out.append((lineno, s))
            if len(out) >= limit:
                break
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise GraphFormatError(f"{path}: cannot decompress: {e}") from None
    finally:
        f.close()
        raw.close()
    return out


def _split(line: bytes, delim: bytes | None) -> list[bytes]:
    if delim is None:
        return line.split()
    fields = [x.strip() for x in line.split(delim)]
    return [x[1:-1] if len(x) >= 2 and x[:1] == b'"' and x[-1:] == b'"' else x for x in fields]


_NUM_RE = re.compile(
    rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE
)


def _is_num(tok: bytes) -> bool:
    return _NUM_RE.fullmatch(tok) is not None


def _looks_like_header(sniff: list[tuple[int, bytes]], dbytes: bytes | None) -> bool:
    """Whether the first data line is a header: it names a known pair of edge columns, or one
    of its fields is not a number while the same field is a number on every following line."""
    f0 = _split(sniff[0][1], dbytes)
    low = [x.lower() for x in f0]
    if any(a.encode() in low and b.encode() in low for a, b in _COLUMN_PAIRS):
        return True
    rest = [_split(s, dbytes) for _, s in sniff[1:]]
    return any(
        not _is_num(f0[c]) and all(c < len(r) and _is_num(r[c]) for r in rest)
        for c in range(len(f0))
    )


def _text_spec(
    paths: list[str],
    fmt: str,
    delimiter: str | None,
    comment: str,
    header: bool | None,
    src_col: Any,
    dst_col: Any,
    weight_col: Any,
    weighted: bool | None,
) -> tuple[_TextSpec, bool]:
    comment_b = comment.encode("utf-8")
    if any(len(ch.encode("utf-8")) != 1 for ch in comment):
        raise ValueError(f"comment characters must be ASCII, got {comment!r}")
    delim = _norm_delimiter(delimiter, fmt)
    first = paths[0]
    sniff = _data_lines(first, comment_b, _SNIFF_LINES)
    if delim == "":  # edgelist without an explicit delimiter: comma or whitespace
        delim = "," if sniff and b"," in sniff[0][1] else None
    dbytes = None if delim is None else delim.encode("utf-8")
    named = any(isinstance(c, str) for c in (src_col, dst_col, weight_col))
    if header is None:
        header = named or (len(sniff) >= 2 and _looks_like_header(sniff, dbytes))
    if named and not header:
        raise ValueError("columns selected by name need a header line (header=True)")
    skip: dict[str, int] = {}
    names: list[str] | None = None
    for p in paths:
        lines = sniff if p == first else _data_lines(p, comment_b, 1)
        if not header:
            skip[p] = 0
            continue
        if not lines:
            raise GraphFormatError(f"{p}: empty file (no header line, no edges)")
        lineno, text = lines[0]
        try:
            these = [x.decode("utf-8") for x in _split(text, dbytes)]
        except UnicodeDecodeError:
            raise GraphFormatError(f"{p}:{lineno}: header is not valid UTF-8") from None
        if names is None:
            names = these
        elif these != names:
            raise GraphFormatError(f"{p}:{lineno}: header {these} differs from {names} in {first}")
        skip[p] = lineno
    if names is None:
        ncols = len(_split(sniff[0][1], dbytes)) if sniff else 2
        names = [str(i) for i in range(max(ncols, 2))]
    if weight_col is not None and weighted is False:
        raise ValueError("weight_col was given but weighted=False")
    if header:
        s, d, w = _resolve_columns(names, src_col, dst_col, weight_col, weighted, first)
    else:
        if weighted and weight_col is None:
            weight_col = 2
        s, d, w = _resolve_text_columns(src_col, dst_col, weight_col)
    return _TextSpec(delim, comment_b, s, d, w, skip), w is not None


def _resolve_text_columns(src: Any, dst: Any, weight: Any) -> tuple[int, int, int | None]:
    """Column indices of a text file without a header."""
    for what, c in (("src_col", src), ("dst_col", dst), ("weight_col", weight)):
        if c is not None and (isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0):
            raise ValueError(f"{what} must be a column index >= 0 (or a name, with a header)")
    s = 0 if src is None else int(src)
    d = 1 if dst is None else int(dst)
    if s == d:
        raise ValueError(f"src_col and dst_col are the same column ({s})")
    w = None if weight is None else int(weight)
    if w is not None and w in (s, d):
        raise ValueError("weight_col is also an id column")
    return s, d, w


def _convert_text(
    paths: list[str],
    out: str,
    fmt: str,
    *,
    directed: bool | None = False,
    weighted: bool | None = None,
    delimiter: str | None = None,
    comment: str = "#%",
    header: bool | None = None,
    src_col: Any = None,
    dst_col: Any = None,
    weight_col: Any = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: Any = None,
    tmp_dir: Any = None,
    progress: Any = False,
    var: str | None = None,
) -> tuple[Graph, dict[str, Any]]:
    if var is not None:
        raise ValueError("var applies to .mat input only")
    directed_b = _directed_flag(directed, fmt)
    spec, is_weighted = _text_spec(
        paths, fmt, delimiter, comment, header, src_col, dst_col, weight_col, weighted
    )
    total = sum(os.path.getsize(p) for p in paths)
    rust = _rust_convert_text()
    skips = set(spec.skip.values())
    if rust is not None and len(skips) == 1 and all(_compression(p) != "xz" for p in paths):
        bar = _ConvertProgress(total, progress, "B")
        try:
            stats = rust(
                paths,
                out,
                directed=directed_b,
                weighted=is_weighted,
                delimiter=spec.delimiter,
                comment=comment,
                skip_lines=skips.pop(),
                src_col=spec.src,
                dst_col=spec.dst,
                weight_col=spec.weight,
                id_kind=id_kind,
                self_loops=self_loops,
                merge=merge,
                memory_limit=parse_size(memory_limit),
                tmp_dir=None if tmp_dir is None else os.fspath(tmp_dir),
                progress=(lambda done, _total=None: bar.set(int(done))) if progress else None,
            )
        finally:
            bar.close()
        g = Graph.open(out)
        stats = dict(stats)
        stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges)
        return g, stats
    return _convert_text_python(
        paths,
        out,
        spec,
        directed=directed_b,
        weighted=is_weighted,
        id_kind=id_kind,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
        progress=progress,
        total=total,
    )


class _RetryAsStrings(Exception):
    pass


def _convert_text_python(
    paths: list[str],
    out: str,
    spec: _TextSpec,
    *,
    directed: bool,
    weighted: bool,
    id_kind: str,
    self_loops: str,
    merge: str,
    memory_limit: Any,
    tmp_dir: Any,
    progress: Any,
    total: int,
) -> tuple[Graph, dict[str, Any]]:
    """The pure-Python text reader (used where the native reader is unavailable)."""
    mode = "str" if id_kind == "str" else "int"
    while True:
        bar = _ConvertProgress(total, progress, "B")
        try:
            return _build(
                _text_chunks(paths, spec, mode, weighted, auto=id_kind == "auto", bar=bar),
                output=out,
                directed=directed,
                weighted=weighted,
                self_loops=self_loops,
                merge=merge,
                memory_limit=memory_limit,
                tmp_dir=tmp_dir,
            )
        except _RetryAsStrings:
            mode = "str"
        finally:
            bar.close()


def _text_chunks(
    paths: list[str],
    spec: _TextSpec,
    mode: str,
    weighted: bool,
    *,
    auto: bool,
    bar: _ConvertProgress,
) -> Iterator[Chunk]:
    delim = None if spec.delimiter is None else spec.delimiter.encode("utf-8")
    cols = [spec.src, spec.dst] + ([spec.weight] if spec.weight is not None else [])
    need = max(cols) + 1
    base = 0
    for path in paths:
        f, raw = _open_binary(path)
        try:
            nfields: int | None = None
            first_line = 0
            src: list[bytes] = []
            dst: list[bytes] = []
            wts: list[bytes] = []
            linenos: list[int] = []
            nedges = 0
            skip = spec.skip.get(path, 0)
            lineno = 0
            try:
                for lineno, line in enumerate(f, 1):  # noqa: B007 - used after the loop
                    if lineno <= skip:
                        continue
                    if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                        line = line[3:]
                    s = line.strip()
                    if not s or s[0] in spec.comment:
                        continue
                    fields = _split(s, delim)
                    if nfields is None:
                        nfields, first_line = len(fields), lineno
                    if len(fields) != nfields or len(fields) < need:
                        text = s.decode("utf-8", "replace")
                        if len(fields) < need:
                            msg = f"expected at least {need} columns, found {len(fields)}"
                        else:
                            msg = (
                                f"found {len(fields)} columns, but line {first_line} has {nfields}"
                            )
                        if linenos:  # report an earlier bad value first
                            _parse_text_chunk(path, src, dst, wts, linenos, mode, auto)
                        raise GraphFormatError(f"{path}:{lineno}: {msg}: {text!r}")
                    src.append(fields[spec.src])
                    dst.append(fields[spec.dst])
                    if spec.weight is not None:
                        wts.append(fields[spec.weight])
                    linenos.append(lineno)
                    if len(linenos) >= _CHUNK_EDGES:
                        yield _parse_text_chunk(path, src, dst, wts, linenos, mode, auto)
                        nedges += len(linenos)
                        src, dst, wts, linenos = [], [], [], []
                        bar.set(base + raw.tell())
            except (OSError, EOFError, lzma.LZMAError) as e:
                raise GraphFormatError(f"{path}:{lineno}: cannot decompress: {e}") from None
            if linenos:
                yield _parse_text_chunk(path, src, dst, wts, linenos, mode, auto)
                nedges += len(linenos)
            if nedges == 0:
                raise GraphFormatError(
                    f"{path}: no edges found (empty file, or only comments and header)"
                )
            base += os.path.getsize(path)
            bar.set(base)
        finally:
            f.close()
            raw.close()
    _ = weighted


def _parse_text_chunk(
    path: str,
    src: list[bytes],
    dst: list[bytes],
    wts: list[bytes],
    linenos: list[int],
    mode: str,
    auto: bool,
) -> Chunk:
    def bad_line(i: int, msg: str) -> GraphFormatError:
        return GraphFormatError(f"{path}:{linenos[i]}: {msg}")

    def ids(tokens: list[bytes]) -> Any:
        if mode == "int":
            try:
                return np.array(tokens).astype(np.int64)
            except (ValueError, OverflowError):
                pass
            for i, t in enumerate(tokens):
                try:
                    v = int(t)
                except ValueError:
                    if auto:
                        raise _RetryAsStrings() from None
                    raise bad_line(
                        i, f"id {t.decode('utf-8', 'replace')!r} is not an integer (id_kind='int')"
                    ) from None
                if not -(2**63) <= v <= _INT64_MAX:
                    raise bad_line(
                        i,
                        f"id {t.decode()} overflows int64; pass id_kind='str' "
                        "to keep such ids as strings",
                    )
            raise AssertionError("unreachable")  # pragma: no cover
        try:
            return [t.decode("utf-8") for t in tokens]
        except UnicodeDecodeError:
            i = next(i for i, t in enumerate(tokens) if not _utf8(t))
            raise bad_line(i, f"id {tokens[i]!r} is not valid UTF-8") from None

    s = ids(src)
    d = ids(dst)
    w = None
    if wts:
        try:
            w = np.array(wts).astype(np.float64)
        except ValueError:
            i = next(i for i, t in enumerate(wts) if not _float_ok(t))
            raise bad_line(i, f"non-numeric weight {wts[i].decode('utf-8', 'replace')!r}") from None
        badm = ~(np.isfinite(w) & (w > 0))
        if badm.any():
            i = int(np.flatnonzero(badm)[0])
            what = "NaN" if np.isnan(w[i]) else ("infinite" if np.isinf(w[i]) else "<= 0")
            raise bad_line(
                i,
                f"weight {wts[i].decode('utf-8', 'replace')!r} is {what}; "
                "weights must be finite and > 0",
            )
    return s, d, w


def _utf8(t: bytes) -> bool:
    try:
        t.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _float_ok(t: bytes) -> bool:
    try:
        float(t)
    except ValueError:
        return False
    return True
