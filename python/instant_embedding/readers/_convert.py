"""``convert``: any registered input format into a graph file."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Sequence
from typing import Any

from ..graph import Graph
from ._build import PathLike, check_output, warn_if_over_budget
from ._options import ReadOptions
from ._registry import detect_format, formats


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
    paths = (
        [os.fspath(input)]
        if isinstance(input, (str, os.PathLike))
        else [os.fspath(p) for p in input]
    )
    if not paths:
        raise ValueError("no input files given")
    for p in paths:
        # A WebGraph basename names BASENAME.graph.
        if not os.path.exists(p) and not os.path.isfile(p + ".graph"):
            raise FileNotFoundError(f"{p}: no such file or directory")
    out = check_output(output, paths)
    name = opts.format
    if name == "auto":
        if opts.properties is not None:
            name = "webgraph"
        else:
            names = {detect_format(p) for p in paths}
            if len(names) > 1:
                raise ValueError(f"inputs have different formats ({', '.join(sorted(names))})")
            name = names.pop()
    fmt = formats()[name]
    opts = opts.replace(format=name)
    opts.check_applies(name)
    for p in paths:
        if os.path.isdir(p) and not fmt.directories:
            raise IsADirectoryError(f"{p}: is a directory (only Parquet/Arrow datasets can be)")
    if len(paths) > 1 and not fmt.several:
        raise ValueError(f"format {name!r} takes exactly one input file, got {len(paths)}")
    t0 = time.perf_counter()
    g, stats = fmt.read(paths, out, opts, progress)
    assert g is not None  # a path in, a graph out
    stats["format"] = name
    stats["seconds"] = time.perf_counter() - t0
    warn_if_over_budget(stats, opts.memory_limit)
    return g, stats
