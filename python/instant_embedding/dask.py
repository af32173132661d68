"""Dask adapter: embed a dask DataFrame column or a dask Bag of node ids, partition by partition.

Install with ``pip install instant-embedding[dask]``. This module imports nothing from dask at
import time; ``import instant_embedding`` never imports it.

Each partition is embedded independently with the read-only graph file (opened once per worker
process and reused), so results are bit-identical to :meth:`InstantEmbedding.embed` whatever
the partitioning or scheduler. The model's settings travel to the workers as one pickled
:class:`~instant_embedding.batch.EmbeddingTask`. See ``docs/DISTRIBUTED.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from . import _core
from . import batch as _batch
from .embedding import InstantEmbedding

__all__ = ["build_graph", "embed", "embed_bag"]

PathLike = str | os.PathLike[str]
LAYOUTS = _batch.LAYOUTS

# ------------------------------------------------------------------------------ graph shipping

_SHIP_SUBDIR = "instant-embedding-graphs"


def _graph_plugin_class() -> type:
    from distributed.diagnostics.plugin import WorkerPlugin

    class GraphFilePlugin(WorkerPlugin):  # type: ignore[misc]
        """Writes a graph file into each worker's local directory (new workers included)."""

        def __init__(self, data: bytes, digest: str) -> None:
            self.data = data
            self.digest = digest

        def setup(self, worker: Any) -> None:
            d = os.path.join(worker.local_directory, _SHIP_SUBDIR)
            os.makedirs(d, exist_ok=True)
            target = os.path.join(d, f"{self.digest}.graph")
            if os.path.exists(target) and os.path.getsize(target) == len(self.data):
                return
            _core.write_atomic(target, self.data)

    return GraphFilePlugin


def _ship(client: Any, graph_path: str) -> tuple[str, str, str]:
    """Uploads the graph to every worker of ``client``; returns the graph reference."""
    if _batch.is_remote(graph_path):
        raise ValueError(
            "ship=True needs a local graph file; workers copy a URI themselves (ship=False)"
        )
    if not os.path.isfile(graph_path):
        raise FileNotFoundError(f"graph file not found: {graph_path}")
    original = graph_path
    graph_path = _batch.shippable_graph_file(graph_path)  # a live graph: its log folded in
    digest = _batch.header_digest(graph_path)
    with open(graph_path, "rb") as f:
        data = f.read()
    plugin = _graph_plugin_class()(data, digest)
    name = f"instant-embedding-graph-{digest}"
    if hasattr(client, "register_plugin"):
        client.register_plugin(plugin, name=name)
    else:  # pragma: no cover - distributed < 2023.9
        client.register_worker_plugin(plugin, name=name)
    return ("shipped", digest, os.path.abspath(original))


def _graph_ref(graph_path: PathLike, ship: Any) -> tuple[str, str, str]:
    path = os.fspath(graph_path)
    if ship is False or ship is None:
        path = _batch.shared_graph_path(path, "")
        return ("path", path, path)
    if ship is True:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError):
            # No distributed client: the threads/processes schedulers run on this machine.
            return _graph_ref(graph_path, False)
    else:
        client = ship
    return _ship(client, path)


def _worker_graph_path(graph: tuple[str, str, str]) -> str:
    how, value, original = graph
    if how != "shipped":
        return value
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return original  # computed outside a distributed worker: read the driver's file
    p = os.path.join(worker.local_directory, _SHIP_SUBDIR, f"{value}.graph")
    if not os.path.exists(p):
        raise FileNotFoundError(f"graph {original} was not shipped to this worker ({p})")
    return p


# ------------------------------------------------------------------------------ partitions


def _worker_task(task: _batch.EmbeddingTask, graph: tuple[str, str, str]) -> _batch.EmbeddingTask:
    return task.at(_worker_graph_path(graph))


def _column_names(dim: int) -> list[str]:
    return [f"e{i}" for i in range(dim)]


