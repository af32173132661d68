"""Ray Data adapter (``instant_embedding.ray``): local cluster of 2 CPUs bound to 127.0.0.1."""

from __future__ import annotations

import os

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import ray as ier

pytestmark = pytest.mark.ray
MODEL = ie.InstantEmbedding(dim=64, eps=1e-4, value="log1p", smooth=1)


@pytest.mark.parametrize(
    "threads,cpus,want",
    [
        (1, 2, (1, 1.0)),  # two 1-CPU actors would starve the upstream tasks
        (1, 16, (15, 1.0)),
        (4, 16, (3, 4.0)),
        (2, 2, (1, 1.0)),  # one actor, asking for what is left
        (1, 1, (1, 0.0)),  # one CPU: the actor shares it with the tasks
    ],
)
def test_actor_pool_leaves_a_cpu_for_upstream_tasks(threads, cpus, want):
    actors, per_actor = ier.actor_pool(threads, cpus)
    assert (actors, per_actor) == want
    assert actors * per_actor <= max(cpus - 1, 0)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-graphs")
    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, 120, 600), rng.integers(0, 120, 600)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    big = np.unique(rng.integers(-(2**62), 2**62, 300))[:120]
    out = {}
    for kind, g in (
        ("int64", ie.Graph.from_edges(big[src], big[dst])),
        ("utf8", ie.Graph.from_edges([f"u/{i}:é" for i in src], [f"u/{i}:é" for i in dst])),
    ):
        out[kind] = str(root / f"{kind}.graph")
        g.save(out[kind])
    return out


def test_bit_identical_after_an_upstream_repartition(ray_local, graphs):
    """int64 and string ids, a repartition upstream of the actors (the small-cluster deadlock
    case), any batch size: the rows of model.embed, bit for bit."""
    ray = ray_local
    for kind, path in graphs.items():
        g = ie.Graph.open(path)
        rng = np.random.default_rng(1)
        nodes = [g.nodes[i] for i in rng.integers(0, g.num_nodes, 150)]
        if kind == "int64":
            nodes = [int(x) for x in nodes]
        items = [{"pos": i, "node": n} for i, n in enumerate(nodes)]
        ds = ray.data.from_items(items).repartition(3)
        out = ier.embed(ds, path, model=MODEL, batch_size=17 if kind == "int64" else 64)
        assert out.columns() == ["node", "embedding"]
        rows = out.take_all()
        assert len(rows) == len(nodes)
        got = np.array([r["embedding"] for r in rows], dtype=np.float32)
        assert np.array_equal(got, MODEL.embed(g, [r["node"] for r in rows])), kind
        # every input row once, whatever order the blocks came back in
        assert sorted(map(str, (r["node"] for r in rows))) == sorted(map(str, nodes))


def test_compressed_model_reaches_the_actors_with_its_map(ray_local, graphs):
    ray = ray_local
    path = graphs["int64"]
    g = ie.Graph.open(path)
    model = ie.InstantEmbedding(dim=16, wide_dim=128, fit_nodes=60).fit(g)
    nodes = [int(x) for x in g.nodes[:90]]
    ds = ray.data.from_items([{"node": n} for n in nodes]).repartition(2)
    rows = ier.embed(ds, path, model=model, batch_size=32).take_all()
    got = np.array([r["embedding"] for r in rows], dtype=np.float32)
    assert np.array_equal(got, model.embed(g, [r["node"] for r in rows]))


def test_worker_and_driver_errors(ray_local, graphs, tmp_path):
    ray = ray_local
    path = graphs["utf8"]
    bad = ray.data.from_items([{"node": "u/1:é"}, {"node": "nobody"}])
    with pytest.raises(ie.NodeNotFoundError, match=r"nobody.*utf8\.graph.*Ray actor") as e:
        with ier.worker_errors():
            ier.embed(bad, path, model=MODEL).take_all()
    assert "nobody" in e.value.worker_traceback
    with pytest.raises(FileNotFoundError, match="missing.graph"):
        ier.embed(bad, str(tmp_path / "missing.graph"), model=MODEL)
    with pytest.raises(KeyError, match="'id'"):
        ier.embed(bad.materialize(), path, node_col="id", model=MODEL)
    with pytest.raises(TypeError, match="dim"):
        ier.embed(bad, path, dim=8)  # type: ignore[call-arg]  # settings go in model=
    assert os.path.exists(path)
