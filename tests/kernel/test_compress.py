"""Compressed output (``wide_dim``): hash wide, then one fitted linear map (SPEC §2c).

Oracles: numpy applied to the library's own uncompressed wide rows (the map's product), the
sample rule re-derived from SPEC §2c with a Python SplitMix64, and numpy's ``eigh`` of the
balanced sample's Gram matrix (the map's leading subspace and eigenvalues).
"""

from __future__ import annotations

import pickle

import instant_embedding as ie
import numpy as np
import pytest
from helpers import random_edges, splitmix64
from instant_embedding import _core

SETTINGS = {"dim": 8, "wide_dim": 256, "fit_nodes": 120, "eps": 1e-4, "seed": 3}
SAMPLE_SALT = 0x6D61_702D_7361_6D70


def planted(n: int = 400, k: int = 4, seed: int = 5) -> ie.Graph:
    """Dense blocks, sparse across: a graph whose wide rows have a clear top subspace."""
    rng = np.random.default_rng(seed)
    block = np.arange(n) % k
    iu, iv = np.triu_indices(n, 1)
    keep = rng.random(len(iu)) < np.where(block[iu] == block[iv], 0.08, 0.005)
    return ie.Graph.from_edges(iu[keep], iv[keep], num_nodes=n)


@pytest.fixture(scope="module")
def graph() -> ie.Graph:
    return planted()


@pytest.fixture(scope="module")
def model(graph) -> ie.InstantEmbedding:
    return ie.InstantEmbedding(**SETTINGS).fit(graph)


def sample_rule(n: int, size: int, seed: int) -> list[int]:
    """SPEC §2c's sample, written from the spec: Floyd's algorithm on a SplitMix64 stream."""
    if size >= n:
        return list(range(n))
    state = splitmix64(seed ^ SAMPLE_SALT)
    chosen: set[int] = set()
    for j in range(n - size, n):
        state = splitmix64(state)
        t = (state * (j + 1)) >> 64
        chosen.add(j if t in chosen else t)
    return sorted(chosen)


def wide_rows(graph: ie.Graph, nodes=None) -> np.ndarray:
    wide = ie.InstantEmbedding(SETTINGS["wide_dim"], eps=SETTINGS["eps"], seed=SETTINGS["seed"])
    return wide.embed_all(graph) if nodes is None else wide.embed(graph, nodes)


def test_rows_are_the_wide_rows_times_the_map(graph, model):
    c = model.components_
    assert c.shape == (256, 8) and c.dtype == np.float32 and not c.flags.writeable
    want = wide_rows(graph).astype(np.float64) @ c.astype(np.float64)
    got = model.embed_all(graph)
    assert got.shape == (graph.num_nodes, 8)
    scale = np.abs(want).max()
    assert scale > 0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale)


def test_rows_follow_the_specified_float32_arithmetic(graph, model):
    """SPEC §2c bit for bit: y[k] = f32(y[k] + f32(x[j] * V[j][k])) over non-zero x[j], j
    ascending (numpy float32 rounds every product and sum once, like the kernel)."""
    nodes = [0, 5, 123, 399]
    v = model.components_
    want = np.zeros((len(nodes), 8), dtype=np.float32)
    for i, x in enumerate(wide_rows(graph, nodes)):
        y = np.zeros(8, dtype=np.float32)
        for j in np.flatnonzero(x):
            y = y + x[j] * v[j]
        want[i] = y
    assert np.array_equal(model.embed(graph, nodes), want)


def column_balance(x: np.ndarray) -> np.ndarray:
    """SPEC §2c step 2: ``sqrt(rms / rms_j)`` for each column ``j`` of the sample's rows, with
    ``rms`` the root of the mean of the non-zero columns' mean squares (1 for a zero column)."""
    ms = (x**2).mean(axis=0)
    rms = np.sqrt(ms[ms > 0].mean())
    return np.where(ms > 0, np.sqrt(rms / np.sqrt(np.where(ms > 0, ms, 1))), 1.0)


