"""Readers of every input format: round trips, options, malformed input and atomicity.

Every test builds its input files in tmp_path; nothing here reads ../shared or the network.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import struct

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import _core
from instant_embedding import readers as cv
from instant_embedding.errors import GraphFormatError
from instant_embedding.readers import table


# ---------------------------------------------------------------------- helpers
def arcs(g: ie.Graph) -> dict[tuple, float]:
    """{(u, v): weight} over every stored arc, with external ids."""
    out = {}
    for u in g.nodes.tolist() if isinstance(g.nodes, np.ndarray) else g.nodes:
        nb = g.neighbors(u)
        nb = nb.tolist() if isinstance(nb, np.ndarray) else nb
        w = g.edge_weights(u)
        for i, v in enumerate(nb):
            out[(u, v)] = 1.0 if w is None else float(w[i])
    return out


def same_graph(a: ie.Graph, b: ie.Graph) -> None:
    assert a.num_nodes == b.num_nodes
    assert a.num_edges == b.num_edges
    assert a.directed == b.directed
    assert a.weighted == b.weighted
    assert a.id_kind == b.id_kind
    na = a.nodes.tolist() if isinstance(a.nodes, np.ndarray) else a.nodes
    nb = b.nodes.tolist() if isinstance(b.nodes, np.ndarray) else b.nodes
    assert na == nb
    assert arcs(a) == pytest.approx(arcs(b))


def write(path, text: str, opener=open) -> str:
    with opener(path, "wt") as f:
        f.write(text)
    return str(path)


def no_leftovers(directory) -> None:
    """No temporary files (the writers' '.name.tmp-*') remain."""
    left = [f for f in os.listdir(directory) if ".tmp-" in f]
    assert left == []


RNG = np.random.default_rng(11)
SRC = RNG.integers(0, 40, 300)
DST = RNG.integers(0, 40, 300)
W = np.round(RNG.uniform(0.5, 3.0, 300), 3)


@pytest.fixture
def ref_unweighted():
    return ie.Graph.from_edges(SRC, DST)


@pytest.fixture
def ref_weighted():
    return ie.Graph.from_edges(SRC, DST, weights=W)


def edge_text(sep: str = " ", weights: bool = False) -> str:
    rows = zip(SRC, DST, W)
    if weights:
        return "".join(f"{s}{sep}{d}{sep}{w}\n" for s, d, w in rows)
    return "".join(f"{s}{sep}{d}\n" for s, d, _ in rows)


# ---------------------------------------------------------------------- text edge lists
@pytest.mark.parametrize("sep", [" ", "\t", ",", "  \t "])
def test_text_separators(tmp_path, ref_unweighted, sep):
    p = write(tmp_path / "e.txt", "# comment\n% konect comment\n\n" + edge_text(sep))
    g = cv.convert(p, tmp_path / "e.graph")
    same_graph(g, ref_unweighted)
    assert g.path == str(tmp_path / "e.graph")
    g.validate()


@pytest.mark.parametrize(
    "suffix,opener",
    [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)],
)
def test_text_compressed(tmp_path, ref_weighted, suffix, opener):
    p = write(tmp_path / f"e.txt{suffix}", edge_text("\t", True), opener)
    g = cv.convert(p, tmp_path / "e.graph", weighted=True)
    same_graph(g, ref_weighted)


def test_text_zstd(tmp_path, ref_unweighted):
    zstandard = pytest.importorskip("zstandard")
    p = tmp_path / "e.txt.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(edge_text().encode()))
    same_graph(cv.convert(p, tmp_path / "e.graph"), ref_unweighted)


def test_snap_file_read_unchanged(tmp_path):
    # The layout of SNAP's soc-*.txt.gz files: '#' header lines, TAB separated, directed.
    text = (
        "# Directed graph (each unordered pair of nodes is saved once): x.txt\n"
        "# Nodes: 4 Edges: 5\n"
        "# FromNodeId\tToNodeId\n"
        "0\t1\n0\t2\n1\t2\n2\t0\n7\t0\n"
    )
    p = write(tmp_path / "soc-x.txt.gz", text, gzip.open)
    g = cv.convert(p, tmp_path / "x.graph", directed=True)
    assert g.directed and g.num_nodes == 4 and g.num_edges == 5
    assert g.id_kind == "int64"  # ids 0, 1, 2, 7 are kept as they are
    assert sorted(g.neighbors(0).tolist()) == [1, 2]
    assert g.neighbors(7).tolist() == [0]


def test_text_weight_column_and_header_detection(tmp_path, ref_weighted):
    p = write(tmp_path / "e.csv", "src,dst,weight\n" + edge_text(",", True))
    g = cv.convert(p, tmp_path / "e.graph")  # header found; its 'weight' column is used
    same_graph(g, ref_weighted)
    # header with names that are not the usual ones: numeric columns below a text line
    p2 = write(tmp_path / "e2.txt", "a b c\n" + edge_text(" ", True))
    g2 = cv.convert(p2, tmp_path / "e2.graph", weight_col=2)
    same_graph(g2, ref_weighted)


def test_named_columns_any_order(tmp_path, ref_weighted):
    lines = ["w;to;junk;from"] + [f"{w};{d};x;{s}" for s, d, w in zip(SRC, DST, W)]
    p = write(tmp_path / "e.csv", "\n".join(lines) + "\n")
    g = cv.convert(
        p, tmp_path / "e.graph", delimiter=";", src_col="from", dst_col="to", weight_col="w"
    )
    same_graph(g, ref_weighted)
    with pytest.raises(ValueError, match="no column named 'nope'"):
        cv.convert(p, tmp_path / "f.graph", delimiter=";", src_col="nope", dst_col="to")
    assert not (tmp_path / "f.graph").exists()


def test_weighted_flag_reads_third_column(tmp_path, ref_weighted, ref_unweighted):
    p = write(tmp_path / "e.txt", edge_text(" ", True))
    same_graph(cv.convert(p, tmp_path / "w.graph", weighted=True), ref_weighted)
    # without a flag, a third column is refused (weights? timestamps?); weighted=False drops it
    with pytest.raises(
        GraphFormatError, match=r"e\.txt:1: 3 fields.*weighted=True.*weighted=False"
    ):
        cv.convert(p, tmp_path / "u.graph")
    assert not (tmp_path / "u.graph").exists()
    same_graph(cv.convert(p, tmp_path / "u.graph", weighted=False), ref_unweighted)


