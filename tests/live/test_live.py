"""Live graphs: changes through ``Graph.open(path, writable=True)`` against rebuilds.

For random sequences of adds, removes, batches and compactions, the live graph must give the
embeddings and PPR vectors of a graph built from scratch from the final edge list, bit for
bit, before and after ``compact()``, after reopening and in another process. A writer killed
with SIGKILL in the middle of its commits leaves every acknowledged batch and no torn one; a
concurrent reader never sees part of a batch. See docs/LIVE.md.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import instant_embedding as ie
import numpy as np
import pytest
from helpers import ForkedScript

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MODEL = ie.InstantEmbedding(dim=32, eps=1e-4, threads=1)
LOG_MODEL = ie.InstantEmbedding(dim=16, eps=1e-4, value="log1p", threads=1)


class Reference:
    """The edge list a rebuild would read: each edge once with its merged weight."""

    def __init__(self, kind: str, directed: bool, weighted: bool, merge: str) -> None:
        self.kind, self.directed, self.weighted, self.merge = kind, directed, weighted, merge
        self.edges: dict[tuple, np.float32] = {}
        self.nodes: set = set()

    def key(self, a, b):
        return (a, b) if self.directed or a <= b else (b, a)

    def add(self, a, b, w=1.0) -> None:
        for x in (a, b):
            if self.kind == "implicit":
                self.nodes.update(range(len(self.nodes), x + 1))
            else:
                self.nodes.add(x)
        k, w = self.key(a, b), np.float32(w if self.weighted else 1.0)
        if k in self.edges and self.weighted:
            old = self.edges[k]
            w = np.float32(old + w) if self.merge == "sum" else max(old, w)
        elif k in self.edges:
            w = self.edges[k]
        self.edges[k] = w

    def remove(self, a, b) -> bool:
        return self.edges.pop(self.key(a, b), None) is not None

    def build(self) -> ie.Graph:
        items = sorted(self.edges.items())
        src = [a for (a, _), _ in items]
        dst = [b for (_, b), _ in items]
        w = np.array([x for _, x in items], dtype=np.float32) if self.weighted else None
        nodes = sorted(self.nodes)
        if self.kind == "implicit":
            return ie.Graph.from_edges(
                np.array(src, dtype=np.int64),
                np.array(dst, dtype=np.int64),
                num_nodes=len(nodes),
                directed=self.directed,
                weights=w,
            )
        if not src:
            src = dst = np.zeros(0, dtype=np.int64) if self.kind == "int64" else []
        return ie.Graph.from_edges(src, dst, directed=self.directed, weights=w, nodes=nodes)


def ids_of(kind: str, ks) -> list:
    if kind == "implicit":
        return [int(k) for k in ks]
    if kind == "int64":
        # Signed and spread out, so new ids fall below, between and above existing ones.
        return [int(k) * 7919 - 40_000 for k in ks]
    return [f"v{k * 37 % 101}-{k}" for k in ks]


def assert_same_graph(live: ie.Graph, want: ie.Graph, what: str) -> None:
    assert live.num_nodes == want.num_nodes, what
    assert live.num_edges == want.num_edges, what
    assert live.num_arcs == want.num_arcs, what
    nodes = list(want.nodes)
    if not nodes:
        return
    for model in (MODEL, LOG_MODEL):
        a = model.embed(live, nodes)
        b = model.embed(want, nodes)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), what
    for v in nodes[:: max(1, len(nodes) // 6)]:
        ia, pa = ie.ppr(live, v, eps=1e-4)
        ib, pb = ie.ppr(want, v, eps=1e-4)
        assert list(ia) == list(ib), what
        assert np.array_equal(pa.view(np.uint64), pb.view(np.uint64)), what


def base_graph(tmp_path, ref: Reference, rng: random.Random, span: int) -> str:
    ks = [(rng.randrange(span), rng.randrange(span)) for _ in range(3 * span)]
    ids = ids_of(ref.kind, range(span))
    for a, b in ks:
        ref.add(ids[a], ids[b], rng.choice([0.5, 1.0, 2.25, 3.0]))
    if ref.kind == "implicit":
        ref.add(span - 1, span - 1)  # every id 0..span-1 exists
    path = os.path.join(tempfile.mkdtemp(dir=tmp_path), "g.graph")
    ref.build().save(path)
    return path


ops_strategy = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "remove", "batch", "compact"]),
        st.lists(
            st.tuples(st.integers(0, 29), st.integers(0, 29), st.sampled_from([0.5, 1.5, 4.0])),
            min_size=1,
            max_size=6,
        ),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize("kind", ["implicit", "int64", "utf8"])
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=ops_strategy,
    directed=st.booleans(),
    weighted=st.booleans(),
    merge=st.sampled_from(["sum", "max"]),
    seed=st.integers(0, 2**16),
)
def test_random_changes_equal_a_rebuild(tmp_path, kind, ops, directed, weighted, merge, seed):
    rng = random.Random(seed)
    ref = Reference(kind, directed, weighted, merge)
    path = base_graph(tmp_path, ref, rng, span=20)
    g = ie.Graph.open(path, writable=True, merge=merge)
    existing = list(g.nodes)  # the base graph's nodes: an id without edges is not one
    for step, (op, edges) in enumerate(ops):
        # Ids 20..29 are new (created on first use); removals pick existing edges half the time.
        ids = ids_of(kind, range(30))
        src = [ids[a] for a, _, _ in edges]
        dst = [ids[b] for _, b, _ in edges]
        wts = [w for _, _, w in edges]
        if op == "remove":
            if ref.edges and rng.random() < 0.5:
                pick = [rng.choice(sorted(ref.edges)) for _ in edges]
                src, dst = [a for a, _ in pick], [b for _, b in pick]
            expect = sum(ref.remove(a, b) for a, b in zip(src, dst))
            assert g.remove_edges(src, dst) == expect
        elif op == "add":
            g.add_edges(src, dst, wts if weighted else None)
            for a, b, w in zip(src, dst, wts):
                ref.add(a, b, w)
        elif op == "batch":
            half = len(src) // 2
            with g.batch():
                g.add_edges(src, dst, wts if weighted else None)
                removed = g.remove_edges(src[:half], dst[:half])
            for a, b, w in zip(src, dst, wts):
                ref.add(a, b, w)
            assert removed == sum(ref.remove(a, b) for a, b in zip(src[:half], dst[:half]))
        else:
            g.compact()
            assert g.log_info()["commits"] == 0
        assert_same_graph(g, ref.build(), f"step {step} {op}")
    want = ref.build()
    assert set(existing) <= set(g.nodes)
    reopened = ie.Graph.open(path)
    reopened.validate()
    assert_same_graph(reopened, want, "reopened")
    g.compact()
    compacted = ie.Graph.open(path)
    assert compacted.log_info() == {
        "commits": 0,
        "adds": 0,
        "removes": 0,
        "changed_nodes": 0,
        "new_nodes": 0,
        "bytes": 256,
        "merge": merge,
    }
    compacted.validate()
    assert_same_graph(compacted, want, "compacted")
    g.close()


CHILD_EMBED = r"""
import sys, numpy as np, instant_embedding as ie
g = ie.Graph.open(sys.argv[1])
nodes = list(g.nodes)
np.save(sys.argv[2], ie.InstantEmbedding(dim=32, eps=1e-4, threads=1).embed(g, nodes))
print(repr(nodes))
"""


def test_another_process_sees_the_same_embeddings(tmp_path):
    ref = Reference("utf8", False, True, "sum")
    rng = random.Random(4)
    path = base_graph(tmp_path, ref, rng, span=25)
    with ie.Graph.open(path, writable=True) as g:
        for k in range(5):
            ids = ids_of("utf8", rng.sample(range(40), 8))
            g.add_edges(ids[:4], ids[4:], [1.0, 2.0, 0.5, 3.0])
            for a, b, w in zip(ids[:4], ids[4:], [1.0, 2.0, 0.5, 3.0]):
                ref.add(a, b, w)
            if k % 2:
                g.remove_edges(ids[:2], ids[4:6])
                ref.remove(ids[0], ids[4])
                ref.remove(ids[1], ids[5])
        out = tmp_path / "child.npy"
        r = subprocess.run(
            [sys.executable, "-c", CHILD_EMBED, path, str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        nodes = eval(r.stdout)  # noqa: S307 (our own child's repr of a list of str)
        mine = MODEL.embed(g, nodes)
        rebuilt = MODEL.embed(ref.build(), nodes)
        theirs = np.load(out)
        assert np.array_equal(theirs.view(np.uint32), mine.view(np.uint32))
        assert np.array_equal(rebuilt.view(np.uint32), mine.view(np.uint32))


def test_a_new_node_is_embedded_at_once_and_shifts_others_slightly(tmp_path):
    path = str(tmp_path / "k.graph")
    ie.datasets.karate().save(path)
    before = MODEL.embed(ie.Graph.open(path), [0, 33])
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([34, 34], [0, 33])
        assert g.num_nodes == 35
        assert sorted(g.neighbors(34)) == [0, 33]
        row = MODEL.embed(g, [34])
        assert np.any(row != 0)
        after = MODEL.embed(g, [0, 33])
    # n changed (34 -> 35) and two rows gained an edge: every embedding moves, a little.
    assert not np.array_equal(before, after)
    assert np.corrcoef(before[0], after[0])[0, 1] > 0.9


def test_readers_keep_their_state_until_refresh(tmp_path):
    path = str(tmp_path / "r.graph")
    ie.datasets.karate().save(path)
    reader = ie.Graph.open(path)
    assert reader.log_info() is None
    assert reader.refresh() is False
    w = ie.Graph.open(path, writable=True)
    assert reader.refresh() is True  # the (empty) log now exists
    w.add_edges([0], [40])
    assert reader.num_nodes == 34
    assert reader.refresh() is True
    assert reader.num_nodes == 41 and reader.degree(40) == 1
    assert reader.refresh() is False
    before = MODEL.embed(reader, [40])
    w.compact()
    assert reader.num_nodes == 41  # still the old file, mapped
    assert reader.refresh() is True
    assert reader.log_info()["commits"] == 0
    assert np.array_equal(MODEL.embed(reader, [40]), before)
    w.close()


def test_one_writer_at_a_time_and_read_only_graphs_refuse_changes(tmp_path):
    path = str(tmp_path / "w.graph")
    ie.datasets.karate().save(path)
    w = ie.Graph.open(path, writable=True)
    with pytest.raises(BlockingIOError, match="another writer"):
        ie.Graph.open(path, writable=True)
    code = f"import instant_embedding as ie; ie.Graph.open({path!r}, writable=True)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "BlockingIOError" in r.stderr
    w.close()
    with ie.Graph.open(path, writable=True):
        pass
    ro = ie.Graph.open(path)
    with pytest.raises(ValueError, match="read-only"):
        ro.add_edges([0], [1])
    with pytest.raises(ValueError, match="merge"):
        ie.Graph.open(path, merge="max")


def test_bad_calls_change_nothing(tmp_path):
    path = str(tmp_path / "b.graph")
    ie.Graph.from_edges(["a", "b"], ["b", "c"], weights=[1.0, 2.0]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        with pytest.raises(TypeError, match="string node ids"):
            g.add_edges([1], [2])
        with pytest.raises(ValueError, match="weights must be finite"):
            g.add_edges(["a"], ["z"], [-1.0])
        with pytest.raises(ValueError, match="different lengths"):
            g.add_edges(["a", "b"], ["z"])
        # Overflowing the merged weight fails the whole call, including its first edge.
        with pytest.raises(ValueError, match="overflows"):
            g.add_edges(["x", "a", "a"], ["y", "b", "b"], [1.0, 3e38, 3e38])
        assert "x" not in g
        with pytest.raises(RuntimeError):
            with g.batch():
                g.add_edges(["p"], ["q"])
                raise RuntimeError("rolled back")
        assert "p" not in g
        assert g.log_info()["commits"] == 0
        g.add_edges(["a"], ["b"], [0.5])
        assert list(g.edge_weights("a")) == [1.5]


def test_a_failed_call_inside_a_batch_keeps_what_the_batch_staged_before_it(tmp_path):
    path = str(tmp_path / "f.graph")
    ie.Graph.from_edges(["a", "b"], ["b", "c"], weights=[1.0, 2.0]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        with g.batch():
            g.add_edges(["a"], ["b"], [0.5])
            g.remove_edges(["b"], ["c"])
            # Re-adds b-c and raises a-b twice, then overflows: the whole call is undone,
            # back to the arcs the two calls before it staged.
            with pytest.raises(ValueError, match="overflows"):
                g.add_edges(
                    ["b", "a", "d", "a", "a"], ["c", "b", "a", "b", "b"], [4, 1, 1, 3e38, 3e38]
                )
        assert g.num_edges == 1 and "d" not in g
        assert list(g.neighbors("b")) == ["a"] and list(g.edge_weights("b")) == [1.5]
        assert list(g.neighbors("c")) == []
        g.validate()


def test_implicit_ids_grow_the_range_and_refuse_negatives(tmp_path):
    path = str(tmp_path / "i.graph")
    ie.Graph.from_edges([0, 1], [1, 2]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        with pytest.raises(ValueError, match="implicit ids"):
            g.add_edges([-1], [0])
        g.add_edges([5], [0])
        assert g.num_nodes == 6 and g.degree(4) == 0 and g.id_kind == "implicit"
        assert g.remove_edges([9, 0], [0, 2]) == 0  # unknown id, absent edge
        assert g.num_nodes == 6


def test_corrupted_log_raises_graph_format_error(tmp_path):
    path = str(tmp_path / "c.graph")
    ie.datasets.karate().save(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([0, 1], [40, 41])
    log = path + ".live"
    data = bytearray(open(log, "rb").read())
    data[-20] ^= 0xFF  # inside the commit record
    open(log, "wb").write(bytes(data))
    with pytest.raises(ie.GraphFormatError):
        ie.Graph.open(path)
    data[-20] ^= 0xFF
    data[300] ^= 0x01  # inside the operations: opens (O(1)), validate() finds it
    open(log, "wb").write(bytes(data))
    with pytest.raises(ie.GraphFormatError, match="checksum"):
        ie.Graph.open(path).validate()
    # Saving over the path detaches the log: the new file, without the log.
    ie.Graph.from_edges([0], [1]).save(path)
    assert not os.path.exists(log)
    assert ie.Graph.open(path).num_edges == 1
    # A log that belongs to another graph file: opening refuses it, and so does any write
    # (before replacing anything).
    open(log, "wb").write(bytes(data))
    with pytest.raises(ie.GraphFormatError, match="another graph file"):
        ie.Graph.open(path)
    before = open(path, "rb").read()
    with pytest.raises(ie.GraphFormatError, match="another graph file"):
        ie.Graph.from_edges([0], [2]).save(path)
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["c.graph", "c.graph.live"]


# ------------------------------------------------------------------------------ crashes

HUB_BASE = 1_000_000
WIDTH = 2000  # edges per batch: a large commit, so kills land inside its writes

KILL_WRITER = rf"""
import os, sys, instant_embedding as ie, numpy as np
# One write(2) per line: a kill cannot cut a line in two (print() under PYTHONUNBUFFERED=1
# writes "acked", " ", k and the newline as four separate writes).
say = lambda word, k: os.write(1, f"{{word}} {{k}}\n".encode())
path = sys.argv[1]
g = ie.Graph.open(path, writable=True)
k = g.log_info()["commits"]
say("ready", k)
while True:
    hub = np.full({WIDTH}, {HUB_BASE} + k, dtype=np.int64)
    say("begin", k)
    g.add_edges(hub, np.arange({WIDTH}, dtype=np.int64) * 3)
    say("acked", k)
    k += 1
