"""MATLAB ``.mat`` adjacency matrices (scipy.io; v7.3 HDF5 files through h5py)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import GraphFormatError
from ..graph import Graph
from ._build import Output, PathLike, build_into, need
from ._options import ReadOptions
from ._registry import register
from .memory import scipy_edges


def read_matrix_file(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Loads the matrix whole (scipy), then builds from its entries."""
    path = paths[0]
    matrix = read_mat(path, opts.var)
    src, dst, w, n, d_out, w_out = scipy_edges(
        matrix, opts.directed, opts.weighted, opts.self_loops, path
    )
    loops = int(matrix.diagonal().astype(bool).sum()) if opts.self_loops == "drop" else 0
    g, stats = build_into(
        iter([(src, dst, w)]),
        opts.replace(self_loops="keep"),
        out,
        directed=d_out,
        weighted=w_out,
        num_nodes=n,
    )
    stats["self_loops_dropped"] = loops
    return g, stats


def read_mat(path: PathLike, var: str | None = None) -> Any:
    """Read the adjacency matrix stored in a MATLAB ``.mat`` file as a scipy.sparse matrix.

    Parameters
    ----------
    path : path
        A MATLAB v4/v5/v7 file (read with ``scipy.io.loadmat``) or a v7.3 (HDF5) file (needs
        ``h5py``).
    var : str, optional
        The variable name. Default: the only sparse matrix in the file; if there are several,
        ``network`` when present (BlogCatalog's convention).

    Returns
    -------
    scipy.sparse.csr_matrix
    """
    p = os.fspath(path)
    sio = need("scipy.io", "scipy", "reading .mat files")
    sp = need("scipy.sparse", "scipy", "reading .mat files")
    try:
        info = sio.whosmat(p)
    except NotImplementedError:
        return _read_mat_hdf5(p, var)
    except Exception as e:  # scipy raises ValueError/TypeError/OSError on garbage
        if _is_hdf5(p):
            return _read_mat_hdf5(p, var)
        raise GraphFormatError(f"{p}: not a readable MATLAB file: {e}") from None
    name = _pick_mat_var(p, [(n, cls, shape) for n, shape, cls in info], var)
    try:
        data = sio.loadmat(p, variable_names=[name])
    except Exception as e:  # noqa: BLE001
        raise GraphFormatError(f"{p}: cannot read variable {name!r}: {e}") from None
    m = data[name]
    if sp.issparse(m):
        return sp.csr_matrix(m)
    m = np.asarray(m)
    if m.ndim != 2 or m.dtype.kind not in "biuf":
        raise GraphFormatError(
            f"{p}: variable {name!r} is a {m.dtype} array of shape {m.shape}, not an adjacency "
            "matrix"
        )
    return sp.csr_matrix(m)


def _pick_mat_var(
    path: str, entries: list[tuple[str, str, tuple[int, ...]]], var: str | None
) -> str:
    listing = ", ".join(f"{n} ({c} {'x'.join(map(str, s))})" for n, c, s in entries) or "none"
    if var is not None:
        if var not in [e[0] for e in entries]:
            raise GraphFormatError(f"{path}: no variable {var!r}; variables: {listing}")
        return var
    sparse = [
        n
        for n, cls, shape in entries
        if cls == "sparse" and len(shape) == 2 and shape[0] == shape[1]
    ]
    if len(sparse) == 1:
        return sparse[0]
    if "network" in sparse:
        return "network"
    if not sparse:
        raise GraphFormatError(
            f"{path}: no square sparse matrix found; pass var=NAME (--var NAME). Variables: "
            f"{listing}"
        )
    raise GraphFormatError(
        f"{path}: several sparse matrices ({', '.join(sparse)}); choose one with var=NAME "
        f"(--var NAME)"
    )


def _is_hdf5(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(1024)
    return b"\x89HDF\r\n\x1a\n" in head[:8] or head[512:520] == b"\x89HDF\r\n\x1a\n"


def _read_mat_hdf5(path: str, var: str | None) -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError(
            f"{path} is a MATLAB v7.3 (HDF5) file: install h5py to read it "
            "(pip install 'instant-embedding[mat]' or pip install h5py), or re-save it in "
            "MATLAB with save(..., '-v7')"
        ) from None
    sp = need("scipy.sparse", "scipy", "reading .mat files")
    with h5py.File(path, "r") as f:
        entries: list[tuple[str, str, tuple[int, ...]]] = []
        for name, obj in f.items():
            if name.startswith("#"):
                continue
            if isinstance(obj, h5py.Group) and "MATLAB_sparse" in obj.attrs:
                nrows = int(obj.attrs["MATLAB_sparse"])
                ncols = int(obj["jc"].shape[0]) - 1
                entries.append((name, "sparse", (nrows, ncols)))
            elif isinstance(obj, h5py.Dataset):
                cls = obj.attrs.get("MATLAB_class", b"?")
                cls = cls.decode("ascii", "replace") if isinstance(cls, bytes) else str(cls)
                entries.append((name, cls, tuple(reversed(obj.shape))))
        name = _pick_mat_var(path, entries, var)
        obj = f[name]
        if isinstance(obj, h5py.Group):
            if "MATLAB_sparse" not in obj.attrs:
                raise GraphFormatError(f"{path}: variable {name!r} is not a matrix")
            nrows = int(obj.attrs["MATLAB_sparse"])
            jc = np.asarray(obj["jc"], dtype=np.int64)
            ir = np.asarray(obj["ir"], dtype=np.int64) if "ir" in obj else np.zeros(0, np.int64)
            data = (
                np.asarray(obj["data"]) if "data" in obj else np.ones(ir.shape[0], dtype=np.float64)
            )
            if data.dtype.names:  # complex
                raise GraphFormatError(f"{path}: variable {name!r} is complex")
            return sp.csr_matrix(sp.csc_matrix((data, ir, jc), shape=(nrows, jc.shape[0] - 1)))
        arr = np.asarray(obj).T  # MATLAB stores column-major
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise GraphFormatError(f"{path}: variable {name!r} is not a numeric matrix")
        return sp.csr_matrix(arr)


register("mat", read_matrix_file)
