"""InstantEmbedding and local PPR: the public compute API."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_batch_size, check_threads
from ._core import EmbeddingConfig
from ._docs import doc
from ._progress import Progress, ProgressArg
from .errors import NotFittedError
from .graph import Graph, NodeId, node_list

__all__ = ["EmbeddingConfig", "InstantEmbedding", "ppr"]

# The settings' defaults and choices are defined once, in the kernel (src/embed/config.rs).
_DEFAULTS = EmbeddingConfig()
_SETTINGS = {s["name"]: s for s in EmbeddingConfig.settings()}
DEFAULT_DIM: int = _DEFAULTS.dim
DEFAULT_ALPHA: float = _DEFAULTS.alpha
DEFAULT_EPS: float = _DEFAULTS.eps
DEFAULT_SEED: int = _DEFAULTS.seed
DEFAULT_MAX_TOUCHED: int = _DEFAULTS.max_touched
# <settings: aliases>
Variant = Literal["standard", "lazy"]
Value = Literal["p+r", "p", "log1p"]
Normalize = Literal["ln_n", "none", "l2"]
# </settings>


def _check_graph(graph: Any) -> Graph:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be an instant_embedding.Graph, got {type(graph).__name__}")
    return graph


@doc
def ppr(
    graph: Graph,
    node: NodeId,
    *,
    alpha: float = DEFAULT_ALPHA,
    eps: float = DEFAULT_EPS,
    variant: Variant = _DEFAULTS.variant,
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
    {graph}
    node : int or str
        The seed node's id.
    {alpha}
    {eps}
    {variant}
    {max_touched}
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
    config = EmbeddingConfig(alpha=alpha, eps=eps, variant=variant, max_touched=max_touched)
    idx = int(graph.index([node])[0])
    push = _core.ppr_state if return_residual else _core.ppr
    arrays: tuple[Any, ...] = push(graph._native, idx, config)
    order = graph._native.id_order(arrays[0])  # by external id
    return (graph.ids(arrays[0][order]), *(a[order] for a in arrays[1:]))


@doc
class InstantEmbedding:
    """Local node embeddings from approximate PPR and signed hashing (InstantEmbedding).

    The embedding of node ``v`` is ``w[dim(j)] += sign(j) * max(ln(x_j * n), 0)`` summed over
    the nodes ``j`` touched by the push that computes ``v``'s approximate PPR (see :func:`ppr`),
    where ``x = p + r`` (estimate plus leftover residual; default) or ``x = p``, and ``dim`` and
    ``sign`` are fixed hash functions of node ``j``'s external id and ``seed``; by default each
    coordinate is then divided by ``ln(n)`` (``normalize``). It depends only on ``v``'s
    neighbourhood, so any subset of nodes can be embedded without touching the rest of the
    graph, and results are bit-identical for any thread count, batch split or machine.

    The defaults are the cheapest setting at the paper's quality: BlogCatalog Micro-F1 34.3
    (paper: 33.4) at about 20 µs per node. Recipes for other uses (lowest latency, fastest or
    best whole graph) are in ``docs/GUIDE.md``.

    Parameters
    ----------
    {settings}
    threads : int, optional
        Worker threads; default ``RAYON_NUM_THREADS`` or the number of CPUs.

    Attributes
    ----------
    config : EmbeddingConfig
        The validated settings (all but ``threads``), immutable; what the engines ship to
        their workers. ``model.dim``, ``model.eps``, ... read it; assigning one of them, like
        :meth:`set_params`, validates and replaces it (and drops a fitted map).
    components_ : ndarray of float32, shape (wide_dim, dim)
        Only after :meth:`fit` of a compressed model: the linear map (row ``j`` is what wide
        coordinate ``j`` adds), read-only.
    n_fit_nodes_ : int
        Only after :meth:`fit` of a compressed model: nodes in the sample it was fitted on.

    Notes
    -----
    Follows scikit-learn's estimator conventions: :meth:`get_params` / :meth:`set_params`,
    ``sklearn.base.clone`` (which gives an unfitted copy) and pickling (which keeps a fitted
    map) work; :meth:`fit` returns the model.

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
        # <settings: init>
        dim: int = _DEFAULTS.dim,
        *,
        alpha: float = _DEFAULTS.alpha,
        eps: float = _DEFAULTS.eps,
        seed: int = _DEFAULTS.seed,
        variant: Variant = _DEFAULTS.variant,
        value: Value = _DEFAULTS.value,
        normalize: Normalize = _DEFAULTS.normalize,
        smooth: int = _DEFAULTS.smooth,
        max_touched: int = _DEFAULTS.max_touched,
        wide_dim: int = _DEFAULTS.wide_dim,
        fit_nodes: int = _DEFAULTS.fit_nodes,
        threads: int | None = None,
        # </settings>
    ) -> None:
        # Every argument but threads is a setting of the config (tests/kernel/test_config.py checks
        # that this signature lists exactly the config's settings).
        args = locals()
        self._set({k: args[k] for k in _SETTINGS}, threads)

    def _set(self, settings: dict[str, Any], threads: Any) -> None:
        config = EmbeddingConfig(**settings)  # the one validation of the settings
        threads = check_threads(threads)
        # The given objects are kept for get_params: scikit-learn's clone() checks identity.
        object.__setattr__(self, "_params", {**settings, "threads": threads})
        if self.__dict__.get("config") != config:
            # A map fits one set of settings: other settings need a new fit.
            self.__dict__.pop("_map", None)
        object.__setattr__(self, "config", config)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if name in ("components_", "n_fit_nodes_"):
            if d.get("_map") is None:
                raise AttributeError(
                    f"{name} exists after fit() of a compressed model (wide_dim > 0)"
                )
            return d["_map"].sample if name == "n_fit_nodes_" else d["_map"].components
        if name in _SETTINGS and "config" in d:
            return getattr(d["config"], name)
        if name == "threads" and "_params" in d:
            return d["_params"]["threads"]
        raise AttributeError(f"'InstantEmbedding' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SETTINGS or name == "threads":
            self.set_params(**{name: value})
        elif name in ("config", "_params", "_map", "components_", "n_fit_nodes_"):
            raise AttributeError(f"{name} is managed by set_params; use set_params(...)")
        else:
            object.__setattr__(self, name, value)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (scikit-learn style); ``deep`` has no effect.

        ``InstantEmbedding(**model.get_params())`` makes an equal model.
        """
        return dict(self._params)

    def set_params(self, **params: Any) -> InstantEmbedding:
        """Change parameters (scikit-learn style); returns the model.

        All given parameters are validated together before any is applied, so an invalid one
        leaves the model unchanged.

        Raises
        ------
        ValueError
            An unknown parameter name, or a value out of its range.
        TypeError
            A value of the wrong type.
        """
        unknown = sorted(set(params) - set(self._params))
        if unknown:
            raise ValueError(
                f"invalid parameter {unknown[0]!r} for InstantEmbedding; valid parameters "
                f"are {sorted(self._params)}"
            )
        merged = {**self._params, **params}
        threads = merged.pop("threads")
        self._set(merged, threads)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"InstantEmbedding({args})"

    @property
    def compressed(self) -> bool:
        """Whether rows are hashed into ``wide_dim`` and mapped to ``dim`` (``wide_dim > 0``)."""
        return bool(self.config.wide_dim)

    def fit(self, graph: Graph, y: Any = None, *, threads: int | None = None) -> InstantEmbedding:
        """Fit the compressed output's linear map on ``graph``; returns the model.

        Embeds a sample of ``fit_nodes`` nodes (drawn by a seeded rule, ``seed``) at
        ``wide_dim``, weighs each wide coordinate by the inverse square root of its typical
        size over the sample, and keeps the top ``dim`` principal directions (uncentred) of
        the weighed rows, times those weights, as :attr:`components_`. Deterministic: the
        same graph, settings and seed give the same map bit for bit, for any thread count or
        machine. Its cost does not grow with the graph (BlogCatalog: about 1 s). A model
        without ``wide_dim`` has nothing to fit and is returned as it is. ``y`` is ignored
        (scikit-learn's signature).

        The map stays fixed afterwards: embeddings of a changed (live) graph stay comparable
        with earlier ones. Fit again (on the current graph) when the graph has changed so
        much that a fresh sample would look different, and re-embed everything then.

        Raises
        ------
        BudgetExceededError
            A sample node's push touched more than ``max_touched`` nodes.
        """
        graph = _check_graph(graph)
        if self.compressed:
            fitted = _core.fit_map(graph._native, self.config, self._threads(threads))
            object.__setattr__(self, "_map", fitted)
        return self

    def _fitted_map(self) -> _core.LinearMap | None:
        if not self.compressed:
            return None
        fitted = self.__dict__.get("_map")
        if fitted is None:
            raise NotFittedError(
                f"this InstantEmbedding has wide_dim={self.config.wide_dim}: call "
                "fit(graph) (or InstantEmbedding.load(path)) before embedding"
            )
        return fitted

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted compressed model (its settings and linear map) to ``path``,
        atomically; :meth:`load` reads it back (the command line's ``embed --model``).

        Raises
        ------
        NotFittedError
            The model is compressed but not fitted.
        ValueError
            The model is not compressed: its settings alone reproduce it
            (``InstantEmbedding(**model.get_params())``).
        """
        fitted = self._fitted_map()
        if fitted is None:
            raise ValueError("only a compressed model (wide_dim > 0) has a model file to save")
        _core.write_atomic(os.fspath(path), fitted.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, threads: int | None = None) -> InstantEmbedding:
        """The fitted model :meth:`save` wrote to ``path``.

        Raises
        ------
        GraphFormatError
            The file is not a model file, or is corrupted or truncated.
        OSError
            The file cannot be read.
        """
        with open(path, "rb") as f:
            fitted = _core.LinearMap.from_bytes(f.read())
        settings: dict[str, Any] = fitted.config.to_dict()
        model = cls(**settings, threads=threads)
        object.__setattr__(model, "_map", fitted)  # (pickles as its bytes, with the model)
        return model

    def _threads(self, threads: Any) -> int | None:
        return check_threads(threads) if threads is not None else self.threads

    @doc
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
        {graph} {nodes}
        {threads} {progress} {batch_size}

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
        NotFittedError
            A compressed model (``wide_dim > 0``) that was not fitted.
        """
        graph = _check_graph(graph)
        self._fitted_map()
        seq, scalar = node_list(nodes)
        idx = graph.index(seq)
        threads = self._threads(threads)
        out = self._compute(graph, idx, threads, progress, check_batch_size(batch_size))
        return out[0] if scalar else out

    @doc
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
        {graph}
        out : path, optional
            Write a ``.npy`` file incrementally instead of holding the matrix in memory (for
            graphs whose embedding exceeds RAM), and the node ids beside it, as the command
            line's ``embed -o FILE.npy`` does: ``FILE.ids.npy`` (int64) for integer ids or
            ``FILE.ids.txt`` (UTF-8, one id per line) for string ids; row ``k`` embeds id
            ``k`` (:func:`instant_embedding.export.read_embeddings` reads both). The files
            appear atomically when complete; the returned array is a read-only memory map of
            the matrix.
        {threads} {progress} {batch_size}

        Returns
        -------
        ndarray of float32, shape (graph.num_nodes, dim)
        """
        graph = _check_graph(graph)
        self._fitted_map()
        threads = self._threads(threads)
        batch_size = check_batch_size(batch_size)
        idx = np.arange(graph.num_nodes, dtype=np.uint32)
        if out is None:
            return self._compute(graph, idx, threads, progress, batch_size)
        writer = _core.EmbeddingFile(os.fspath(out), "npy", self.config.dim, len(idx))
        try:
            self._compute(graph, idx, threads, progress, batch_size, writer)
            writer.close()
        finally:
            writer.abort()
        return np.load(out, mmap_mode="r")  # type: ignore[no-any-return]

    @doc
    def embed_table(
        self,
        graph: Graph,
        nodes: Sequence[NodeId] | npt.ArrayLike | None = None,
        *,
        threads: int | None = None,
        progress: ProgressArg = False,
        batch_size: int | None = None,
    ) -> Any:
        """Embed nodes and return them with their ids as a ``pyarrow.Table``.

        Columns ``node`` (int64 or string) and ``embedding``
        (``fixed_size_list<float32>[dim]``, zero-copy over the matrix), the schema of the
        Parquet files the command line writes. Needs pyarrow.

        Parameters
        ----------
        {graph} {all_nodes}
        {threads} {progress} {batch_size}
        """
        from .export import embeddings_table

        return embeddings_table(*self._ids_and_rows(graph, nodes, threads, progress, batch_size))

    @doc
    def embed_frame(
        self,
        graph: Graph,
        nodes: Sequence[NodeId] | npt.ArrayLike | None = None,
        *,
        layout: Literal["list", "columns"] = "list",
        threads: int | None = None,
        progress: ProgressArg = False,
        batch_size: int | None = None,
    ) -> Any:
        """Embed nodes and return them with their ids as a ``pandas.DataFrame``.

        Parameters
        ----------
        {graph} {all_nodes}
        layout : {"list", "columns"}, default "list"
            ``"list"``: columns ``node`` and ``embedding``, each cell of which is a float32
            array of length ``dim`` (a view of one matrix); ``np.stack(df.embedding)`` is the
            matrix. ``"columns"``: ``node`` and ``dim`` float32 columns ``e0 ... e{dim-1}``
            (for scikit-learn; wide for large ``dim``).
        {threads} {progress} {batch_size}
        """
        import pandas as pd

        from .batch import embeddings_frame

        ids, rows = self._ids_and_rows(graph, nodes, threads, progress, batch_size)
        node = pd.Series(ids, dtype=object if isinstance(ids, list) else np.int64, name="node")
        return embeddings_frame(node, rows, node_col="node", output_col="embedding", layout=layout)

    def _ids_and_rows(
        self,
        graph: Graph,
        nodes: Any,
        threads: int | None,
        progress: ProgressArg,
        batch_size: int | None,
    ) -> tuple[Any, npt.NDArray[np.float32]]:
        if nodes is None:
            rows = self.embed_all(graph, threads=threads, progress=progress, batch_size=batch_size)
            return graph.nodes, rows
        seq, _ = node_list(nodes)
        rows = self.embed(graph, seq, threads=threads, progress=progress, batch_size=batch_size)
        kind = "str" if graph.id_kind == "utf8" else "int"  # of the graph, even with no nodes
        return _core.node_ids(seq, kind, "node ids", "nodes", 0), rows

    def _compute(
        self,
        graph: Graph,
        idx: npt.NDArray[np.uint32],
        threads: int | None,
        progress: ProgressArg,
        batch_size: int | None,
        sink: Any = None,
    ) -> npt.NDArray[np.float32]:
        """The rows of ``idx`` by one kernel job (batches, Ctrl-C, progress, smoothing plan;
        ``sink``: an ``_core.EmbeddingFile`` or a callable ``sink(idx, rows)`` gets them)."""
        with Progress(len(idx), progress, "embedding") as bar:
            return _core.embed_job(  # type: ignore[return-value]
                graph._native,
                idx,
                self.config,
                threads,
                self._fitted_map(),
                batch_size,
                bar.report if progress else None,
                sink,
            )