"""


def killed_output(p: ForkedScript) -> str:
    """The rest of a killed child's stdout, through the buffered reader that `readline()`
    used."""
    p.wait(timeout=60)
    out = p.stdout.read()
    p.stderr.read()
    return out


def committed_batches(path: str) -> int:
    """Checks that the graph holds batches 0..c-1 completely and nothing of any other; c."""
    g = ie.Graph.open(path)
    c = g.log_info()["commits"]
    hubs = [x for x in g.nodes if x >= HUB_BASE]
    assert sorted(hubs) == list(range(HUB_BASE, HUB_BASE + c)), "a torn or missing batch"
    for h in hubs:
        assert g.degree(h) == WIDTH, f"batch {h - HUB_BASE} is torn"
    assert g.num_edges == 500 + c * WIDTH
    return c


def run_kills(tmp_path, kills: int) -> None:
    path = str(tmp_path / "kill.graph")
    ie.Graph.from_edges(np.arange(500) * 3, np.arange(1, 501) * 3 % 1500).save(path)
    rng = random.Random(11)
    acked = -1
    torn_tails = 0
    mid_commit = 0
    end = 256  # the committed end of a log without commits (its head); each writer makes one

    for i in range(kills):
        p = ForkedScript(KILL_WRITER, path)
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            lines.append(line.split())
            if line.startswith("begin"):
                break
        if i % 2:
            # A random moment into the first commit (or the next few): mostly before its writes
            # on a fast machine, where preparing the rows takes longer than writing them.
            time.sleep(rng.uniform(0, 0.03))
        else:
            # Inside the writes: as soon as the commit's first bytes are in the file (or after a
            # second, if this commit never grows it).
            t_end = time.monotonic() + 1.0
            while os.path.getsize(path + ".live") <= end and time.monotonic() < t_end:
                pass
        p.send_signal(signal.SIGKILL)
        out = killed_output(p)
        lines += [x.split() for x in out.splitlines()]
        begun = max(int(x[1]) for x in lines if x[0] == "begin")
        acked = max([acked] + [int(x[1]) for x in lines if x[0] == "acked"])
        size = os.path.getsize(path + ".live")
        c = committed_batches(path)
        end = ie.Graph.open(path).log_info()["bytes"]
        # Every acknowledged batch survived; at most the one in flight was added besides.
        assert acked + 1 <= c <= begun + 1
        mid_commit += c == begun  # the batch in flight was lost: killed before its commit
        torn_tails += size > end
        # Bytes past the committed end are ignored (the next commit overwrites them); cut
        # them so that the next kill's are counted alone.
        os.truncate(path + ".live", end)
    print(f"{kills} kills: {torn_tails} inside a commit's writes, {mid_commit} before its end")
    # The kills really landed inside commits: bytes of unfinished segments past the end.
    assert torn_tails >= max(1, kills // 10), (torn_tails, mid_commit, kills)
    assert mid_commit >= torn_tails
    g = ie.Graph.open(path)
    g.validate()
    assert g.log_info()["commits"] == committed_batches(path) > 0


def test_sigkill_mid_batch_keeps_every_acknowledged_batch(tmp_path):
    run_kills(tmp_path, int(os.environ.get("IE_LIVE_KILLS", "12")))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("IE_RUN_SLOW"), reason="set IE_RUN_SLOW=1")
def test_sigkill_hundreds_of_times(tmp_path):
    run_kills(tmp_path, 300)


READER = r"""
import sys, instant_embedding as ie
path, width, hub_base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
g = ie.Graph.open(path)
seen = set()
while len(seen) < int(sys.argv[4]):
    g.refresh()
    c = g.log_info()["commits"] if g.log_info() else 0
    hubs = [x for x in g.nodes if x >= hub_base]
    bad = len(hubs) != c or any(g.degree(h) != width for h in hubs)
    bad |= g.num_edges != 500 + c * width
    if bad:
        print("TORN", c, len(hubs), flush=True)
        sys.exit(1)
    seen.add(c)
