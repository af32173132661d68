"""Dask adapter (``pip install instant-embedding[dask]``; dask imported when called).

Each partition of a DataFrame column or a Bag is embedded with the engine kit
(:mod:`instant_embedding.batch`), so the rows equal :meth:`InstantEmbedding.embed` bit for bit;
dask re-raises worker errors with their own type. See ``docs/DISTRIBUTED.md``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from . import _core
from . import batch as _batch
from ._docs import doc
from .embedding import InstantEmbedding
from .graph import PathLike

__all__ = ["build_graph", "embed", "embed_bag"]


def _ship(path: str, ship: Any) -> tuple[str, str] | None:
    """The name and key of the file :func:`.batch.ship_file` names, once a worker plugin gives it
    to every worker of the client (and those that join later); None without a client."""
    client = ship
    if ship is True:
        try:
            from distributed import get_client

            client = get_client()
        except (ImportError, ValueError):  # no client: the local schedulers read the file
            client = None
    if client is None or client is False:
        return None
    if _batch.is_remote(path):
        raise ValueError("ship=True needs a local graph file; workers copy a URI themselves")
    shipped, key = _batch.ship_file(path)  # a live graph with its change log folded in
    with open(shipped, "rb") as f:
        plugin = _plugin_class()(f.read(), os.path.basename(shipped))
    client.register_plugin(plugin, name=f"instant-embedding-graph-{key}")
    return os.path.basename(shipped), key


def _plugin_class() -> type:
    from distributed.diagnostics.plugin import WorkerPlugin

    class ShippedGraph(WorkerPlugin):  # type: ignore[misc]
        """Writes the graph into each worker's directory, atomically and only where missing."""

        def __init__(self, data: bytes, name: str) -> None:
            self.data, self.filename = data, name

        def setup(self, worker: Any) -> None:
            target = os.path.join(worker.local_directory, self.filename)
            if not os.path.exists(target):  # tasks may map the copy already there
                _core.write_atomic(target, self.data)

    return ShippedGraph


def _worker_file(name: str) -> str | None:
    """Where this distributed worker holds a shipped file (None: computed outside one, with the
    client's file)."""
    try:
        from distributed import get_worker

        return os.path.join(get_worker().local_directory, name)
    except (ImportError, ValueError):
        return None


def _partition(pdf: Any, *, task: _batch.EmbeddingTask, **frame: Any) -> Any:
    nodes = pdf[frame["node_col"]]
    return _batch.embeddings_frame(nodes, task.on_worker(_worker_file).embed(nodes), **frame)


@doc
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
    """Embed the node ids of a dask DataFrame column with ``map_partitions``: lazily, a frame of
    ``node_col`` and the embedding, one row per input row, with ``ddf``'s index and divisions.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
    {graph_path} {node_col} {model} {output_col}
    layout : {"list", "columns"}, default "list"
        ``"list"``: an object column ``output_col`` of float32 arrays, as Spark's ``toPandas()``
        gives ``array<float>`` (``to_parquet`` needs its schema: docs/DISTRIBUTED.md).
        ``"columns"``: ``dim`` float32 columns ``e0 .. e{dim-1}`` (for dask-ml/scikit-learn).
    threads : int or None, default 1
        Threads per partition task (dask runs one task per worker thread); None: every CPU.
    ship : bool or distributed.Client, default False
        Upload the client's graph file to every worker, joining ones too (True: the current
        client, if any). It passes through the scheduler's memory: for graphs over a few
        hundred MB prefer shared storage or a URI.
    {cache_dir}

    {embed_raises}
    """
    task = _batch.driver_task(
        graph_path,
        model,
        threads=threads,
        cache_dir=cache_dir,
        columns=list(ddf.columns),
        node_col=node_col,
        output_col=output_col if layout == "list" else None,
    )
    if layout == "columns" and node_col in [f"e{i}" for i in range(task.model.dim)]:
        raise ValueError(f"node_col {node_col!r} clashes with an embedding column name")
    task = dataclasses.replace(task, shipped=_ship(task.graph_path, ship))
    frame = {"node_col": node_col, "output_col": output_col, "layout": layout}
    empty = np.zeros((0, task.model.dim), dtype=np.float32)
    meta = _batch.embeddings_frame(ddf._meta[node_col].iloc[:0], empty, **frame)
    return ddf[[node_col]].map_partitions(
        _partition,
        task=task,
        **frame,
        meta=meta,
        align_dataframes=False,
        enforce_metadata=False,
    )


def _bag_partition(part: Iterable[Any], *, task: _batch.EmbeddingTask) -> list[Any]:
    nodes = list(part)
    return list(zip(nodes, task.on_worker(_worker_file).embed(nodes)))


def embed_bag(
    bag: Any,
    graph_path: PathLike,
    *,
    model: InstantEmbedding | None = None,
    threads: int | None = 1,
    ship: Any = False,
    cache_dir: PathLike | None = None,
) -> Any:
    """Embed a ``dask.bag.Bag`` of node ids: a Bag of ``(node, float32 array)`` tuples in the
    input's order and partitioning. Parameters as in :func:`embed`."""
    task = _batch.driver_task(graph_path, model, threads=threads, cache_dir=cache_dir)
    task = dataclasses.replace(task, shipped=_ship(task.graph_path, ship))
    return bag.map_partitions(_bag_partition, task=task)


@doc
def build_graph(
    edges_ddf: Any,
    output_path: PathLike,
    *,
    src_col: str = "src",
    dst_col: str = "dst",
    weight_col: str | None = None,
    max_in_flight: int = 2,
    **options: Any,
) -> Any:
    """Build a graph file from a dask DataFrame of edges: partitions computed ``max_in_flight``
    at a time stream into the out-of-core builder (:func:`.batch.build_graph`), in memory
    bounded by those partitions plus ``memory_limit``.

    Parameters
    ----------
    edges_ddf : dask.dataframe.DataFrame
    {output_path} {edge_cols} {build_options}
    max_in_flight : int, default 2
        Partitions computed concurrently ahead of the builder.

    {build_returns}
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
        (src_col, dst_col, weight_col),
        **options,
    )
