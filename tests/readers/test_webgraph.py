"""WebGraph BV input through the public API and the CLI.

The bit streams are built and damaged more thoroughly in the Rust tests (src/io/webgraph.rs),
with the `webgraph` crate's own compressor; Python cannot drive that compressor, so these tests
read a committed 16-byte fixture, ``tests/data/webgraph/tiny.{graph,properties}``: the arcs
below, compressed by the crate's ``BvComp`` with its default (Java) parameters, big-endian.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import instant_embedding as ie
import pytest
from instant_embedding.errors import GraphFormatError
from instant_embedding.readers import convert, convert_with_stats, detect_format

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "data", "webgraph")
N = 10
ARCS = [
    (0, 1), (0, 2), (0, 3), (0, 4), (0, 5),
    (1, 0), (1, 2), (1, 3), (1, 4), (1, 5),
    (2, 2), (3, 0), (5, 6), (5, 8), (6, 5),
    (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 8),
]  # fmt: skip


@pytest.fixture
def tiny(tmp_path) -> str:
    """A copy of the fixture; returns its basename."""
    for ext in ("graph", "properties"):
        shutil.copy(os.path.join(FIXTURE, f"tiny.{ext}"), tmp_path / f"tiny.{ext}")
    return str(tmp_path / "tiny")


def expected(directed: bool, self_loops: str = "keep") -> list[list[int]]:
    rows: list[set[int]] = [set() for _ in range(N)]
    for u, v in ARCS:
        if u == v and self_loops == "drop":
            continue
        rows[u].add(v)
        if not directed:
            rows[v].add(u)
    return [sorted(r) for r in rows]


def rows(g: ie.Graph) -> list[list[int]]:
    return [sorted(int(v) for v in g.neighbors(u)) for u in range(g.num_nodes)]


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("self_loops", ["keep", "drop"])
def test_converts_to_the_graph_of_its_arcs(tiny, tmp_path, directed, self_loops):
    g, stats = convert_with_stats(
        tiny + ".graph", tmp_path / "out.graph", directed=directed, self_loops=self_loops
    )
    assert stats["format"] == "webgraph"
    assert g.num_nodes == N  # node 9 has no arcs at all and is kept
    assert g.directed is directed
    assert rows(g) == expected(directed, self_loops)
    assert stats["source_arcs"] == len(ARCS) == stats["edges_read"]
    assert stats["self_loops_dropped"] == (2 if self_loops == "drop" else 0)
    assert g.id_kind == "implicit"


def test_named_by_either_file_or_basename_or_an_explicit_properties_file(tiny, tmp_path):
    for i, name in enumerate([tiny, tiny + ".graph", tiny + ".properties"]):
        assert detect_format(name) == "webgraph"
        g = convert(name, tmp_path / f"out{i}.graph", directed=True)
        assert rows(g) == expected(True)
    # Properties kept elsewhere under another name: detection needs them given.
    other = tmp_path / "props"
    other.mkdir()
    os.rename(tiny + ".properties", other / "tiny.properties.reconstructed")
    with pytest.raises(GraphFormatError, match=r"no .*tiny\.properties beside it"):
        convert(tiny + ".graph", tmp_path / "x.graph")
    g = convert(
        tiny + ".graph",
        tmp_path / "x.graph",
        properties=other / "tiny.properties.reconstructed",
        directed=True,
    )
    assert rows(g) == expected(True)


def test_damaged_inputs_raise_graph_format_error_and_leave_nothing(tiny, tmp_path):
    out = tmp_path / "out.graph"
    data = open(tiny + ".graph", "rb").read()
    with open(tiny + ".graph", "wb") as f:
        f.write(data[:5])
    with pytest.raises(GraphFormatError, match="truncated"):
        convert(tiny, out)
    assert not out.exists()
    with open(tiny + ".graph", "wb") as f:
        f.write(data)
    props = open(tiny + ".properties").read()
    with open(tiny + ".properties", "w") as f:
        f.write(props.replace("arcs=21", "arcs=22"))
    with pytest.raises(GraphFormatError, match="decoded 21 arcs, but the properties declare 22"):
        convert(tiny, out)
    with open(tiny + ".properties", "w") as f:
        f.write(props.replace("compressionflags=", "compressionflags=RESIDUALS_NOPE"))
    with pytest.raises(GraphFormatError, match="RESIDUALS_NOPE"):
        convert(tiny, out)
    assert sorted(os.listdir(tmp_path)) == ["tiny.graph", "tiny.properties"]


def test_options_that_do_not_apply_are_value_errors(tiny, tmp_path):
    out = tmp_path / "out.graph"
    for kwargs in (
        {"weighted": True},
        {"id_kind": "str"},
        {"src_col": 1},
        {"delimiter": ","},
    ):
        with pytest.raises(ValueError):
            convert(tiny, out, **kwargs)
    with pytest.raises(ValueError, match=r"properties do\(es\) not apply to edgelist input"):
        convert(tiny + ".graph", out, format="edgelist", properties=tiny + ".properties")
    assert not out.exists()


def test_progress_reports_bytes_of_the_graph_file(tiny, tmp_path):
    calls: list[tuple[int, int]] = []
    convert(tiny, tmp_path / "out.graph", progress=lambda d, t: calls.append((d, t)))
    size = os.path.getsize(tiny + ".graph")
    assert calls and calls[-1] == (size, size)


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "instant_embedding", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_cli_converts_a_webgraph_file_and_info_does_not_offer_to_overwrite_it(tiny, tmp_path):
    p = _cli("convert", "tiny.graph", "tiny-ie.graph", "--directed", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "10 nodes, 21 edges (directed" in p.stderr and "from webgraph input" in p.stderr
    assert rows(ie.Graph.open(tmp_path / "tiny-ie.graph")) == expected(True)
    # Properties passed by flag, from another folder.
    os.rename(tiny + ".properties", tmp_path / "p.reconstructed")
    p = _cli("convert", "tiny.graph", "u.graph", "--properties", "p.reconstructed", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert rows(ie.Graph.open(tmp_path / "u.graph")) == expected(False)
    p = _cli("info", "tiny.graph", cwd=tmp_path)
    assert p.returncode != 0
    assert "convert tiny.graph tiny-ie.graph" in p.stderr


@pytest.mark.parametrize("directed", [True, False])
def test_update_streams_its_arcs_into_a_live_graph(tiny, tmp_path, directed, capsys):
    """update --add/--remove reads the BV graph straight into the commit: the graph gains
    exactly the fixture's arcs (undirected: each pair once), and removing them again leaves
    the edge the graph had."""
    from instant_embedding import cli

    base = str(tmp_path / "g.graph")
    ie.Graph.from_edges([0], [9], directed=directed).save(base)
    assert cli.main(["update", base, "--add", tiny + ".graph"]) == 0
    edges = {(u, v) if directed else (min(u, v), max(u, v)) for u, v in ARCS}
    assert f": {len(edges)} edges added" in capsys.readouterr().err
    g = ie.Graph.open(base)
    arcs = {(int(u), int(v)) for u in g.nodes for v in g.neighbors(u)}
    want = {*ARCS, (0, 9)}
    assert arcs == (want if directed else want | {(v, u) for u, v in want})
    assert g.num_edges == len({(u, v) if directed else (min(u, v), max(u, v)) for u, v in want})
    assert cli.main(["update", base, "--remove", tiny, "-q"]) == 0
    g = ie.Graph.open(base)
    assert g.num_edges == 1 and [int(v) for v in g.neighbors(0)] == [9]


def test_update_refuses_a_webgraph_for_a_weighted_or_string_id_graph(tiny, tmp_path, capsys):
    from instant_embedding import cli

    for name, g in [
        ("w.graph", ie.Graph.from_edges([0], [1], weights=[2.0])),
        ("s.graph", ie.Graph.from_edges(["a"], ["b"])),
    ]:
        g.save(tmp_path / name)
        before = (tmp_path / name).read_bytes()
        assert cli.main(["update", str(tmp_path / name), "--add", tiny, "-q"]) != 0
        assert "WebGraph" in capsys.readouterr().err
        assert (tmp_path / name).read_bytes() == before
        assert ie.Graph.open(tmp_path / name).num_edges == 1
