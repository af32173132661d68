"""The reading contract against files written by the tools people use.

Every file here is written at test time by its tool (pandas, networkx, scipy, pyarrow, numpy,
Python's csv module, and Polars, DuckDB and igraph when installed), or is a small committed
sample of a writer that is not a test dependency (``data/conformance/``, see its README). Each
is read through ``ie.convert``, the ``convert`` command and ``update --add`` (and
``from_pandas``/``from_arrow`` for frames), and must give exactly the graph the writing tool
holds (its networkx graph, its scipy matrix, its frame), or a one-line refusal that names the
flag which settles it, leaving nothing at the output path.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import cli
from instant_embedding.errors import GraphFormatError

nx = pytest.importorskip("networkx")
pd = pytest.importorskip("pandas")
sp = pytest.importorskip("scipy.sparse")
sio = pytest.importorskip("scipy.io")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FIXTURES = Path(__file__).parents[1] / "data" / "conformance"

Edges = dict[tuple[Any, Any], float]


@dataclass
class Expect:
    """The graph a writing tool holds: node ids, edges (``(u, v)`` with ``u <= v`` when
    undirected) and their weights (1.0 when unweighted)."""

    nodes: set[Any]
    edges: Edges
    directed: bool
    weighted: bool


@dataclass
class Case:
    name: str
    writer: str
    path: Path
    expect: Expect | None = None
    #: For a refusal: the Python parameter the message must name (e.g. "header=").
    refuse: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: The frame the tool wrote, for from_pandas (None: not a frame).
    frame: Any = None


def key(u: Any, v: Any, directed: bool) -> tuple[Any, Any]:
    return (u, v) if directed or u <= v else (v, u)


def held(g: Any) -> Expect:
    """What a graph of ours holds, read through its rows."""
    n = g.num_nodes
    ids = [x.item() if hasattr(x, "item") else x for x in g.ids(np.arange(n))]
    edges: Edges = {}
    for v in range(n):
        nb, w = g._native.neighbors(v)
        for j, u in enumerate(nb):
            edges[key(ids[v], ids[int(u)], g.directed)] = float(w[j]) if w is not None else 1.0
    return Expect(set(ids), edges, g.directed, g.weighted)


def from_nx(G: Any, weighted: bool, isolated: bool = True) -> Expect:
    d = G.is_directed()
    edges = {
        key(u, v, d): float(a.get("weight", 1.0)) if weighted else 1.0
        for u, v, a in G.edges(data=True)
    }
    nodes = set(G.nodes) if isolated else {x for e in edges for x in e}
    return Expect(nodes, edges, d, weighted)


def from_pairs(
    pairs: Any, directed: bool = False, weights: Any = None, nodes: Any = None
) -> Expect:
    edges: Edges = {}
    for i, (u, v) in enumerate(pairs):
        k = key(u, v, directed)
        w = 1.0 if weights is None else float(weights[i])
        edges[k] = edges.get(k, 0.0) + w if weights is not None else 1.0
    ns = {x for e in edges for x in e} | set(nodes or ())
    return Expect(ns, edges, directed, weights is not None)


def from_matrix(A: Any, weighted: bool) -> Expect:
    """A square scipy matrix as the graph it is: symmetric -> undirected (one triangle),
    otherwise directed; nodes ``1..n`` (Matrix Market numbering)."""
    A = sp.coo_matrix(A)
    sym = (abs(A - A.T) > 0).nnz == 0
    edges: Edges = {}
    for i, j, v in zip(A.row, A.col, A.data):
        if sym and i < j:
            continue
        edges[key(int(i) + 1, int(j) + 1, not sym)] = float(v) if weighted else 1.0
    return Expect(set(range(1, A.shape[0] + 1)), edges, not sym, weighted)


def assert_same(got: Expect, want: Expect, what: str) -> None:
    assert got.directed == want.directed, what
    assert got.weighted == want.weighted, what
    assert got.nodes == want.nodes, what
    assert set(got.edges) == set(want.edges), what
    for k, w in want.edges.items():
        assert got.edges[k] == pytest.approx(w, rel=1e-6), (what, k)


# ------------------------------------------------------------------------------ the corpus


def karate(weighted: bool = True) -> Any:
    G = nx.karate_club_graph()
    if not weighted:
        for _, _, a in G.edges(data=True):
            a.clear()
    return G


def named(G: Any) -> Any:
    return nx.relabel_nodes(G, {v: f"n{v}" for v in G.nodes})


def directed_graph() -> Any:
    G = nx.gnp_random_graph(25, 0.15, seed=3, directed=True)
    G.remove_nodes_from([v for v in list(G.nodes) if G.degree(v) == 0])
    return G


def float_weights(G: Any, seed: int = 5) -> Any:
    rng = np.random.default_rng(seed)
    for _, _, a in G.edges(data=True):
        a["weight"] = float(np.float32(rng.uniform(0.1, 9.0)))
    return G


def with_isolates(G: Any) -> Any:
    G = G.copy()
    G.add_nodes_from([100, 101] if isinstance(next(iter(G.nodes)), int) else ["iso1", "iso2"])
    return G


def networkx_cases(d: Path) -> Iterator[Case]:
    K, KU = karate(), karate(False)
    S = named(karate(False))
    D = directed_graph()
    W = float_weights(nx.path_graph(12))
    P = float_weights(nx.gnm_random_graph(30, 60, seed=2))
    P.remove_nodes_from([v for v in list(P.nodes) if P.degree(v) == 0])

    p = d / "nx_karate_data.edgelist"
    nx.write_edgelist(K, p)  # `0 1 {'weight': 4}`
    yield Case("edgelist data weight", "networkx", p, refuse="weighted=")
    yield Case(
        "edgelist data weighted", "networkx", p, from_nx(K, True), options={"weighted": True}
    )
    yield Case(
        "edgelist data unweighted", "networkx", p, from_nx(K, False), options={"weighted": False}
    )
    p = d / "nx_karate_nodata.edgelist"
    nx.write_edgelist(K, p, data=False)
    yield Case("edgelist no data", "networkx", p, from_nx(K, False))
    p = d / "nx_karate_emptydata.txt"
    nx.write_edgelist(KU, p)  # `0 1 {}`
    yield Case("edgelist empty data", "networkx", p, from_nx(KU, False))
    p = d / "nx_named.edgelist"
    nx.write_edgelist(S, p, data=False)
    yield Case("edgelist str ids", "networkx", p, from_nx(S, False))
    p = d / "nx_named_emptydata.edgelist"
    nx.write_edgelist(S, p)
    yield Case("edgelist str ids empty data", "networkx", p, from_nx(S, False))
    p = d / "nx_directed.edgelist"
    nx.write_edgelist(D, p, data=False)
    yield Case("edgelist directed", "networkx", p, from_nx(D, False), options={"directed": True})
    p = d / "nx_karate_comma.csv"
    nx.write_edgelist(KU, p, delimiter=",", data=False)  # `0,1` first: header or edge?
    yield Case("edgelist comma 0,1", "networkx", p, refuse="header=")
    yield Case(
        "edgelist comma no header", "networkx", p, from_nx(KU, False), options={"header": False}
    )
    p = d / "nx_named_tab.tsv"
    nx.write_edgelist(S, p, delimiter="\t", data=False)
    yield Case("edgelist tab str", "networkx", p, from_nx(S, False))
    p = d / "nx_karate.edgelist.gz"
    nx.write_edgelist(KU, p, data=False)
    yield Case("edgelist gzip", "networkx", p, from_nx(KU, False))
    p = d / "nx_named.edgelist.bz2"
    nx.write_edgelist(S, p, data=False)
    yield Case("edgelist bzip2", "networkx", p, from_nx(S, False))
    p = d / "nx_weighted.edgelist"
    nx.write_weighted_edgelist(W, p)  # `0 1 0.53`
    yield Case("weighted edgelist", "networkx", p, refuse="weighted=")
    yield Case("weighted edgelist w", "networkx", p, from_nx(W, True), options={"weighted": True})
    p = d / "nx_weighted_random.txt"
    nx.write_weighted_edgelist(P, p)
    yield Case(
        "weighted edgelist random", "networkx", p, from_nx(P, True), options={"weighted": True}
    )
    p = d / "nx_weighted_comma.csv"
    nx.write_weighted_edgelist(named(P), p, delimiter=",")
    yield Case("weighted edgelist csv", "networkx", p, refuse="weighted=")
    yield Case(
        "weighted edgelist csv w",
        "networkx",
        p,
        from_nx(named(P), True),
        options={"weighted": True, "header": False},
    )
    for name, G in (("karate", KU), ("named", S), ("isolates", with_isolates(KU))):
        p = d / f"nx_{name}.adjlist"
        nx.write_adjlist(G, p)
        yield Case(f"adjlist {name}", "networkx", p, from_nx(G, False))
    p = d / "nx_directed.adjlist"
    nx.write_adjlist(D, p)
    yield Case("adjlist directed", "networkx", p, from_nx(D, False), options={"directed": True})
    p = d / "nx_karate_adjlist.txt"
    nx.write_adjlist(KU, p)
    yield Case("adjlist as .txt", "networkx", p, refuse="format='adjlist'")
    yield Case("adjlist forced", "networkx", p, from_nx(KU, False), options={"format": "adjlist"})
    p = d / "nx_karate.multiline_adjlist"
    nx.write_multiline_adjlist(KU, p)
    yield Case("multiline adjlist", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_karate.graphml"
    nx.write_graphml(K, p)
    yield Case("graphml", "networkx", p, from_nx(K, True))
    yield Case("graphml unweighted", "networkx", p, from_nx(K, False), options={"weighted": False})
    p = d / "nx_karate.xml"
    nx.write_graphml(K, p)
    yield Case("graphml .xml", "networkx", p, from_nx(K, True))
    p = d / "nx_directed.graphml"
    nx.write_graphml(D, p)
    yield Case("graphml directed", "networkx", p, from_nx(D, False))
    p = d / "nx_named_isolates.graphml"
    nx.write_graphml(with_isolates(S), p)
    yield Case("graphml str ids, isolates", "networkx", p, from_nx(with_isolates(S), False))
    p = d / "nx_weighted.graphml.gz"
    nx.write_graphml(P, p)
    yield Case("graphml weighted gzip", "networkx", p, from_nx(P, True))
    p = d / "nx_lxml.graphml"
    nx.write_graphml_lxml(W, p)
    yield Case("graphml lxml writer", "networkx", p, from_nx(W, True))
    p = d / "hostile_doctype.graphml"
    p.write_text(
        '<?xml version="1.0"?><!DOCTYPE g [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]>'
        '<graphml><graph edgedefault="directed"><node id="&b;"/></graph></graphml>'
    )
    yield Case("graphml billion laughs", "hostile XML", p, refuse="DOCTYPE")
    p = d / "hostile_external.graphml"
    p.write_text(
        '<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<graphml><graph edgedefault="directed"><node id="&x;"/></graph></graphml>'
    )
    yield Case("graphml external entity", "hostile XML", p, refuse="DOCTYPE")
    p = d / "nx_karate.gexf"
    nx.write_gexf(K, p)
    yield Case("gexf", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_karate.net"
    nx.write_pajek(K, p)
    yield Case("pajek", "networkx", p, from_nx(K, True))
    yield Case("pajek unweighted", "networkx", p, from_nx(K, False), options={"weighted": False})
    p = d / "nx_karate_pajek.txt"
    nx.write_pajek(K, p)
    yield Case("pajek .txt", "networkx", p, from_nx(K, True))
    p = d / "nx_directed.net"
    nx.write_pajek(D, p)
    yield Case("pajek directed", "networkx", p, from_nx(D, False))
    p = d / "nx_named_spaces.net"
    Sp = nx.relabel_nodes(S, {v: f"node {v}" for v in S.nodes})
    nx.write_pajek(Sp, p)
    yield Case("pajek quoted labels", "networkx", p, from_nx(Sp, False))
    p = d / "nx_weighted.net.gz"
    nx.write_pajek(P, p)
    yield Case("pajek weighted gzip", "networkx", p, from_nx(P, True))
    p = d / "nx_karate.gml"
    nx.write_gml(K, p)
    yield Case("gml", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_karate_gml.txt"
    nx.write_gml(K, p)
    yield Case("gml .txt", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_karate.json"
    p.write_text(json.dumps(nx.node_link_data(K, edges="links")))
    yield Case("node-link json", "networkx", p, from_nx(K, True))


def scipy_cases(d: Path) -> Iterator[Case]:
    rng = np.random.default_rng(7)
    A = sp.random(9, 9, density=0.3, random_state=1, format="coo")
    A.data = np.float32(A.data + 0.1).astype(np.float64)
    S = sp.triu(A, k=0) + sp.triu(A, k=1).T
    B = (A != 0).astype(np.int64)
    Ints = sp.coo_matrix(
        (rng.integers(1, 9, size=12), (rng.integers(0, 7, 12), rng.integers(0, 7, 12))),
        shape=(10, 10),
    )
    Ints.sum_duplicates()

    p = d / "scipy_general_real.mtx"
    sio.mmwrite(p, A)
    yield Case("mtx general real", "scipy", p, from_matrix(A, True))
    yield Case(
        "mtx general real unweighted",
        "scipy",
        p,
        from_matrix(A, False),
        options={"weighted": False},
    )
    p = d / "scipy_symmetric_real.mtx"
    sio.mmwrite(p, S, symmetry="symmetric")
    yield Case("mtx symmetric real", "scipy", p, from_matrix(S, True))
    Sc = sp.coo_matrix(S)
    both = {(int(i) + 1, int(j) + 1): float(v) for i, j, v in zip(Sc.row, Sc.col, Sc.data)}
    yield Case(
        "mtx symmetric read directed",
        "scipy",
        p,
        Expect(set(range(1, 10)), both, True, True),
        options={"directed": True},
    )
    p = d / "scipy_pattern.mtx"
    sio.mmwrite(p, B, field="pattern")
    yield Case("mtx pattern", "scipy", p, from_matrix(B, False))
    yield Case("mtx pattern weighted", "scipy", p, refuse="weighted=", options={"weighted": True})
    p = d / "scipy_pattern_symmetric.mtx"
    sio.mmwrite(p, (S != 0).astype(np.int64), field="pattern", symmetry="symmetric")
    yield Case("mtx pattern symmetric", "scipy", p, from_matrix((S != 0).astype(np.int64), False))
    p = d / "scipy_integer_isolated.mtx"
    sio.mmwrite(p, Ints, field="integer")
    yield Case("mtx integer, isolated rows", "scipy", p, from_matrix(Ints, True))
    p = d / "scipy_real.mtx.gz"
    sio.mmwrite(d / "tmp.mtx", A)
    p.write_bytes(gzip.compress((d / "tmp.mtx").read_bytes()))
    os.remove(d / "tmp.mtx")
    yield Case("mtx gzip", "scipy", p, from_matrix(A, True))
    p = d / "scipy_real_mtx.txt"
    with open(p, "wb") as fh:  # mmwrite adds .mtx to a name without it
        sio.mmwrite(fh, A)
    yield Case("mtx named .txt", "scipy", p, from_matrix(A, True))
    p = d / "scipy_rect.mtx"
    sio.mmwrite(p, sp.random(4, 6, density=0.5, random_state=2))
    yield Case("mtx rectangular", "scipy", p, refuse="from_scipy")
    p = d / "scipy_complex.mtx"
    sio.mmwrite(p, sp.coo_matrix(np.array([[0, 1 + 2j], [3j, 0]])))
    yield Case("mtx complex", "scipy", p, refuse="'complex'")
    p = d / "scipy_skew.mtx"
    sio.mmwrite(p, sp.coo_matrix(np.array([[0.0, 2.0], [-2.0, 0.0]])), symmetry="skew-symmetric")
    yield Case("mtx skew-symmetric", "scipy", p, refuse="'skew-symmetric'")
    p = d / "scipy_dense.mtx"
    sio.mmwrite(p, np.array([[0.0, 1.0], [1.0, 0.0]]))
    yield Case("mtx dense array", "scipy", p, refuse="'array'")
    p = d / "scipy_negative.mtx"
    N = sp.coo_matrix(np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 2.0], [1.0, 0.0, 0.0]]))
    sio.mmwrite(p, N)
    yield Case("mtx negative values", "scipy", p, refuse="weighted=False")
    yield Case(
        "mtx negative pattern", "scipy", p, from_matrix(N, False), options={"weighted": False}
    )


def frame_ids(kind: str, rng: Any, n: int, m: int) -> tuple[Any, Any]:
    s, t = rng.integers(0, n, m), rng.integers(0, n, m)
    t = np.where(s == t, (t + 1) % n, t)
    if kind == "str":
        return np.array([f"u{x}" for x in s]), np.array([f"u{x}" for x in t])
    return s + 5, t + 5


def pandas_cases(d: Path) -> Iterator[Case]:
    rng = np.random.default_rng(11)
    s, t = frame_ids("int", rng, 20, 40)
    a = np.column_stack([s, t])
    ints = from_pairs(zip(s.tolist(), t.tolist()))
    ss, st = frame_ids("str", rng, 20, 40)
    strs = from_pairs(zip(ss.tolist(), st.tolist()))
    w = np.round(rng.uniform(0.5, 4.0, 40), 3)

    f = pd.DataFrame(a)
    p = d / "pd_intlabels_index.csv"
    f.to_csv(p)  # `,0,1` then `0,5,7`
    yield Case("pandas int labels + index", "pandas", p, ints, frame=f)
    p = d / "pd_intlabels_noindex.csv"
    f.to_csv(p, index=False)  # `0,1` then `5,7`
    yield Case("pandas int labels, index=False", "pandas", p, refuse="header=")
    yield Case("pandas int labels, header=True", "pandas", p, ints, options={"header": True})
    p = d / "pd_noheader_noindex.csv"
    f.to_csv(p, index=False, header=False)
    yield Case("pandas header=False", "pandas", p, ints)
    f3 = pd.DataFrame(np.column_stack([s, t, np.arange(40)]))
    p = d / "pd_intlabels3_noindex.csv"
    f3.to_csv(p, index=False)
    yield Case("pandas 3 int labels", "pandas", p, refuse="header=")
    f = pd.DataFrame({"src": s, "dst": t})
    p = d / "pd_src_dst.csv"
    f.to_csv(p, index=False)
    yield Case("pandas src/dst", "pandas", p, ints, frame=f)
    p = d / "pd_src_dst_index.csv"
    f.to_csv(p)
    yield Case("pandas src/dst + index", "pandas", p, ints, frame=f)
    f = pd.DataFrame({"a": ss, "b": st})
    p = d / "pd_ab_str_index.csv"
    f.to_csv(p)
    yield Case("pandas named str + index", "pandas", p, strs, frame=f)
    p = d / "pd_ab_str.csv"
    f.to_csv(p, index=False)
    yield Case("pandas named str", "pandas", p, strs, frame=f)
    f = pd.DataFrame({"source": ss, "target": st, "weight": w})
    p = d / "pd_weighted.csv"
    f.to_csv(p, index=False)
    sw = from_pairs(zip(ss.tolist(), st.tolist()), weights=w)
    yield Case("pandas weighted", "pandas", p, sw, frame=f)
    p = d / "pd_weighted.tsv"
    f.to_csv(p, index=False, sep="\t")
    yield Case("pandas weighted tsv", "pandas", p, sw)
    p = d / "pd_weighted_semicolon.csv"
    f.to_csv(p, index=False, sep=";", decimal=",")
    yield Case("pandas ; decimal comma", "pandas", p, sw)
    p = d / "pd_weighted.csv.gz"
    f.to_csv(p, index=False, compression="gzip")
    yield Case("pandas gzip", "pandas", p, sw)
    p = d / "pd_weighted.csv.zst"
    try:
        f.to_csv(p, index=False, compression="zstd")
        yield Case("pandas zstd", "pandas", p, sw)
    except Exception:  # noqa: BLE001 - zstandard missing
        pass
    f = pd.DataFrame({"ts": np.arange(40), "a": ss, "b": st})
    p = d / "pd_ts_a_b.csv"
    f.to_csv(p, index=False)
    yield Case("pandas ts,a,b", "pandas", p, refuse="src_col", frame=f)
    yield Case(
        "pandas ts,a,b chosen",
        "pandas",
        p,
        strs,
        options={"src_col": "a", "dst_col": "b"},
    )
    p = d / "pd_ts_a_b.parquet"
    f.to_parquet(p)
    yield Case("parquet ts,a,b", "pandas", p, refuse="src_col")
    f = pd.DataFrame({"edge_id": np.arange(40), "u": ss, "v": st})
    p = d / "pd_edgeid_u_v.parquet"
    f.to_parquet(p)
    yield Case("parquet edge_id,u,v", "pandas", p, strs, frame=f)
    p = d / "pd_edgeid_u_v.csv"
    f.to_csv(p, index=False)
    yield Case("csv edge_id,u,v", "pandas", p, strs, frame=f)
    f = pd.DataFrame({"from": s, "to": t, "weight": w})
    p = d / "pd_from_to.feather"
    f.to_feather(p)
    yield Case(
        "feather from/to", "pandas", p, from_pairs(zip(s.tolist(), t.tolist()), weights=w), frame=f
    )
    f = pd.DataFrame({"x": s, "y": t, "z": np.arange(40)})
    p = d / "pd_xyz.parquet"
    f.to_parquet(p)
    yield Case("parquet x,y,z", "pandas", p, refuse="src_col", frame=f)


def arrow_cases(d: Path) -> Iterator[Case]:
    rng = np.random.default_rng(13)
    ss, st = frame_ids("str", rng, 15, 30)
    strs = from_pairs(zip(ss.tolist(), st.tolist()))
    t = pa.table({"source": pa.array(ss).dictionary_encode(), "target": pa.array(st)})
    p = d / "pa_dict.parquet"
    pq.write_table(t, p)
    yield Case("pyarrow dictionary", "pyarrow", p, strs)
    s, u = frame_ids("int", rng, 15, 30)
    w = rng.uniform(0.5, 2, 30)
    t = pa.table({"u": s, "v": u, "weight": w})
    p = d / "pa_uvw.parquet"
    pq.write_table(t, p, row_group_size=7)
    yield Case(
        "pyarrow u,v,weight", "pyarrow", p, from_pairs(zip(s.tolist(), u.tolist()), weights=w)
    )
    p = d / "pa_uvw_noext"
    pq.write_table(t, p)
    yield Case(
        "pyarrow no extension", "pyarrow", p, from_pairs(zip(s.tolist(), u.tolist()), weights=w)
    )
    p = d / "pa_dataset"
    import pyarrow.dataset as ds

    ds.write_dataset(
        pa.table({"src": s, "dst": u, "part": s % 3}),
        p,
        format="parquet",
        partitioning=["part"],
    )
    yield Case("pyarrow dataset dir", "pyarrow", p, from_pairs(zip(s.tolist(), u.tolist())))
    import pyarrow.feather as feather

    p = d / "pa_table.arrow"
    feather.write_feather(pa.table({"node1": ss, "node2": st}), p)
    yield Case("pyarrow ipc node1/node2", "pyarrow", p, strs)


def stdlib_numpy_cases(d: Path) -> Iterator[Case]:
    rng = np.random.default_rng(17)
    s, t = frame_ids("int", rng, 12, 25)
    ints = from_pairs(zip(s.tolist(), t.tolist()))
    p = d / "np_savetxt.txt"
    np.savetxt(p, np.column_stack([s, t]), fmt="%d")
    yield Case("numpy savetxt", "numpy", p, ints)
    p = d / "np_savetxt_header.csv"
    np.savetxt(p, np.column_stack([s, t]), fmt="%d", delimiter=",", header="src,dst", comments="")
    yield Case("numpy savetxt header", "numpy", p, ints)
    p = d / "np_savetxt_commented_header.csv"
    np.savetxt(p, np.column_stack([s, t]), fmt="%d", delimiter=",", header="src,dst")
    yield Case("numpy savetxt # header", "numpy", p, ints)
    w = np.round(rng.uniform(1, 3, 25), 4)
    p = d / "np_savetxt_w.txt"
    np.savetxt(p, np.column_stack([s, t, w]), fmt=["%d", "%d", "%.4f"])
    yield Case("numpy savetxt 3 cols", "numpy", p, refuse="weighted=")
    yield Case(
        "numpy savetxt 3 cols w",
        "numpy",
        p,
        from_pairs(zip(s.tolist(), t.tolist()), weights=w),
        options={"weighted": True},
    )
    ss, st = frame_ids("str", rng, 12, 25)
    p = d / "csv_module.csv"
    with open(p, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["source", "target"])
        wr.writerows(zip(ss, st))
    yield Case("csv module header", "csv", p, from_pairs(zip(ss.tolist(), st.tolist())))
    p = d / "csv_module_quoted.csv"
    names = [f"{x}, Inc" for x in ss]
    with open(p, "w", newline="") as f:
        wr = csv.writer(f, quoting=csv.QUOTE_ALL)
        wr.writerow(["from", "to"])
        wr.writerows(zip(names, st))
    yield Case("csv module quoted", "csv", p, from_pairs(zip(names, st.tolist())))
    p = d / "csv_module_excel_tab.tsv"
    with open(p, "w", newline="") as f:
        wr = csv.writer(f, dialect="excel-tab")
        wr.writerows(zip(ss, st))
    yield Case("csv module excel-tab", "csv", p, from_pairs(zip(ss.tolist(), st.tolist())))
    p = d / "dot.gv"
    p.write_text("digraph G {\n  a -> b;\n  b -> c;\n}\n")
    yield Case("dot", "graphviz", p, refuse="ie.from_networkx")
    p = d / "metis.graph.txt"
    p.write_text("% METIS\n4 4\n2 3\n1 3 4\n1 2\n2\n")
    yield Case("metis", "METIS", p, refuse="format='adjlist'")
    p = d / "metis_cycle.txt"
    # A 5-cycle: every vertex line has two neighbours, as many fields as the counts line.
    p.write_text("5 5\n2 5\n1 3\n2 4\n3 5\n4 1\n")
    yield Case("metis 2-regular", "METIS", p, refuse="METIS")


def optional_cases(d: Path) -> Iterator[Case]:
    rng = np.random.default_rng(19)
    s, t = frame_ids("int", rng, 15, 30)
    ints = from_pairs(zip(s.tolist(), t.tolist()))
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        f = pl.DataFrame({"src": s, "dst": t})
        p = d / "pl.csv"
        f.write_csv(p)
        yield Case("polars csv", "polars", p, ints)
        p = d / "pl.parquet"
        f.write_parquet(p)
        yield Case("polars parquet", "polars", p, ints)
        p = d / "pl_noheader.csv"
        pl.DataFrame({"a": s, "b": t}).write_csv(p, include_header=False)
        yield Case("polars no header", "polars", p, ints)
        p = d / "pl_ab.csv"
        pl.DataFrame({"a": s, "b": t}).write_csv(p)
        yield Case("polars a,b", "polars", p, ints)
        p = d / "pl.tsv"
        f.write_csv(p, separator="\t")
        yield Case("polars tsv", "polars", p, ints)
    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        con = duckdb.connect()
        con.register("e", pd.DataFrame({"source": s, "target": t}))
        p = d / "duck.csv"
        con.execute(f"COPY e TO '{p}' (HEADER, DELIMITER ',')")
        yield Case("duckdb csv", "duckdb", p, ints)
        p = d / "duck.parquet"
        con.execute(f"COPY e TO '{p}' (FORMAT PARQUET)")
        yield Case("duckdb parquet", "duckdb", p, ints)
        p = d / "duck_noheader.csv"
        con.execute(f"COPY e TO '{p}' (HEADER false)")
        yield Case("duckdb no header", "duckdb", p, ints)
    try:
        import igraph
    except ImportError:
        igraph = None
    if igraph is not None:
        G = igraph.Graph.Famous("Zachary")
        pairs = [tuple(e) for e in G.get_edgelist()]
        want = from_pairs(pairs)
        p = d / "ig.edgelist"
        G.write_edgelist(str(p))
        yield Case("igraph edgelist", "igraph", p, want)
        p = d / "ig.ncol"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            G.write_ncol(str(p))
        yield Case("igraph ncol", "igraph", p, want)
        p = d / "ig.lgl"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            G.write_lgl(str(p))
        yield Case("igraph lgl", "igraph", p, refuse="one column")
        p = d / "ig.graphml"
        G.write_graphml(str(p))
        yield Case(
            "igraph graphml", "igraph", p, from_pairs([(f"n{u}", f"n{v}") for u, v in pairs])
        )
        p = d / "ig.net"
        G.write_pajek(str(p))
        yield Case("igraph pajek", "igraph", p, from_pairs([(u + 1, v + 1) for u, v in pairs]))
        for fmt, ext in (("gml", "gml"), ("dot", "dot")):
            p = d / f"ig.{ext}"
            G.save(str(p), format=fmt)
            yield Case(f"igraph {fmt}", "igraph", p, refuse="ie.from_networkx")


def fixture_cases(d: Path) -> Iterator[Case]:
    def f(name: str) -> Path:
        dst = d / name
        shutil.copy(FIXTURES / name, dst)
        return dst

    abc = from_pairs([("a", "b"), ("b", "c"), ("c", "a")])
    cyc = from_pairs([(1, 2), (2, 3), (3, 1)])
    yield Case("R write.csv", "R", f("r_write_csv.csv"), abc)
    yield Case("R write.csv ints", "R", f("r_write_csv_int.csv"), cyc)
    yield Case("R write.csv row.names=FALSE", "R", f("r_write_csv_rownames_false.csv"), cyc)
    yield Case("R write.table", "R", f("r_write_table.txt"), cyc)
    yield Case(
        "Spark csv",
        "Spark",
        f("spark_part-00000-6b1c-c000.csv"),
        from_pairs([("alice", "bob"), ("bob", "carol"), ("carol", "alice")]),
    )
    yield Case(
        "Spark csv header",
        "Spark",
        f("spark_header_part-00000-77ab-c000.csv"),
        from_pairs([(10, 20), (20, 30), (30, 10)]),
    )
    abcw = from_pairs([("A", "B"), ("B", "C"), ("C", "A")], weights=[1.5, 2.0, 0.5])
    yield Case("Excel UTF-8 CSV", "Excel", f("excel_utf8_bom_crlf.csv"), abcw)
    p = f("excel_de_semicolon.csv")
    yield Case("Excel ; locale", "Excel", p, refuse="src_col")
    yield Case(
        "Excel ; locale columns",
        "Excel",
        p,
        abcw,
        options={"src_col": "Quelle", "dst_col": "Ziel", "weight_col": "Gewicht"},
    )
    yield Case(
        "SNAP",
        "SNAP",
        f("snap_ca-GrQc_sample.txt"),
        from_pairs([(3466, 937), (3466, 5233), (937, 5233), (5233, 8579)]),
    )
    p = f("snap_sx-mathoverflow_sample.txt")
    yield Case("SNAP temporal", "SNAP", p, refuse="weighted=")
    yield Case(
        "SNAP temporal unweighted",
        "SNAP",
        p,
        from_pairs([(1, 4), (3, 4), (1, 2)]),
        options={"weighted": False},
    )
    yield Case(
        "KONECT",
        "KONECT",
        f("out.ucidata-zachary_sample"),
        from_pairs([(1, 2), (1, 3), (2, 3), (3, 4)]),
    )
    p = f("out.konect-positive_sample")
    yield Case("KONECT 4 columns", "KONECT", p, refuse="weighted=")
    yield Case(
        "KONECT 4 columns weighted",
        "KONECT",
        p,
        from_pairs([(1, 2), (2, 3), (3, 1)], weights=[1, 1, 1]),
        options={"weighted": True},
    )
    yield Case("KONECT bipartite", "KONECT", f("out.konect-bipartite_sample"), refuse="bipartite")
    K = nx.karate_club_graph()
    karate1 = from_pairs([(u + 1, v + 1) for u, v in K.edges()], nodes=range(1, 35))
    yield Case("SuiteSparse", "SuiteSparse", f("suitesparse_Newman_karate.mtx"), karate1)
    yield Case(
        "Network Repository mtx",
        "Network Repository",
        f("networkrepository_soc-dolphins_sample.mtx"),
        from_pairs([(2, 1), (3, 1), (4, 2), (5, 4)]),
    )
    yield Case(
        "Network Repository edges",
        "Network Repository",
        f("networkrepository_road_sample.edges"),
        from_pairs([(1, 2), (2, 3), (3, 4), (4, 1)]),
    )
    yield Case(
        "Network Repository weighted edges",
        "Network Repository",
        f("networkrepository_ia-contacts_sample.edges"),
        refuse="weighted=",
    )


def more_writer_cases(d: Path) -> Iterator[Case]:
    """Files that tools write around an edge list: delimiters in adjacency lists and edge data,
    pandas' other layouts, UTF-16 text, formats that look like edge lists."""
    K, KU = karate(), karate(False)
    S = named(KU)
    p = d / "nx_comma.adjlist"
    nx.write_adjlist(S, p, delimiter=",")  # `n0,n1,n2,...`
    yield Case("adjlist delimiter=','", "networkx", p, from_nx(S, False))
    p = d / "nx_multiline.adjlist"
    nx.write_multiline_adjlist(K, p)  # `0 16` then `1 {'weight': 4}`...
    yield Case("multiline adjlist .adjlist", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_comma_data.csv"
    nx.write_edgelist(K, p, delimiter=",")  # `0,1,{'weight': 4}`
    yield Case(
        "edgelist ',' data",
        "networkx",
        p,
        from_nx(K, True),
        options={"weighted": True, "header": False},
    )
    G = nx.Graph()
    G.add_edge("a", "b", weight=2.5, color="red")
    G.add_edge("b", "c", weight=1.0, color="x, y")
    p = d / "nx_comma_data_multi.txt"
    nx.write_edgelist(G, p, delimiter=",")  # `a,b,{'weight': 2.5, 'color': 'red'}`
    yield Case(
        "edgelist ',' data with commas", "networkx", p, from_nx(G, True), options={"weighted": True}
    )
    yield Case("edgelist ',' data, no flag", "networkx", p, refuse="weighted=")
    for name, write in (
        ("graph6.g6", nx.write_graph6),
        ("sparse6.s6", nx.write_sparse6),
    ):
        p = d / f"nx_{name}"
        write(KU, p)
        yield Case(name, "networkx", p, refuse="ie.from_networkx")
        p = d / f"nx_noheader_{name}.txt"
        write(KU, p, header=False)
        yield Case(f"{name} without header", "networkx", p, refuse="ie.from_networkx")
    for ascii_only in (False, True):
        p = d / f"nx_network_text_{ascii_only}.txt"
        with open(p, "w") as fh:
            nx.write_network_text(nx.balanced_tree(2, 3), fh, ascii_only=ascii_only)
        yield Case(
            f"write_network_text ascii={ascii_only}", "networkx", p, refuse="ie.from_networkx"
        )
    p = d / "nx_adjacency_data.json"
    p.write_text(json.dumps(nx.adjacency_data(KU)))
    yield Case("adjacency_data json", "networkx", p, refuse="ie.from_networkx")
    p = d / "nx_to_pandas_edgelist.csv"
    nx.to_pandas_edgelist(K).to_csv(p, index=False)
    yield Case("to_pandas_edgelist csv", "networkx", p, from_nx(K, True))

    rng = np.random.default_rng(23)
    s, t = frame_ids("int", rng, 20, 40)
    w = np.round(rng.uniform(0.5, 3.0, 40), 2)
    f = pd.DataFrame({"ts": np.arange(40), "source": s, "target": t, "weight": w})
    want = from_pairs(zip(s.tolist(), t.tolist()), weights=w)
    for orient in ("split", "table", "records", "values"):
        p = d / f"pd_json_{orient}.json"
        (f if orient != "values" else f[["source", "target", "weight"]]).to_json(p, orient=orient)
        yield Case(f"pandas to_json {orient}", "pandas", p, want)
    for orient in ("columns", "index"):
        p = d / f"pd_json_{orient}.json"
        f.to_json(p, orient=orient)
        yield Case(f"pandas to_json {orient}", "pandas", p, refuse="ie.from_pandas")
    p = d / "pd_to_string.txt"
    p.write_text(f.to_string())  # a header without the index's column
    yield Case("pandas to_string", "pandas", p, want)
    p = d / "pd_to_string_labels.txt"
    p.write_text(pd.DataFrame(np.column_stack([s, t])).to_string())  # `    0   1` over rows
    yield Case("pandas to_string int labels", "pandas", p, from_pairs(zip(s.tolist(), t.tolist())))
    p = d / "pd_utf16.tsv"
    f.to_csv(p, sep="\t", index=False, encoding="utf-16")  # Excel's "Unicode Text"
    yield Case("pandas utf-16 tsv", "pandas", p, want)
    p = d / "pd_utf16_str.txt"
    fs = pd.DataFrame({"source": [f"z\u00fcrich{x}" for x in s], "target": [f"n{x}" for x in t]})
    fs.to_csv(p, sep="\t", index=False, encoding="utf-16")
    yield Case(
        "pandas utf-16 str ids",
        "pandas",
        p,
        from_pairs(zip(fs.source.tolist(), fs.target.tolist())),
    )
    p = d / "np_adjacency.txt"
    A = nx.to_numpy_array(KU, dtype=int)
    np.savetxt(p, A, fmt="%d")  # a dense adjacency matrix
    yield Case("numpy savetxt adjacency matrix", "numpy", p, refuse="ie.from_scipy")

    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        p = d / "pl_stream.arrows"
        pl.DataFrame({"source": s, "target": t, "weight": w}).write_ipc_stream(p)
        yield Case("polars ipc stream", "polars", p, want)
        p = d / "pl_stream.arrow"
        pl.DataFrame({"source": s, "target": t, "weight": w}).write_ipc_stream(p)
        yield Case("polars ipc stream .arrow", "polars", p, want)
    try:
        import igraph
    except ImportError:
        igraph = None
    if igraph is not None:
        Z = igraph.Graph.Famous("Zachary")
        p = d / "ig_adjacency.txt"
        Z.write_adjacency(str(p))
        yield Case("igraph adjacency", "igraph", p, refuse="ie.from_scipy")
        p = d / "ig.dimacs"
        Zd = igraph.Graph(n=4, edges=[(0, 1), (1, 2), (2, 3)], directed=True)
        Zd.es["capacity"] = [1, 2, 3]
        Zd.write_dimacs(str(p), source=0, target=3, capacity="capacity")
        yield Case("igraph dimacs", "igraph", p, refuse="ie.from_networkx")
    try:
        import rustworkx as rx
    except ImportError:
        rx = None
    if rx is not None:
        R = rx.PyGraph()
        R.add_nodes_from(list(range(6)))
        redges = [(0, 1, 1.5), (1, 2, 2.0), (2, 3, 0.5), (3, 0, 4.0), (4, 5, 1.0)]
        R.add_edges_from(redges)
        pairs = [(u, v) for u, v, _ in redges]
        p = d / "rx_edge_list.txt"
        R.write_edge_list(str(p), weight_fn=str)
        yield Case(
            "rustworkx edge list",
            "rustworkx",
            p,
            from_pairs(pairs, weights=[x for *_, x in redges]),
            options={"weighted": True},
        )
        p = d / "rx_edge_list.csv"
        R.write_edge_list(str(p), deliminator=",")  # `0,1` first
        yield Case("rustworkx edge list ','", "rustworkx", p, refuse="header=")


def hand_written_cases(d: Path) -> Iterator[Case]:
    """Samples of tools that are not test dependencies, as they write them (the command that
    writes each is beside it)."""

    def f(name: str, text: str, encoding: str = "utf-8") -> Path:
        p = d / name
        p.write_bytes(text.encode(encoding))
        return p

    # R: write.table(data.frame(from=c("a","b"), to=c("b","c")), "r.txt")
    p = f("r_write_table_rownames.txt", '"from" "to"\n"1" "a" "b"\n"2" "b" "c"\n')
    yield Case("R write.table row names", "R", p, from_pairs([("a", "b"), ("b", "c")]))
    # Excel: Save As "Unicode Text" (UTF-16 LE with a BOM, TAB, CRLF)
    p = f("excel_unicode.txt", "\ufeffSource\tTarget\r\nA\tB\r\nB\tC\r\n", "utf-16-le")
    yield Case("Excel Unicode Text", "Excel", p, from_pairs([("A", "B"), ("B", "C")]))
    # Excel: a sheet with an empty column after the data, saved as CSV (a trailing comma)
    p = f("excel_trailing_comma.csv", "1,2,\r\n2,3,\r\n3,1,\r\n")
    yield Case("Excel trailing comma", "Excel", p, from_pairs([(1, 2), (2, 3), (3, 1)]))
    # Gephi: Data Laboratory > Export table (edges) of a directed graph
    gephi = "Source,Target,Type,Id,Label,Weight\na,b,Directed,0,,1.0\nb,a,Directed,1,,2.0\n"
    p = f("gephi_directed_edges.csv", gephi)
    yield Case("Gephi directed edge table", "Gephi", p, refuse="directed=")
    yield Case(
        "Gephi directed edge table, directed",
        "Gephi",
        p,
        from_pairs([("a", "b"), ("b", "a")], directed=True, weights=[1.0, 2.0]),
        options={"directed": True},
    )
    # yEd: File > Export > TGF
    p = f("yed.tgf", "1 Alice\n2 Bob\n3 Carol\n#\n1 2\n2 3 knows\n")
    yield Case("yEd TGF", "yEd", p, refuse="format='graphml'")
    p = f("yed_tgf.txt", "1 Alice\n2 Bob\n#\n1 2\n")
    yield Case("yEd TGF .txt", "yEd", p, refuse="format='graphml'")
    # Gephi / GUESS: export as GDF
    p = f(
        "gephi.gdf",
        "nodedef>name VARCHAR,label VARCHAR\na,A\nb,B\nedgedef>node1 VARCHAR,node2 VARCHAR\na,b\n",
    )
    yield Case("Gephi GDF", "Gephi", p, refuse="format='graphml'")
    # UCINET / NetDraw
    p = f("ucinet.txt", "DL n=3\nformat = edgelist1\ndata:\n1 2\n2 3\n")
    yield Case("UCINET DL", "UCINET", p, refuse="ie.from_networkx")
    p = f("netdraw.vna", "*node data\nID\na\nb\n*tie data\nfrom to strength\na b 1\n")
    yield Case("NetDraw VNA", "UCINET", p, refuse="ie.from_networkx")
    # DIMACS shortest-path challenge (.gr)
    p = f("dimacs.gr", "c 9th DIMACS\np sp 3 3\na 1 2 5\na 2 3 1\na 3 1 2\n")
    yield Case("DIMACS .gr", "DIMACS", p, refuse="ie.from_networkx")
    # METIS / Chaco files are conventionally named .graph
    p = f("metis.graph", "4 4\n2 3\n1 3 4\n1 2\n2\n")
    yield Case("METIS .graph", "METIS", p, refuse="METIS")


MAKERS: list[Callable[[Path], Iterator[Case]]] = [
    networkx_cases,
    scipy_cases,
    pandas_cases,
    arrow_cases,
    stdlib_numpy_cases,
    optional_cases,
    fixture_cases,
    more_writer_cases,
    hand_written_cases,
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    d = tmp_path_factory.mktemp("corpus")
    cases = [c for make in MAKERS for c in make(d)]
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    return cases


def _ids(cases: Any) -> list[str]:
    return [c.name for c in cases]


# ------------------------------------------------------------------------------ entry points

_FLAG = {
    ("weighted", True): ["--weighted"],
    ("weighted", False): ["--unweighted"],
    ("header", True): ["--header"],
    ("header", False): ["--no-header"],
    ("directed", True): ["--directed"],
    ("directed", False): ["--undirected"],
}


def flags(options: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in options.items():
        if (k, v) in _FLAG:
            out += _FLAG[(k, v)]
        else:
            out += ["--" + k.replace("_", "-"), str(v)]
    return out


def cli_flag(param: str) -> str:
    """The command-line spelling of a Python parameter a refusal names."""
    return cli.cli_names(param.rstrip("="))


def test_corpus_size(corpus: list[Case]) -> None:
    files = {c.path for c in corpus}
    writers = {c.writer for c in corpus}
    # The corpus is wide: many files from many writers (the optional ones add more).
    assert len(files) >= 80, len(files)
    assert len(writers) >= 12, sorted(writers)


def test_convert(corpus: list[Case], tmp_path: Path) -> None:
    """ie.convert gives the tool's graph, or refuses naming the parameter and writes nothing."""
    failures = []
    for i, c in enumerate(corpus):
        out = tmp_path / f"{i}.graph"
        try:
            g = ie.convert(c.path, out, **c.options)
        except Exception as e:  # noqa: BLE001 - every outcome is recorded
            msg = f"{type(e).__name__}: {e}"
            if not isinstance(e, (GraphFormatError, ValueError)):
                failures.append(f"{c.name}: {msg}")
                continue
            if c.refuse is None:
                failures.append(f"{c.name}: refused: {msg}")
            elif c.refuse not in msg or "\n" in msg:
                failures.append(f"{c.name}: refusal does not name {c.refuse!r}: {msg}")
            if out.exists():
                failures.append(f"{c.name}: a refusal left {out}")
            continue
        if c.refuse is not None:
            failures.append(f"{c.name}: read, but must be refused naming {c.refuse!r}")
            continue
        try:
            assert_same(held(g), c.expect, c.name)  # type: ignore[arg-type]
        except AssertionError as e:
            failures.append(f"{c.name}: wrong graph: {e}")
    assert not failures, "\n".join(failures)


def test_cli_convert(
    corpus: list[Case], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The convert command: the same graphs; refusals are one line naming the flag, exit 1."""
    failures = []
    for i, c in enumerate(corpus):
        out = tmp_path / f"{i}.graph"
        rc = cli.main(["convert", str(c.path), str(out), "-q", *flags(c.options)])
        err = capsys.readouterr().err.strip()
        if c.refuse is not None:
            want = cli_flag(c.refuse)
            if rc != 1 or want not in err or len(err.splitlines()) != 1:
                failures.append(f"{c.name}: rc={rc}, want one line naming {want!r}: {err}")
            if out.exists():
                failures.append(f"{c.name}: a refusal left {out}")
            continue
        if rc != 0:
            failures.append(f"{c.name}: rc={rc}: {err}")
            continue
        try:
            assert_same(held(ie.Graph.open(out)), c.expect, c.name)  # type: ignore[arg-type]
        except AssertionError as e:
            failures.append(f"{c.name}: wrong graph: {e}")
    assert not failures, "\n".join(failures)


_UPDATABLE = (
    ".csv",
    ".tsv",
    ".txt",
    ".edges",
    ".edgelist",
    ".adjlist",
    ".mtx",
    ".graphml",
    ".net",
    ".gz",
    ".bz2",
)


def _fresh(want: Expect) -> tuple[Any, Any]:
    if any(isinstance(x, str) for x in want.nodes):
        return "zz-fresh-a", "zz-fresh-b"
    return 10**12, 10**12 + 1


def test_update_reads_like_convert(
    corpus: list[Case], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """update --add reads each text file as convert does: the tool's edges are added to a graph
    of the same kind; a refused file leaves the graph as it was."""
    failures = []
    n = 0
    for i, c in enumerate(corpus):
        if c.path.is_dir() or not c.path.name.endswith(_UPDATABLE):
            continue
        if c.refuse is None and c.expect is None:
            continue
        want = c.expect
        directed = want.directed if want else False
        weighted = want.weighted if want else False
        a, b = _fresh(want) if want else (10**12, 10**12 + 1)
        base = tmp_path / f"u{i}.graph"
        g0 = ie.Graph.from_edges([a], [b], directed=directed, weights=[1.0] if weighted else None)
        g0.save(base)
        opts = {
            k: v
            for k, v in c.options.items()
            if k in ("header", "format", "src_col", "dst_col", "weight_col", "delimiter")
        }
        rc = cli.main(["update", str(base), "--add", str(c.path), "-q", *flags(opts)])
        err = capsys.readouterr().err.strip()
        n += 1
        if c.refuse is not None or (want is not None and want.weighted != weighted):
            if rc == 0 and c.refuse is not None and c.options.get("weighted") is None:
                # An unweighted graph takes the first two columns of a weighted file (its
                # weights cannot be stored); only refusals about the columns must hold.
                if "weighted=" in c.refuse:
                    continue
                failures.append(f"{c.name}: update read a file convert refuses")
            g = ie.Graph.open(base)
            if rc != 0 and g.num_edges != 1:
                failures.append(f"{c.name}: a refused update changed the graph")
            continue
        if rc != 0:
            failures.append(f"{c.name}: update rc={rc}: {err}")
            continue
        g = ie.Graph.open(base)
        got = held(g)
        exp_edges = dict(want.edges)  # type: ignore[union-attr]
        exp_edges[key(a, b, directed)] = 1.0
        if set(got.edges) != set(exp_edges):
            failures.append(
                f"{c.name}: update edges differ: missing "
                f"{sorted(set(exp_edges) - set(got.edges))[:5]}, "
                f"extra {sorted(set(got.edges) - set(exp_edges))[:5]}"
            )
            continue
        for k2, w in exp_edges.items():
            if got.edges[k2] != pytest.approx(w, rel=1e-6):
                failures.append(f"{c.name}: weight of {k2}: {got.edges[k2]} != {w}")
                break
    assert n >= 40, n
    assert not failures, "\n".join(failures)


def test_from_pandas_and_from_arrow(corpus: list[Case]) -> None:
    """A frame a tool wrote gives the same graph through from_pandas and from_arrow as its file
    through convert, or the same refusal."""
    failures = []
    seen = 0
    for c in corpus:
        if c.frame is None:
            continue
        seen += 1
        for name, build in (
            ("from_pandas", lambda f: ie.from_pandas(f)),
            ("from_arrow", lambda f: ie.from_arrow(pa.Table.from_pandas(f, preserve_index=False))),
        ):
            try:
                g = build(c.frame)
            except (GraphFormatError, ValueError) as e:
                if c.refuse is None:
                    failures.append(f"{c.name} {name}: refused: {e}")
                elif c.refuse not in str(e):
                    failures.append(f"{c.name} {name}: refusal does not name {c.refuse}: {e}")
                continue
            if c.refuse is not None:
                failures.append(f"{c.name} {name}: built, but convert refuses")
                continue
            got = held(g)
            want = c.expect
            assert want is not None
            # A frame's integer labels are column names "0", "1": the same edges.
            try:
                assert_same(got, want, f"{c.name} {name}")
            except AssertionError as e:
                failures.append(str(e))
    assert seen >= 8
    assert not failures, "\n".join(failures)


def _string_graph(path: Path, weighted: bool = False) -> None:
    ie.Graph.from_edges(
        ["alice", "carol"], ["bob", "dave"], weights=[1.0, 1.0] if weighted else None
    ).save(path)


def test_update_settles_a_first_line_by_the_graphs_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A headerless file whose first line's ids recur only in the graph: an edge, not a header
    (convert, which has no graph, takes it as a header and says so)."""
    base = tmp_path / "g.graph"
    _string_graph(base)
    f = tmp_path / "new.csv"
    f.write_text("alice,carol\nx1,x2\nx2,x3\n")
    assert cli.main(["update", str(base), "--add", str(f), "-q"]) == 0
    got = held(ie.Graph.open(base)).edges
    assert ("alice", "carol") in got and ("x1", "x2") in got and len(got) == 5
    assert cli.main(["update", str(base), "--remove", str(f)]) == 0
    err = capsys.readouterr().err
    assert "header line skipped" not in err
    assert set(held(ie.Graph.open(base)).edges) == {("alice", "bob"), ("carol", "dave")}
    # convert settles the same line by the file alone, and says so
    assert cli.main(["convert", str(f), str(tmp_path / "c.graph")]) == 0
    assert "header line skipped: " in capsys.readouterr().err


def test_update_prints_convert_notices_and_refuses_like_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "g.graph"
    _string_graph(base, weighted=True)
    f = tmp_path / "h.csv"
    f.write_text("id_a,id_b,weight\nerin,frank,2.5\n")
    assert cli.main(["update", str(base), "--add", str(f)]) == 0
    assert held(ie.Graph.open(base)).edges[("erin", "frank")] == 2.5
    assert "header line skipped: " in capsys.readouterr().err
    f2 = tmp_path / "pandas.csv"
    f2.write_text("0,1,2\nerin,gina,3\n")
    before = ie.Graph.open(base).num_edges
    assert cli.main(["update", str(base), "--add", str(f2)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--header" in err and "--no-header" in err
    assert ie.Graph.open(base).num_edges == before
    f3 = tmp_path / "three.txt"
    f3.write_text("erin frank 1 99\n")
    assert cli.main(["update", str(base), "--remove", str(f3)]) == 0
    assert ("erin", "frank") not in held(ie.Graph.open(base)).edges


def test_update_reads_mtx_and_adjlist_without_a_temporary_graph(tmp_path: Path) -> None:
    base = tmp_path / "g.graph"
    ie.Graph.from_edges([1], [2]).save(base)
    m = tmp_path / "m.mtx"
    m.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n4 4 2\n3 1\n4 3\n")
    a = tmp_path / "a.adjlist"
    a.write_text("# x\n7 8 9\n8\n")
    before = set(os.listdir(tmp_path))
    assert cli.main(["update", str(base), "--add", str(m), "--add", str(a), "-q"]) == 0
    assert set(held(ie.Graph.open(base)).edges) == {(1, 2), (1, 3), (3, 4), (7, 8), (7, 9)}
    # only the log appeared beside the graph
    assert set(os.listdir(tmp_path)) - before <= {"g.graph.live", "g.graph.lock"}