def _partition(
    pdf: Any,
    *,
    node_col: str,
    output_col: str,
    layout: str,
    graph: tuple[str, str, str],
    task: _batch.EmbeddingTask,
) -> Any:
    nodes = pdf[node_col]
    emb = _worker_task(task, graph).embed(nodes)
    return _batch.embeddings_frame(
        nodes, emb, node_col=node_col, output_col=output_col, layout=layout
    )


def _meta(ddf_meta: Any, node_col: str, output_col: str, layout: str, dim: int) -> Any:
    nodes = ddf_meta[node_col].iloc[:0]
    return _batch.embeddings_frame(
        nodes,
        np.zeros((0, dim), dtype=np.float32),
        node_col=node_col,
        output_col=output_col,
        layout=layout,
    )


def _task(
    graph: tuple[str, str, str],
    model: InstantEmbedding,
    threads: int | None,
    cache_dir: PathLike | None,
) -> _batch.EmbeddingTask:
    return _batch.EmbeddingTask(
        graph[2],  # the client's path; workers read _worker_graph_path(graph)
        model,
        threads=threads,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        label=graph[2],
    )


def embed(
    ddf: Any,
    graph_path: PathLike,
    *,
    node_col: str = "node",
    model: InstantEmbedding | None = None,
    output_col: str = "embedding",
    layout: str = "list",
    threads: int | None = 1,
    ship: Any = False,
    cache_dir: PathLike | None = None,
) -> Any:
    """Embed the node ids of a dask DataFrame column with ``map_partitions``.

    Lazy: nothing runs until ``.compute()``, ``.to_parquet()``, ... Errors raised on the
    workers (:class:`NodeNotFoundError` naming the node and graph, ``FileNotFoundError``
    naming the path) are re-raised by dask on the client with their own type.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        Holds the node ids in ``node_col`` (integer or string dtype, no nulls); other columns
        are dropped (the result keeps ``ddf``'s index and divisions, so join or assign back).
    graph_path : str or os.PathLike
        The graph file as the workers see it: a path on shared storage, a URI (``s3://``,
        ``gs://``, ``http(s)://``, ``file://``: copied once per worker machine into a local
        cache keyed by content; needs fsspec), or with ``ship`` a file on the client.
    node_col : str, default "node"
    model : InstantEmbedding, optional
        The settings (default ``InstantEmbedding()``); embeddings equal ``model.embed`` bit
        for bit. The model's own ``threads`` is not used (see ``threads``).
    output_col : str, default "embedding"
        Name of the embedding column for ``layout="list"``.
    layout : {"list", "columns"}, default "list"
        ``"list"`` (the default): one object column ``output_col`` whose cells are float32
        numpy arrays of length ``dim``, as Spark's ``toPandas()`` gives ``array<float>``
        (``np.stack(df[output_col].to_numpy())`` is the matrix). Dask cannot infer a Parquet
        type for an object column, so give ``to_parquet`` the full schema, e.g.
        ``schema=pa.schema([(node_col, pa.int64()), (output_col, pa.list_(pa.float32()))]),
        write_index=False``.
        ``"columns"``: ``dim`` float32 columns ``e0 .. e{dim-1}`` (one contiguous block per
        partition; convenient for dask-ml/scikit-learn, heavy for large ``dim``).
    threads : int or None, default 1
        Threads per partition task. Dask already runs one task per worker thread, so 1 avoids
        oversubscription; None uses every CPU.
    ship : bool or distributed.Client, default False
        Upload the client's graph file to every worker (a worker plugin; workers that join
        later get it too) instead of reading a shared path. True uses the current client
        (and is ignored without one: the local schedulers read the file directly). The whole
        file passes through the scheduler's memory: for graphs over a few hundred MB prefer
        shared storage or a URI.
    cache_dir : str or os.PathLike, optional
        Worker-local cache for URIs.

    Returns
    -------
    dask.dataframe.DataFrame
        ``node_col`` (same dtype) plus the embedding, one row per input row, same index.
    """
    model = _batch.resolve_model(model, "instant_embedding.dask.embed")
    if node_col not in ddf.columns:
        raise KeyError(
            f"node_col {node_col!r} is not a column of the DataFrame {list(ddf.columns)}"
        )
    if layout == "list" and output_col == node_col:
        raise ValueError("output_col must differ from node_col")
    if layout == "columns" and node_col in _column_names(model.dim):
        raise ValueError(f"node_col {node_col!r} clashes with an embedding column name")
    graph = _graph_ref(graph_path, ship)
    task = _task(graph, model, threads, cache_dir)
    meta = _meta(ddf._meta, node_col, output_col, layout, model.dim)
    return ddf[[node_col]].map_partitions(
        _partition,
        node_col=node_col,
        output_col=output_col,
        layout=layout,
        graph=graph,
        task=task,
        meta=meta,
        align_dataframes=False,
        enforce_metadata=False,
    )