print("seen", len(seen), flush=True)
"""


def test_a_concurrent_reader_never_sees_part_of_a_batch(tmp_path):
    path = str(tmp_path / "conc.graph")
    ie.Graph.from_edges(np.arange(500) * 3, np.arange(1, 501) * 3 % 1500).save(path)
    batches = 12
    with ie.Graph.open(path, writable=True) as g:
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, path, str(WIDTH), str(HUB_BASE), str(batches // 2)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)
        for k in range(batches):
            with g.batch():
                hub = np.full(WIDTH // 2, HUB_BASE + k, dtype=np.int64)
                g.add_edges(hub, np.arange(WIDTH // 2) * 3)
                g.add_edges(hub, np.arange(WIDTH // 2, WIDTH) * 3)
            time.sleep(0.05)
        while reader.poll() is None and batches < 200:
            batches += 1
            with g.batch():
                g.add_edges(np.full(WIDTH, HUB_BASE + batches - 1), np.arange(WIDTH) * 3)
            time.sleep(0.05)
        out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, out + err
    assert "seen" in out


def test_spark_dask_worker_cache_sees_new_commits(tmp_path):
    from instant_embedding import batch

    path = str(tmp_path / "cache.graph")
    ie.datasets.karate().save(path)
    first = batch.open_graph(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([0], [50])
    again = batch.open_graph(path)
    assert again.num_nodes == 51 and 50 in again
    assert np.array_equal(MODEL.embed(again, [50]), MODEL.embed(ie.Graph.open(path), [50]))
    del first
    batch.clear_cache()


def test_cli_update_info_compact(tmp_path, capsys):
    from instant_embedding import cli

    edges = tmp_path / "e.tsv"
    edges.write_text("a\tb\t1.5\nb\tc\t2\n")
    graph = str(tmp_path / "g.graph")
    assert cli.main(["convert", str(edges), graph, "--weighted", "-q"]) == 0
    add = tmp_path / "add.csv"
    add.write_text("src,dst,w\nc,d,0.5\na,b,1\n")
    rm = tmp_path / "rm.txt"
    rm.write_text("b c\nx y\n")
    argv = ["update", graph, "--add", str(add), "--remove", str(rm), "--weight-col", "w"]
    assert cli.main(argv) == 0
    assert "2 edges added, 1 of 2 removed" in capsys.readouterr().err
    g = ie.Graph.open(graph)
    want = ie.Graph.from_edges(["a", "c"], ["b", "d"], weights=[2.5, 0.5], nodes=["b"])
    assert_same_graph(g, want, "cli update")
    assert cli.main(["info", graph, "--sample", "0"]) == 0
    assert "change log   1 commits: 2 adds, 2 removes" in capsys.readouterr().out
    assert cli.main(["compact", graph]) == 0
    assert ie.Graph.open(graph).log_info()["commits"] == 0
    assert_same_graph(ie.Graph.open(graph), want, "cli compact")
    assert cli.main(["update", graph]) == 1
    assert "nothing to do" in capsys.readouterr().err


def test_a_failed_update_leaves_the_path_as_it_was(tmp_path, capsys):
    from instant_embedding import cli

    graph = tmp_path / "g.graph"
    ie.Graph.from_edges(["a", "b"], ["b", "c"]).save(graph)
    before = sorted(p.name for p in tmp_path.iterdir())
    bad = tmp_path / "bad.csv"
    bad.write_text("src,dst\na,b\nc\n")  # a line with one field: refused
    assert cli.main(["update", str(graph), "--add", str(bad)]) != 0
    assert "bad.csv" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "bad.csv"])
    # A writable graph that commits nothing leaves no log either; one that commits keeps it.
    with ie.Graph.open(graph, writable=True):
        pass
    assert not (tmp_path / "g.graph.live").exists()
    with ie.Graph.open(graph, writable=True) as g:
        g.add_edges(["a"], ["c"])
    assert (tmp_path / "g.graph.live").exists()


def test_save_of_a_live_graph_writes_its_current_state(tmp_path):
    path = str(tmp_path / "s.graph")
    ie.datasets.karate().save(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([0, 40], [40, 33])
        g.remove_edges([0], [1])
        g.save(tmp_path / "copy.graph")
        copy = ie.Graph.open(tmp_path / "copy.graph")
        assert copy.log_info() is None and copy.num_nodes == 41
        copy.validate()
        assert_same_graph(copy, g, "saved copy")


def test_reorder_and_validate_understand_live_graphs(tmp_path):
    path = str(tmp_path / "o.graph")
    ie.Graph.from_edges([5, 7, 9, 11], [7, 9, 11, 5], weights=[1.0, 2.0, 3.0, 4.0]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([1, 13, 8], [5, 7, 13], [0.5, 1.5, 2.5])  # ids below, above and between
        g.remove_edges([9], [11])
        assert g.permuted
        g.validate()
        r = g.reorder(tmp_path / "r.graph", method="bfs")
        assert r.log_info() is None and r.num_nodes == g.num_nodes == 7
        r.validate()
        assert_same_graph(r, g, "reordered live graph")


def test_read_ahead_on_a_deep_change_log_gives_the_same_results(tmp_path):
    # 2**17 nodes: a three-level tree, so opening with prefetch hints the pages above the leaves.
    n = 1 << 17
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    path = str(tmp_path / "deep.graph")
    ie.Graph.from_edges(src, dst, nodes=np.arange(n)).save(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges(rng.integers(0, n + 10, 4000), rng.integers(0, n, 4000))
        g.remove_edges(src[:3000], dst[:3000])
    final = ie.Graph.open(path)
    nodes = rng.integers(0, n, 40)
    model = ie.InstantEmbedding(dim=64, threads=1)
    plain = model.embed(final, nodes)
    ahead = model.embed(ie.Graph.open(path, prefetch=True), nodes)
    assert np.array_equal(plain, ahead)
    # The push with read-ahead over a compacted copy, too.
    final.save(tmp_path / "copy.graph")
    copy = ie.Graph.open(tmp_path / "copy.graph", prefetch=True)
    assert np.array_equal(plain, model.embed(copy, nodes))


def test_the_index_file_a_writer_leaves_never_changes_results(tmp_path):
    # A log of 4 levels whose 80,000+ changed rows are too many for a reader to index at open:
    # readers just opened load the index file the writer wrote, at a commit or when it closed.
    n = 1 << 17
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    path = tmp_path / "idx.graph"
    index = tmp_path / "idx.graph.live.index"
    ie.Graph.from_edges(src, dst, nodes=np.arange(n)).save(path)
    with ie.Graph.open(path, writable=True) as g:
        for k in range(4):
            g.add_edges(rng.integers(0, n + 10, 30_000), rng.integers(0, n, 30_000))
            g.remove_edges(src[k * 9000 : (k + 1) * 9000], dst[k * 9000 : (k + 1) * 9000])
        # Written by the open writer, at a commit that appended its size since the last.
        assert index.exists()
    assert index.exists() and ie.Graph.open(path).log_info()["changed_nodes"] > 65536
    nodes = rng.integers(0, n, 30)
    model = ie.InstantEmbedding(dim=64, threads=1)
    ie.Graph.open(path).save(tmp_path / "copy.graph")
    want = model.embed(ie.Graph.open(tmp_path / "copy.graph"), nodes)
    for prefetch in (False, True):
        assert np.array_equal(model.embed(ie.Graph.open(path, prefetch=prefetch), nodes), want)
    good = index.read_bytes()
    # Damaged, or of an older commit: readers ignore it.
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    index.write_bytes(bytes(bad))
    assert np.array_equal(model.embed(ie.Graph.open(path), nodes), want)
    index.unlink()
    assert np.array_equal(model.embed(ie.Graph.open(path), nodes), want)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([0, 1], [2, 3])
        index.write_bytes(good)  # (the writer of one small commit leaves it as it is)
    assert index.read_bytes() == good
    # The file of the commit before serves the new one, with the level it wrote.
    ie.Graph.open(path).save(tmp_path / "copy2.graph")
    want2 = model.embed(ie.Graph.open(tmp_path / "copy2.graph"), nodes)
    assert np.array_equal(model.embed(ie.Graph.open(path), nodes), want2)
    # Written on demand for the last commit, by a writer that stays open.
    with ie.Graph.open(path, writable=True) as g:
        assert g.write_index() and index.read_bytes() != good
        with pytest.raises(ValueError):
            ie.Graph.open(path).write_index()
    assert np.array_equal(model.embed(ie.Graph.open(path), nodes), want2)
    with ie.Graph.open(path, writable=True) as g:
        g.compact()
        assert not index.exists()
        assert not g.write_index()  # an empty log needs none
        assert not index.exists()
    final = ie.Graph.open(path)
    ref = ie.Graph.open(tmp_path / "copy.graph")
    assert final.num_edges == ref.num_edges + 2
    index.write_bytes(good)  # a stale file beside a log of no commits
    assert np.array_equal(model.embed(ie.Graph.open(path), nodes), model.embed(final, nodes))


# ------------------------------------------------------------------------------ file lifecycle


def _host_tag() -> str:
    """This host's part of temporary file names (`{pid}@{host hash}`), from a real one."""
    from instant_embedding import _core

    with tempfile.TemporaryDirectory() as d:
        b = _core.GraphBuilder(os.path.join(d, "t.graph"))
        name = next(n for n in os.listdir(d) if n.startswith(".t.graph.tmp-"))
        del b
    return name[len(".t.graph.tmp-") :].split("@", 1)[1][:8]


