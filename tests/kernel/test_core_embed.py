"""Embeddings: the exact projection formula, determinism, consistency, parameters."""

from __future__ import annotations

import math

import instant_embedding as ie
import numpy as np
import pytest
from helpers import bucket, reference_embedding, reference_sums
from instant_embedding import _core


@pytest.mark.parametrize("normalize", ["ln_n", "none"])
@pytest.mark.parametrize("value", ["p+r", "p", "log1p"])
@pytest.mark.parametrize("dim,seed", [(512, 0), (16, 3), (1, 9)])
def test_projection_formula_implicit_ids(karate, dim, seed, value, normalize):
    model = ie.InstantEmbedding(dim=dim, seed=seed, eps=1e-4, value=value, normalize=normalize)
    got = model.embed(karate, list(range(34)))
    for v in range(34):
        ref = reference_embedding(karate, v, dim, seed, value=value, normalize=normalize, eps=1e-4)
        assert np.array_equal(got[v].view(np.uint32), ref.view(np.uint32)), v


@pytest.mark.parametrize("value", ["p+r", "log1p"])
def test_ln_n_divides_the_unscaled_sums_by_ln_n(value):
    """``normalize="ln_n"`` is ``"none"``'s exact sums divided by ``ln(max(n, 3))`` in float64,
    then rounded to float32 once (not ``"none"``'s float32 output divided again): computed
    here in numpy from the spec's sums, for graphs of 2, 3 and 300 nodes (ln 3 for the first
    two)."""
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300, 1500), rng.integers(0, 300, 1500)
    keep = src != dst
    graphs = [
        ie.Graph.from_edges([0], [1]),
        ie.Graph.from_edges(["a", "b"], ["b", "c"]),
        ie.Graph.from_edges(src[keep] * 7 - 900, dst[keep] * 7 - 900),
    ]
    for g in graphs:
        ids = list(g.nodes)
        kw = {"dim": 32, "seed": 5, "eps": 1e-4, "value": value}
        scaled = ie.InstantEmbedding(**kw).embed(g, ids)  # the default normalisation
        plain = ie.InstantEmbedding(**kw, normalize="none").embed(g, ids)
        ln_n = np.float64(math.log(max(g.num_nodes, 3)))
        for i, v in enumerate(ids):
            sums = reference_sums(g, v, 32, 5, value=value, eps=1e-4)
            assert np.array_equal(
                plain[i].view(np.uint32), sums.astype(np.float32).view(np.uint32)
            ), v
            want = (sums / ln_n).astype(np.float32)
            assert np.array_equal(scaled[i].view(np.uint32), want.view(np.uint32)), v
        if g.num_nodes == 300:
            assert np.count_nonzero(scaled) > 1000 and not np.array_equal(scaled, plain)
            # so the scale is ln(n), up to the float32 roundings on either side
            np.testing.assert_allclose(scaled, plain / ln_n, rtol=2**-22, atol=0)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """SPEC §2's ``normalize="l2"`` written out: per row, ``norm = sqrt(sum of x^2)`` in float64
    summed in order (``cumsum`` is sequential), then ``float32(x / norm)``; zero rows stay."""
    x = rows.astype(np.float64)
    norm = np.sqrt(np.cumsum(x * x, axis=1)[:, -1:])
    return np.where(norm > 0, x / np.where(norm > 0, norm, 1), 0).astype(np.float32)


@pytest.mark.parametrize("value", ["p+r", "log1p"])
@pytest.mark.parametrize("smooth", [0, 2])
def test_l2_scales_the_plain_rows_to_unit_length(karate, value, smooth):
    kw = {"dim": 24, "seed": 4, "eps": 1e-3, "value": value, "smooth": smooth}
    plain = ie.InstantEmbedding(**kw, normalize="none").embed_all(karate)
    unit = ie.InstantEmbedding(**kw, normalize="l2").embed_all(karate)
    assert np.array_equal(unit.view(np.uint32), unit_rows(plain).view(np.uint32))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-6)
    # After smoothing, not before: the smoothed rows are unit, the averaged ones need not be.
    assert np.array_equal(
        ie.InstantEmbedding(**kw, normalize="l2").embed(karate, [3, 0]), unit[[3, 0]]
    )


