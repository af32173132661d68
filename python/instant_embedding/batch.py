"""The engine kit: what the distributed adapters (Spark, Dask, Ray, any other) share.

An adapter builds an :class:`EmbeddingTask` on the driver (:func:`driver_task` checks the
arguments every adapter takes), ships it (it pickles), and on each worker calls
:meth:`EmbeddingTask.embed` or :meth:`EmbeddingTask.embed_arrow` on a batch of node ids. The kit
opens the graph once per process (:func:`open_graph`), copies a URI once per machine into a
cache keyed by content (:func:`local_graph_path`), carries worker errors back to the driver
with their type (:func:`mark_error`, :func:`worker_errors`), and builds graph files from any
iterator of Arrow batches (:func:`build_graph`). Results are bit-identical to
:meth:`InstantEmbedding.embed` whatever the batch split, partitioning or thread count. Only
numpy is needed; pyarrow for Arrow batches, pandas for frames, fsspec for URIs.
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_threads
from .embedding import InstantEmbedding
from .errors import BudgetExceededError, GraphFormatError, InstantEmbeddingError, NodeNotFoundError
from .graph import Graph

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

PathLike = str | os.PathLike[str]

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_LOG_HEAD_LEN = 256  # a change log's header and its two superblock slots (docs/FORMAT.md)
_COPY_CHUNK = 8 << 20
_MAX_OPEN_GRAPHS = 8

_lock = threading.Lock()
_graphs: OrderedDict[str, tuple[tuple[int, int, int, int], Graph]] = OrderedDict()


# ------------------------------------------------------------------------ parameter docs
#
# The adapters take the same parameters; each is documented once here. A docstring line
# ``.. params:: a b`` becomes the entries ``a`` and ``b``, indented as that line.

_ENGINE_DOCS = {
    "graph_path": """graph_path : str or os.PathLike
    The graph file as the workers see it: a path every worker can read (checked on the
    driver), a URI (``s3://``, ``gs://``, ``abfs://``, ``http(s)://``, ``file://``: copied
    once per machine into a local cache keyed by content; needs fsspec and the protocol's
    package on the workers), or, with ``ship`` where the adapter has it, a driver's file.""",
    "node_col": """node_col : str, default "node"
    The column of node ids (integer or string type, no nulls); other columns are dropped
    (join the result back on ``node_col``).""",
    "model": """model : InstantEmbedding, optional
    The settings (default ``InstantEmbedding()``), shipped whole: the rows equal
    ``model.embed`` bit for bit. The model's own ``threads`` is not used (see ``threads``).""",
    "output_col": """output_col : str, default "embedding"
    The embedding column: float32 values, ``dim`` per row.""",
    "cache_dir": """cache_dir : str or os.PathLike, optional
    Worker-local copy cache for URIs (default: ``batch.default_cache_dir()``).""",
    "embed_raises": """
Raises
------
KeyError
    ``node_col`` is not a column (checked where the schema is known).
FileNotFoundError
    A local graph path the driver cannot see.
ValueError, TypeError
    Bad parameters (``output_col == node_col``, a model that is not an ``InstantEmbedding``).
NodeNotFoundError, GraphFormatError, BudgetExceededError
    Raised on the workers, naming the node and the graph.""",
    "build_params": """output_path : str or os.PathLike
    The graph file to write on the driver; it appears atomically when complete.
src_col, dst_col : str, default "src", "dst"
    Endpoint columns: integer or string node ids.
weight_col : str, optional
    Positive edge weights (the graph is then weighted).
directed : bool, default False
self_loops : {"keep", "drop"}, default "keep"
merge : {"sum", "max"}, default "sum"
    How weights of duplicate edges are merged.
memory_limit : int or str, optional
    The builder's memory budget (e.g. ``"4G"``); default as in ``convert``.
tmp_dir : str or os.PathLike, optional
    The builder's scratch directory (default: next to ``output_path``).""",
    "build_returns": """Returns
-------
Graph
    The new graph file, opened.

Raises
------
KeyError
    A column is missing.
TypeError
    An endpoint column holds neither integers nor strings.""",
}

