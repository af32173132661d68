"""Out-of-core builder (`_core.GraphBuilder`) and text reader (`_core.convert_native`)."""

from __future__ import annotations

import bz2
import gzip
import os

import instant_embedding as ie
import numpy as np
import pytest
import scipy.sparse as sp
from helpers import read_graph_file
from instant_embedding import _core
from instant_embedding.errors import GraphFormatError

TINY = 4096  # memory_limit that forces spilling, many buckets and external sorts


def _edges(seed: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=m)
    dst = np.where(rng.random(m) < 0.3, 0, rng.integers(0, n, size=m))  # node 0 is a hub
    w = rng.choice(np.array([0.5, 1.0, 2.0, 1e-3]), size=m)
    return src, dst, w


def _build(path, src, dst, weights=None, chunk=1000, **kw):
    b = _core.GraphBuilder(os.fspath(path), **kw)
    for i in range(0, len(src), chunk):
        b.add_edges(
            src[i : i + chunk],
            dst[i : i + chunk],
            None if weights is None else weights[i : i + chunk],
        )
    return b.finish()


def convert_text(inputs, output, progress=None, **kw):
    """The kernel's text reader (``_core.convert_native``) with the options' defaults."""
    opts = _core.ReadOptions(**{"format": "edgelist", **kw})
    return _core.convert_native(inputs, output, opts, progress=progress)


