"""Edge chunks into a graph: the sink over the out-of-core builder, value checks, columns.

A chunk is ``(src, dst, weights or None)``: int64 arrays or lists of str, float64 weights.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from .. import _core
from .._progress import ByteProgress
from ..errors import GraphFormatError
from ..graph import Graph
from ._options import ReadOptions

PathLike = str | os.PathLike[str]
Chunk = tuple[Any, Any, Any]


class EdgeTarget(Protocol):
    """Where a reader's edges go instead of a new graph file: ``update`` adds each chunk to
    (or removes it from) a live graph as it is read."""

    def add(self, src: Any, dst: Any, weights: Any) -> None: ...


#: A reader's output: a graph file path, or an edge target.
Output = str | EdgeTarget

_INT64_MAX = np.iinfo(np.int64).max
#: Edges per chunk fed to the builder.
CHUNK_EDGES = 1 << 20


def need(module: str, extra: str, what: str) -> Any:
    """Imports an optional dependency or explains which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise ImportError(
            f"{what} needs the optional dependency {top!r}: "
            f"pip install 'instant-embedding[{extra}]' (or pip install {top})"
        ) from None


def check_output(output: PathLike, inputs: Sequence[str] = ()) -> str:
    """The output path, checked: not a directory, in an existing directory, not an input."""
    out = os.fspath(output)
    if os.path.isdir(out):
        raise IsADirectoryError(f"{out}: output is a directory; give a file name like x.graph")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{out}: the output's folder {parent} does not exist")
    for p in inputs:
        if os.path.exists(p) and os.path.exists(out) and os.path.samefile(p, out):
            raise ValueError(f"{out}: output would overwrite the input file")
    return out


def read_native(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Reads a format the kernel parses (``_core.convert_native``) with a progress bar in bytes
    of input; returns the graph written to ``out`` and the reader's statistics."""
    if not isinstance(out, str):  # update reads these formats with _core.read_edges
        raise TypeError(f"format {opts.format!r} is read into a graph file")
    files = [p for p in paths if os.path.isfile(p)]
    if opts.format == "webgraph":  # named by its basename, .graph or .properties file
        root = paths[0].removesuffix(".graph").removesuffix(".properties")
        files = [f for f in (root + ".graph",) if os.path.isfile(f)]
    bar = ByteProgress(sum(map(os.path.getsize, files)) or None, progress, "B")
    try:
        hook = bar.native_hook if progress else None
        stats = dict(_core.convert_native(paths, out, opts, progress=hook))
    finally:
        bar.close()
    g = Graph.open(out)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges, edges_read=stats["edge_lines"])
    return g, stats


def warn_if_over_budget(stats: dict[str, Any], memory_limit: int) -> None:
    """Warn when the per-node structures alone exceeded ``memory_limit`` (the build went on)."""
    node_bytes = stats.get("peak_node_bytes")
    if not node_bytes or node_bytes <= memory_limit:
        return
    n = max(int(stats.get("num_nodes") or 1), 1)
    warnings.warn(
        f"memory_limit {memory_limit / 2**20:,.0f} MiB was exceeded: the id map, counters and "
        f"indptr of {n:,} nodes alone took {node_bytes / 2**20:,.0f} MiB "
        f"({node_bytes / n:.0f} B per node), which cannot spill to disk. Give at least "
        f"{(node_bytes + (256 << 20)) / 2**30:.1f} GiB to hold the limit.",
        RuntimeWarning,
        stacklevel=4,
    )


