"""``convert``: any registered input format into a graph file."""

from __future__ import annotations

import os
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
    format : str, default "auto"
        ``"edgelist"`` (whitespace/tab/comma separated text), ``"csv"``, ``"tsv"``,
        ``"json"`` (node-link JSON or JSON Lines edges), ``"parquet"``, ``"arrow"``
        (IPC/Feather), ``"mat"`` (MATLAB), ``"bcsr"`` (VERSE XGFS), ``"npy"`` (an int
        ``(k, 2)`` or ``(k, 3)`` edge array), ``"webgraph"`` (a BV graph), ``"mtx"`` (Matrix
        Market), ``"adjlist"`` (adjacency lists), ``"graphml"``, ``"pajek"``. "auto" looks at
        the file's content first (magic, Matrix Market banner, XML root, Pajek, after
        decompression), then its extension (after a ``.gz``/``.bz2``/``.zst``/``.xz``
        suffix), and falls back to a text edge list.
    directed : bool or None, default None
        Whether edges are directed. None lets the input decide where it can: node-link JSON
        by its ``directed`` key, a matrix (``.mat``, ``.bcsr``) by its symmetry (undirected
        if symmetric), Matrix Market by its banner (``symmetric``: undirected), GraphML by
        ``edgedefault``, Pajek by ``*Arcs``/``*Edges``; every other input is undirected.
    weighted : bool, optional
        Text: iff ``weight_col`` is given or a header names a ``weight`` column
        (``weighted=True`` alone reads that column, else column 2); a headerless line with
        more than two fields is refused unless ``weighted`` (or the columns) is given.
        Tables: iff a weight column is given or named "weight". JSON: iff an edge has a
        weight. Matrices: iff some value is not 1. Matrix Market: iff its values are
        ``integer`` or ``real``. GraphML: iff an edge key is named "weight". Pajek: iff a
        value is not 1.
    delimiter : str, optional
        Text field separator: ``","``, ``"\\t"``/``"tab"``, ``";"``, ``" "`` (one space, as
        CSV), ``"whitespace"`` (runs of spaces and tabs, no quoting), or any punctuation
        character. Default: detected per file (docs/CLI.md).
    comment : str, default "#%"
        Text lines starting with one of these characters (after spaces) are skipped, as are
        blank lines.
    header : bool, optional
        Whether the first record of each text file holds column names. Default: detected
        (docs/CLI.md); True when a column is selected by name.
    src_col, dst_col, weight_col : int or str, optional
        Columns by 0-based index or header name. Default: the first known pair of names
        (src/dst, source/target, from/to, ...), else the first two named columns.
    id_kind : {"auto", "int", "str"}, default "auto"
        "auto": integer ids if every id of the input is a canonical integer (``12``, ``-3``;
        not ``007`` or ``+3``), else every id is a string. "str" keeps ids such as ``42`` as
        strings; "int" parses any decimal integer and refuses anything else. Integer ids that
        are exactly ``0..n-1`` are stored implicitly.
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
        WebGraph: the ``.properties`` file, when it is not beside the ``.graph`` file.
    memory_limit : int or str, optional
        Memory budget of the out-of-core builder, e.g. ``"2G"`` (default 2 GiB): edge buffers
        *and* the per-node structures (id map, counters, ``indptr``: about 16-40 bytes per
        node, which cannot spill). If those alone exceed it, the build still completes with
        small buffers, over the budget, and a ``RuntimeWarning`` says by how much.
    tmp_dir : path, optional
        Where the out-of-core builder spills sorted runs (default: the output's folder).
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
    """
    options = {k: v for k, v in locals().items() if k not in ("input", "output", "progress")}
    graph, _ = convert_with_stats(input, output, progress=progress, **options)
    return graph


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
