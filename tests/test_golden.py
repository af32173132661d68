"""Golden files: the graph format and the embedding numbers, pinned across releases.

``tests/golden/`` holds small graphs (int, int64 and string ids; weighted and directed), each as
an edge list and as the graph file built from it, and ``golden.json``: rows and PPR vectors
computed with explicit parameters. A failure here means a file written by one release reads
differently in another, or the same call gives other numbers. If that is deliberate, regenerate
with ``python tests/golden/make_golden.py``, review the diff and record it in CHANGELOG.md.
"""

from __future__ import annotations

import json

import instant_embedding as ie
import numpy as np
import pytest
from golden.make_golden import CONFIGS, GRAPHS, HERE, PPR, build, f32_hex, f64_hex
from helpers import read_graph_file

GOLDEN = json.loads((HERE / "golden.json").read_text(encoding="utf-8"))


def test_golden_parameters_are_the_ones_stored():
    # the generator's explicit parameters and the stored ones agree (nothing is a default)
    assert GOLDEN["configs"] == CONFIGS and GOLDEN["ppr"] == PPR
    assert set(GOLDEN["graphs"]) == set(GRAPHS)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_builder_writes_the_golden_file_byte_for_byte(tmp_path, name):
    build(name).save(tmp_path / "g.graph")
    assert (tmp_path / "g.graph").read_bytes() == (HERE / f"{name}.graph").read_bytes()


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_golden_file_header(name):
    """The committed file read by a parser written from docs/FORMAT.md."""
    f = read_graph_file(HERE / f"{name}.graph")
    spec = GRAPHS[name]
    assert f["version"] == 1 and not f["permuted"]
    assert (f["directed"], f["weighted"]) == (spec["directed"], spec["weighted"])
    assert f["id_kind"] == {"int": "implicit", "int64": "int64", "str": "utf8"}[spec["ids"]]
    assert f["file_len"] == (HERE / f"{name}.graph").stat().st_size
    g = ie.Graph.open(HERE / f"{name}.graph")
    g.validate()
    assert list(g.nodes) == f["ids"]


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_golden_rows(name):
    g = ie.Graph.open(HERE / f"{name}.graph")
    gold = GOLDEN["graphs"][name]
    for cfg, rows in zip(CONFIGS, gold["rows"]):
        for threads in (1, 2):
            got = ie.InstantEmbedding(**cfg, threads=threads).embed(g, gold["nodes"])
            assert [f32_hex(r) for r in got] == rows, (cfg, threads)
        # each row alone and from embed_all: the same bits (global consistency)
        whole = ie.InstantEmbedding(**cfg).embed_all(g)
        assert [f32_hex(r) for r in whole[g.index(gold["nodes"])]] == rows, cfg


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_golden_ppr(name):
    g = ie.Graph.open(HERE / f"{name}.graph")
    for case in GOLDEN["graphs"][name]["ppr"]:
        ids, p, r = ie.ppr(g, case["node"], **PPR, return_residual=True)
        assert list(np.asarray(ids).tolist() if not isinstance(ids, list) else ids) == case["ids"]
        assert f64_hex(p) == case["p"] and f64_hex(r) == case["r"]