def test_string_ids_and_id_kind(tmp_path):
    p = write(tmp_path / "e.tsv", "alice\tbob\nbob\tcarol\n007\talice\n")
    g = cv.convert(p, tmp_path / "e.graph")
    assert g.id_kind == "utf8"
    assert sorted(g.nodes) == ["007", "alice", "bob", "carol"]
    # numeric-looking ids stay strings with id_kind="str"
    p2 = write(tmp_path / "n.txt", "007 1\n1 2\n")
    g2 = cv.convert(p2, tmp_path / "n.graph", id_kind="str")
    assert g2.id_kind == "utf8" and sorted(g2.nodes) == ["007", "1", "2"]
    g3 = cv.convert(p2, tmp_path / "n3.graph")
    assert g3.id_kind == "utf8" and sorted(g3.nodes) == ["007", "1", "2"]  # not canonical
    g4 = cv.convert(p2, tmp_path / "n4.graph", id_kind="int")
    assert g4.id_kind == "int64" and g4.nodes.tolist() == [1, 2, 7]  # forced: parsed
    with pytest.raises(GraphFormatError, match=r"e\.tsv:2: id 'bob' is not an integer"):
        cv.convert(p, tmp_path / "x.graph", id_kind="int")


def test_int_ids_kept_when_not_contiguous(tmp_path):
    p = write(tmp_path / "e.txt", "100 -5\n-5 7\n9223372036854775807 100\n")
    g = cv.convert(p, tmp_path / "e.graph")
    assert g.id_kind == "int64"
    assert g.nodes.tolist() == [-5, 7, 100, 2**63 - 1]
    assert g.neighbors(2**63 - 1).tolist() == [100]


def test_directed_self_loops_and_merge(tmp_path):
    text = "0 1 1.0\n1 0 2.0\n0 1 4.0\n2 2 1.5\n1 2 1.0\n"
    p = write(tmp_path / "e.txt", text)
    g = cv.convert(p, tmp_path / "a.graph", weighted=True)  # undirected, sum
    assert g.num_edges == 3  # {0,1}, {2}, {1,2}
    assert arcs(g)[(0, 1)] == pytest.approx(7.0) and arcs(g)[(1, 0)] == pytest.approx(7.0)
    assert arcs(g)[(2, 2)] == pytest.approx(1.5)
    g = cv.convert(p, tmp_path / "b.graph", weighted=True, merge="max", self_loops="drop")
    assert g.num_edges == 2 and (2, 2) not in arcs(g)
    assert arcs(g)[(0, 1)] == pytest.approx(4.0)
    g = cv.convert(p, tmp_path / "c.graph", weighted=True, directed=True)
    assert g.directed and g.num_edges == 4
    assert arcs(g)[(0, 1)] == pytest.approx(5.0) and arcs(g)[(1, 0)] == pytest.approx(2.0)


def test_multiple_text_inputs_are_concatenated(tmp_path, ref_unweighted):
    text = edge_text().splitlines(keepends=True)
    a = write(tmp_path / "a.txt", "".join(text[:100]))
    b = write(tmp_path / "b.txt.gz", "".join(text[100:]), gzip.open)
    same_graph(cv.convert([a, b], tmp_path / "e.graph"), ref_unweighted)