def test_l2_keeps_a_zero_row_zero():
    # One node, no arcs: its only term is ln(1 * 1) = 0, so its row is zero.
    g = ie.Graph.from_edges(np.array([], dtype=np.int64), np.array([], dtype=np.int64), num_nodes=1)
    row = ie.InstantEmbedding(dim=8, normalize="l2").embed(g, [0])
    assert np.array_equal(row, np.zeros((1, 8), dtype=np.float32))


def test_normalize_is_a_setting_refused_when_unknown(karate):
    assert ie.InstantEmbedding().normalize == "ln_n"
    for bad in ("ln", "L2", None, 1):
        with pytest.raises(ValueError, match="normalize must be one of 'ln_n', 'none', 'l2'"):
            ie.InstantEmbedding(normalize=bad)  # type: ignore[arg-type]
    m = ie.InstantEmbedding(dim=8, normalize="none")
    with pytest.raises(ValueError, match="normalize"):
        m.set_params(normalize="unit")
    assert m.normalize == "none"


def test_value_p_uses_only_the_estimate(karate):
    a = ie.InstantEmbedding(dim=64, eps=1e-3, value="p").embed(karate, 5)
    b = ie.InstantEmbedding(dim=64, eps=1e-3).embed(karate, 5)
    assert not np.array_equal(a, b)  # residual mass changes the vector at this eps
    assert np.count_nonzero(b) >= np.count_nonzero(a)


def test_projection_formula_string_and_int64_ids():
    lm = ie.datasets.lesmis()
    for value in ("p+r", "log1p"):
        model = ie.InstantEmbedding(dim=64, eps=1e-5, value=value)
        for name in ["Valjean", "Javert", "Cosette"]:
            ref = reference_embedding(lm, name, 64, 0, value=value, eps=1e-5)
            assert np.array_equal(model.embed(lm, name), ref)
    g = ie.Graph.from_edges([-5, 2**40, 7], [2**40, 7, -5])
    assert g.id_kind == "int64"
    for v in [-5, 2**40, 7]:
        assert np.array_equal(
            ie.InstantEmbedding(dim=32, eps=1e-5).embed(g, v),
            reference_embedding(g, v, 32, 0, eps=1e-5),
        )


def test_hash_keys_are_external_ids():
    g = ie.Graph.from_edges(["alice", "bob"], ["bob", "carol"])
    i = int(g.index(["alice"])[0])
    assert g._g.hash_key(i) == _core.fnv1a64(b"alice")
    h = ie.Graph.from_edges([100, 200], [200, 300])
    assert h._g.hash_key(int(h.index([200])[0])) == 200


def test_deterministic_across_threads_and_batches(random_graph):
    model = ie.InstantEmbedding(dim=128, eps=1e-5)
    base = model.embed_all(random_graph, threads=1)
    for threads in [2, 3]:
        for batch in [1, 7, 1000]:
            other = model.embed_all(random_graph, threads=threads, batch_size=batch)
            assert np.array_equal(base, other), (threads, batch)
    nodes = [5, 3, 5, 299, 0]
    assert np.array_equal(model.embed(random_graph, nodes), base[nodes])
    # Global consistency: embedding one node alone equals its row of embed_all.
    for v in [0, 17, 299]:
        assert np.array_equal(model.embed(random_graph, [v])[0], base[v])
        assert np.array_equal(model.embed(random_graph, v), base[v])


def test_rayon_num_threads_env_is_respected(monkeypatch):
    monkeypatch.setenv("RAYON_NUM_THREADS", "3")
    assert _core.resolve_threads(None) == 3
    assert _core.resolve_threads(2) == 2


def test_mmap_and_memory_graphs_agree(random_graph, saved_random_graph):
    model = ie.InstantEmbedding(dim=64)
    assert np.array_equal(model.embed_all(random_graph), model.embed_all(saved_random_graph))


