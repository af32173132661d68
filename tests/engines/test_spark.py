"""PySpark adapter in local[2] mode: what is specific to it (schema, partitioning, ship, vectors,
worker errors, driver checks, staging, Spark Connect). Bit-identity with every setting, ids,
partitionings, missing nodes and build_graph are the conformance suite's
(tests/engines/test_engines.py).

One session for the whole module (it takes ~7 s to start) and a handful of small jobs.
Skipped when pyspark or a Java runtime is missing.
"""

from __future__ import annotations

import os
import shutil
import sys

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import spark as ies

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

pytest.importorskip("pyspark")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime for Spark", allow_module_level=True)

PARAMS = {"dim": 20, "alpha": 0.15, "eps": 1e-4, "seed": 11}
MODEL = ie.InstantEmbedding(**PARAMS)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-graphs")
    rng = np.random.default_rng(31)
    src = rng.integers(0, 160, size=800)
    dst = rng.integers(0, 160, size=800)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    big = np.unique(rng.integers(-(2**61), 2**61, size=400))[:160]
    names = [f"page:{i:03d}/ü" for i in range(160)]
    out = {}
    for kind, g in (
        ("int64", ie.Graph.from_edges(big[src], big[dst])),
        ("utf8", ie.Graph.from_edges([names[i] for i in src], [names[i] for i in dst])),
    ):
        assert g.id_kind == kind
        out[kind] = str(root / f"{kind}.graph")
        g.save(out[kind])
    return out


def _sample(path: str, k: int, seed: int) -> list:
    nodes = ie.Graph.open(path).nodes
    pick = np.random.default_rng(seed).integers(0, len(nodes), size=k)
    return [nodes[i].item() if hasattr(nodes[i], "item") else nodes[i] for i in pick]


def _local(path: str, nodes) -> np.ndarray:
    return MODEL.embed(ie.Graph.open(path), nodes)


def _rows_to_matrix(rows, col: str = "embedding") -> np.ndarray:
    return np.array([r[col] for r in rows], dtype=np.float32)


@pytest.mark.parametrize("kind", ["int64", "utf8"])
def test_schema_partitioning_and_ship(spark, graphs, kind):
    from pyspark.sql import functions as F

    path = graphs[kind]
    nodes = _sample(path, 150, seed=3)
    sql_type = "string" if kind == "utf8" else "bigint"
    base = spark.createDataFrame([(n,) for n in nodes], f"node {sql_type}")
    for nparts in (1, 7):
        df = base.repartition(nparts) if nparts > 1 else base.coalesce(1)
        out = ies.embed(df, path, ship=(kind == "utf8"), model=MODEL)
        assert out.schema["node"].dataType == base.schema["node"].dataType
        assert out.schema["embedding"].dataType.simpleString() == "array<float>"
        rows = out.withColumn("pid", F.spark_partition_id()).collect()
        assert len(rows) == len(nodes)
        assert len({r.pid for r in rows}) == nparts  # the input's partitioning is kept
        want = _local(path, [r.node for r in rows])  # rows come back in partition order
        assert np.array_equal(_rows_to_matrix(rows), want), (kind, nparts)


def test_vector_output_threads_and_other_columns(spark, graphs):
    path = graphs["int64"]
    nodes = _sample(path, 40, seed=5)
    df = spark.createDataFrame([(n, "x") for n in nodes], "id bigint, other string")
    out = ies.embed(df, path, node_col="id", output_col="vec", vector=True, threads=2, model=MODEL)
    assert out.columns == ["id", "vec"]
    assert type(out.schema["vec"].dataType).__name__ == "VectorUDT"
    rows = out.collect()
    got = np.array([r.vec.toArray() for r in rows])
    assert got.dtype == np.float64
    assert np.array_equal(got, _local(path, [r.id for r in rows]).astype(np.float64))
    assert ies._task_cpus(spark) == 1  # spark.task.cpus default: one thread per task


def test_worker_errors_surface_cleanly(spark, graphs, tmp_path):
    path = graphs["utf8"]
    good = _sample(path, 3, seed=1)
    bad = spark.createDataFrame([(n,) for n in [*good, "nobody/ü"]], "node string")
    with pytest.raises(ie.NodeNotFoundError) as info:
        with ies.worker_errors():
            ies.embed(bad, path, model=MODEL).collect()
    msg = str(info.value)
    assert "nobody/ü" in msg and "utf8.graph" in msg and "Spark task" in msg
    assert "Traceback" not in msg and "at org.apache" not in msg
    assert "nobody" in info.value.worker_traceback
    # The graph disappears between planning and running: the executor names the path.
    gone = str(tmp_path / "gone.graph")
    ie.datasets.karate().save(gone)
    ints = spark.createDataFrame([(1,), (2,)], "node bigint")
    lazy = ies.embed(ints, gone, model=ie.InstantEmbedding(4))
    os.remove(gone)
    with pytest.raises(FileNotFoundError, match=r"gone\.graph.*executor") as info:
        with ies.worker_errors():
            lazy.count()
    assert "at org.apache" not in str(info.value)
    # Unrelated exceptions pass through worker_errors() untouched.
    with pytest.raises(ZeroDivisionError):
        with ies.worker_errors():
            1 / 0  # noqa: B018


