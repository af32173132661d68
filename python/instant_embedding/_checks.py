"""Argument checks shared by the package's modules (one definition of each)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_batch_size", "check_threads"]

#: Most threads one call may use (the kernel refuses more).
MAX_THREADS = 4096


def check_threads(threads: Any) -> int | None:
    """``threads`` as an int in ``1..4096``, or None (the default thread count).

    Raises
    ------
    TypeError
        Not an int (bools are refused).
    ValueError
        Out of range.
    """
    if threads is None:
        return None
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be an int or None, got {type(threads).__name__}")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must satisfy 1 <= threads <= {MAX_THREADS}, got {threads}")
    return int(threads)


def check_batch_size(batch_size: Any) -> int | None:
    """``batch_size`` as an int >= 1, or None."""
    if batch_size is None:
        return None
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be an int or None, got {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return int(batch_size)
