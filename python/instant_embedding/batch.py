"""The engine kit: what the distributed adapters (Spark, Dask, Ray, any other) share.

An adapter makes an :class:`EmbeddingTask` on the driver (:func:`driver_task`), ships it (it
pickles) and embeds each worker's batches with it; the kit opens the graph once per process,
copies a URI once per machine, carries worker errors back with their type and builds graphs
from Arrow batches (:func:`build_graph`). Only numpy is needed; pyarrow for Arrow, pandas for
frames, fsspec for URIs. See docs/DISTRIBUTED.md.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_threads
from ._docs import doc
from .embedding import InstantEmbedding
from .errors import BudgetExceededError, GraphFormatError, InstantEmbeddingError, NodeNotFoundError
from .graph import Graph, PathLike

# What users and adapter authors call (docs/DISTRIBUTED.md); the rest is the adapters' plumbing.
__all__ = [
    "EmbeddingTask",
    "clear_cache",
    "default_cache_dir",
    "embed_batch",
    "local_graph_path",
    "mark_error",
    "marked_errors",
    "open_graph",
    "worker_errors",
]

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_COPY_CHUNK = 8 << 20
_MAX_OPEN_GRAPHS = 8

_lock = threading.Lock()


# -------------------------------------------------------------------------- remote copies


def is_remote(path: PathLike) -> bool:
    """Whether ``path`` is a URI (``file://`` included) rather than a local path."""
    return isinstance(path, str) and _URI_RE.match(path) is not None


def default_cache_dir() -> str:
    """Where URIs are copied: ``$INSTANT_EMBEDDING_CACHE_DIR``, else ``$XDG_CACHE_HOME`` (or
    ``~/.cache``) ``/instant-embedding/graphs``, else (no writable home) a temporary directory."""
    return os.fspath(_core.default_cache_dir())


def header_digest(path: PathLike) -> str:
    """The content key of a graph file: a digest of its header, which holds every section's
    checksum and its own. :class:`GraphFormatError` naming ``path`` unless the kernel accepts
    the header."""
    return _core.file_key(os.fspath(path))


def local_graph_path(path: PathLike, *, cache_dir: PathLike | None = None) -> str:
    """A local file name for ``path``: a plain path unchanged, a URI (any fsspec protocol,
    ``file://`` included) copied once per machine into ``cache_dir`` (default
    :func:`default_cache_dir`), with its change log ``URI.live`` at its newest commit.

    A copy is named by the file's header, which holds every section's checksum (a lookup is one
    small ranged read), verified before it is renamed into place and downloaded once per
    machine. Raises ``ImportError`` (no fsspec), ``FileNotFoundError``, ``GraphFormatError``."""
    if not is_remote(path):
        return os.fspath(path)
    uri = str(path)
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"reading the graph from {uri!r} needs fsspec: pip install fsspec (plus the "
            "protocol's package, e.g. s3fs or gcsfs); or copy the file to a local path"
        ) from None
    fs, rpath = fsspec.core.url_to_fs(uri)

    def read(suffix: str, length: int) -> bytes | None:
        try:
            return bytes(fs.cat_file(rpath + suffix, start=0, end=length))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise IsADirectoryError(f"graph path is a directory: {uri}{suffix}") from None

    def download(suffix: str, target: str, head: bytes) -> None:
        with fs.open(rpath + suffix, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, _COPY_CHUNK)
            dst.seek(0)
            dst.write(head)
            dst.flush()
            os.fsync(dst.fileno())

    d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    return os.fspath(_core.remote_copy(d, uri, read, download))


_ship_dir: list[str] = []  # this process's, removed when it exits


def ship_file(path: str) -> tuple[str, str]:
    """``(file, key)`` to ship for the local graph at ``path``: named ``KEY.graph`` by its content
    (a hard link; else the file itself), so a graph rebuilt at the path ships under a new name,
    with a live graph's change log folded in (the graph file alone would drop its changes)."""
    with _lock:
        if not _ship_dir:
            _ship_dir.append(tempfile.mkdtemp(prefix="instant-embedding-ship-"))
            atexit.register(shutil.rmtree, _ship_dir[0], True)
    file, key = _core.ship_copy(path, _ship_dir[0])
    return os.fspath(file), key


def shipped_copy(p: str, key: str, name: str) -> str:
    """``p``, a worker's copy of the file :func:`ship_file` named ``name``, after checking that
    it is there and (``key`` not empty) holds that content: engines ship a name only once."""
    _core.check_shipped(p, key, name)
    return p


# ---------------------------------------------------------------------------------- graphs


