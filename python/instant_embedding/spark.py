"""PySpark adapter (``pip install instant-embedding[spark]``; pyspark imported when called).

Each Spark task embeds its partition with the engine kit (:mod:`instant_embedding.batch`), so
the rows equal :meth:`InstantEmbedding.embed` bit for bit. See ``docs/DISTRIBUTED.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import tempfile
from collections.abc import Iterator
from typing import Any

from . import batch as _batch
from ._checks import check_threads
from ._docs import doc
from .embedding import InstantEmbedding
from .graph import PathLike

__all__ = ["build_graph", "embed", "worker_errors"]


def worker_errors() -> contextlib.AbstractContextManager[None]:
    """Errors of Spark tasks re-raised with their type (:func:`.batch.worker_errors`)."""
    return _batch.worker_errors("a Spark task")


def _shipped_file(name: str) -> str:
    """Where this executor holds a file shipped with the job: SparkFiles, or (a Spark Connect
    artifact) the working directory."""
    from pyspark import SparkFiles

    p = SparkFiles.get(name)
    return os.path.abspath(name) if not os.path.exists(p) and os.path.exists(name) else p


def _task_arrow(batches: Iterator[Any], *, task: Any, out_names: tuple[str, str]) -> Iterator[Any]:
    """mapInArrow body: RecordBatches of node ids in, (node, embedding) batches out."""
    try:
        local = task.on_worker(_shipped_file)
        local.graph()  # opened once per Python worker (and reused across its tasks)
    except FileNotFoundError as e:
        hint = "" if task.shipped else " (use shared storage, a URI, or ship=True)"
        raise _batch.mark_error(FileNotFoundError(f"{e} on the executor{hint}")) from None
    except Exception as e:
        raise _batch.mark_error(e) from None
    for rb in batches:
        with _batch.marked_errors():
            out = local.embed_arrow(rb, *out_names)
        yield out


def _map_in_arrow(nodes: Any, body: Any, schema: Any) -> Any:
    """Arrow batches straight through (benches/distributed.py swaps in mapInPandas here)."""
    return nodes.mapInArrow(body, schema)


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
    """ "string" or "integer" for an id column of ``df``; ``TypeError`` for any other type."""
    from pyspark.sql import types as T

    t = df.schema[col].dataType
    if isinstance(t, T.StringType):
        return "string"
    if isinstance(t, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "integer"
    raise TypeError(f"column {col!r} must hold integer or string node ids, got {t}")


def _ship(spark: Any, graph_path: str) -> tuple[str, str]:
    """Adds the graph to the job's files (:func:`.batch.ship_file` names a local one by its
    content: Spark ignores a second ``addFile`` of a name); returns (its name, its key)."""
    src, digest = (graph_path, "") if _batch.is_remote(graph_path) else _batch.ship_file(graph_path)
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
    if _batch.is_remote(graph_path):
        return  # not downloaded on the driver
    try:
        have = "string" if _batch.open_graph(graph_path).id_kind == "utf8" else "integer"
    except Exception:
        return  # the executors will report it
    if have != kind:
        raise TypeError(
            f"the node column holds {kind} ids but graph {graph_path} has {have} node ids"
        )


@doc
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
    """Embed the node ids of a DataFrame column on the executors: lazily, a DataFrame of
    ``node_col`` and ``output_col`` (``array<float>`` or a Vector), one row per input row, in
    the input's partitioning. Run its actions inside :func:`worker_errors`.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    {graph_path} {node_col} {model} {output_col}
    vector : bool, default False
        ``output_col`` as a ``pyspark.ml.linalg`` dense ``Vector`` (float64, via
        ``array_to_vector``) instead of ``array<float>``.
    threads : int, optional
        Threads per Spark task; default ``spark.task.cpus`` (1 unless configured).
    ship : bool, default False
        Ship the driver's graph file to every executor (``SparkContext.addFile``;
        ``spark.addArtifacts(file=True)`` under Spark Connect), read through ``SparkFiles``.
    {cache_dir}

    {embed_raises}
    TypeError
        ``df`` is not a DataFrame, or the node column's type is not integer or string or does
        not match the graph's ids (checked when the driver can open the graph).
    """
    from pyspark.sql import types as T

    spark = _session(df)
    path = os.fspath(graph_path)
    hint = " (give a path every executor and the driver can read, a URI, or ship=True)"
    task = _batch.driver_task(
        path,
        model,
        threads=check_threads(threads) or _task_cpus(spark),
        cache_dir=cache_dir,
        hint=None if ship else hint,
        columns=df.columns,
        node_col=node_col,
        output_col=output_col,
    )
    kind = _id_kind(df, node_col)
    if ship:
        task = dataclasses.replace(task, shipped=_ship(spark, path))
    _check_node_kind(path, kind)
    schema = T.StructType(
        [
            T.StructField(node_col, df.schema[node_col].dataType, True),
            T.StructField(output_col, T.ArrayType(T.FloatType(), False), False),
        ]
    )
    body = functools.partial(_task_arrow, task=task, out_names=(node_col, output_col))
    out = _map_in_arrow(df.select(node_col), body, schema)
    if vector:
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        out = out.withColumn(output_col, array_to_vector(F.col(output_col)))
    return out


@doc
def build_graph(
    edges_df: Any,
    output_path: PathLike,
    *,
    src_col: str = "src",
    dst_col: str = "dst",
    weight_col: str | None = None,
    staging_dir: str | None = None,
    **options: Any,
) -> Any:
    """Build a graph file from a Spark edge table: Spark writes Parquet shards to
    ``staging_dir``, the driver streams them into the out-of-core builder
    (:func:`.batch.build_graph`) in memory bounded by a batch plus ``memory_limit``.

    Parameters
    ----------
    edges_df : pyspark.sql.DataFrame
    {output_path} {edge_cols} {build_options}
    staging_dir : str, optional
        A directory, not existing yet, that the executors and the driver can read (deleted
        afterwards). Default: a temporary directory on the driver (local mode, or executors
        sharing its file system); on a cluster, shared storage such as ``"s3a://b/tmp/e1"``.

    {build_returns}
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
            (src_col, dst_col, weight_col),
            **options,
        )
    finally:
        import pyarrow.fs as pafs

        for s in stage:  # the shards, and a directory made for them
            with contextlib.suppress(Exception):
                fs, p = pafs.FileSystem.from_uri(_driver_uri(staging_dir or os.path.dirname(s)))
                fs.delete_dir(p)


def _driver_uri(uri: str) -> str:
    """A staging location as pyarrow reads it on the driver."""
    if not _batch.is_remote(uri):
        return os.path.abspath(uri)
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return re.sub(r"^s3[an]://", "s3://", uri)