def test_map_spans_the_top_eigenvectors_of_the_balanced_sample_gram_matrix(graph, model):
    nodes = sample_rule(graph.num_nodes, SETTINGS["fit_nodes"], SETTINGS["seed"])
    assert model.n_fit_nodes_ == len(nodes) == 120
    x = wide_rows(graph, nodes).astype(np.float64)
    w = column_balance(x)
    # The balance is not a no-op here: the columns' scales differ.
    assert w.max() > 1.5 * w[w != 1].min()
    x = x * w
    vals, vecs = np.linalg.eigh(x.T @ x)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    # components_ = diag(w) V: V's columns are the balanced rows' principal directions.
    v = model.components_.astype(np.float64) / w[:, None]
    gram = x.T @ x
    # Orthonormal columns, ordered by the energy they capture.
    np.testing.assert_allclose(v.T @ v, np.eye(8), atol=1e-5)
    energy = np.einsum("ij,jk,ki->i", v.T, gram, v)
    assert np.all(np.diff(energy) <= 1e-6 * energy[0])
    # The planted blocks give four leading eigenvalues well apart from the rest: there the
    # map's directions are eigh's (same eigenvalues, same subspace).
    assert vals[3] > 2 * vals[4]
    np.testing.assert_allclose(energy[:4], vals[:4], rtol=1e-3)
    cosines = np.linalg.svd(vecs[:, :4].T @ v[:, :4], compute_uv=False)
    assert cosines.min() > 1 - 1e-4, cosines
    # Below them the spectrum is flat and the subspace iteration approximate (SPEC §2c): a
    # Ritz value never exceeds its eigenvalue, and the map keeps nearly all the top energy.
    assert np.all(energy <= vals[:8] * (1 + 1e-9))
    assert energy.sum() > 0.97 * vals[:8].sum(), energy.sum() / vals[:8].sum()
    # Sign convention: each column's entry of largest magnitude is positive.
    assert all(v[np.argmax(np.abs(v[:, k])), k] > 0 for k in range(8))


def test_fit_and_rows_are_bit_identical_for_any_threads_and_batches(graph, model):
    again = ie.InstantEmbedding(**SETTINGS, threads=2).fit(graph, threads=1)
    assert np.array_equal(again.components_, model.components_)
    two = ie.InstantEmbedding(**SETTINGS).fit(graph, threads=2)
    assert np.array_equal(two.components_, model.components_)
    whole = model.embed_all(graph, threads=1)
    assert np.array_equal(whole, model.embed_all(graph, threads=2))
    assert np.array_equal(whole, model.embed_all(graph, threads=2, batch_size=7))
    for v in (0, 17, 399):
        assert np.array_equal(model.embed(graph, [v])[0], whole[v])
        assert np.array_equal(model.embed(graph, v), whole[v])
    pick = [5, 5, 300, 2]
    assert np.array_equal(model.embed(graph, pick, threads=2), whole[pick])


def test_unfitted_compressed_model_raises_and_uncompressed_fit_is_a_no_op(graph):
    m = ie.InstantEmbedding(**SETTINGS)
    for call in (lambda: m.embed(graph, [0]), lambda: m.embed_all(graph)):
        with pytest.raises(ie.NotFittedError, match="fit"):
            call()
    with pytest.raises(AttributeError):
        m.components_  # noqa: B018
    assert not hasattr(m, "n_fit_nodes_")
    plain = ie.InstantEmbedding(8)
    assert plain.fit(graph) is plain and not plain.compressed
    assert not hasattr(plain, "components_")
    # Changing a setting drops the map; threads do not.
    fitted = ie.InstantEmbedding(**SETTINGS).fit(graph)
    fitted.set_params(threads=1)
    fitted.embed(graph, [0])
    fitted.set_params(eps=2e-4)
    with pytest.raises(ie.NotFittedError):
        fitted.embed(graph, [0])


def test_settings_are_validated():
    for bad in ({"wide_dim": 8}, {"wide_dim": 4}, {"fit_nodes": 0}, {"fit_nodes": 1 << 17}):
        with pytest.raises(ValueError):
            ie.InstantEmbedding(**{**SETTINGS, **bad})
    with pytest.raises(ValueError, match="wide_dim is 0"):
        _core.fit_map(planted(40)._native, ie.EmbeddingConfig(dim=8))