def open_graph(path: PathLike, *, cache_dir: PathLike | None = None) -> Graph:
    """The :class:`Graph` at ``path`` (a URI: :func:`local_graph_path`), opened once per process
    (thread-safe; 8 at most) and reopened when the file's identity (device, inode, size, mtime)
    changes; :meth:`Graph.refresh` picks up a live graph's newer commits."""
    local = local_graph_path(path, cache_dir=cache_dir)
    try:
        st = os.stat(local)
    except FileNotFoundError:
        raise FileNotFoundError(f"graph file not found: {os.fspath(path)}") from None
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:  # (one open per file and identity, whatever the threads)
        g = _opened(os.path.abspath(local), ident)
        g.refresh()  # newer commits of a live graph (docs/LIVE.md): a stat and a read
        return g


@functools.lru_cache(maxsize=_MAX_OPEN_GRAPHS)
def _opened(path: str, ident: tuple[int, int, int, int]) -> Graph:
    """The graph file at ``path`` with identity ``ident`` (a new identity: a new entry)."""
    return Graph.open(path)


def clear_cache(*, files: bool = False, cache_dir: PathLike | None = None) -> None:
    """Forget this process's open graphs; with ``files=True`` also delete the copies of remote
    graphs in ``cache_dir`` (safe on POSIX while another process maps one)."""
    _opened.cache_clear()
    if files:
        _core.clear_copies(os.fspath(cache_dir) if cache_dir is not None else default_cache_dir())


# ---------------------------------------------------------------------------------- tasks


def as_node_ids(node_ids: Any) -> npt.NDArray[np.int64] | list[str]:
    """Node ids (numpy, pyarrow ``Array``/``ChunkedArray``, pandas ``Series``/``Index``, a
    sequence) as int64 or str, checked by the kernel's id rule (nulls: ``ValueError``)."""
    if isinstance(node_ids, (str, bytes)) or np.isscalar(node_ids):
        raise TypeError(f"node_ids must be a sequence or array of ids, got a scalar {node_ids!r}")
    if hasattr(node_ids, "columns"):
        raise TypeError("node ids must be one column (a Series), not a DataFrame")
    if getattr(node_ids, "hasnans", False) and node_ids.dtype.kind in "iuf":
        node_ids = node_ids.to_numpy(dtype=np.float64, na_value=np.nan)  # the kernel's null
    return _core.node_ids(node_ids, "auto", "node ids", "node", 0)


@dataclasses.dataclass(frozen=True, eq=False)
class EmbeddingTask:
    """What an engine ships to its workers (picklable, immutable): the graph as they see it, the
    model whole (a compressed one with its map; unfitted fails here, on the driver), threads
    per batch, the URI cache, how errors name the graph (``label``, default the path) and,
    for a graph file the engine ships to every worker, its name and content key (``shipped``,
    from :func:`ship_file`)."""

    graph_path: str
    model: InstantEmbedding
    threads: int | None = 1
    cache_dir: PathLike | None = None
    label: str | None = None
    shipped: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, InstantEmbedding):
            raise TypeError(f"model must be an InstantEmbedding, got {type(self.model).__name__}")
        self.model._fitted_map()
        object.__setattr__(self, "threads", check_threads(self.threads))
        object.__setattr__(self, "graph_path", os.fspath(self.graph_path))
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", os.fspath(self.cache_dir))
        if self.label is None:
            object.__setattr__(self, "label", self.graph_path)

    def at(self, graph_path: str) -> EmbeddingTask:
        """The same task reading ``graph_path`` (a worker-local copy); errors name the original."""
        return dataclasses.replace(self, graph_path=graph_path, shipped=None)

    def on_worker(self, locate: Callable[[str], str | None]) -> EmbeddingTask:
        """The task as a worker runs it: a shipped graph is read from ``locate(name)``, the
        worker's copy, once checked to hold the shipped content (None: not on a worker; the
        driver's file)."""
        where = None if self.shipped is None else locate(self.shipped[0])
        if where is None or self.shipped is None:
            return self
        return self.at(shipped_copy(where, self.shipped[1], self.shipped[0]))

    def graph(self) -> Graph:
        """The graph, opened once per process (see :func:`open_graph`)."""
        return open_graph(self.graph_path, cache_dir=self.cache_dir)

    def embed(self, node_ids: Any) -> npt.NDArray[np.float32]:
        """The rows of a batch of node ids (any container :func:`as_node_ids` takes);
        :class:`NodeNotFoundError` names the first unknown node and the graph."""
        ids = as_node_ids(node_ids)
        if len(ids) == 0:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        try:
            return self.model.embed(self.graph(), ids, threads=self.threads)
        except NodeNotFoundError as e:
            raise NodeNotFoundError(f"{e} (graph {self.label})") from None

    def embed_arrow(
        self, batch: Any, node_col: str, output_col: str = "embedding", *, fixed_size: bool = False
    ) -> Any:
        """An Arrow ``RecordBatch`` or ``Table`` of ``node_col`` in, the same kind with ``node_col``
        and ``output_col`` (zero-copy ``list<float32>`` or ``fixed_size_list``) out."""
        import pyarrow as pa

        col = batch.column(node_col)
        emb = embeddings_to_arrow(self.embed(col), fixed_size=fixed_size)
        kind = pa.Table if isinstance(batch, pa.Table) else pa.RecordBatch
        return kind.from_arrays([col, emb], names=[node_col, output_col])


