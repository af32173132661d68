"""No data lost: SIGKILL at random points, and mapped files that change underneath.

A child process writes the same target path over and over (alternating two different
contents) and is killed with SIGKILL at a random moment *while a write is in progress*: the
test waits until the writer's temporary file (or the out-of-core builder's scratch directory)
exists before it sends the signal, and counts a kill only if that temporary state is still
there afterwards, i.e. the kill landed before the write's final rename. Whatever the moment,
the target must hold nothing (if the first write had not finished) or one of the two complete
versions: it opens, validates and matches byte for byte. Leftover temporary files (a killed
process cannot clean up) are allowed, but only under the documented ``.<name>.tmp-*`` names
next to the target. See docs/RELIABILITY.md.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import _core

KILLS = int(os.environ.get("IE_KILLS", "3"))  # per writer; IE_KILLS=50 for a long run
HANG = 120.0

WRITER = r"""
import os, sys
import numpy as np
import instant_embedding as ie
from instant_embedding import convert

kind, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(3)
src, dst = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
graphs = [ie.Graph.from_edges(src, dst, num_nodes=n),
          ie.Graph.from_edges(src, (dst + 1) % n, num_nodes=n, weights=np.ones(6 * n) * 2)]
models = [ie.InstantEmbedding(dim=48, eps=1e-3, seed=s, threads=1) for s in (1, 2)]
texts = []
for k, g in enumerate(graphs):
    p = os.path.join(os.path.dirname(target), f"edges{k}.txt")
    if not os.path.exists(p):
        np.savetxt(p, np.stack([src, (dst + k) % n], 1), fmt="%d")
    texts.append(p)
print("ready", flush=True)
i = 0
while True:
    k = i % 2
    if kind == "save":
        graphs[k].save(target)
    elif kind == "embed_all":
        models[k].embed_all(graphs[0], out=target, batch_size=512)
    elif kind == "convert":
        convert(texts[k], target)
    i += 1
    print("wrote", k, flush=True)
"""


def _expected(kind: str, tmp_path, n: int) -> list[bytes] | list[np.ndarray]:
    """The two complete versions the writer alternates between, made in this process."""
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    graphs = [
        ie.Graph.from_edges(src, dst, num_nodes=n),
        ie.Graph.from_edges(src, (dst + 1) % n, num_nodes=n, weights=np.ones(6 * n) * 2),
    ]
    if kind == "embed_all":
        return [ie.InstantEmbedding(dim=48, eps=1e-3, seed=s).embed_all(graphs[0]) for s in (1, 2)]
    out = []
    for k, g in enumerate(graphs):
        p = tmp_path / f"expected{k}.graph"
        if kind == "save":
            g.save(p)
        else:
            from instant_embedding import convert

            convert(tmp_path / f"edges{k}.txt", p)
        out.append(p.read_bytes())
        p.unlink()
    return out


def _in_flight(tmp_path, target) -> list:
    """The temporary file of an atomic write and the builder's scratch directory."""
    return [
        p
        for p in tmp_path.iterdir()
        if p.name.startswith((f".{target.name}.tmp-", f".{target.name}.build-"))
    ]


def _remove(paths) -> None:
    for leftover in paths:
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()


