"""JSON inputs (node-link, JSON Lines, edge arrays), checked against networkx's own reader."""

from __future__ import annotations

import gzip
import json
import os

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding.errors import GraphFormatError

nx = pytest.importorskip("networkx")


def as_nx(g: ie.Graph) -> nx.Graph:
    h = nx.DiGraph() if g.directed else nx.Graph()
    nodes = g.nodes if isinstance(g.nodes, list) else g.nodes.tolist()
    h.add_nodes_from(nodes)
    for u in nodes:
        nb = g.neighbors(u)
        w = g.edge_weights(u)
        for i, v in enumerate(nb if isinstance(nb, list) else nb.tolist()):
            h.add_edge(u, v, weight=1.0 if w is None else float(w[i]))
    return h


def same(g: ie.Graph, want: nx.Graph, weighted: bool) -> None:
    got = as_nx(g)
    assert g.directed == want.is_directed() and g.weighted == weighted
    assert sorted(map(repr, got.nodes)) == sorted(map(repr, want.nodes))
    assert g.num_edges == want.number_of_edges()
    assert nx.utils.edges_equal(got.edges, want.edges)
    if weighted:
        for u, v, d in want.edges(data=True):
            assert got[u][v]["weight"] == pytest.approx(d.get("weight", 1.0))


def sample(directed: bool, strings: bool, weighted: bool) -> nx.Graph:
    rng = np.random.default_rng(7)
    g = nx.DiGraph() if directed else nx.Graph()
    name = (lambda i: f"n{i}") if strings else int
    for _ in range(60):
        u, v = (int(x) for x in rng.integers(0, 25, 2))
        attrs = {"weight": float(rng.integers(1, 9)) / 2} if weighted else {}
        g.add_edge(name(u), name(v), **attrs)
    g.add_node(name(99))  # isolated
    return g


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("key", ["links", "edges"])
def test_networkx_node_link(tmp_path, directed, strings, weighted, key):
    want = sample(directed, strings, weighted)
    p = tmp_path / "g.json"
    p.write_text(json.dumps(nx.node_link_data(want, edges=key)))
    g = ie.convert(p, tmp_path / "g.graph")  # directedness from the file
    same(g, want, weighted)
    assert g.degree(want.number_of_nodes() and ("n99" if strings else 99)) == 0


def test_node_link_directed_can_be_overridden_and_any_name_works(tmp_path):
    want = sample(True, True, False)
    p = tmp_path / "graph.data"  # no .json: recognised by its content
    p.write_text(json.dumps(nx.node_link_data(want, edges="links")))
    g = ie.convert(p, tmp_path / "g.graph", directed=False)
    same(g, nx.Graph(want), False)


def test_d3_style_node_link(tmp_path):
    doc = {
        "nodes": [{"id": "Myriel", "group": 1}, {"id": "Napoleon", "group": 1}, {"id": "x"}],
        "links": [{"source": "Napoleon", "target": "Myriel", "value": 1}],
    }
    p = tmp_path / "miserables.json"
    p.write_text(json.dumps(doc))
    g = ie.convert(p, tmp_path / "g.graph")
    assert sorted(g.nodes) == ["Myriel", "Napoleon", "x"] and g.num_edges == 1
    assert not g.directed and not g.weighted
    gv = ie.convert(p, tmp_path / "v.graph", weight_col="value")
    assert gv.weighted and gv.edge_weights("Myriel").tolist() == [1.0]


@pytest.mark.parametrize("keys", [("source", "target"), ("src", "dst"), ("from", "to"), ("u", "v")])
def test_json_lines(tmp_path, keys):
    want = sample(False, True, True)
    want.remove_node("n99")
    lines = [
        json.dumps({keys[0]: u, keys[1]: v, "weight": d["weight"], "t": 1})
        for u, v, d in want.edges(data=True)
    ]
    p = tmp_path / "e.jsonl.gz"
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n\n").encode()))
    same(ie.convert(p, tmp_path / "g.graph"), want, True)


