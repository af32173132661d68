"""Edge chunks into a graph: the out-of-core builder (or an in-memory graph), output checks.

A chunk is ``(src, dst, weights or None)``: int64 arrays or lists of str (``_core.node_ids``),
float64 weights (``_core.edge_weights``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from .. import _core
from .._core import ReadOptions
from ..errors import GraphFormatError
from ..graph import Graph

PathLike = str | os.PathLike[str]
Chunk = tuple[Any, Any, Any]

#: Edges per chunk fed to the builder.
CHUNK_EDGES = 1 << 20


class EdgeTarget(Protocol):
    """Where a reader's edges go instead of a new graph file: ``update`` adds each chunk to
    (or removes it from) ``graph``, a live graph, as it is read."""

    graph: Any

    def add(self, src: Any, dst: Any, weights: Any) -> None: ...


#: A reader's output: a graph file path, or an edge target.
Output = str | EdgeTarget


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
    """Builds a graph from a stream of chunks: in memory (``output`` None, or ``nodes`` given,
    then saved to ``output`` if any), else streamed into the out-of-core
    ``_core.GraphBuilder``, which writes ``output`` atomically.

    ``require_edges`` names the input in the error raised when there is no edge.
    """
    out = None if output is None else check_output(output)
    directed, weighted = bool(directed), bool(weighted)
    kind: str | None = None
    read = 0
    parts: list[Chunk] = []
    builder: Any = None

    def open_builder(out: str, kind: str) -> Any:
        return _core.GraphBuilder(
            out,
            directed=directed,
            weighted=weighted,
            id_kind="implicit" if num_nodes is not None else kind,
            num_nodes=num_nodes,
            self_loops=opts.self_loops,
            merge=opts.merge,
            memory_limit=opts.memory_limit,
            tmp_dir=opts.tmp_dir,
        )

    try:
        for s, d, w in chunks:
            if len(s) == 0:
                continue
            k = "int" if isinstance(s, np.ndarray) else "str"
            if kind is not None and k != kind:
                raise GraphFormatError("input: mixes integer and string node ids between chunks")
            kind, read = k, read + len(s)
            w = w if weighted else None
            if out is None or nodes is not None:
                parts.append((s, d, w))
            else:
                builder = builder or open_builder(out, kind)
                builder.add_edges(s, d, w)
        if read == 0 and require_edges:
            raise GraphFormatError(f"{require_edges}: no edges found")
        if out is not None and nodes is None:
            # No edges: the ids asked for.
            builder = builder or open_builder(out, "str" if opts.id_kind == "str" else "int")
            stats = {"edges_read": read, **builder.finish()}
            g = Graph.open(out)
            return g, {**stats, "num_nodes": g.num_nodes, "num_edges": g.num_edges}
    except BaseException:
        if builder is not None:
            builder.abort()
        raise
    join: Any = (lambda x: [v for a in x for v in a]) if kind == "str" else np.concatenate
    src, dst = (join([c[i] for c in parts]) if parts else np.zeros(0, np.int64) for i in (0, 1))
    w = np.concatenate([c[2] for c in parts]) if weighted and parts else None
    w = np.zeros(0) if weighted and w is None else w
    extra = [] if nodes is None else nodes
    how = (num_nodes, directed, w, opts.merge, opts.self_loops)  # the kernel drops self-loops
    g = Graph(_core.Graph.build(src, dst, extra, *how))
    if out is not None:
        g.save(out)
        g = Graph.open(out)
    return g, {"edges_read": read, "num_nodes": g.num_nodes, "num_edges": g.num_edges}
