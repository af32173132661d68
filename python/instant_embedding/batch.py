"""Engine-agnostic batch embedding for worker processes (Spark, Dask, multiprocessing, ...).

:func:`embed_batch` takes a graph *path* (not a :class:`Graph`) and a batch of node ids (numpy,
pyarrow, pandas or a list) and returns a ``float32`` matrix. It is what the Spark and Dask
adapters run inside their tasks, and what any other engine can call:

- the graph is opened **once per process** and reused across batches (a per-process cache keyed
  by the path and the file's identity: device, inode, size and modification time, so a file
  replaced at the same path is reopened, never read stale);
- a remote URI (``s3://``, ``gs://``, ``http(s)://``, ``file://``, any fsspec protocol) is
  copied **once per machine** into a local cache directory keyed by the file's content, because
  a memory map needs a local file (see :func:`local_graph_path`);
- the result is bit-identical to :meth:`InstantEmbedding.embed` for the same nodes and
  parameters, whatever the batch split or thread count.

Only numpy is needed; pyarrow is used when the ids come as Arrow arrays or an Arrow output is
asked for, fsspec only for remote URIs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .embedding import (
    DEFAULT_ALPHA,
    DEFAULT_DIM,
    DEFAULT_EPS,
    DEFAULT_MAX_TOUCHED,
    DEFAULT_SEED,
    InstantEmbedding,
)
from .errors import GraphFormatError, NodeNotFoundError
from .graph import Graph

__all__ = [
    "as_node_ids",
    "clear_cache",
    "default_cache_dir",
    "embed_batch",
    "embeddings_to_arrow",
    "is_remote",
    "local_graph_path",
    "open_graph",
]

PathLike = str | os.PathLike[str]

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_HEADER_LEN = 256  # docs/FORMAT.md: the header holds every section's checksum and its own
_MAGIC = b"IEGRAPH\0"
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


def _header_file_len(header: bytes) -> int:
    return int.from_bytes(header[40:48], "little")


def _check_header(header: bytes, where: str) -> None:
    if len(header) < 8 or header[:8] != _MAGIC:
        raise GraphFormatError(f"{where}: not an instant-embedding graph file (bad magic)")
    if len(header) < _HEADER_LEN:
        raise GraphFormatError(
            f"{where}: file is too short for a graph header ({len(header)} bytes)"
        )


def _local_copy_ok(path: str, header: bytes) -> bool:
    """A finished cache entry: right length and the same header (hence the same checksums)."""
    try:
        if os.path.getsize(path) != _header_file_len(header):
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
    _check_header(header, uri)
    d = os.fspath(cache_dir) if cache_dir is not None else default_cache_dir()
    os.makedirs(d, exist_ok=True)
    key = hashlib.sha256(header).hexdigest()[:32]
    final = os.path.join(d, f"{key}.graph")
    if _local_copy_ok(final, header):
        return final
    with _file_lock(final + ".lock"):
        if _local_copy_ok(final, header):  # another process copied it while we waited
            return final
        tmp = f"{final}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            with fs.open(rpath, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, _COPY_CHUNK)
                dst.flush()
                os.fsync(dst.fileno())
            _verify_copy(tmp, header, uri)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
            raise
    return final


def _verify_copy(tmp: str, header: bytes, uri: str) -> None:
    size = os.path.getsize(tmp)
    want = _header_file_len(header)
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
                if name.endswith(".graph") or ".graph.tmp-" in name or name.endswith(".lock"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(d, name))


# ---------------------------------------------------------------------------------- node ids


def _is_arrow(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "pyarrow"


def _is_pandas(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "pandas"


def _null_error(pos: int) -> ValueError:
    return ValueError(f"node ids contain a null at position {pos}; drop or fill nulls first")


def _float_error(dtype: Any) -> TypeError:
    return TypeError(
        f"node ids must be integers or strings, got {dtype} (an integer column with nulls "
        "becomes float in pandas; drop the nulls and cast back to int64)"
    )


def _ids_from_arrow(arr: Any) -> npt.NDArray[np.int64] | list[str]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        raise _null_error(int(pc.index(pc.is_null(arr), True).as_py()))
    t = arr.type
    if pa.types.is_integer(t):
        out = arr.to_numpy(zero_copy_only=False)
        return _ids_from_numpy(out)  # type: ignore[return-value]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        return arr.to_pylist()  # type: ignore[no-any-return]
    raise TypeError(f"node ids must be integers or strings, got Arrow type {t}")


def _ids_from_numpy(arr: np.ndarray) -> npt.NDArray[np.int64] | list[str]:
    if arr.ndim != 1:
        raise ValueError(f"node ids must be one-dimensional, got shape {arr.shape}")
    k = arr.dtype.kind
    if k in "iu":
        if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError("node ids above the int64 range")
        return arr.astype(np.int64, copy=False)
    if k == "f":
        raise _float_error(arr.dtype)
    if k in "UT":
        return arr.tolist()  # type: ignore[no-any-return]
    if k == "O":
        seq = arr.tolist()
        for i, x in enumerate(seq):
            if x is None or (isinstance(x, float) and x != x):
                raise _null_error(i)
        return seq  # type: ignore[no-any-return]
    raise TypeError(f"node ids must be integers or strings, got dtype {arr.dtype}")


def _ids_from_pandas(s: Any) -> npt.NDArray[np.int64] | list[str]:
    import pandas as pd

    if isinstance(s, pd.DataFrame):
        raise TypeError("node ids must be one column (a Series), not a DataFrame")
    na = s.isna()
    if na.any():
        raise _null_error(int(np.flatnonzero(na.to_numpy())[0]))
    dt = s.dtype
    if pd.api.types.is_bool_dtype(dt):
        raise TypeError(f"node ids must be integers or strings, got {dt}")
    if pd.api.types.is_integer_dtype(dt):
        return _ids_from_numpy(s.to_numpy(dtype=np.int64))
    if pd.api.types.is_float_dtype(dt):
        raise _float_error(dt)
    return _ids_from_numpy(s.to_numpy(dtype=object))


def as_node_ids(node_ids: Any) -> npt.NDArray[np.int64] | list[Any]:
    """Normalise a batch of node ids: an int64 array, or a list (of str, or mixed for errors).

    Accepts numpy arrays, pyarrow ``Array``/``ChunkedArray``, pandas ``Series``/``Index`` and
    Python sequences. Nulls and float ids are rejected with a clear error.
    """
    if isinstance(node_ids, (str, bytes)) or np.isscalar(node_ids):
        raise TypeError(f"node_ids must be a sequence or array of ids, got a scalar {node_ids!r}")
    if isinstance(node_ids, np.ndarray):
        return _ids_from_numpy(node_ids)
    if _is_arrow(node_ids):
        return _ids_from_arrow(node_ids)
    if _is_pandas(node_ids):
        return _ids_from_pandas(node_ids)
    seq = list(node_ids)
    for i, x in enumerate(seq):
        if x is None:
            raise _null_error(i)
        if isinstance(x, float):
            raise _float_error("float")
    return seq


# ---------------------------------------------------------------------------------- embedding


@functools.lru_cache(maxsize=32)
def _embedder(
    dim: int, alpha: float, eps: float, seed: int, variant: str, max_touched: int
) -> InstantEmbedding:
    return InstantEmbedding(
        dim, alpha=alpha, eps=eps, seed=seed, variant=variant, max_touched=max_touched
    )


def _embed_ids(
    graph: Graph,
    ids: npt.NDArray[np.int64] | list[Any],
    model: InstantEmbedding,
    threads: int | None,
    where: str,
) -> npt.NDArray[np.float32]:
    """Embeds already-normalised ids (see :func:`as_node_ids`); adds ``where`` to errors."""
    if len(ids) == 0:
        return np.zeros((0, model.dim), dtype=np.float32)
    try:
        return model.embed(graph, ids, threads=threads)
    except NodeNotFoundError as e:
        raise NodeNotFoundError(f"{e} (graph {where})") from None


def embed_batch(
    graph_path: PathLike,
    node_ids: Any,
    *,
    dim: int = DEFAULT_DIM,
    alpha: float = DEFAULT_ALPHA,
    eps: float = DEFAULT_EPS,
    seed: int = DEFAULT_SEED,
    variant: str = "standard",
    threads: int | None = 1,
    max_touched: int = DEFAULT_MAX_TOUCHED,
    cache_dir: PathLike | None = None,
) -> npt.NDArray[np.float32]:
    """Embed a batch of node ids of the graph file at ``graph_path``.

    Meant to be called many times inside a worker process: the graph is opened on the first
    call and reused (see :func:`open_graph`); a remote URI is copied once per machine (see
    :func:`local_graph_path`). The result equals
    ``InstantEmbedding(dim, alpha=..., ...).embed(Graph.open(path), node_ids)`` bit for bit.

    Parameters
    ----------
    graph_path : str or os.PathLike
        A local graph file, or a URI (``s3://``, ``gs://``, ``http(s)://``, ``file://``, ...).
    node_ids : numpy array, pyarrow Array/ChunkedArray, pandas Series, or sequence
        The graph's own node ids (integers or strings); duplicates allowed, nulls not.
    dim, alpha, eps, seed, variant, max_touched
        As in :class:`InstantEmbedding`.
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
    >>> embed_batch(path, np.array([0, 33]), dim=16).shape
    (2, 16)
    """
    model = _embedder(dim, alpha, eps, seed, variant, max_touched)
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1
    ):
        raise ValueError(f"threads must be an int >= 1 or None, got {threads!r}")
    ids = as_node_ids(node_ids)
    graph = open_graph(graph_path, cache_dir=cache_dir)
    return _embed_ids(graph, ids, model, threads, os.fspath(graph_path))


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


# ---------------------------------------------------------------------------------- building


def require_graph_builder(what: str) -> None:
    """Raise unless the extension has the out-of-core builder (``_core.GraphBuilder``).

    The distributed ``build_graph`` functions promise bounded driver memory whatever the
    number of edges; without the builder they would have to hold every edge in memory.
    """
    from . import _core

    if getattr(_core, "GraphBuilder", None) is None:
        raise ImportError(
            f"{what} needs the out-of-core builder instant_embedding._core.GraphBuilder, which "
            "this build of the extension lacks (convert smaller edge tables with "
            "instant_embedding.convert instead)"
        )
