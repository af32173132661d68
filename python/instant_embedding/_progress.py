"""Quiet-by-default progress reporting: a tqdm bar, log lines, or a user callback."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("instant_embedding")

ProgressArg = bool | None | Callable[[int, int], Any]


class Progress:
    """Reports ``done / total`` units of work.

    ``progress`` is False/None (silent), True (a tqdm bar on stderr if tqdm is installed,
    otherwise an INFO log line every 5 s on the ``instant_embedding`` logger), or a callable
    ``f(done, total)`` called after each batch.
    """

    def __init__(self, total: int, progress: ProgressArg, desc: str) -> None:
        self.total = total
        self.done = 0
        self.desc = desc
        self._cb: Callable[[int, int], Any] | None = None
        self._bar: Any = None
        self._last_log = time.monotonic()
        if callable(progress):
            self._cb = progress
        elif progress:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, unit="node", leave=False)
            except ImportError:
                self._log = True
        self._log = bool(progress) and self._bar is None and self._cb is None

    def update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._cb is not None:
            self._cb(self.done, self.total)
        elif self._log and time.monotonic() - self._last_log > 5.0:
            self._last_log = time.monotonic()
            logger.info("%s: %d / %d", self.desc, self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ByteProgress:
    """Progress of a conversion in arbitrary units (bytes, rows, arcs); quiet unless asked.

    Unlike :class:`Progress`, ``set`` takes the absolute amount done and the total may be
    unknown (``None``; a callable then receives ``-1``).
    """

    def __init__(self, total: int | None, progress: Any, unit: str, desc: str = "converting"):
        self.total = total
        self.done = 0
        self._cb: Callable[[int, int], Any] | None = None
        self._bar: Any = None
        self._log_at = time.monotonic() + 5.0
        self._log = False
        self.desc = desc
        if callable(progress):
            self._cb = progress
        elif progress:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(
                    total=total,
                    desc=desc,
                    unit=unit,
                    unit_scale=True,
                    unit_divisor=1024 if unit == "B" else 1000,
                    leave=False,
                )
            except ImportError:
                self._log = True

    def set(self, done: int) -> None:
        if done <= self.done:
            return
        delta, self.done = done - self.done, done
        if self._bar is not None:
            self._bar.update(delta)
        elif self._cb is not None:
            self._cb(done, self.total if self.total is not None else -1)
        elif self._log and time.monotonic() > self._log_at:
            self._log_at = time.monotonic() + 5.0
            logger.info("%s: %d / %s", self.desc, done, self.total)

    def add(self, n: int) -> None:
        self.set(self.done + n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
