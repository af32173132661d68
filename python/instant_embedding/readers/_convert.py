"""``convert``: any input format into a graph file; the input formats.

The formats are the kernel's table (``_core.formats()``, src/io/mod.rs), which also detects a
file's format; the kernel reads most of them (``read_native``), and a module of this package
registers its reader of each format a library parses (Arrow, scipy).
"""

from __future__ import annotations

import os
import textwrap
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._core import ReadOptions
from .._progress import ByteProgress
from ..graph import Graph
from ._build import Output, PathLike, check_output

#: ``read(paths, output, options, progress) -> (graph, stats)``, leaving nothing at
#: ``output`` on error; a facade reader also streams into an ``EdgeTarget`` (no graph).
Reader = Callable[[list[str], Output, ReadOptions, Any], "tuple[Graph | None, dict[str, Any]]"]


@dataclass(frozen=True)
class Format:
    """One input format: the kernel's row and the reader that streams it into the builder."""

    name: str
    extensions: tuple[str, ...]
    read: Reader
    native: bool
    several: bool
    compressed: bool
    directories: bool
    updates: bool


_READERS: dict[str, Reader] = {}


def register(name: str, read: Reader) -> None:
    """Gives the kernel's format ``name`` the facade's reader (a format a library parses)."""
    _READERS[name] = read


def formats() -> dict[str, Format]:
    """The input formats, by name, in the kernel's order."""
    keys = [k for k in Format.__dataclass_fields__ if k != "read"]
    return {
        f["name"]: Format(
            **{k: f[k] for k in keys}, read=read_native if f["native"] else _READERS[f["name"]]
        )
        for f in map(dict[str, Any], _core.formats())
    }


def detect_format(path: str | os.PathLike[str]) -> str:
    """The input format of ``path``: by its first bytes, then its extension, else text
    (docs/CLI.md, "The reading contract"). A directory is a Parquet (or Arrow) dataset.

    Raises
    ------
    GraphFormatError
        ``path`` is a graph file already, or content no reader takes (the message says what
        reads it).
    """
    return str(_core.detect_format(os.fspath(path)))


def dataset_files(d: str) -> list[str]:
    """The data files of a dataset directory, recursively, without hidden and ``_`` names."""
    return _core.dataset_files(d)


def read_native(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Reads a format the kernel parses (``_core.convert_native``) with a progress bar in bytes
    of input (the kernel knows their total); returns the graph written to ``out`` and the
    reader's statistics. Into an ``EdgeTarget``, the kernel reads the edges for its graph
    (``_core.read_edges``)."""
    if not isinstance(out, str):  # update: the graph's own ids also settle a first line
        r = _core.read_edges(paths, opts, out.graph._native)
        out.add(r["src"], r["dst"], r["weights"])
        return None, {"edges_read": len(r["src"]), "headers": r["headers"]}
    bar = ByteProgress(None, progress, "B")
    try:
        hook = bar.report if progress else None  # bytes done of the input's total
        stats = dict(_core.convert_native(paths, out, opts, progress=hook))
    finally:
        bar.close()
    g = Graph.open(out)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges, edges_read=stats["edge_lines"])
    return g, stats


def convert(
    input: PathLike | Sequence[PathLike],  # noqa: A002 - mirrors the CLI argument
    output: PathLike,
    *,
    # <settings: convert>
    format: str = "auto",
    directed: bool | None = None,
    weighted: bool | None = None,
    delimiter: str | None = None,
    comment: str = "#%",
    header: bool | None = None,
    src_col: int | str | None = None,
    dst_col: int | str | None = None,
    weight_col: int | str | None = None,
    decimal_comma: bool | None = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    var: str | None = None,
    properties: str | os.PathLike[str] | None = None,
    memory_limit: int | str | None = None,
    tmp_dir: str | os.PathLike[str] | None = None,
    # </settings>
    progress: Any = False,
) -> Graph:
    """Convert input files into a graph file and open it.

    The rules that decide what a file means (format, delimiter, quoting, header, id typing)
    are written down in docs/CLI.md, "What a text file means"; a file they cannot read without
    guessing is refused with an error that says which parameter settles it.

    Parameters
    ----------
    input : path or list of paths
        One file, several files of the same format (text and JSON Lines files, Parquet/Arrow
        files are concatenated), a directory of Parquet/Arrow shards, or a WebGraph basename.
    output : path
        The graph file to write. It appears atomically when complete; on any error no file is
        left at this path (an existing file there is untouched).
    <reading options>
    progress : bool or callable, default False
        True shows a progress bar (tqdm) or logs; a callable receives ``(done, total)``.

    Returns
    -------
    Graph
        The new file, memory-mapped.

    Raises
    ------
    GraphFormatError
        Input that is not what its format says, naming the file, line (or row) and offending
        text: malformed records, wrong column counts, bad weights, a file that is not an edge
        list at all (JSON that is no graph, binary data, a single column, only a header).
    FileNotFoundError, IsADirectoryError, PermissionError
        File-system problems.
    ImportError
        The format needs an optional dependency that is missing (the message names it).

    Warns
    -----
    RuntimeWarning
        The per-node structures alone (id map, counters, ``indptr``, which cannot spill)
        exceeded ``memory_limit``: the build completed over the budget, by the amount said.
    """
    options = {k: v for k, v in locals().items() if k not in ("input", "output", "progress")}
    graph, _ = convert_with_stats(input, output, progress=progress, **options)
    return graph


# The Python type of each kind of reading option (a choice lists its values).
_KINDS = {
    "flag": "bool",
    "text": "str",
    "column": "int or str",
    "size": "int or str",
    "path": "path",
}


def _option_docs() -> str:
    """The reading options' entries of :func:`convert`'s docstring, from the kernel's table."""
    out = []
    for s in ReadOptions.settings():
        if s["formats"]:
            kind = _KINDS.get(s["type"]) or "{" + ", ".join(map(repr, s["choices"] or ())) + "}"
            default = f"default {s['default']!r}" if s["default"] else "optional"
            text = textwrap.fill(s["help"][0].upper() + s["help"][1:] + ".", 88 - 8)
            out.append(f"    {s['name']} : {kind}, {default}\n")
            out.append(textwrap.indent(text, " " * 8) + "\n")
    return "".join(out)


if convert.__doc__:  # the options' entries are written once, in the kernel's table
    convert.__doc__ = convert.__doc__.replace("    <reading options>\n", _option_docs())


def convert_with_stats(
    input: PathLike | Sequence[PathLike],  # noqa: A002
    output: PathLike,
    *,
    progress: Any = False,
    **options: Any,
) -> tuple[Graph, dict[str, Any]]:
    """:func:`convert`, also returning a dict of statistics (edges read, header lines
    skipped, columns used, seconds, ...). Takes the same keyword arguments (those of
    :class:`ReadOptions`)."""
    opts = ReadOptions(**options)
    many = input if not isinstance(input, (str, os.PathLike)) else [input]
    paths = [os.fspath(p) for p in many]
    name = _core.resolve_format(paths, opts)  # detected, and checked against the inputs
    out = check_output(output, paths)
    fmt, opts = formats()[name], opts.replace(format=name)
    t0 = time.perf_counter()
    g, stats = fmt.read(paths, out, opts, progress)
    assert g is not None  # a path in, a graph out
    stats["format"] = name
    stats["seconds"] = time.perf_counter() - t0
    if stats.get("over_budget"):  # the kernel's words; the build completed over the budget
        warnings.warn(stats["over_budget"], RuntimeWarning, stacklevel=3)
    return g, stats