# ====================================================================== edge sink
class Sink:
    """Receives edge chunks and writes the graph file atomically through the out-of-core
    ``_core.GraphBuilder``; the output appears only on :meth:`finish`."""

    def __init__(
        self,
        output: str,
        opts: ReadOptions,
        *,
        directed: bool,
        weighted: bool,
        id_kind: str,
        num_nodes: int | None,
    ) -> None:
        self.weighted = weighted
        self.edges_read = 0
        self._b = _core.GraphBuilder(
            output,
            directed=directed,
            weighted=weighted,
            id_kind=id_kind,
            num_nodes=num_nodes,
            self_loops=opts.self_loops,
            merge=opts.merge,
            memory_limit=opts.memory_limit,
            tmp_dir=opts.tmp_dir,
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
        self._b.add_edges(src, dst, weights)

    def finish(self) -> dict[str, Any]:
        stats = dict(self._b.finish())
        stats.setdefault("edges_read", self.edges_read)
        return stats

    def abort(self) -> None:
        try:
            self._b.abort()
        except Exception:  # noqa: BLE001 - aborting must not mask the original error
            pass


def drop_self_loops(src: Any, dst: Any, w: Any) -> tuple[Any, Any, Any, int]:
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


def concat_chunks(chunks: list[Chunk], strings: bool, weighted: bool) -> tuple[Any, Any, Any]:
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


def build(
    chunks: Iterable[Chunk],
    opts: ReadOptions,
    output: PathLike | None,
    *,
    directed: bool,
    weighted: bool,
    num_nodes: int | None = None,
    nodes: Any = None,
    require_edges: str | None = None,
) -> tuple[Graph, dict[str, Any]]:
    """Builds a graph from a stream of normalised chunks: in memory (``output`` None, or
    ``nodes`` given), else streamed into a graph file at ``output``.

    ``require_edges`` names the input in the error raised when there is no edge.
    """
    if output is None or nodes is not None:
        collected: list[Chunk] = []
        kind = None
        dropped = 0
        read = 0
        for s, d, w in chunks:
            kind = chunk_kind(s, kind, "input")
            read += len(s)
            if opts.self_loops == "drop":
                s, d, w, k = drop_self_loops(s, d, w)
                dropped += k
            if weighted and w is None:
                w = np.ones(len(s), dtype=np.float64)
            collected.append((s, d, w if weighted else None))
        if read == 0 and require_edges:
            raise GraphFormatError(f"{require_edges}: no edges found")
        src, dst, w = concat_chunks(collected, kind == "str", weighted)
        g = Graph.from_edges(
            src,
            dst,
            num_nodes=num_nodes,
            directed=directed,
            weights=w,
            nodes=nodes,
            merge=opts.merge,
        )
        stats = {"edges_read": read, "self_loops_dropped": dropped}
        if output is not None:
            out = check_output(output)
            g.save(out)
            g = Graph.open(out)
        stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges)
        return g, stats

    out = check_output(output)
    sink: Sink | None = None
    kind = None

    def open_sink(k: str) -> Sink:
        return Sink(
            out,
            opts,
            directed=directed,
            weighted=weighted,
            id_kind="implicit" if num_nodes is not None else k,
            num_nodes=num_nodes,
        )

    try:
        for s, d, w in chunks:
            kind = chunk_kind(s, kind, "input")
            if sink is None:
                sink = open_sink(kind)
            sink.add(s, d, w)
        if sink is None or sink.edges_read == 0:
            if require_edges:
                raise GraphFormatError(f"{require_edges}: no edges found")
            if sink is None:
                sink = open_sink(kind or "int")
        stats = sink.finish()
    except BaseException:
        if sink is not None:
            sink.abort()
        raise
    g = Graph.open(out)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges)
    return g, stats


def build_into(
    chunks: Iterable[Chunk], opts: ReadOptions, output: Output, **how: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """A reader's end: :func:`build` into a graph file, or each chunk into an
    :class:`EdgeTarget` (no graph: None)."""
    if isinstance(output, str):
        return build(chunks, opts, output, **how)
    read = 0
    for s, d, w in chunks:
        output.add(s, d, w if how["weighted"] else None)
        read += len(s)
    if read == 0 and how.get("require_edges"):
        raise GraphFormatError(f"{how['require_edges']}: no edges found")
    return None, {"edges_read": read}


def chunk_kind(src: Any, prev: str | None, where: str) -> str:
    kind = "int" if isinstance(src, np.ndarray) else "str"
    if prev is not None and kind != prev and len(src):
        raise GraphFormatError(f"{where}: mixes integer and string node ids between chunks")
    return prev if (prev is not None and not len(src)) else kind


# ====================================================================== value normalisation
def fmt_row(where: str, row: int) -> str:
    return f"{where}: row {row}"


def norm_ids(values: Any, want: str, where: str, col: str, row0: int) -> Any:
    """One column of node ids (an array of any integer, float, str or object dtype, or a
    sequence) as an int64 array or a list of str, typed as ``want`` ("auto", "int", "str")
    asks: the kernel's id boundary (``_core.node_ids``); errors name the row (from ``row0``)."""
    return _core.node_ids(values, want, where, col, row0)


def check_weights(
    w: Any, where: str, row0: int, col: str | None = "weight", unit: str = "row"
) -> np.ndarray:
    """Weights as float64, checked finite and > 0 by the kernel (errors name the row and
    column)."""
    return _core.edge_weights(w, where, row0, col, unit)


# ====================================================================== column resolution
def resolve_columns(
    names: Sequence[str],
    src: int | str | None,
    dst: int | str | None,
    weight: int | str | None,
    weighted: bool | None,
    where: str,
) -> tuple[int, int, int | None]:
    """Maps column selections (index, name or None) to indices by the kernel's column rule,
    the one text headers are read with (``_core.table_columns``)."""
    opts = ReadOptions(src_col=src, dst_col=dst, weight_col=weight, weighted=weighted)
    return _core.table_columns([str(n) for n in names], opts, where)
