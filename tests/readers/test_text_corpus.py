"""Text inputs as real tools write them, checked against an independent reader.

Each case is a file as pandas, Polars, Spark, R, Excel, SNAP or KONECT would write it, or a
hand-made awkward one (quotes, BOM, CRLF, mixed whitespace, unicode, very long records). The
expected graph comes from Python's ``csv`` module (or ``str.split`` for whitespace edge lists)
and networkx, with the header decision written down per case, never from our reader.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import sys

import instant_embedding as ie
import pytest
from instant_embedding.errors import GraphFormatError

nx = pytest.importorskip("networkx")
pd = pytest.importorskip("pandas")

convert = ie.convert

_CANONICAL = re.compile(r"-?(0|[1-9][0-9]*)")
csv.field_size_limit(sys.maxsize)


def oracle(
    text: str,
    *,
    delimiter: str | None,
    header: bool,
    cols: tuple[int, int] = (0, 1),
    directed: bool = False,
    comment: str = "#%",
) -> nx.Graph:
    """The graph a person expects, read with the standard library."""
    if delimiter is None:
        rows = [
            ln.split() for ln in text.splitlines() if ln.strip() and ln.strip()[0] not in comment
        ]
    else:
        rows = [
            [f.strip() for f in r]
            for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
            if r and "".join(r).strip() and not r[0].strip().startswith(tuple(comment))
        ]
    if header:
        rows = rows[1:]
    pairs = [(r[cols[0]], r[cols[1]]) for r in rows]
    tokens = [t for p in pairs for t in p]
    ints = all(_CANONICAL.fullmatch(t) and -(2**63) <= int(t) < 2**63 for t in tokens)
    g = nx.DiGraph() if directed else nx.Graph()
    for a, b in pairs:
        g.add_edge(int(a) if ints else a, int(b) if ints else b)
    return g


def ours_as_nx(g: ie.Graph) -> nx.Graph:
    h = nx.DiGraph() if g.directed else nx.Graph()
    nodes = g.nodes if isinstance(g.nodes, list) else g.nodes.tolist()
    h.add_nodes_from(nodes)
    for u in nodes:
        nb = g.neighbors(u)
        h.add_edges_from((u, v) for v in (nb if isinstance(nb, list) else nb.tolist()))
    return h


def check(tmp_path, name: str, data: str | bytes, want: nx.Graph, **kw) -> ie.Graph:
    p = tmp_path / name
    if isinstance(data, str):
        data = data.encode("utf-8")
    if name.endswith(".gz"):
        data = gzip.compress(data)
    p.write_bytes(data)
    g = convert(p, tmp_path / (name + ".graph"), **kw)
    got = ours_as_nx(g)
    assert sorted(map(repr, got.nodes)) == sorted(map(repr, want.nodes))
    assert got.number_of_edges() == want.number_of_edges() == g.num_edges
    assert nx.utils.edges_equal(got.edges, want.edges)
    return g


# ---------------------------------------------------------------------- writers' files
NAMES = ["New York", "Boston, MA", 'say "hi"', "two\nlines", "ümlaut 名前", "007", "7", "plain"]


def edges_frame():
    src = [NAMES[i % len(NAMES)] for i in range(40)]
    dst = [NAMES[(3 * i + 1) % len(NAMES)] for i in range(40)]
    return pd.DataFrame({"id_1": src, "id_2": dst})


def test_pandas_to_csv_without_index(tmp_path):
    text = edges_frame().to_csv(index=False)
    g = check(tmp_path, "p.csv", text, oracle(text, delimiter=",", header=True))
    assert "Boston, MA" in g and "007" in g and "7" in g and g.id_kind == "utf8"


def test_pandas_to_csv_with_its_index_column(tmp_path):
    text = edges_frame().to_csv()  # ",id_1,id_2" then "0,New York,..."
    check(tmp_path, "p.csv", text, oracle(text, delimiter=",", header=True, cols=(1, 2)))


def test_pandas_tsv_and_gzip(tmp_path):
    text = edges_frame().to_csv(sep="\t", index=False)
    check(tmp_path, "p.tsv.gz", text, oracle(text, delimiter="\t", header=True))


def test_polars_style_csv(tmp_path):
    # Polars and DuckDB: a header, quotes only where needed, LF.
    text = 'source,target\nalice,bob\n"smith, j",alice\nbob,"o""neil"\n'
    check(tmp_path, "pl.csv", text, oracle(text, delimiter=",", header=True))


def test_spark_write_csv_without_header(tmp_path):
    # Spark's default: no header; string ids; a part file in a directory.
    text = 'alice,bob\nbob,carol\n"Boston, MA",alice\ncarol,dave\n'
    check(tmp_path, "part-00000-abc.csv", text, oracle(text, delimiter=",", header=False))


def test_spark_write_csv_with_header(tmp_path):
    text = "user,item\nu1,i1\nu2,i1\nu1,i2\n"
    check(tmp_path, "part-00000.csv", text, oracle(text, delimiter=",", header=True))


def test_r_write_csv(tmp_path):
    # R quotes every string and writes row names under an empty name.
    text = '"","from","to"\n"1","a","b"\n"2","b","c"\n"3","c","a"\n'
    g = check(tmp_path, "r.csv", text, oracle(text, delimiter=",", header=True, cols=(1, 2)))
    assert sorted(g.nodes) == ["a", "b", "c"]
    text2 = '"from","to"\n"a","b"\n"b","c"\n'
    check(tmp_path, "r2.csv", text2, oracle(text2, delimiter=",", header=True))


def test_excel_csv_bom_crlf(tmp_path):
    text = "\ufeffSource,Target\r\nAnna,Ben\r\nBen,Carla\r\n"
    g = check(tmp_path, "x.csv", text, oracle(text.lstrip("\ufeff"), delimiter=",", header=True))
    assert sorted(g.nodes) == ["Anna", "Ben", "Carla"]  # no BOM in the first id


def test_excel_csv_semicolon_locale_with_decimal_comma(tmp_path):
    text = "\ufeffQuelle;Ziel;Gewicht\r\nA;B;1,5\r\nB;C;2\r\nC;A;0,25\r\n"
    p = tmp_path / "de.csv"
    p.write_bytes(text.encode("utf-8"))
    g = convert(p, tmp_path / "de.graph", weight_col="Gewicht")
    assert sorted(g.nodes) == ["A", "B", "C"] and g.num_edges == 3
    assert g.edge_weights("A").tolist() == pytest.approx([1.5, 0.25])


def test_snap_konect_and_mixed_whitespace(tmp_path):
    snap = "# Directed graph: x\n# Nodes: 5\n# FromNodeId\tToNodeId\n0\t1\n1\t2\n2\t0\n9\t1\n"
    check(
        tmp_path,
        "soc.txt.gz",
        snap,
        oracle(snap, delimiter=None, header=False, directed=True),
        directed=True,
    )
    konect = "% sym unweighted\n% 3 4 4\n1 2\n2 3\n  3   4\n1\t4\n"
    check(tmp_path, "out.konect", konect, oracle(konect, delimiter=None, header=False))
    crlf = "0 1\r\n1 2\r\n\r\n# c\r\n2 3\r\n"
    check(tmp_path, "crlf.txt", crlf, oracle(crlf, delimiter=None, header=False))


def test_leading_zeros_stay_distinct(tmp_path):
    text = "001 002\n1 2\n002 1\n"
    g = check(tmp_path, "z.txt", text, oracle(text, delimiter=None, header=False))
    assert g.id_kind == "utf8" and sorted(g.nodes) == ["001", "002", "1", "2"]


def test_header_with_string_ids_is_not_an_edge(tmp_path):
    text = "id_1,id_2\nuser_3,user_17\nuser_17,user_5\nuser_5,user_3\n"
    g = check(tmp_path, "h.csv", text, oracle(text, delimiter=",", header=True))
    assert "id_1" not in g


def test_quoted_commas_and_line_numbers(tmp_path):
    text = '"New York","Boston, MA"\n"Boston, MA",Chicago\nChicago,"New York"\n'
    check(tmp_path, "q.csv", text, oracle(text, delimiter=",", header=False))
    bad = 'a,b\n"x\ny",c\nd,e,f\n'
    p = tmp_path / "bad.csv"
    p.write_text(bad)
    with pytest.raises(GraphFormatError, match=r"bad\.csv:4: found 3 columns, but line 1 has 2"):
        convert(p, tmp_path / "bad.graph")
    assert not (tmp_path / "bad.graph").exists()


def test_very_long_records_cross_read_blocks(tmp_path):
    # Ids of 3 MiB and a quoted record of 5 MiB: longer than a read block (4 MiB).
    big = "x" * (3 << 20)
    quoted = '"' + ("y," * (5 << 19)) + '"'
    text = f"{big} a\na b\n"
    check(tmp_path, "long.txt", text, oracle(text, delimiter=None, header=False))
    text2 = f"{quoted},a\na,b\n"
    check(tmp_path, "long.csv", text2, oracle(text2, delimiter=",", header=False))


def test_many_quoted_records_across_blocks(tmp_path):
    pad = "p" * 40  # long ids: few records fill several read blocks
    rows = [(f"n{i % 997}, {pad}", f'm"{i % 991}"{pad}') for i in range(60_000)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["source", "target"])
    w.writerows(rows)
    text = buf.getvalue()
    assert len(text) > 5 << 20
    check(tmp_path, "many.csv", text, oracle(text, delimiter=",", header=True))


# ---------------------------------------------------------------------- refusals
REFUSED = [
    ("only_header.csv", "source,target\n", r"no edges: the only data line.*header=False"),
    ("empty.csv", "", r"empty file"),
    ("nodes.txt", "alice\nbob\ncarol\n", r"found 1 column .*lists nodes, not edges"),
    ("labels.json", '{"a": [1, 2], "b": [3]}', r"JSON"),
    ("semi.txt", "a;b\nc;d\n", r"pass delimiter=';'"),
    ("runaway.csv", 'a,b\nc,"d\ne,f\n', r"runaway\.csv:2: a quoted field is never closed"),
    ("spaces.txt", '"New York" Boston\n', r"quoted field in a whitespace-separated file"),
]


@pytest.mark.parametrize("name,text,pattern", REFUSED)
def test_refused_with_a_one_line_reason(tmp_path, name, text, pattern):
    p = tmp_path / name
    p.write_text(text)
    out = tmp_path / "out.graph"
    fmt = "csv" if name.endswith(".json") else "auto"
    with pytest.raises(GraphFormatError, match=pattern) as e:
        convert(p, out, format=fmt)
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == [name]


def test_binary_data_is_refused(tmp_path):
    p = tmp_path / "blob.txt"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(GraphFormatError, match="binary data"):
        convert(p, tmp_path / "out.graph")
    assert os.listdir(tmp_path) == ["blob.txt"]