def _only_files(d) -> list[str]:
    return sorted(os.listdir(d))


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("memory_limit", [1 << 30, TINY])
@pytest.mark.parametrize("ids", ["dense", "sparse", "str"])
def test_builder_equals_from_edges(tmp_path, directed, weighted, memory_limit, ids):
    src, dst, w = _edges(1, 400, 3000)
    if ids == "sparse":
        src, dst = src * 1009 - 7000, dst * 1009 - 7000
    elif ids == "str":
        src = np.array([f"user-{x}" for x in src])
        dst = np.array([f"user-{x}" for x in dst])
    ref = ie.Graph.from_edges(src, dst, directed=directed, weights=w if weighted else None)
    ref.save(tmp_path / "ref.graph")
    stats = _build(
        tmp_path / "ext.graph",
        src.tolist() if ids == "str" else src,
        dst.tolist() if ids == "str" else dst,
        w if weighted else None,
        directed=directed,
        weighted=weighted,
        id_kind="str" if ids == "str" else "auto",
        memory_limit=memory_limit,
    )
    g = ie.Graph.open(tmp_path / "ext.graph")
    g.validate()
    # Same file, byte for byte; hence the same CSR, ids and weights.
    assert (tmp_path / "ext.graph").read_bytes() == (tmp_path / "ref.graph").read_bytes()
    assert stats["num_nodes"] == ref.num_nodes and stats["num_edges"] == ref.num_edges
    assert stats["input_edges"] == len(src)
    if memory_limit == TINY:
        assert stats["segments"] > 1 and stats["buckets"] > 1
    node = src[5]
    assert list(g.neighbors(node)) == list(ref.neighbors(node))
    assert _only_files(tmp_path) == ["ext.graph", "ref.graph"]


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ids", ["dense", "sparse", "str"])
def test_builder_against_an_independent_oracle(tmp_path, directed, weighted, ids):
    """The out-of-core builder, spilling, against scipy.sparse built from the raw edge list,
    read back with a numpy parser of the file (not the library's reader): nodes in id order,
    rows of sorted distinct neighbours, duplicate weights summed (multiples of 1/8, exact in
    any order), strengths the row sums, the edge count. (``from_edges`` shares the row merging
    and file writing with this builder, so comparing the two alone would miss a bug there.)"""
    rng = np.random.default_rng(17)
    n, m = 300, 2500
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.3, 0, rng.integers(0, n, m))
    dst[:40] = src[:40]  # self-loops
    src[40:80], dst[40:80] = src[100:140], dst[100:140]  # repeated edges
    src[80:100], dst[80:100] = dst[140:160], src[140:160]  # the same edges reversed
    w = rng.integers(1, 16, m) / 8
    if ids == "sparse":
        src, dst = src * 1009 - 7000, dst * 1009 - 7000
    elif ids == "str":
        src = np.array([f"user-{x}" for x in src])
        dst = np.array([f"user-{x}" for x in dst])
    _build(
        tmp_path / "ext.graph",
        src.tolist() if ids == "str" else src,
        dst.tolist() if ids == "str" else dst,
        w if weighted else None,
        directed=directed,
        weighted=weighted,
        id_kind="str" if ids == "str" else "auto",
        memory_limit=TINY,
    )
    nodes = sorted(set(src.tolist()) | set(dst.tolist()))
    pos = {v: i for i, v in enumerate(nodes)}
    si = np.array([pos[v] for v in src.tolist()])
    di = np.array([pos[v] for v in dst.tolist()])
    if not directed:  # both directions, a self-loop once
        off = si != di
        si, di, w = np.r_[si, di[off]], np.r_[di, si[off]], np.r_[w, w[off]]
    a = sp.coo_matrix((w, (si, di)), shape=(len(nodes), len(nodes))).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    f = read_graph_file(tmp_path / "ext.graph")
    assert (f["num_nodes"], f["directed"], f["weighted"]) == (len(nodes), directed, weighted)
    assert f["ids"] == nodes
    assert f["id_kind"] == {"dense": "implicit", "sparse": "int64", "str": "utf8"}[ids]
    np.testing.assert_array_equal(f["indptr"], a.indptr)
    np.testing.assert_array_equal(f["indices"], a.indices)
    loops = int(np.count_nonzero(a.diagonal()))
    assert f["num_arcs"] == a.nnz
    assert f["num_edges"] == (a.nnz if directed else (a.nnz + loops) // 2)
    if weighted:
        np.testing.assert_array_equal(f["weights"], a.data.astype(np.float32))
        np.testing.assert_array_equal(f["strength"], np.asarray(a.sum(axis=1)).ravel())
    else:
        assert f["weights"] is None and f["strength"] is None


def test_implicit_ids_num_nodes_self_loops_and_merge(tmp_path):
    p = tmp_path / "g.graph"
    s = _build(
        p,
        np.array([0, 1, 1, 2, 2]),
        np.array([1, 0, 1, 2, 2]),
        np.array([1.0, 2.0, 5.0, 1.0, 4.0], dtype=np.float32),
        weighted=True,
        id_kind="implicit",
        num_nodes=6,
        self_loops="drop",
        merge="max",
    )
    g = ie.Graph.open(p)
    assert (g.num_nodes, g.id_kind, g.num_edges) == (6, "implicit", 1)
    assert s["self_loops_dropped"] == 3 and s["duplicates_merged"] == 1
    assert g.edge_weights(0).tolist() == [2.0]  # max of 1 and 2
    assert g.degree(5) == 0
    g.validate()


def test_builder_context_manager_abort_and_errors(tmp_path):
    p = tmp_path / "g.graph"
    p.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="boom"):
        with _core.GraphBuilder(os.fspath(p), memory_limit=TINY) as b:
            b.add_edges(np.arange(5000), np.arange(1, 5001))
            raise RuntimeError("boom")
    assert p.read_bytes() == b"previous"
    assert _only_files(tmp_path) == ["g.graph"]
    with pytest.raises(RuntimeError, match="finished or aborted"):
        b.add_edges(np.arange(2), np.arange(2))

    with _core.GraphBuilder(os.fspath(p), id_kind="str") as b:
        b.add_edges(["a", "b"], ["b", "c"])
        with pytest.raises(TypeError):
            b.add_edges(np.arange(2), np.arange(2))
        with pytest.raises(ValueError, match="weights given"):
            b.add_edges(["a"], ["b"], np.ones(1))
    assert b.stats["num_nodes"] == 3
    assert ie.Graph.open(p).nodes == ["a", "b", "c"]

    b = _core.GraphBuilder(os.fspath(p), weighted=True)
    for bad in (np.nan, np.inf, -1.0, 0.0, 1e300):
        with pytest.raises(ValueError, match="edge 0"):
            b.add_edges(np.array([0]), np.array([1]), np.array([bad]))
    with pytest.raises(ValueError, match="give weights"):
        b.add_edges(np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="different lengths"):
        b.add_edges(np.array([0, 1]), np.array([1]), np.ones(2))
    with pytest.raises(TypeError, match="int64"):
        b.add_edges(np.array([0.5]), np.array([1.0]), np.ones(1))
    b.abort()
    b = _core.GraphBuilder(os.fspath(p), id_kind="implicit", num_nodes=3)
    with pytest.raises(ValueError, match="outside 0..num_nodes-1"):
        b.add_edges(np.array([0]), np.array([3]))
    b.abort()
    for kw in (
        {"id_kind": "float"},
        {"self_loops": "maybe"},
        {"merge": "min"},
        {"memory_limit": 10},
        {"id_kind": "str", "num_nodes": 4},
    ):
        with pytest.raises(ValueError):
            _core.GraphBuilder(os.fspath(p), **kw)
    with pytest.raises(FileNotFoundError):
        _core.GraphBuilder(os.fspath(tmp_path / "no" / "g.graph"))
    assert ie.Graph.open(p).nodes == ["a", "b", "c"]  # aborted builds left it alone
    assert _only_files(tmp_path) == ["g.graph"]