def test_pickle_save_load_and_clone(graph, model, tmp_path):
    want = model.embed(graph, [1, 2, 3])
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(model, protocol=proto))
        assert np.array_equal(back.components_, model.components_)
        assert np.array_equal(back.embed(graph, [1, 2, 3]), want)
    path = tmp_path / "model.iemap"
    model.save(path)
    loaded = ie.InstantEmbedding.load(path)
    assert loaded.get_params() == model.get_params()
    assert np.array_equal(loaded.embed(graph, [1, 2, 3]), want)
    sklearn = pytest.importorskip("sklearn.base")
    fresh = sklearn.clone(model)
    with pytest.raises(ie.NotFittedError):
        fresh.embed(graph, [0])
    with pytest.raises(ValueError, match="compressed"):
        ie.InstantEmbedding(8).save(tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_corrupted_or_foreign_model_file_is_a_format_error(model, tmp_path):
    data = model.__getstate__()["_map"].to_bytes()
    cases = [data[:-1], data[:40], b"", b"IEMAP\x00\x00\x01" + b"\x00" * 40]
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    cases.append(bytes(flipped))
    for i, bad in enumerate(cases):
        p = tmp_path / f"bad{i}"
        p.write_bytes(bad)
        with pytest.raises(ie.GraphFormatError):
            ie.InstantEmbedding.load(p)


def test_live_graph_keeps_the_map(graph, model, tmp_path):
    """A changed graph is embedded with the same map (the vectors stay comparable)."""
    src, dst = random_edges(60, 300, 1)
    g1 = ie.Graph.from_edges(src, dst, num_nodes=60)
    m = ie.InstantEmbedding(8, wide_dim=64, fit_nodes=30).fit(g1)
    g2 = ie.Graph.from_edges(np.r_[src, 0], np.r_[dst, 59], num_nodes=60)
    wide = ie.InstantEmbedding(64).embed_all(g2).astype(np.float64)
    want = wide @ m.components_.astype(np.float64)
    np.testing.assert_allclose(m.embed_all(g2), want, atol=1e-5 * np.abs(want).max())


def test_smoothing_averages_the_mapped_rows(graph):
    m = ie.InstantEmbedding(**SETTINGS, smooth=1).fit(graph)
    plain = ie.InstantEmbedding(**SETTINGS).fit(graph)
    assert np.array_equal(m.components_, plain.components_)
    whole = m.embed_all(graph)
    assert np.array_equal(m.embed(graph, [7])[0], whole[7])
    assert not np.array_equal(whole, plain.embed_all(graph))
    back = pickle.loads(pickle.dumps(m))
    assert back.smooth == 1 and np.array_equal(back.embed_all(graph), whole)


@pytest.mark.parametrize("smooth", [0, 1])
def test_l2_maps_the_plain_rows_then_scales_them_to_unit_length(graph, smooth):
    """``normalize="l2"``: the map is fitted on the plain rows (``"none"``'s), and each mapped
    (and smoothed) row is then scaled to unit length (SPEC §2, §2c)."""
    kw = {**SETTINGS, "smooth": smooth}
    unit = ie.InstantEmbedding(**kw, normalize="l2").fit(graph)
    plain = ie.InstantEmbedding(**kw, normalize="none").fit(graph)
    assert np.array_equal(unit.components_, plain.components_)
    x = plain.embed_all(graph).astype(np.float64)
    norm = np.sqrt(np.cumsum(x * x, axis=1)[:, -1:])
    assert np.all(norm > 0)
    want = (x / norm).astype(np.float32)
    got = unit.embed_all(graph, threads=2, batch_size=33)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(unit.embed(graph, [9, 2]), got[[9, 2]])


def test_cli_fits_saves_and_reuses_a_model_file(tmp_path):
    from helpers import run_cli

    g = planted(200)
    gp = tmp_path / "g.graph"
    g.save(gp)
    mp = tmp_path / "m.iemap"
    args = ["embed", str(gp), "--dim", "8", "--wide-dim", "128", "--model", str(mp)]
    r = run_cli(*args, "-o", str(tmp_path / "a.npy"))
    assert r.returncode == 0, r.stderr
    assert mp.exists()
    model = ie.InstantEmbedding.load(mp)
    a = np.load(tmp_path / "a.npy")
    assert np.array_equal(a, model.embed_all(ie.Graph.open(gp)))
    r = run_cli("embed", str(gp), "--model", str(mp), "-o", str(tmp_path / "b.npy"))
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "b.npy"), a)
    assert "200 x 8 (npy)" in r.stderr  # the model's dim, not --dim's default
    c = str(tmp_path / "c.npy")
    r = run_cli("embed", str(gp), "--model", str(mp), "--eps", "0.001", "-o", c, ok=False)
    assert r.returncode != 0 and "disagrees" in r.stderr
    assert not (tmp_path / "c.npy").exists()
