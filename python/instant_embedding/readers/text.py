"""Text edge lists, CSV and TSV: parsed in Rust (``_core.convert_text``, src/text.rs).

The rules (delimiter, quoting, header, id typing) are stated in docs/CLI.md, "What a text
file means", and implemented once, in the kernel.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from .._progress import ByteProgress
from ..graph import Graph
from ._options import ReadOptions
from ._registry import Format, register

TEXT_OPTIONS = frozenset(
    {"weighted", "delimiter", "comment", "header", "src_col", "dst_col", "weight_col", "id_kind"}
)


def read_text(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams text files into the graph builder (bounded memory)."""
    total = sum(os.path.getsize(p) for p in paths)
    bar = ByteProgress(total, progress, "B")
    try:
        stats = dict(
            _core.convert_text(
                paths,
                out,
                opts,
                progress=bar.native_hook if progress else None,
            )
        )
    finally:
        bar.close()
    g = Graph.open(out)
    stats.update(num_nodes=g.num_nodes, num_edges=g.num_edges, edges_read=stats["edge_lines"])
    return g, stats


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
            options=TEXT_OPTIONS,
            several=True,
            compressed=True,
        )
    )
