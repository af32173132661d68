"""The engine-independent layer of the distributed adapters (Spark, Dask, Ray, any other).

An adapter for a new engine is one small module on top of this one: it builds an
:class:`EmbeddingTask` (the graph as the workers see it, the model, threads) on the driver,
ships it (it pickles), and on each worker calls :meth:`EmbeddingTask.embed` on a batch of node
ids, or :meth:`EmbeddingTask.embed_arrow` on an Arrow batch; :func:`worker_errors` turns errors
that the engine wraps in its own exception text back into the package's exception types. What
it guarantees:

- the graph is opened **once per process** and reused across batches (a per-process cache keyed
  by the path and the file's identity: device, inode, size and modification time, so a file
  replaced at the same path is reopened, never read stale; see :func:`open_graph`);
- a remote URI (``s3://``, ``gs://``, ``http(s)://``, ``file://``, any fsspec protocol) is
  copied **once per machine** into a local cache directory keyed by the file's content, because
  a memory map needs a local file (see :func:`local_graph_path`);
- the result is bit-identical to :meth:`InstantEmbedding.embed` for the same nodes and model,
  whatever the batch split, the partitioning or the thread count.

:func:`embed_batch` is the one-call form (a graph path and a batch of ids in, a matrix out).
Only numpy is needed; pyarrow is used when the ids come as Arrow arrays or an Arrow output is
asked for, pandas for :func:`embeddings_frame`, fsspec only for remote URIs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_threads
from .embedding import InstantEmbedding
from .errors import (
    BudgetExceededError,
    GraphFormatError,
    InstantEmbeddingError,
    NodeNotFoundError,
)
from .graph import Graph

# What users and adapter authors call (docs/DISTRIBUTED.md); the rest is what the shipped
# adapters share (header_digest, edge_columns, build_graph, embeddings_frame, ...).
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

PathLike = str | os.PathLike[str]

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# docs/FORMAT.md: the header holds every section's checksum and its own (the kernel reads it).
_HEADER_LEN = _core.HEADER_LEN
_COPY_CHUNK = 8 << 20
_MAX_OPEN_GRAPHS = 8

_lock = threading.Lock()
_graphs: OrderedDict[str, tuple[tuple[int, int, int, int], Graph]] = OrderedDict()


# ---------------------------------------------------------------------------------- paths


def is_remote(path: PathLike) -> bool:
    """Whether ``path`` is a URI (``scheme://...``) rather than a local file name.

    Every URI, ``file://`` included, goes through the local copy cache of
    :func:`local_graph_path`; pass a plain path to memory-map a local file where it is.
    """
    return isinstance(path, str) and _URI_RE.match(path) is not None


def default_cache_dir() -> str:
    """Directory for local copies of remote graphs.

    ``$INSTANT_EMBEDDING_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/instant-embedding/graphs``
    (``~/.cache/instant-embedding/graphs``). If that cannot be created (e.g. a service account
    without a home directory), a per-user directory under the system temporary directory.
    """
    env = os.environ.get("INSTANT_EMBEDDING_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "instant-embedding", "graphs")
    try:
        os.makedirs(d, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return os.path.join(tempfile.gettempdir(), f"instant-embedding-{uid}", "graphs")


def _import_fsspec(uri: str) -> Any:
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            f"reading the graph from {uri!r} needs fsspec: pip install fsspec (plus the "
            "protocol's package, e.g. s3fs or gcsfs); or copy the file to a local path"
        ) from None
    return fsspec


def check_header(header: bytes, where: str) -> int:
    """The file length that ``header`` (a graph file's first bytes) declares; raises
    :class:`GraphFormatError` naming ``where`` unless it is a valid graph header (the kernel
    checks its magic, version, checksum and section layout)."""
    try:
        return _core.graph_file_len(header)
    except GraphFormatError as e:
        raise GraphFormatError(f"{where}: {e}") from None


def header_digest(path: PathLike) -> str:
    """A content key of the local graph file at ``path``: a digest of its 256-byte header.

    The header holds the checksum of every section of the file and its own, so two files with
    the same digest have the same content. Adapters name shipped copies by it.

    Raises
    ------
    FileNotFoundError
        Naming the path.
    GraphFormatError
        Not a graph file.
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"graph file not found: {p}")
    with open(p, "rb") as f:
        header = f.read(_HEADER_LEN)
    check_header(header, p)
    return hashlib.sha256(header).hexdigest()[:32]


def _local_copy_ok(path: str, header: bytes) -> bool:
    """A finished cache entry: right length and the same header (hence the same checksums)."""
    try:
        if os.path.getsize(path) != _core.graph_file_len(header):
            return False
        with open(path, "rb") as f:
            return f.read(_HEADER_LEN) == header
    except OSError:
        return False


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """An exclusive inter-process lock (POSIX ``flock``; elsewhere no lock: the copy is still
    atomic, concurrent processes may just both download)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def local_graph_path(path: PathLike, *, cache_dir: PathLike | None = None) -> str:
    """A local file name for ``path``, copying a remote graph into the local cache if needed.

    A plain path is returned unchanged (as ``str``). A URI (``s3://``, ``gs://``, ``abfs://``,
    ``http(s)://``, ``file://``, any protocol fsspec knows) is copied once per machine into
    ``cache_dir`` under a name derived from the file's 256-byte header. The header holds the
    xxh3 checksum of every section of the file and its own checksum, so it identifies the
    content: a new object at the same URI gets a new cache entry, the same content under two
    URIs shares one. Reading it costs one small ranged read per call.

    The copy is written to a temporary file, fully verified (length, header, every section
    checksum and the graph's invariants, as :meth:`Graph.validate`) and renamed into place, so
    a cache entry is always complete and correct. Processes on one machine that need the same
    graph at once wait on a file lock and download it once.

    Parameters
    ----------
    path : str or os.PathLike
        A local path or a URI.
    cache_dir : str or os.PathLike, optional
        Where copies live; default :func:`default_cache_dir`.

    Returns
    -------
    str
        A local path to memory-map.

    Raises
    ------
    ImportError
        A URI was given and fsspec (or the protocol's package) is not installed.
    FileNotFoundError
        The remote object does not exist.
    GraphFormatError
        The remote object is not a graph file, or its copy fails verification.
    """
    if not is_remote(path):
        return os.fspath(path)
    uri = str(path)
    fsspec = _import_fsspec(uri)
    fs, rpath = fsspec.core.url_to_fs(uri)
    try:
        header = bytes(fs.cat_file(rpath, start=0, end=_HEADER_LEN))
    except FileNotFoundError:
        raise FileNotFoundError(f"graph file not found: {uri}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"graph path is a directory: {uri}") from None
    check_header(header, uri)
    d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    os.makedirs(d, exist_ok=True)
    key = hashlib.sha256(header).hexdigest()[:32]
    final = os.path.join(d, f"{key}.graph")
    if not _local_copy_ok(final, header):
        with _file_lock(final + ".lock"):
            if not _local_copy_ok(final, header):  # not copied by another process meanwhile
                tmp = _core.AtomicFile(final)
                try:
                    with fs.open(rpath, "rb") as src, open(tmp.path, "wb") as dst:
                        shutil.copyfileobj(src, dst, _COPY_CHUNK)
                    _verify_copy(tmp.path, header, uri)
                    tmp.commit()
                finally:
                    tmp.abort()
    return _with_change_log(fs, rpath, uri, header, final)


_LOG_HEAD_LEN = 256  # a change log's header and its two superblock slots (docs/FORMAT.md)


def _with_change_log(fs: Any, rpath: str, uri: str, header: bytes, base: str) -> str:
    """``base`` (the verified copy of the graph file at ``uri``), or, if the graph has a change
    log ``URI.live``, a copy of the graph with that log at its newest commit.

    The log's first 256 bytes (header and superblocks) name its newest commit, and the bytes up
    to that commit's end never change (docs/FORMAT.md, "Change log"), so the copy is keyed by
    them like the graph file by its header: one local copy per commit, shared by the processes
    of a machine. The graph file is hard-linked (copied where links are not possible)."""
    lpath = rpath + ".live"
    last: Exception | None = None
    for _ in range(3):
        try:
            head = bytes(fs.cat_file(lpath, start=0, end=_LOG_HEAD_LEN))
        except FileNotFoundError:
            return base
        if len(head) < _LOG_HEAD_LEN:
            last = GraphFormatError(f"{uri}.live: change log is too short ({len(head)} bytes)")
            continue
        key = hashlib.sha256(header + head).hexdigest()[:32]
        final = os.path.join(os.path.dirname(base), f"{key}.graph")
        if os.path.exists(final + ".live") and _local_copy_ok(final, header):
            return final
        with _file_lock(final + ".lock"):
            if os.path.exists(final + ".live") and _local_copy_ok(final, header):
                return final
            try:
                _copy_change_log(fs, lpath, uri, head, base, final)
                return final
            except GraphFormatError as e:
                # e.g. the log was replaced by a compaction between the two reads: read again
                last = e
    raise GraphFormatError(
        f"{uri}: could not copy the graph with its change log {uri}.live: {last}; copy "
        "the graph file and its log together, or compact it first"
    )


def _copy_change_log(fs: Any, lpath: str, uri: str, head: bytes, base: str, final: str) -> None:
    """Copies the log (its committed state as ``head`` names it) beside a link to ``base``,
    verifies the pair as :meth:`Graph.validate` does, and moves both into place (the log first:
    a finished graph name always has its log)."""
    work = tempfile.mkdtemp(
        prefix=f".{os.path.basename(final)}.tmp-{os.getpid()}-", dir=os.path.dirname(final)
    )
    try:
        g_tmp, log_tmp = os.path.join(work, "g.graph"), os.path.join(work, "g.graph.live")
        with fs.open(lpath, "rb") as src, open(log_tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, _COPY_CHUNK)
            # The superblocks as first read: bytes a later commit appended are past its end.
            dst.seek(0)
            dst.write(head)
            dst.flush()
            os.fsync(dst.fileno())
        try:
            os.link(base, g_tmp)
        except OSError:
            shutil.copyfile(base, g_tmp)
        try:
            Graph.open(g_tmp).validate()  # the mapping is dropped before the renames
        except GraphFormatError as e:
            raise GraphFormatError(f"copy of {uri}.live failed verification: {e}") from None
        os.replace(log_tmp, final + ".live")
        os.replace(g_tmp, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


_fold_dir: str | None = None
_fold_lock = threading.Lock()


def shippable_graph_file(path: str) -> str:
    """The file to ship to workers for the local graph at ``path``: ``path`` itself, or, when
    the graph has a change log with commits, a copy with the log folded in (as :meth:`Graph.save`
    writes it; in a private directory removed when this process exits). Shipping the graph
    file alone would give the workers the graph without its changes."""
    g = Graph.open(path)
    info = g.log_info()
    if not info or not info["commits"]:
        return path
    global _fold_dir
    with _fold_lock:
        if _fold_dir is None:
            import atexit

            _fold_dir = tempfile.mkdtemp(prefix="instant-embedding-fold-")
            atexit.register(shutil.rmtree, _fold_dir, True)
        with open(path, "rb") as f:
            header = f.read(_HEADER_LEN)
        with open(path + ".live", "rb") as f:
            head = f.read(_LOG_HEAD_LEN)
        key = hashlib.sha256(header + head).hexdigest()[:16]
        target = os.path.join(_fold_dir, f"{key}-{os.path.basename(path)}")
        if not os.path.exists(target):
            g.save(target)
    return target


def _verify_copy(tmp: str, header: bytes, uri: str) -> None:
    size = os.path.getsize(tmp)
    want = _core.graph_file_len(header)
    if size != want:
        raise GraphFormatError(
            f"copy of {uri} has {size} bytes, its header says {want} "
            "(object changed or truncated during the download; retry)"
        )
    with open(tmp, "rb") as f:
        if f.read(_HEADER_LEN) != header:
            raise GraphFormatError(
                f"copy of {uri} has a different header than the object had before the "
                "download (it was replaced during the download; retry)"
            )
    try:
        Graph.open(tmp).validate()  # the mapping is dropped before the caller renames
    except GraphFormatError as e:
        raise GraphFormatError(f"copy of {uri} failed verification: {e}") from None


# ---------------------------------------------------------------------------------- graphs


def open_graph(path: PathLike, *, cache_dir: PathLike | None = None) -> Graph:
    """The :class:`Graph` at ``path``, opened once per process and reused.

    The cache is keyed by the absolute path and the file's identity (device, inode, size,
    modification time): one ``stat`` per call detects a file replaced at the same path (e.g. by
    :meth:`Graph.save`, which renames a new file into place), which is then reopened, and
    :meth:`Graph.refresh` picks up newer commits of a live graph's change log. At most
    8 graphs stay open per process (least recently used are dropped). Thread-safe.

    Parameters
    ----------
    path : str or os.PathLike
        A local path or a URI (copied once per machine, see :func:`local_graph_path`).
    cache_dir : str or os.PathLike, optional
        Local copy cache for URIs.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
        Naming the path.
    GraphFormatError
        Not a valid graph file.
    """
    local = local_graph_path(path, cache_dir=cache_dir)
    try:
        st = os.stat(local)
    except FileNotFoundError:
        raise FileNotFoundError(f"graph file not found: {os.fspath(path)}") from None
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    key = os.path.abspath(local)
    with _lock:
        hit = _graphs.get(key)
        if hit is not None and hit[0] == ident:
            _graphs.move_to_end(key)
            hit[1].refresh()  # newer commits of a live graph (docs/LIVE.md): a stat and a read
            return hit[1]
        g = Graph.open(key)
        _graphs[key] = (ident, g)
        _graphs.move_to_end(key)
        while len(_graphs) > _MAX_OPEN_GRAPHS:
            _graphs.popitem(last=False)
        return g


def clear_cache(*, files: bool = False, cache_dir: PathLike | None = None) -> None:
    """Forget this process's open graphs; with ``files=True`` also delete the local copies of
    remote graphs in ``cache_dir`` (default :func:`default_cache_dir`).

    Deleting a copy that another process has mapped is safe on POSIX (the mapping keeps the
    data until it is closed).
    """
    with _lock:
        _graphs.clear()
    if files:
        d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
        if os.path.isdir(d):
            for name in os.listdir(d):
                if name.endswith((".graph", ".graph.live", ".lock")) or ".graph.tmp-" in name:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(d, name))
                    if ".graph.tmp-" in name:  # a killed copy's working directory
                        shutil.rmtree(os.path.join(d, name), ignore_errors=True)


# ---------------------------------------------------------------------------------- node ids


def as_node_ids(node_ids: Any) -> npt.NDArray[np.int64] | list[str]:
    """A batch of node ids (numpy array, pyarrow ``Array``/``ChunkedArray``, pandas
    ``Series``/``Index`` or sequence) as an int64 array or a list of str, checked by the
    kernel's id boundary (nulls, floats that are not integers, mixed kinds: ``ValueError``)."""
    if isinstance(node_ids, (str, bytes)) or np.isscalar(node_ids):
        raise TypeError(f"node_ids must be a sequence or array of ids, got a scalar {node_ids!r}")
    library = type(node_ids).__module__.split(".")[0]
    if library == "pyarrow":  # Array or ChunkedArray, dictionaries decoded
        node_ids = node_ids.to_numpy(zero_copy_only=False)
    elif library == "pandas":
        if not hasattr(node_ids, "hasnans"):
            raise TypeError("node ids must be one column (a Series), not a DataFrame")
        if not node_ids.hasnans:
            node_ids = node_ids.to_numpy()
        elif node_ids.dtype.kind in "iuf":  # numbers with nulls: NaN is the kernel's null
            node_ids = node_ids.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            node_ids = node_ids.to_numpy(dtype=object, na_value=None)
    return _core.node_ids(node_ids, "auto", "node ids", "node", 0)


# ---------------------------------------------------------------------------------- models


def resolve_model(model: InstantEmbedding | None, where: str) -> InstantEmbedding:
    """The model an adapter call uses: ``model``, or ``InstantEmbedding()`` when None.

    Raises
    ------
    TypeError
        ``model`` is not an :class:`InstantEmbedding`.
    """
    if model is None:
        return InstantEmbedding()
    if not isinstance(model, InstantEmbedding):
        raise TypeError(f"{where}(): model must be an InstantEmbedding, got {type(model).__name__}")
    return model


# ---------------------------------------------------------------------------------- tasks


@dataclasses.dataclass(frozen=True, eq=False)
class EmbeddingTask:
    """What an engine ships to its workers to embed node ids: picklable and immutable.

    Parameters
    ----------
    graph_path : str
        The graph file as the workers see it: a local path or a URI.
    model : InstantEmbedding
        Its settings (``model.config``) decide the embeddings; a compressed model
        (``wide_dim > 0``) travels with its fitted linear map.
    threads : int or None, default 1
        Threads per batch. 1 suits engines that run one task per core; None uses
        ``RAYON_NUM_THREADS`` or every CPU.
    cache_dir : str, optional
        Local copy cache for URIs (default :func:`default_cache_dir`).
    label : str, optional
        How errors name the graph (default ``graph_path``).

    Examples
    --------
    >>> task = EmbeddingTask("/data/g.graph", InstantEmbedding(dim=64))  # doctest: +SKIP
    >>> task.embed(np.array([3, 5]))          # on a worker  # doctest: +SKIP
    """

    graph_path: str
    model: InstantEmbedding
    threads: int | None = 1
    cache_dir: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, InstantEmbedding):
            raise TypeError(f"model must be an InstantEmbedding, got {type(self.model).__name__}")
        self.model._fitted_map()  # an unfitted compressed model fails here, on the driver
        object.__setattr__(self, "threads", check_threads(self.threads))
        object.__setattr__(self, "graph_path", os.fspath(self.graph_path))
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", os.fspath(self.cache_dir))

    def at(self, graph_path: str) -> EmbeddingTask:
        """The same task reading the graph at ``graph_path`` (e.g. a worker-local copy);
        errors still name the original graph."""
        return dataclasses.replace(self, graph_path=graph_path, label=self.where)

    @property
    def where(self) -> str:
        return self.label if self.label is not None else self.graph_path

    def graph(self) -> Graph:
        """The graph, opened once per process (see :func:`open_graph`)."""
        return open_graph(self.graph_path, cache_dir=self.cache_dir)

    def embed(self, node_ids: Any) -> npt.NDArray[np.float32]:
        """The embeddings of a batch of node ids (any container :func:`as_node_ids` takes).

        Raises
        ------
        NodeNotFoundError
            Naming the first unknown node and the graph.
        ValueError, TypeError
            Nulls, or ids of the wrong kind.
        """
        ids = as_node_ids(node_ids)
        if len(ids) == 0:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        try:
            return self.model.embed(self.graph(), ids, threads=self.threads)
        except NodeNotFoundError as e:
            raise NodeNotFoundError(f"{e} (graph {self.where})") from None

    def embed_arrow(
        self, batch: Any, node_col: str, output_col: str = "embedding", *, fixed_size: bool = False
    ) -> Any:
        """An Arrow ``RecordBatch`` or ``Table`` with ``node_col`` in, the same kind with
        ``node_col`` and ``output_col`` (``list<float32>``, or ``fixed_size_list`` with
        ``fixed_size``; zero-copy over the matrix) out, row for row."""
        import pyarrow as pa

        col = batch.column(node_col)
        emb = embeddings_to_arrow(self.embed(col), fixed_size=fixed_size)
        if isinstance(batch, pa.Table):
            return pa.Table.from_arrays([col, emb], names=[node_col, output_col])
        return pa.RecordBatch.from_arrays([col, emb], names=[node_col, output_col])


def embed_batch(
    graph_path: PathLike,
    node_ids: Any,
    *,
    model: InstantEmbedding | None = None,
    threads: int | None = 1,
    cache_dir: PathLike | None = None,
) -> npt.NDArray[np.float32]:
    """Embed a batch of node ids of the graph file at ``graph_path``.

    Meant to be called many times inside a worker process: the graph is opened on the first
    call and reused (see :func:`open_graph`); a remote URI is copied once per machine (see
    :func:`local_graph_path`). The result equals ``model.embed(Graph.open(path), node_ids)``
    bit for bit.

    Parameters
    ----------
    graph_path : str or os.PathLike
        A local graph file, or a URI (``s3://``, ``gs://``, ``http(s)://``, ``file://``, ...).
    node_ids : numpy array, pyarrow Array/ChunkedArray, pandas Series, or sequence
        The graph's own node ids (integers or strings); duplicates allowed, nulls not.
    model : InstantEmbedding, optional
        The settings (default ``InstantEmbedding()``).
    threads : int or None, default 1
        Threads for this batch. The default of 1 suits engines that already run one task per
        core; None uses ``RAYON_NUM_THREADS`` or every CPU.
    cache_dir : str or os.PathLike, optional
        Local copy cache for URIs (default :func:`default_cache_dir`).

    Returns
    -------
    ndarray of float32, shape (len(node_ids), dim)

    Raises
    ------
    NodeNotFoundError
        Naming the first unknown node and the graph.
    FileNotFoundError
        Naming the graph path.
    ValueError, TypeError
        Bad parameters, nulls, or ids of the wrong kind.

    Examples
    --------
    >>> import numpy as np, instant_embedding as ie
    >>> from instant_embedding.batch import embed_batch
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "karate.graph")
    >>> ie.datasets.karate().save(path)
    >>> embed_batch(path, np.array([0, 33]), model=ie.InstantEmbedding(16)).shape
    (2, 16)
    """
    model = resolve_model(model, "embed_batch")
    path = os.fspath(graph_path)
    cache = None if cache_dir is None else os.fspath(cache_dir)
    task = EmbeddingTask(path, model, threads=threads, cache_dir=cache)
    return task.embed(node_ids)


def embeddings_to_arrow(matrix: npt.NDArray[np.float32], *, fixed_size: bool = False) -> Any:
    """A pyarrow ``list<float32>`` (or ``fixed_size_list<float32>[d]``) array over ``matrix``.

    Zero-copy: the Arrow array's values buffer is the matrix's memory.
    """
    import pyarrow as pa

    m = np.ascontiguousarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"matrix must be two-dimensional, got shape {m.shape}")
    k, d = m.shape
    values = pa.Array.from_buffers(pa.float32(), k * d, [None, pa.py_buffer(m)])
    if fixed_size:
        return pa.FixedSizeListArray.from_arrays(values, d)
    if k * d < 2**31:
        offsets = pa.array(np.arange(0, (k + 1) * d, d, dtype=np.int32), type=pa.int32())
        return pa.ListArray.from_arrays(offsets, values)
    offsets = pa.array(np.arange(0, (k + 1) * d, d, dtype=np.int64), type=pa.int64())
    return pa.LargeListArray.from_arrays(offsets, values)


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
    """A pandas DataFrame of ``nodes`` (a Series, whose index it keeps) and their embeddings.

    ``layout="list"``: ``node_col`` and an object column ``output_col`` whose cells are float32
    row views of ``matrix`` (no copies); ``np.stack(df[output_col].to_numpy())`` is the matrix.
    ``layout="columns"``: ``node_col`` and float32 columns ``e0 .. e{d-1}``.
    """
    import pandas as pd

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    index = nodes.index
    node_frame = nodes.to_frame(name=node_col)
    if layout == "columns":
        names = [f"e{i}" for i in range(matrix.shape[1])]
        cols = pd.DataFrame(matrix, index=index, columns=names, copy=False)
        return pd.concat([node_frame, cols], axis=1)
    # One float32 row view per cell. Not pd.ArrowDtype(list<float32>): pandas (3.1) cannot
    # read its own parquet metadata for that dtype back.
    col = np.empty(len(matrix), dtype=object)
    for i in range(len(matrix)):
        col[i] = matrix[i]
    node_frame[output_col] = pd.Series(col, index=index, dtype=object)
    return node_frame


# ---------------------------------------------------------------------------------- errors
#
# An engine that reports a worker's exception as text (Spark: a PythonException or a
# Py4JJavaError holding the worker's traceback; Ray: a RayTaskError) loses its type. Worker
# code raises mark_error(e) instead of e: the same type with a marker "[instant-embedding:<Type>]
# <message>" on one line; worker_errors() finds the marker on the driver and raises the original
# type with the worker's message.

_MARK_RE = re.compile(r"\[instant-embedding:(\w+)\] ([^\n]*)")
_ERROR_TYPES: dict[str, type[Exception]] = {
    "NodeNotFoundError": NodeNotFoundError,
    "GraphFormatError": GraphFormatError,
    "BudgetExceededError": BudgetExceededError,
    "InstantEmbeddingError": InstantEmbeddingError,
    "FileNotFoundError": FileNotFoundError,
    "IsADirectoryError": IsADirectoryError,
    "PermissionError": PermissionError,
    "OSError": OSError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "ImportError": ImportError,
}


def mark_error(exc: BaseException) -> BaseException:
    """``exc`` as worker code should raise it for :func:`worker_errors` to recover: the same
    type with a one-line marked message (other exception types are returned unchanged)."""
    for name, cls in _ERROR_TYPES.items():
        if type(exc) is cls:
            msg = str(exc).replace("\n", " ")
            return cls(f"[instant-embedding:{name}] {msg}")
    return exc


@contextlib.contextmanager
def marked_errors() -> Iterator[None]:
    """Worker code inside it raises :func:`mark_error` of what it raises."""
    try:
        yield
    except Exception as e:
        raise mark_error(e) from None


def shared_graph_path(path: PathLike, hint: str) -> str:
    """``path`` as workers on other machines read it: a URI unchanged, a local path made
    absolute after checking that the driver sees it (``FileNotFoundError`` with ``hint``)."""
    p = os.fspath(path)
    if is_remote(p):
        return p
    if not os.path.exists(p):
        raise FileNotFoundError(f"graph file not found: {p}{hint}")
    return os.path.abspath(p)


def _unmark(exc: BaseException, where: str) -> BaseException | None:
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # the marker may sit in a chained cause
        seen.add(id(e))
        m = _MARK_RE.search(str(e))
        if m is not None:
            cls = _ERROR_TYPES.get(m.group(1), InstantEmbeddingError)
            new = cls(f"{m.group(2).strip()} [raised in {where}]")
            new.worker_traceback = str(exc)  # type: ignore[attr-defined]
            return new
        e = e.__cause__ or e.__context__
    return None


@contextlib.contextmanager
def worker_errors(where: str = "a worker") -> Iterator[None]:
    """Re-raise errors that worker code raised through :func:`mark_error` as their own type.

    An exception whose text (or a chained cause's) carries the marker becomes the worker's
    exception type with the worker's message plus ``[raised in <where>]``; the engine's full
    text stays available as its ``worker_traceback`` attribute. Other exceptions pass through
    unchanged. Usable as a decorator too.
    """
    try:
        yield
    except Exception as exc:
        clean = _unmark(exc, where)
        if clean is None:
            raise
        raise clean from None


# ---------------------------------------------------------------------------------- building


def edge_columns(
    columns: Sequence[str], src_col: str, dst_col: str, weight_col: str | None
) -> list[str]:
    """The edge columns a ``build_graph`` reads, checked against the table's ``columns``.

    Raises
    ------
    KeyError
        A column is missing (named with the table's columns).
    """
    cols = [src_col, dst_col] + ([weight_col] if weight_col else [])
    for c in cols:
        if c not in columns:
            raise KeyError(f"column {c!r} is not in the edge DataFrame {list(columns)}")
    return cols


def build_graph(
    batches: Iterable[Any],
    output_path: PathLike,
    *,
    src_col: str,
    dst_col: str,
    weight_col: str | None,
    **options: Any,
) -> Graph:
    """The engines' ``build_graph``: Arrow record batches of the edge columns (from
    :func:`edge_columns`), streamed through :func:`instant_embedding.from_arrow` into the
    out-of-core builder, which writes ``output_path`` atomically. ``options`` are
    ``from_arrow``'s (``directed``, ``self_loops``, ``merge``, ``memory_limit``, ``tmp_dir``);
    the graph is weighted exactly when ``weight_col`` is given."""
    from . import readers

    return readers.from_arrow(
        batches,
        src_col,
        dst_col,
        weight_col,
        weighted=weight_col is not None,
        output=output_path,
        **options,
    )
