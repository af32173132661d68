"""The registry of input formats, and format detection (by magic first, then by extension).

A format is one :class:`Format` row, registered by its module with :func:`register`. A new
format is one module in this package, one test file and one row in docs/CLI.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import GraphFormatError

if TYPE_CHECKING:
    from ..graph import Graph
    from ._options import ReadOptions

#: Magic of this library's graph files.
GRAPH_MAGIC = b"IEGRAPH\x00"
#: Bytes read to recognise a format.
HEAD_BYTES = 64

COMPRESSION_EXT = (".gz", ".gzip", ".bz2", ".zst", ".zstd", ".xz")
_COMPRESSION_MAGIC = (b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00")

Reader = Callable[[list[str], str, "ReadOptions", Any], "tuple[Graph, dict[str, Any]]"]


@dataclass(frozen=True)
class Format:
    """One input format.

    Attributes
    ----------
    name : str
        The ``format=`` value (``--format`` in the CLI).
    extensions : tuple of str
        Lower-case file name endings (``.csv``); for text formats also under a compression
        suffix (``.csv.gz``).
    read : callable
        ``read(paths, output, options, progress) -> (Graph, stats)``; streams into the graph
        builder and leaves nothing at ``output`` on error.
    magic : callable, optional
        ``magic(head, path) -> bool`` on the file's first bytes (and its path, for formats
        recognised by a companion file); tried before any extension.
    directories : bool
        Whether a directory (of shards) is an input of this format.
    several : bool
        Whether several input files are read as one graph.
    compressed : bool
        Whether gzip/bzip2/zstd/xz files of this format are read.
    """

    name: str
    extensions: tuple[str, ...]
    read: Reader
    magic: Callable[[bytes, str], bool] | None = None
    directories: bool = False
    several: bool = False
    compressed: bool = False


_FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Adds a format to the registry (its module does this once, on import)."""
    if fmt.name in _FORMATS or fmt.name == "auto":
        raise ValueError(f"format {fmt.name!r} is registered already")
    _FORMATS[fmt.name] = fmt
    return fmt


def formats() -> dict[str, Format]:
    """The registered formats, by name, in registration order."""
    return dict(_FORMATS)


def get(name: str) -> Format:
    if name not in _FORMATS:
        raise ValueError(
            f"format must be 'auto' or one of {', '.join(map(repr, _FORMATS))}, got {name!r}"
        )
    return _FORMATS[name]


def head_of(path: str) -> bytes:
    if not os.path.isfile(path):
        return b""
    with open(path, "rb") as f:
        return f.read(HEAD_BYTES)


def _strip_compression(name: str) -> tuple[str, bool]:
    for ext in COMPRESSION_EXT:
        if name.endswith(ext):
            return name[: -len(ext)], True
    return name, False


def detect_format(path: str | os.PathLike[str]) -> str:
    """The input format of ``path``: by its first bytes, then its extension, else text.

    Returns the name of a registered format (``"edgelist"`` when nothing else matches). A
    directory is a Parquet (or Arrow) dataset.

    Raises
    ------
    GraphFormatError
        ``path`` is already an instant-embedding graph file.
    """
    p = os.fspath(path)
    if os.path.isdir(p):
        dir_formats = [f for f in _FORMATS.values() if f.directories]
        files = dataset_files(p)
        for f in dir_formats:
            if any(x.lower().endswith(f.extensions) for x in files):
                return f.name
        return dir_formats[0].name if dir_formats else "edgelist"
    head = head_of(p)
    if head.startswith(GRAPH_MAGIC):
        raise GraphFormatError(
            f"{p} is an instant-embedding graph file already (its magic says so): open it, "
            "there is nothing to convert"
        )
    compressed = head.startswith(_COMPRESSION_MAGIC)
    if not compressed:
        for f in _FORMATS.values():
            if f.magic is not None and f.magic(head, p):
                return f.name
    if os.path.isfile(p):
        # Text formats with a signature, after decompression (the kernel reads the content).
        from .. import _core

        kind, refusal = _core.sniff_format(p)
        if refusal is not None:
            raise GraphFormatError(refusal)
        if kind in _FORMATS:
            return kind
    name, _ = _strip_compression(p.lower())
    if not compressed and name.endswith(".graph"):
        # Neither our magic nor a WebGraph with its properties: reading it as text would be
        # a guess, and a wrong one builds a wrong graph.
        root = p[: -len(".graph")]
        raise GraphFormatError(
            f"{p} is not an instant-embedding graph file (no IEGRAPH magic), and there is no "
            f"{os.path.basename(root)}.properties beside it for a WebGraph BV graph: pass the "
            "WebGraph properties file (properties=PATH, --properties PATH) or the input's "
            "format"
        )
    for f in _FORMATS.values():
        if (f.compressed or not compressed) and name.endswith(f.extensions):
            return f.name
    return "edgelist"


def dataset_files(d: str) -> list[str]:
    """The data files of a dataset directory, recursively, without hidden and ``_`` names."""
    out = []
    for root, dirs, files in os.walk(d):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "_")))
        for f in sorted(files):
            if not f.startswith((".", "_")):
                out.append(os.path.join(root, f))
    return out
