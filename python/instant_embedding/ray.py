"""Ray Data adapter (``pip install instant-embedding[ray]``; ray imported when called).

A pool of stateful actors each opens the graph once and embeds the Arrow batches it is given
with the engine kit (:mod:`instant_embedding.batch`), so the rows equal
:meth:`InstantEmbedding.embed` bit for bit. See ``docs/DISTRIBUTED.md``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from . import batch as _batch
from ._docs import doc
from .embedding import InstantEmbedding
from .graph import PathLike

__all__ = ["actor_pool", "embed", "worker_errors"]

#: Rows per batch an actor embeds at once (one native call per batch).
DEFAULT_BATCH_SIZE = 4096


def worker_errors() -> contextlib.AbstractContextManager[None]:
    """Errors of Ray actors re-raised with their type (:func:`.batch.worker_errors`)."""
    return _batch.worker_errors("a Ray actor")


class _Embedder:
    """The ``map_batches`` callable class: one per actor, holding the opened graph."""

    def __init__(self, task: _batch.EmbeddingTask, node_col: str, output_col: str) -> None:
        with _batch.marked_errors():
            task.graph()  # opened once per actor process, reused for every batch
        self.task, self.cols = task, (node_col, output_col)

    def __call__(self, table: Any) -> Any:
        with _batch.marked_errors():
            return self.task.embed_arrow(table, *self.cols)


def actor_pool(threads: int, cpus: float) -> tuple[int, float]:
    """``(max_actors, cpus_per_actor)`` for ``cpus`` CPUs, leaving one free for the tasks
    upstream (a ``repartition``, a read), which a pool holding every CPU starves forever: at
    most ``(cpus - 1) // threads`` actors, or one asking for what is left."""
    spare = max(cpus - 1.0, 0.0)
    if threads <= spare:
        return max(1, int(spare // threads)), float(threads)
    return 1, spare


@doc
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
    """Embed a Dataset column of node ids with ``map_batches`` in an actor pool: lazily, a Dataset
    of ``node_col`` and ``output_col`` (``list<float32>``); consume it in :func:`worker_errors`.

    Parameters
    ----------
    ds : ray.data.Dataset
    {graph_path} {node_col} {model} {output_col}
    threads : int, default 1
        Threads (and CPUs reserved) per actor.
    max_actors : int, optional
        Most actors in the autoscaling pool; default :func:`actor_pool`'s, which leaves a CPU
        for the operations upstream (more can deadlock a small cluster).
    batch_size : int, default 4096
        Rows per batch: one native call each.
    {cache_dir}

    {embed_raises}
    """
    import ray

    for name, v in (("max_actors", max_actors), ("batch_size", batch_size)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    schema = ds.schema(fetch_if_missing=False)
    hint = " (give a path every node of the cluster can read, or a URI)"
    task = _batch.driver_task(
        graph_path,
        model,
        threads=1 if threads is None else threads,
        cache_dir=cache_dir,
        hint=hint,
        columns=None if schema is None else schema.names,
        node_col=node_col,
        output_col=output_col,
    )
    # Ray Data starts a local cluster of every CPU on first use: size for that before ray.init.
    cpus = ray.cluster_resources().get("CPU", 1.0) if ray.is_initialized() else os.cpu_count()
    fit, per_actor = actor_pool(task.threads or 1, float(cpus or 1))
    return ds.select_columns([node_col]).map_batches(
        _Embedder,
        fn_constructor_kwargs={"task": task, "node_col": node_col, "output_col": output_col},
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=max_actors or fit),
        num_cpus=per_actor,
    )
