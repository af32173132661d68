"""progress=True without tqdm: the built-in status line (percentage, rate, time left)."""

from __future__ import annotations

import io
import sys

import instant_embedding as ie
import pytest
from instant_embedding._progress import Progress


@pytest.fixture
def no_tqdm(monkeypatch):
    """Makes ``import tqdm`` fail, as when the [progress] extra is not installed."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_terminal_line_shows_percentage_rate_and_eta(no_tqdm):
    out, clock = Terminal(), Clock()
    with Progress(1000, True, "embedding", stream=out, clock=clock) as bar:
        clock.now += 1.0
        bar.update(100)
        assert out.getvalue() == "\rembedding:  10% 100/1,000 node, 100 node/s, ETA 0:09"
        clock.now += 0.1  # under the redraw interval: nothing new
        bar.update(100)
        assert out.getvalue().count("\r") == 1
        clock.now += 0.9
        bar.update(300)
        # 500 of 1000 after 2 s: 250 node/s, 2 s left
        assert out.getvalue().endswith("\rembedding:  50% 500/1,000 node, 250 node/s, ETA 0:02")
        clock.now += 2.0
        bar.update(500)
    assert out.getvalue().endswith("\rembedding: 100% 1,000/1,000 node, 250 node/s, done in 0:04\n")


def test_other_streams_get_a_new_line_every_ten_seconds(no_tqdm):
    out, clock = io.StringIO(), Clock()
    with Progress(7200, True, "embedding", stream=out, clock=clock) as bar:
        for _ in range(30):  # one node per second
            clock.now += 1.0
            bar.update(1)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines == [
        "embedding:   0% 10/7,200 node, 1 node/s, ETA 1:59:50",
        "embedding:   0% 20/7,200 node, 1 node/s, ETA 1:59:40",
        "embedding:   0% 30/7,200 node, 1 node/s, ETA 1:59:30",  # not repeated at close
    ]
    clock.now += 5.0
    with Progress(7200, True, "embedding", stream=out, clock=clock) as bar:
        clock.now += 4.0
        bar.update(7200)
    assert out.getvalue().splitlines()[-1] == (
        "embedding: 100% 7,200/7,200 node, 1,800 node/s, done in 0:04"
    )


def test_bytes_in_binary_units_and_an_unknown_total(no_tqdm):
    out, clock = io.StringIO(), Clock()
    with Progress(3 << 30, True, "converting", unit="B", stream=out, clock=clock) as bar:
        clock.now += 2.0
        bar.set(1 << 30)
        bar.set(1000)  # never backwards
    assert out.getvalue() == "converting:  33% 1.0 GiB/3.0 GiB, 512.0 MiB/s, ETA 0:04\n"
    out = io.StringIO()
    with Progress(0, True, "rows", unit="row", stream=out, clock=clock) as bar:
        clock.now += 2.0
        bar.update(5000)
    assert out.getvalue() == "rows: 5,000 row, 2,500 row/s, done in 0:02\n"


def test_embed_all_progress_true_without_tqdm_reports_on_stderr(no_tqdm, capsys):
    g = ie.datasets.karate()
    ie.InstantEmbedding(dim=8).embed_all(g, progress=True)
    err = capsys.readouterr().err
    assert err.startswith("embedding: 100% 34/34 node, ") and err.endswith("\n")
    assert "done in 0:0" in err


def test_progress_is_silent_by_default(no_tqdm, capsys):
    ie.InstantEmbedding(dim=8).embed_all(ie.datasets.karate())
    assert capsys.readouterr().err == ""


def test_a_closed_stream_does_not_break_the_computation(no_tqdm):
    out, clock = Terminal(), Clock()
    out.close()
    with Progress(10, True, "embedding", stream=out, clock=clock) as bar:
        clock.now += 1.0
        bar.update(5)
    assert bar.done == 5