_F = TypeVar("_F", bound=Callable[..., Any])


def engine_doc(func: _F) -> _F:
    """Replaces each ``.. params:: NAME ...`` line of ``func``'s docstring by those entries."""

    def fill(m: re.Match[str]) -> str:
        blocks = [_ENGINE_DOCS[name] for name in m.group(2).split()]
        return "\n".join(
            m.group(1) + line if line else "" for b in blocks for line in b.split("\n")
        )

    func.__doc__ = re.sub(r"(?m)^( *)\.\. params:: (.+)$", fill, func.__doc__ or "")
    return func


# -------------------------------------------------------------------------- remote copies


def is_remote(path: PathLike) -> bool:
    """Whether ``path`` is a URI (``scheme://...``, ``file://`` included) rather than a path."""
    return isinstance(path, str) and _URI_RE.match(path) is not None


def default_cache_dir() -> str:
    """Directory for local copies of remote graphs.

    ``$INSTANT_EMBEDDING_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/instant-embedding/graphs``
    (``~/.cache/instant-embedding/graphs``); where that cannot be created (a service account
    without a home directory), a per-user directory under the system temporary directory.
    """
    env = os.environ.get("INSTANT_EMBEDDING_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "instant-embedding", "graphs")
    with contextlib.suppress(OSError):
        os.makedirs(d, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return os.path.join(tempfile.gettempdir(), f"instant-embedding-{uid}", "graphs")


def _head(path: str, n: int = _core.HEADER_LEN) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def _key(*heads: bytes) -> str:
    return hashlib.sha256(b"".join(heads)).hexdigest()[:32]


def check_header(header: bytes, where: str) -> int:
    """The file length a graph file's first bytes declare; :class:`GraphFormatError` naming
    ``where`` unless the kernel accepts them (magic, version, checksum, section layout)."""
    try:
        return _core.graph_file_len(header)
    except GraphFormatError as e:
        raise GraphFormatError(f"{where}: {e}") from None


def header_digest(path: PathLike) -> str:
    """The content key of a local graph file: a digest of its header, which holds the checksum
    of every section and its own (``FileNotFoundError``; ``GraphFormatError`` if no graph)."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"graph file not found: {p}")
    header = _head(p)
    check_header(header, p)
    return _key(header)


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """An exclusive inter-process lock (POSIX ``flock``; elsewhere none: the copy is still
    atomic, concurrent processes may both download)."""
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
        os.close(fd)  # closing the last descriptor releases the lock


def _download(fs: Any, rpath: str, dst_path: str, head: bytes = b"") -> None:
    """Copies ``rpath`` to ``dst_path`` and syncs it; ``head`` replaces its first bytes (a
    change log's superblocks as first read: bytes a later commit appended lie past its end)."""
    with fs.open(rpath, "rb") as src, open(dst_path, "wb") as dst:
        shutil.copyfileobj(src, dst, _COPY_CHUNK)
        dst.seek(0)
        dst.write(head)
        dst.flush()
        os.fsync(dst.fileno())


def _cached_copy(d: str, header: bytes, log_head: bytes | None, uri: str, fill: Any) -> str:
    """The cache entry of a graph file (and of its change log at the commit ``log_head`` names):
    made once, under a file lock, by ``fill(work_path)`` in a private directory, verified as
    :meth:`Graph.validate` (every checksum, the invariants, the log replayed) and moved into
    place, the log first, so a finished name always has its log."""
    final = os.path.join(d, f"{_key(header, log_head or b'')}.graph")

    def done() -> bool:
        try:
            ok = os.path.getsize(final) == _core.graph_file_len(header) and _head(final) == header
            return ok and (log_head is None or os.path.exists(final + ".live"))
        except OSError:
            return False

    if done():
        return final
    with _file_lock(final + ".lock"):
        if done():  # copied by another process meanwhile
            return final
        work = tempfile.mkdtemp(prefix=f".{os.path.basename(final)}.tmp-{os.getpid()}-", dir=d)
        try:
            g = os.path.join(work, "g.graph")
            fill(g)
            if _head(g) != header:
                raise GraphFormatError(
                    f"copy of {uri} has a different header than the object had before the "
                    "download (it was replaced during the download; retry)"
                )
            try:
                Graph.open(g).validate()  # the mapping is dropped before the renames
            except GraphFormatError as e:
                what = uri if log_head is None else f"{uri}.live"
                raise GraphFormatError(f"copy of {what} failed verification: {e}") from None
            if log_head is not None:
                os.replace(g + ".live", final + ".live")
            os.replace(g, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def local_graph_path(path: PathLike, *, cache_dir: PathLike | None = None) -> str:
    """A local file name for ``path``, copying a remote graph into the local cache if needed.

    A plain path is returned unchanged (as ``str``). A URI (``s3://``, ``gs://``, ``abfs://``,
    ``http(s)://``, ``file://``, any fsspec protocol) is copied once per machine into
    ``cache_dir`` (default :func:`default_cache_dir`) under a name derived from the file's
    256-byte header, which holds the checksum of every section: a new object at the same URI
    gets a new entry, the same content under two URIs shares one, and a lookup costs one small
    ranged read. A graph with a change log ``URI.live`` is copied with the log at its newest
    commit (one entry per commit; the graph file hard-linked). A copy is verified (length,
    header, every checksum, the graph's invariants) before it is renamed into place, and
    processes on one machine wait on a file lock and download once.

    Raises
    ------
    ImportError
        A URI without fsspec (or the protocol's package).
    FileNotFoundError
        The remote object does not exist.
    GraphFormatError
        The remote object is not a graph file, or its copy fails verification.
    """
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
    try:
        header = bytes(fs.cat_file(rpath, start=0, end=_core.HEADER_LEN))
    except FileNotFoundError:
        raise FileNotFoundError(f"graph file not found: {uri}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"graph path is a directory: {uri}") from None
    check_header(header, uri)
    d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    os.makedirs(d, exist_ok=True)
    base = _cached_copy(d, header, None, uri, lambda g: _download(fs, rpath, g))
    last: Exception | None = None
    for _ in range(3):  # a compaction may replace the log between two reads: read again
        try:
            head = bytes(fs.cat_file(rpath + ".live", start=0, end=_LOG_HEAD_LEN))
        except FileNotFoundError:
            return base
        if len(head) < _LOG_HEAD_LEN:
            last = GraphFormatError(f"{uri}.live: change log is too short ({len(head)} bytes)")
            continue

        def fill(g: str, head: bytes = head) -> None:
            _download(fs, rpath + ".live", g + ".live", head)
            _link_or_copy(base, g)

        try:
            return _cached_copy(d, header, head, uri, fill)
        except GraphFormatError as e:
            last = e
    raise GraphFormatError(
        f"{uri}: could not copy the graph with its change log {uri}.live: {last}; copy "
        "the graph file and its log together, or compact it first"
    )


_scratch: dict[str, str] = {}


def scratch_dir(prefix: str) -> str:
    """A private directory of this process, removed when it exits (one per prefix)."""
    with _lock:
        if prefix not in _scratch:
            import atexit

            _scratch[prefix] = tempfile.mkdtemp(prefix=prefix)
            atexit.register(shutil.rmtree, _scratch[prefix], True)
        return _scratch[prefix]


def shippable_graph_file(path: str) -> str:
    """The file to ship to workers for the local graph at ``path``: ``path`` itself or, when
    its change log has commits, a copy with the log folded in (as :meth:`Graph.save` writes it,
    in a :func:`scratch_dir`). Shipping the graph file alone would drop its changes."""
    g = Graph.open(path)
    info = g.log_info()
    if not info or not info["commits"]:
        return path
    key = _key(_head(path), _head(path + ".live", _LOG_HEAD_LEN))[:16]
    target = os.path.join(scratch_dir("instant-embedding-fold-"), f"{key}-{os.path.basename(path)}")
    if not os.path.exists(target):
        g.save(target)
    return target


def shared_graph_path(path: PathLike, hint: str) -> str:
    """``path`` as workers on other machines read it: a URI unchanged, a local path made
    absolute after checking that the driver sees it (``FileNotFoundError`` ending in ``hint``)."""
    p = os.fspath(path)
    if is_remote(p):
        return p
    if not os.path.exists(p):
        raise FileNotFoundError(f"graph file not found: {p}{hint}")
    return os.path.abspath(p)


# ---------------------------------------------------------------------------------- graphs


def open_graph(path: PathLike, *, cache_dir: PathLike | None = None) -> Graph:
    """The :class:`Graph` at ``path`` (a URI through :func:`local_graph_path`), opened once per
    process and reused; thread-safe.

    The cache is keyed by the absolute path and the file's identity (device, inode, size,
    modification time): a file replaced at the same path (as :meth:`Graph.save` does) is
    reopened, and :meth:`Graph.refresh` picks up newer commits of a live graph. At most 8
    graphs stay open per process (the least recently used are dropped).

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
        while len(_graphs) > _MAX_OPEN_GRAPHS:
            _graphs.popitem(last=False)
        return g


def clear_cache(*, files: bool = False, cache_dir: PathLike | None = None) -> None:
    """Forget this process's open graphs; with ``files=True`` also delete the local copies of
    remote graphs in ``cache_dir`` (default :func:`default_cache_dir`). Deleting a copy that
    another process has mapped is safe on POSIX (the mapping keeps the data)."""
    with _lock:
        _graphs.clear()
    d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    if files and os.path.isdir(d):
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if ".graph.tmp-" in name:  # a killed copy's working directory
                shutil.rmtree(p, ignore_errors=True)
            elif name.endswith((".graph", ".graph.live", ".lock")):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)


# ---------------------------------------------------------------------------------- tasks


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


@dataclasses.dataclass(frozen=True, eq=False)
class EmbeddingTask:
    """What an engine ships to its workers to embed node ids: picklable and immutable.

    Parameters
    ----------
    graph_path : str
        The graph file as the workers see it: a local path or a URI.
    model : InstantEmbedding
        Its settings (``model.config``) decide the rows; a compressed model travels with its
        fitted linear map (an unfitted one fails here, on the driver).
    threads : int or None, default 1
        Threads per batch; None uses ``RAYON_NUM_THREADS`` or every CPU.
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
        self.model._fitted_map()
        object.__setattr__(self, "threads", check_threads(self.threads))
        object.__setattr__(self, "graph_path", os.fspath(self.graph_path))
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", os.fspath(self.cache_dir))

    def at(self, graph_path: str) -> EmbeddingTask:
        """The same task reading ``graph_path`` (a worker-local copy); errors name the original."""
        return dataclasses.replace(self, graph_path=graph_path, label=self.where)

    @property
    def where(self) -> str:
        return self.label if self.label is not None else self.graph_path

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
    """The checks every adapter's ``embed`` makes on the driver, and the task it ships.

    ``node_col`` must be one of ``columns`` (None: a schema not known yet) and differ from
    ``output_col`` (None: no such column); with ``hint`` not None, a local ``graph_path`` must
    exist (``FileNotFoundError`` ending in ``hint``) and is made absolute; ``model`` None is
    ``InstantEmbedding()``. Errors name the graph as the caller gave it.
    """
    if columns is not None and node_col not in columns:
        raise KeyError(f"node_col {node_col!r} is not a column of {list(columns)}")
    if output_col == node_col:
        raise ValueError("output_col must differ from node_col")
    where = os.fspath(graph_path)
    path = where if hint is None else shared_graph_path(where, hint)
    model = InstantEmbedding() if model is None else model
    cache = None if cache_dir is None else os.fspath(cache_dir)
    return EmbeddingTask(path, model, threads=threads, cache_dir=cache, label=where)


@engine_doc
def embed_batch(
    graph_path: PathLike,
    node_ids: Any,
    *,
    model: InstantEmbedding | None = None,
    threads: int | None = 1,
    cache_dir: PathLike | None = None,
) -> npt.NDArray[np.float32]:
    """Embed a batch of node ids of the graph file at ``graph_path``: float32 ``(len, dim)``.

    Meant to be called many times inside a worker process: the graph is opened once and
    reused (:func:`open_graph`), a URI copied once per machine (:func:`local_graph_path`). The
    result equals ``model.embed(Graph.open(path), node_ids)`` bit for bit.

    Parameters
    ----------
    graph_path : str or os.PathLike
        A local graph file, or a URI (``s3://``, ``gs://``, ``http(s)://``, ``file://``, ...).
    node_ids : numpy array, pyarrow Array/ChunkedArray, pandas Series, or sequence
        The graph's own node ids (integers or strings); duplicates allowed, nulls not.
    model : InstantEmbedding, optional
        The settings (default ``InstantEmbedding()``).
    threads : int or None, default 1
        Threads for this batch (engines run one task per core); None: ``RAYON_NUM_THREADS``
        or every CPU.
    .. params:: cache_dir

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
    """A pandas DataFrame of ``nodes`` (a Series, whose index it keeps) and their rows.

    ``layout="list"``: ``node_col`` and an object column ``output_col`` whose cells are float32
    row views of ``matrix`` (no copies); ``np.stack(df[output_col].to_numpy())`` is the matrix.
    ``layout="columns"``: ``node_col`` and float32 columns ``e0 .. e{d-1}``.
    """
    import pandas as pd

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    node_frame = nodes.to_frame(name=node_col)
    if layout == "columns":
        names = [f"e{i}" for i in range(matrix.shape[1])]
        cols = pd.DataFrame(matrix, index=nodes.index, columns=names, copy=False)
        return pd.concat([node_frame, cols], axis=1)
    # One float32 row view per cell. Not pd.ArrowDtype(list<float32>): pandas (3.1) cannot
    # read its own parquet metadata for that dtype back.
    col = np.empty(len(matrix), dtype=object)
    for i in range(len(matrix)):
        col[i] = matrix[i]
    node_frame[output_col] = pd.Series(col, index=nodes.index, dtype=object)
    return node_frame


# ---------------------------------------------------------------------------------- errors
#
# An engine that reports a worker's exception as text (Spark: a PythonException or a
# Py4JJavaError holding the worker's traceback; Ray: a RayTaskError) loses its type. Worker
# code raises mark_error(e) instead of e: the same type with a marker "[instant-embedding:<Type>]
# <message>" on one line; worker_errors() finds it on the driver and raises the original type.

_MARK_RE = re.compile(r"\[instant-embedding:(\w+)\] ([^\n]*)")
_ERROR_TYPES: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        NodeNotFoundError,
        GraphFormatError,
        BudgetExceededError,
        InstantEmbeddingError,
        FileNotFoundError,
        IsADirectoryError,
        PermissionError,
        OSError,
        ValueError,
        TypeError,
        ImportError,
    )
}


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
    """Re-raise errors that worker code raised through :func:`mark_error` as their own type.

    An exception whose text (or a chained cause's) carries the marker becomes the worker's
    exception type with the worker's message plus ``[raised in <where>]``; the engine's full
    text stays in its ``worker_traceback`` attribute. Other exceptions pass through unchanged.
    """
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
    *,
    src_col: str,
    dst_col: str,
    weight_col: str | None,
    **options: Any,
) -> Graph:
    """Every engine's ``build_graph``: checks the edge columns against the table's ``columns``
    (``KeyError`` naming them), then streams ``batches(edge_columns)`` (Arrow record batches of
    those columns, from the engine) through :func:`instant_embedding.from_arrow` into the
    out-of-core builder, which writes ``output_path`` atomically. ``options`` are
    ``from_arrow``'s; the graph is weighted exactly when ``weight_col`` is given."""
    from . import readers

    cols = [src_col, dst_col] + ([weight_col] if weight_col else [])
    for c in cols:
        if c not in columns:
            raise KeyError(f"column {c!r} is not in the edge table {list(columns)}")
    return readers.from_arrow(
        batches(cols),
        src_col,
        dst_col,
        weight_col,
        weighted=bool(weight_col),
        output=output_path,
        **options,
    )
