"""Parquet and Arrow IPC files and directories, and Arrow objects in memory (pyarrow)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .._progress import ByteProgress
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import (
    CHUNK_EDGES,
    Chunk,
    Output,
    PathLike,
    build,
    build_into,
    check_weights,
    fmt_row,
    need,
    norm_ids,
    resolve_columns,
)
from ._options import ReadOptions
from ._registry import dataset_files, register


def from_arrow(
    table: Any,
    src: str | int | None = None,
    dst: str | int | None = None,
    weight: str | int | None = None,
    *,
    directed: bool = False,
    weighted: bool | None = None,
    id_kind: str = "auto",
    self_loops: str = "keep",
    merge: str = "sum",
    output: PathLike | None = None,
    memory_limit: int | str | None = None,
    tmp_dir: PathLike | None = None,
) -> Graph:
    """Build a graph from Arrow data: a Table, RecordBatch, RecordBatchReader or Dataset.

    Record batches are streamed to the out-of-core builder when ``output`` is given, so a
    ``RecordBatchReader`` or ``pyarrow.dataset.Dataset`` larger than memory works.

    Parameters
    ----------
    table : pyarrow.Table, RecordBatch, RecordBatchReader, Dataset, or iterable of batches
    src, dst : str or int, optional
        Endpoint columns; default: common names (src/dst, source/target, from/to, u/v),
        else the first two columns.
    weight : str or int, optional
        Weight column; default: a column named "weight" if present (unless
        ``weighted=False``).
    directed, weighted, id_kind, self_loops, merge, output, memory_limit, tmp_dir
        As in :func:`from_pandas` / :func:`convert`. ``weighted`` defaults to whether a
        weight column was found.

    Returns
    -------
    Graph
    """
    pa = need("pyarrow", "arrow", "from_arrow")
    opts = ReadOptions(
        directed=directed,
        id_kind=id_kind,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )
    schema, batches = _arrow_batches(pa, table)
    names = list(schema.names)
    cols = resolve_columns(names, src, dst, weight, weighted, "table")
    return build(
        _arrow_chunks(batches, cols, names, opts.id_kind, "table"),
        opts,
        output,
        directed=bool(directed),
        weighted=cols[2] is not None,
    )[0]


def _arrow_batches(pa: Any, obj: Any) -> tuple[Any, Iterable[Any]]:
    if isinstance(obj, pa.Table):
        return obj.schema, obj.to_batches(max_chunksize=CHUNK_EDGES)
    if isinstance(obj, pa.RecordBatch):
        return obj.schema, [obj]
    if isinstance(obj, pa.RecordBatchReader):
        return obj.schema, obj
    try:
        import pyarrow.dataset as ds

        if isinstance(obj, ds.Dataset):
            return obj.schema, obj.to_batches(batch_size=CHUNK_EDGES)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Iterable):
        it = iter(obj)
        first = next(it, None)
        if first is None:
            raise GraphFormatError("table: no record batches")
        if not isinstance(first, pa.RecordBatch):
            raise TypeError(f"expected pyarrow RecordBatches, got {type(first).__name__}")

        def chain() -> Iterator[Any]:
            yield first
            yield from it

        return first.schema, chain()
    raise TypeError(
        "from_arrow needs a pyarrow Table, RecordBatch, RecordBatchReader or Dataset, got "
        f"{type(obj).__name__}"
    )


def _arrow_chunks(
    batches: Iterable[Any],
    cols: tuple[int, int, int | None],
    names: Sequence[str],
    id_kind: str,
    where: str,
    progress: ByteProgress | None = None,
) -> Iterator[Chunk]:
    s_i, d_i, w_i = cols
    row0 = 0
    for batch in batches:
        names_now = list(batch.schema.names)
        if names_now != list(names):
            if not all(
                names[c] in names_now for c in (s_i, d_i) + ((w_i,) if w_i is not None else ())
            ):
                raise GraphFormatError(
                    f"{where}: a batch has columns {names_now}, expected {list(names)}"
                )
        s = _arrow_ids(_column(batch, names_now, names[s_i]), id_kind, where, names[s_i], row0)
        d = _arrow_ids(_column(batch, names_now, names[d_i]), id_kind, where, names[d_i], row0)
        w = None
        if w_i is not None:
            wcol = _column(batch, names_now, names[w_i])
            if wcol.null_count:
                i = int(np.flatnonzero(np.asarray(wcol.is_null()))[0])
                raise GraphFormatError(
                    f"{fmt_row(where, row0 + i)}: weight in column {names[w_i]!r} is missing"
                )
            try:
                wv = wcol.to_numpy(zero_copy_only=False)
            except Exception:  # noqa: BLE001 - reported as non-numeric below
                wv = np.asarray(wcol.to_pylist(), dtype=object)
            w = check_weights(wv, where, row0, names[w_i])
        yield s, d, w
        row0 += batch.num_rows
        if progress is not None:
            progress.add(batch.num_rows)


def _column(batch: Any, names_now: list[str], name: str) -> Any:
    return batch.column(names_now.index(name))


def _arrow_ids(col: Any, id_kind: str, where: str, name: str, row0: int) -> Any:
    import pyarrow as pa
    import pyarrow.types as pat

    if col.null_count:
        i = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise GraphFormatError(f"{fmt_row(where, row0 + i)}: column {name!r} is missing")
    t = col.type
    if pat.is_dictionary(t):
        col = col.dictionary_decode()
        t = col.type
    if pat.is_integer(t) or pat.is_floating(t):
        values: Any = col.to_numpy(zero_copy_only=False)
    elif pat.is_string(t) or pat.is_large_string(t) or getattr(pat, "is_string_view", bool)(t):
        if not pat.is_string(t):
            col = col.cast(pa.large_string())
        return norm_ids(col.to_pylist(), id_kind, where, name, row0)
    elif pat.is_binary(t) or pat.is_large_binary(t):
        try:
            values = [x.decode("utf-8") for x in col.to_pylist()]
        except UnicodeDecodeError:
            raise GraphFormatError(
                f"{where}: column {name!r} holds bytes that are not UTF-8"
            ) from None
        return norm_ids(values, id_kind, where, name, row0)
    else:
        raise GraphFormatError(
            f"{where}: column {name!r} has type {t}; node ids must be integers or strings"
        )
    return norm_ids(values, id_kind, where, name, row0)


def read_table(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Streams Parquet or Arrow IPC files (or directories of them) by record batch."""
    fmt = opts.format
    need("pyarrow", "arrow", f"reading {fmt} files")
    import pyarrow.dataset as ds

    files: list[str] = []
    for p in paths:
        files.extend(dataset_files(p) if os.path.isdir(p) else [p])
    if not files:
        raise GraphFormatError(f"{paths[0]}: no data files in the directory")
    where = paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"
    try:
        dataset = ds.dataset(files, format="parquet" if fmt == "parquet" else "ipc")
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for unreadable files
        raise GraphFormatError(f"{where}: cannot read as {fmt}: {e}") from None
    names = list(dataset.schema.names)
    cols = resolve_columns(names, opts.src_col, opts.dst_col, opts.weight_col, opts.weighted, where)
    used = [names[c] for c in cols if c is not None]
    try:
        total = dataset.count_rows()
    except Exception:  # noqa: BLE001
        total = None
    bar = ByteProgress(total, progress, "rows")
    try:
        batches = dataset.to_batches(columns=used, batch_size=CHUNK_EDGES)
        g, stats = build_into(
            _guard_arrow(
                _arrow_chunks(
                    batches,
                    (0, 1, 2 if cols[2] is not None else None),
                    used,
                    opts.id_kind,
                    where,
                    bar,
                ),
                where,
            ),
            opts,
            out,
            directed=bool(opts.directed),
            weighted=cols[2] is not None,
            require_edges=where,
        )
        stats["columns"] = [repr(x) for x in used]
        return g, stats
    finally:
        bar.close()


def _guard_arrow(chunks: Iterator[Chunk], where: str) -> Iterator[Chunk]:
    """Re-raises pyarrow's read errors (corrupt pages, ...) as GraphFormatError."""
    import pyarrow as pa

    while True:
        try:
            c = next(chunks)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise GraphFormatError(f"{where}: {e}") from None
        yield c


register("parquet", read_table)
register("arrow", read_table)
