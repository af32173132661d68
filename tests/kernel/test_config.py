"""The one configuration object (``EmbeddingConfig``) and the model API built on it."""

from __future__ import annotations

import copy
import inspect
import os
import pickle
import pydoc
import warnings

import instant_embedding as ie
import numpy as np
import pytest
from helpers import NON_DEFAULT
from instant_embedding import _core, batch
from instant_embedding.cli import build_parser
from instant_embedding.embedding import EmbeddingConfig
from instant_embedding.export import read_embeddings, sidecar_path

SETTINGS = EmbeddingConfig.settings()
NAMES = [s["name"] for s in SETTINGS]


def _graph(kind: str) -> ie.Graph:
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 60, 300), rng.integers(0, 60, 300)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if kind == "str":
        return ie.Graph.from_edges([f"n{x}" for x in src], [f"n{x}" for x in dst])
    return ie.Graph.from_edges(src * 1000 - 7, dst * 1000 - 7)


# ------------------------------------------------------------------------- the config object


def test_defaults_and_choices_come_from_the_kernel_table():
    d = EmbeddingConfig()
    assert [s["name"] for s in SETTINGS] == list(d.to_dict())
    for s in SETTINGS:
        assert getattr(d, s["name"]) == s["default"]
        assert s["type"] in ("int", "float", "str")
        assert (s["choices"] is not None) == (s["type"] == "str")
    assert ie.DEFAULT_EPS == d.eps and ie.DEFAULT_DIM == d.dim == 512
    by_name = {s["name"]: s for s in SETTINGS}
    assert by_name["variant"]["choices"] == ("standard", "lazy")
    assert by_name["value"]["choices"] == ("p+r", "p", "log1p")
    assert by_name["normalize"]["choices"] == ("ln_n", "none", "l2")
    assert (d.eps, d.normalize) == (1e-4, "ln_n")


def test_model_signature_lists_exactly_the_settings():
    params = inspect.signature(ie.InstantEmbedding).parameters
    assert sorted(set(params) - {"threads"}) == sorted(NAMES)
    for name in NAMES:
        assert params[name].default == getattr(EmbeddingConfig(), name), name


def test_every_setting_is_documented_in_the_model_docstring():
    # What help() and pydoc show: each setting's entry, with the table's full text in it.
    page = pydoc.render_doc(ie.InstantEmbedding, renderer=pydoc.plaintext)
    text = " ".join((inspect.getdoc(ie.InstantEmbedding) or "").split())
    for s in SETTINGS:
        choices = "{" + ", ".join(f'"{c}"' for c in s["choices"]) + "}" if s["choices"] else ""
        assert f" |  {s['name']} : {choices or s['type']}, default" in page, s["name"]
        assert " ".join(s["doc"].replace("`", "``").split()) in text, s["name"]
    assert "threads : int, optional" in page
    assert "{" + "settings}" not in (ie.InstantEmbedding.__doc__ or "")


def test_cli_flags_come_from_the_settings():
    sub = build_parser()._subparsers._group_actions[0].choices["embed"]  # type: ignore[union-attr]
    actions = {a.dest: a for a in sub._actions}
    for s in SETTINGS:
        a = actions[s["name"]]
        assert a.default == s["default"], s["name"]
        assert (tuple(a.choices) if a.choices else None) == s["choices"], s["name"]
    args = sub.parse_args(["g.graph", "-o", "x.npy", "--value", "log1p", "--smooth", "2"])
    assert (args.value, args.smooth, args.eps) == ("log1p", 2, EmbeddingConfig().eps)


def test_config_is_frozen_comparable_hashable_and_pickles():
    c = EmbeddingConfig(dim=64, value="log1p", smooth=1, seed=2**64 - 1)
    same = EmbeddingConfig(smooth=1, seed=2**64 - 1, value="log1p", dim=np.int64(64))
    assert c == same and hash(c) == hash(same) and len({c, same}) == 1
    assert c != EmbeddingConfig(dim=64, value="log1p", smooth=2, seed=2**64 - 1)
    assert c != "EmbeddingConfig(dim=64)" and c != object()
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(c, protocol=proto))
        assert back == c and back.to_dict() == c.to_dict()
    assert copy.deepcopy(c) == c
    with pytest.raises(AttributeError):
        c.dim = 3  # type: ignore[misc]
    assert c.dim == 64 and "dim" in dir(c)
    assert repr(c).startswith("EmbeddingConfig(dim=64, alpha=0.15, eps=0.0001, seed=")
    assert eval(repr(c), {"EmbeddingConfig": EmbeddingConfig}) == c


