"""Getting embeddings out: streaming, atomic writers for the standard embedding formats.

Formats (chosen from the file extension unless ``format=`` is given):

``npy``  (``.npy``)
    A float32 ``(n, d)`` matrix, plus a sidecar file naming the node of each row (row ``k`` of
    the matrix embeds line/entry ``k`` of the sidecar): ``<name>.ids.npy`` (int64) for integer
    ids, ``<name>.ids.txt`` (UTF-8, one id per line) for string ids. A stale sidecar of the
    other kind is removed.
``npz``  (``.npz``)
    A NumPy archive with two arrays: ``ids`` (int64, or unicode ``<U*``) and ``embeddings``
    (float32 ``(n, d)``); ``np.load(path)["embeddings"]``.
``parquet``  (``.parquet``, ``.pq``)
    Columns ``node`` (int64 or string) and ``embedding`` (``fixed_size_list<float32>[d]``).
``w2v``  (``.w2v``, ``.emb``, ``.vec``, ``.txt``, optionally ``.gz``)
    word2vec text as gensim's ``KeyedVectors.load_word2vec_format`` reads it: a first line
    ``n d``, then ``id v1 ... vd`` per node, values with 9 significant digits (exact float32).
    Ids containing whitespace cannot be represented and are rejected with a ``ValueError``.

Writers stream: memory stays bounded by one batch whatever the number of rows, and the file
appears at its path (renamed from a temporary file in the same directory) only when
:meth:`EmbeddingWriter.close` completes; an error or :meth:`EmbeddingWriter.abort` leaves any
previous file untouched.
"""

from __future__ import annotations

import gzip
import os
import shutil
import struct
import sys
import zipfile
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from ._progress import Progress, ProgressArg
from .io import atomic_tmp_path

__all__ = [
    "FORMATS",
    "EmbeddingWriter",
    "IdsFile",
    "format_from_path",
    "read_embeddings",
    "save_embeddings",
    "sidecar_path",
    "write_embeddings",
]

#: Output formats.
FORMATS = ("npy", "npz", "parquet", "w2v")

_EXT = {
    ".npy": "npy",
    ".npz": "npz",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".w2v": "w2v",
    ".emb": "w2v",
    ".vec": "w2v",
    ".txt": "w2v",
}


def format_from_path(path: str | os.PathLike[str]) -> str:
    """The output format implied by a file name (``ValueError`` if none is)."""
    p = os.fspath(path)
    if p == "-":
        return "w2v"
    root, ext = os.path.splitext(p.lower())
    if ext == ".gz":
        ext2 = os.path.splitext(root)[1]
        if _EXT.get(ext2) == "w2v":
            return "w2v"
    if ext in _EXT:
        return _EXT[ext]
    raise ValueError(
        f"{p}: cannot tell the output format from the extension; use .npy, .npz, .parquet or "
        ".w2v/.emb/.txt, or pass format= (one of npy, npz, parquet, w2v)"
    )


def sidecar_path(path: str | os.PathLike[str], kind: str) -> str:
    """The ids file written next to an ``.npy`` embedding file (kind "int" or "str")."""
    p = os.fspath(path)
    base = p[:-4] if p.lower().endswith(".npy") else p
    return base + (".ids.npy" if kind == "int" else ".ids.txt")


# ====================================================================== helpers
def _norm_ids(ids: Any) -> tuple[str, Any]:
    """('int', int64 array) or ('str', list of str)."""
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            raise ValueError(f"ids must be one-dimensional, got shape {ids.shape}")
        if ids.dtype.kind in "iu":
            return "int", ids.astype(np.int64, copy=False)
        seq = ids.tolist()
    else:
        seq = list(ids)
    if all(type(x) is str for x in seq):
        return ("str", seq) if seq else ("empty", seq)
    if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in seq):
        return "int", np.asarray(seq, dtype=np.int64)
    bad = next(x for x in seq if not isinstance(x, (str, int, np.integer)) or isinstance(x, bool))
    raise TypeError(f"ids must be all int or all str, got {bad!r} ({type(bad).__name__})")


_NPY_MAGIC = b"\x93NUMPY\x01\x00"


