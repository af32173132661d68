"""The input formats: the kernel's table (``_core.formats()``, src/io/mod.rs), which also
detects a file's format, and the facade's readers of the formats a library parses (Arrow,
scipy), registered by name."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import _core

if TYPE_CHECKING:
    from ..graph import Graph
    from ._build import Output
    from ._options import ReadOptions

Reader = Callable[[list[str], "Output", "ReadOptions", Any], "tuple[Graph | None, dict[str, Any]]"]


@dataclass(frozen=True)
class Format:
    """One input format: the kernel's row and the reader that streams it into the builder
    (``read(paths, output, options, progress) -> (Graph, stats)``, leaving nothing at
    ``output`` on error; a facade reader also streams into an ``EdgeTarget`` given as
    ``output``, returning no graph)."""

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
    from ._build import read_native

    return {
        f["name"]: Format(
            f["name"],
            f["extensions"],
            read_native if f["native"] else _READERS[f["name"]],
            f["native"],
            f["several"],
            f["compressed"],
            f["directories"],
            f["updates"],
        )
        for f in _core.formats()
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
    p = os.fspath(path)
    if not os.path.isdir(p):
        return str(_core.detect_format(p))
    files = dataset_files(p)
    for f in formats().values():
        if f.directories and any(x.lower().endswith(f.extensions) for x in files):
            return f.name
    return "parquet"


def dataset_files(d: str) -> list[str]:
    """The data files of a dataset directory, recursively, without hidden and ``_`` names."""
    out = []
    for root, dirs, files in os.walk(d):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "_")))
        for f in sorted(files):
            if not f.startswith((".", "_")):
                out.append(os.path.join(root, f))
    return out
