"""WebGraph BV graphs (``NAME.graph`` + ``NAME.properties``), decoded in Rust.

A ``.graph`` file without this library's magic and with a ``.properties`` file beside it is a
WebGraph graph, whatever else it holds; so is a ``.properties`` file, or a basename whose
``.graph`` exists.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from ..graph import Graph
from ._build import run_native
from ._options import ReadOptions
from ._registry import GRAPH_MAGIC, Format, register


def graph_file(path: str) -> str:
    """The ``.graph`` file of a WebGraph input named by any of its names."""
    if path.endswith(".graph"):
        return path
    if path.endswith(".properties"):
        return path[: -len(".properties")] + ".graph"
    return path + ".graph"


def is_webgraph(head: bytes, path: str) -> bool:
    """Whether ``path`` names a WebGraph BV graph (see the module docs)."""
    if path.endswith(".properties"):
        return os.path.isfile(path)
    if path.endswith(".graph"):
        props = path[: -len(".graph")] + ".properties"
        return not head.startswith(GRAPH_MAGIC) and os.path.isfile(props)
    return not os.path.exists(path) and os.path.isfile(path + ".graph")


def read_webgraph(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    """Streams a BV graph into the graph builder (bounded memory)."""
    if opts.weighted:
        raise ValueError("weighted=True: a WebGraph BV graph has no arc weights")
    if opts.id_kind == "str":
        raise ValueError("id_kind='str' does not apply to webgraph input: its ids are 0..n-1")
    path = paths[0]
    gf = graph_file(path)
    total = os.path.getsize(gf) if os.path.isfile(gf) else None
    return run_native(_core.convert_webgraph, path, out, opts, progress, total, "source_arcs")


register(
    Format(
        "webgraph",
        (".properties",),
        read_webgraph,
        magic=is_webgraph,
    )
)