def test_converting_again_over_a_live_graph_discards_its_log(tmp_path):
    from instant_embedding import cli

    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n")
    add = tmp_path / "a.txt"
    add.write_text("2 3\n3 0\n")
    graph = str(tmp_path / "g.graph")
    assert cli.main(["convert", str(edges), graph, "-q"]) == 0
    assert cli.main(["update", graph, "--add", str(add), "-q"]) == 0
    assert ie.Graph.open(graph).num_edges == 4
    # The same input gives a byte-identical file: the log must not come back with it.
    ie.convert(edges, graph)
    assert ie.Graph.open(graph).num_edges == 2
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "e.txt", "g.graph"]
    # save and reorder over a live graph's path detach the log the same way.
    for write in (
        lambda: ie.Graph.open(graph).save(graph),
        lambda: ie.Graph.open(graph).reorder(graph, method="bfs"),
    ):
        assert cli.main(["update", graph, "--add", str(add), "-q"]) == 0
        assert ie.Graph.open(graph).num_edges == 4
        write()
        assert ie.Graph.open(graph).log_info() is None
        assert ie.Graph.open(graph).num_edges == 4  # the saved state had the changes
        ie.convert(edges, graph)
        assert ie.Graph.open(graph).num_edges == 2
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "e.txt", "g.graph"]


