"""Golden files: the graph format and the embedding numbers, pinned across releases.

``tests/golden/`` holds small graphs (int, int64 and string ids; weighted and directed), each as
an edge list and as the graph file built from it, and ``golden.json``: rows and PPR vectors
computed with explicit parameters. A failure here means a file written by one release reads
differently in another, or the same call gives other numbers. If that is deliberate, regenerate
with ``python tests/golden/make_golden.py``, review the diff and record it in CHANGELOG.md.
"""

from __future__ import annotations

import json
import math

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


def _spec_code(weighted: bool, strength: float) -> int:
    """A node's neighbour code, as docs/FORMAT.md ("Neighbour codes") defines it."""
    if not weighted:
        d = int(strength)
        if d < 128:
            return d
        e = d.bit_length() - 1
        return min(128 + 4 * (e - 7) + ((d >> (e - 2)) & 3), 255)
    x = max(strength, 1.0)
    e = math.frexp(x)[1] - 1  # x = (1 + f) * 2^e
    return min(8 * e + int((x / 2.0**e - 1.0) * 8), 255)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_golden_file_neighbour_codes_follow_the_format(name):
    f = read_graph_file(HERE / f"{name}.graph")
    ip, idx = f["indptr"], f["indices"]
    strength = f["strength"] if f["weighted"] else np.diff(ip.astype(np.int64))
    want = [_spec_code(f["weighted"], float(strength[u])) for u in idx.tolist()]
    assert f["nbr_codes"] is not None and f["nbr_codes"].tolist() == want


def test_spec_code_matches_the_library_on_hubs(tmp_path):
    """Degrees above the exact range (interval codes) and large strengths, through convert."""
    hub = np.zeros(3000, np.int64)
    leaves = np.arange(1, 3001)
    g = ie.Graph.from_edges(np.r_[hub, leaves[:200] + 0], np.r_[leaves, (leaves[:200] + 1)])
    g.save(tmp_path / "h.graph")
    f = read_graph_file(tmp_path / "h.graph")
    deg = np.diff(f["indptr"].astype(np.int64))
    want = [_spec_code(False, float(deg[u])) for u in f["indices"].tolist()]
    assert f["nbr_codes"].tolist() == want and max(want) > 128
    w = np.linspace(0.5, 900.0, 3000).astype(np.float32)
    gw = ie.Graph.from_edges(hub, leaves, weights=w)
    gw.save(tmp_path / "w.graph")
    f = read_graph_file(tmp_path / "w.graph")
    want = [_spec_code(True, float(f["strength"][u])) for u in f["indices"].tolist()]
    assert f["nbr_codes"].tolist() == want and max(want) > 100