def test_replace_validates_and_leaves_the_original():
    c = EmbeddingConfig(dim=8)
    r = c.replace(eps=1e-3, variant="lazy")
    assert (r.dim, r.eps, r.variant) == (8, 1e-3, "lazy") and c.eps == EmbeddingConfig().eps
    with pytest.raises(ValueError, match="eps"):
        c.replace(eps=0.0)
    with pytest.raises(TypeError, match="unknown setting 'dimension'"):
        c.replace(dimension=3)


@pytest.mark.parametrize(
    "kw,exc,msg",
    [
        ({"dim": True}, TypeError, "dim must be an int, got bool"),
        ({"dim": np.True_}, TypeError, "dim must be an int"),
        ({"dim": 3.0}, TypeError, "dim must be an int, got float"),
        ({"dim": 2**70}, ValueError, "dim must satisfy"),
        ({"seed": -1}, ValueError, r"0 <= seed < 2\*\*64"),
        ({"max_touched": 2**63}, ValueError, r"max_touched < 2\*\*63"),
        ({"eps": "1e-5"}, TypeError, "eps must be a number, got str"),
        ({"alpha": False}, TypeError, "alpha must be a number, got bool"),
        ({"alpha": 1.0}, ValueError, "alpha must satisfy"),
        ({"variant": "LAZY"}, ValueError, "variant must be one of 'standard', 'lazy'"),
        ({"value": None}, ValueError, "value must be one of 'p\\+r', 'p', 'log1p'"),
        (
            {"normalize": "L2"},
            ValueError,
            "normalize must be one of 'ln_n', 'none', 'l2', got 'L2'",
        ),
        ({"normalize": 0}, ValueError, "normalize must be one of 'ln_n', 'none', 'l2'"),
        ({"smooth": _core.MAX_SMOOTH + 1}, ValueError, "smooth must satisfy"),
        ({"threads": 2}, TypeError, "unknown setting 'threads'"),
    ],
)
def test_each_bad_setting_is_refused_at_construction(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        EmbeddingConfig(**kw)


def test_numpy_scalars_are_accepted():
    c = EmbeddingConfig(dim=np.uint16(8), eps=np.float32(1e-3), alpha=np.float64(0.2))
    assert (c.dim, c.alpha) == (8, 0.2) and type(c.dim) is int and abs(c.eps - 1e-3) < 1e-9


def test_non_default_values_cover_every_setting():
    assert list(NON_DEFAULT) == NAMES
    for name, value in NON_DEFAULT.items():
        assert getattr(EmbeddingConfig(), name) != value, name


@pytest.mark.parametrize("name", NAMES)
def test_each_setting_travels_with_the_model(tmp_path, name):
    """A setting survives every way a model travels (get_params/set_params, pickling of the
    model and of its config, the pickled task the Spark, Dask and Ray adapters ship) and
    reaches the rows the workers compute."""
    g = _graph("str")
    path = str(tmp_path / "g.graph")
    g.save(path)
    base: dict = {"dim": 8, "eps": 1e-3}
    if name == "fit_nodes":  # the sample of a compressed model's fit
        base["wide_dim"] = 64
    m = ie.InstantEmbedding(**{**base, name: NON_DEFAULT[name]})
    plain = ie.InstantEmbedding(**base)
    assert m.config != plain.config and getattr(m, name) == NON_DEFAULT[name]
    assert m.get_params()[name] == NON_DEFAULT[name]
    assert ie.InstantEmbedding(**m.get_params()).config == m.config
    assert plain.set_params(**{name: NON_DEFAULT[name]}).config == m.config
    assert pickle.loads(pickle.dumps(m)).config == m.config
    assert pickle.loads(pickle.dumps(m.config)) == m.config
    m.fit(g)  # compressed models need their map (fit() of any other model does nothing)
    task = pickle.loads(pickle.dumps(batch.EmbeddingTask(path, m, threads=2)))
    nodes = [g.nodes[i] for i in (4, 1, 4, 30)]
    want = m.embed(g, nodes)
    assert np.array_equal(task.embed(nodes), want)
    if name != "max_touched":  # a cap no query reaches changes no row
        other = ie.InstantEmbedding(**base).fit(g).embed(g, nodes)
        assert not np.array_equal(want[:, :8], other)


# ------------------------------------------------------------------------- the model


def test_model_wraps_one_config_and_keeps_it_valid():
    m = ie.InstantEmbedding(16, value="log1p", smooth=1, threads=2)
    assert m.config == EmbeddingConfig(dim=16, value="log1p", smooth=1)
    assert (m.dim, m.value, m.smooth, m.threads) == (16, "log1p", 1, 2)
    m.eps = 1e-3  # assignment validates and replaces the config
    assert m.config.eps == 1e-3 and m.get_params()["eps"] == 1e-3
    with pytest.raises(ValueError, match="eps"):
        m.eps = -1.0
    assert m.config.eps == 1e-3  # unchanged after a refused change
    with pytest.raises(AttributeError):
        _ = m.dimension
    with pytest.raises(AttributeError):
        m.config = EmbeddingConfig()  # type: ignore[misc]


def test_get_and_set_params_like_scikit_learn():
    m = ie.InstantEmbedding(dim=16, eps=1e-3)
    p = m.get_params()
    assert set(p) == {*NAMES, "threads"} and p["dim"] == 16
    assert m.set_params(seed=5, smooth=2) is m and (m.seed, m.smooth) == (5, 2)
    with pytest.raises(ValueError, match="invalid parameter 'dimension'"):
        m.set_params(dimension=3)
    with pytest.raises(ValueError, match="alpha"):
        m.set_params(seed=9, alpha=2.0)
    assert m.seed == 5  # all or nothing
    # What sklearn.base.clone does: rebuild from get_params(deep=False), then check that the
    # new object holds the very same parameter objects.
    params = m.get_params(deep=False)
    twin = type(m)(**params)
    assert all(twin.get_params()[k] is v for k, v in params.items())
    assert twin.config == m.config


def test_sklearn_clone():
    base = pytest.importorskip("sklearn.base")
    m = ie.InstantEmbedding(dim=24, eps=np.float64(1e-3), value="log1p", smooth=1, threads=1)
    c = base.clone(m)
    assert c is not m and c.config == m.config and c.threads == 1


def test_model_pickles_and_gives_the_same_rows():
    g = _graph("int")
    m = ie.InstantEmbedding(dim=16, eps=1e-3, value="log1p", smooth=1, threads=2)
    back = pickle.loads(pickle.dumps(m))
    assert back.config == m.config and back.threads == 2 and repr(back) == repr(m)
    assert np.array_equal(back.embed_all(g), m.embed_all(g))


@pytest.mark.parametrize("kind", ["int", "str"])
def test_smoothed_rows_are_the_same_through_every_path(kind):
    """One kernel call (few nodes), the staged path (batches of unsmoothed rows, then the
    steps), embed_all's whole-graph steps: bit-identical rows."""
    g = _graph(kind)
    m = ie.InstantEmbedding(dim=16, eps=1e-3, value="log1p", smooth=2)
    full = m.embed_all(g)
    ids = g.nodes
    for i in (0, 7, len(ids) - 1):
        assert np.array_equal(m.embed(g, ids[i]), full[i])
        assert np.array_equal(m.embed(g, [ids[i]], batch_size=1), full[i : i + 1])
    pick = [ids[j] for j in (5, 3, 5, 40)]
    assert np.array_equal(m.embed(g, pick, progress=lambda done, total: None), full[[5, 3, 5, 40]])


# ------------------------------------------------------------------------- ids with vectors


@pytest.mark.parametrize("kind", ["int", "str"])
def test_embed_table_and_frame_pair_ids_with_rows(kind):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    g = _graph(kind)
    m = ie.InstantEmbedding(dim=8, eps=1e-3)
    full = m.embed_all(g)
    t = m.embed_table(g)
    assert t.column_names == ["node", "embedding"] and t.num_rows == g.num_nodes
    assert t.schema.field("embedding").type == pa.list_(pa.float32(), 8)
    assert t.schema.field("node").type == (pa.string() if kind == "str" else pa.int64())
    assert t.column("node").to_pylist() == list(g.nodes)
    rows = t.column("embedding").combine_chunks().flatten().to_numpy().reshape(-1, 8)
    assert np.array_equal(rows, full)
    some = [g.nodes[3], g.nodes[0], g.nodes[3]]
    f = m.embed_frame(g, some)
    assert list(f.columns) == ["node", "embedding"] and f["node"].tolist() == some
    assert np.array_equal(np.stack(f["embedding"].to_numpy()), full[[3, 0, 3]])
    wide = m.embed_frame(g, some, layout="columns")
    assert list(wide.columns) == ["node", *[f"e{i}" for i in range(8)]]
    assert np.array_equal(wide.iloc[:, 1:].to_numpy(), full[[3, 0, 3]])
    assert isinstance(f, pd.DataFrame)
    with pytest.raises(ValueError, match="layout"):
        m.embed_frame(g, some, layout="wide")  # type: ignore[arg-type]
    # the node column has the graph's id type whatever the query holds, even no nodes
    node_type = pa.string() if kind == "str" else pa.int64()
    assert m.embed_table(g, []).schema.field("node").type == node_type
    assert m.embed_table(g, np.array(some)).schema.field("node").type == node_type


@pytest.mark.parametrize("kind", ["int", "str"])
def test_embed_all_out_writes_the_ids_beside_the_matrix(tmp_path, kind):
    g = _graph(kind)
    m = ie.InstantEmbedding(dim=8, eps=1e-3)
    out = tmp_path / "emb.npy"
    other = sidecar_path(out, "int" if kind == "str" else "str")
    with open(other, "w") as f:  # a stale ids file of the other kind, from an older run
        f.write("stale\n")
    mm = m.embed_all(g, out=out, batch_size=7)
    ids, rows = read_embeddings(out)
    assert np.array_equal(rows, np.asarray(mm)) and np.array_equal(rows, m.embed_all(g))
    assert list(ids) == list(g.nodes)
    assert not os.path.exists(other)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["emb.npy", "emb.ids.txt" if kind == "str" else "emb.ids.npy"]
    )


