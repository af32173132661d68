"""Argument checks shared by the package's modules (one definition of each)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_batch_size", "check_threads"]

#: Most threads one call may use (the kernel refuses more).
MAX_THREADS = 4096


def _count(value: Any, name: str, high: float) -> int | None:
    """``value`` as an int in ``1..high``, or None; TypeError for a non-int (bools too),
    ValueError out of range."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if not 1 <= value <= high:
        bound = f"1 <= {name} <= {high}" if high < float("inf") else f"{name} >= 1"
        raise ValueError(f"{name} must satisfy {bound}, got {value}")
    return int(value)


def check_threads(threads: Any) -> int | None:
    """``threads`` as an int in ``1..4096``, or None (the default thread count)."""
    return _count(threads, "threads", MAX_THREADS)


def check_batch_size(batch_size: Any) -> int | None:
    """``batch_size`` as an int >= 1, or None."""
    return _count(batch_size, "batch_size", float("inf"))