def test_driver_side_checks(spark, graphs, tmp_path):
    ints = spark.createDataFrame([(1,)], "node bigint")
    strs = spark.createDataFrame([("a",)], "node string")
    floats = spark.createDataFrame([(1.0,)], "node double")
    missing = str(tmp_path / "missing.graph")
    with pytest.raises(FileNotFoundError, match="missing.graph"):
        ies.embed(ints, missing)
    with pytest.raises(FileNotFoundError, match="missing.graph"):
        ies.embed(ints, missing, ship=True)
    with pytest.raises(TypeError, match="integer or string"):
        ies.embed(floats, graphs["int64"])
    with pytest.raises(TypeError, match="string node ids"):
        ies.embed(ints, graphs["utf8"])
    with pytest.raises(TypeError, match="integer node ids"):
        ies.embed(strs, graphs["int64"])
    with pytest.raises(KeyError, match="'nodes'"):
        ies.embed(ints, graphs["int64"], node_col="nodes")
    with pytest.raises(TypeError, match="model must be an InstantEmbedding"):
        ies.embed(ints, graphs["int64"], model={"dim": 8})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        ies.embed(ints, graphs["int64"], threads=0)
    with pytest.raises(TypeError, match="DataFrame"):
        ies.embed([1, 2], graphs["int64"])
    with pytest.raises(TypeError, match="dim"):
        ies.embed(ints, graphs["int64"], dim=8)  # type: ignore[call-arg]  # settings go in model=


def test_ship_serves_a_rebuilt_graph_not_a_stale_copy(spark, tmp_path):
    path = str(tmp_path / "evolving.graph")
    df = spark.createDataFrame([(0,), (1,), (2,)], "node bigint")
    ie.datasets.karate().save(path)
    m8 = ie.InstantEmbedding(8)
    first = _rows_to_matrix(ies.embed(df.coalesce(1), path, ship=True, model=m8).collect())
    src = np.array([0, 1, 2, 0])
    dst = np.array([1, 2, 3, 3])
    ie.Graph.from_edges(src, dst, num_nodes=34).save(path)  # same path, new content
    second = _rows_to_matrix(ies.embed(df.coalesce(1), path, ship=True, model=m8).collect())
    assert np.array_equal(second, ie.InstantEmbedding(8).embed(ie.Graph.open(path), [0, 1, 2]))
    assert not np.array_equal(first, second)


def test_build_graph_removes_its_staging_shards(spark, tmp_path, monkeypatch):
    import tempfile

    stage_root = tmp_path / "tmp"
    stage_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(stage_root))
    edges = spark.createDataFrame([("a", "b"), ("b", "c")], "a string, b string").repartition(2)
    built = ies.build_graph(edges, str(tmp_path / "g.graph"), src_col="a", dst_col="b")
    assert (built.num_nodes, built.num_edges) == (3, 2)
    assert os.listdir(stage_root) == []  # the staging shards are removed
    given = str(tmp_path / "stage")
    ies.build_graph(edges, str(tmp_path / "h.graph"), src_col="a", dst_col="b", staging_dir=given)
    assert not os.path.exists(given)


_CONNECT_SCRIPT = r"""
import os, sys
import numpy as np, instant_embedding as ie
from pyspark.sql import SparkSession
from instant_embedding import spark as ies

spark = SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect")
path = sys.argv[1]
g = ie.Graph.open(path)
names = list(g.nodes)
df = spark.createDataFrame([(n,) for n in names], "name string").repartition(3)
for ship in (False, True):  # ship=True goes through spark.addArtifacts(file=True)
    rows = ies.embed(df, path, node_col="name", model=ie.InstantEmbedding(8), ship=ship).collect()
    got = np.array([r.embedding for r in rows], dtype=np.float32)
    assert np.array_equal(got, ie.InstantEmbedding(8).embed(g, [r.name for r in rows])), ship
bad = spark.createDataFrame([("nobody",)], "name string")
try:
    with ies.worker_errors():
        ies.embed(bad, path, node_col="name", model=ie.InstantEmbedding(4)).collect()
except ie.NodeNotFoundError as e:
    assert "nobody" in str(e), e
else:
    raise AssertionError("no error")
spark.stop()
print("CONNECT OK")
"""


@pytest.mark.slow
def test_spark_connect_local(tmp_path):
    """Spark Connect (its own local server, in a subprocess): embed, ship, clean errors."""
    import subprocess

    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect] (grpcio, ...)")
    path = str(tmp_path / "lesmis.graph")
    ie.datasets.lesmis().save(path)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run(
        [sys.executable, "-c", _CONNECT_SCRIPT, path],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0 and "CONNECT OK" in out.stdout, out.stderr[-3000:]
