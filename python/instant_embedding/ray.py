"""Ray Data adapter: embed a Dataset column of node ids in a pool of stateful actors.

Install with ``pip install instant-embedding[ray]``. This module imports nothing from ray at
import time; ``import instant_embedding`` never imports it.

Each actor opens the graph file once and embeds the Arrow batches it is given
(``map_batches`` with ``batch_format="pyarrow"``), so results are bit-identical to
:meth:`InstantEmbedding.embed` whatever the blocks, batches or actors. The model's settings
travel to the actors as one pickled :class:`~instant_embedding.batch.EmbeddingTask`. See
``docs/DISTRIBUTED.md``.

>>> import instant_embedding as ie
>>> from instant_embedding import ray as ier
>>> model = ie.InstantEmbedding(dim=128, value="log1p", smooth=1)
>>> import ray                                                      # doctest: +SKIP
>>> out = ier.embed(ray.data.read_parquet("nodes/"), "/g.graph", model=model)  # doctest: +SKIP
>>> with ier.worker_errors():                                       # doctest: +SKIP
...     out.write_parquet("embeddings/")
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from . import batch as _batch
from ._checks import check_threads
from .embedding import InstantEmbedding

__all__ = ["actor_pool", "embed", "worker_errors"]

PathLike = str | os.PathLike[str]

#: Rows per batch an actor embeds at once (one native call per batch).
DEFAULT_BATCH_SIZE = 4096


def worker_errors() -> contextlib.AbstractContextManager[None]:
    """Errors raised in Ray actors re-raised on the driver with their own type and message
    (:func:`instant_embedding.batch.worker_errors`); wrap the actions that consume the result."""
    return _batch.worker_errors("a Ray actor")


class _Embedder:
    """The ``map_batches`` callable class: one per actor, holding the opened graph."""

    def __init__(self, task: _batch.EmbeddingTask, node_col: str, output_col: str) -> None:
        with _batch.marked_errors():
            task.graph()  # opened once per actor process, reused for every batch
        self.task = task
        self.node_col = node_col
        self.output_col = output_col

    def __call__(self, table: Any) -> Any:
        with _batch.marked_errors():
            return self.task.embed_arrow(table, self.node_col, self.output_col)


def actor_pool(threads: int, cpus: float) -> tuple[int, float]:
    """``(max_actors, cpus_per_actor)`` for a cluster of ``cpus`` CPUs, leaving one CPU free.

    Ray Data runs the operations upstream of the embedding (a ``repartition``, a read, a
    filter) as tasks that each need a CPU. Actors hold their CPUs for as long as the dataset
    runs, so a pool that takes every CPU (two 1-CPU actors on a 2-CPU machine) leaves those
    tasks waiting forever while the actors wait for their input. So the pool never asks for
    more than ``cpus - 1`` CPUs in all: at most ``(cpus - 1) // threads`` actors of
    ``threads`` CPUs each, and where even one actor would not fit, one actor that asks for
    what is left (nothing on a single CPU: it then shares the CPU with the tasks).
    """
    spare = max(cpus - 1.0, 0.0)
    if threads <= spare:
        return max(1, int(spare // threads)), float(threads)
    return 1, spare


def _cluster_cpus() -> float:
    import ray

    if ray.is_initialized():
        return float(ray.cluster_resources().get("CPU", 1.0))
    # Ray Data starts a local cluster of every CPU on first use; size for that.
    return float(os.cpu_count() or 1)


def embed(
    ds: Any,
    graph_path: PathLike,
    *,
    node_col: str = "node",
    model: InstantEmbedding | None = None,
    output_col: str = "embedding",
    threads: int = 1,
    max_actors: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    cache_dir: PathLike | None = None,
) -> Any:
    """Embed the node ids of a Ray Dataset column with ``map_batches`` in an actor pool.

    Lazy like any Ray Data transformation: nothing runs until the dataset is consumed. Consume
    it inside :func:`worker_errors` to get clean exceptions for errors raised in the actors.

    Parameters
    ----------
    ds : ray.data.Dataset
        Holds the node ids in ``node_col`` (integer or string type, no nulls); other columns
        are dropped (join the result back on ``node_col`` if you need them).
    graph_path : str or os.PathLike
        The graph file as the actors see it: a path on storage every node of the cluster
        mounts (the driver checks that it exists), or a URI (``s3://``, ``gs://``,
        ``http(s)://``, ...; copied once per machine into a local cache keyed by content,
        needs fsspec and the protocol's package).
    node_col : str, default "node"
    model : InstantEmbedding, optional
        The settings (default ``InstantEmbedding()``); the embeddings equal ``model.embed``
        bit for bit. The model's own ``threads`` is not used (see ``threads``).
    output_col : str, default "embedding"
        A ``list<float32>`` column of length ``dim``.
    threads : int, default 1
        Threads (and CPUs reserved) per actor.
    max_actors : int, optional
        Most actors in the (autoscaling) pool. Default: as many as fit in the cluster's CPUs
        less one, which stays free for the operations upstream (see :func:`actor_pool`).
        Giving more can deadlock a small cluster after a ``repartition`` or a read.
    batch_size : int, default 4096
        Rows per batch: one native call each.
    cache_dir : str or os.PathLike, optional
        Local copy cache for URIs (default :func:`instant_embedding.batch.default_cache_dir`).

    Returns
    -------
    ray.data.Dataset
        Columns ``node_col`` (same type as the input) and ``output_col``, one row per input
        row.

    Raises
    ------
    KeyError
        ``node_col`` is not a column of ``ds`` (checked when the schema is known).
    FileNotFoundError
        A local ``graph_path`` that does not exist.
    ValueError, TypeError
        Bad parameters.
    """
    import ray

    model = _batch.resolve_model(model, "instant_embedding.ray.embed")
    threads = check_threads(threads) or 1
    if max_actors is not None and (
        isinstance(max_actors, bool) or not isinstance(max_actors, int) or max_actors < 1
    ):
        raise ValueError(f"max_actors must be an int >= 1 or None, got {max_actors!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if output_col == node_col:
        raise ValueError("output_col must differ from node_col")
    schema = ds.schema(fetch_if_missing=False)
    if schema is not None and node_col not in schema.names:
        raise KeyError(f"node_col {node_col!r} is not a column of the Dataset {schema.names}")
    path = _batch.shared_graph_path(
        graph_path, " (give a path every node of the cluster can read, or a URI)"
    )
    task = _batch.EmbeddingTask(
        path,
        model,
        threads=threads,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        label=os.fspath(graph_path),
    )
    fit, cpus = actor_pool(threads, _cluster_cpus())
    pool = ray.data.ActorPoolStrategy(min_size=1, max_size=max_actors or fit)
    return ds.select_columns([node_col]).map_batches(
        _Embedder,
        fn_constructor_kwargs={"task": task, "node_col": node_col, "output_col": output_col},
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=pool,
        num_cpus=cpus,
    )
