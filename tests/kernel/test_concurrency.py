"""Threads, forks, multiprocessing and Ctrl-C (see docs/RELIABILITY.md).

Every wait has a timeout (a watchdog), so a deadlock fails the test instead of freezing the
run; the timeouts are hang detectors with a wide margin, not performance assertions.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import instant_embedding as ie
import numpy as np
import pytest

HANG = 120.0  # seconds before a wait counts as a deadlock

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
_run_slow = pytest.mark.skipif(not os.environ.get("IE_RUN_SLOW"), reason="set IE_RUN_SLOW=1")


def slow(f):
    """``slow`` marker, and skipped unless IE_RUN_SLOW=1 (keeps `pytest -q` fast)."""
    return pytest.mark.slow(_run_slow(f))


@pytest.fixture(scope="module")
def mapped(tmp_path_factory) -> ie.Graph:
    rng = np.random.default_rng(5)
    n = 3000
    src = rng.integers(0, n, size=20000)
    dst = rng.integers(0, n, size=20000)
    path = tmp_path_factory.mktemp("conc") / "g.graph"
    ie.Graph.from_edges(src, dst, num_nodes=n).save(path)
    return ie.Graph.open(path)


MODEL = ie.InstantEmbedding(dim=32, eps=1e-4)


def _run_threads(targets, timeout=HANG):
    """Starts daemon threads and joins them under a watchdog; re-raises the first error."""
    errors: list[BaseException] = []

    def wrap(f):
        def run():
            try:
                f()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        return run

    threads = [threading.Thread(target=wrap(f), daemon=True) for f in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in threads if t.is_alive()]
    assert not alive, f"{len(alive)} threads still running after {timeout} s (deadlock?)"
    if errors:
        raise errors[0]


def test_many_threads_share_one_graph(mapped):
    serial = MODEL.embed(mapped, np.arange(mapped.num_nodes), threads=1)
    rng = np.random.default_rng(0)
    jobs = []
    results: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k in range(12):
        nodes = rng.integers(0, mapped.num_nodes, size=400)
        kw = {"threads": [1, 2, 3][k % 3], "batch_size": [None, 37, 400][k % 3]}

        def job(k=k, nodes=nodes, kw=kw):
            for _ in range(3):
                results[k] = (nodes, MODEL.embed(mapped, nodes, **kw))
                ie.ppr(mapped, int(nodes[0]))
                mapped.degrees()
                mapped.neighbors(int(nodes[1]))

        jobs.append(job)
    _run_threads(jobs)
    assert len(results) == 12
    for nodes, emb in results.values():
        assert np.array_equal(emb, serial[nodes])


def test_threads_sharing_an_in_memory_graph_and_building_graphs():
    g = ie.Graph.from_edges(np.arange(500), (np.arange(500) * 3 + 1) % 500)
    ref = MODEL.embed(g, np.arange(500), threads=1)
    out = {}

    def embed(k):
        out[k] = MODEL.embed(g, np.arange(500), threads=2)

    def build(k):
        h = ie.Graph.from_edges(np.arange(2000), (np.arange(2000) + k) % 2000)
        h.validate()

    jobs = [lambda k=k: embed(k) for k in range(6)] + [lambda k=k: build(k) for k in range(6)]
    _run_threads(jobs)
    for v in out.values():
        assert np.array_equal(v, ref)


def _child_embed(graph, nodes, threads):
    return MODEL.embed(graph, nodes, threads=threads)


@needs_fork
def test_fork_after_multithreaded_embed(mapped):
    """The parent has a live rayon pool when it forks; the child (which inherits none of its
    threads) must build its own pool instead of deadlocking on the dead one."""
    nodes = np.arange(0, mapped.num_nodes, 7)
    parent = MODEL.embed(mapped, nodes, threads=2)  # creates the 2-thread pool in the parent
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no pytest machinery from here on
        code = 1
        try:
            os.close(r)
            emb = MODEL.embed(mapped, nodes, threads=2)
            emb2 = ie.InstantEmbedding(dim=32, eps=1e-4, threads=2).embed_all(mapped)
            ok = np.array_equal(emb, parent) and np.array_equal(emb2[nodes], parent)
            os.write(w, b"same" if ok else b"diff")
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    deadline = time.monotonic() + HANG
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("forked child deadlocked in embed")
        time.sleep(0.02)
    msg = os.read(r, 16)
    os.close(r)
    assert os.waitstatus_to_exitcode(status) == 0
    assert msg == b"same"
    # and the parent's pool still works after the fork
    assert np.array_equal(MODEL.embed(mapped, nodes, threads=2), parent)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pool(mapped, method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"{method} not available")
    nodes = np.arange(mapped.num_nodes)
    serial = MODEL.embed(mapped, nodes, threads=2)  # live pool in the parent before fork
    chunks = np.array_split(nodes, 6)
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        res = pool.starmap_async(_child_embed, [(mapped, c, 2) for c in chunks])
        parts = res.get(timeout=HANG)
    assert np.array_equal(np.concatenate(parts), serial)


def test_graph_pickles_by_path_and_in_memory_refuses(mapped):
    again = pickle.loads(pickle.dumps(mapped))
    assert again.path == mapped.path and again.num_nodes == mapped.num_nodes
    with pytest.raises(TypeError, match="in-memory"):
        pickle.dumps(ie.Graph.from_edges([0], [1]))


# ------------------------------------------------------------------ Ctrl-C
INTERRUPT_CHILD = """
import os, signal, sys, time
import numpy as np
import instant_embedding as ie