def test_progress_callback(tmp_path):
    p = write(tmp_path / "e.txt", edge_text())
    seen = []
    cv.convert(p, tmp_path / "e.graph", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == os.path.getsize(p)


# ---------------------------------------------------------------------- malformed text
BAD_TEXT = [
    (
        "0 1\n1 2 3\n",
        {},
        r"bad\.txt:2: found 3 columns, but line 1 has 2; if each line lists a node and its "
        r"neighbours \(an adjacency list\), pass format='adjlist': '1 2 3'",
    ),
    ("0 1\n5\n", {}, r"bad\.txt:2: .*'5'"),
    ("0 1 1.0\n1 2 heavy\n", {"weighted": True}, r"bad\.txt:2: non-numeric weight 'heavy'"),
    ("0 1 1.0\n1 2 nan\n", {"weighted": True}, r"bad\.txt:2: weight 'nan' is NaN"),
    ("0 1 inf\n", {"weighted": True}, r"bad\.txt:1: weight 'inf' is infinite"),
    ("0 1 1\n1 2 -2.5\n", {"weighted": True}, r"bad\.txt:2: weight '-2\.5' is <= 0"),
    ("0 1 0\n", {"weighted": True}, r"bad\.txt:1: weight '0' is <= 0"),
    (
        "0 1\n1 99999999999999999999\n",
        {"id_kind": "int"},
        r"bad\.txt:2: id 99999999999999999999 overflows",
    ),
    ("", {}, r"bad\.txt: empty file"),
    ("# only\n% comments\n\n", {}, r"bad\.txt: no edges found"),
    ("src dst\n", {"header": True}, r"bad\.txt: no edges: the only data line.*header=False"),
]


@pytest.mark.parametrize("text,kwargs,pattern", BAD_TEXT)
def test_malformed_text(tmp_path, text, kwargs, pattern):
    p = write(tmp_path / "bad.txt", text)
    out = tmp_path / "bad.graph"
    with pytest.raises(GraphFormatError, match=pattern):
        cv.convert(p, out, **kwargs)
    assert not out.exists()
    no_leftovers(tmp_path)


def test_invalid_utf8(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"a b\nb \xff\xfe\n")
    with pytest.raises(GraphFormatError, match=r"bad\.txt:2: .*not valid UTF-8"):
        cv.convert(p, tmp_path / "bad.graph")


def test_corrupt_gzip(tmp_path):
    p = tmp_path / "bad.txt.gz"
    data = gzip.compress(edge_text().encode())
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(GraphFormatError, match=r"bad\.txt\.gz"):
        cv.convert(p, tmp_path / "bad.graph")
    assert not (tmp_path / "bad.graph").exists()


def test_error_keeps_existing_output(tmp_path):
    out = tmp_path / "g.graph"
    good = write(tmp_path / "good.txt", "0 1\n1 2\n")
    cv.convert(good, out)
    before = out.read_bytes()
    bad = write(tmp_path / "bad.txt", "0 1\n" * 1000 + "1 2 3\n")
    with pytest.raises(GraphFormatError):
        cv.convert(bad, out)
    assert out.read_bytes() == before
    no_leftovers(tmp_path)


def test_output_checks(tmp_path):
    p = write(tmp_path / "e.txt", "0 1\n")
    with pytest.raises(IsADirectoryError):
        cv.convert(p, tmp_path)
    with pytest.raises(FileNotFoundError):
        cv.convert(p, tmp_path / "missing" / "e.graph")
    with pytest.raises(FileNotFoundError):
        cv.convert(tmp_path / "nope.txt", tmp_path / "e.graph")
    with pytest.raises(ValueError, match="overwrite the input"):
        cv.convert(p, p)
    with pytest.raises(ValueError, match="format"):
        cv.convert(p, tmp_path / "e.graph", format="xml")
    with pytest.raises(ValueError, match="self_loops"):
        cv.convert(p, tmp_path / "e.graph", self_loops="maybe")


# ---------------------------------------------------------------------- parquet / arrow
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def edge_table(strings: bool = False, weights: bool = True):
    cols = {
        "src": [f"n{x}" for x in SRC] if strings else SRC,
        "dst": [f"n{x}" for x in DST] if strings else DST,
    }
    if weights:
        cols["weight"] = W
    return pa.table(cols)


def test_parquet_row_groups_streamed(tmp_path, ref_weighted, monkeypatch, fake_builder):
    p = tmp_path / "e.parquet"
    pq.write_table(edge_table(), p, row_group_size=40)
    monkeypatch.setattr(table, "CHUNK_EDGES", 50)
    g = cv.convert(p, tmp_path / "e.graph")
    same_graph(g, ref_weighted)
    sizes = [len(c[0]) for c in fake_builder.instances[-1].calls]
    assert len(sizes) >= 6 and max(sizes) <= 50  # fed chunk by chunk, never all at once


def test_parquet_directory_of_shards(tmp_path, ref_unweighted):
    d = tmp_path / "shards"
    (d / "part=1").mkdir(parents=True)
    t = edge_table(weights=False)
    pq.write_table(t.slice(0, 120), d / "a.parquet")
    pq.write_table(t.slice(120, 100), d / "part=1" / "b.parquet")
    pq.write_table(t.slice(220), d / "c.parquet")
    (d / "_SUCCESS").write_text("")
    (d / ".hidden.crc").write_text("junk")
    assert cv.detect_format(d) == "parquet"
    same_graph(cv.convert(d, tmp_path / "e.graph"), ref_unweighted)


def test_parquet_string_ids_and_columns(tmp_path):
    t = pa.table({"a": ["x", "y", "z"], "b": ["y", "z", "x"], "cost": [1.0, 2.0, 3.0]})
    p = tmp_path / "e.parquet"
    pq.write_table(t, p)
    g = cv.convert(p, tmp_path / "e.graph", src_col="a", dst_col="b", weight_col="cost")
    assert g.id_kind == "utf8" and g.weighted
    assert arcs(g)[("z", "x")] == 3.0
    # three candidate columns and no known pair: refused, naming the file and the columns
    with pytest.raises(
        GraphFormatError, match=r"e\.parquet: 3 columns \('a', 'b', 'cost'\).*src_col"
    ):
        cv.convert(p, tmp_path / "f.graph")
    assert not (tmp_path / "f.graph").exists()


def test_parquet_bad_values(tmp_path):
    p = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": [1, 2, None], "dst": [2, 3, 4]}), p)
    with pytest.raises(GraphFormatError, match=r"e\.parquet: row 2: column 'src' is missing"):
        cv.convert(p, tmp_path / "e.graph")
    pq.write_table(pa.table({"src": [1, 2, 3], "dst": [2, 3, 4], "w": [1.0, 2.0, None]}), p)
    with pytest.raises(GraphFormatError, match=r"e\.parquet: row 2: weight in column 'w' is miss"):
        cv.convert(p, tmp_path / "e.graph", weight_col="w")
    dict_ids = pa.table({"src": pa.array(["a", "b"]).dictionary_encode(), "dst": ["b", "c"]})
    assert sorted(cv.from_arrow(dict_ids).nodes) == ["a", "b", "c"]
    assert not (tmp_path / "e.graph").exists()
    pq.write_table(pa.table({"src": [1, 2], "dst": [2, 3], "weight": [1.0, -1.0]}), p)
    with pytest.raises(GraphFormatError, match=r"row 1: weight -1\.0 .* <= 0"):
        cv.convert(p, tmp_path / "e.graph")
    pq.write_table(pa.table({"src": [1.5, 2.0], "dst": [2, 3]}), p)
    with pytest.raises(GraphFormatError, match=r"row 0: .*1\.5 is not an integer id"):
        cv.convert(p, tmp_path / "e.graph")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(GraphFormatError, match="junk.parquet"):
        cv.convert(tmp_path / "junk.parquet", tmp_path / "e.graph")
    assert not (tmp_path / "e.graph").exists()


def test_arrow_ipc_file(tmp_path, ref_weighted):
    p = tmp_path / "e.arrow"
    t = edge_table()
    with pa.ipc.new_file(p, t.schema) as w:
        for b in t.to_batches(max_chunksize=64):
            w.write_batch(b)
    same_graph(cv.convert(p, tmp_path / "e.graph"), ref_weighted)


def test_from_arrow_table_and_reader(tmp_path, ref_weighted):
    t = edge_table()
    same_graph(cv.from_arrow(t), ref_weighted)
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=32))
    g = cv.from_arrow(reader, output=tmp_path / "r.graph")
    same_graph(g, ref_weighted)
    assert g.path == str(tmp_path / "r.graph")
    ts = edge_table(strings=True, weights=False)
    gs = cv.from_arrow(ts, directed=True)
    assert gs.id_kind == "utf8" and gs.directed
    dict_t = pa.table({"src": pa.array(["a", "b"]).dictionary_encode(), "dst": ["b", "c"]})
    assert cv.from_arrow(dict_t).num_edges == 2


