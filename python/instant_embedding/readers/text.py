"""Text formats parsed in Rust: edge lists, CSV and TSV (``_core.convert_text``,
src/io/text.rs), Matrix Market (src/io/mtx.rs), adjacency lists (src/io/adjlist.rs), GraphML
(src/io/graphml.rs) and Pajek (src/io/pajek.rs).

The rules (delimiter, quoting, header, id typing) are stated in docs/CLI.md, "What a text
file means", and implemented once, in the kernel.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from ..graph import Graph
from ._build import run_native
from ._options import ReadOptions
from ._registry import Format, register


def read_text(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams text files into the graph builder (bounded memory)."""
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_text, paths, out, opts, progress, total, "edge_lines")


for _name, _ext in (
    ("csv", (".csv",)),
    ("tsv", (".tsv", ".tab")),
    ("edgelist", (".txt", ".edges", ".edgelist", ".el", ".dat")),
):
    register(
        Format(
            _name,
            _ext,
            read_text,
            several=True,
            compressed=True,
        )
    )


def read_mtx(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams a Matrix Market coordinate file into the graph builder."""
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_mtx, paths, out, opts, progress, total, "edge_lines")


def read_adjlist(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams adjacency lists (``v n1 n2 ...``) into the graph builder."""
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_adjlist, paths, out, opts, progress, total, "edge_lines")


register(Format("mtx", (".mtx", ".mm"), read_mtx, compressed=True))
register(
    Format(
        "adjlist",
        (".adjlist", ".adj"),
        read_adjlist,
        several=True,
        compressed=True,
    )
)


def read_graphml(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams a GraphML file into the graph builder."""
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_graphml, paths, out, opts, progress, total, "edge_lines")


register(
    Format(
        "graphml",
        (".graphml",),
        read_graphml,
        compressed=True,
    )
)


def read_pajek(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Reads a Pajek ``.net`` file into the graph builder."""
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_pajek, paths, out, opts, progress, total, "edge_lines")


register(
    Format(
        "pajek",
        (".net", ".paj"),
        read_pajek,
        compressed=True,
    )
)
