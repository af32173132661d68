"""PySpark adapter: embed a DataFrame column of node ids on the executors.

Install with ``pip install instant-embedding[spark]``; pyspark is imported only when called.
Each Spark task embeds its partition independently (no shuffle) with the engine kit
(:mod:`instant_embedding.batch`), so the rows equal :meth:`InstantEmbedding.embed` bit for bit
whatever the partitioning. See ``docs/DISTRIBUTED.md``.

>>> from instant_embedding import InstantEmbedding
>>> from instant_embedding.spark import embed, worker_errors
>>> model = InstantEmbedding(dim=128, value="log1p", smooth=1)
>>> out = embed(nodes_df, "/graphs/web.graph", node_col="node", model=model)  # doctest: +SKIP
>>> with worker_errors():                      # doctest: +SKIP
...     out.write.parquet("s3a://bucket/embeddings/")   # clean errors from the executors
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from . import batch as _batch
from ._checks import check_threads
from .embedding import InstantEmbedding
from .errors import GraphFormatError

__all__ = ["build_graph", "embed", "worker_errors"]

PathLike = str | os.PathLike[str]


def worker_errors() -> contextlib.AbstractContextManager[None]:
    """Errors raised in Spark tasks re-raised on the driver with their own type and message
    (:func:`instant_embedding.batch.worker_errors`); wrap the actions that consume the result."""
    return _batch.worker_errors("a Spark task")


def _executor_graph_path(graph: tuple[str, str, str]) -> str:
    """Where this executor reads the graph: a shipped file (SparkFiles) or the given path."""
    how, value, digest = graph
    if how != "shipped":
        return value
    from pyspark import SparkFiles

    p = SparkFiles.get(value)
    if not os.path.exists(p) and os.path.exists(value):  # Spark Connect artifact (cwd)
        p = os.path.abspath(value)
    if not os.path.exists(p):
        raise FileNotFoundError(
            f"graph file {value!r} shipped with addFile is not on this executor"
        )
    if digest and _batch.header_digest(p) != digest:
        raise GraphFormatError(
            f"the executors' copy of {value!r} is stale: the file changed after Spark shipped "
            "it, and Spark does not ship a path twice; save the new graph under another name "
            "or restart the session"
        )
    return p


def _task_arrow(
    batches: Iterator[Any], *, graph: tuple[str, str, str], task: Any, out_names: tuple[str, str]
) -> Iterator[Any]:
    """mapInArrow body: RecordBatches of node ids in, (node, embedding) batches out."""
    try:
        task = task.at(_executor_graph_path(graph))
        task.graph()  # opened once per Python worker (and reused across its tasks)
    except FileNotFoundError as e:
        hint = "" if graph[0] == "shipped" else " (use shared storage, a URI, or ship=True)"
        raise _batch.mark_error(FileNotFoundError(f"{e} on the executor{hint}")) from None
    except Exception as e:
        raise _batch.mark_error(e) from None
    for rb in batches:
        with _batch.marked_errors():
            out = task.embed_arrow(rb, *out_names)
        yield out


# mapInArrow passes Arrow batches straight through (a zero-copy list<float32> column out);
# mapInPandas, kept for benches/distributed.py's comparison, costs several times more per row.
_MAP_API = "arrow"


def _task_pandas(batches: Iterator[Any], **kw: Any) -> Iterator[Any]:
    import pandas as pd
    import pyarrow as pa

    node_col, out_col = kw["out_names"]
    for pdf in batches:
        rb = pa.RecordBatch.from_arrays([pa.array(pdf[node_col].to_numpy())], names=[node_col])
        for out in _task_arrow(iter([rb]), **kw):
            emb = out.column(1).values.to_numpy().reshape(len(pdf), -1)
            yield pd.DataFrame({node_col: pdf[node_col], out_col: list(emb)})


def _session(df: Any) -> Any:
    spark = getattr(df, "sparkSession", None)
    if spark is None:
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")
    return spark


def _task_cpus(spark: Any) -> int:
    with contextlib.suppress(Exception):
        return max(1, int(spark.conf.get("spark.task.cpus", "1") or "1"))
    return 1


def _id_kind(df: Any, col: str) -> str:
    """ "str" or "int" for an id column of ``df``; ``TypeError`` for any other type."""
    from pyspark.sql import types as T

    t = df.schema[col].dataType
    if isinstance(t, T.StringType):
        return "str"
    if isinstance(t, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "int"
    raise TypeError(f"column {col!r} must hold integer or string node ids, got {t}")


def _ship(spark: Any, graph_path: str) -> tuple[str, str]:
    """Adds the graph to the job's files; returns (name in SparkFiles, header digest).

    Spark ignores a second ``addFile`` of a path, so a graph rebuilt at the same path would be
    served stale: a local file is shipped through a hard link named by its header digest (new
    content, new name); where no link is possible, under its own name, and executors check the
    digest. A live graph is shipped with its change log folded in.
    """
    if _batch.is_remote(graph_path):
        src, digest = graph_path, ""
    else:
        if not os.path.isfile(graph_path):
            raise FileNotFoundError(f"graph file not found: {graph_path}")
        graph_path = _batch.shippable_graph_file(graph_path)
        digest = _batch.header_digest(graph_path)
        link = f"{digest[:16]}-{os.path.basename(graph_path)}"
        src = os.path.join(_batch.scratch_dir("instant-embedding-ship-"), link)
        try:
            if not os.path.exists(src):
                os.link(graph_path, src)
        except OSError:
            src = os.path.abspath(graph_path)
    try:
        if type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.addArtifacts(src, file=True)
        else:
            spark.sparkContext.addFile(src)
    except Exception as e:
        if "FileNotFoundException" in str(e) or "does not exist" in str(e):
            raise FileNotFoundError(f"graph file not found: {graph_path}") from None
        raise
    return os.path.basename(src.rstrip("/")), digest


def _check_node_kind(graph_path: str, kind: str) -> None:
    """If the driver can open the graph, reject a column of the wrong id kind right away."""
    if _batch.is_remote(graph_path) or not os.path.isfile(graph_path):
        return
    try:
        graph_kind = "str" if _batch.open_graph(graph_path).id_kind == "utf8" else "int"
    except Exception:
        return  # the executors will report it
    if graph_kind != kind:
        have = {"str": "strings", "int": "integers"}[kind]
        want = {"str": "string", "int": "integer"}[graph_kind]
        raise TypeError(f"the node column holds {have} but graph {graph_path} has {want} node ids")


@_batch.engine_doc
def embed(
    df: Any,
    graph_path: PathLike,
    *,
    node_col: str = "node",
    model: InstantEmbedding | None = None,
    output_col: str = "embedding",
    vector: bool = False,
    threads: int | None = None,
    ship: bool = False,
    cache_dir: PathLike | None = None,
) -> Any:
    """Embed the node ids of a Spark DataFrame column, partition by partition, on the executors.

    Lazy like any transformation; run the actions inside :func:`worker_errors` to get clean
    exceptions from the executors. The result has ``node_col`` (the input's type) and
    ``output_col`` (``array<float>``, or a Vector), one row per input row, in the input's
    partitioning.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    .. params:: graph_path node_col model output_col
    vector : bool, default False
        ``output_col`` as a ``pyspark.ml.linalg`` dense ``Vector`` (float64, via
        ``array_to_vector``) instead of ``array<float>``.
    threads : int, optional
        Threads per Spark task; default ``spark.task.cpus`` (1 unless configured).
    ship : bool, default False
        Ship the driver's graph file to every executor (``SparkContext.addFile``;
        ``spark.addArtifacts(file=True)`` under Spark Connect), read through ``SparkFiles``.
    .. params:: cache_dir embed_raises
    TypeError
        ``df`` is not a DataFrame, or the node column's type is not integer or string or does
        not match the graph's ids (checked when the driver can open the graph).
    """
    from pyspark.sql import types as T

    spark = _session(df)
    threads = check_threads(threads) or _task_cpus(spark)
    if node_col not in df.columns:
        raise KeyError(f"node_col {node_col!r} is not a column of the DataFrame {df.columns}")
    kind = _id_kind(df, node_col)
    path = os.fspath(graph_path)
    hint = " (give a path every executor and the driver can read, a URI, or ship=True)"
    task = _batch.driver_task(
        path,
        model,
        threads=threads,
        cache_dir=cache_dir,
        hint=None if ship else hint,
        node_col=node_col,
        output_col=output_col,
    )
    graph = ("shipped", *_ship(spark, path)) if ship else ("path", task.graph_path, "")
    _check_node_kind(path, kind)
    schema = T.StructType(
        [
            T.StructField(node_col, df.schema[node_col].dataType, True),
            T.StructField(output_col, T.ArrayType(T.FloatType(), False), False),
        ]
    )
    body = functools.partial(
        _task_pandas if _MAP_API == "pandas" else _task_arrow,
        graph=graph,
        task=task,
        out_names=(node_col, output_col),
    )
    nodes = df.select(node_col)
    out = (
        nodes.mapInPandas(body, schema) if _MAP_API == "pandas" else nodes.mapInArrow(body, schema)
    )
    if vector:
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        out = out.withColumn(output_col, array_to_vector(F.col(output_col)))
    return out


@_batch.engine_doc
def build_graph(
    edges_df: Any,
    output_path: PathLike,
    *,
    src_col: str = "src",
    dst_col: str = "dst",
    weight_col: str | None = None,
    directed: bool = False,
    self_loops: str = "keep",
    merge: str = "sum",
    memory_limit: int | str | None = None,
    tmp_dir: PathLike | None = None,
    staging_dir: str | None = None,
) -> Any:
    """Build a graph file from an edge table in Spark, without collecting edges on the driver.

    Spark writes the edge columns as Parquet shards to ``staging_dir``; the driver streams
    them batch by batch into the out-of-core builder (:func:`instant_embedding.batch.build_graph`).
    Driver memory stays bounded by a batch plus ``memory_limit``.

    Parameters
    ----------
    edges_df : pyspark.sql.DataFrame
    .. params:: build_params
    staging_dir : str, optional
        Where Spark writes the shards: a directory, not existing yet, that the executors and
        the driver can read; deleted afterwards. Default: a new temporary directory on the
        driver (local mode, or executors sharing the driver's file system). On a cluster give
        shared storage, e.g. ``"s3a://bucket/tmp/edges-123"`` (read on the driver with pyarrow,
        ``s3a://`` as ``s3://``).

    .. params:: build_returns
    """
    _session(edges_df)
    stage: list[str] = []  # the shards' directory, once Spark writes it

    def shards(cols: list[str]) -> Any:
        import pyarrow.dataset as ds

        for c in cols[:2]:
            _id_kind(edges_df, c)
        stage.append(staging_dir or os.path.join(tempfile.mkdtemp(prefix="ie-edges-"), "edges"))
        edges_df.select(*cols).write.mode("errorifexists").parquet(stage[0])
        return ds.dataset(_driver_uri(stage[0]), format="parquet")  # hidden files ignored

    try:
        return _batch.build_graph(
            edges_df.columns,
            shards,
            output_path,
            src_col=src_col,
            dst_col=dst_col,
            weight_col=weight_col,
            directed=directed,
            self_loops=self_loops,
            merge=merge,
            memory_limit=memory_limit,
            tmp_dir=tmp_dir,
        )
    finally:
        for where in (_driver_uri(s if staging_dir else os.path.dirname(s)) for s in stage):
            if not _batch.is_remote(where):
                shutil.rmtree(where, ignore_errors=True)
                continue
            with contextlib.suppress(Exception):
                import pyarrow.fs as pafs

                fs, p = pafs.FileSystem.from_uri(where)
                fs.delete_dir(p)


def _driver_uri(uri: str) -> str:
    """A staging location as pyarrow reads it on the driver."""
    if not _batch.is_remote(uri):
        return os.path.abspath(uri)
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return re.sub(r"^s3[an]://", "s3://", uri)