out, n, eps, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(1)
g = ie.Graph.from_edges(rng.integers(0, n, 8 * n), rng.integers(0, n, 8 * n), num_nodes=n)
stamps = [time.monotonic()]
at_signal = []

def on_sigint(signum, frame):
    # Python's default handler, plus a note of how many batches had reported by then. (It is
    # installed explicitly because a parent in the background of a non-interactive shell
    # passes SIGINT on as ignored, and Python then installs no handler.)
    at_signal.append(len(stamps))
    signal.default_int_handler(signum, frame)

signal.signal(signal.SIGINT, on_sigint)

def progress(done, total):
    stamps.append(time.monotonic())
    if len(stamps) == 2:
        print("started", flush=True)
        if mode == "self":  # deterministic: the signal arrives while the job runs
            os.kill(os.getpid(), signal.SIGINT)

try:
    ie.InstantEmbedding(dim=64, eps=eps, threads=1).embed_all(g, out=out, progress=progress)
    print("finished", flush=True)
except KeyboardInterrupt:
    # batches reported after the signal, and the longest batch (for information)
    print("interrupted", len(stamps) - at_signal[0], max(np.diff(stamps)), flush=True)
    sys.exit(130)
"""


def _interrupt_embed_all(
    tmp_path, n: int, eps: float, mode: str = "self"
) -> tuple[int, float, float]:
    """SIGINT to a child inside embed_all(out=...): sent by the child itself from its first
    progress report (``mode="self"``, independent of machine speed) or by this process 0.2 s
    after it (``"parent"``, lands inside a native batch). Returns the number of batches that
    reported after the signal, the latency and the longest batch in seconds (informative)."""
    out = tmp_path / "emb.npy"
    child = textwrap.dedent(INTERRUPT_CHILD)
    p = subprocess.Popen(
        [sys.executable, "-c", child, str(out), str(n), str(eps), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        t0 = time.monotonic()
        if mode == "parent":
            line = p.stdout.readline()  # blocks until the first batch is done
            assert line.strip() == "started", (line, p.stderr.read() if p.poll() else "")
            time.sleep(0.2)
            if p.poll() is not None:
                pytest.skip("embed_all finished before it could be interrupted")
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=HANG)  # a hang detector, not a timing check
        latency = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, rest, err)
    if mode == "self":
        # Read at once: the child may print both lines before a first read would return, and
        # what a readline buffered is not what communicate() reads.
        line, _, rest = rest.partition("\n")
        assert line == "started", (line, err)
    word, after, batch = rest.split()
    assert word == "interrupted"
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())  # no temp file either
    return int(after), latency, float(batch)


def test_ctrl_c_interrupts_embed_all_and_leaves_no_file(tmp_path):
    """KeyboardInterrupt is raised at the next batch boundary (the native call for one batch
    runs without the GIL and is not interrupted): at most the batch in flight when the signal
    arrived reports progress. The temporary .npy is removed and nothing appears at the target
    path."""
    after, latency, batch = _interrupt_embed_all(tmp_path, 20_000, 1e-5)
    print(f"SIGINT -> exit {latency:.3f} s; longest batch {batch:.3f} s; {after} batches after")
    assert after <= 1, after


QUIET_INTERRUPT_CHILD = """
import os, signal, sys, threading
import numpy as np
import instant_embedding as ie

