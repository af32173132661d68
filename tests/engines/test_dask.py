"""Dask adapter: what is specific to it (layouts, index and meta, ship, bags, Parquet, its
errors). Bit-identity with every setting, ids, partitionings, missing nodes and build_graph are
the conformance suite's (tests/engines/test_engines.py), on the threads scheduler and a
LocalCluster."""

from __future__ import annotations

import os

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import batch
from instant_embedding import dask as ied

dd = pytest.importorskip("dask.dataframe")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

PARAMS = {"dim": 24, "alpha": 0.2, "eps": 1e-4, "seed": 7}
MODEL = ie.InstantEmbedding(**PARAMS)


def _graph_files(root) -> dict[str, str]:
    rng = np.random.default_rng(21)
    src = rng.integers(0, 150, size=700)
    dst = rng.integers(0, 150, size=700)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    big = np.unique(rng.integers(-(2**60), 2**60, size=300))[:150]
    names = [f"acct/{i:03d}-é" for i in range(150)]
    out = {}
    g = ie.Graph.from_edges(big[src], big[dst])
    assert g.id_kind == "int64"
    out["int64"] = os.path.join(root, "int64.graph")
    g.save(out["int64"])
    g = ie.Graph.from_edges([names[i] for i in src], [names[i] for i in dst])
    assert g.id_kind == "utf8"
    out["utf8"] = os.path.join(root, "utf8.graph")
    g.save(out["utf8"])
    return out


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    return _graph_files(str(tmp_path_factory.mktemp("dask-graphs")))


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _sample(path: str, k: int = 200, seed: int = 0) -> list:
    nodes = ie.Graph.open(path).nodes
    pick = np.random.default_rng(seed).integers(0, len(nodes), size=k)
    return [nodes[i] for i in pick]


def _local(path: str, nodes) -> np.ndarray:
    return MODEL.embed(ie.Graph.open(path), nodes)


@pytest.mark.parametrize("kind", ["int64", "utf8"])
@pytest.mark.parametrize("layout", ["list", "columns"])
def test_layouts_keep_the_index_partitions_and_meta(graphs, kind, layout):
    path = graphs[kind]
    nodes = _sample(path)
    ref = _local(path, nodes)
    pdf = pd.DataFrame({"node": nodes, "other": np.arange(len(nodes))})
    pdf.index = pdf.index * 10  # a non-default index must be kept
    ddf = dd.from_pandas(pdf, npartitions=7)
    out = ied.embed(ddf, path, layout=layout, model=MODEL)
    assert out.npartitions == 7
    res = out.compute(scheduler="threads")
    assert list(res.index) == list(pdf.index)
    assert res["node"].tolist() == nodes
    if layout == "list":
        assert list(res.columns) == ["node", "embedding"]
        assert all(v.dtype == np.float32 for v in res["embedding"])
        mat = np.stack(res["embedding"].to_numpy())
    else:
        assert list(res.columns) == ["node"] + [f"e{i}" for i in range(MODEL.dim)]
        assert (res.dtypes.iloc[1:] == np.float32).all()
        mat = res.iloc[:, 1:].to_numpy()
    assert mat.dtype == np.float32
    assert np.array_equal(mat, ref), (kind, layout)
    # meta matches the computed frame (dask checks it lazily otherwise)
    assert list(out._meta.columns) == list(res.columns)
    assert out._meta["node"].dtype == res["node"].dtype


def test_local_cluster_ship_and_bag(client, graphs, tmp_path):
    spath = graphs["utf8"]
    snodes = _sample(spath, seed=2)
    sref = _local(spath, snodes)
    # Shipped: the workers get their own copy from a worker plugin, keyed by content.
    sddf = dd.from_pandas(pd.DataFrame({"name": snodes}), npartitions=7)
    out = ied.embed(sddf, spath, node_col="name", ship=True, model=MODEL)
    res = out.compute()
    assert res["name"].tolist() == snodes
    assert np.array_equal(np.stack(res["embedding"].to_numpy()), sref)
    where = client.run(lambda dask_worker: os.listdir(dask_worker.local_directory))
    shipped = f"{batch.header_digest(spath)}.graph"  # named by its content
    assert all(shipped in names for names in where.values())
    bag = db.from_sequence(snodes, npartitions=4)
    pairs = ied.embed_bag(bag, spath, ship=client, model=MODEL).compute()
    assert [p[0] for p in pairs] == snodes
    assert np.array_equal(np.stack([p[1] for p in pairs]), sref)
    # Parquet round trip of the list layout (the documented schema) gives list<float> back.
    pa = pytest.importorskip("pyarrow")
    pq = str(tmp_path / "emb.parquet")
    schema = pa.schema([("name", pa.string()), ("embedding", pa.list_(pa.float32()))])
    out.to_parquet(pq, schema=schema, write_index=False)
    back = pd.read_parquet(pq)
    assert np.array_equal(np.stack(back["embedding"].to_numpy()).astype(np.float32), sref)


def test_worker_errors_reach_the_client_with_their_type(client, graphs, tmp_path):
    ipath = graphs["int64"]
    known = _sample(ipath, k=3)
    bad = dd.from_pandas(pd.DataFrame({"node": [*known, 12345]}), npartitions=2)
    gone = str(tmp_path / "gone.graph")
    ie.datasets.karate().save(gone)
    lazy = ied.embed(
        dd.from_pandas(pd.DataFrame({"node": [1]}), npartitions=1),
        gone,
        model=ie.InstantEmbedding(4),
    )
    os.remove(gone)
    with pytest.raises(FileNotFoundError, match="gone.graph"):
        lazy.compute()
    with pytest.raises(FileNotFoundError, match="nowhere.graph"):
        ied.embed(bad, str(tmp_path / "nowhere.graph"))  # caught on the client already
    with pytest.raises(KeyError, match="'nodes'"):
        ied.embed(bad, ipath, node_col="nodes")
    with pytest.raises(ValueError, match="layout"):
        ied.embed(bad, ipath, layout="wide")
    with pytest.raises(ValueError, match="output_col must differ"):
        ied.embed(bad, ipath, output_col="node")
    with pytest.raises(ValueError, match="clashes"):
        ied.embed(bad.rename(columns={"node": "e3"}), ipath, node_col="e3", layout="columns")
    with pytest.raises(ValueError, match="dim"):
        ied.embed(bad, ipath, model=ie.InstantEmbedding(dim=0))


@pytest.mark.slow
def test_docs_example_runs(tmp_path):
    """The Dask example in docs/DISTRIBUTED.md runs as written (LocalCluster, ship=True)."""
    import re
    import subprocess
    import sys

    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "DISTRIBUTED.md")
    if not os.path.exists(doc):
        pytest.skip("docs not available")
    with open(doc, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    (example,) = [b for b in blocks if "LocalCluster(" in b]
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, check=True, timeout=300)


def test_the_ship_plugin_never_rewrites_a_copy_tasks_may_map(tmp_path):
    path = tmp_path / "k.graph"
    ie.datasets.karate().save(path)
    worker = type("Worker", (), {"local_directory": str(tmp_path / "w")})()
    os.makedirs(worker.local_directory)
    plugin = ied._plugin_class()(path.read_bytes(), "k.graph")
    plugin.setup(worker)  # a worker that joins, then the same graph registered again
    copy = os.path.join(worker.local_directory, "k.graph")
    first = os.stat(copy).st_ino
    plugin.setup(worker)
    assert os.stat(copy).st_ino == first
    assert open(copy, "rb").read() == path.read_bytes()