def driver_task(
    graph_path: PathLike,
    model: InstantEmbedding | None,
    *,
    threads: int | None,
    cache_dir: PathLike | None,
    hint: str | None = "",
    columns: Sequence[str] | None = None,
    node_col: str = "node",
    output_col: str | None = "embedding",
) -> EmbeddingTask:
    """The checks every adapter's ``embed`` makes on the driver, and the task it ships:
    ``node_col`` in ``columns`` (unless None) and not ``output_col``; with a ``hint``, a local
    ``graph_path`` that exists (made absolute); ``model`` None is ``InstantEmbedding()``."""
    if columns is not None and node_col not in columns:
        raise KeyError(f"node_col {node_col!r} is not a column of {list(columns)}")
    if output_col == node_col:
        raise ValueError("output_col must differ from node_col")
    where = os.fspath(graph_path)
    if hint is not None and not is_remote(where) and not os.path.exists(where):
        raise FileNotFoundError(f"graph file not found: {where}{hint}")
    path = where if hint is None or is_remote(where) else os.path.abspath(where)
    model = InstantEmbedding() if model is None else model
    return EmbeddingTask(path, model, threads=threads, cache_dir=cache_dir, label=where)


@doc
def embed_batch(
    graph_path: PathLike,
    node_ids: Any,
    *,
    model: InstantEmbedding | None = None,
    threads: int | None = 1,
    cache_dir: PathLike | None = None,
) -> npt.NDArray[np.float32]:
    """The rows (float32, ``(len(node_ids), dim)``) of a batch of node ids of the graph at
    ``graph_path`` (a local file or a URI), equal to ``model.embed(Graph.open(path), node_ids)``
    bit for bit. Called many times in a worker process, it opens the graph once
    (:func:`open_graph`) and copies a URI once per machine (:func:`local_graph_path`).

    Parameters
    ----------
    {graph_path}
    node_ids : numpy array, pyarrow Array/ChunkedArray, pandas Series/Index, or sequence
        The graph's node ids (integers or strings); duplicates allowed, nulls not (``ValueError``).
    {model}
    threads : int or None, default 1
        Threads for this batch; None: ``RAYON_NUM_THREADS`` or every CPU.
    {cache_dir}

    Examples
    --------
    >>> import numpy as np, instant_embedding as ie, tempfile, os
    >>> from instant_embedding.batch import embed_batch
    >>> path = os.path.join(tempfile.mkdtemp(), "karate.graph")
    >>> ie.datasets.karate().save(path)
    >>> embed_batch(path, np.array([0, 33]), model=ie.InstantEmbedding(16)).shape
    (2, 16)
    """
    task = driver_task(graph_path, model, threads=threads, cache_dir=cache_dir, hint=None)
    return task.embed(node_ids)


def embeddings_to_arrow(matrix: npt.NDArray[np.float32], *, fixed_size: bool = False) -> Any:
    """A zero-copy pyarrow ``list<float32>`` (or ``fixed_size_list<float32>[d]``) array over
    ``matrix``: the Arrow values buffer is the matrix's memory."""
    import pyarrow as pa

    m = np.ascontiguousarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"matrix must be two-dimensional, got shape {m.shape}")
    k, d = m.shape
    values = pa.Array.from_buffers(pa.float32(), k * d, [None, pa.py_buffer(m)])
    if fixed_size:
        return pa.FixedSizeListArray.from_arrays(values, d)
    large = k * d >= 2**31
    offsets = np.arange(0, (k + 1) * d, d, dtype=np.int64 if large else np.int32)
    return (pa.LargeListArray if large else pa.ListArray).from_arrays(pa.array(offsets), values)