def _npy_header(descr: str, shape: tuple[int, ...], size: int | None = None) -> bytes:
    """A version 1.0 ``.npy`` header, padded with spaces to ``size`` bytes if given (else to
    the next multiple of 64)."""
    d = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    body = d.encode("latin1")
    if size is None:
        size = -(-(len(_NPY_MAGIC) + 2 + len(body) + 1) // 64) * 64
    pad = size - (len(_NPY_MAGIC) + 2 + len(body) + 1)
    if pad < 0:
        raise AssertionError("reserved .npy header too small")  # pragma: no cover
    body = body + b" " * pad + b"\n"
    return _NPY_MAGIC + struct.pack("<H", len(body)) + body


def _reserved_header(descr: str, ndim: int, d: int | None) -> int:
    big = 2**63 - 1
    shape: tuple[int, ...] = (big, d) if ndim == 2 and d is not None else (big,)
    return len(_npy_header(descr, shape))


def _fsync_replace(tmp: str, target: str) -> None:
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)


def _remove(path: str | None) -> None:
    if path:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


class _NpyStream:
    """A ``.npy`` file of known dtype written row block by row block (shape fixed at close)."""

    def __init__(self, path: str, descr: str, ndim: int, d: int | None, n: int | None):
        self.path = path
        self.descr = descr
        self.ndim = ndim
        self.d = d
        self.n_declared = n
        self.f: IO[bytes] | None = open(path, "wb")  # noqa: SIM115 - closed in finish/abort
        if n is not None:
            self.header_size = len(_npy_header(descr, self._shape(n)))
            self.f.write(_npy_header(descr, self._shape(n)))
        else:
            self.header_size = _reserved_header(descr, ndim, d)
            self.f.write(b"\0" * self.header_size)
        self.n = 0

    def _shape(self, n: int) -> tuple[int, ...]:
        return (n, self.d) if self.ndim == 2 else (n,)  # type: ignore[return-value]

    def write(self, block: np.ndarray) -> None:
        assert self.f is not None
        self.f.write(np.ascontiguousarray(block).tobytes())
        self.n += block.shape[0]

    def finish(self) -> None:
        assert self.f is not None
        if self.n_declared is None:
            self.f.seek(0)
            self.f.write(_npy_header(self.descr, self._shape(self.n), self.header_size))
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        self.f = None

    def abort(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None
        _remove(self.path)


def _check_id_lines(ids: list[str]) -> None:
    for x in ids:
        if "\n" in x or "\r" in x:
            raise ValueError(
                f"node id {x!r} contains a line break, which the ids file cannot "
                "represent; write .parquet instead"
            )


def _remove_stale_sidecar(path: str, kind: str) -> None:
    """Removes the ids file of the other kind, left by an earlier file at ``path``."""
    _remove(sidecar_path(path, "str" if kind == "int" else "int"))


class IdsFile:
    """The ids file beside an ``.npy`` embedding matrix of every node of ``graph``.

    Writes ``graph``'s ids in internal order (row ``k`` of the matrix embeds id ``k``) to a
    temporary file at once; :meth:`commit` moves it into place at :func:`sidecar_path` and
    removes a stale ids file of the other kind, :meth:`abort` drops it. The same files as
    :class:`EmbeddingWriter` writes for the ``npy`` format.

    Raises
    ------
    ValueError
        A string id holds a line break (the text ids file cannot represent it).
    """

    def __init__(self, path: str | os.PathLike[str], graph: Any, *, chunk: int = 1 << 20):
        self.path = os.fspath(path)
        self.kind = "str" if graph.id_kind == "utf8" else "int"
        self.tmp = atomic_tmp_path(sidecar_path(self.path, self.kind))
        n = graph.num_nodes
        try:
            if self.kind == "int":
                stream = _NpyStream(self.tmp, "<i8", 1, None, n)
                for start in range(0, n, chunk):
                    idx = np.arange(start, min(start + chunk, n), dtype=np.int64)
                    stream.write(np.asarray(graph.ids(idx), dtype="<i8"))
                stream.finish()
            else:
                with open(self.tmp, "wb") as f:
                    for start in range(0, n, chunk):
                        ids = graph.ids(np.arange(start, min(start + chunk, n), dtype=np.int64))
                        _check_id_lines(ids)
                        f.write("".join(x + "\n" for x in ids).encode("utf-8"))
        except BaseException:
            _remove(self.tmp)
            raise

    def commit(self) -> None:
        _fsync_replace(self.tmp, sidecar_path(self.path, self.kind))
        _remove_stale_sidecar(self.path, self.kind)

    def abort(self) -> None:
        _remove(self.tmp)


# ====================================================================== writer
class EmbeddingWriter:
    """Streams ``(ids, rows)`` batches into an embedding file, committed atomically.

    Parameters
    ----------
    path : str or os.PathLike, or a writable text stream
        Target file (``"-"`` or a text stream such as ``sys.stdout``: word2vec text written
        directly, without atomic rename; ``num_rows`` is then required).
    dim : int
        Embedding dimension ``d`` (columns of every ``rows`` batch).
    format : {"npy", "npz", "parquet", "w2v"}, optional
        Default: from the extension (see :func:`format_from_path`).
    num_rows : int, optional
        Total rows, if known: headers are then written exactly, and :meth:`close` checks the
        count.

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
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be an int >= 1, got {dim!r}")
        if num_rows is not None and (
            isinstance(num_rows, bool)
            or not isinstance(num_rows, (int, np.integer))
            or num_rows < 0
        ):
            raise ValueError(f"num_rows must be an int >= 0, got {num_rows!r}")
        self.dim = int(dim)
        self.num_rows = None if num_rows is None else int(num_rows)
        self.rows_written = 0
        self.id_kind: str | None = None
        self._closed = False
        self._stream: IO[str] | None = None
        if hasattr(path, "write"):
            self.path = "-"
            self._stream = path  # type: ignore[assignment]
            fmt = format or "w2v"
        else:
            self.path = os.fspath(path)  # type: ignore[arg-type]
            if self.path == "-":
                self._stream = sys.stdout
            fmt = format or format_from_path(self.path)
            if format is not None and self.path != "-":
                try:
                    implied = format_from_path(self.path)
                except ValueError:
                    implied = format  # no known extension: the format decides
                if implied != format:
                    raise ValueError(
                        f"{self.path}: format={format!r} does not match the file's extension, "
                        f"which means {implied!r}: change the extension or drop format="
                    )
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.format = fmt
        if self._stream is not None:
            if fmt != "w2v":
                raise ValueError("only the w2v text format can be written to a stream")
            if self.num_rows is None:
                raise ValueError("writing to a stream needs num_rows (for the header line)")
        else:
            if os.path.isdir(self.path):
                raise IsADirectoryError(f"{self.path}: is a directory")
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                raise FileNotFoundError(f"{self.path}: directory {parent} does not exist")
        self._tmp: list[str] = []
        self._init_backend()

    # ------------------------------------------------------------------ backends
    def _tmpfile(self, target: str) -> str:
        t = atomic_tmp_path(target)
        self._tmp.append(t)
        return t

    def _init_backend(self) -> None:
        f = self.format
        self._emb: _NpyStream | None = None
        self._ids_int: _NpyStream | None = None
        self._ids_txt: IO[bytes] | None = None
        self._pq: Any = None
        self._pq_buf: list[tuple[Any, np.ndarray]] = []
        self._pq_buf_rows = 0
        self._text: IO[str] | None = None
        self._text_raw: IO[bytes] | None = None
        self._max_id_len = 0
        if f in ("npy", "npz"):
            target = self.path if f == "npy" else self.path + ".embeddings"
            self._emb = _NpyStream(self._tmpfile(target), "<f4", 2, self.dim, self.num_rows)
        elif f == "parquet":
            try:
                import pyarrow  # noqa: F401
                import pyarrow.parquet  # noqa: F401
            except ImportError:
                raise ImportError(
                    "writing Parquet needs pyarrow: pip install 'instant-embedding[arrow]'"
                ) from None
            self._pq_rows = max(1024, (64 << 20) // (4 * self.dim))
        elif f == "w2v":
            if self._stream is not None:
                self._text = self._stream
                self._write_w2v_header(self._text, self.num_rows or 0)
            elif self.num_rows is not None:
                self._open_w2v_target()
                assert self._text is not None
                self._write_w2v_header(self._text, self.num_rows)
            else:  # body first, header prepended at close
                raw = open(self._tmpfile(self.path + ".body"), "wb")  # noqa: SIM115
                self._text_raw = raw
                self._text = _text_wrapper(raw)

    def _open_w2v_target(self) -> None:
        tmp = self._tmpfile(self.path)
        raw = open(tmp, "wb")  # noqa: SIM115 - closed in close/abort
        self._text_raw = raw
        if self.path.lower().endswith(".gz"):
            self._text = _text_wrapper(gzip.GzipFile(fileobj=raw, mode="wb", mtime=0))
        else:
            self._text = _text_wrapper(raw)

    def _write_w2v_header(self, f: IO[str], n: int) -> None:
        f.write(f"{n} {self.dim}\n")

    # ------------------------------------------------------------------ API
    def write(self, ids: Any, rows: npt.ArrayLike) -> None:
        """Append embeddings: ``rows[i]`` embeds ``ids[i]``.

        Parameters
        ----------
        ids : sequence or array of int or str
            Node ids; every batch must use the same kind (int or str).
        rows : array-like, shape (len(ids), dim)
            Converted to float32.
        """
        if self._closed:
            raise ValueError("write() on a closed EmbeddingWriter")
        kind, idv = _norm_ids(ids)
        r = np.asarray(rows, dtype=np.float32)
        if r.ndim != 2 or r.shape != (len(idv), self.dim):
            raise ValueError(
                f"rows must have shape ({len(idv)}, {self.dim}) to match ids, got {r.shape}"
            )
        if kind == "empty":
            return
        if self.id_kind is None:
            self.id_kind = kind
            self._start_ids(kind)
        elif kind != self.id_kind:
            raise TypeError(f"ids changed kind from {self.id_kind} to {kind} between batches")
        if self.num_rows is not None and self.rows_written + len(idv) > self.num_rows:
            raise ValueError(f"more rows than num_rows={self.num_rows}")
        if kind == "str":
            self._check_str_ids(idv)
        getattr(self, f"_write_{self.format}")(idv, r)
        self.rows_written += len(idv)

    def _check_str_ids(self, ids: list[str]) -> None:
        if self.format == "w2v":
            for x in ids:
                if not x or any(c.isspace() for c in x):
                    raise ValueError(
                        f"node id {x!r} contains whitespace (or is empty), which the word2vec "
                        "text format cannot represent; write .npy/.npz/.parquet instead"
                    )
        elif self.format in ("npy", "npz"):
            _check_id_lines(ids)

    def _start_ids(self, kind: str) -> None:
        if self.format not in ("npy", "npz"):
            return
        target = sidecar_path(self.path, kind) if self.format == "npy" else self.path + ".ids"
        if kind == "int":
            self._ids_int = _NpyStream(self._tmpfile(target), "<i8", 1, None, self.num_rows)
        else:
            self._ids_txt = open(self._tmpfile(target), "wb")  # noqa: SIM115

    def _write_ids(self, ids: Any) -> None:
        if isinstance(ids, np.ndarray):
            assert self._ids_int is not None
            self._ids_int.write(ids.astype("<i8", copy=False))
        else:
            assert self._ids_txt is not None
            self._ids_txt.write("".join(x + "\n" for x in ids).encode("utf-8"))
            self._max_id_len = max(self._max_id_len, max(len(x) for x in ids))

    def _write_npy(self, ids: Any, rows: np.ndarray) -> None:
        assert self._emb is not None
        self._emb.write(rows.astype("<f4", copy=False))
        self._write_ids(ids)

    _write_npz = _write_npy

    def _write_parquet(self, ids: Any, rows: np.ndarray) -> None:
        self._pq_buf.append((ids, rows))
        self._pq_buf_rows += len(rows)
        if self._pq_buf_rows >= self._pq_rows:
            self._flush_parquet()

    def _flush_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._pq_buf:
            return
        if self.id_kind == "str":
            node = pa.array([x for ids, _ in self._pq_buf for x in ids], type=pa.string())
        else:
            node = pa.array(np.concatenate([ids for ids, _ in self._pq_buf]), type=pa.int64())
        flat = np.concatenate([r for _, r in self._pq_buf]).reshape(-1)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), self.dim)
        table = pa.Table.from_arrays([node, emb], schema=self._pq_schema())
        if self._pq is None:
            self._pq_tmp = self._tmpfile(self.path)
            self._pq = pq.ParquetWriter(self._pq_tmp, table.schema)
        self._pq.write_table(table)
        self._pq_buf = []
        self._pq_buf_rows = 0

    def _pq_schema(self) -> Any:
        import pyarrow as pa

        node_t = pa.string() if self.id_kind == "str" else pa.int64()
        return pa.schema(
            [
                pa.field("node", node_t, nullable=False),
                pa.field("embedding", pa.list_(pa.float32(), self.dim), nullable=False),
            ],
            metadata={b"instant_embedding.dim": str(self.dim).encode()},
        )

    def _write_w2v(self, ids: Any, rows: np.ndarray) -> None:
        assert self._text is not None
        fmt = " ".join(["%.9g"] * self.dim)
        idl = [str(x) for x in ids.tolist()] if isinstance(ids, np.ndarray) else ids
        self._text.write("".join(f"{i} {fmt % tuple(r)}\n" for i, r in zip(idl, rows.tolist())))

    # ------------------------------------------------------------------ commit
    def close(self) -> None:
        """Finish the file and move it into place atomically (idempotent)."""
        if self._closed:
            return
        try:
            if self.num_rows is not None and self.rows_written != self.num_rows:
                raise ValueError(
                    f"{self.rows_written} rows were written but num_rows={self.num_rows}"
                )
            getattr(self, f"_close_{self.format}")()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._tmp = []

    def _empty_ids_kind(self) -> str:
        if self.id_kind is None:  # no rows: an empty int64 id list
            self.id_kind = "int"
            self._start_ids("int")
        return self.id_kind

    def _close_npy(self) -> None:
        kind = self._empty_ids_kind()
        assert self._emb is not None
        self._emb.finish()
        side_tmp = self._finish_ids()
        _fsync_replace(side_tmp, sidecar_path(self.path, kind))
        _fsync_replace(self._emb.path, self.path)
        _remove_stale_sidecar(self.path, kind)

    def _finish_ids(self) -> str:
        if self._ids_int is not None:
            self._ids_int.finish()
            return self._ids_int.path
        assert self._ids_txt is not None
        self._ids_txt.flush()
        os.fsync(self._ids_txt.fileno())
        self._ids_txt.close()
        return self._ids_txt.name  # type: ignore[no-any-return]

    def _close_npz(self) -> None:
        kind = self._empty_ids_kind()
        assert self._emb is not None
        self._emb.finish()
        ids_tmp = self._finish_ids()
        out_tmp = self._tmpfile(self.path)
        with zipfile.ZipFile(out_tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
            with z.open("ids.npy", "w", force_zip64=True) as dst:
                if kind == "int":
                    with open(ids_tmp, "rb") as src:
                        shutil.copyfileobj(src, dst, 1 << 20)
                else:
                    self._write_str_ids_npy(ids_tmp, dst)
            with (
                z.open("embeddings.npy", "w", force_zip64=True) as dst,
                open(self._emb.path, "rb") as src,
            ):
                shutil.copyfileobj(src, dst, 1 << 20)
        _fsync_replace(out_tmp, self.path)
        _remove(ids_tmp)
        _remove(self._emb.path)

    def _write_str_ids_npy(self, ids_txt: str, dst: IO[bytes]) -> None:
        width = max(self._max_id_len, 1)
        dst.write(_npy_header(f"<U{width}", (self.rows_written,)))
        with open(ids_txt, "rb") as src:
            batch: list[str] = []
            for line in src:
                batch.append(line[:-1].decode("utf-8"))
                if len(batch) >= 65536:
                    dst.write(np.array(batch, dtype=f"<U{width}").tobytes())
                    batch = []
            if batch:
                dst.write(np.array(batch, dtype=f"<U{width}").tobytes())

    def _close_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._flush_parquet()
        if self._pq is None:  # no rows: an empty file with the schema
            if self.id_kind is None:
                self.id_kind = "int"
            schema = self._pq_schema()
            self._pq_tmp = self._tmpfile(self.path)
            self._pq = pq.ParquetWriter(self._pq_tmp, schema)
            self._pq.write_table(pa.Table.from_batches([], schema=schema))
        self._pq.close()
        _fsync_replace(self._pq_tmp, self.path)

    def _close_w2v(self) -> None:
        assert self._text is not None
        if self._stream is not None:
            self._text.flush()
            return
        if self.num_rows is not None:
            self._close_text()
            _fsync_replace(self._tmp[-1], self.path)
            return
        # header was unknown: prepend it to the body
        self._close_text()
        body = self._tmp[-1]
        self._open_w2v_target()
        assert self._text is not None
        self._write_w2v_header(self._text, self.rows_written)
        self._text.flush()
        with open(body, encoding="utf-8", newline="") as src:
            shutil.copyfileobj(src, self._text, 1 << 20)
        self._close_text()
        _fsync_replace(self._tmp[-1], self.path)
        _remove(body)

    def _close_text(self) -> None:
        # closing a TextIOWrapper over a GzipFile leaves the underlying file open
        if self._text is not None:
            self._text.close()
        if self._text_raw is not None and not self._text_raw.closed:
            self._text_raw.close()

    def abort(self) -> None:
        """Discard everything written; the target path keeps its previous content."""
        self._closed = True
        for closer in (self._pq, self._ids_txt):
            if closer is not None:
                try:
                    closer.close()
                except Exception:  # noqa: BLE001 - best effort on an error path
                    pass
        if self._text is not None and self._stream is None:
            try:
                self._close_text()
            except Exception:  # noqa: BLE001
                pass
        for s in (self._emb, self._ids_int):
            if s is not None:
                s.abort()
        for t in self._tmp:
            _remove(t)
        self._tmp = []

    def __enter__(self) -> EmbeddingWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # An unclosed writer (e.g. the program stopped) must not leave temporary files.
        if not getattr(self, "_closed", True):
            try:
                self.abort()
            except Exception:  # noqa: BLE001
                pass


def _text_wrapper(raw: IO[bytes] | gzip.GzipFile) -> IO[str]:
    import io

    return io.TextIOWrapper(raw, encoding="utf-8", newline="\n")


# ====================================================================== high-level API
def _default_batch(dim: int) -> int:
    return max(256, min(65536, (32 << 20) // (4 * dim)))


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

    Memory stays bounded by one batch, so all nodes of a graph whose embedding matrix exceeds
    RAM can be written. Results are identical to one :meth:`InstantEmbedding.embed` call.

    Parameters
    ----------
    model : InstantEmbedding
    graph : Graph
    nodes : sequence of ids, or None
        The nodes to embed, in output order; None embeds every node in internal order
        (``graph.nodes``). Unknown ids raise before anything is written.
    path : path, "-" or text stream
        Target (see :class:`EmbeddingWriter`); "-" writes word2vec text to stdout.
    format : {"npy", "npz", "parquet", "w2v"}, optional
        Default: from the extension.
    batch_size : int, optional
        Nodes per batch (default: about 32 MiB of embeddings).
    threads : int, optional
        Overrides ``model.threads``.
    progress : bool or callable, default False
        True shows progress on stderr (a tqdm bar if tqdm is installed, else a status line
        with the percentage and time left); a callable receives ``(done, total)``.

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
    total = graph.num_nodes if nodes is None else None
    seq: Any = None
    if nodes is not None:
        seq = nodes if isinstance(nodes, np.ndarray) else list(nodes)  # type: ignore[arg-type]
        graph.index(seq)  # validates every id before any work
        total = len(seq)
    assert total is not None
    b = batch_size if batch_size is not None else _default_batch(model.dim)
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    # Smoothed rows of all nodes come from one embed_all (one sparse product per step) rather
    # than per batch, where each batch would embed its whole neighbourhood again.
    smoothed_all = None
    if seq is None and getattr(model, "smooth", False):
        smoothed_all = model.embed_all(graph, threads=threads, progress=progress)
    writer = EmbeddingWriter(path, model.dim, format=format, num_rows=total)
    try:
        with Progress(total, progress if smoothed_all is None else False, "embedding") as bar:
            for start in range(0, total, b):
                stop = min(start + b, total)
                if seq is None:
                    ids = graph.ids(np.arange(start, stop, dtype=np.int64))
                else:
                    ids = seq[start:stop]
                if smoothed_all is not None:
                    rows = smoothed_all[start:stop]
                else:
                    rows = model.embed(graph, ids, threads=threads)
                writer.write(ids, rows)
                bar.update(stop - start)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return total


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
    kind, idv = _norm_ids(ids)
    w = EmbeddingWriter(path, emb.shape[1], format=format, num_rows=emb.shape[0])
    with w:
        w.write(idv, emb)


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
        import pyarrow.parquet as pq

        t = pq.read_table(p)
        node = t.column("node")
        ids = node.to_pylist() if node.type in _arrow_string_types() else node.to_numpy()
        col = t.column("embedding").combine_chunks()
        d = col.type.list_size
        emb = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, d).astype(np.float32)
        return ids, emb
    if fmt == "w2v":
        opener: Any = gzip.open if p.lower().endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8") as f:
            n, d = (int(x) for x in f.readline().split())
            ids = []
            emb = np.empty((n, d), dtype=np.float32)
            for i in range(n):
                parts = f.readline().rstrip("\n").split(" ")
                if len(parts) != d + 1:
                    raise ValueError(f"{p}:{i + 2}: expected {d + 1} fields, got {len(parts)}")
                ids.append(parts[0])
                emb[i] = np.asarray(parts[1:], dtype=np.float64)
        return ids, emb
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def _arrow_string_types() -> tuple[Any, ...]:
    import pyarrow as pa

    return (pa.string(), pa.large_string())