def test_convert_onto_a_foreign_log_refuses_before_replacing_anything(tmp_path):
    from instant_embedding import cli

    (tmp_path / "e.txt").write_text("0 1\n1 2\n")
    (tmp_path / "f.txt").write_text("5 6\n")
    graph, other = str(tmp_path / "g.graph"), str(tmp_path / "o.graph")
    assert cli.main(["convert", str(tmp_path / "e.txt"), graph, "-q"]) == 0
    assert cli.main(["convert", str(tmp_path / "f.txt"), other, "-q"]) == 0
    with ie.Graph.open(other, writable=True) as g:
        g.add_edges([5], [7])
    os.replace(other + ".live", graph + ".live")  # a log that belongs to o.graph
    before = open(graph, "rb").read()
    for argv in (["convert", str(tmp_path / "f.txt"), graph, "-q"],):
        assert cli.main(argv) != 0
    with pytest.raises(ie.GraphFormatError, match="another graph file"):
        ie.convert(tmp_path / "f.txt", graph)
    with pytest.raises(ie.GraphFormatError, match="another graph file"):
        ie.Graph.from_edges([0], [9]).save(graph)
    assert open(graph, "rb").read() == before
    names = ["e.txt", "f.txt", "g.graph", "g.graph.live", "o.graph"]
    assert sorted(os.listdir(tmp_path)) == names
    # A log without its graph file is refused too.
    os.remove(graph)
    with pytest.raises(ie.GraphFormatError, match="cannot be read"):
        ie.convert(tmp_path / "f.txt", graph)
    assert not os.path.exists(graph)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "instant_embedding",
            "convert",
            str(tmp_path / "f.txt"),
            graph,
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "g.graph.live" in r.stderr