def test_finish_progress_and_interrupt(tmp_path):
    p = tmp_path / "g.graph"
    b = _core.GraphBuilder(os.fspath(p), memory_limit=TINY)
    b.add_edges(np.arange(20000), np.arange(1, 20001))
    calls = []
    s = b.finish(progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1]
    assert s["num_edges"] == 20000
    assert b.finish() == s  # idempotent

    def interrupt(done, total):
        raise KeyboardInterrupt

    p2 = tmp_path / "h.graph"
    b = _core.GraphBuilder(os.fspath(p2), memory_limit=TINY)
    b.add_edges(np.arange(20000), np.arange(1, 20001))
    with pytest.raises(KeyboardInterrupt):
        b.finish(progress=interrupt)
    assert _only_files(tmp_path) == ["g.graph"]


# ---------------------------------------------------------------------------- text files

SNAP = b"""# Directed graph (each unordered pair of nodes is saved once): toy.txt
# Nodes: 5 Edges: 6
# FromNodeId\tToNodeId
0\t1
0\t2
1\t2
% a comment in another style

3\t4\r
4\t0
4\t0
"""


def _convert(tmp_path, content: bytes | str, name="in.txt", **kw):
    f = tmp_path / name
    data = content.encode() if isinstance(content, str) else content
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".bz2"):
        data = bz2.compress(data)
    f.write_bytes(data)
    out = tmp_path / "out.graph"
    stats = convert_text([os.fspath(f)], os.fspath(out), **kw)
    g = ie.Graph.open(out)
    g.validate()
    return g, stats


@pytest.mark.parametrize("name", ["in.txt", "in.txt.gz", "in.bz2"])
def test_text_snap_file(tmp_path, name):
    g, s = _convert(tmp_path, SNAP, name)
    ref = ie.Graph.from_edges([0, 0, 1, 3, 4, 4], [1, 2, 2, 4, 0, 0])
    assert g.num_nodes == 5 and g.id_kind == "implicit"
    for v in range(5):
        assert list(g.neighbors(v)) == list(ref.neighbors(v))
    assert s["edge_lines"] == 6 and s["duplicates_merged"] == 1 and s["lines"] == 11


def test_text_csv_header_columns_weights(tmp_path):
    csv = "time,weight,to,from\n1,0.5,b,a\n2,2,c,b\n3,1.5,b,a\n"
    g, s = _convert(
        tmp_path,
        csv,
        "in.csv",
        format="csv",
        directed=True,
        weighted=True,
        header=True,
        src_col=3,
        dst_col=2,
        weight_col=1,
    )
    assert g.id_kind == "utf8" and g.nodes == ["a", "b", "c"]
    assert g.edge_weights("a").tolist() == [2.0]  # 0.5 + 1.5
    assert s["num_edges"] == 2 and s["passes"] == 1


