"""PySpark adapter: embed a DataFrame column of node ids on the executors.

Install with ``pip install instant-embedding[spark]``. This module imports nothing from
pyspark at import time; ``import instant_embedding`` never imports it.

Every node's embedding depends only on the read-only graph file, so each Spark task embeds its
partition of node ids independently (no shuffle), and the result is bit-identical to
:meth:`InstantEmbedding.embed` whatever the partitioning. The model's settings travel to the
executors as one pickled :class:`~instant_embedding.batch.EmbeddingTask`. See
``docs/DISTRIBUTED.md``.

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


# ------------------------------------------------------------------------------ executor side


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
            f"graph file {value!r} shipped with addFile is not on this executor ({p})"
        )
    if digest and _batch.header_digest(p) != digest:
        raise GraphFormatError(
            f"the executors' copy of {value!r} is stale: the file changed after Spark "
            "shipped it, and Spark does not ship a path twice; save the new graph "
            "under another name or restart the session"
        )
    return p


def _task_arrow(
    batches: Iterator[Any],
    *,
    graph: tuple[str, str, str],
    task: _batch.EmbeddingTask,
    out_names: tuple[str, str],
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
    node_col, output_col = out_names
    for rb in batches:
        with _batch.marked_errors():
            out = task.embed_arrow(rb, node_col, output_col)
        yield out


# The Spark map API behind embed(). mapInArrow passes Arrow record batches straight through:
# node ids in, a zero-copy list<float32> column over the embedding matrix out. mapInPandas
# (kept for benches/distributed.py's comparison) builds one numpy object per row and lets
# Spark convert them back to Arrow, which costs several times more per row.
_MAP_API = "arrow"


def _task_pandas(batches: Iterator[Any], **kw: Any) -> Iterator[Any]:
    """mapInPandas body (kept for the benchmark's comparison; embed() uses mapInArrow)."""
    import pandas as pd
    import pyarrow as pa

    node_col, out_col = kw["out_names"]
    for pdf in batches:
        rb = pa.RecordBatch.from_arrays([pa.array(pdf[node_col].to_numpy())], names=[node_col])
        for out in _task_arrow(iter([rb]), **kw):
            emb = out.column(1).values.to_numpy().reshape(len(pdf), -1)
            yield pd.DataFrame({node_col: pdf[node_col], out_col: list(emb)})


# ------------------------------------------------------------------------------ driver side


def _session(df: Any) -> Any:
    spark = getattr(df, "sparkSession", None)
    if spark is None:
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}")
    return spark


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _task_cpus(spark: Any) -> int:
    try:
        v = spark.conf.get("spark.task.cpus", "1")
        return max(1, int(v or "1"))
    except Exception:
        return 1


_ship_dir: str | None = None


def _ship_link_dir() -> str:
    """A private directory of hard links to shipped graphs, removed when the driver exits."""
    global _ship_dir
    if _ship_dir is None:
        import atexit

        _ship_dir = tempfile.mkdtemp(prefix="instant-embedding-ship-")
        atexit.register(shutil.rmtree, _ship_dir, True)
    return _ship_dir


def _ship(spark: Any, graph_path: str) -> tuple[str, str]:
    """Adds the graph to the job's files; returns (name in SparkFiles, header digest).

    Spark ignores a second ``addFile`` of a path it has shipped already, so a graph rebuilt at
    the same path would be served stale from the executors' copies. A local file is therefore
    shipped through a hard link named after its header digest (the header holds every
    section's checksum): new content, new name. Where a hard link is impossible (another file
    system), the file is shipped under its own name and executors check the digest, raising a
    clear error on a stale copy.
    """
    if _batch.is_remote(graph_path):
        src, digest = graph_path, ""
    else:
        if not os.path.isfile(graph_path):
            raise FileNotFoundError(f"graph file not found: {graph_path}")
        graph_path = _batch.shippable_graph_file(graph_path)  # a live graph: its log folded in
        digest = _batch.header_digest(graph_path)
        link = os.path.join(_ship_link_dir(), f"{digest[:16]}-{os.path.basename(graph_path)}")
        try:
            if not os.path.exists(link):
                os.link(graph_path, link)
            src = link
        except OSError:
            src = os.path.abspath(graph_path)
    name = os.path.basename(src.rstrip("/"))
    try:
        if _is_connect(spark):
            spark.addArtifacts(src, file=True)
        else:
            spark.sparkContext.addFile(src)
    except Exception as e:
        text = str(e)
        if "FileNotFoundException" in text or "does not exist" in text:
            raise FileNotFoundError(f"graph file not found: {graph_path}") from None
        raise
    return name, digest


