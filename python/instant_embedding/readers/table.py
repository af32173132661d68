"""Parquet and Arrow IPC files and directories, and Arrow objects in memory (pyarrow)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .. import _core
from .._core import ReadOptions
from .._progress import ByteProgress
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import CHUNK_EDGES, Chunk, Output, PathLike, build, build_into, need
from ._convert import dataset_files, register


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
    ``RecordBatchReader`` or ``pyarrow.dataset.Dataset`` larger than memory works. The
    parameters are those of :func:`from_pandas`.

    Parameters
    ----------
    table : pyarrow.Table, RecordBatch, RecordBatchReader, Dataset, or iterable of batches
    """
    pa = need("pyarrow", "arrow", "from_arrow")
    opts = ReadOptions(
        src_col=src,
        dst_col=dst,
        weight_col=weight,
        weighted=weighted,
        id_kind=id_kind,
        self_loops=self_loops,
        merge=merge,
        memory_limit=memory_limit,
        tmp_dir=tmp_dir,
    )
    schema, batches = _arrow_batches(pa, table)
    names = list(schema.names)
    cols = _core.table_columns(names, opts, "table")
    chunks = _arrow_chunks(batches, cols, names, opts.id_kind, "table")
    return build(chunks, opts, output, directed=directed, weighted=cols[2] is not None)[0]


def _arrow_batches(pa: Any, obj: Any) -> tuple[Any, Iterable[Any]]:
    import pyarrow.dataset as ds

    if isinstance(obj, pa.Table):
        return obj.schema, obj.to_batches(max_chunksize=CHUNK_EDGES)
    if isinstance(obj, ds.Dataset):
        return obj.schema, obj.to_batches(batch_size=CHUNK_EDGES)
    if isinstance(obj, pa.RecordBatchReader):
        return obj.schema, obj
    if not isinstance(obj, (pa.RecordBatch, Iterable)):
        raise TypeError(
            "from_arrow needs a pyarrow Table, RecordBatch, RecordBatchReader or Dataset, got "
            f"{type(obj).__name__}"
        )
    it = iter([obj] if isinstance(obj, pa.RecordBatch) else obj)
    first = next(it, None)
    if first is None:
        raise GraphFormatError("table: no record batches")
    if not isinstance(first, pa.RecordBatch):
        raise TypeError(f"expected pyarrow RecordBatches, got {type(first).__name__}")
    return first.schema, itertools.chain([first], it)


def _arrow_chunks(
    batches: Iterable[Any],
    cols: tuple[int, int, int | None],
    names: Sequence[str],
    id_kind: str,
    where: str,
    progress: ByteProgress | None = None,
) -> Iterator[Chunk]:
    import pyarrow as pa

    used = [names[c] for c in cols if c is not None]
    row0 = 0
    try:  # pyarrow's read errors (corrupt pages, ...) are format errors
        for batch in batches:
            have = list(batch.schema.names)
            if have != list(names) and not all(n in have for n in used):
                raise GraphFormatError(
                    f"{where}: a batch has columns {have}, expected {list(names)}"
                )
            col = [batch.column(have.index(n)) for n in used]
            s, d = (_core.node_ids(c, id_kind, where, n, row0) for c, n in zip(col[:2], used))
            w = None if cols[2] is None else _core.edge_weights(col[2], where, row0, used[2])
            yield s, d, w
            row0 += batch.num_rows
            if progress is not None:
                progress.add(batch.num_rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise GraphFormatError(f"{where}: {e}") from None


def read_table(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Streams Parquet or Arrow IPC files (or directories of them) by record batch."""
    need("pyarrow", "arrow", f"reading {opts.format} files")
    import pyarrow.dataset as ds
    import pyarrow.ipc as ipc

    files = [f for p in paths for f in (dataset_files(p) if os.path.isdir(p) else [p])]
    if not files:
        raise GraphFormatError(f"{paths[0]}: no data files in the directory")
    where = paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} more)"
    try:
        dataset = ds.dataset(files, format="parquet" if opts.format == "parquet" else "ipc")
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for unreadable files
        try:  # an Arrow IPC stream has no footer to stream batches from: loaded whole
            if opts.format != "arrow":
                raise
            dataset = ds.dataset([ipc.open_stream(f).read_all() for f in files])
        except Exception:  # noqa: BLE001
            raise GraphFormatError(f"{where}: cannot read as {opts.format}: {e}") from None
    names = list(dataset.schema.names)
    cols = _core.table_columns(names, opts, where)
    used = [names[c] for c in cols if c is not None]
    try:
        total = dataset.count_rows()
    except Exception:  # noqa: BLE001
        total = None
    bar = ByteProgress(total, progress, "rows")
    try:
        batches = dataset.to_batches(columns=used, batch_size=CHUNK_EDGES)
        positions = (0, 1, 2 if cols[2] is not None else None)
        chunks = _arrow_chunks(batches, positions, used, opts.id_kind, where, bar)
        how = {"directed": bool(opts.directed), "weighted": cols[2] is not None}
        g, stats = build_into(chunks, opts, out, require_edges=where, **how)
        stats["columns"] = [repr(x) for x in used]
        return g, stats
    finally:
        bar.close()


register("parquet", read_table)
register("arrow", read_table)