def test_failed_commands_leave_no_lock_or_temporary_files(tmp_path):
    from instant_embedding import cli

    add = tmp_path / "a.txt"
    add.write_text("0 1\n")
    assert cli.main(["update", str(tmp_path / "missing.graph"), "--add", str(add)]) != 0
    with pytest.raises(FileNotFoundError):
        ie.Graph.open(tmp_path / "missing.graph", writable=True)
    assert os.listdir(tmp_path) == ["a.txt"]
    path = str(tmp_path / "w.graph")
    ie.Graph.from_edges([0], [1]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        # A writer holds the path: every other write of it refuses, leaving nothing.
        with pytest.raises(BlockingIOError):
            ie.Graph.from_edges([0], [2]).save(path)
        with pytest.raises(BlockingIOError):
            ie.convert(add, path)
        g.add_edges([1], [2])
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "w.graph", "w.graph.live"]


def test_leftovers_of_a_killed_writer_are_removed_whatever_their_process_id(tmp_path):
    path = str(tmp_path / "k.graph")
    ie.Graph.from_edges([0, 1], [1, 2]).save(path)
    host = _host_tag()
    # Pid 1 runs: a reused process id must not protect a killed compaction's files.
    left = [
        f".k.graph.tmp-1@{host}-compacted",
        f".k.graph.tmp-1@{host}-compacted.live",
        f".k.graph.live.index.tmp-1@{host}-0badcafe",
    ]
    keep = [".k.graph.tmp-1@00000000-compacted", f".other.graph.tmp-1@{host}-x"]
    for name in left + keep:
        (tmp_path / name).write_bytes(b"x" * 100)
    ie.Graph.open(path, writable=True).close()  # commits nothing: leaves no log either
    assert sorted(os.listdir(tmp_path)) == sorted(["k.graph", *keep])
    for name in left:
        (tmp_path / name).write_bytes(b"x" * 100)
    ie.Graph.from_edges([0], [1]).save(path)  # any write of the path
    assert sorted(os.listdir(tmp_path)) == sorted(["k.graph", *keep])


def _commits(path: str, k: int) -> Reference:
    ref = Reference("str", False, False, "sum")
    for a, b in [("a", "b"), ("b", "c"), ("c", "d")]:
        ref.add(a, b)
    ref.build().save(path)
    with ie.Graph.open(path, writable=True) as g:
        for i in range(k):
            g.add_edges([f"n{i}", "a"], ["a", f"m{i}"])
            ref.add(f"n{i}", "a")
            ref.add("a", f"m{i}")
            if i % 2:
                g.remove_edges(["b"], ["c"])
                ref.remove("b", "c")
    return ref


@pytest.mark.parametrize("commits", [1, 2, 3, 4])
@pytest.mark.parametrize("how", ["compact", "save"])
def test_the_crash_window_between_the_renames(tmp_path, commits, how):
    """Hard links keep the old files as a killed writer would have left them: the old log
    (with the mark written in place before the renames) beside the new file, and beside the
    old file. Odd and even commit counts put the newest commit in either slot."""
    path = str(tmp_path / "x.graph")
    ref = _commits(path, commits)
    want = ref.build()
    commits = ie.Graph.open(path).log_info()["commits"]  # 1, 3, 4, 6: odd and even
    os.link(path, tmp_path / "old.graph")
    os.link(path + ".live", tmp_path / "old.live")
    head = open(path + ".live", "rb").read(256)
    if how == "compact":
        with ie.Graph.open(path, writable=True) as g:
            g.compact()
    else:
        ie.Graph.open(path).save(path)  # the folded state over its own path
    marked = open(tmp_path / "old.live", "rb").read()
    changed = [s for s in (128, 192) if marked[s : s + 64] != head[s : s + 64]]
    # The mark goes to the slot that does not hold the newest commit.
    assert changed == [128 + 64 * ((commits + 1) % 2)], changed

    def state(base: str, log: bytes) -> str:
        d = tmp_path / f"state-{len(os.listdir(tmp_path))}"
        d.mkdir()
        p = str(d / "x.graph")
        with open(p, "wb") as f:
            f.write(open(base, "rb").read())
        with open(p + ".live", "wb") as f:
            f.write(log)
        return p

    # After the first rename: the new file with the old, marked log. The log is ignored.
    p = state(path, marked)
    g = ie.Graph.open(p)
    assert g.log_info()["commits"] == 0
    assert_same_graph(g, want, "new file beside the old log")
    with ie.Graph.open(p, writable=True) as w:  # the next writer replaces the dead log
        assert w.log_info()["commits"] == 0
        w.add_edges(["z"], ["a"])
    ref.add("z", "a")
    assert_same_graph(ie.Graph.open(p), ref.build(), "a commit after recovery")
    # Before the renames, after the mark: the old file with its marked log shows every commit.
    p = state(str(tmp_path / "old.graph"), marked)
    assert ie.Graph.open(p).log_info()["commits"] == commits
    assert_same_graph(ie.Graph.open(p), want, "old file with its marked log")
    # A torn mark (power loss while writing it) leaves the newest commit.
    torn = bytearray(marked)
    torn[changed[0] : changed[0] + 64] = os.urandom(64)
    p = state(str(tmp_path / "old.graph"), bytes(torn))
    assert ie.Graph.open(p).log_info()["commits"] == commits
    assert_same_graph(ie.Graph.open(p), want, "old file with a torn mark")
    # The next write of the path after the killed one removes the dead log.
    p = state(path, marked)
    ie.Graph.open(p).save(p)
    assert not os.path.exists(p + ".live")


