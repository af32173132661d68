"""The :class:`Graph` facade: a memory-mapped CSR graph with the user's own node ids."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._docs import doc

__all__ = ["Graph", "NodeId"]

NodeId = int | str
PathLike = str | os.PathLike[str]


def _native_property(name: str, doc: str) -> Any:
    """A read-only property of :class:`Graph` that reads the native graph's ``name``."""
    return property(lambda self: getattr(self._g, name), doc=doc)


class Graph:
    """A graph in the instant-embedding CSR format.

    Open a graph file with :meth:`Graph.open` (memory-mapped: O(1) whatever its size; a query
    reads only the pages it needs), or build one with :meth:`Graph.from_edges` and :meth:`save`
    it. Node ids are the user's own: ``0..n-1``, any ``int64`` ids, or strings.

    A graph file can also be changed in place: ``Graph.open(path, writable=True)`` then
    :meth:`add_edges`, :meth:`remove_edges` and :meth:`compact` (a *live graph*, see
    docs/LIVE.md). Readers see a fixed committed state and pick up newer commits with
    :meth:`refresh`.

    A ``Graph`` is thread-safe and can be shared by any number of threads; on a writable graph,
    a :meth:`batch` holds the writer for its thread until it ends (another thread's changes
    wait for it, so they are never swept into, or discarded with, someone else's batch). It
    pickles by path (file-backed graphs only), so it can be sent to worker processes.
    """

    __slots__ = ("_g", "_w", "_batch_depth", "_write_lock")

    def __init__(self, core: _core.Graph) -> None:
        if not isinstance(core, _core.Graph):
            raise TypeError("use Graph.open(path) or Graph.from_edges(src, dst)")
        self._g = core
        self._write_lock = threading.RLock()  # one thread's batch (or call) at a time
        self._w: _core.LiveWriter | None = None
        self._batch_depth = 0

    # ------------------------------------------------------------------ construction
    @classmethod
    def open(
        cls,
        path: PathLike,
        *,
        prefetch: bool = False,
        writable: bool = False,
        merge: str | None = None,
    ) -> Graph:
        """Memory-map a graph file (and its change log ``PATH.live``, if any).

        Parameters
        ----------
        path : str or os.PathLike
            A file written by :meth:`save` or ``instant-embedding convert``.
        prefetch : bool, default False
            For files mostly *not* in the page cache (a large graph queried cold): each push
            asks the kernel to read the pages it needs next (``madvise(MADV_WILLNEED)``), so a
            query's reads overlap. Each page is asked for once, not once per query (again
            after a query had to read a page from disk), so warm queries on a large graph cost
            about what they cost without it; on a small graph that stays in memory the
            read-ahead push's bookkeeping makes them up to 2x slower: leave it off there.
            Results are identical either way.
        writable : bool, default False
            Open for changes (:meth:`add_edges`, :meth:`remove_edges`, :meth:`compact`): takes
            the file's writer lock (``PATH.lock``) until :meth:`close`, and creates the change
            log ``PATH.live`` if there is none. One writer at a time; any number of readers.
        merge : {"sum", "max"}, optional
            With ``writable``: how the weight of an edge added again merges with its current
            weight (as ``merge`` of :meth:`from_edges` and ``convert --merge``). Fixed when the
            change log is created (default ``"sum"``); an existing log's rule must match.

        Returns
        -------
        Graph

        Raises
        ------
        FileNotFoundError, IsADirectoryError, PermissionError
            The path cannot be opened.
        BlockingIOError
            ``writable=True`` while another writer has the graph open for writing.
        GraphFormatError
            An invalid header (magic, version, checksum, or a length that does not match: a
            truncated file). Only the header is checked (O(1)); :meth:`validate` checks all.
        """
        if not isinstance(prefetch, bool):
            raise TypeError(f"prefetch must be a bool, got {type(prefetch).__name__}")
        if not isinstance(writable, bool):
            raise TypeError(f"writable must be a bool, got {type(writable).__name__}")
        if merge is not None and not writable:
            raise ValueError("merge applies to graphs opened with writable=True")
        if not writable:
            return cls(_core.Graph.open(os.fspath(path), prefetch))
        w = _core.LiveWriter.open(os.fspath(path), merge, prefetch)
        g = cls(w.snapshot())
        g._w = w
        return g

    @classmethod
    def from_edges(
        cls,
        src: Any,
        dst: Any,
        *,
        num_nodes: int | None = None,
        directed: bool = False,
        weights: Any = None,
        nodes: Any = None,
        merge: str = "sum",
    ) -> Graph:
        """Build a graph in memory from two parallel sequences of node ids.

        Parameters
        ----------
        src, dst : array-like of int or str
            Edge endpoints. Integer ids that are already ``0..n-1`` are used as they are;
            other integers (any ``int64``) and strings are stored in the file's id table.
        num_nodes : int, optional
            Number of nodes when ids are ``0..num_nodes-1`` (isolated nodes included). Every
            id must then lie in that range.
        directed : bool, default False
            Undirected graphs store both directions of every edge (a self-loop once).
        weights : array-like of float, optional
            Positive finite edge weights; PPR then spreads residual in proportion to weight.
        nodes : array-like of int or str, optional
            Extra node ids (e.g. isolated nodes) to include.
        merge : {"sum", "max"}, default "sum"
            How weights of duplicate edges are merged (unweighted duplicates are dropped).

        Returns
        -------
        Graph
            An in-memory graph; :meth:`save` writes it to a file.

        Raises
        ------
        ValueError
            Mismatched lengths, ids out of range, invalid weights, duplicate ids.
        TypeError
            Ids that are neither int nor str, or a mix of both.
        """
        # The kernel checks and numbers the ids (implicit when they are 0..n-1, else a table).
        extra = [] if nodes is None else nodes
        return cls(_core.Graph.build(src, dst, extra, num_nodes, bool(directed), weights, merge))

    # ------------------------------------------------------------------ persistence
    def save(self, path: PathLike) -> None:
        """Write the graph to ``path`` atomically (temporary file, fsync, rename).

        The target either keeps its previous content or holds the complete new file; an
        existing file is never truncated in place, so processes that have it mapped are safe.
        """
        self._g.save(os.fspath(path))

    @doc
    def reorder(
        self,
        path: PathLike,
        *,
        method: str = "communities",
        rounds: int = _core.DEFAULT_REORDER_ROUNDS,
        threads: int | None = None,
        progress: Any = False,
        order: npt.ArrayLike | None = None,
    ) -> Graph:
        """Write a copy with the nodes renumbered for locality, and open it.

        Queries on the copy read fewer cache lines and pages (a neighbourhood's nodes get
        nearby internal indices), which matters most on large graphs and cold files.
        **Embeddings, PPR vectors and node ids do not change, bit for bit**; only the internal
        order does (``nodes``, ``degrees()`` and ``embed_all`` follow it). Implicit ids become
        int64 ids equal to the old indices. See docs/FORMAT.md (flag ``permuted``).

        Parameters
        ----------
        path : str or os.PathLike
            Output graph file, written atomically (temporary file, fsync, rename). It must not
            be this graph's own file while another process maps it (see docs/FORMAT.md).
        method : {"communities", "bfs"}, default "communities"
            ``"communities"``: label propagation (at most ``rounds`` sequential sweeps, each a
            pass over all arcs), then communities one after the other, nodes of a community by
            decreasing degree. ``"bfs"``: breadth-first order from the highest-degree node
            (one pass; weaker on small-world graphs).
        rounds : int, default 5
            Label-propagation sweeps at most (1..100); sweeps stop earlier when fewer than one
            node in 1,000 changes community.
        {threads}
        {progress}
            Counted in arcs, once for computing the order and once for writing.
        order : array of int, optional
            Your own order instead of ``method``'s (e.g. from METIS or Rabbit order): a
            permutation of ``0..num_nodes-1`` where ``order[i]`` is the *current* internal
            index of the node that becomes node ``i``. Embeddings stay bit-identical for any
            permutation.

        Returns
        -------
        Graph
            The new file, opened with this graph's ``prefetch`` setting.

        Raises
        ------
        GraphFormatError
            This graph's file is corrupted (checksums are verified before writing).
        ValueError
            Unknown ``method``, ``rounds`` out of range, or ``order`` not a permutation.
        OSError
            The output cannot be written.
        KeyboardInterrupt
            Ctrl-C; no output and no temporary file are left.
        """
        reorder_file(self, path, method, rounds, threads, progress, order)
        return Graph.open(path, prefetch=self.prefetch)

    def validate(self) -> None:
        """Check every invariant and checksum of the graph (O(n + m)); for a live graph also
        every commit of its change log, whose operations are replayed and compared with the
        rows the log stores.

        Raises
        ------
        GraphFormatError
            Describes the first problem found (checksum mismatch, unsorted or out-of-range
            neighbours, asymmetric undirected graph, invalid weights, duplicate ids, ...).
        """
        self._g.validate()

    def __reduce__(self) -> tuple[Any, ...]:
        return (Graph, (self._g,))  # the native graph pickles by path; a read-only copy

    # ------------------------------------------------------------------ live graphs
    def _writer(self) -> _core.LiveWriter:
        if self._w is None:
            raise ValueError(
                "this graph is read-only: open it with Graph.open(path, writable=True)"
            )
        return self._w

    @contextlib.contextmanager
    def _change(self) -> Iterator[_core.LiveWriter]:
        """A change, under the write lock: committed (unless inside :meth:`batch`; a no-op
        when nothing is staged) and the new state shown, unless it raises."""
        w = self._writer()
        with self._write_lock:
            yield w
            if self._batch_depth == 0:
                w.commit()
                self._g = w.snapshot()

    def add_edges(self, src: Any, dst: Any, weights: Any = None) -> None:
        """Add edges ``src[i] -> dst[i]`` (both directions on an undirected graph).

        Ids the graph does not have become new nodes (with implicit ids ``0..n-1``, an id
        ``k >= n`` adds the nodes ``n..k``). An edge that exists already is kept once; on a
        weighted graph its weight merges with the new one (the ``merge`` rule, ``"sum"`` by
        default), exactly as conversion merges duplicate edges. Self-loops are edges like
        any other.

        The change is durable when the call returns (or, inside :meth:`batch`, when the
        batch ends), and applies atomically: on an error nothing of the call is applied.

        Parameters
        ----------
        src, dst : array-like of int or str
            Edge endpoints, of the graph's id kind.
        weights : array-like of float, optional
            Positive finite weights (weighted graphs only; default 1.0 each).

        Raises
        ------
        ValueError
            Read-only graph, mismatched lengths, invalid weights (or any on an unweighted
            graph), an implicit id outside ``0..2**32-2``, a merged weight beyond float32.
        TypeError
            Ids of the other kind than the graph's.
        """
        with self._change() as w:
            w.add(src, dst, weights)

    def remove_edges(self, src: Any, dst: Any) -> int:
        """Remove edges ``src[i] -> dst[i]`` (both directions on an undirected graph).

        An edge that does not exist (or names an unknown id) is ignored, as if it were
        absent from the edge list a rebuild would read. A node whose last edge goes stays,
        isolated (:meth:`remove_nodes` removes nodes). Durable and atomic like :meth:`add_edges`.

        Returns
        -------
        int
            How many of the edges existed (and are now removed).
        """
        with self._change() as w:
            return int(w.remove(src, dst))

    def remove_nodes(self, ids: Any) -> int:
        """Remove the nodes with these ids and all their edges.

        The graph becomes what a rebuild from the remaining edges and nodes gives
        (embeddings and PPR vectors bit-identical to it), and the ids are gone from the
        graph file and its change log when the call returns: the graph is written anew
        without them (as :meth:`compact` writes it, in id order) and replaces the file and
        the log atomically. That costs a compaction whatever the number of ids: remove
        many nodes in one call. Unknown ids are ignored. Not inside :meth:`batch`.

        Returns
        -------
        int
            How many of the ids were nodes of the graph (and are now removed).
        """
        with self._change() as w:
            if self._batch_depth:
                raise ValueError("remove_nodes() inside a batch: end the batch first")
            return int(w.remove_nodes(ids))

    @contextlib.contextmanager
    def batch(self) -> Iterator[Graph]:
        """Group changes into one durable commit::

            with g.batch():
                g.add_edges(a, b)
                g.remove_edges(c, d)

        The calls inside take effect together when the block ends (one fsync for all of
        them, much faster than a commit per call); if the block raises, none of them does.
        Queries on this graph inside the block see the last commit. Batches nest (the
        outermost one commits).
        """
        with self._change() as w:  # (commits when the outermost batch ends)
            self._batch_depth += 1
            try:
                yield self
            except BaseException:
                if self._batch_depth == 1:
                    w.discard()
                raise
            finally:
                self._batch_depth -= 1

    def compact(self, *, threads: int | None = None) -> None:
        """Fold the change log into a new graph file and start an empty log.

        The new file replaces the old one atomically (temporary file, fsync, rename); the
        graph does not change (embeddings are bit-identical before and after), only its
        storage: queries read every row from the file again. Readers that have the old
        file open keep reading it until they :meth:`refresh`.
        """
        with self._change() as w:
            if self._batch_depth:
                raise ValueError("compact() inside a batch: end the batch first")
            w.compact(threads)

    def write_index(self) -> bool:
        """Write the change log's index file for the last commit now.

        The writer writes it by itself after a commit (or in :meth:`close`) once its commits
        since it last wrote it grew the log by at least its size, unless the file there
        serves the commit with a few newer levels, and readers of later commits use it with
        the levels written since; this writes it for the last commit at
        once, so that readers opened now load their lookups instead of building them from the
        log's levels (docs/LIVE.md, "Cost"). It costs a bit per node and 2 bytes per changed
        node, after reading the last index file and the levels written since (every level of
        the log's index when there is none).

        Returns
        -------
        bool
            Whether it wrote one: False when the log has fewer than 3 index levels, which
            readers need no file for (a file of an earlier commit is then removed).

        Raises
        ------
        ValueError
            Read-only graph.
        OSError
            The file cannot be written.
        """
        w = self._writer()
        with self._write_lock:
            return bool(w.write_index())

    def refresh(self) -> bool:
        """Show the newest committed state of the graph file and its change log.

        A ``Graph`` shows the state it was opened with (or last refreshed to), whatever
        writers do meanwhile, so a sequence of queries sees one consistent graph. Costs two
        ``stat`` calls and a 256-byte read when nothing changed.

        Returns
        -------
        bool
            Whether anything changed.
        """
        if self._w is not None:
            return False  # the writer's own graph always shows its last commit
        fresh = self._g.refreshed()
        if fresh is None:
            return False
        self._g = fresh
        return True

    def close(self) -> None:
        """Release the writer lock of a graph opened with ``writable=True`` (staged changes
        of an unfinished batch are dropped); the graph stays readable.

        When this writer's commits since it last wrote the change log's index file appended
        at least a quarter of its size to the log (and the file there does not already
        serve the last commit alone), it first writes that file (``PATH.live.index``: a bit per node
        and 2 bytes per changed node), which readers opened afterwards load instead of
        building their lookups from the log's levels (docs/LIVE.md, "Cost"). A failure to
        write it is not reported: readers then work without it."""
        with self._write_lock:
            if self._w is not None:
                self._w.close()
                self._w = None

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def writable(self) -> bool:
        """Whether this graph was opened with ``writable=True`` (and not closed)."""
        return self._w is not None

    def log_info(self) -> dict[str, Any] | None:
        """The change log this graph shows: ``{"commits", "adds", "removes",
        "changed_nodes", "new_nodes", "bytes", "merge"}``, or None when the file has no
        log."""
        return self._g.log_info()

    # ------------------------------------------------------------------ properties
    # (read from the native graph; ``_native_property`` keeps each to one line)
    prefetch: bool = _native_property(
        "prefetch", "Whether queries send read-ahead hints (``Graph.open(path, prefetch=True)``)."
    )
    permuted: bool = _native_property(
        "permuted",
        "Whether internal indices differ from id order (a file written by :meth:`reorder`).",
    )
    path: str | None = _native_property(
        "path", "The file this graph is mapped from (None for an in-memory graph)."
    )
    num_nodes: int = _native_property("num_nodes", "Number of nodes.")
    num_edges: int = _native_property(
        "num_edges", "Number of edges: undirected edges (a self-loop counts once) or directed arcs."
    )
    num_arcs: int = _native_property(
        "num_arcs", "Number of stored arcs (entries of the CSR ``indices`` array)."
    )
    directed: bool = _native_property(
        "directed", "Whether edges are directed (PPR follows out-edges)."
    )
    weighted: bool = _native_property("weighted", "Whether edges carry weights.")
    id_kind: str = _native_property(
        "id_kind", 'How node ids are stored: ``"implicit"`` (0..n-1), ``"int64"`` or ``"utf8"``.'
    )

    @property
    def _native(self) -> _core.Graph:
        """The native graph this object wraps: what the ``instant_embedding._core`` functions
        take (the compute layer and the engines pass it on)."""
        return self._g

    @property
    def nodes(self) -> npt.NDArray[np.int64] | list[str]:
        """All node ids in internal order (int64 array, or list of str)."""
        ids = self._g.int_ids()
        return ids if ids is not None else self._g.str_ids()

    def __len__(self) -> int:
        return self.num_nodes

    def __contains__(self, node: object) -> bool:
        return node in self._g

    def __repr__(self) -> str:
        return repr(self._g)

    # ------------------------------------------------------------------ ids and neighbourhoods
    def index(self, nodes: Iterable[NodeId] | npt.ArrayLike) -> npt.NDArray[np.uint32]:
        """Internal indices (``0..n-1``, uint32) of the given node ids.

        Raises
        ------
        NodeNotFoundError
            Naming the first id that is not in the graph (an id of the other kind than the
            graph's is not in it).
        TypeError
            Values that are neither int nor str, or a mix of both.
        ValueError
            A multi-dimensional array, or an int beyond int64.
        """
        return self._g.index(nodes)

    def ids(self, indices: npt.ArrayLike) -> npt.NDArray[np.int64] | list[str]:
        """External ids of internal indices (inverse of :meth:`index`)."""
        return self._g.ids(indices)

    def degree(self, node: NodeId) -> int:
        """Out-degree of ``node`` (number of distinct neighbours; a self-loop counts once)."""
        return int(self._g.degree(int(self.index([node])[0])))

    def neighbors(self, node: NodeId) -> npt.NDArray[np.int64] | list[str]:
        """Ids of the out-neighbours of ``node``, in internal (storage) order."""
        nb, _ = self._g.neighbors(int(self.index([node])[0]))
        return self.ids(nb)

    def edge_weights(self, node: NodeId) -> npt.NDArray[np.float32] | None:
        """Weights of ``node``'s out-edges, aligned with :meth:`neighbors` (None if unweighted)."""
        _, w = self._g.neighbors(int(self.index([node])[0]))
        return w

    def degrees(self) -> npt.NDArray[np.uint64]:
        """Out-degrees of all nodes in internal order (reads all of ``indptr``: O(n))."""
        return self._g.degrees()


def node_list(nodes: Sequence[NodeId] | npt.ArrayLike | NodeId) -> tuple[Any, bool]:
    """Normalises a node argument; returns (sequence, was_scalar)."""
    if isinstance(nodes, (str, int, np.integer)) and not isinstance(nodes, bool):
        return [nodes], True
    return nodes, False


def reorder_file(
    graph: Graph,
    path: PathLike,
    method: str,
    rounds: int,
    threads: int | None,
    progress: Any,
    order: npt.ArrayLike | None = None,
) -> dict[str, Any]:
    """:meth:`Graph.reorder` without reopening; returns the writer's statistics."""
    from ._progress import ByteProgress

    bars: list[ByteProgress] = []  # one for computing the order, one for writing

    def hook(done: int, total: int) -> None:
        if not bars or bars[-1].total != total:
            if bars:
                bars[-1].close()
            bars.append(ByteProgress(total, progress, "arcs", "writing" if bars else "ordering"))
        bars[-1].set(done)

    try:
        return _core.reorder_graph(  # type: ignore[no-any-return]
            graph._native,
            os.fspath(path),
            method=method,
            rounds=rounds,
            threads=threads,
            progress=hook if progress else None,
            order=order,
        )
    finally:
        for b in bars:
            b.close()