out = sys.argv[1]
signal.signal(signal.SIGINT, signal.default_int_handler)  # see INTERRUPT_CHILD
rng = np.random.default_rng(1)
n = 20_000
g = ie.Graph.from_edges(rng.integers(0, n, 8 * n), rng.integers(0, n, 8 * n), num_nodes=n)
# Hours of work at this eps: the signal arrives while the job runs, on any machine.
model = ie.InstantEmbedding(dim=64, eps=1e-8, threads=1)
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    model.embed_all(g, out=out, batch_size=1)  # no progress callback: the job checks signals
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_ctrl_c_reaches_a_job_without_progress_callback(tmp_path):
    """Without a progress callback no Python code runs between batches; the job checks for
    signals itself, so Ctrl-C still stops it at a batch boundary and leaves no file."""
    out = tmp_path / "emb.npy"
    child = textwrap.dedent(QUIET_INTERRUPT_CHILD)
    r = subprocess.run(
        [sys.executable, "-c", child, str(out)],
        capture_output=True,
        text=True,
        timeout=HANG,  # a hang detector, not a timing check
    )
    assert (r.returncode, r.stdout.strip()) == (130, "interrupted"), r.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


@slow
def test_ctrl_c_with_expensive_queries(tmp_path):
    """With a small eps every query is expensive, and the latency grows with the batch time
    (see docs/RELIABILITY.md); the interrupt still lands at the next batch boundary."""
    for i, eps in enumerate([1e-5, 1e-6]):
        d = tmp_path / str(i)
        d.mkdir()
        after, lat, batch = _interrupt_embed_all(d, 60_000, eps, mode="parent")
        print(f"eps={eps:g}: SIGINT -> exit {lat:.3f} s; longest batch {batch:.3f} s")
        assert after <= 1, (eps, after)


CONVERT_CHILD = """
import os, signal, sys, time
import numpy as np
from instant_embedding import convert

src, out = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGINT, signal.default_int_handler)  # see INTERRUPT_CHILD
stamps = [time.monotonic()]

def progress(done, total):
    stamps.append(time.monotonic())
    if len(stamps) == 2:
        print("started", flush=True)
        os.kill(os.getpid(), signal.SIGINT)  # while the conversion runs, on any machine

try:
    convert(src, out, progress=progress)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_ctrl_c_interrupts_conversion_and_leaves_no_file(tmp_path):
    """SIGINT while converting a text edge list (sent by the child at its first progress
    report): KeyboardInterrupt, no output file, no temp file."""
    rng = np.random.default_rng(2)
    block = "".join(f"{a} {b}\n" for a, b in rng.integers(0, 200_000, (100_000, 2)).tolist())
    text = tmp_path / "edges.txt"
    text.write_text(block * 20)  # 2M edges (repeats are merged), cheap to generate
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "g.graph"
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CONVERT_CHILD), str(text), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = p.stdout.readline()
        assert line.strip() == "started", (line, p.stderr.read() if p.poll() is not None else "")
        t0 = time.monotonic()
        rest, err = p.communicate(timeout=HANG)
        latency = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, rest, err[-2000:])
    assert list(out_dir.iterdir()) == [], list(out_dir.iterdir())
    print(f"convert: SIGINT -> exit {latency:.3f} s")  # informative: HANG detects a hang


def test_a_batch_holds_the_writer_against_other_threads(tmp_path):
    """Another thread's add_edges during a batch waits for the batch to end: it is neither
    swept into the batch nor discarded with it when the batch fails, and it is durable when it
    returns (a fresh reader sees it)."""
    path = str(tmp_path / "g.graph")
    ie.Graph.from_edges(["a", "b"], ["b", "c"]).save(path)
    g = ie.Graph.open(path, writable=True)
    in_batch, other_done = threading.Event(), threading.Event()

    def other() -> None:
        in_batch.wait()
        g.add_edges(["x"], ["y"])  # waits for the batch below to end
        other_done.set()

    t = threading.Thread(target=other)
    t.start()
    with pytest.raises(RuntimeError, match="abandon"):
        with g.batch():
            g.add_edges(["a"], ["z"])
            in_batch.set()
            # the other thread is blocked on the writer: it cannot finish inside the batch
            assert not other_done.wait(0.2)
            raise RuntimeError("abandon the batch")
    t.join(timeout=60)
    assert other_done.is_set()
    fresh = ie.Graph.open(path)
    assert "x" in fresh.nodes and "y" in fresh.nodes  # the other thread's change is kept
    assert "z" not in fresh.nodes  # the failed batch's change is not
    g.close()