def test_embed_all_out_refuses_ids_the_ids_file_cannot_hold(tmp_path):
    g = ie.Graph.from_edges(["a\nb", "c"], ["c", "d"])
    with pytest.raises(ValueError, match="line break"):
        ie.InstantEmbedding(dim=4).embed_all(g, out=tmp_path / "e.npy")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------- engine layer


def test_embedding_task_pickles_and_matches_the_model(tmp_path):
    g = _graph("str")
    path = str(tmp_path / "g.graph")
    g.save(path)
    m = ie.InstantEmbedding(dim=16, eps=1e-3, value="log1p", smooth=1)
    task = pickle.loads(pickle.dumps(batch.EmbeddingTask(path, m, threads=2)))
    nodes = [g.nodes[i] for i in (4, 1, 4)]
    assert np.array_equal(task.embed(nodes), m.embed(g, nodes))
    with pytest.raises(ie.NodeNotFoundError, match=r"nobody.*g\.graph"):
        task.embed(["nobody"])
    with pytest.raises(TypeError, match="threads"):
        batch.EmbeddingTask(path, m, threads=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="InstantEmbedding"):
        batch.EmbeddingTask(path, {"dim": 4})  # type: ignore[arg-type]


def test_settings_travel_only_in_the_model(tmp_path):
    g = _graph("int")
    path = str(tmp_path / "g.graph")
    g.save(path)
    nodes = np.asarray(g.nodes)[:5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model form warns about nothing
        batch.embed_batch(path, nodes, model=ie.InstantEmbedding(8))
    with pytest.raises(TypeError, match="unexpected keyword argument 'dim'"):
        batch.embed_batch(path, nodes, dim=8)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="model must be an InstantEmbedding"):
        batch.embed_batch(path, nodes, model={"dim": 8})  # type: ignore[arg-type]


def test_worker_errors_recover_the_type_from_engine_text():
    try:
        raise batch.mark_error(ie.NodeNotFoundError("unknown node id 'x' (graph g)"))
    except ie.NodeNotFoundError as e:
        text = f"Traceback...\nPythonException: {e}\n  at worker"
    with pytest.raises(ie.NodeNotFoundError, match=r"^unknown node id 'x' \(graph g\) \[raised in"):
        with batch.worker_errors("a test task"):
            raise RuntimeError(text)
    with pytest.raises(RuntimeError, match="plain"):
        with batch.worker_errors():
            raise RuntimeError("plain")
