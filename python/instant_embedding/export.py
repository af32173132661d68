"""Getting embeddings out: streaming, atomic writers for the standard embedding formats.

Formats (from the file extension unless ``format=`` is given): ``npy`` (``.npy``: a float32
``(n, d)`` matrix, and the node of each row in ``<name>.ids.npy``, int64, or ``<name>.ids.txt``,
one UTF-8 id per line; a stale ids file of the other kind is removed); ``npz`` (``.npz``:
arrays ``ids`` and ``embeddings``); ``parquet`` (``.parquet``, ``.pq``: columns ``node`` and
``embedding``, ``fixed_size_list<float32>[d]``); ``w2v`` (``.w2v``, ``.emb``, ``.vec``,
``.txt``, optionally ``.gz``: word2vec text as gensim reads it, values with 9 significant
digits, exact float32; ids containing whitespace are refused).

Writers stream (memory bounded by one batch) and the file appears at its path only when
:meth:`EmbeddingWriter.close` completes; an error or :meth:`EmbeddingWriter.abort` leaves any
previous file untouched. The kernel writes ``npy``, ``npz`` and ``w2v`` and runs
:func:`write_embeddings` as one job; Parquet goes through pyarrow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_batch_size
from ._docs import doc
from ._progress import ProgressArg

__all__ = [
    "FORMATS",
    "EmbeddingWriter",
    "format_from_path",
    "read_embeddings",
    "save_embeddings",
    "sidecar_path",
    "write_embeddings",
]

#: Output formats.
FORMATS = ("npy", "npz", "parquet", "w2v")


def format_from_path(path: str | os.PathLike[str], default: str | None = None) -> str:
    """The output format of a file name: the one its extension implies, else ``default``
    (``ValueError`` for none, or a ``default`` that the extension contradicts)."""
    return _core.output_format(os.fspath(path), default)


def sidecar_path(path: str | os.PathLike[str], kind: str) -> str:
    """The ids file written next to an ``.npy`` embedding file (kind "int" or "str")."""
    return os.fspath(_core.sidecar_path(os.fspath(path), kind == "int"))


def embeddings_table(ids: Any, rows: npt.NDArray[np.float32]) -> Any:
    """A ``pyarrow.Table`` of ``ids`` (an int64 array or a list of str) and their rows, in the
    schema of the Parquet files: ``node`` (int64 or string) and ``embedding``
    (``fixed_size_list<float32>[dim]``, zero-copy over ``rows``)."""
    import pyarrow as pa

    from .batch import embeddings_to_arrow

    node_t, dim = pa.string() if isinstance(ids, list) else pa.int64(), rows.shape[1]
    fields = [
        pa.field("node", node_t, False),
        pa.field("embedding", pa.list_(pa.float32(), dim), False),
    ]
    schema = pa.schema(fields, metadata={b"instant_embedding.dim": str(dim).encode()})
    rows_arrow = embeddings_to_arrow(rows, fixed_size=True)
    return pa.table([pa.array(ids, node_t), rows_arrow], schema=schema)


class _Parquet:
    """Parquet through pyarrow (the kernel checks the batches): row groups of about 64 MiB,
    written to a kernel temporary file that is committed (fsync, rename) at close."""

    def __init__(self, path: str, dim: int) -> None:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(
                "writing Parquet needs pyarrow: pip install 'instant-embedding[arrow]'"
            ) from None
        self.pa, self.pq, self.dim = pa, pq, dim
        self.group_rows = max(1024, (64 << 20) // (4 * max(dim, 1)))
        self.tables: list[Any] = []  # of the next row group
        self.file = _core.AtomicFile(path)
        self.writer: Any = None

    def write(self, ids: Any, rows: np.ndarray) -> None:
        self.tables.append(embeddings_table(ids, rows))
        if sum(t.num_rows for t in self.tables) >= self.group_rows:
            self.flush()

    def flush(self) -> None:
        table = self.pa.concat_tables(self.tables)
        self.writer = self.writer or self.pq.ParquetWriter(self.file.path, table.schema)
        self.writer.write_table(table)
        self.tables = []

    def close(self, kind: str) -> None:
        if self.writer is None and not self.tables:  # no rows: an empty file with the schema
            ids: Any = [] if kind == "str" else np.zeros(0, np.int64)
            self.tables.append(embeddings_table(ids, np.zeros((0, self.dim), np.float32)))
        if self.tables:
            self.flush()
        self.writer.close()
        self.file.commit()

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - best effort on an error path
                pass
        self.file.abort()


@doc
class EmbeddingWriter:
    """Streams ``(ids, rows)`` batches into an embedding file, committed atomically.

    Parameters
    ----------
    path : str or os.PathLike, or a writable text stream
        Target file (``"-"`` or a text stream such as ``sys.stdout``: word2vec text written
        directly, without atomic rename; ``num_rows`` is then required).
    dim : int
        Embedding dimension ``d`` (columns of every ``rows`` batch).
    {format}
    num_rows : int, optional
        Total rows, if known: :meth:`close` checks the count.

    Examples
    --------
    >>> with EmbeddingWriter("emb.parquet", dim=16) as w:  # doctest: +SKIP
    ...     for ids, rows in batches:
    ...         w.write(ids, rows)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | IO[str],
        dim: int,
        *,
        format: str | None = None,  # noqa: A002
        num_rows: int | None = None,
    ) -> None:
        stream: Any = sys.stdout if path == "-" else path if hasattr(path, "write") else None
        self.path = "-" if stream is not None else os.fspath(path)  # type: ignore[arg-type]
        self.dim, self.num_rows = dim, num_rows
        writer: Any = None  # the kernel writes npy, npz and w2v files, and streams, itself
        if stream is not None:
            self.format = format or "w2v"
        else:
            self.format = _core.output_format(self.path, format)
        if stream is None and self.format == "parquet":
            if os.path.isdir(self.path):
                raise IsADirectoryError(f"{self.path}: is a directory")
            writer = _Parquet(self.path, dim)
        self._file = _core.EmbeddingFile(self.path, self.format, dim, num_rows, writer, stream)

    @property
    def rows_written(self) -> int:
        """Rows written so far."""
        return self._file.rows_written

    def write(self, ids: Any, rows: npt.ArrayLike) -> None:
        """Append embeddings: ``rows[i]`` embeds ``ids[i]``.

        Parameters
        ----------
        ids : sequence or array of int or str
            Node ids; every batch must use the same kind (int or str). Ids that are neither
            raise ``ValueError`` naming the row.
        rows : array-like, shape (len(ids), dim)
            Converted to float32.
        """
        self._file.write(ids, np.ascontiguousarray(rows, dtype=np.float32))

    def close(self) -> None:
        """Finish the file and move it into place atomically (idempotent)."""
        self._file.close()

    def abort(self) -> None:
        """Discard everything written; the target path keeps its previous content."""
        self._file.abort()

    def __enter__(self) -> EmbeddingWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