def test_json_lines_weights_after_unweighted_edges_and_named_keys(tmp_path):
    p = tmp_path / "e.ndjson"
    p.write_text('{"a": 1, "b": 2}\n{"a": 2, "b": 3, "weight": 2.5}\n')
    with pytest.raises(GraphFormatError, match="source and target keys"):
        ie.convert(p, tmp_path / "g.graph")
    g, st = ie.readers.convert_with_stats(p, tmp_path / "g.graph", src_col="a", dst_col="b")
    assert g.weighted and st["passes"] == 2  # the weight was met on line 2: read again
    assert g.edge_weights(1).tolist() == [1.0] and g.edge_weights(3).tolist() == [2.5]
    assert (
        ie.convert(p, tmp_path / "u.graph", src_col="a", dst_col="b", weighted=False).weighted
        is False
    )


def test_edge_arrays(tmp_path):
    p = tmp_path / "e.json"
    p.write_text("[[0, 1], [1, 2], [2, 0, 3.5]]")
    g = ie.convert(p, tmp_path / "g.graph")
    assert g.num_edges == 3 and g.weighted and g.edge_weights(0).tolist() == [1.0, 3.5]
    p.write_text('[{"source": "a", "target": "b"}]')
    assert ie.convert(p, tmp_path / "h.graph").nodes == ["a", "b"]


def test_id_kinds(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"source": 1, "target": "007"}\n')
    with pytest.raises(GraphFormatError, match=r"e\.jsonl:1: a string id after integer ones"):
        ie.convert(p, tmp_path / "g.graph")
    g = ie.convert(p, tmp_path / "g.graph", id_kind="str")
    assert sorted(g.nodes) == ["007", "1"]
    g = ie.convert(p, tmp_path / "h.graph", id_kind="int")
    assert g.nodes.tolist() == [1, 7]
    p.write_text('{"source": "a", "target": "b"}\n{"source": "b", "target": 3}\n')
    with pytest.raises(GraphFormatError, match=r"e\.jsonl:2: an integer id after string ones"):
        ie.convert(p, tmp_path / "g.graph")
    p.write_text('{"source": 1.5, "target": 2}\n')
    with pytest.raises(GraphFormatError, match=r"id 1\.5 is not an integer"):
        ie.convert(p, tmp_path / "g.graph")


REFUSED = [
    ('{"a": [1, 2], "b": [3]}', r"a JSON object with keys 'a', 'b', not a graph"),
    ('{"nodes": [{"id": 1}]}', r"needs 'nodes' and 'links' \(or 'edges'\)"),
    ("42", r"holds a single number JSON value, not a graph"),
    ('{"source": 1, "target": 2}\n{"source": 1,', r"e\.json:2: not valid JSON"),
    ('{"source": 1, "target": 2}\n[1, 2]\n', r"e\.json:2: a JSON Lines edge must be an object"),
    ('{"source": 1, "target": 2, "weight": -1}\n', r"e\.json:1: weight -1 is invalid"),
    ('{"source": 1, "target": 2, "weight": "x"}\n', r"weight \"x\" is a string, not a number"),
    ('{"nodes": [], "links": []}', r"no edges"),
    ("[[1, 2, 3, 4]]", r"edge 0: an edge must be \[source, target\(, weight\)\]"),
]


@pytest.mark.parametrize("text,pattern", REFUSED)
def test_refused(tmp_path, text, pattern):
    p = tmp_path / "e.json"
    p.write_text(text)
    with pytest.raises(GraphFormatError, match=pattern) as e:
        ie.convert(p, tmp_path / "g.graph")
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == ["e.json"]


def test_update_reads_node_link_json_with_the_graphs_ids(tmp_path):
    """``update`` reads JSON with ``convert``'s reader, straight into the commit: numeric ids
    of a string-id graph are its strings; removals too."""
    from instant_embedding.cli import main

    base = tmp_path / "g.graph"
    ie.Graph.from_edges(["1", "2"], ["2", "3"]).save(base)
    add = nx.Graph([(3, 4), (4, 5)])
    (tmp_path / "add.json").write_text(json.dumps(nx.node_link_data(add, edges="links")))
    (tmp_path / "rm.jsonl").write_text('{"src": "1", "dst": "2"}\n')
    args = ["update", str(base), "--add", str(tmp_path / "add.json")]
    assert main([*args, "--remove", str(tmp_path / "rm.jsonl"), "-q"]) == 0
    want = nx.Graph([("2", "3"), ("3", "4"), ("4", "5")])
    want.add_node("1")
    same(ie.Graph.open(base), want, False)