def test_text_several_files_and_ids(tmp_path):
    (tmp_path / "a.txt").write_text("10 20\n20 30\n")
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(b"30 -4\n"))
    out = tmp_path / "o.graph"
    files = [os.fspath(tmp_path / "a.txt"), os.fspath(tmp_path / "b.txt.gz")]
    s = convert_text(files, os.fspath(out))
    g = ie.Graph.open(out)
    assert g.id_kind == "int64" and g.nodes.tolist() == [-4, 10, 20, 30]
    assert s["input_edges"] == 3
    s = convert_text(files, os.fspath(out), id_kind="str")
    assert ie.Graph.open(out).nodes == ["-4", "10", "20", "30"]
    # An integer file followed by a string id re-reads everything as strings.
    (tmp_path / "c.txt").write_text("30 x\n")
    s = convert_text(files + [os.fspath(tmp_path / "c.txt")], os.fspath(out))
    assert s["passes"] == 2 and "x" in ie.Graph.open(out)


@pytest.mark.parametrize(
    "content,kw,match",
    [
        ("1 2\n3\n", {}, r"in\.txt:2: found 1 column, but line 1 has 2; .*format='adjlist': '3'"),
        (
            "# h\n1 2 3\n4 5\n",
            {},
            r"in\.txt:2: 3 fields, but an edge is read from 2: pass weighted=",
        ),
        ("# h\n1 2 3\n4 5\n", {"weighted": False}, r"in\.txt:3: found 2 columns, but line 2 has 3"),
        ("1\n", {}, r"in\.txt:1: found 1 column \(whitespace delimiter\), but an edge needs 2"),
        ("1 2 abc\n", {"weighted": True}, r"in\.txt:1: non-numeric weight"),
        ("1 2 1\n1 3 nan\n", {"weighted": True}, r"in\.txt:2: weight 'nan' is NaN"),
        ("1 2 inf\n", {"weighted": True}, r"in\.txt:1: weight 'inf' is infinite"),
        ("1 2 -2.5\n", {"weighted": True}, r"in\.txt:1: weight '-2\.5' is <= 0"),
        ("1 2 0\n", {"weighted": True}, r"in\.txt:1: weight '0' is <= 0"),
        (
            "1 2\n3 123456789012345678901\n",
            {"id_kind": "int"},
            r"in\.txt:2: id 123456789012345678901 overflows",
        ),
        ("1 2\n1 -1\n", {"num_nodes": 3}, r"in\.txt:2: node id -1 is negative"),
        ("1 2\n1 a\n", {"id_kind": "int"}, r"in\.txt:2: id 'a' is not an integer"),
        ("", {}, r"in\.txt: empty file"),
        ("# nothing\n\n", {}, r"no edges found"),
    ],
)
def test_text_errors(tmp_path, content, kw, match):
    with pytest.raises(GraphFormatError, match=match):
        _convert(tmp_path, content, **kw)
    assert _only_files(tmp_path) == ["in.txt"]  # no output, no temporary files


def test_text_error_keeps_existing_output(tmp_path):
    out = tmp_path / "out.graph"
    out.write_bytes(b"old")
    # The bad line comes after many spilled edges.
    lines = "".join(f"{i} {i + 1}\n" for i in range(20000)) + "1 2 3\n"
    (tmp_path / "in.txt").write_text(lines)
    with pytest.raises(GraphFormatError, match=r"in\.txt:20001:"):
        convert_text([os.fspath(tmp_path / "in.txt")], os.fspath(out), memory_limit=TINY)
    assert out.read_bytes() == b"old"
    assert _only_files(tmp_path) == ["in.txt", "out.graph"]


