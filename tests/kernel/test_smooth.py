"""Neighbour smoothing (``InstantEmbedding(smooth=k)``, docs/SPEC.md §2b)."""

from __future__ import annotations

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding.cli import main as cli_main
from instant_embedding.export import read_embeddings


def _graphs() -> list[ie.Graph]:
    rng = np.random.default_rng(5)
    n = 120
    src = rng.integers(0, n, 700)
    dst = (rng.integers(0, n, 700) ** 2) // n  # hubs and leaves
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w = rng.uniform(0.25, 4.0, len(src))
    return [
        ie.Graph.from_edges(src, dst, num_nodes=n + 3),  # three isolated nodes
        ie.Graph.from_edges(src, dst, num_nodes=n, directed=True, weights=w),  # dangling nodes
        ie.Graph.from_edges([f"s{x}" for x in src], [f"s{x}" for x in dst]),  # string ids
    ]


def _reference_step(g: ie.Graph, rows: np.ndarray) -> np.ndarray:
    """The step as SPEC §3 defines it, written out node by node: f64 sums in arc order."""
    out = np.empty_like(rows)
    ids = g.nodes
    for u in range(g.num_nodes):
        nbrs = g.index(g.neighbors(ids[u]))
        if len(nbrs) == 0:
            out[u] = rows[u]
            continue
        w = g.edge_weights(ids[u])
        acc = np.zeros(rows.shape[1], dtype=np.float64)
        total = 0.0
        for k, v in enumerate(nbrs):
            wk = 1.0 if w is None else float(w[k])
            total += wk
            acc += wk * rows[v].astype(np.float64)
        out[u] = (acc / total).astype(np.float32)
    return out


@pytest.mark.parametrize("normalize", ["ln_n", "none"])
@pytest.mark.parametrize("gi", [0, 1, 2])
def test_embed_all_matches_the_reference_bit_for_bit(gi, normalize):
    """Smoothing averages the rows as ``normalize`` scaled them (SPEC §2b)."""
    g = _graphs()[gi]
    kw = {"dim": 24, "eps": 1e-4, "value": "log1p", "normalize": normalize}
    base = ie.InstantEmbedding(**kw).embed_all(g)
    want = base
    for k in (1, 2, 3):
        want = _reference_step(g, want)
        got = ie.InstantEmbedding(**kw, smooth=k).embed_all(g)
        assert got.dtype == np.float32 and got.shape == base.shape
        np.testing.assert_array_equal(got, want)
    # Smoothing changes the rows (otherwise the test above proves nothing).
    assert not np.array_equal(want, base)


@pytest.mark.parametrize("gi", [0, 1, 2])
def test_subsets_threads_and_batches_give_the_rows_of_embed_all(gi):
    g = _graphs()[gi]
    m = ie.InstantEmbedding(dim=16, eps=1e-4, smooth=2)
    full = m.embed_all(g, threads=1)
    np.testing.assert_array_equal(full, m.embed_all(g, threads=3, batch_size=7))
    ids = g.nodes
    rng = np.random.default_rng(gi)
    for size in (1, 5, 40):
        pick = rng.integers(0, g.num_nodes, size)
        pick[0] = pick[-1]  # a duplicate
        nodes = [ids[i] for i in pick]
        for threads in (1, 2):
            got = m.embed(g, nodes, threads=threads, batch_size=3)
            np.testing.assert_array_equal(got, full[pick])
    np.testing.assert_array_equal(m.embed(g, ids[0]), full[0])


def test_isolated_nodes_keep_their_own_row():
    g = _graphs()[0]
    base = ie.InstantEmbedding(dim=8).embed_all(g)
    sm = ie.InstantEmbedding(dim=8, smooth=3).embed_all(g)
    for u in range(g.num_nodes):
        if g.degree(g.nodes[u]) == 0:
            np.testing.assert_array_equal(sm[u], base[u])


def test_smooth_zero_is_the_plain_embedding_and_params_round_trip():
    g = _graphs()[0]
    np.testing.assert_array_equal(
        ie.InstantEmbedding(dim=8, smooth=0).embed_all(g), ie.InstantEmbedding(dim=8).embed_all(g)
    )
    m = ie.InstantEmbedding(dim=8, smooth=2)
    assert m.get_params()["smooth"] == 2 and "smooth=2" in repr(m)
    assert ie.InstantEmbedding(**m.get_params()).get_params() == m.get_params()


@pytest.mark.parametrize("bad", [-1, ie._core.MAX_SMOOTH + 1])
def test_out_of_range_smooth_is_a_value_error(bad):
    with pytest.raises(ValueError, match="smooth"):
        ie.InstantEmbedding(smooth=bad)


@pytest.mark.parametrize("bad", [1.5, True, "2", None])
def test_non_int_smooth_is_a_type_error(bad):
    with pytest.raises(TypeError, match="smooth"):
        ie.InstantEmbedding(smooth=bad)


def test_embed_all_out_file_and_cli(tmp_path):
    g = _graphs()[0]
    path = tmp_path / "g.graph"
    g.save(path)
    m = ie.InstantEmbedding(dim=8, smooth=2, value="log1p")
    want = m.embed_all(g)
    mm = m.embed_all(g, out=tmp_path / "e.npy")
    np.testing.assert_array_equal(np.asarray(mm), want)
    out = tmp_path / "e.parquet"
    args = ["embed", str(path), "--dim", "8", "--smooth", "2", "--value", "log1p", "-o", str(out)]
    assert cli_main([*args, "--quiet"]) == 0
    ids, rows = read_embeddings(out)
    np.testing.assert_array_equal(rows, want[g.index(ids)])
    sub = tmp_path / "sub.npy"
    assert cli_main([*args[:-2], "--nodes", "3,7", "-o", str(sub), "--quiet"]) == 0
    np.testing.assert_array_equal(read_embeddings(sub)[1], want[g.index([3, 7])])


def test_core_step_rejects_missing_sources():
    g = _graphs()[0]
    with pytest.raises(ValueError, match="source"):
        ie._core.smooth(
            g._g,
            np.array([0], np.uint32),
            np.zeros((0, 4), np.float32),
            ie._core.EmbeddingConfig(dim=4, smooth=1),
            1,
        )