def _check_node_type(graph_path: str, kind: str) -> None:
    """If the driver can open the graph, reject a column of the wrong id kind right away."""
    if _batch.is_remote(graph_path) or not os.path.isfile(graph_path):
        return
    try:
        g = _batch.open_graph(graph_path)
    except Exception:
        return  # the executors will report it
    if kind == "str" and g.id_kind != "utf8":
        raise TypeError(
            f"the node column holds strings but graph {graph_path} has integer node ids"
        )
    if kind == "int" and g.id_kind == "utf8":
        raise TypeError(
            f"the node column holds integers but graph {graph_path} has string node ids"
        )


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

    Lazy like any transformation: nothing runs until an action. Run actions inside
    :func:`worker_errors` to get clean exceptions for errors raised on the executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Holds the node ids in ``node_col`` (integer or string type, no nulls); other columns
        are dropped (join the result back on ``node_col`` if you need them).
    graph_path : str or os.PathLike
        The graph file as the executors see it: a path on storage every executor mounts
        (NFS, DBFS fuse, ...), a URI (``s3://``, ``gs://``, ``abfs://``, ``http(s)://``;
        copied once per executor machine into a local cache keyed by content, needs fsspec and
        the protocol's package on the executors), or, with ``ship=True``, a file on the driver.
    node_col : str, default "node"
    model : InstantEmbedding, optional
        The settings (default ``InstantEmbedding()``); the embeddings equal ``model.embed``
        bit for bit. The model's own ``threads`` is not used (see ``threads``).
    output_col : str, default "embedding"
    vector : bool, default False
        Return ``output_col`` as a ``pyspark.ml.linalg`` dense ``Vector`` (float64, via
        ``pyspark.ml.functions.array_to_vector``) instead of ``array<float>``.
    threads : int, optional
        Threads per Spark task; default ``spark.task.cpus`` (1 unless configured), so that
        executors are not oversubscribed.
    ship : bool, default False
        Ship the driver's local graph file to every executor with ``SparkContext.addFile``
        (``spark.addArtifacts(file=True)`` under Spark Connect); executors read it through
        ``SparkFiles.get``.
    cache_dir : str or os.PathLike, optional
        Executor-local cache for URIs (default:
        :func:`instant_embedding.batch.default_cache_dir`).

    Returns
    -------
    pyspark.sql.DataFrame
        Columns ``node_col`` (same type as the input) and ``output_col``
        (``array<float>`` of length ``dim``, or a Vector), one row per input row, in the
        input's partitioning.

    Raises
    ------
    TypeError
        ``df`` is not a DataFrame, the node column has an unsupported type, or its kind
        (int/str) does not match the graph's ids (checked when the driver can open the graph).
    KeyError
        ``node_col`` is not a column of ``df``.
    FileNotFoundError
        ``ship=True`` and the file does not exist, or the graph is a local path the driver
        cannot see either.
    ValueError
        Bad parameters.
    """
    from pyspark.sql import types as T

    spark = _session(df)
    model = _batch.resolve_model(model, "instant_embedding.spark.embed")
    threads = check_threads(threads)
    if threads is None:
        threads = _task_cpus(spark)
    if node_col not in df.columns:
        raise KeyError(f"node_col {node_col!r} is not a column of the DataFrame {df.columns}")
    if output_col == node_col:
        raise ValueError("output_col must differ from node_col")
    node_type = df.schema[node_col].dataType
    int_types = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
    if isinstance(node_type, T.StringType):
        kind = "str"
    elif isinstance(node_type, int_types):
        kind = "int"
    else:
        raise TypeError(
            f"node column {node_col!r} must have an integer or string type, got {node_type}"
        )
    path = os.fspath(graph_path)
    if ship:
        graph = ("shipped", *_ship(spark, path))
    else:
        hint = " (give a path every executor and the driver can read, a URI, or ship=True)"
        graph = ("path", _batch.shared_graph_path(path, hint), "")
    _check_node_type(os.fspath(graph_path), kind)
    schema = T.StructType(
        [
            T.StructField(node_col, node_type, True),
            T.StructField(output_col, T.ArrayType(T.FloatType(), False), False),
        ]
    )
    task = _batch.EmbeddingTask(
        graph[1],
        model,
        threads=threads,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        label=os.fspath(graph_path),
    )
    body = functools.partial(
        _task_pandas if _MAP_API == "pandas" else _task_arrow,
        graph=graph,
        task=task,
        out_names=(node_col, output_col),
    )
    if _MAP_API == "pandas":
        out = df.select(node_col).mapInPandas(body, schema)
    else:
        out = df.select(node_col).mapInArrow(body, schema)
    if vector:
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        out = out.withColumn(output_col, array_to_vector(F.col(output_col)))
    return out


# ------------------------------------------------------------------------------ graph building


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

    Spark writes the edge columns as Parquet shards to ``staging_dir``; the driver then streams
    the shards, one record batch at a time, through :func:`instant_embedding.from_arrow`
    into the out-of-core builder, which writes ``output_path`` atomically. Driver memory stays
    bounded by a batch plus ``memory_limit``, whatever the number of edges.

    Parameters
    ----------
    edges_df : pyspark.sql.DataFrame
    output_path : str or os.PathLike
        The graph file to write on the driver (appears atomically when complete).
    src_col, dst_col : str, default "src", "dst"
        Endpoint columns: integer or string node ids.
    weight_col : str, optional
        Positive edge weights (the graph is then weighted).
    directed : bool, default False
    self_loops : {"keep", "drop"}, default "keep"
    merge : {"sum", "max"}, default "sum"
        How weights of duplicate edges are merged.
    memory_limit : int or str, optional
        The builder's memory budget (e.g. ``"4G"``); default as in ``convert``.
    tmp_dir : str or os.PathLike, optional
        The builder's scratch directory (default: next to ``output_path``).
    staging_dir : str, optional
        Where Spark writes the shards: a directory, which must not exist yet, that both the
        executors and the driver can read. Default: a new temporary directory on the driver,
        right for local mode and for clusters whose executors share the driver's file system.
        On a cluster give shared storage, e.g. ``"s3a://bucket/tmp/edges-123"`` (read back on
        the driver with pyarrow, ``s3a://`` as ``s3://``). It is deleted afterwards.

    Returns
    -------
    Graph
        The new graph file, opened.

    Raises
    ------
    KeyError
        A column is missing.
    TypeError
        An endpoint column is neither integer nor string typed.
    """
    from pyspark.sql import types as T

    _session(edges_df)
    cols = _batch.edge_columns(edges_df.columns, src_col, dst_col, weight_col)
    int_types = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
    for c in (src_col, dst_col):
        t = edges_df.schema[c].dataType
        if not isinstance(t, (T.StringType, *int_types)):
            raise TypeError(f"column {c!r} must hold integer or string node ids, got {t}")
    created = staging_dir is None
    stage = tempfile.mkdtemp(prefix="ie-edges-") if created else str(staging_dir)
    target = os.path.join(stage, "edges") if created else stage
    try:
        edges_df.select(*cols).write.mode("errorifexists").parquet(target)
        return _batch.build_graph(
            _parquet_dataset(target),
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
        _remove_stage(stage if created else target)


def _driver_uri(uri: str) -> str:
    """A staging location as pyarrow reads it on the driver."""
    if not _batch.is_remote(uri):
        return os.path.abspath(uri)
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return re.sub(r"^s3[an]://", "s3://", uri)


def _parquet_dataset(target: str) -> Any:
    """The shards Spark wrote (``_SUCCESS``, ``.crc`` and other hidden files are ignored)."""
    import pyarrow.dataset as ds

    return ds.dataset(_driver_uri(target), format="parquet")


def _remove_stage(path: str) -> None:
    where = _driver_uri(path)
    if not _batch.is_remote(where):
        shutil.rmtree(where, ignore_errors=True)
        return
    with contextlib.suppress(Exception):
        import pyarrow.fs as pafs

        fs, p = pafs.FileSystem.from_uri(where)
        fs.delete_dir(p)