def test_text_parameter_errors(tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("1 2\n")
    out = os.fspath(tmp_path / "o.graph")
    with pytest.raises(ValueError, match="weighted"):
        convert_text([os.fspath(f)], out, weight_col=2, weighted=False)
    with pytest.raises(ValueError, match="delimiter"):
        convert_text([os.fspath(f)], out, delimiter="ab")
    with pytest.raises(ValueError, match="same column"):
        convert_text([os.fspath(f)], out, dst_col=0)
    with pytest.raises(FileNotFoundError):
        convert_text([os.fspath(tmp_path / "missing.txt")], out)
    with pytest.raises(ValueError, match="no input"):
        convert_text([], out)


def test_text_progress_and_interrupt(tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("".join(f"{i} {i * 7 % 1000}\n" for i in range(30000)))
    seen = []
    convert_text(
        [os.fspath(f)], os.fspath(tmp_path / "o.graph"), progress=lambda d, t: seen.append((d, t))
    )
    size = f.stat().st_size
    assert seen and seen[-1] == (size, size) and all(d <= t == size for d, t in seen)

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert_text([os.fspath(f)], os.fspath(tmp_path / "p.graph"), progress=stop)
    assert _only_files(tmp_path) == ["in.txt", "o.graph"]


def test_string_ids_end_to_end_and_embeddings_match(tmp_path):
    rng = np.random.default_rng(3)
    names = [f"node-{i:03d}" for i in range(120)]
    src = rng.integers(0, 120, 600)
    dst = rng.integers(0, 120, 600)
    keep = src != dst
    lines = [f"{names[a]}\t{names[b]}\n" for a, b in zip(src[keep], dst[keep])]
    g, s = _convert(tmp_path, "# names\n" + "".join(lines), "e.tsv.gz", memory_limit=TINY)
    assert g.id_kind == "utf8" and s["segments"] > 0
    ref = ie.Graph.from_edges([names[a] for a in src[keep]], [names[b] for b in dst[keep]])
    model = ie.InstantEmbedding(dim=32, seed=5)
    nodes = ["node-007", "node-042", "node-119"]
    a = model.embed(g, nodes)
    b = model.embed(ref, nodes)
    assert a.shape == (3, 32) and np.array_equal(a, b)
    assert np.array_equal(model.embed_all(g), model.embed_all(ref))


def test_int_text_embeddings_match_from_edges(tmp_path):
    src, dst, w = _edges(9, 300, 2000)
    text = "".join(f"{a} {b} {x}\n" for a, b, x in zip(src, dst, w))
    g, _ = _convert(tmp_path, text, weighted=True, memory_limit=TINY)
    ref = ie.Graph.from_edges(src, dst, weights=w)
    model = ie.InstantEmbedding(dim=16)
    assert np.array_equal(model.embed_all(g), model.embed_all(ref))


def test_memory_limit_counts_the_per_node_structures(tmp_path):
    # 100k edges among 150k random int64 ids: the edges alone (800 KB) fit half of a 4 MiB
    # budget, but the id map and counters (~20 B per node) take most of it, so the builder
    # must spill instead of holding everything in memory.
    rng = np.random.default_rng(5)
    ids = rng.choice(np.int64(1) << 50, size=150_000, replace=False) - (np.int64(1) << 49)
    src, dst = ids[rng.integers(0, len(ids), 100_000)], ids[rng.integers(0, len(ids), 100_000)]
    limit = 4 << 20
    st = _build(tmp_path / "a.graph", src, dst, chunk=50_000, memory_limit=limit)
    assert st["peak_node_bytes"] > 150_000 * 12
    assert st["segments"] >= 1, st
    roomy = _build(tmp_path / "b.graph", src, dst, chunk=50_000, memory_limit=1 << 30)
    assert roomy["segments"] == 0 and roomy["peak_node_bytes"] == st["peak_node_bytes"]
    assert (tmp_path / "a.graph").read_bytes() == (tmp_path / "b.graph").read_bytes()
    g = ie.Graph.open(tmp_path / "a.graph")
    ref = ie.Graph.from_edges(src, dst)
    assert g.num_nodes == ref.num_nodes and g.num_arcs == ref.num_arcs
    assert np.array_equal(g.ids(np.arange(g.num_nodes)), ref.ids(np.arange(ref.num_nodes)))