#: Embedding layouts of :func:`embeddings_frame`.
LAYOUTS = ("list", "columns")


def embeddings_frame(
    nodes: Any,
    matrix: npt.NDArray[np.float32],
    *,
    node_col: str = "node",
    output_col: str = "embedding",
    layout: str = "list",
) -> Any:
    """A pandas DataFrame of ``nodes`` (a Series, whose index it keeps) and their rows: with
    ``layout="list"`` an object column ``output_col`` of float32 row views of ``matrix`` (no
    copies), with ``"columns"`` float32 columns ``e0 .. e{d-1}``."""
    import pandas as pd

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    node_frame = nodes.to_frame(name=node_col)
    if layout == "columns":
        names = [f"e{i}" for i in range(matrix.shape[1])]
        cols = pd.DataFrame(matrix, index=nodes.index, columns=names, copy=False)
        return pd.concat([node_frame, cols], axis=1)
    # Row views, not pd.ArrowDtype(list<float32>): pandas 3.1 cannot read its Parquet back.
    node_frame[output_col] = pd.Series(list(matrix), index=nodes.index, dtype=object)
    return node_frame


# ---------------------------------------------------------------------------------- errors
#
# An engine that reports a worker's exception as text (Spark: a PythonException or a
# Py4JJavaError holding the worker's traceback; Ray: a RayTaskError) loses its type. Worker
# code raises mark_error(e) instead of e: the same type with a marker "[instant-embedding:<Type>]
# <message>" on one line; worker_errors() finds it on the driver and raises the original type.

_MARK_RE = re.compile(r"\[instant-embedding:(\w+)\] ([^\n]*)")
_OWN = (NodeNotFoundError, GraphFormatError, BudgetExceededError, InstantEmbeddingError)
_BUILTIN = (FileNotFoundError, IsADirectoryError, PermissionError, OSError, ValueError, TypeError)
_ERROR_TYPES: dict[str, type[Exception]] = {c.__name__: c for c in (*_OWN, *_BUILTIN, ImportError)}


def mark_error(exc: BaseException) -> BaseException:
    """``exc`` as worker code should raise it for :func:`worker_errors` to recover: the same
    type with a one-line marked message (other exception types are returned unchanged)."""
    name = type(exc).__name__
    if _ERROR_TYPES.get(name) is not type(exc):
        return exc
    return type(exc)(f"[instant-embedding:{name}] {str(exc).replace(chr(10), ' ')}")


@contextlib.contextmanager
def marked_errors() -> Iterator[None]:
    """Worker code inside it raises :func:`mark_error` of what it raises."""
    try:
        yield
    except Exception as e:
        raise mark_error(e) from None


@contextlib.contextmanager
def worker_errors(where: str = "a worker") -> Iterator[None]:
    """Errors that worker code raised through :func:`mark_error` re-raised as their own type,
    with the worker's message plus ``[raised in <where>]`` and the engine's full text as
    ``worker_traceback``; other exceptions pass through unchanged."""
    try:
        yield
    except Exception as exc:
        seen: set[int] = set()
        e: BaseException | None = exc
        while e is not None and id(e) not in seen:  # the marker may sit in a chained cause
            seen.add(id(e))
            m = _MARK_RE.search(str(e))
            if m is not None:
                cls = _ERROR_TYPES.get(m.group(1), InstantEmbeddingError)
                new = cls(f"{m.group(2).strip()} [raised in {where}]")
                new.worker_traceback = str(exc)  # type: ignore[attr-defined]
                raise new from None
            e = e.__cause__ or e.__context__
        raise


# ---------------------------------------------------------------------------------- building


def build_graph(
    columns: Sequence[str],
    batches: Callable[[list[str]], Iterable[Any]],
    output_path: PathLike,
    edge_cols: tuple[str, str, str | None],
    **options: Any,
) -> Graph:
    """Every engine's ``build_graph``: checks ``edge_cols`` (source, destination, weight or
    None) against the table's ``columns`` (``KeyError``), then streams the engine's Arrow
    batches of them, ``batches(cols)``, through :func:`instant_embedding.from_arrow` (whose
    ``options`` these are; weighted exactly when there is a weight column) into the
    out-of-core builder, which writes ``output_path`` atomically."""
    from . import readers

    cols = [c for c in edge_cols if c is not None]
    for c in cols:
        if c not in columns:
            raise KeyError(f"column {c!r} is not in the edge table {list(columns)}")
    options.update(weighted=edge_cols[2] is not None, output=output_path)
    return readers.from_arrow(batches(cols), *edge_cols, **options)
