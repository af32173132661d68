"""Graph.reorder / `instant-embedding reorder`: renumbering for locality changes no embedding."""

from __future__ import annotations

import os

import instant_embedding as ie
import numpy as np
import pytest
from helpers import random_edges
from helpers import run_cli as run
from instant_embedding.errors import GraphFormatError


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


def planted(n_per: int = 40, groups: int = 4, seed: int = 3):
    """Dense groups joined by few edges, with ids shuffled so that the order has work to do."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    for g in range(groups):
        a = rng.integers(0, n_per, 300) + g * n_per
        b = rng.integers(0, n_per, 300) + g * n_per
        src.append(a)
        dst.append(b)
    src.append(rng.integers(0, n_per * groups, 10))
    dst.append(rng.integers(0, n_per * groups, 10))
    s, d = np.concatenate(src), np.concatenate(dst)
    keep = s != d
    perm = rng.permutation(n_per * groups)
    return perm[s[keep]], perm[d[keep]], perm


@pytest.mark.parametrize("ids", ["implicit", "int", "str"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("method", ["communities", "bfs"])
def test_embeddings_and_ppr_are_bit_identical(tmp_path, ids, weighted, method):
    src, dst, _ = planted()
    n = 160
    kw = {}
    if ids == "int":
        src, dst = src * 1000 - 7, dst * 1000 - 7
    elif ids == "str":
        src = np.array([f"u{x}" for x in src], dtype=object)
        dst = np.array([f"u{x}" for x in dst], dtype=object)
    else:
        kw["num_nodes"] = n
    if weighted:
        kw["weights"] = np.random.default_rng(1).uniform(0.5, 3.0, len(src)).astype(np.float32)
    g = ie.Graph.from_edges(src, dst, **kw)
    h = g.reorder(tmp_path / "r.graph", method=method)
    h.validate()
    assert h.permuted and not g.permuted
    assert (h.num_nodes, h.num_edges, h.weighted) == (g.num_nodes, g.num_edges, g.weighted)
    assert h.id_kind == ("int64" if ids == "implicit" else g.id_kind)
    nodes = list(g.nodes)
    assert sorted(nodes) == sorted(h.nodes)
    assert list(h.nodes) != nodes  # the internal order did change
    for value in ("p+r", "p"):
        m = ie.InstantEmbedding(64, eps=1e-6, seed=5, value=value)
        assert np.array_equal(bits(m.embed(g, nodes)), bits(m.embed(h, nodes)))
        # embed_all follows the internal order: row i is graph.nodes[i].
        all_h = m.embed_all(h, threads=2)
        pos = {x: i for i, x in enumerate(h.nodes)}
        assert np.array_equal(bits(all_h[[pos[x] for x in nodes]]), bits(m.embed_all(g, threads=1)))
    for x in nodes[:20]:
        a, b = ie.ppr(g, x, return_residual=True), ie.ppr(h, x, return_residual=True)
        assert list(a[0]) == list(b[0])
        assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
        assert sorted(g.neighbors(x)) == sorted(h.neighbors(x)) and g.degree(x) == h.degree(x)
        # Neighbours are stored in id order in both files.
        assert list(g.neighbors(x)) == list(h.neighbors(x))


def test_given_order(tmp_path, saved_random_graph):
    g = saved_random_graph
    order = np.random.default_rng(0).permutation(g.num_nodes)
    h = g.reorder(tmp_path / "o.graph", order=order)
    assert list(h.nodes) == list(g.nodes[order])
    m = ie.InstantEmbedding(16)
    assert np.array_equal(bits(m.embed(h, list(g.nodes))), bits(m.embed(g, list(g.nodes))))
    for bad in (order[:-1], np.r_[order[:-1], order[0]]):
        with pytest.raises(ValueError, match="permutation"):
            g.reorder(tmp_path / "x.graph", order=bad)
    with pytest.raises(TypeError):
        g.reorder(tmp_path / "x.graph", order=order.astype(float))
    assert not (tmp_path / "x.graph").exists()


def test_communities_put_groups_together(tmp_path):
    src, dst, perm = planted(n_per=50, groups=4)
    g = ie.Graph.from_edges(src, dst, num_nodes=200)
    h = g.reorder(tmp_path / "c.graph", method="communities")
    group_of = np.empty(200, dtype=np.int64)
    group_of[perm] = np.arange(200) // 50  # old index -> planted group
    seq = group_of[np.asarray(h.nodes)]  # planted group along the new order
    # Each planted group is one contiguous block (up to a few stray nodes).
    changes = int(np.count_nonzero(np.diff(seq)))
    assert changes <= 3 + 4, seq


def test_reorder_is_deterministic_across_threads(tmp_path):
    src, dst = random_edges(500, 3000, seed=2)
    g = ie.Graph.from_edges(src, dst, num_nodes=500)
    g.reorder(tmp_path / "a.graph", threads=1)
    g.reorder(tmp_path / "b.graph", threads=2)
    assert (tmp_path / "a.graph").read_bytes() == (tmp_path / "b.graph").read_bytes()


def test_bad_arguments_and_corrupted_source(tmp_path, saved_random_graph):
    g = saved_random_graph
    with pytest.raises(ValueError, match="unknown reorder method"):
        g.reorder(tmp_path / "x.graph", method="rabbit")
    with pytest.raises(ValueError, match="rounds"):
        g.reorder(tmp_path / "x.graph", rounds=0)
    with pytest.raises(TypeError):
        g.reorder(tmp_path / "x.graph", rounds=True)
    with pytest.raises(ValueError):
        g.reorder(tmp_path / "x.graph", threads=0)
    # A flipped bit in the neighbour ids that stays in range: only checksums see it, and the
    # reorder must refuse instead of writing it out with fresh checksums.
    path = g.path
    data = bytearray(open(path, "rb").read())
    data[-200] ^= 1
    bad_path = tmp_path / "bad.graph"
    bad_path.write_bytes(bytes(data))
    bad = ie.Graph.open(bad_path)
    with pytest.raises(GraphFormatError, match="checksum"):
        bad.reorder(tmp_path / "x.graph")
    assert not (tmp_path / "x.graph").exists()


def test_progress_callback_and_cancel(tmp_path, saved_random_graph):
    calls = []
    saved_random_graph.reorder(tmp_path / "p.graph", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1]

    def stop(done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        saved_random_graph.reorder(tmp_path / "q.graph", progress=stop)
    assert sorted(os.listdir(tmp_path)) == ["p.graph", "random.graph"]


def test_cli_reorder_and_convert_reorder(tmp_path):
    src, dst, _ = planted()
    lines = "\n".join(f"{a}\t{b}" for a, b in zip(src, dst))
    (tmp_path / "e.tsv").write_text(lines + "\n")
    run("convert", "e.tsv", "plain.graph", cwd=tmp_path)
    p = run("reorder", "plain.graph", "r.graph", "--method", "bfs", cwd=tmp_path)
    assert "reordered into r.graph: bfs" in p.stderr
    p = run("convert", "e.tsv", "c.graph", "--reorder", "communities", cwd=tmp_path)
    assert "reordered into c.graph: communities" in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["c.graph", "e.tsv", "plain.graph", "r.graph"]
    g = ie.Graph.open(tmp_path / "plain.graph")
    m = ie.InstantEmbedding(32)
    ref = m.embed(g, list(g.nodes))
    for name in ("r.graph", "c.graph"):
        h = ie.Graph.open(tmp_path / name)
        assert h.permuted
        assert np.array_equal(bits(m.embed(h, list(g.nodes))), bits(ref))
    info = run("info", "c.graph", "--json", "--sample", "0", cwd=tmp_path).stdout
    assert '"permuted": true' in info
    assert (
        "in an order other than id order"
        in run("info", "c.graph", "--sample", "0", cwd=tmp_path).stdout
    )
    assert '"permuted": false' in run("info", "plain.graph", "--json", cwd=tmp_path).stdout
    p = run("reorder", "missing.graph", "x.graph", cwd=tmp_path, ok=False)
    assert p.returncode == 1 and "missing.graph" in p.stderr
