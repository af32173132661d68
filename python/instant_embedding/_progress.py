"""Progress reporting, quiet by default: a tqdm bar, a built-in status line, or a callback."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from . import _core

ProgressArg = bool | None | Callable[[int, int], Any]

# The built-in status line is redrawn at most this often on a terminal, and written as a new
# line this often on other streams (log files stay short and readable).
REDRAW_SECONDS = 0.2
LINE_SECONDS = 10.0


class Progress:
    """Reports ``done / total`` units of work (``total`` None: unknown).

    ``progress`` is:

    - False or None: silent (the API's default);
    - True: a tqdm bar on stderr if tqdm is installed (``instant-embedding[progress]``),
      otherwise a built-in status line on stderr with the percentage, the rate and the time
      left, e.g. ``embedding: 42% 4,200/10,000 node, 1,350 node/s, ETA 0:04``. It is redrawn
      in place on a terminal or in a notebook; on any other stream (a log file, a CI job) a
      new line is written every 10 seconds and at the end; an unknown total shows the amount
      and rate without a percentage;
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
        self.total = total
        self.done = 0
        self.desc = desc
        self._cb: Callable[[int, int], Any] | None = None
        self._bar: Any = None
        self._line: _StatusLine | None = None
        if callable(progress):
            self._cb = progress
        elif progress:
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
                out = stream if stream is not None else sys.stderr
                if out is not None:  # None under pythonw
                    self._line = _StatusLine(total or 0, desc, unit, out, clock)

    def set(self, done: int) -> None:
        """Reports the total done so far (a value not above the last one is ignored)."""
        if done <= self.done:
            return
        delta, self.done = done - self.done, done
        if self._bar is not None:
            self._bar.update(delta)
        elif self._cb is not None:
            self._cb(done, self.total if self.total is not None else -1)
        elif self._line is not None:
            self._line.show(done)

    def update(self, n: int) -> None:
        """Reports ``n`` more units done."""
        self.set(self.done + n)

    add = update

    def native_hook(self, done: int, total: int | None = None) -> None:
        """The ``progress`` callback of the native converters: ``(done, total)``."""
        self.set(int(done))

    def report(self, done: int, total: int) -> None:
        """The native embedding job's hook: ``done`` of ``total`` units (the job knows the
        total: with smoothing, it counts the unsmoothed rows the smoothed ones need)."""
        if total != self.total:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
            if self._line is not None:
                self._line.total = total
        self.set(done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._line is not None:
            self._line.finish(self.done)
            self._line = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ByteProgress(Progress):
    """:class:`Progress` of a conversion, in ``unit`` (bytes, rows, arcs)."""

    def __init__(self, total: int | None, progress: Any, unit: str, desc: str = "converting"):
        super().__init__(total, progress, desc, unit=unit)


class _StatusLine:
    """``desc: 42% 4,200/10,000 node, 1,350 node/s, ETA 0:04`` on a text stream."""

    def __init__(
        self, total: int, desc: str, unit: str, stream: TextIO, clock: Callable[[], float]
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self.in_place = _redraws_in_place(stream)
        self.interval = REDRAW_SECONDS if self.in_place else LINE_SECONDS
        self.last = self.start
        self.width = 0  # of the line on screen, to blank what a shorter line leaves behind
        self.written = ""

    def text(self, done: int, now: float, final: bool = False) -> str:
        total = max(self.total, 0)
        return _core.status_line(self.desc, self.unit, done, total, now - self.start, final)

    def show(self, done: int) -> None:
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            self._write(self.text(done, now), final=False)

    def finish(self, done: int) -> None:
        line = self.text(done, self.clock(), final=True)
        if self.in_place or line != self.written:
            self._write(line, final=True)

    def _write(self, line: str, final: bool) -> None:
        self.written = line
        try:
            if self.in_place:
                pad = " " * max(self.width - len(line), 0)
                self.width = len(line)
                self.stream.write("\r" + line + pad + ("\n" if final else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: progress is not worth failing
            self.in_place = False
            self.interval = float("inf")


def _redraws_in_place(stream: TextIO) -> bool:
    """A terminal, or a Jupyter output stream (both interpret ``\\r``)."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return type(stream).__module__.startswith("ipykernel")
