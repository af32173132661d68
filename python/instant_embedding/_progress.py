"""Progress reporting, quiet by default: a tqdm bar, a built-in status line, or a callback."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from . import _core

ProgressArg = bool | None | Callable[[int, int], Any]


class Progress:
    """Reports ``done / total`` units of work (``total`` None: unknown).

    ``progress`` is:

    - False or None: silent (the API's default);
    - True: a tqdm bar on stderr if tqdm is installed (``instant-embedding[progress]``),
      otherwise a status line on stderr with the percentage, the rate and the time left,
      e.g. ``embedding: 42% 4,200/10,000 node, 1,350 node/s, ETA 0:04``, redrawn in place on
      a terminal or in a notebook, and on any other stream (a log file, a CI job) written as
      a new line every 10 seconds and at the end;
    - a callable ``f(done, total)``, called after each step (``total`` -1 when unknown).

    The command line asks for progress only when stderr is a terminal (and not ``--quiet``).
    """

    def __init__(
        self,
        total: int | None,
        progress: ProgressArg,
        desc: str,
        *,
        unit: str = "node",
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.done, self.desc, self.unit = total, 0, desc, unit
        self._cb = progress if callable(progress) else None
        self._bar: Any = None
        self._out: TextIO | None = None  # the status line's stream
        if progress and self._cb is None:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(
                    total=total,
                    desc=desc,
                    unit=unit,
                    unit_scale=unit != "node",
                    unit_divisor=1024 if unit == "B" else 1000,
                    leave=False,
                )
            except ImportError:
                self._out = stream if stream is not None else sys.stderr  # None under pythonw
                in_place, self._clock = _redraws_in_place(self._out), clock
                self._line = _core.StatusLine(desc, unit, in_place, clock())

    def set(self, done: int) -> None:
        """Reports the total done so far (a value not above the last one is ignored)."""
        if done <= self.done:
            return
        delta, self.done = done - self.done, done
        if self._bar is not None:
            self._bar.update(delta)
        elif self._cb is not None:
            self._cb(done, self.total if self.total is not None else -1)
        elif self._out is not None:
            self._write(self._line.update(done, self.total or 0, self._clock()))

    def update(self, n: int) -> None:
        """Reports ``n`` more units done."""
        self.set(self.done + n)

    add = update

    def report(self, done: int, total: int) -> None:
        """The native embedding job's hook: ``done`` of ``total`` units (the job knows the
        total: with smoothing, it counts the unsmoothed rows the smoothed ones need)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
        self.set(done)

    def _write(self, text: str | None) -> None:
        if text is None or self._out is None:
            return
        try:
            self._out.write(text)
            self._out.flush()
        except (OSError, ValueError):  # a closed or broken stream: progress is not worth failing
            self._out = None

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._out is not None:
            self._write(self._line.finish(self.done, self.total or 0, self._clock()))
            self._out = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ByteProgress(Progress):
    """:class:`Progress` of a conversion, in ``unit`` (bytes, rows, arcs)."""

    def __init__(self, total: int | None, progress: Any, unit: str, desc: str = "converting"):
        super().__init__(total, progress, desc, unit=unit)


def _redraws_in_place(stream: TextIO) -> bool:
    """A terminal, or a Jupyter output stream (both interpret ``\\r``)."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return type(stream).__module__.startswith("ipykernel")
