"""JSON inputs: node-link JSON (networkx, D3), JSON Lines edge objects, arrays of edges.

Parsed in Rust (``_core.convert_json``, src/io/json.rs); JSON Lines are streamed, the other
shapes are loaded whole. The shape is told by the content, not the name.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from ..graph import Graph
from ._build import run_native
from ._options import ReadOptions
from ._registry import Format, register


def read_json(
    paths: list[str], out: str, opts: ReadOptions, progress: Any
) -> tuple[Graph, dict[str, Any]]:
    total = sum(os.path.getsize(p) for p in paths)
    return run_native(_core.convert_json, paths, out, opts, progress, total, "edge_lines")


def _looks_like_json(head: bytes, path: str) -> bool:
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return body[:1] in (b"{", b"[")


register(
    Format(
        "json",
        (".json", ".jsonl", ".ndjson"),
        read_json,
        magic=_looks_like_json,
        several=True,
        compressed=True,
    )
)