def test_from_arrow_without_rows_keeps_the_id_kind_asked_for(tmp_path):
    empty = pa.table({"src": pa.array([], pa.string()), "dst": pa.array([], pa.string())})
    for id_kind, want in [("str", "utf8"), ("auto", "implicit")]:
        g = cv.from_arrow(empty, id_kind=id_kind, output=tmp_path / f"{id_kind}.graph")
        assert g.num_nodes == 0 and g.id_kind == want


# ---------------------------------------------------------------------- pandas / numpy
pd = pytest.importorskip("pandas")


def test_from_pandas(tmp_path, ref_weighted):
    df = pd.DataFrame({"src": SRC, "dst": DST, "w": W})
    same_graph(cv.from_pandas(df, weight="w"), ref_weighted)
    chunks = (df.iloc[i : i + 70] for i in range(0, len(df), 70))
    g = cv.from_pandas(chunks, weight="w", output=tmp_path / "p.graph")
    same_graph(g, ref_weighted)
    s = pd.DataFrame({"from": ["a", "b"], "to": ["b", "c"]})
    gs = cv.from_pandas(s, src="from", dst="to")
    assert gs.id_kind == "utf8" and sorted(gs.nodes) == ["a", "b", "c"]
    nullable = pd.DataFrame({"src": pd.array([1, None], dtype="Int64"), "dst": [2, 3]})
    with pytest.raises(GraphFormatError, match=r"row 1: column 'src' is missing"):
        cv.from_pandas(nullable)
    with pytest.raises(ValueError, match="no column named 'x'"):
        cv.from_pandas(df, src="x")


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("output", [False, True])
def test_from_pandas_and_networkx_drop_self_loops(tmp_path, strings, output):
    ids = [f"n{x}" for x in range(4)] if strings else list(range(4))
    src, dst = [ids[0], ids[1], ids[2], ids[3]], [ids[0], ids[2], ids[2], ids[1]]
    want = {(ids[1], ids[2]), (ids[3], ids[1])}  # the edges whose ends differ
    out = tmp_path / "g.graph" if output else None
    df = pd.DataFrame({"src": src, "dst": dst})
    G = nx.DiGraph(list(zip(src, dst)))
    for g in (
        cv.from_pandas(df, directed=True, self_loops="drop", output=out),
        cv.from_networkx(G, self_loops="drop", output=out),
    ):
        assert {(u, v) for u in g.nodes for v in g.neighbors(u)} == want
        assert set(g.nodes) == set(ids)  # a dropped self-loop's node stays, as in the builder


def test_from_numpy(tmp_path, ref_weighted, ref_unweighted):
    same_graph(cv.from_numpy(np.stack([SRC, DST], axis=1)), ref_unweighted)
    e3 = np.stack([SRC, DST, W], axis=1)  # float array with whole-number ids
    same_graph(cv.from_numpy(e3), ref_weighted)
    g = cv.from_numpy(np.array([[0, 1]]), num_nodes=5, output=tmp_path / "n.graph")
    assert g.num_nodes == 5 and g.degree(4) == 0
    with pytest.raises(GraphFormatError, match=r"row 1: .*0\.5 is not an integer id"):
        cv.from_numpy(np.array([[0, 1, 1.0], [0.5, 2, 1.0]]))
    with pytest.raises(ValueError, match="shape"):
        cv.from_numpy(np.zeros((3, 4)))


def test_npy_edge_file_is_memory_mapped(tmp_path, ref_weighted):
    p = tmp_path / "e.npy"
    np.save(p, np.stack([SRC, DST, W], axis=1))
    same_graph(cv.convert(p, tmp_path / "e.graph"), ref_weighted)


# ---------------------------------------------------------------------- scipy / networkx
sp = pytest.importorskip("scipy.sparse")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "array"])
def test_from_scipy_formats(fmt):
    a = sp.coo_matrix((W[:50], (SRC[:50], DST[:50])), shape=(45, 45))
    a = (a + a.T).asformat("csr" if fmt == "array" else fmt)
    if fmt == "array":
        a = sp.csr_array(a)
    g = cv.from_scipy(a)
    assert not g.directed and g.weighted and g.num_nodes == 45  # isolated rows kept
    dense = a.toarray()
    for (u, v), w in arcs(g).items():
        assert dense[u, v] == pytest.approx(w)
    assert len(arcs(g)) == np.count_nonzero(dense)


def test_from_scipy_direction_and_weights():
    asym = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]))
    g = cv.from_scipy(asym)
    assert g.directed and not g.weighted and g.num_edges == 2
    u = cv.from_scipy(asym, directed=False)  # unweighted: union of both directions
    assert not u.directed and u.num_edges == 2 and sorted(u.neighbors(1).tolist()) == [0, 2]
    wasym = sp.csr_matrix(np.array([[0, 2.0], [3.0, 0]]))
    with pytest.raises(ValueError, match="not symmetric"):
        cv.from_scipy(wasym, directed=False)
    with pytest.raises(ValueError, match="square"):
        cv.from_scipy(sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(GraphFormatError, match=r"entry \(0, 1\) = -1"):
        cv.from_scipy(sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]])))
    with pytest.raises(TypeError, match="from_numpy"):
        cv.from_scipy(np.eye(2))
    loops = sp.csr_matrix(np.array([[1, 1], [1, 0]]))
    assert cv.from_scipy(loops).num_edges == 2
    assert cv.from_scipy(loops, self_loops="drop").num_edges == 1


nx = pytest.importorskip("networkx")


