"""Getting graphs in: readers of every supported input format into the graph file.

Two kinds of entry points:

- :func:`convert` reads files (text edge lists, CSV/TSV, node-link JSON and JSON Lines,
  Matrix Market, GraphML, Pajek, adjacency lists, Parquet files and directories, Arrow IPC
  files, MATLAB ``.mat``, VERSE ``.bcsr``, ``.npy`` edge arrays, WebGraph BV graphs) and
  writes a graph file atomically. Large inputs are streamed into the out-of-core builder, so
  the edge list never has to fit in memory.
- ``from_*`` functions take objects already in memory (scipy.sparse, networkx, pandas, Arrow,
  numpy) and return an in-memory :class:`~instant_embedding.Graph`, or write a graph file
  when ``output=`` is given.

The formats are the kernel's table (``formats()``); every reader takes one
:class:`ReadOptions`. Bad input raises :class:`~instant_embedding.GraphFormatError` (a
``ValueError``) naming the file, the line or row, and the offending text; the output path
never holds a partial file.
"""

from __future__ import annotations

from .._core import DEFAULT_MEMORY_LIMIT, ReadOptions, parse_size

# Importing a format module registers its reader of the formats a library parses.
from ._build import check_output
from ._convert import (
    Format,
    convert,
    convert_with_stats,
    dataset_files,
    detect_format,
    formats,
    register,
)
from .mat import read_mat
from .memory import from_networkx, from_pandas, from_scipy
from .npy import from_numpy
from .table import from_arrow

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "Format",
    "ReadOptions",
    "check_output",
    "convert",
    "convert_with_stats",
    "dataset_files",
    "detect_format",
    "formats",
    "from_arrow",
    "from_networkx",
    "from_numpy",
    "from_pandas",
    "from_scipy",
    "parse_size",
    "read_mat",
    "register",
]