def test_seed_moves_terms_but_keeps_their_values(karate):
    """The seed changes where each node's term lands (dimension and sign), never the term's
    value. With a dimension large enough that no two terms share a dimension under either
    seed, both embeddings hold the same multiset of |values|, in different places."""
    dim, eps, n = 1 << 14, 1e-4, karate.num_nodes
    ids, p, r = ie.ppr(karate, 0, eps=eps, return_residual=True)
    terms = [int(v) for v, x in zip(ids, p + r) if x * n > 1]  # value="p+r": ln(x n) > 0
    assert len(terms) > 10
    rows = {}
    for seed in (0, 1):
        dims = [bucket(v, seed, dim)[0] for v in terms]
        assert len(set(dims)) == len(dims), "pick seeds without collisions"
        rows[seed] = ie.InstantEmbedding(dim=dim, eps=eps, seed=seed).embed(karate, 0)
        assert np.count_nonzero(rows[seed]) == len(terms)
        assert sorted(np.flatnonzero(rows[seed])) == sorted(dims)
    a, b = rows[0], rows[1]
    assert not np.array_equal(a, b)
    assert np.array_equal(np.sort(np.abs(a[a != 0])), np.sort(np.abs(b[b != 0])))


def test_embedding_separates_karate_clubs(karate):
    """A quality sanity check: nearest-centroid on embeddings recovers the two clubs."""
    labels = ie.datasets.karate_labels()
    emb = ie.InstantEmbedding(dim=256, eps=1e-6).embed_all(karate)
    emb = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    c0 = emb[labels == 0].mean(0)
    c1 = emb[labels == 1].mean(0)
    pred = (emb @ c1 > emb @ c0).astype(int)
    assert (pred == labels).mean() >= 0.85


def test_embed_all_out_file(tmp_path, random_graph):
    model = ie.InstantEmbedding(dim=32)
    out = tmp_path / "emb.npy"
    arr = model.embed_all(random_graph, out=out, batch_size=50)
    assert np.array_equal(np.load(out), model.embed_all(random_graph))
    assert arr.shape == (300, 32) and arr.dtype == np.float32
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.ids.npy", "emb.npy"]  # no temp file


def test_progress_callback(random_graph):
    seen = []
    ie.InstantEmbedding(dim=8).embed_all(
        random_graph, batch_size=100, progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(100, 300), (200, 300), (300, 300)]


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        ({"dim": 0}, ValueError),
        ({"dim": -3}, ValueError),
        ({"dim": 2.5}, TypeError),
        ({"alpha": 0.0}, ValueError),
        ({"alpha": 1.0}, ValueError),
        ({"alpha": float("nan")}, ValueError),
        ({"eps": 0.0}, ValueError),
        ({"eps": -1e-5}, ValueError),
        ({"eps": float("inf")}, ValueError),
        ({"variant": "fast"}, ValueError),
        ({"value": "r"}, ValueError),
        ({"threads": 0}, ValueError),
        ({"seed": -1}, ValueError),
        ({"max_touched": 0}, ValueError),
    ],
)
def test_parameter_validation(kwargs, exc):
    with pytest.raises(exc):
        ie.InstantEmbedding(**kwargs)


def test_unknown_nodes_raise_keyerror(karate):
    model = ie.InstantEmbedding(dim=8)
    with pytest.raises(KeyError, match="34"):
        model.embed(karate, [0, 34])
    with pytest.raises(ie.NodeNotFoundError):
        model.embed(karate, ["alice"])
    with pytest.raises(ie.NodeNotFoundError, match="zorro"):
        model.embed(ie.datasets.lesmis(), ["Valjean", "zorro"])
    with pytest.raises(TypeError):
        model.embed(karate, [1.5])
    with pytest.raises(TypeError):
        model.embed("not a graph", [0])  # type: ignore[arg-type]


def test_empty_node_list(karate):
    for g in (karate, ie.datasets.lesmis(), ie.Graph.from_edges([-5, 2**40], [2**40, 7])):
        out = ie.InstantEmbedding(dim=8).embed(g, [])
        assert out.shape == (0, 8) and out.dtype == np.float32
        assert len(g.index([])) == 0