def test_from_networkx(tmp_path):
    G = nx.Graph()
    G.add_edge("a", "b", weight=2.0)
    G.add_edge("b", "c")
    G.add_node("lonely")
    g = cv.from_networkx(G)
    assert g.weighted and sorted(g.nodes) == ["a", "b", "c", "lonely"]
    assert arcs(g)[("b", "c")] == 1.0 and arcs(g)[("a", "b")] == 2.0
    assert g.degree("lonely") == 0
    D = nx.MultiDiGraph([(0, 1), (0, 1), (1, 2)])
    gd = cv.from_networkx(D, output=tmp_path / "d.graph")
    assert gd.directed and gd.num_edges == 2 and gd.path
    k = cv.from_networkx(nx.karate_club_graph(), weight=None)
    same_graph(k, ie.datasets.karate())
    with pytest.raises(TypeError, match="relabel"):
        cv.from_networkx(nx.Graph([(0, "a")]))
    with pytest.raises(TypeError, match="relabel"):
        cv.from_networkx(nx.Graph([((0, 1), (1, 2))]))


# ---------------------------------------------------------------------- MATLAB .mat
sio = pytest.importorskip("scipy.io")


def blog_like():
    a = sp.coo_matrix((np.ones(60), (SRC[:60], DST[:60])), shape=(50, 50)).tocsr()
    a = ((a + a.T) > 0).astype(np.float64)
    a.setdiag(0)
    a.eliminate_zeros()
    return sp.csc_matrix(a)


def test_mat_default_variable_is_the_sparse_matrix(tmp_path):
    a = blog_like()
    groups = sp.csc_matrix(np.eye(50, 3))  # not square: not a candidate
    p = tmp_path / "blog.mat"
    sio.savemat(p, {"network": a, "group": groups})
    g = cv.convert(p, tmp_path / "b.graph")
    assert g.num_nodes == 50 and not g.weighted and not g.directed
    assert g.num_edges == a.nnz // 2
    assert set(arcs(g)) == set(zip(*a.nonzero()))


def test_mat_variable_choice_and_errors(tmp_path):
    a = blog_like()
    p = tmp_path / "two.mat"
    sio.savemat(p, {"A": a, "B": sp.csc_matrix(np.eye(4)), "dense": np.array([[0, 2], [2, 0]])})
    with pytest.raises(GraphFormatError, match=r"several sparse matrices \(A, B\).*--var"):
        cv.convert(p, tmp_path / "x.graph")
    g = cv.convert(p, tmp_path / "x.graph", var="B")
    assert g.num_nodes == 4 and g.num_edges == 4  # identity: 4 self-loops
    gd = cv.convert(p, tmp_path / "d.graph", var="dense")
    assert gd.weighted and arcs(gd)[(0, 1)] == 2.0
    with pytest.raises(GraphFormatError, match=r"no variable 'C'; variables: A \(sparse"):
        cv.convert(p, tmp_path / "x2.graph", var="C")
    asym = tmp_path / "asym.mat"
    sio.savemat(asym, {"network": sp.csc_matrix(np.array([[0, 1], [0, 0]]))})
    assert cv.convert(asym, tmp_path / "a.graph", directed=None).directed
    (tmp_path / "junk.mat").write_bytes(b"MATLAB 5.0 nonsense" + b"\0" * 50)
    with pytest.raises(GraphFormatError, match="junk.mat"):
        cv.convert(tmp_path / "junk.mat", tmp_path / "j.graph")
    assert not (tmp_path / "j.graph").exists()


def write_mat73(path, a, name="network"):
    """A MATLAB v7.3 file: a 512-byte MATLAB header in the HDF5 user block, sparse as
    (data, ir, jc) with the MATLAB_sparse attribute, as MATLAB writes it."""
    h5py = pytest.importorskip("h5py")
    a = sp.csc_matrix(a)
    with h5py.File(path, "w", userblock_size=512) as f:
        grp = f.create_group(name)
        grp.attrs["MATLAB_class"] = np.bytes_(b"double")
        grp.attrs["MATLAB_sparse"] = np.uint64(a.shape[0])
        grp.create_dataset("data", data=a.data)
        grp.create_dataset("ir", data=a.indices.astype(np.uint64))
        grp.create_dataset("jc", data=a.indptr.astype(np.uint64))
    with open(path, "r+b") as f:
        f.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: test HDF5 schema 1.00 .")


def test_mat_v73_hdf5(tmp_path):
    a = blog_like()
    p = tmp_path / "v73.mat"
    write_mat73(p, a)
    g = cv.convert(p, tmp_path / "v.graph")
    assert g.num_nodes == 50 and g.num_edges == a.nnz // 2
    assert set(arcs(g)) == set(zip(*a.nonzero()))


def test_mat_v73_without_h5py_names_the_fix(tmp_path, monkeypatch):
    p = tmp_path / "v73.mat"
    write_mat73(p, blog_like())
    monkeypatch.setitem(__import__("sys").modules, "h5py", None)
    with pytest.raises(ImportError, match=r"v7\.3 \(HDF5\).*install h5py"):
        cv.convert(p, tmp_path / "v.graph")


# ---------------------------------------------------------------------- VERSE .bcsr
def write_bcsr(path, n, src, dst, weights=None):
    """A VERSE XGFS file: row starts without a final sentinel, optional float32 weights."""
    order = np.lexsort((dst, src))
    src, dst = np.asarray(src)[order], np.asarray(dst)[order]
    offsets = np.searchsorted(src, np.arange(n)).astype("<i4")
    with open(path, "wb") as f:
        f.write(b"XGFS" + struct.pack("<qq", n, len(dst)))
        f.write(offsets.tobytes())
        f.write(np.asarray(dst, dtype="<i4").tobytes())
        if weights is not None:
            f.write(np.asarray(weights, dtype="<f4")[order].tobytes())
    return str(path)


def karate_arcs():
    k = ie.datasets.karate()
    s, d = [], []
    for u in range(34):
        for v in k.neighbors(u).tolist():
            s.append(u)
            d.append(v)
    return np.array(s), np.array(d)


