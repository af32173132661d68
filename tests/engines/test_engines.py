"""Conformance suite that every distributed adapter runs (local task, Dask, Spark, Ray).

Each engine is one entry of ``ENGINES``: a function that embeds a list of node ids from a graph
path with a model and returns the rows in input order. Every check runs against every engine:

- a model with **every setting away from its default** gives the rows of ``model.embed``, bit
  for bit, for int64 and string ids and several partitionings (an adapter that rebuilds the
  model and drops a setting changes the rows);
- a ``max_touched`` that a query does reach fails on the workers with
  :class:`~instant_embedding.BudgetExceededError` (the one setting whose value changes no row);
- a missing node raises :class:`~instant_embedding.NodeNotFoundError` naming it and the graph;
- an unfitted compressed model fails (:class:`~instant_embedding.NotFittedError`) before any
  work;
- ``build_graph`` (engines that build graphs) streams the engine's partitions into the
  out-of-core builder and gives the in-memory build's graph, for int64 and string ids.

Adding an engine is one entry in ``ENGINES`` (and ``BUILDERS`` if it builds graphs) and its
public functions in ``DOCUMENTED`` (each parameter documented). Spark and Ray entries carry
their markers (CI runs them with ``-m spark`` and ``-m ray``); Dask runs in the main suite.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import instant_embedding as ie
import numpy as np
import pytest
from helpers import NON_DEFAULT
from instant_embedding import _core, batch
from instant_embedding.embedding import EmbeddingConfig

MODEL = ie.InstantEmbedding(**NON_DEFAULT)  # compressed (wide_dim): fitted per graph below


def fitted(model: ie.InstantEmbedding, path: str) -> ie.InstantEmbedding:
    """A copy of ``model`` fitted on the graph at ``path`` (its compressed output's map)."""
    return ie.InstantEmbedding(**model.get_params()).fit(ie.Graph.open(path))


Embedder = Callable[[str, list, ie.InstantEmbedding, int], np.ndarray]


def _local_task(path: str, nodes: list, model: ie.InstantEmbedding, parts: int) -> np.ndarray:
    """The engine-independent task every adapter ships, pickled as the engines pickle it."""
    import pickle

    task = pickle.loads(pickle.dumps(batch.EmbeddingTask(path, model, threads=2)))
    chunks = np.array_split(np.arange(len(nodes)), parts)
    return np.concatenate([task.embed([nodes[i] for i in c]) for c in chunks if len(c)])


def _dask(scheduler: str) -> Embedder:
    def run(path: str, nodes: list, model: ie.InstantEmbedding, parts: int) -> np.ndarray:
        dd = pytest.importorskip("dask.dataframe")
        pd = pytest.importorskip("pandas")
        from instant_embedding import dask as ied

        pdf = pd.DataFrame({"node": nodes})  # the output keeps the input's index
        ddf = dd.from_pandas(pdf, npartitions=parts)
        out = ied.embed(ddf, path, model=model)
        if scheduler == "processes":
            distributed = pytest.importorskip("distributed")
            with (
                distributed.LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                distributed.Client(cluster),
            ):
                res = out.compute()
        else:
            res = out.compute(scheduler="threads")
        res = res.sort_index()
        return np.stack(res["embedding"].to_numpy()).astype(np.float32)

    return run


def _spark(session) -> Embedder:
    def run(path: str, nodes: list, model: ie.InstantEmbedding, parts: int) -> np.ndarray:
        from instant_embedding import spark as ies

        kind = "string" if isinstance(nodes[0], str) else "long"
        df = session.createDataFrame([(n,) for n in nodes], f"node {kind}").repartition(parts)
        with ies.worker_errors():
            rows = ies.embed(df, path, model=model).collect()
        # one row per input row, in no set order: align on the ids (a repeated id, one row)
        got = {r["node"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}
        return np.stack([got[n] for n in nodes])

    return run


def _ray(ray) -> Embedder:
    def run(path: str, nodes: list, model: ie.InstantEmbedding, parts: int) -> np.ndarray:
        from instant_embedding import ray as ier

        ds = ray.data.from_items([{"node": n} for n in nodes]).repartition(parts)
        with ier.worker_errors():
            rows = ier.embed(ds, path, model=model, batch_size=16).take_all()
        got = {r["node"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}
        return np.stack([got[n] for n in nodes])

    return run


# Each engine: its id and how to get its embedder (its runtime started once per module).
ENGINES = [
    pytest.param(lambda request: _local_task, id="task"),
    pytest.param(lambda request: _dask("threads"), id="dask-threads"),
    pytest.param(lambda request: _dask("processes"), id="dask-cluster"),
    pytest.param(
        lambda request: _spark(request.getfixturevalue("spark")),
        id="spark",
        marks=pytest.mark.spark,
    ),
    pytest.param(
        lambda request: _ray(request.getfixturevalue("ray_local")),
        id="ray",
        marks=pytest.mark.ray,
    ),
]


@pytest.fixture(params=ENGINES)
def engine(request) -> Embedder:
    return request.param(request)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("engine-graphs")
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 90, 500), rng.integers(0, 90, 500)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    big = np.unique(rng.integers(-(2**60), 2**60, 200))[:90]
    out = {}
    for kind, g in (
        ("int64", ie.Graph.from_edges(big[src], big[dst])),
        ("utf8", ie.Graph.from_edges([f"u/{i}-é" for i in src], [f"u/{i}-é" for i in dst])),
    ):
        out[kind] = os.path.join(root, f"{kind}.graph")
        g.save(out[kind])
    return out


def _nodes(path: str, k: int = 60) -> list:
    g = ie.Graph.open(path)
    pick = np.random.default_rng(3).integers(0, g.num_nodes, k)
    return [g.nodes[i] if g.id_kind == "utf8" else int(g.nodes[i]) for i in pick]


def test_the_model_sets_every_setting_away_from_its_default():
    names = [s["name"] for s in EmbeddingConfig.settings()]
    assert sorted(NON_DEFAULT) == sorted(names)
    for name, value in NON_DEFAULT.items():
        assert getattr(EmbeddingConfig(), name) != value, name


@pytest.mark.parametrize("kind", ["int64", "utf8"])
def test_rows_equal_the_local_model_with_every_setting_changed(engine, graphs, kind):
    path = graphs[kind]
    nodes = _nodes(path)
    model = fitted(MODEL, path)
    want = model.embed(ie.Graph.open(path), nodes)
    for parts in (1, 3):
        got = engine(path, nodes, model, parts)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got, want), f"{kind}, {parts} partitions"


def test_max_touched_reaches_the_workers(engine, graphs):
    path = graphs["utf8"]
    # uncompressed: a compressed model's fit would hit the cap on the driver already
    tight = ie.InstantEmbedding(**{**NON_DEFAULT, "wide_dim": 0, "max_touched": 3})
    with pytest.raises(ie.BudgetExceededError, match="max_touched=3"):
        engine(path, _nodes(path, 8), tight, 2)


def test_a_missing_node_is_named_with_the_graph(engine, graphs):
    path = graphs["utf8"]
    nodes = [*_nodes(path, 5), "nobody-here"]
    with pytest.raises(ie.NodeNotFoundError, match=r"nobody-here.*utf8\.graph"):
        engine(path, nodes, fitted(MODEL, path), 2)


def test_an_unfitted_compressed_model_fails_before_any_work(engine, graphs):
    path = graphs["int64"]
    with pytest.raises(ie.NotFittedError):
        engine(path, _nodes(path, 4), ie.InstantEmbedding(**NON_DEFAULT), 2)


# The adapters' public functions: each parameter documented (shared ones by _docs.doc).
DOCUMENTED = [
    "batch.embed_batch",
    "spark.embed",
    "spark.build_graph",
    "dask.embed",
    "dask.build_graph",
    "ray.embed",
]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_parameter_is_documented(name):
    import importlib
    import inspect
    import re

    module, func = name.split(".")
    f = getattr(importlib.import_module(f"instant_embedding.{module}"), func)
    doc = f.__doc__
    assert not re.search(r"^ *\{\w+\}", doc, re.M)  # every shared entry filled in
    params = doc.split("Parameters\n    ----------\n", 1)[1]
    for p in inspect.signature(f).parameters:
        entry = rf"^ {{4}}(\*\*)?(\w+, )*{p}(, \w+)*( : .*)?\n {{8}}\S"
        assert re.search(entry, params, re.M) or re.search(rf"^ {{4}}{p} : ", params, re.M), p


# ------------------------------------------------------------------------- build_graph


def _dask_build(request):
    dd = pytest.importorskip("dask.dataframe")
    from instant_embedding import dask as ied

    def build(pdf, out: str, **kw) -> ie.Graph:
        return ied.build_graph(dd.from_pandas(pdf, npartitions=3), out, **kw)

    return build


def _spark_build(request):
    session = request.getfixturevalue("spark")
    from instant_embedding import spark as ies

    def build(pdf, out: str, **kw) -> ie.Graph:
        return ies.build_graph(session.createDataFrame(pdf).repartition(3), out, **kw)

    return build


BUILDERS = [
    pytest.param(_dask_build, id="dask"),
    pytest.param(_spark_build, id="spark", marks=pytest.mark.spark),
]


@pytest.fixture(params=BUILDERS)
def builder(request, monkeypatch):
    """The engine's ``build_graph``, recording the size of every batch the builder gets."""
    real = _core.GraphBuilder
    sizes: list[int] = []

    class Counting:
        def __init__(self, *args, **kwargs):
            self._b = real(*args, **kwargs)

        def add_edges(self, src, dst, weights=None):
            sizes.append(len(src))
            return self._b.add_edges(src, dst, weights)

        def finish(self, *args, **kwargs):
            return self._b.finish(*args, **kwargs)

        def abort(self):
            return self._b.abort()

    monkeypatch.setattr(_core, "GraphBuilder", Counting)
    build = request.param(request)
    build.sizes = sizes
    return build


@pytest.mark.parametrize("kind", ["int64", "utf8"])
@pytest.mark.parametrize("directed", [False, True])
def test_build_graph_equals_the_in_memory_build(builder, tmp_path, kind, directed):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(9)
    a, b = rng.integers(0, 70, 400), rng.integers(0, 70, 400)
    w = rng.integers(1, 9, 400) / 4
    ids = (
        (lambda x: x * 1009 - 5) if kind == "int64" else (lambda x: np.array([f"n{v}" for v in x]))
    )
    pdf = pd.DataFrame({"u": ids(a), "v": ids(b), "w": w})
    out = str(tmp_path / "g.graph")
    built = builder(pdf, out, src_col="u", dst_col="v", weight_col="w", directed=directed)
    built.validate()
    # Streamed: a batch per partition (3), never the whole table at once.
    assert len(builder.sizes) == 3 and sum(builder.sizes) == len(pdf)
    want = ie.Graph.from_edges(ids(a), ids(b), weights=w, directed=directed)
    assert (built.num_nodes, built.num_edges, built.directed, built.weighted) == (
        want.num_nodes,
        want.num_edges,
        directed,
        True,
    )
    nodes = list(want.nodes)
    model = ie.InstantEmbedding(**{**NON_DEFAULT, "wide_dim": 0})
    assert np.array_equal(model.embed(built, nodes), model.embed(want, nodes))
    with pytest.raises(KeyError, match="'zz'"):
        builder(pdf, str(tmp_path / "h.graph"), src_col="zz", dst_col="v")
    assert not os.path.exists(tmp_path / "h.graph")
