"""Files as real tools write them (tests/corpus/, made by tests/corpus/make_corpus.py) become
exactly the graph the tool held, or are refused with one line naming what settles them.

The expected graph of each file is the writing tool's own data, recorded when the file was
written (manifest.json), never our reader's output. Every file goes through ``ie.convert``
and the ``convert`` command; a refusal leaves nothing at the output path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import instant_embedding as ie
import pytest
from helpers import run_cli

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
# A file whose reading is a known open bug fails its test until fixed (strict xfail).
CASES = [
    pytest.param(
        e,
        id=e["file"],
        marks=[pytest.mark.xfail(strict=True, reason=e["known_issue"])]
        if "known_issue" in e
        else [],
    )
    for e in MANIFEST
]
REFUSALS = (ie.GraphFormatError, ValueError)


def _needs(entry: dict[str, Any]) -> None:
    if entry["file"].endswith((".parquet", ".arrow")):
        pytest.importorskip("pyarrow")


def edges_of(g: ie.Graph) -> set[tuple[Any, ...]]:
    """The graph's edges as text ids, ``(u, v, w)``; undirected edges once, endpoints sorted."""
    out: set[tuple[Any, ...]] = set()
    for u in g.nodes:
        nbrs = g.neighbors(u)
        ws = g.edge_weights(u)
        for k, v in enumerate(nbrs):
            w = None if ws is None else float(ws[k])
            a, b = str(u), str(v)
            if not g.directed and b < a:
                a, b = b, a
            out.add((a, b, w))
    return out


def expected_edges(graph: dict[str, Any], weighted: bool) -> set[tuple[Any, ...]]:
    out = set()
    for a, b, w in graph["edges"]:
        if not graph["directed"] and b < a:
            a, b = b, a
        out.add((a, b, float(w) if weighted else None))
    return out


def check_graph(g: ie.Graph, entry: dict[str, Any]) -> None:
    want = entry["graph"]
    where = entry["file"]
    assert g.directed == want["directed"], where
    assert sorted(str(v) for v in g.nodes) == sorted(want["nodes"]), where
    weighted = g.weighted
    if entry["options"].get("weighted"):
        assert weighted, f"{where}: weights asked for but not read"
    got = edges_of(g)
    exp = expected_edges(want, weighted)
    if weighted:
        # float32 storage: compare weights at float32 precision
        got = {(a, b, round(w, 5)) for a, b, w in got}
        exp = {(a, b, round(w, 5)) for a, b, w in exp}
    assert got == exp, f"{where}: read {sorted(got - exp)[:4]}, missing {sorted(exp - got)[:4]}"


def check_refusal(err: str, entry: dict[str, Any]) -> None:
    line = err.strip().splitlines()[-1] if err.strip() else ""
    assert line, f"{entry['file']}: refused without a message"
    # a CLI flag, a Python parameter (name=... or a *_col), a function, or what to pass
    names = ("--", "=", "_col", "pass ", "ie.", "from_", "use ", "write it", "convert", "delete")
    assert any(n in line for n in names), (
        f"{entry['file']}: the refusal names nothing that settles it: {line}"
    )


@pytest.mark.parametrize("entry", CASES)
def test_convert_reads_the_writers_graph_or_refuses(entry, tmp_path):
    _needs(entry)
    src = CORPUS / entry["file"]
    out = tmp_path / "g.graph"
    try:
        g = ie.convert(str(src), str(out), **entry["options"])
    except REFUSALS as e:
        assert entry["expect"] in ("refuse", "either"), f"{entry['file']}: refused: {e}"
        assert "\n" not in str(e).strip(), f"{entry['file']}: a refusal is one line: {e}"
        check_refusal(str(e), entry)
        assert os.listdir(tmp_path) == [], f"{entry['file']}: left {os.listdir(tmp_path)}"
        return
    assert entry["expect"] in ("graph", "either"), (
        f"{entry['file']}: read as a graph of {g.num_nodes} nodes and {g.num_edges} edges; "
        f"it must be refused ({entry['why']})"
    )
    check_graph(g, entry)


def _flags(options: dict[str, Any]) -> list[str]:
    flags = []
    for k, v in options.items():
        if v is True:
            flags.append(f"--{k.replace('_', '-')}")
        else:
            flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags


@pytest.mark.parametrize("entry", CASES)
def test_the_convert_command_agrees(entry, tmp_path):
    _needs(entry)
    src = CORPUS / entry["file"]
    p = run_cli("convert", str(src), "g.graph", *_flags(entry["options"]), cwd=tmp_path, ok=False)
    if p.returncode != 0:
        assert entry["expect"] in ("refuse", "either"), f"{entry['file']}: {p.stderr}"
        check_refusal(p.stderr, entry)
        assert os.listdir(tmp_path) == [], f"{entry['file']}: left {os.listdir(tmp_path)}"
        return
    assert entry["expect"] in ("graph", "either"), f"{entry['file']}: converted; must refuse"
    check_graph(ie.Graph.open(tmp_path / "g.graph"), entry)


def test_the_corpus_is_wide():
    writers = {e["writer"] for e in MANIFEST}
    assert len(MANIFEST) >= 40 and len(writers) >= 12, (len(MANIFEST), sorted(writers))
    assert all(e["graph"]["edges"] for e in MANIFEST)