def test_bcsr_karate_undirected(tmp_path):
    s, d = karate_arcs()
    assert len(s) == 156  # as VERSE's data/karate.bcsr: nv=34, ne=156
    p = write_bcsr(tmp_path / "karate.bcsr", 34, s, d)
    assert cv.detect_format(p) == "bcsr"
    g = cv.convert(p, tmp_path / "k.graph")
    same_graph(g, ie.datasets.karate())
    g2 = cv.convert(p, tmp_path / "k2.graph", directed=None)  # symmetric -> undirected
    assert not g2.directed


def test_bcsr_weighted_and_directed(tmp_path):
    s = np.array([0, 0, 1, 3])
    d = np.array([1, 2, 2, 0])
    w = np.array([0.5, 2.0, 1.0, 4.0])
    p = write_bcsr(tmp_path / "w.bcsr", 5, s, d, w)
    assert os.path.getsize(p) == 20 + 4 * 5 + 8 * 4
    g = cv.convert(p, tmp_path / "w.graph", directed=None)  # asymmetric -> directed
    assert g.directed and g.weighted and g.num_nodes == 5
    assert arcs(g) == {(0, 1): 0.5, (0, 2): 2.0, (1, 2): 1.0, (3, 0): 4.0}
    with pytest.raises(ValueError, match="not symmetric"):
        cv.convert(p, tmp_path / "x.graph", directed=False)
    # symmetric weighted: each edge once, with its weight (not doubled)
    p2 = write_bcsr(tmp_path / "s.bcsr", 3, [0, 1, 1, 2], [1, 0, 2, 1], [2.0, 2.0, 3.0, 3.0])
    g2 = cv.convert(p2, tmp_path / "s.graph")
    assert not g2.directed and arcs(g2) == {(0, 1): 2.0, (1, 0): 2.0, (1, 2): 3.0, (2, 1): 3.0}


def test_bcsr_keeps_its_rows_as_ids_and_streams_into_update(tmp_path):
    s, d = karate_arcs()
    s, d = np.append(s, [5, 33]), np.append(d, [5, 33])  # two self-loops, and row 34 isolated
    p = write_bcsr(tmp_path / "k.bcsr", 35, s, d)
    g = cv.convert(p, tmp_path / "k.graph", self_loops="drop")
    assert (g.num_nodes, g.id_kind, g.num_edges) == (35, "implicit", 78)
    assert g.degree(34) == 0 and 5 not in g.neighbors(5).tolist()
    # update reads it with the same reader, straight into the commit
    base = ie.Graph.from_edges([0], [1], num_nodes=35)
    base.save(tmp_path / "b.graph")
    from instant_embedding.cli import main

    assert main(["update", str(tmp_path / "b.graph"), "--add", p, "-q"]) == 0
    b = ie.Graph.open(tmp_path / "b.graph")
    for u in range(34):
        assert sorted(b.neighbors(u).tolist()) == sorted(
            set(ie.datasets.karate().neighbors(u).tolist())
            | ({5} if u == 5 else set())
            | ({33} if u == 33 else set())
        ), u


def test_bcsr_symmetry_test_sees_weights(tmp_path):
    # same structure both ways but different weights: not symmetric
    p = write_bcsr(tmp_path / "a.bcsr", 2, [0, 1], [1, 0], [1.0, 2.0])
    assert cv.convert(p, tmp_path / "a.graph", directed=None).directed


def bcsr_bytes(nv, ne, offsets, edges, weights=None):
    b = b"XGFS" + struct.pack("<qq", nv, ne) + np.asarray(offsets, "<i4").tobytes()
    b += np.asarray(edges, "<i4").tobytes()
    if weights is not None:
        b += np.asarray(weights, "<f4").tobytes()
    return b


BAD_BCSR = [
    (b"XGFS\x01", r"truncated header"),
    (b"VERS" + b"\0" * 16, r"not a VERSE \.bcsr file"),
    (
        bcsr_bytes(3, 2, [0, 1, 2], [1, 2])[:-2],
        r"file size 38 does not match .*nv=3, ne=2.*expected 40 bytes",
    ),
    (bcsr_bytes(3, 2, [0, 1, 2], [1, 2]) + b"\0" * 3, r"file size .* does not match"),
    (bcsr_bytes(3, 2, [0, 2, 1], [1, 2]), r"not non-decreasing .* node 2"),
    (bcsr_bytes(3, 2, [1, 1, 2], [1, 2]), r"first row start is 1"),
    (bcsr_bytes(3, 2, [0, 1, 5], [1, 2]), r"node 2"),
    (bcsr_bytes(3, 2, [0, 1, 2], [1, 7]), r"edge 1 \(from node 1\) points to node 7"),
    (bcsr_bytes(2, 1, [0, 1], [1], [float("nan")]), r"edge 0: weight nan is missing or NaN"),
    (b"XGFS" + struct.pack("<qq", -1, 0), r"negative sizes"),
]


@pytest.mark.parametrize("data,pattern", BAD_BCSR)
def test_malformed_bcsr(tmp_path, data, pattern):
    p = tmp_path / "bad.bcsr"
    p.write_bytes(data)
    with pytest.raises(GraphFormatError, match=pattern):
        cv.convert(p, tmp_path / "bad.graph", directed=True)
    assert not (tmp_path / "bad.graph").exists()
    no_leftovers(tmp_path)


# ---------------------------------------------------------------------- string ids end to end
def test_string_id_graph_end_to_end(tmp_path):
    rows = [
        ("alice", "bob", 1.0),
        ("bob", "carol", 2.0),
        ("carol", "alice", 0.5),
        ("dave", "alice", 1.0),
        ("ümlaut 名前", "dave", 3.0),
    ]
    p = write(
        tmp_path / "people.tsv",
        "source\ttarget\tweight\n" + "".join(f"{a}\t{b}\t{w}\n" for a, b, w in rows),
    )
    g = cv.convert(p, tmp_path / "people.graph")
    ref = ie.Graph.from_edges(
        [r[0] for r in rows], [r[1] for r in rows], weights=[r[2] for r in rows]
    )
    same_graph(g, ref)
    model = ie.InstantEmbedding(dim=32)
    got = model.embed(g, ["alice", "ümlaut 名前"])
    assert np.array_equal(got, model.embed(ref, ["alice", "ümlaut 名前"]))
    with pytest.raises(ie.NodeNotFoundError):
        model.embed(g, ["mallory"])


