"""InstantEmbedding and local PPR: the public compute API."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._progress import Progress, ProgressArg
from .graph import Graph, NodeId, _node_list

__all__ = ["InstantEmbedding", "ppr"]

DEFAULT_DIM: int = _core.DEFAULT_DIM
DEFAULT_ALPHA: float = _core.DEFAULT_ALPHA
DEFAULT_EPS: float = _core.DEFAULT_EPS
DEFAULT_SEED: int = _core.DEFAULT_SEED
DEFAULT_MAX_TOUCHED: int = _core.DEFAULT_MAX_TOUCHED
VARIANTS = ("standard", "lazy")
VALUES = ("p+r", "p", "log1p")
# Target duration of one native call in batched runs (between calls: Ctrl-C, progress, writes).
BATCH_SECONDS = 0.2


def _check_graph(graph: Any) -> Graph:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be an instant_embedding.Graph, got {type(graph).__name__}")
    return graph


def _check_threads(threads: Any) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be an int or None, got {type(threads).__name__}")
    if not 1 <= threads <= 4096:
        raise ValueError(f"threads must satisfy 1 <= threads <= 4096, got {threads}")
    return int(threads)


def _check_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def ppr(
    graph: Graph,
    node: NodeId,
    *,
    alpha: float = DEFAULT_ALPHA,
    eps: float = DEFAULT_EPS,
    variant: str = "standard",
    max_touched: int = DEFAULT_MAX_TOUCHED,
    return_residual: bool = False,
) -> tuple[Any, ...]:
    """Approximate Personalized PageRank vector of one node by local push.

    Andersen–Chung–Lang push-flow: starting with residual 1 at ``node``, a node ``w`` is pushed
    while ``r[w] > eps * max(deg(w), 1)``; a push moves ``alpha * r[w]`` into ``p[w]`` and
    spreads the rest over ``w``'s out-neighbours (in proportion to edge weight on weighted
    graphs). Only the nodes the push reaches are touched. See ``docs/SPEC.md``.

    Parameters
    ----------
    graph : Graph
    node : int or str
        The seed node's id.
    alpha : float, default 0.15
        Teleport (restart) probability, ``1e-6 <= alpha < 1``.
    eps : float, default 1e-5
        Push threshold per unit of degree: a normal float (``>= 2.2e-308``). For undirected
        graphs the result satisfies ``|pi_j - p_j| <= eps * deg(j)`` for every node ``j``.
    variant : {"standard", "lazy"}, default "standard"
        ``"standard"``: the paper's transition matrix (eq. 1). ``"lazy"``: the appendix's
        Algorithm 3, which keeps half of the spread residual at the pushed node.
    max_touched : int, default 50_000_000
        Refuse a query that touches more nodes than this (bounds memory on huge graphs).
    return_residual : bool, default False
        Also return the residual ``r`` the push left at each node, over every touched node.

    Returns
    -------
    node_ids : ndarray of int64, or list of str
        Ids of the nodes with ``p > 0`` (with ``return_residual``: every touched node), sorted
        by id.
    scores : ndarray of float64
        Their approximate PPR values ``p`` (summing to at most 1).
    residuals : ndarray of float64
        Only with ``return_residual``: ``r`` at the same nodes (``p + r`` is what
        :class:`InstantEmbedding` projects by default).

    Raises
    ------
    NodeNotFoundError
        ``node`` is not in the graph.
    ValueError
        A parameter is out of range.
    BudgetExceededError
        The push touched more than ``max_touched`` nodes.
    """
    graph = _check_graph(graph)
    max_touched = _check_int("max_touched", max_touched)
    if not 1 <= max_touched < 2**63:
        raise ValueError(f"max_touched must satisfy 1 <= max_touched < 2**63, got {max_touched}")
    idx = graph.index([node])[0]
    args = (
        graph._g,
        int(idx),
        _check_float("alpha", alpha),
        _check_float("eps", eps),
        str(variant),
        max_touched,
    )
    arrays: tuple[Any, ...] = (
        _core.ppr_state(*args) if return_residual else _core.ppr(*args)
    )
    ids = graph.ids(arrays[0])
    if isinstance(ids, list):
        order = sorted(range(len(ids)), key=ids.__getitem__)
        return ([ids[i] for i in order], *(a[order] for a in arrays[1:]))
    order_np = np.argsort(ids, kind="stable")
    return (ids[order_np], *(a[order_np] for a in arrays[1:]))


class InstantEmbedding:
    """Local node embeddings from approximate PPR and signed hashing (InstantEmbedding).

    The embedding of node ``v`` is ``w[dim(j)] += sign(j) * max(ln(x_j * n), 0)`` summed over
    the nodes ``j`` touched by the push that computes ``v``'s approximate PPR (see :func:`ppr`),
    where ``x = p + r`` (estimate plus leftover residual; default) or ``x = p``, and ``dim`` and
    ``sign`` are fixed hash functions of node ``j``'s external id and ``seed``. It depends only
    on ``v``'s neighbourhood, so any subset of nodes can be embedded without touching the rest
    of the graph, and results are bit-identical for any thread count, batch split or machine.

    Parameters
    ----------
    dim : int, default 512
        Embedding dimension ``d``.
    alpha : float, default 0.15
        Teleport probability of the PPR, ``1e-6 <= alpha < 1``.
    eps : float, default 1e-5
        PPR precision (push threshold per unit degree); smaller is more accurate and slower.
    seed : int, default 0
        Hash seed, ``0 <= seed < 2**64``; different seeds give independent projections.
    variant : {"standard", "lazy"}, default "standard"
        PPR push variant (see :func:`ppr`).
    value : {"p+r", "p", "log1p"}, default "p+r"
        The per-node mass projected. ``"p"`` is the paper's Algorithm 2 taken literally;
        ``"p+r"`` adds the residual the push left behind, at no extra cost, which reproduces
        the paper's published quality at its ``eps = 1e-5`` (``"p"`` needs ``eps = 1e-6``, 85x
        the work, on BlogCatalog). ``"log1p"`` projects ``ln(1 + (p + r/2) n)`` over every
        touched node instead of ``max(ln((p + r) n), 0)``: +0.7 / +0.9 Micro-F1 on BlogCatalog
        / PPI and +0.2 on PubMed, -0.4 on Cora, with about 3x more projected terms (slower
        projection). See ``docs/QUALITY.md``.
    smooth : int, default 0
        Neighbour smoothing steps applied to the embeddings: each step replaces every row by
        the (arc-weighted) mean of its out-neighbours' rows, ``E <- D^-1 A E`` (a node without
        arcs keeps its row). ``smooth=2`` with ``value="log1p"`` gives the best node
        classification on BlogCatalog and PPI, above ProNE and FastRP (``docs/QUALITY.md``;
        use a weaker regularisation, e.g. ``C=0.01``). A smoothed row of ``v`` needs the
        embeddings of every node within ``smooth`` hops of ``v``: cheap for :meth:`embed_all`
        (one sparse product per step), but :meth:`embed` of a few nodes embeds their whole
        ``smooth``-hop neighbourhood first and holds its rows in memory (4 x dim bytes per
        node of it; a hub's 2-hop neighbourhood can be most of a social graph). Rows stay
        bit-identical for any thread count or batch split. ``0 <= smooth <= 8``.
    threads : int, optional
        Worker threads; default ``RAYON_NUM_THREADS`` or the number of CPUs.
    max_touched : int, default 50_000_000
        Per-query cap on touched nodes (raises :class:`BudgetExceededError` beyond it).

    Notes
    -----
    Postăvaru, Tsitsulin, Almeida, Tian, Lattanzi, Perozzi. "InstantEmbedding: Efficient Local
    Node Representations." arXiv:2010.06992, 2020.

    Examples
    --------
    >>> import instant_embedding as ie
    >>> g = ie.datasets.karate()
    >>> ie.InstantEmbedding(dim=16).embed(g, [0, 33]).shape
    (2, 16)
    """

    def __init__(
        self,
        dim: int = DEFAULT_DIM,
        *,
        alpha: float = DEFAULT_ALPHA,
        eps: float = DEFAULT_EPS,
        seed: int = DEFAULT_SEED,
        variant: str = "standard",
        value: str = "p+r",
        smooth: int = 0,
        threads: int | None = None,
        max_touched: int = DEFAULT_MAX_TOUCHED,
    ) -> None:
        self.dim = _check_int("dim", dim)
        self.alpha = _check_float("alpha", alpha)
        self.eps = _check_float("eps", eps)
        self.seed = _check_int("seed", seed)
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must satisfy 0 <= seed < 2**64, got {seed}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.variant = variant
        if value not in VALUES:
            raise ValueError(f"value must be one of {VALUES}, got {value!r}")
        self.value = value
        self.smooth = _check_int("smooth", smooth)
        if not 0 <= self.smooth <= _core.MAX_SMOOTH:
            raise ValueError(
                f"smooth must satisfy 0 <= smooth <= {_core.MAX_SMOOTH}, got {self.smooth}"
            )
        self.threads = _check_threads(threads)
        self.max_touched = _check_int("max_touched", max_touched)
        if not 1 <= self.dim <= _core.MAX_DIM:
            raise ValueError(f"dim must satisfy 1 <= dim <= {_core.MAX_DIM}, got {self.dim}")
        if not 1 <= self.max_touched < 2**63:
            raise ValueError(
                f"max_touched must satisfy 1 <= max_touched < 2**63, got {max_touched}"
            )
        _core.check_config(
            self.dim, self.alpha, self.eps, self.variant, self.max_touched, self.value
        )

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (scikit-learn style)."""
        return {
            "dim": self.dim,
            "alpha": self.alpha,
            "eps": self.eps,
            "seed": self.seed,
            "variant": self.variant,
            "value": self.value,
            "smooth": self.smooth,
            "threads": self.threads,
            "max_touched": self.max_touched,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"InstantEmbedding({args})"

    def _embed_indices(
        self,
        graph: Graph,
        idx: npt.NDArray[np.uint32],
        threads: int | None,
    ) -> npt.NDArray[np.float32]:
        return _core.embed(
            graph._g,
            idx,
            self.dim,
            self.alpha,
            self.eps,
            self.seed,
            self.variant,
            threads,
            self.max_touched,
            self.value,
        )

    def _batches(self, total: int, threads: int | None, batch_size: int | None) -> int:
        """First batch size: the given one, else a few nodes per thread (then adapted)."""
        if batch_size is not None:
            b = _check_int("batch_size", batch_size)
            if b < 1:
                raise ValueError(f"batch_size must be >= 1, got {b}")
            return b
        return 8 * _core.resolve_threads(threads)

    def embed(
        self,
        graph: Graph,
        nodes: Sequence[NodeId] | npt.ArrayLike | NodeId,
        *,
        threads: int | None = None,
        progress: ProgressArg = False,
        batch_size: int | None = None,
    ) -> npt.NDArray[np.float32]:
        """Embed the given nodes.

        Parameters
        ----------
        graph : Graph
        nodes : int, str, or sequence / array of them
            Node ids (the graph's own ids). Duplicates are allowed.
        threads : int, optional
            Overrides the instance's ``threads`` for this call.
        progress : bool or callable, default False
            True shows a tqdm bar (or logs), a callable receives ``(done, total)``.
        batch_size : int, optional
            Nodes per native call (between calls, Ctrl-C and progress are handled).

        Returns
        -------
        ndarray of float32, shape (len(nodes), dim)
            Row ``i`` embeds ``nodes[i]``; a single scalar node gives shape ``(dim,)``.

        Raises
        ------
        NodeNotFoundError
            Naming the first unknown node.
        BudgetExceededError
            A query touched more than ``max_touched`` nodes.
        """
        graph = _check_graph(graph)
        seq, scalar = _node_list(nodes)
        idx = graph.index(seq)
        threads = _check_threads(threads) if threads is not None else self.threads
        if self.smooth:
            out = self._run_smoothed(graph, idx, threads, progress, batch_size, None, False)
        else:
            out = self._run(graph, idx, threads, progress, batch_size, None)
        return out[0] if scalar else out

    def embed_all(
        self,
        graph: Graph,
        *,
        out: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        progress: ProgressArg = False,
        batch_size: int | None = None,
    ) -> npt.NDArray[np.float32]:
        """Embed every node of the graph, in internal order (row ``i`` is ``graph.nodes[i]``).

        Parameters
        ----------
        graph : Graph
        out : path, optional
            Write a ``.npy`` file incrementally instead of holding the matrix in memory (for
            graphs whose embedding exceeds RAM). The file appears atomically when complete;
            the returned array is a read-only memory map of it.
        threads, progress, batch_size
            As in :meth:`embed`.

        Returns
        -------
        ndarray of float32, shape (graph.num_nodes, dim)
        """
        graph = _check_graph(graph)
        threads = _check_threads(threads) if threads is not None else self.threads
        idx = np.arange(graph.num_nodes, dtype=np.uint32)
        if self.smooth:
            return self._run_smoothed(graph, idx, threads, progress, batch_size, out, True)
        return self._run(graph, idx, threads, progress, batch_size, out)

    def _run_smoothed(
        self,
        graph: Graph,
        idx: npt.NDArray[np.uint32],
        threads: int | None,
        progress: ProgressArg,
        batch_size: int | None,
        out: str | os.PathLike[str] | None,
        whole: bool,
    ) -> npt.NDArray[np.float32]:
        """``self.smooth`` steps of neighbour smoothing (docs/SPEC.md §2b): embed every node
        within ``smooth`` hops of ``idx``, then average outwards, one hop per step. ``whole``:
        ``idx`` is every node in order, so every level is ``idx`` itself (which also lets a
        step index the rows directly)."""
        # levels[j]: the nodes whose rows after smooth - j steps are needed; levels[0] = idx.
        levels = [idx]
        for _ in range(self.smooth):
            levels.append(idx if whole else _core.smooth_sources(graph._g, levels[-1]))
        rows = self._run(graph, levels[-1], threads, progress, batch_size, None)
        for j in range(self.smooth - 1, -1, -1):
            rows = _core.smooth_step(graph._g, levels[j], levels[j + 1], rows, threads)
        if out is None:
            return rows
        from .io import write_npy_atomic

        return write_npy_atomic(out, rows)

    def _run(
        self,
        graph: Graph,
        idx: npt.NDArray[np.uint32],
        threads: int | None,
        progress: ProgressArg,
        batch_size: int | None,
        out: str | os.PathLike[str] | None,
    ) -> npt.NDArray[np.float32]:
        total = len(idx)
        b = self._batches(total, threads, batch_size)
        if out is None and total <= b and not progress:
            return self._embed_indices(graph, idx, threads)
        if out is not None:
            from .io import AtomicNpyWriter

            writer: Any = AtomicNpyWriter(out, (total, self.dim))
            result = writer.array
        else:
            writer = None
            result = np.empty((total, self.dim), dtype=np.float32)
        try:
            with Progress(total, progress, "embedding") as bar:
                start = 0
                while start < total:
                    stop = min(start + b, total)
                    t0 = time.perf_counter()
                    result[start:stop] = self._embed_indices(graph, idx[start:stop], threads)
                    elapsed = time.perf_counter() - t0
                    bar.update(stop - start)
                    if batch_size is None:
                        # Size the next native call to take about BATCH_SECONDS, so Ctrl-C and
                        # progress are seen promptly whatever eps costs (results do not depend
                        # on the batch split).
                        per_node = elapsed / (stop - start)
                        b = int(min(max(BATCH_SECONDS / max(per_node, 1e-9), 1), 1 << 16))
                    start = stop
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if writer is not None:
            return writer.commit()
        return result