@doc
def write_embeddings(
    model: Any,
    graph: Any,
    nodes: Sequence[Any] | npt.ArrayLike | None,
    path: str | os.PathLike[str] | IO[str],
    *,
    format: str | None = None,  # noqa: A002
    batch_size: int | None = None,
    threads: int | None = None,
    progress: ProgressArg = False,
) -> int:
    """Embed nodes batch by batch and stream them into an embedding file.

    Memory stays bounded by one batch (smoothed rows: by the rows they are smoothed from), so
    all nodes of a graph whose embedding matrix exceeds RAM can be written. Results are
    identical to one :meth:`InstantEmbedding.embed` call.

    Parameters
    ----------
    model : InstantEmbedding
    {graph} {all_nodes}
    path : path, "-" or text stream
        Target (see :class:`EmbeddingWriter`); "-" writes word2vec text to stdout.
    {format}
    {batch_size} {threads} {progress}

    Returns
    -------
    int
        The number of rows written.

    Raises
    ------
    NodeNotFoundError
        An id in ``nodes`` is not in the graph.
    ValueError
        An id that the format cannot represent (whitespace in word2vec text).
    """
    # (every id is looked up before any work)
    idx = np.arange(graph.num_nodes, dtype=np.uint32) if nodes is None else graph.index(nodes)
    batch_size = check_batch_size(batch_size)
    model._fitted_map()  # an unfitted compressed model fails before a file is created
    writer = EmbeddingWriter(path, model.dim, format=format, num_rows=len(idx))
    try:
        threads = model._threads(threads)
        model._compute(graph, idx, threads, progress, batch_size, writer._file)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return len(idx)


def save_embeddings(
    path: str | os.PathLike[str] | IO[str],
    ids: Any,
    embeddings: npt.ArrayLike,
    *,
    format: str | None = None,  # noqa: A002
) -> None:
    """Write an in-memory embedding matrix with its ids (atomically)."""
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2:
        raise ValueError(f"embeddings must be 2-D, got shape {emb.shape}")
    with EmbeddingWriter(path, emb.shape[1], format=format, num_rows=emb.shape[0]) as w:
        w.write(ids, emb)


def read_embeddings(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,  # noqa: A002
) -> tuple[npt.NDArray[np.int64] | list[str] | None, npt.NDArray[np.float32]]:
    """Read an embedding file written by this package (or any file of these formats).

    Returns
    -------
    ids : int64 array, list of str, or None
        Node ids in row order (None for an ``.npy`` without a sidecar). word2vec text gives
        strings.
    embeddings : float32 array, shape (n, d)
        ``.npy`` files are memory-mapped.
    """
    p = os.fspath(path)
    fmt = format or format_from_path(p)
    if fmt == "npy":
        emb = np.load(p, mmap_mode="r", allow_pickle=False)
        ids: Any = None
        if os.path.exists(sidecar_path(p, "int")):
            ids = np.load(sidecar_path(p, "int"), allow_pickle=False)
        elif os.path.exists(sidecar_path(p, "str")):
            with open(sidecar_path(p, "str"), encoding="utf-8", newline="\n") as f:
                ids = f.read().split("\n")[:-1]
        return ids, emb
    if fmt == "npz":
        with np.load(p, allow_pickle=False) as z:
            ids = z["ids"]
            emb = z["embeddings"]
        if ids.dtype.kind == "U":
            ids = ids.tolist()
        return ids, emb
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        t = pq.read_table(p)
        node = t.column("node")
        text = pa.types.is_string(node.type) or pa.types.is_large_string(node.type)
        ids = node.to_pylist() if text else node.to_numpy()
        col = t.column("embedding").combine_chunks()
        emb = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, col.type.list_size)
        return ids, emb.astype(np.float32)
    if fmt == "w2v":
        return _core.read_word2vec(p)
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