# ---------------------------------------------------------------------- small pieces
def test_detect_format(tmp_path):
    cases = {
        "a.txt": "edgelist",
        "a.edges": "edgelist",
        "a.csv": "csv",
        "a.tsv.gz": "tsv",
        "a.csv.bz2": "csv",
        "a.txt.zst": "edgelist",
        "a.parquet": "parquet",
        "a.feather": "arrow",
        "a.mat": "mat",
        "a.bcsr": "bcsr",
        "a.npy": "npy",
    }
    for name, fmt in cases.items():
        assert cv.detect_format(tmp_path / name) == fmt, name
    (tmp_path / "noext").write_bytes(b"XGFS" + b"\0" * 16)
    assert cv.detect_format(tmp_path / "noext") == "bcsr"
    ie.datasets.karate().save(tmp_path / "k.bin")
    with pytest.raises(GraphFormatError, match="is an instant-embedding graph file already"):
        cv.detect_format(tmp_path / "k.bin")


def test_parse_size():
    assert cv.parse_size("2G") == 2 * 1024**3
    assert cv.parse_size("512MiB") == 512 * 1024**2
    assert cv.parse_size("1.5k") == 1536
    assert cv.parse_size(1000) == 1000
    assert cv.parse_size(None) == cv.DEFAULT_MEMORY_LIMIT
    for bad in ("lots", "-1G", 0):
        with pytest.raises(ValueError):
            cv.parse_size(bad)


# ---------------------------------------------------------------------- native entry points
class FakeBuilder:
    """Stands in for _core.GraphBuilder with its documented interface, recording calls."""

    instances: list = []

    def __init__(
        self,
        output,
        *,
        directed,
        weighted,
        id_kind,
        num_nodes,
        self_loops,
        merge,
        memory_limit,
        tmp_dir,
    ):
        self.kw = dict(
            output=output,
            directed=directed,
            weighted=weighted,
            id_kind=id_kind,
            num_nodes=num_nodes,
            self_loops=self_loops,
            merge=merge,
            memory_limit=memory_limit,
            tmp_dir=tmp_dir,
        )
        self.calls = []
        self.state = "open"
        FakeBuilder.instances.append(self)

    def add_edges(self, src, dst, weights=None):
        assert self.state == "open"
        if isinstance(src, np.ndarray):
            assert src.dtype == np.int64 and dst.dtype == np.int64
        else:
            assert isinstance(src, list) and all(type(x) is str for x in src + dst)
        assert len(src) == len(dst)
        if self.kw["weighted"]:
            assert weights.dtype == np.float64 and len(weights) == len(src)
        else:
            assert weights is None
        self.calls.append((src, dst, weights))

    def finish(self):
        s = [
            x for c in self.calls for x in (c[0].tolist() if isinstance(c[0], np.ndarray) else c[0])
        ]
        d = [
            x for c in self.calls for x in (c[1].tolist() if isinstance(c[1], np.ndarray) else c[1])
        ]
        w = np.concatenate([c[2] for c in self.calls]) if self.kw["weighted"] else None
        if self.kw["self_loops"] == "drop":
            keep = [i for i in range(len(s)) if s[i] != d[i]]
            s, d = [s[i] for i in keep], [d[i] for i in keep]
            w = None if w is None else w[keep]
        g = ie.Graph.from_edges(
            s,
            d,
            directed=self.kw["directed"],
            weights=w,
            num_nodes=self.kw["num_nodes"],
            merge=self.kw["merge"],
        )
        g.save(self.kw["output"])
        self.state = "finished"
        return {"edges_read": len(s)}

    def abort(self):
        self.state = "aborted"


@pytest.fixture
def fake_builder(monkeypatch):
    FakeBuilder.instances = []
    monkeypatch.setattr(_core, "GraphBuilder", FakeBuilder, raising=False)
    return FakeBuilder


def test_chunked_sources_use_the_builder_contract(
    tmp_path, fake_builder, monkeypatch, ref_weighted
):
    monkeypatch.setattr(table, "CHUNK_EDGES", 64)
    pq.write_table(edge_table(), tmp_path / "e.parquet", row_group_size=50)
    g = cv.convert(
        tmp_path / "e.parquet",
        tmp_path / "e.graph",
        merge="max",
        memory_limit="64M",
        tmp_dir=tmp_path,
    )
    b = fake_builder.instances[-1]
    assert b.state == "finished" and len(b.calls) >= 5
    assert max(len(c[0]) for c in b.calls) <= 64
    assert b.kw == dict(
        output=str(tmp_path / "e.graph"),
        directed=False,
        weighted=True,
        id_kind="int",
        num_nodes=None,
        self_loops="keep",
        merge="max",
        memory_limit=64 * 1024**2,
        tmp_dir=str(tmp_path),
    )
    assert g.num_edges == ref_weighted.num_edges
    # string ids
    cv.from_arrow(edge_table(strings=True, weights=False), output=tmp_path / "s.graph")
    assert fake_builder.instances[-1].kw["id_kind"] == "str"


def test_builder_is_aborted_on_bad_input(tmp_path, fake_builder, monkeypatch):
    monkeypatch.setattr(table, "CHUNK_EDGES", 10)
    t = pa.table(
        {
            "src": list(range(30)),
            "dst": list(range(1, 31)),
            "weight": [1.0] * 25 + [float("nan")] + [1.0] * 4,
        }
    )
    pq.write_table(t, tmp_path / "e.parquet")
    with pytest.raises(GraphFormatError, match="row 25: weight nan"):
        cv.convert(tmp_path / "e.parquet", tmp_path / "e.graph")
    b = fake_builder.instances[-1]
    assert b.state == "aborted" and len(b.calls) == 2
    assert not (tmp_path / "e.graph").exists()