def _kill_loop(kind: str, tmp_path, n: int, kills: int, max_delay: float) -> dict:
    """Kills a writer ``kills`` times inside a write (up to 3x as many tries: a kill that
    lands between two writes is not counted) and checks the target after each kill."""
    target = tmp_path / ("out.npy" if kind == "embed_all" else "out.graph")
    rnd = random.Random(f"{kind}-{n}")
    seen = {"absent": 0, "v0": 0, "v1": 0, "killed_mid_write": 0, "tries": 0}
    expected = None
    ids = "out.ids.npy"  # embed_all(out=) writes the node ids beside the matrix
    while seen["killed_mid_write"] < kills and seen["tries"] < 3 * kills:
        seen["tries"] += 1
        _remove(_in_flight(tmp_path, target))  # so what is left after the kill is this one's
        p = subprocess.Popen(
            [sys.executable, "-c", WRITER, kind, str(target), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
            if expected is None:
                expected = _expected(kind, tmp_path, n)
            time.sleep(rnd.uniform(0, max_delay))
            deadline = time.monotonic() + HANG
            while not _in_flight(tmp_path, target):  # wait for a write in progress
                assert p.poll() is None, p.stderr.read()
                assert time.monotonic() < deadline, "the writer never started a write"
                time.sleep(0.0002)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=HANG)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == -signal.SIGKILL, p.stderr.read()
        # the write's temporary state survived the kill: it landed before the final rename
        seen["killed_mid_write"] += bool(_in_flight(tmp_path, target))
        if not target.exists():
            seen["absent"] += 1
            continue
        if kind == "embed_all":
            arr = np.load(target)
            match = [k for k, e in enumerate(expected) if np.array_equal(arr, e)]
        else:
            g = ie.Graph.open(target)
            g.validate()
            data = target.read_bytes()
            match = [k for k, e in enumerate(expected) if data == e]
            del g
        assert match, "target holds a file that is neither previous version (torn write)"
        seen[f"v{match[0]}"] += 1
        for leftover in tmp_path.iterdir():
            name = leftover.name
            # the temp file of the atomic write, the out-of-core builder's scratch directory,
            # the path's writers' lock (a killed writer cannot remove it; the next takes it)
            assert name in (
                target.name,
                ids,
                "edges0.txt",
                "edges1.txt",
                f"{target.name}.lock",
            ) or name.startswith(
                (f".{target.name}.tmp-", f".{target.name}.build-", f".{ids}.tmp-")
            ), name
    _remove(_in_flight(tmp_path, target))  # what a killed writer could not remove
    _remove(list(tmp_path.glob(f"{target.name}.lock")))
    _remove(list(tmp_path.glob(f".{ids}.tmp-*")))
    assert seen["killed_mid_write"] == kills, f"kills did not land inside writes: {seen}"
    assert seen["absent"] + seen["v0"] + seen["v1"] == seen["tries"]
    return seen


@pytest.mark.parametrize("kind,n,delay", [("save", 60_000, 1.0), ("embed_all", 8_000, 1.5)])
def test_sigkill_never_leaves_a_torn_file(tmp_path, kind, n, delay):
    print(kind, _kill_loop(kind, tmp_path, n, KILLS, delay))


def test_sigkill_during_conversion(tmp_path):
    native = hasattr(_core, "convert_native")
    seen = _kill_loop("convert", tmp_path, 30_000, max(2, KILLS - 1), 1.5)
    print("convert", "native" if native else "python fallback", seen)


# ------------------------------------------------------------------ files changing underneath
def _ring(n: int, shift: int = 1) -> ie.Graph:
    return ie.Graph.from_edges(np.arange(n), (np.arange(n) + shift) % n)


def test_save_replaces_by_rename_never_in_place(tmp_path):
    p = tmp_path / "g.graph"
    _ring(1000).save(p)
    old = ie.Graph.open(p)
    before = ie.InstantEmbedding(dim=16).embed_all(old)
    ino = os.stat(p).st_ino
    _ring(2000, 3).save(p)  # a different graph over the mapped file
    assert os.stat(p).st_ino != ino  # a new inode: the old one was never truncated
    old.validate()  # the mapping still sees the complete old file
    assert np.array_equal(ie.InstantEmbedding(dim=16).embed_all(old), before)
    assert ie.Graph.open(p).num_nodes == 2000
    # saving a mapped graph onto its own path also goes through a new file
    old.save(p)
    assert os.stat(p).st_ino not in (ino,)
    assert ie.Graph.open(p).num_nodes == 1000


def test_partially_written_file_is_refused(tmp_path):
    full = tmp_path / "full.graph"
    _ring(500).save(full)
    data = full.read_bytes()
    part = tmp_path / "part.graph"
    for cut in [256, len(data) // 3, len(data) - 1]:
        part.write_bytes(data[:cut])
        with pytest.raises(ie.GraphFormatError, match="still being written"):
            ie.Graph.open(part)


TRUNCATE_CHILD = r"""
import os, sys
import numpy as np
import instant_embedding as ie
path, mode = sys.argv[1], sys.argv[2]
g = ie.Graph.open(path)
n = g.num_nodes
nodes = [0, 1, n // 2, n - 1]
before = ie.InstantEmbedding(dim=8).embed(g, nodes)
if mode.startswith("truncate"):
    os.truncate(path, 300)             # pages behind the map vanish
    if mode == "truncate_far":
        g.degree(n - 1)                # its indptr entries lie in a page past the new end
else:
    other = ie.Graph.from_edges(np.arange(n), (np.arange(n) + 7) % n)
    tmp = path + ".other"
    other.save(tmp)
    with open(path, "r+b") as f:       # an in-place writer, against the documented contract
        f.write(open(tmp, "rb").read())
try:
    g.degrees()                        # reads every page of indptr
    after = ie.InstantEmbedding(dim=8).embed(g, nodes)
    g.validate()
    print("validated", np.array_equal(after, before), flush=True)
except ie.GraphFormatError as e:
    print("GraphFormatError", e, flush=True)
"""


def _run_truncate(tmp_path, mode):
    p = tmp_path / "g.graph"
    _ring(50_000).save(p)
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(TRUNCATE_CHILD), str(p), mode],
            capture_output=True,
            text=True,
            timeout=HANG,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("hung after the mapped file changed")


def test_truncated_while_mapped_dies_loudly_never_silently(tmp_path):
    """Truncating a mapped file in place is outside the contract (writers replace files by
    rename). The reader cannot prevent it; what it guarantees is that the damage is never
    silent. An access to a page past the new end kills the process with SIGBUS; the rest of
    the last page reads as zeros, which the row checks report as GraphFormatError. It never
    returns embeddings computed from missing data."""
    far = _run_truncate(tmp_path, "truncate_far")
    assert far.returncode == -signal.SIGBUS, (far.returncode, far.stdout, far.stderr[-2000:])
    near = _run_truncate(tmp_path, "truncate")  # degrees() meets the zeroed tail of page 0 first
    if near.returncode != -signal.SIGBUS:
        assert near.returncode == 0, (near.returncode, near.stderr[-2000:])
        assert near.stdout.startswith("GraphFormatError"), near.stdout


def test_overwritten_in_place_while_mapped_is_caught_by_validate(tmp_path):
    """An in-place rewrite with a same-sized, different graph changes what the map sees (the
    pages are shared with the page cache); the section checksums recorded at open no longer
    match, so validate() reports it. (Queries between the rewrite and validate() see the new
    bytes: in-place writers are unsupported, see docs/RELIABILITY.md.)"""
    r = _run_truncate(tmp_path, "overwrite")
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.startswith("GraphFormatError") and "checksum" in r.stdout, r.stdout


# ------------------------------------------------------------------ leftovers of killed writers
_ABANDON = """
import os, sys
import numpy as np
from instant_embedding import _core
b = _core.GraphBuilder(sys.argv[1], memory_limit=4096, tmp_dir=os.path.dirname(sys.argv[1]))
rng = np.random.default_rng(0)
b.add_edges(rng.integers(0, 500, 5000), rng.integers(0, 500, 5000))  # spills segments
os._exit(0)  # no destructors: what SIGKILL or the OOM killer leaves behind
"""


def test_next_build_removes_leftovers_of_killed_writers_of_its_path(tmp_path):
    target = tmp_path / "g.graph"
    subprocess.run([sys.executable, "-c", _ABANDON, str(target)], check=True, timeout=HANG)
    left = sorted(p.name for p in tmp_path.iterdir())
    # the output's temp file, the scratch directory and the path's writers' lock
    assert len(left) == 3 and "g.graph.lock" in left, left
    assert any(n.startswith(".g.graph.build-") for n in left)
    scratch = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert any(scratch.iterdir()), "the abandoned build spilled nothing"
    # tag = "{pid}@{host hash}": make copies for a live process (pid 1: a reused process id;
    # the next write holds the path's lock, so no process is writing them) and another host
    name = scratch.name
    prefix, rest = name.split("build-", 1)
    pid, host_rest = rest.split("@", 1)
    alive = tmp_path / f"{prefix}build-1@{host_rest}"
    other_host = tmp_path / f"{prefix}build-{pid}@{'0' * 8}{host_rest[8:]}"
    other_target = tmp_path / f".h.graph.build-{pid}@{host_rest}"
    for d in (alive, other_host, other_target):
        d.mkdir()
    np.savetxt(tmp_path / "e.txt", np.array([[0, 1], [1, 2]]), fmt="%d")
    from instant_embedding import convert

    convert(tmp_path / "e.txt", target)
    now = sorted(p.name for p in tmp_path.iterdir())
    assert now == sorted(["e.txt", "g.graph", other_host.name, other_target.name]), now
    assert ie.Graph.open(target).num_nodes == 3
