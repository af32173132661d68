"""MATLAB ``.mat`` adjacency matrices (scipy.io; v7.3 HDF5 files through h5py), read by the
kernel's CSR walk (:func:`~instant_embedding.readers.memory.scipy_edges`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import _core
from .._core import ReadOptions
from ..errors import GraphFormatError
from ..graph import Graph
from ._build import Output, PathLike, build_into, need
from ._convert import register
from .memory import scipy_edges


def read_matrix_file(
    paths: list[str], out: Output, opts: ReadOptions, progress: Any
) -> tuple[Graph | None, dict[str, Any]]:
    """Loads the matrix whole (scipy), then builds from its entries."""
    matrix = read_mat(paths[0], opts.var)
    src, dst, w, n, directed, weighted = scipy_edges(matrix, opts.directed, opts.weighted, paths[0])
    how = {"directed": directed, "weighted": weighted, "num_nodes": n}
    return build_into(iter([(src, dst, w)]), opts, out, **how)


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
        with open(p, "rb") as f:
            head = f.read(520)
        if b"\x89HDF\r\n\x1a\n" in (head[:8], head[512:520]):
            return _read_mat_hdf5(p, var)
        raise GraphFormatError(f"{p}: not a readable MATLAB file: {e}") from None
    name = _core.mat_variable(p, [(n, cls, shape) for n, shape, cls in info], var)
    try:
        m = sio.loadmat(p, variable_names=[name])[name]
    except Exception as e:  # noqa: BLE001
        raise GraphFormatError(f"{p}: cannot read variable {name!r}: {e}") from None
    if not sp.issparse(m) and (np.ndim(m) != 2 or np.asarray(m).dtype.kind not in "biuf"):
        raise GraphFormatError(
            f"{p}: variable {name!r} is a {np.asarray(m).dtype} array of shape "
            f"{np.shape(m)}, not an adjacency matrix"
        )
    return sp.csr_matrix(m)


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
            if isinstance(obj, h5py.Group) and "MATLAB_sparse" in obj.attrs:
                nrows = int(obj.attrs["MATLAB_sparse"])
                entries.append((name, "sparse", (nrows, int(obj["jc"].shape[0]) - 1)))
            elif isinstance(obj, h5py.Dataset) and not name.startswith("#"):
                cls = obj.attrs.get("MATLAB_class", b"?")
                cls = cls.decode("ascii", "replace") if isinstance(cls, bytes) else str(cls)
                entries.append((name, cls, tuple(reversed(obj.shape))))
        name = _core.mat_variable(path, entries, var)
        obj = f[name]
        if isinstance(obj, h5py.Group):
            if "MATLAB_sparse" not in obj.attrs:
                raise GraphFormatError(f"{path}: variable {name!r} is not a matrix")
            # MATLAB stores a sparse matrix by columns (CSC): column starts jc, rows ir.
            jc = np.asarray(obj["jc"], dtype=np.int64)
            ir = np.asarray(obj["ir"], dtype=np.int64) if "ir" in obj else np.zeros(0, np.int64)
            data = np.asarray(obj["data"]) if "data" in obj else np.ones(len(ir))
            if data.dtype.names:  # complex
                raise GraphFormatError(f"{path}: variable {name!r} is complex")
            shape = (int(obj.attrs["MATLAB_sparse"]), len(jc) - 1)
            return sp.csr_matrix(sp.csc_matrix((data, ir, jc), shape=shape))
        arr = np.asarray(obj).T  # MATLAB stores column-major
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise GraphFormatError(f"{path}: variable {name!r} is not a numeric matrix")
        return sp.csr_matrix(arr)


register("mat", read_matrix_file)
