"""Dask adapter: embed a dask DataFrame column or a dask Bag of node ids, partition by partition.

Install with ``pip install instant-embedding[dask]``; dask is imported only when called. Each
partition is embedded independently with the engine kit (:mod:`instant_embedding.batch`), so
the rows equal :meth:`InstantEmbedding.embed` bit for bit whatever the partitioning or
scheduler. Dask re-raises worker errors on the client with their own type. See
``docs/DISTRIBUTED.md``.
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
            if not os.path.exists(target) or os.path.getsize(target) != len(self.data):
                _core.write_atomic(target, self.data)

    return GraphFilePlugin


def _graph_ref(graph_path: PathLike, ship: Any) -> tuple[str, str, str]:
    """``("path", path, path)``, or ``("shipped", digest, path)`` once every worker of the
    client has the file (a live graph with its change log folded in)."""
    path = os.fspath(graph_path)
    client = ship
    if ship is True:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError):  # no client: the local schedulers read the file
            client = None
    if client is None or client is False:
        path = _batch.shared_graph_path(path, "")
        return ("path", path, path)
    if _batch.is_remote(path):
        raise ValueError("ship=True needs a local graph file; workers copy a URI themselves")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"graph file not found: {path}")
    folded = _batch.shippable_graph_file(path)
    digest = _batch.header_digest(folded)
    with open(folded, "rb") as f:
        plugin = _graph_plugin_class()(f.read(), digest)
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(plugin, name=f"instant-embedding-graph-{digest}")
    return ("shipped", digest, os.path.abspath(path))


def _worker_task(task: _batch.EmbeddingTask, graph: tuple[str, str, str]) -> _batch.EmbeddingTask:
    how, value, original = graph
    if how != "shipped":
        return task.at(value)
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return task.at(original)  # computed outside a distributed worker: the client's file
    p = os.path.join(worker.local_directory, _SHIP_SUBDIR, f"{value}.graph")
    if not os.path.exists(p):
        raise FileNotFoundError(f"graph {original} was not shipped to this worker ({p})")
    return task.at(p)


def _partition(pdf: Any, *, graph: Any, task: _batch.EmbeddingTask, **frame: Any) -> Any:
    nodes = pdf[frame["node_col"]]
    return _batch.embeddings_frame(nodes, _worker_task(task, graph).embed(nodes), **frame)


@_batch.engine_doc
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

    Lazy: nothing runs until ``.compute()``, ``.to_parquet()``, ... The result has
    ``node_col`` (same dtype) and the embedding, one row per input row, with ``ddf``'s index
    and divisions.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
    .. params:: graph_path node_col model output_col
    layout : {"list", "columns"}, default "list"
        ``"list"``: one object column ``output_col`` of float32 arrays, as Spark's
        ``toPandas()`` gives ``array<float>`` (``np.stack(df[output_col].to_numpy())`` is the
        matrix; give ``to_parquet`` the schema, e.g. ``schema=pa.schema([(node_col,
        pa.int64()), (output_col, pa.list_(pa.float32()))]), write_index=False``).
        ``"columns"``: ``dim`` float32 columns ``e0 .. e{dim-1}`` (for dask-ml/scikit-learn).
    threads : int or None, default 1
        Threads per partition task (dask runs one task per worker thread); None: every CPU.
    ship : bool or distributed.Client, default False
        Upload the client's graph file to every worker (a worker plugin; workers that join
        later get it too). True uses the current client (none: the local schedulers read the
        file). The file passes through the scheduler's memory: for graphs over a few hundred
        MB prefer shared storage or a URI.
    .. params:: cache_dir embed_raises
    """
    task = _batch.driver_task(
        graph_path,
        model,
        threads=threads,
        cache_dir=cache_dir,
        hint=None,
        columns=list(ddf.columns),
        node_col=node_col,
        output_col=output_col if layout == "list" else None,
    )
    if layout == "columns" and node_col in [f"e{i}" for i in range(task.model.dim)]:
        raise ValueError(f"node_col {node_col!r} clashes with an embedding column name")
    graph = _graph_ref(graph_path, ship)
    frame = {"node_col": node_col, "output_col": output_col, "layout": layout}
    empty = np.zeros((0, task.model.dim), dtype=np.float32)
    meta = _batch.embeddings_frame(ddf._meta[node_col].iloc[:0], empty, **frame)
    return ddf[[node_col]].map_partitions(
        _partition,
        graph=graph,
        task=task,
        **frame,
        meta=meta,
        align_dataframes=False,
        enforce_metadata=False,
    )


def _bag_partition(part: Iterable[Any], *, graph: Any, task: _batch.EmbeddingTask) -> list[Any]:
    nodes = list(part)
    if not nodes:
        return []
    return list(zip(nodes, _worker_task(task, graph).embed(nodes)))


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
    task = _batch.driver_task(graph_path, model, threads=threads, cache_dir=cache_dir, hint=None)
    return bag.map_partitions(_bag_partition, graph=_graph_ref(graph_path, ship), task=task)


@_batch.engine_doc
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
    streamed as Arrow batches into the out-of-core builder
    (:func:`instant_embedding.batch.build_graph`): memory is bounded by ``max_in_flight``
    partitions plus ``memory_limit``.

    Parameters
    ----------
    edges_ddf : dask.dataframe.DataFrame
    .. params:: build_params
    max_in_flight : int, default 2
        Partitions computed concurrently ahead of the builder.

    .. params:: build_returns
    """
    import dask
    import pyarrow as pa

    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")

    def batches(cols: list[str]) -> Iterator[Any]:
        parts = edges_ddf[cols].to_delayed()
        for start in range(0, len(parts), max_in_flight):
            for pdf in dask.compute(*parts[start : start + max_in_flight]):
                yield pa.RecordBatch.from_pandas(pdf, preserve_index=False)

    return _batch.build_graph(
        list(edges_ddf.columns),
        batches,
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
