"""Writes the committed reading corpus: graph files as real tools write them.

Run from the repository root (needs R, PySpark with Java, Polars, DuckDB, python-igraph and
networkx; none of them is needed to *run* the tests):

    python tests/corpus/make_corpus.py

Each file is written by its tool from a small graph the tool itself holds, and
``manifest.json`` records that graph (node ids as text, edges with weights, directedness) as
the tool holds it, so the test (``tests/readers/test_corpus.py``) compares our reading against the
writer's own data, never against our reader. Files whose published format is fixed but whose
tool cannot run here (Excel, SNAP, KONECT, SuiteSparse, Network Repository, METIS, Gephi) are
written byte for byte in that format by the ``handmade`` functions below, from the same
graphs, with a note naming the source of the format.

``expect`` says what a correct reader does with the file (given ``options``):
``graph`` reads exactly the recorded graph; ``refuse`` raises a one-line error naming the
flag or function that settles it; ``either`` is one of the two (the file is ambiguous, so
refusing is right, and reading it right is right too). Never a different graph.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENTRIES: list[dict[str, Any]] = []

# ----------------------------------------------------------------------------- the graphs

# Undirected, unweighted, integer ids 1..8 (8 is isolated where a format can say so).
INT_EDGES = [(1, 2), (1, 3), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 1), (2, 5), (6, 6)]
INT_NODES = list(range(1, 9))

# Directed, weighted, string ids with a space, a comma, a quote, an accent and a padded number.
STR_EDGES = [
    ("alice", "bob", 0.5),
    ("bob", "carol jr", 2.0),
    ("carol jr", "d,e", 1.25),
    ("d,e", "émile", 3.0),
    ("émile", "alice", 0.75),
    ("007", "alice", 4.0),
    ('say "hi"', "bob", 1.5),
]


def str_nodes() -> list[str]:
    seen: dict[str, None] = {}
    for a, b, _ in STR_EDGES:
        seen.setdefault(a)
        seen.setdefault(b)
    return list(seen)


def record(
    path: Path,
    writer: str,
    how: str,
    *,
    edges: list[tuple[Any, Any, float | None]],
    nodes: list[Any],
    directed: bool,
    expect: str = "graph",
    options: dict[str, Any] | None = None,
    why: str = "",
    known_issue: str = "",
) -> None:
    rel = path.relative_to(HERE).as_posix()
    ENTRIES.append(
        {
            "file": rel,
            "writer": writer,
            "how": how,
            "options": options or {},
            "expect": expect,
            "why": why,
            **({"known_issue": known_issue} if known_issue else {}),
            "graph": {
                "directed": directed,
                "nodes": [str(v) for v in nodes],
                "edges": [[str(a), str(b), w] for a, b, w in edges],
            },
        }
    )


def int_graph(weighted: bool = False, declared_nodes: bool = False) -> dict[str, Any]:
    edges = [(a, b, float(1 + (a + b) % 3) if weighted else None) for a, b in INT_EDGES]
    nodes = INT_NODES if declared_nodes else sorted({v for e in INT_EDGES for v in e})
    return {"edges": edges, "nodes": nodes, "directed": False}


def str_graph(weighted: bool = True, directed: bool = True) -> dict[str, Any]:
    edges = [(a, b, w if weighted else None) for a, b, w in STR_EDGES]
    return {"edges": edges, "nodes": str_nodes(), "directed": directed}


def out(writer: str, name: str) -> Path:
    d = HERE / writer
    d.mkdir(parents=True, exist_ok=True)
    return d / name


# ----------------------------------------------------------------------------- R


def r_files() -> None:
    if shutil.which("Rscript") is None:
        sys.exit("Rscript not found (apt-get install r-base-core)")
    frm = ", ".join(json.dumps(a) for a, _, _ in STR_EDGES)
    to = ", ".join(json.dumps(b) for _, b, _ in STR_EDGES)
    w = ", ".join(repr(x) for _, _, x in STR_EDGES)
    ia = ", ".join(str(a) for a, _ in INT_EDGES)
    ib = ", ".join(str(b) for _, b in INT_EDGES)
    script = f"""
    s <- data.frame(from = c({frm}), to = c({to}), weight = c({w}), stringsAsFactors = FALSE)
    i <- data.frame(from = c({ia}), to = c({ib}))
    write.csv(s, "{out("r", "write_csv_rownames.csv")}")
    write.csv(s, "{out("r", "write_csv.csv")}", row.names = FALSE)
    write.csv2(s, "{out("r", "write_csv2.csv")}", row.names = FALSE)
    write.table(i, "{out("r", "write_table_tab.txt")}", sep = "\\t", quote = FALSE,
                row.names = FALSE, col.names = FALSE)
    write.table(i, "{out("r", "write_table_default.txt")}")
    write.csv(i, "{out("r", "write_csv_int_rownames.csv")}")
    """
    subprocess.run(["Rscript", "-e", script], check=True)
    how = "R {}: {}"
    record(
        out("r", "write_csv_rownames.csv"),
        "R",
        how.format("4.2", 'write.csv(df)  # row names in an unnamed first column ""'),
        **str_graph(),
        options={"directed": True, "weighted": True},
        expect="either",
        why='the header "" names a row-number column: read from/to/weight or refuse',
    )
    record(
        out("r", "write_csv.csv"),
        "R",
        how.format("4.2", "write.csv(df, row.names = FALSE)"),
        **str_graph(),
        options={"directed": True, "weighted": True},
    )
    record(
        out("r", "write_csv2.csv"),
        "R",
        how.format("4.2", "write.csv2(df, row.names = FALSE)  # ';' and decimal commas"),
        **str_graph(),
        options={"directed": True, "weighted": True},
        expect="either",
        why="decimal commas: 0,5 is one half, never 0 or 5",
    )
    record(
        out("r", "write_table_tab.txt"),
        "R",
        how.format(
            "4.2", 'write.table(df, sep="\\t", quote=FALSE, row.names=FALSE, col.names=FALSE)'
        ),
        **int_graph(),
    )
    record(
        out("r", "write_table_default.txt"),
        "R",
        how.format("4.2", "write.table(df)  # quoted header one field short, quoted row names"),
        **int_graph(),
    )
    record(
        out("r", "write_csv_int_rownames.csv"),
        "R",
        how.format("4.2", "write.csv(df) with integer ids"),
        **int_graph(),
        expect="either",
        why="the row numbers are a column of integers like the ids: never edges from them",
    )


# ----------------------------------------------------------------------------- Spark


def spark_files() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    s = spark.createDataFrame(
        [(a, b, float(w)) for a, b, w in STR_EDGES], "src string, dst string, weight double"
    )
    i = spark.createDataFrame([(a, b) for a, b in INT_EDGES], "src long, dst long")
    tmp = Path(tempfile.mkdtemp())
    for name, df, opts in [
        ("csv_header", s, {"header": True}),
        ("csv_noheader_int", i, {"header": False}),
    ]:
        target = tmp / name
        df.coalesce(1).write.options(**opts).csv(str(target))
        part = next(target.glob("part-*.csv"))
        shutil.copy(part, out("spark", f"{name}.csv"))
    target = tmp / "parquet"
    s.coalesce(1).write.parquet(str(target))
    shutil.copy(next(target.glob("part-*.parquet")), out("spark", "part.parquet"))
    spark.stop()
    shutil.rmtree(tmp)
    how = "PySpark 4: df.coalesce(1).write.{}  (the part file)"
    record(
        out("spark", "csv_header.csv"),
        "Spark",
        how.format("csv(path, header=True)  # quotes escaped as \\\" (Spark's default)"),
        **str_graph(),
        options={"directed": True, "weighted": True},
        expect="refuse",
        why='Spark escapes a quote as \\" (not RFC 4180\'s ""): refused, naming the escape option',
    )
    record(
        out("spark", "csv_noheader_int.csv"),
        "Spark",
        how.format("csv(path)"),
        **int_graph(),
    )
    record(
        out("spark", "part.parquet"),
        "Spark",
        how.format("parquet(path)"),
        **str_graph(),
        options={"directed": True, "weighted": True},
    )


# ----------------------------------------------------------------------------- Polars, DuckDB


def polars_files() -> None:
    import polars as pl

    s = pl.DataFrame(
        {
            "source": [a for a, _, _ in STR_EDGES],
            "target": [b for _, b, _ in STR_EDGES],
            "weight": [w for _, _, w in STR_EDGES],
        }
    )
    i = pl.DataFrame({"u": [a for a, _ in INT_EDGES], "v": [b for _, b in INT_EDGES]})
    s.write_csv(out("polars", "write_csv.csv"))
    s.write_csv(out("polars", "write_csv_tab.tsv"), separator="\t")
    s.write_parquet(out("polars", "write_parquet.parquet"))
    s.write_ipc(out("polars", "write_ipc.arrow"))
    i.write_csv(out("polars", "write_csv_int.csv"))
    i.write_parquet(out("polars", "write_parquet_int.parquet"))
    opts = {"directed": True, "weighted": True}
    v = f"Polars {pl.__version__}"
    record(
        out("polars", "write_csv.csv"),
        "Polars",
        f"{v}: df.write_csv(path)",
        **str_graph(),
        options=opts,
    )
    record(
        out("polars", "write_csv_tab.tsv"),
        "Polars",
        f"{v}: df.write_csv(path, separator='\\t')",
        **str_graph(),
        options=opts,
    )
    record(
        out("polars", "write_parquet.parquet"),
        "Polars",
        f"{v}: df.write_parquet(path)",
        **str_graph(),
        options=opts,
    )
    record(
        out("polars", "write_ipc.arrow"),
        "Polars",
        f"{v}: df.write_ipc(path)",
        **str_graph(),
        options=opts,
    )
    record(out("polars", "write_csv_int.csv"), "Polars", f"{v}: df.write_csv(path)", **int_graph())
    record(
        out("polars", "write_parquet_int.parquet"),
        "Polars",
        f"{v}: df.write_parquet(path)",
        **int_graph(),
    )


def duckdb_files() -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE s (edge_id INTEGER, src VARCHAR, dst VARCHAR, weight DOUBLE)")
    con.executemany(
        "INSERT INTO s VALUES (?, ?, ?, ?)", [(k, a, b, w) for k, (a, b, w) in enumerate(STR_EDGES)]
    )
    con.execute("CREATE TABLE i (ts BIGINT, a BIGINT, b BIGINT)")
    con.executemany(
        "INSERT INTO i VALUES (?, ?, ?)",
        [(1_700_000_000 + k, a, b) for k, (a, b) in enumerate(INT_EDGES)],
    )
    con.execute(f"COPY (SELECT src, dst, weight FROM s) TO '{out('duckdb', 'copy.csv')}' (HEADER)")
    con.execute(f"COPY s TO '{out('duckdb', 'copy_edge_id.parquet')}' (FORMAT parquet)")
    con.execute(f"COPY s TO '{out('duckdb', 'copy_edge_id.csv')}' (HEADER)")
    con.execute(f"COPY i TO '{out('duckdb', 'copy_ts.csv')}' (HEADER false)")
    con.execute(f"COPY i TO '{out('duckdb', 'copy_ts.parquet')}' (FORMAT parquet)")
    v = f"DuckDB {duckdb.__version__}"
    opts = {"directed": True, "weighted": True}
    record(
        out("duckdb", "copy.csv"),
        "DuckDB",
        f"{v}: COPY (src, dst, weight) TO 'f.csv' (HEADER)",
        **str_graph(),
        options=opts,
    )
    record(
        out("duckdb", "copy_edge_id.parquet"),
        "DuckDB",
        f"{v}: COPY (edge_id, src, dst, weight) TO 'f.parquet'",
        **str_graph(),
        options=opts,
        expect="either",
        why="an edge_id column first: src/dst by name, or refuse; never edge_id -> src",
    )
    record(
        out("duckdb", "copy_edge_id.csv"),
        "DuckDB",
        f"{v}: COPY (edge_id, src, dst, weight) TO 'f.csv' (HEADER)",
        **str_graph(),
        options=opts,
        expect="either",
        why="an edge_id column first: src/dst by name, or refuse; never edge_id -> src",
    )
    record(
        out("duckdb", "copy_ts.csv"),
        "DuckDB",
        f"{v}: COPY (ts, a, b) TO 'f.csv' (HEADER false)",
        **int_graph(),
        expect="refuse",
        why="three integer columns without names: which two are the edge cannot be known",
    )
    record(
        out("duckdb", "copy_ts.parquet"),
        "DuckDB",
        f"{v}: COPY (ts, a, b) TO 'f.parquet'",
        **int_graph(),
        expect="either",
        why="columns ts, a, b: no src/dst names, so refuse (or read a, b if a rule names them)",
    )


# ----------------------------------------------------------------------------- igraph


def igraph_files() -> None:
    import igraph as ig

    g = ig.Graph(n=8, edges=[(a - 1, b - 1) for a, b in INT_EDGES], directed=False)
    g.vs["name"] = [str(v) for v in INT_NODES]
    g.es["weight"] = [float(1 + (a + b) % 3) for a, b in INT_EDGES]
    v = f"python-igraph {ig.__version__}"
    # write_edgelist writes 0-based vertex indices, the graph igraph holds
    g.write_edgelist(str(out("igraph", "edgelist.txt")))
    zero_based = [(a - 1, b - 1, None) for a, b in INT_EDGES]
    record(
        out("igraph", "edgelist.txt"),
        "igraph",
        f"{v}: g.write_edgelist(path)",
        edges=zero_based,
        nodes=sorted({x for e in zero_based for x in e[:2]}),
        directed=False,
    )
    g.write_ncol(str(out("igraph", "graph.ncol")))
    record(
        out("igraph", "graph.ncol"),
        "igraph",
        f"{v}: g.write_ncol(path)  # names and weights",
        **int_graph(weighted=True),
        options={"weighted": True},
        expect="either",
        why=".ncol is 'name name weight': weights read, or refused until --weighted is said",
    )
    g.write_lgl(str(out("igraph", "graph.lgl")))
    record(
        out("igraph", "graph.lgl"),
        "igraph",
        f"{v}: g.write_lgl(path)  # '# vertex' then its neighbours",
        **int_graph(weighted=True),
        options={"weighted": True},
        expect="refuse",
        why="LGL: a '# name' line starts each vertex; reading it as comments drops every edge",
    )
    g.write_pajek(str(out("igraph", "graph.net")))
    record(
        out("igraph", "graph.net"),
        "igraph",
        f"{v}: g.write_pajek(path)",
        **int_graph(weighted=True, declared_nodes=True),
        options={"weighted": True},
        expect="either",
        why="Pajek: read with *Vertices (8 is isolated), or refuse naming the format",
    )
    g.write_graphml(str(out("igraph", "graph.graphml")))
    # GraphML identifies a node by its id (igraph writes n0..n7; the names are data), as
    # networkx.read_graphml and Gephi read it
    record(
        out("igraph", "graph.graphml"),
        "igraph",
        f"{v}: g.write_graphml(path)",
        edges=[(f"n{a - 1}", f"n{b - 1}", float(1 + (a + b) % 3)) for a, b in INT_EDGES],
        nodes=[f"n{v - 1}" for v in INT_NODES],
        directed=False,
        options={"weighted": True},
    )
    g.write_gml(str(out("igraph", "graph.gml")))
    record(
        out("igraph", "graph.gml"),
        "igraph",
        f"{v}: g.write_gml(path)",
        **int_graph(weighted=True, declared_nodes=True),
        expect="refuse",
        why="GML is not read: refused naming ie.from_networkx",
    )
    g.write_dot(str(out("igraph", "graph.dot")))
    record(
        out("igraph", "graph.dot"),
        "igraph",
        f"{v}: g.write_dot(path)",
        **int_graph(declared_nodes=True),
        expect="refuse",
        why="DOT is not read: refused naming ie.from_networkx",
    )
    g.write_leda(str(out("igraph", "graph.leda")))
    record(
        out("igraph", "graph.leda"),
        "igraph",
        f"{v}: g.write_leda(path)",
        **int_graph(declared_nodes=True),
        expect="refuse",
        why="LEDA: counts and node blocks first, never edges",
    )
    d = ig.Graph(n=8, edges=[(a - 1, b - 1) for a, b in INT_EDGES if a != b], directed=True)
    d.write_dimacs(str(out("igraph", "graph.dimacs")), source=0, target=7)
    record(
        out("igraph", "graph.dimacs"),
        "igraph",
        f"{v}: g.write_dimacs(path, source=0, target=7)  # 'p max 8 9', 'a u v cap'",
        **int_graph(declared_nodes=True),
        expect="refuse",
        why="DIMACS: 'p'/'n'/'a' lines; never read as edges of letters",
    )


# ----------------------------------------------------------------------------- handmade formats


def write(path: Path, text: str, *, bom: bool = False, crlf: bool = False) -> None:
    if crlf:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)


def csv_field(x: str, sep: str) -> str:
    return f'"{x.replace(chr(34), chr(34) * 2)}"' if any(c in x for c in f'{sep}"\n ') else x


def excel_files() -> None:
    # Excel "CSV UTF-8 (Comma delimited)": BOM, CRLF, quotes only where needed.
    rows = "".join(f"{csv_field(a, ',')},{csv_field(b, ',')},{w}\n" for a, b, w in STR_EDGES)
    write(out("excel", "csv_utf8.csv"), "source,target,weight\n" + rows, bom=True, crlf=True)
    record(
        out("excel", "csv_utf8.csv"),
        "Excel",
        "Excel 365 'CSV UTF-8': BOM, CRLF, quotes where needed (written by hand)",
        **str_graph(),
        options={"directed": True, "weighted": True},
    )
    # A European-locale Excel: ';' separator and decimal commas, sometimes a 'sep=' hint line.
    rows = "".join(
        f"{csv_field(a, ';')};{csv_field(b, ';')};{str(w).replace('.', ',')}\n"
        for a, b, w in STR_EDGES
    )
    write(
        out("excel", "csv_semicolon_decimal_comma.csv"), "source;target;weight\n" + rows, crlf=True
    )
    record(
        out("excel", "csv_semicolon_decimal_comma.csv"),
        "Excel",
        "Excel (German locale) 'CSV (Trennzeichen-getrennt)': ';' and decimal commas",
        **str_graph(),
        options={"directed": True, "weighted": True},
        expect="either",
        why="0,5 is one half: read so, or refuse; never 0 or 5",
    )
    write(
        out("excel", "csv_sep_hint.csv"),
        "sep=;\nsource;target\n" + "".join(f"{a};{b}\n" for a, b in INT_EDGES),
        crlf=True,
    )
    record(
        out("excel", "csv_sep_hint.csv"),
        "Excel",
        "Excel's 'sep=;' hint line before the header",
        **int_graph(),
        expect="either",
        why="'sep=;' is not a node: read the rest, or refuse",
    )


def snap_files() -> None:
    # SNAP's text format: '#' comment lines, a tab-separated header comment, tab edges.
    body = "".join(f"{a}\t{b}\n" for a, b in INT_EDGES)
    write(
        out("snap", "ca-Toy.txt"),
        "# Undirected graph (each unordered pair of nodes is saved once): ca-Toy.txt\n"
        "# Collaboration network of a toy field\n"
        f"# Nodes: 7 Edges: {len(INT_EDGES)}\n"
        "# FromNodeId\tToNodeId\n" + body,
    )
    record(
        out("snap", "ca-Toy.txt"),
        "SNAP",
        "SNAP edge list layout (e.g. ca-GrQc.txt), written by hand",
        **int_graph(),
    )
    d = [(a, b) for a, b in INT_EDGES if a != b]
    write(
        out("snap", "wiki-Toy.txt"),
        "# Directed graph (each unordered pair of nodes is saved once): wiki-Toy.txt\n"
        f"# Nodes: 7 Edges: {len(d)}\n# FromNodeId\tToNodeId\n"
        + "".join(f"{a}\t{b}\n" for a, b in d),
    )
    record(
        out("snap", "wiki-Toy.txt"),
        "SNAP",
        "SNAP directed edge list layout (e.g. wiki-Vote.txt), read with directed=True",
        edges=[(a, b, None) for a, b in d],
        nodes=sorted({x for e in d for x in e}),
        directed=True,
        options={"directed": True},
    )


def konect_files() -> None:
    # KONECT out.* files: '% sym|asym|bip <weights>' then '% edges n1 n2', then 'u v [w [t]]'.
    body = "".join(f"{a} {b}\n" for a, b in INT_EDGES)
    write(out("konect", "out.toy_unweighted"), f"% sym unweighted\n% {len(INT_EDGES)} 8 8\n" + body)
    record(
        out("konect", "out.toy_unweighted"),
        "KONECT",
        "KONECT out.* file, '% sym unweighted' (written by hand)",
        **int_graph(),
    )
    d = [(a, b) for a, b in INT_EDGES if a != b]
    body = "".join(f"{a} {b} 1 {1_136_073_600 + 60 * k}\n" for k, (a, b) in enumerate(d))
    write(out("konect", "out.toy_temporal"), f"% asym positive\n% {len(d)} 8 8\n" + body)
    record(
        out("konect", "out.toy_temporal"),
        "KONECT",
        "KONECT temporal file, '% asym positive', columns u v weight timestamp",
        edges=[(a, b, None) for a, b in d],
        nodes=sorted({x for e in d for x in e}),
        directed=True,
        options={"directed": True},
        expect="either",
        why="four columns: the timestamp is never read as a node, nor silently as a weight",
    )
    body = "".join(f"{a} {b}\n" for a, b in [(1, 1), (1, 2), (2, 1), (3, 2)])
    write(out("konect", "out.toy_bipartite"), "% bip unweighted\n% 4 3 2\n" + body)
    record(
        out("konect", "out.toy_bipartite"),
        "KONECT",
        "KONECT bipartite file, '% bip unweighted': left ids 1..3 and right ids 1..2 are "
        "different nodes",
        edges=[("L1", "R1", None), ("L1", "R2", None), ("L2", "R1", None), ("L3", "R2", None)],
        nodes=["L1", "L2", "L3", "R1", "R2"],
        directed=False,
        expect="refuse",
        why="left 1 and right 1 are two nodes; reading one id space merges them",
    )


def matrix_market_files() -> None:
    lower = sorted((max(a, b), min(a, b)) for a, b in INT_EDGES)
    body = "".join(f"{i} {j}\n" for i, j in lower)
    write(
        out("suitesparse", "toy.mtx"),
        "%%MatrixMarket matrix coordinate pattern symmetric\n"
        "%-------------------------------------------------------------------------------\n"
        "% UF Sparse Matrix Collection, Tim Davis\n% name: Toy/toy\n% kind: undirected graph\n"
        "%-------------------------------------------------------------------------------\n"
        f"8 8 {len(lower)}\n" + body,
    )
    record(
        out("suitesparse", "toy.mtx"),
        "SuiteSparse",
        "SuiteSparse Matrix Collection .mtx layout (pattern symmetric, lower triangle)",
        **int_graph(declared_nodes=True),
    )
    w = int_graph(weighted=True, declared_nodes=True)
    body = "".join(
        f"{max(a, b)} {min(a, b)} {wt}\n"
        for a, b, wt in sorted(w["edges"], key=lambda e: (max(e[:2]), min(e[:2])))
    )
    write(
        out("networkrepository", "toy-weighted.mtx"),
        f"%%MatrixMarket matrix coordinate real symmetric\n8 8 {len(lower)}\n" + body,
    )
    record(
        out("networkrepository", "toy-weighted.mtx"),
        "Network Repository",
        "Network Repository .mtx (real symmetric), read with weighted=True",
        **w,
        options={"weighted": True},
    )
    body = "".join(f"{a},{b}\n" for a, b in INT_EDGES)
    write(out("networkrepository", "toy.edges"), f"% {len(INT_EDGES)} 8 8\n" + body)
    record(
        out("networkrepository", "toy.edges"),
        "Network Repository",
        "Network Repository .edges (comma separated, '%' size comment)",
        **int_graph(),
    )
    d = [(a, b) for a, b in INT_EDGES if a != b]
    body = "".join(f"{a} {b} {a + b}\n" for a, b in d)
    write(
        out("suitesparse", "toy-general-integer.mtx"),
        f"%%MatrixMarket matrix coordinate integer general\n8 8 {len(d)}\n" + body,
    )
    record(
        out("suitesparse", "toy-general-integer.mtx"),
        "SuiteSparse",
        "a general (directed) integer matrix, read with directed=True, weighted=True",
        edges=[(a, b, float(a + b)) for a, b in d],
        nodes=INT_NODES,
        directed=True,
        options={"directed": True, "weighted": True},
    )
    write(
        out("suitesparse", "toy-array.mtx"),
        "%%MatrixMarket matrix array real general\n2 2\n1.0\n0.0\n0.0\n1.0\n",
    )
    record(
        out("suitesparse", "toy-array.mtx"),
        "SuiteSparse",
        "a dense 'array' matrix",
        edges=[(1, 1, 1.0), (2, 2, 1.0)],
        nodes=[1, 2],
        directed=True,
        expect="refuse",
        why="a dense array is not a graph file",
    )


def metis_files() -> None:
    adj: dict[int, list[int]] = {v: [] for v in range(1, 8)}
    for a, b in INT_EDGES:
        if a != b:
            adj[a].append(b)
            adj[b].append(a)
    m = sum(len(x) for x in adj.values()) // 2
    body = "".join(" ".join(map(str, sorted(adj[v]))) + "\n" for v in range(1, 8))
    write(out("metis", "toy.graph.txt"), f"7 {m}\n" + body)
    simple = [(a, b, None) for a, b in INT_EDGES if a != b]
    record(
        out("metis", "toy.graph.txt"),
        "METIS",
        "METIS graph file: 'n m' then one adjacency line per vertex",
        edges=simple,
        nodes=list(range(1, 8)),
        directed=False,
        expect="refuse",
        why="counts first, then adjacency lines: never read as edges",
    )


def gephi_files() -> None:
    rows = "".join(
        f"{csv_field(a, ',')},{csv_field(b, ',')},Directed,{k},,,{w}\n"
        for k, (a, b, w) in enumerate(STR_EDGES)
    )
    write(out("gephi", "edges.csv"), "Source,Target,Type,Id,Label,timeset,Weight\n" + rows)
    record(
        out("gephi", "edges.csv"),
        "Gephi",
        "Gephi 0.10 Data Laboratory 'Export table' of edges",
        **str_graph(),
        options={"directed": True, "weighted": True},
        expect="either",
        why="Source/Target/Weight by name among seven columns, or refuse naming --columns",
    )
    nodes = "".join(f'      <node id="{v}" label="{v}"/>\n' for v in INT_NODES)
    edges = "".join(
        f'      <edge id="{k}" source="{a}" target="{b}"/>\n' for k, (a, b) in enumerate(INT_EDGES)
    )
    write(
        out("gephi", "graph.gexf"),
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<gexf xmlns="http://gexf.net/1.3" version="1.3">\n'
        '  <graph mode="static" defaultedgetype="undirected">\n'
        f"    <nodes>\n{nodes}    </nodes>\n    <edges>\n{edges}    </edges>\n"
        "  </graph>\n</gexf>\n",
    )
    record(
        out("gephi", "graph.gexf"),
        "Gephi",
        "GEXF 1.3 as Gephi writes it",
        **int_graph(declared_nodes=True),
        expect="refuse",
        why="GEXF is not read: refused naming ie.from_networkx",
    )


def main() -> None:
    for d in HERE.iterdir():
        if d.is_dir() and d.name != "__pycache__":
            shutil.rmtree(d)
    for make in (
        r_files,
        spark_files,
        polars_files,
        duckdb_files,
        igraph_files,
        excel_files,
        snap_files,
        konect_files,
        matrix_market_files,
        metis_files,
        gephi_files,
    ):
        make()
    (HERE / "manifest.json").write_text(json.dumps(ENTRIES, indent=1, ensure_ascii=False) + "\n")
    writers = sorted({e["writer"] for e in ENTRIES})
    print(f"{len(ENTRIES)} files from {len(writers)} writers: {', '.join(writers)}")


if __name__ == "__main__":
    main()