def test_a_commit_that_creates_nodes_without_changing_a_row(tmp_path):
    path = str(tmp_path / "n.graph")
    ie.Graph.from_edges(["a", "b"], ["b", "c"]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        with g.batch():
            g.add_edges(["a"], ["new"])
            g.remove_edges(["a"], ["new"])
        assert g.num_nodes == 4 and g.degree("new") == 0
    want = ie.Graph.from_edges(["a", "b"], ["b", "c"], nodes=["new"])
    out = tmp_path / "child.npy"
    r = subprocess.run(
        [sys.executable, "-c", CHILD_EMBED, path, str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    nodes = eval(r.stdout)  # noqa: S307 (our own child's repr of a list of str)
    assert "new" in nodes
    rebuilt = MODEL.embed(want, nodes)
    assert np.array_equal(np.load(out).view(np.uint32), rebuilt.view(np.uint32))
    live = ie.Graph.open(path)
    assert live.log_info()["new_nodes"] == 1
    assert_same_graph(live, want, "a created node without a row")
    with ie.Graph.open(path, writable=True) as g:
        g.compact()
    assert_same_graph(ie.Graph.open(path), want, "compacted")


def test_engines_copy_a_remote_graph_with_its_change_log(tmp_path):
    pytest.importorskip("fsspec")
    from instant_embedding.batch import clear_cache, embed_batch, local_graph_path

    src = tmp_path / "remote"
    src.mkdir()
    path = str(src / "r.graph")
    ie.datasets.karate().save(path)
    cache = tmp_path / "cache"
    uri = (src / "r.graph").as_uri()
    plain = local_graph_path(uri, cache_dir=cache)
    assert not os.path.exists(plain + ".live")
    seen = {plain}
    with ie.Graph.open(path, writable=True) as g:
        for k in range(3):
            g.add_edges([0, 40 + k], [40 + k, 33])
            g.remove_edges([k + 1], [0])
            local = local_graph_path(uri, cache_dir=cache)
            assert local not in seen and os.path.exists(local + ".live")  # one copy per commit
            seen.add(local)
            assert local_graph_path(uri, cache_dir=cache) == local
            copy = ie.Graph.open(local)
            assert copy.log_info()["commits"] == 2 * (k + 1)
            assert_same_graph(copy, ie.Graph.open(path), f"copy at commit {k + 1}")
            nodes = list(g.nodes)
            want = MODEL.embed(ie.Graph.open(path), nodes)
            got = embed_batch(uri, nodes, model=MODEL, cache_dir=cache)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        # Bytes of an interrupted commit past the committed end are not a new commit.
        with open(path + ".live", "ab") as f:
            f.write(b"\x01" * 999)
        assert local_graph_path(uri, cache_dir=cache) == local
        g.compact()
    compacted = local_graph_path(uri, cache_dir=cache)
    assert compacted not in seen
    assert_same_graph(ie.Graph.open(compacted), ie.Graph.open(path), "compacted copy")
    # A log the copy cannot read is refused, never skipped.
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([1], [2])
    data = bytearray(open(path + ".live", "rb").read())
    data[300] ^= 0xFF
    open(path + ".live", "wb").write(bytes(data))
    with pytest.raises(ie.GraphFormatError, match="r.graph.live"):
        local_graph_path(uri, cache_dir=cache)
    clear_cache(files=True, cache_dir=cache)
    assert os.listdir(cache) == []


def test_engines_copy_a_remote_live_graphs_index_file_when_it_serves(tmp_path):
    pytest.importorskip("fsspec")
    from instant_embedding.batch import local_graph_path

    src = tmp_path / "remote"
    src.mkdir()
    path = str(src / "r.graph")
    rng = np.random.default_rng(3)
    n = 3000
    ie.Graph.from_edges(rng.integers(0, n, 9000), rng.integers(0, n, 9000)).save(path)
    cache, uri = tmp_path / "cache", (src / "r.graph").as_uri()
    index = path + ".live.index"
    nodes = list(range(0, n, 97))
    with ie.Graph.open(path, writable=True) as g:
        for _ in range(4):
            g.add_edges(rng.integers(0, n, 800), rng.integers(0, n, 800))
        assert os.path.exists(index)
        local = local_graph_path(uri, cache_dir=cache)
        # The copy has the source's index file, and reads as the source does.
        assert open(local + ".live.index", "rb").read() == open(index, "rb").read()
        want = MODEL.embed(ie.Graph.open(path), nodes)
        assert np.array_equal(MODEL.embed(ie.Graph.open(local), nodes), want)
        # A damaged one is not copied (the copy itself is made).
        good = open(index, "rb").read()
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x40
        g.add_edges([1], [2])
        open(index, "wb").write(bytes(bad))
        local = local_graph_path(uri, cache_dir=cache)
        assert os.path.exists(local + ".live") and not os.path.exists(local + ".live.index")
        assert np.array_equal(
            MODEL.embed(ie.Graph.open(local), nodes), MODEL.embed(ie.Graph.open(path), nodes)
        )
        # One of an earlier commit that the new commit builds on serves it: copied.
        g.add_edges([3], [4])
        open(index, "wb").write(good)
        local = local_graph_path(uri, cache_dir=cache)
        assert open(local + ".live.index", "rb").read() == good


KILL_COMPACTOR = rf"""
import os, sys, instant_embedding as ie, numpy as np
say = lambda word, k: os.write(1, f"{{word}} {{k}}\n".encode())
path = sys.argv[1]
g = ie.Graph.open(path, writable=True)
k = sum(1 for x in g.nodes if x >= {HUB_BASE})
say("ready", k)
while True:
    hub = np.full({WIDTH}, {HUB_BASE} + k, dtype=np.int64)
    g.add_edges(hub, np.arange({WIDTH}, dtype=np.int64) * 3)
    say("acked", k)
    k += 1
    g.compact()
"""


def test_sigkill_during_compaction_before_and_after_the_rename(tmp_path):
    """Kills a writer that commits and compacts in a loop, at the moment its compacted file
    appears (before the rename) or the graph path names a new file (after the first rename);
    each kill is counted by the state it left. Every acknowledged batch survives, nothing else
    is torn, and the next writer removes what the killed one left."""
    path = str(tmp_path / "kc.graph")
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 20_000, 150_000) * 3, rng.integers(0, 20_000, 150_000) * 3
    ie.Graph.from_edges(src, dst).save(path)
    base_edges = ie.Graph.open(path).num_edges
    acked = -1
    seen = {"before": 0, "after": 0}
    kills = int(os.environ.get("IE_LIVE_KILLS", "12"))
    for i in range(kills):
        ino = os.stat(path).st_ino
        p = ForkedScript(KILL_COMPACTOR, path)
        lines = [p.stdout.readline().split()]
        assert lines[0] and lines[0][0] == "ready", p.stderr.read()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if i % 2 == 0:
                if any(n.endswith("-compacted") for n in os.listdir(tmp_path)):
                    break
            elif os.stat(path).st_ino != ino:
                break
        p.send_signal(signal.SIGKILL)
        out = killed_output(p)
        lines += [x.split() for x in out.splitlines()]
        acked = max([acked] + [int(x[1]) for x in lines if x[0] == "acked"])
        replaced = os.stat(path).st_ino != ino
        seen["after" if replaced else "before"] += 1
        g = ie.Graph.open(path)
        hubs = sorted(x for x in g.nodes if x >= HUB_BASE)
        assert hubs == list(range(HUB_BASE, HUB_BASE + len(hubs))), "a torn or missing batch"
        assert all(g.degree(h) == WIDTH for h in hubs), "a torn batch"
        assert acked + 1 <= len(hubs) <= acked + 2
        assert g.num_edges == base_edges + len(hubs) * WIDTH
        g.validate()
        del g
        with ie.Graph.open(path, writable=True):
            pass  # the next writer removes the killed one's files
        names = sorted(os.listdir(tmp_path))
        assert names == ["kc.graph", "kc.graph.live"], names
    print(f"{kills} kills during compaction: {seen}")
    assert seen["before"] >= 1 and seen["after"] >= 1, seen


# ------------------------------------------------------------------------------ node removal


@pytest.mark.parametrize(
    "kind,directed,weighted",
    [("implicit", False, False), ("int64", True, True), ("utf8", False, True)],
)
def test_remove_nodes_equals_a_rebuild_without_them(tmp_path, kind, directed, weighted):
    from helpers import dense_adjacency, exact_ppr_matrix
    from instant_embedding.embedding import _DEFAULTS, DEFAULT_ALPHA

    VARIANT = _DEFAULTS.variant
    ref = Reference(kind, directed, weighted, "sum")
    rng = random.Random(8)
    path = base_graph(tmp_path, ref, rng, span=30)
    with ie.Graph.open(path, writable=True) as g:
        ks = [rng.randrange(45) for _ in range(40)]
        ids = ids_of(kind, ks)
        ws = [rng.choice([0.5, 1.0, 2.0]) for _ in ks[:20]]
        g.add_edges(ids[:20], ids[20:], ws if weighted else None)
        for a, b, w in zip(ids[:20], ids[20:], ws):
            ref.add(a, b, w)
        g.add_edges(ids[:1], ids[:1], [1.5] if weighted else None)  # a self-loop
        ref.add(ids[0], ids[0], 1.5)
        nodes = sorted(ref.nodes, key=str)
        gone = rng.sample(nodes, 6) + [ids[0]]  # the self-loop's node too
        unknown = "nobody" if kind == "utf8" else 10**12
        arg = [*gone, unknown, gone[0]]  # unknown and repeated ids are ignored
        if kind != "utf8":
            arg = np.array(arg, dtype=np.int64)
        assert g.remove_nodes(arg) == len(set(gone))
        assert g.log_info()["commits"] == 0 and not any(x in g for x in gone)
    keep = sorted(ref.nodes - set(gone))
    edges = {k: w for k, w in ref.edges.items() if k[0] not in gone and k[1] not in gone}
    src = [a for a, _ in edges]
    dst = [b for _, b in edges]
    wts = np.array(list(edges.values()), dtype=np.float32) if weighted else None
    if kind != "utf8":
        src, dst = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
    want = ie.Graph.from_edges(src, dst, directed=directed, weights=wts, nodes=keep)
    got = ie.Graph.open(path)
    got.validate()
    assert list(got.nodes) == list(want.nodes) == keep
    assert_same_graph(got, want, "after remove_nodes")
    # Exact PPR of the remaining edge list (dense solve) as a second oracle.
    pos = {v: i for i, v in enumerate(keep)}
    W = dense_adjacency(
        [pos[a] for a in src], [pos[b] for b in dst], len(keep), wts, directed=directed
    )
    for seed in keep[:: max(1, len(keep) // 4)]:
        exact = exact_ppr_matrix(W, pos[seed], DEFAULT_ALPHA, VARIANT)[pos[seed]]
        at, p = ie.ppr(got, seed, eps=1e-9)
        dense = np.zeros(len(keep))
        dense[[pos[x] for x in at]] = p
        assert np.abs(dense - exact).max() < 1e-6


def test_removed_ids_are_gone_from_every_file(tmp_path):
    from instant_embedding import cli

    path = str(tmp_path / "e.graph")
    secret = ["erase-me-7f3a", "erase-me-91c2"]
    ie.Graph.from_edges(["a", "b", secret[0]], ["b", "c", "a"]).save(path)
    with ie.Graph.open(path, writable=True) as g:
        g.add_edges([secret[1], secret[1], "c"], ["a", secret[0], "d"])  # ids in the log
        g.remove_edges([secret[0]], ["a"])

    def holders() -> list:
        return [
            p.name
            for p in tmp_path.iterdir()
            if p.is_file() and any(s.encode() in p.read_bytes() for s in secret)
        ]

    assert sorted(holders()) == ["e.graph", "e.graph.live"]
    ids = tmp_path / "gone.txt"
    ids.write_text("# ids to erase\n" + "\n".join(secret) + "\nnot-a-node\n")
    assert cli.main(["update", path, "--remove-nodes", str(ids), "-q"]) == 0
    ids.unlink()
    assert holders() == []
    assert sorted(os.listdir(tmp_path)) == ["e.graph", "e.graph.live"]
    g = ie.Graph.open(path)
    assert sorted(g.nodes) == ["a", "b", "c", "d"] and g.num_edges == 3
    with ie.Graph.open(path, writable=True) as w:
        w.add_edges(["d"], ["a"])
        w.compact()
    assert holders() == []
    assert_same_graph(
        ie.Graph.open(path),
        ie.Graph.from_edges(["a", "b", "c", "d"], ["b", "c", "d", "a"]),
        "erased",
    )
    # Inside a batch, or with staged changes, it refuses (nothing is half done).
    with ie.Graph.open(path, writable=True) as w:
        with pytest.raises(ValueError, match="batch"):
            with w.batch():
                w.add_edges(["x"], ["a"])
                w.remove_nodes(["a"])
    assert "x" not in ie.Graph.open(path) and "a" in ie.Graph.open(path)


def test_shipping_a_live_graph_ships_its_changes(tmp_path):
    from instant_embedding import batch

    path = str(tmp_path / "s.graph")
    ie.datasets.karate().save(path)
    key = batch.header_digest(path)
    assert batch.ship_file(path)[1] == key
    with ie.Graph.open(path, writable=True) as g:
        assert batch.ship_file(path)[1] == key  # an empty log: the file as it is
        g.add_edges([0, 40], [40, 33])
        g.remove_edges([0], [1])
    shipped, folded_key = batch.ship_file(path)
    assert folded_key != key and not os.path.exists(shipped + ".live")
    assert_same_graph(ie.Graph.open(shipped), ie.Graph.open(path), "folded copy")
    pytest.importorskip("distributed")
    from instant_embedding import dask as ie_dask

    class Client:
        def register_plugin(self, plugin, name):
            self.plugin = plugin

    client = Client()
    shipped_as = ie_dask._ship(path, client)
    (tmp_path / "got.graph").write_bytes(client.plugin.data)
    assert shipped_as is not None and shipped_as[1] == folded_key
    assert_same_graph(ie.Graph.open(tmp_path / "got.graph"), ie.Graph.open(path), "dask ship")
