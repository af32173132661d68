"""Atomic file output shared by the embedding writers."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["AtomicNpyWriter", "atomic_tmp_path", "write_bytes_atomic"]


def atomic_tmp_path(target: str | os.PathLike[str]) -> str:
    """A unique temporary path in ``target``'s directory (same file system, so rename is atomic)."""
    target = os.fspath(target)
    if os.path.isdir(target):
        raise IsADirectoryError(f"{target}: is a directory")
    d, name = os.path.split(os.path.abspath(target))
    return os.path.join(d, f".{name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")


def _fsync_and_replace(tmp: str, target: str) -> None:
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)


class AtomicNpyWriter:
    """A float32 ``.npy`` file filled through a memory map, renamed into place on commit.

    The target path holds either its previous content or the complete new file, never a torn
    one; memory use stays bounded by the page cache whatever the matrix size.
    """

    def __init__(self, target: str | os.PathLike[str], shape: tuple[int, int]) -> None:
        self.target = os.fspath(target)
        self.tmp = atomic_tmp_path(self.target)
        try:
            self.array: Any = np.lib.format.open_memmap(
                self.tmp, mode="w+", dtype=np.float32, shape=shape
            )
        except BaseException:
            self.abort()
            raise
        # Reserve the blocks now: a sparse mapped file that hits a full disk later would kill
        # the process with SIGBUS on a page fault instead of raising OSError here.
        if hasattr(os, "posix_fallocate"):
            try:
                with open(self.tmp, "r+b") as f:
                    os.posix_fallocate(f.fileno(), 0, os.path.getsize(self.tmp))
            except BaseException:
                self.abort()
                raise

    def commit(self) -> npt.NDArray[np.float32]:
        self.array.flush()
        del self.array
        _fsync_and_replace(self.tmp, self.target)
        return np.load(self.target, mmap_mode="r")

    def abort(self) -> None:
        try:
            del self.array
        except AttributeError:
            pass
        try:
            os.remove(self.tmp)
        except FileNotFoundError:
            pass


def write_npy_atomic(
    target: str | os.PathLike[str], rows: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Write a 2-D float32 matrix held in memory to ``target`` atomically (see
    :class:`AtomicNpyWriter`); returns a read-only memory map of the file."""
    writer = AtomicNpyWriter(target, rows.shape)
    try:
        writer.array[:] = rows
    except BaseException:
        writer.abort()
        raise
    return writer.commit()


def write_bytes_atomic(target: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``target``: the path holds its old content or all of ``data``."""
    tmp = atomic_tmp_path(target)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        _fsync_and_replace(tmp, os.fspath(target))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