def _bag_partition(
    part: Iterable[Any], *, graph: tuple[str, str, str], task: _batch.EmbeddingTask
) -> list[tuple[Any, np.ndarray]]:
    nodes = list(part)
    if not nodes:
        return []
    emb = _worker_task(task, graph).embed(nodes)
    return [(n, emb[i]) for i, n in enumerate(nodes)]


def embed_bag(
    bag: Any,
    graph_path: PathLike,
    *,
    model: InstantEmbedding | None = None,
    threads: int | None = 1,
    ship: Any = False,
    cache_dir: PathLike | None = None,
) -> Any:
    """Embed a ``dask.bag.Bag`` of node ids: a Bag of ``(node, embedding)`` tuples.

    Each embedding is a float32 numpy array of length ``dim``; order and partitioning follow
    the input bag. Parameters are those of :func:`embed`.
    """
    model = _batch.resolve_model(model, "instant_embedding.dask.embed_bag")
    graph = _graph_ref(graph_path, ship)
    task = _task(graph, model, threads, cache_dir)
    return bag.map_partitions(_bag_partition, graph=graph, task=task)


# ------------------------------------------------------------------------------ graph building


def build_graph(
    edges_ddf: Any,
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
    max_in_flight: int = 2,
) -> Any:
    """Build a graph file from a dask DataFrame of edges, one partition at a time.

    Partitions are computed (at most ``max_in_flight`` at once, on the active scheduler) and
    streamed as Arrow record batches through :func:`instant_embedding.from_arrow` into
    the out-of-core builder, which writes ``output_path`` atomically. The edge table is never
    held in memory whole: memory is bounded by ``max_in_flight`` partitions plus
    ``memory_limit``.

    Parameters
    ----------
    edges_ddf : dask.dataframe.DataFrame
    output_path : str or os.PathLike
    src_col, dst_col : str, default "src", "dst"
        Endpoint columns, integer or string node ids.
    weight_col : str, optional
        Positive edge weights (the graph is then weighted).
    directed : bool, default False
    self_loops : {"keep", "drop"}, default "keep"
    merge : {"sum", "max"}, default "sum"
    memory_limit : int or str, optional
        The builder's memory budget (e.g. ``"4G"``).
    tmp_dir : str or os.PathLike, optional
        The builder's scratch directory.
    max_in_flight : int, default 2
        Partitions computed concurrently ahead of the builder.

    Returns
    -------
    Graph
        The new graph file, opened.

    Raises
    ------
    KeyError
        A column is missing.
    """
    import dask
    import pyarrow as pa

    cols = _batch.edge_columns(edges_ddf.columns, src_col, dst_col, weight_col)
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    parts = edges_ddf[cols].to_delayed()

    def batches() -> Iterator[Any]:
        for start in range(0, len(parts), max_in_flight):
            for pdf in dask.compute(*parts[start : start + max_in_flight]):
                yield pa.RecordBatch.from_pandas(pdf, preserve_index=False)

    return _batch.build_graph(
        batches(),
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