def test_native_text_reader_arguments(tmp_path, monkeypatch):
    """The text reader gets one options object; column names reach it unresolved."""
    seen = {}

    def fake_convert_native(inputs, output, options, progress=None):
        seen.update(options.to_dict(), inputs=inputs, output=output)
        ie.Graph.from_edges([0], [1]).save(output)
        return {"edge_lines": 1}

    monkeypatch.setattr(_core, "convert_native", fake_convert_native)
    p = write(tmp_path / "e.csv", "# exported\nw;to;from\n1.5;b;a\n")
    cv.convert(
        p,
        tmp_path / "e.graph",
        delimiter=";",
        src_col="from",
        dst_col="to",
        weight_col="w",
        self_loops="drop",
        memory_limit="1G",
    )
    assert seen["inputs"] == [p] and seen["output"] == str(tmp_path / "e.graph")
    assert (seen["src_col"], seen["dst_col"], seen["weight_col"]) == ("from", "to", "w")
    assert seen["format"] == "csv" and seen["delimiter"] == ";"
    assert seen["self_loops"] == "drop" and seen["memory_limit"] == 1024**3
    assert seen["comment"] == "#%" and seen["id_kind"] == "auto" and seen["directed"] is None


def test_memory_limit_too_small_for_the_nodes_warns_and_completes(tmp_path):
    rng = np.random.default_rng(1)
    ids = rng.choice(10**12, size=20_000, replace=False)
    e = tmp_path / "e.txt"
    np.savetxt(e, ids[rng.integers(0, len(ids), (30_000, 2))], fmt="%d")
    with pytest.warns(RuntimeWarning, match="memory_limit .* was exceeded"):
        g, st = cv.convert_with_stats(e, tmp_path / "g.graph", memory_limit="64K")
    assert st["peak_node_bytes"] > 64 << 10 and g.num_nodes == len(
        np.unique(np.loadtxt(e, dtype=np.int64))
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cv.convert_with_stats(e, tmp_path / "h.graph", memory_limit="1G")
    assert (tmp_path / "g.graph").read_bytes() == (tmp_path / "h.graph").read_bytes()


# ---------------------------------------------------------------------- registry and rules
def test_formats_are_detected_by_magic_before_extension(tmp_path):
    pq.write_table(edge_table(), tmp_path / "edges.bin")
    assert cv.detect_format(tmp_path / "edges.bin") == "parquet"
    (tmp_path / "edges.txt").write_text('{"nodes": [], "links": []}')
    assert cv.detect_format(tmp_path / "edges.txt") == "json"
    ie.datasets.karate().save(tmp_path / "karate.csv")
    with pytest.raises(GraphFormatError, match="instant-embedding graph file already"):
        cv.detect_format(tmp_path / "karate.csv")
    (tmp_path / "cnr.graph").write_bytes(b"\x81\x02")
    (tmp_path / "cnr.properties").write_text("nodes=2\n")
    assert cv.detect_format(tmp_path / "cnr.graph") == "webgraph"
    assert cv.detect_format(tmp_path / "cnr.properties") == "webgraph"
    with pytest.raises(GraphFormatError, match=r"cnr\.graph is a WebGraph BV graph .*convert it"):
        ie.Graph.open(tmp_path / "cnr.graph")
    (tmp_path / "e.txt").write_text("0 1\n")
    with pytest.raises(GraphFormatError, match=r"e\.txt is text .*instant_embedding\.convert"):
        ie.Graph.open(tmp_path / "e.txt")


def test_the_formats_are_the_kernels_table(tmp_path):
    """One table of formats: the registry, detection, ``--format`` and the options each takes."""
    table = _core.formats()
    assert list(cv.formats()) == [f["name"] for f in table]
    for f in table:
        fmt = cv.formats()[f["name"]]
        assert fmt.native == f["native"] and fmt.extensions == f["extensions"]
        (tmp_path / f"x{f['extensions'][0]}").write_bytes(b"")
        if f["name"] != "webgraph":  # a .properties file alone is a WebGraph's
            assert cv.detect_format(tmp_path / f"x{f['extensions'][0]}") == f["name"]
    with pytest.raises(ValueError, match="format must be 'auto' or one of 'edgelist'"):
        ie.convert(tmp_path / "x.txt", tmp_path / "g.graph", format="pairs")
    with pytest.raises(ValueError, match="delimiter do"):
        ie.convert(tmp_path / "x.mtx", tmp_path / "g.graph", delimiter=",")


def test_python_errors_name_parameters(tmp_path):
    p = write(tmp_path / "h.csv", "alice,bob\n")
    with pytest.raises(GraphFormatError, match=r"pass header=False"):
        ie.convert(p, tmp_path / "g.graph")
    assert ie.convert(p, tmp_path / "g.graph", header=False).num_edges == 1
    w = write(tmp_path / "w.csv", "from,to,x,y\na,b,1,2\n")
    with pytest.raises(
        ValueError,
        match=r"weighted=True, but no column is named weight: pass "
        r"weight_col",
    ):
        ie.convert(w, tmp_path / "g.graph", weighted=True)
    with pytest.raises(ValueError, match="weight_col is given but weighted=False"):
        ie.convert(w, tmp_path / "g.graph", weight_col="x", weighted=False)
    model = ie.InstantEmbedding(dim=8)
    from instant_embedding.export import write_embeddings

    with pytest.raises(ValueError, match=r"format='parquet' does not match"):
        write_embeddings(model, ie.datasets.karate(), None, tmp_path / "e.npy", format="parquet")
    assert not (tmp_path / "e.npy").exists()


def test_from_pandas_takes_the_first_two_named_columns(tmp_path):
    df = pd.DataFrame({"id_1": ["u1", "u2"], "id_2": ["u2", "u3"], "w": [1.0, 2.0]})
    g = cv.from_pandas(df)
    # "w" is a weight column by name, as convert reads it
    assert sorted(g.nodes) == ["u1", "u2", "u3"] and g.weighted
    assert not cv.from_pandas(df, weighted=False).weighted
    # read back from a to_csv with its index: the unnamed index column is skipped
    df.to_csv(tmp_path / "e.csv")
    back = pd.read_csv(tmp_path / "e.csv")
    assert back.columns[0] == "Unnamed: 0"
    g2 = cv.from_pandas(back)
    assert sorted(g2.nodes) == ["u1", "u2", "u3"]
