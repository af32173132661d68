"""The installed ``instant-embedding`` console script, run as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import sys

import instant_embedding as ie
import numpy as np
import pytest
from helpers import run_cli as run
from instant_embedding import _core, cli
from instant_embedding.export import FORMATS, read_embeddings

EDGES = "# tiny graph\n0 1\n1 2\n2 0\n2 3\n3 4\n4 5\n5 3\n"


def test_console_script_is_installed():
    assert shutil.which("instant-embedding") or os.path.exists(
        os.path.join(os.path.dirname(sys.executable), "instant-embedding")
    ), "pip install . should put the instant-embedding script next to python"


def test_demo_works_offline():
    p = run("demo")
    out = p.stdout
    assert "shape (34, 128)" in out
    assert "most cosine-similar to node 0" in out and "most cosine-similar to node 33" in out
    assert "of 34 members" in out
    # the embedding captures the club split (Zachary 1977): nearly every member recovered
    r = cli.demo_result()
    assert r["correct"] >= 30 and r["total"] == 34


def test_convert_info_embed_pipeline(tmp_path):
    (tmp_path / "e.txt").write_text(EDGES)
    p = run("convert", "e.txt", "g.graph", cwd=tmp_path)
    assert "wrote g.graph: 6 nodes, 7 edges (undirected" in p.stderr
    assert p.stdout == ""
    g = ie.Graph.open(tmp_path / "g.graph")
    assert (g.num_nodes, g.num_edges) == (6, 7)

    p = run("info", "g.graph", "--json", "--sample", "6", cwd=tmp_path)
    info = json.loads(p.stdout)
    assert info["nodes"] == 6 and info["edges"] == 7 and info["directed"] is False
    assert info["degree"]["max"] == 3 and info["degree"]["isolated"] == 0
    assert info["file_bytes"] == os.path.getsize(tmp_path / "g.graph")
    est = info["estimate"]
    assert est["sample"] == 6 and est["support_nodes"]["median"] == 6  # the push reaches all
    assert est["seconds_per_node"]["median"] > 0
    assert est["settings"] == ie.InstantEmbedding().config.to_dict()
    default_updates = est["edge_updates"]["median"]
    text = run("info", "g.graph", cwd=tmp_path).stdout
    assert "nodes        6" in text and "per-node cost with the default settings" in text
    # info takes every embedding setting, as embed does, and measures with all of them
    flags = ["--eps", "0.05", "--value", "log1p", "--normalize", "none", "--smooth", "1"]
    p = run("info", "g.graph", "--json", "--sample", "6", *flags, cwd=tmp_path)
    est = json.loads(p.stdout)["estimate"]
    want = ie.InstantEmbedding(eps=0.05, value="log1p", normalize="none", smooth=1)
    assert est["settings"] == want.config.to_dict()
    assert est["edge_updates"]["median"] < default_updates  # eps=0.05 stops the push early
    text = run("info", "g.graph", "--sample", "2", *flags, cwd=tmp_path).stdout
    assert "eps=0.05, value=log1p, normalize=none, smooth=1" in text

    p = run("embed", "g.graph", "--dim", "16", "-o", "e.npy", cwd=tmp_path)
    ids, emb = read_embeddings(tmp_path / "e.npy")
    model = ie.InstantEmbedding(dim=16)
    assert np.asarray(ids).tolist() == list(range(6))
    assert np.array_equal(emb, model.embed(g, list(range(6))))
    assert p.stdout == ""
    run("embed", "g.graph", "--dim", "16", "--prefetch", "-o", "f.npy", cwd=tmp_path)
    assert np.array_equal(read_embeddings(tmp_path / "f.npy")[1], emb)  # hints change nothing


def test_node2vec_style_aliases_and_node_lists(tmp_path):
    (tmp_path / "e.csv").write_text("from,to\nann,bob\nbob,cy\ncy,ann\ncy,dee\n")
    run("convert", "--input", "e.csv", "--output", "p.graph", "--quiet", cwd=tmp_path)
    (tmp_path / "nodes.txt").write_text("# wanted\ndee\nann\n")
    run(
        "embed",
        "--input",
        "p.graph",
        "--nodes",
        "nodes.txt",
        "--dimensions",
        "8",
        "--workers",
        "1",
        "--output",
        "e.parquet",
        cwd=tmp_path,
    )
    ids, emb = read_embeddings(tmp_path / "e.parquet")
    g = ie.Graph.open(tmp_path / "p.graph")
    assert ids == ["dee", "ann"]
    assert np.array_equal(emb, ie.InstantEmbedding(dim=8).embed(g, ["dee", "ann"]))
    run("embed", "p.graph", "--nodes", "bob,cy", "-d", "8", "-o", "b.npz", cwd=tmp_path)
    ids, _ = read_embeddings(tmp_path / "b.npz")
    assert ids == ["bob", "cy"]


def test_embed_to_stdout_is_word2vec(tmp_path):
    p = run("embed", "lesmis", "-d", "5", "--nodes", "Valjean,Javert", "-o", "-")
    lines = p.stdout.splitlines()
    assert lines[0] == "2 5"
    assert [ln.split(" ")[0] for ln in lines[1:]] == ["Valjean", "Javert"]
    want = ie.InstantEmbedding(dim=5).embed(ie.datasets.lesmis(), ["Valjean", "Javert"])
    got = np.array([[float(x) for x in ln.split(" ")[1:]] for ln in lines[1:]], np.float32)
    assert np.array_equal(got, want)
    p = run("embed", "lesmis", "-d", "5", "--nodes", "Javert", "--value", "p", "-o", "-")
    got = np.array([float(x) for x in p.stdout.splitlines()[1].split(" ")[1:]], np.float32)
    want = ie.InstantEmbedding(dim=5, value="p").embed(ie.datasets.lesmis(), "Javert")
    assert np.array_equal(got, want)


def test_quiet_and_no_progress_without_terminal(tmp_path):
    (tmp_path / "e.txt").write_text(EDGES)
    p = run("convert", "e.txt", "g.graph", "-q", cwd=tmp_path)
    assert p.stderr == "" and p.stdout == ""
    p = run("embed", "g.graph", "-o", "e.npy", cwd=tmp_path)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("wrote e.npy")  # no bar


ERRORS = [
    (["convert", "missing.txt", "g.graph"], "missing.txt: no such file"),
    (
        ["convert", "bad.txt", "g.graph"],
        "bad.txt:1: 3 fields, but an edge is read from 2: pass --weighted to read the third",
    ),
    (
        ["convert", "bad.txt", "g.graph", "--unweighted"],
        "bad.txt:3: found 4 columns, but line 1 has 3",
    ),
    (["convert", "bad.txt", "g.graph", "--weighted"], "bad.txt:2: weight '-1' is <= 0"),
    (["embed", "nope.graph", "-o", "e.npy"], "nope.graph: no such graph file"),
    (["embed", "bad.txt", "-o", "e.npy"], "not an instant-embedding graph file; convert it"),
    (["embed", "karate", "--nodes", "0,77", "-o", "e.npy"], "77"),
    (["embed", "karate", "--nodes", "0,x", "-o", "e.npy"], "'x' is not an integer"),
    (["embed", "karate", "-o", "e.xyz"], "cannot tell the output format"),
    (["embed", "karate", "--eps", "-1", "-o", "e.npy"], "eps"),
    (["info", "missing.graph"], "no such graph file"),
]


@pytest.mark.parametrize("args,message", ERRORS)
def test_errors_are_one_line(tmp_path, args, message):
    (tmp_path / "bad.txt").write_text("0 1 1\n1 2 -1\n2 3 4 5\n")
    p = run(*args, cwd=tmp_path, ok=False)
    assert p.returncode == 1
    assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "g.graph").exists() and not (tmp_path / "e.npy").exists()


FLAG_ERRORS = [
    (["convert", "head.csv", "g.graph"], "is a header; if it is an edge, pass --no-header"),
    (
        ["convert", "w.csv", "g.graph", "--weighted"],
        "--weighted, but no column is named weight: pass --weight-col",
    ),
    (["convert", "semi.txt", "g.graph"], "if ';' separates the fields, pass --delimiter ';'"),
    (["convert", "e.txt", "missing/g.graph", "--reorder", "bfs"], "missing/g.graph: the output's"),
    (["convert", "e.txt", "g.graph", "--var", "x"], "var do(es) not apply to edgelist input"),
    (["embed", "karate", "-o", "e.npy", "--format", "parquet"], "--format parquet does not match"),
    (
        ["info", "wg.graph"],
        "wg.graph is a WebGraph BV graph (wg.properties is beside it); "
        "convert it first: instant-embedding convert wg.graph wg-ie.graph",
    ),
    (["embed", "wg.graph", "-o", "e.npy"], "is a WebGraph BV graph"),
]


@pytest.mark.parametrize("args,message", FLAG_ERRORS)
def test_errors_name_flags_not_parameters(tmp_path, args, message):
    (tmp_path / "head.csv").write_text("alice,bob\n")
    (tmp_path / "w.csv").write_text("from,to,x,y\na,b,1,2\n")
    (tmp_path / "semi.txt").write_text("a;b\nb;c\n")
    (tmp_path / "e.txt").write_text(EDGES)
    (tmp_path / "wg.graph").write_bytes(b"\x81\x02\x03")
    (tmp_path / "wg.properties").write_text("nodes=2\narcs=1\n")
    before = set(os.listdir(tmp_path))
    p = run(*args, cwd=tmp_path, ok=False)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr
    assert "weight_col" not in p.stderr and "header=" not in p.stderr
    assert set(os.listdir(tmp_path)) == before  # nothing written, no temporary file left


def test_convert_says_which_line_it_took_as_a_header(tmp_path):
    (tmp_path / "h.csv").write_text("id_1,id_2\nuser_3,user_17\nuser_17,user_5\n")
    p = run("convert", "h.csv", "g.graph", cwd=tmp_path)
    assert "wrote g.graph: 3 nodes, 2 edges" in p.stderr
    assert "header line skipped: h.csv:1: 'id_1,id_2' (pass --no-header" in p.stderr
    p = run("convert", "h.csv", "g.graph", "--no-header", cwd=tmp_path)
    assert "wrote g.graph: 5 nodes, 3 edges" in p.stderr and "header line" not in p.stderr


def test_verbose_shows_traceback_and_usage_errors_exit_2(tmp_path):
    p = run("info", "missing.graph", "--verbose", ok=False)
    assert p.returncode == 1 and "Traceback" in p.stderr
    p = run("embed", "karate", ok=False)  # --output is required
    assert p.returncode == 2 and "--output" in p.stderr
    p = run(ok=False)
    assert p.returncode == 2 and "convert" in p.stderr


def test_help_lists_commands_and_aliases():
    out = run("--help").stdout
    for cmd in ("convert", "embed", "info", "demo"):
        assert cmd in out
    embed_help = run("embed", "--help").stdout
    for flag in (
        "--dimensions",
        "--workers",
        "--input",
        "--output",
        "--nodes",
        "--format",
        "--value",
        "--variant",
    ):
        assert flag in embed_help
    convert_help = run("convert", "--help").stdout
    for flag in (
        "--directed",
        "--weighted",
        "--delimiter",
        "--src-col",
        "--var",
        "--self-loops",
        "--merge",
        "--memory-limit",
    ):
        assert flag in convert_help


def test_convert_mat_and_bcsr_from_the_command_line(tmp_path):
    sp = pytest.importorskip("scipy.sparse")
    sio = pytest.importorskip("scipy.io")
    a = sp.csc_matrix(np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=float))
    sio.savemat(tmp_path / "m.mat", {"network": a, "extra": a})
    p = run("convert", "m.mat", "m.graph", "--var", "network", cwd=tmp_path)
    assert "3 nodes, 2 edges (undirected" in p.stderr
    # a directed reading of a symmetric matrix keeps both arcs
    run("convert", "m.mat", "d.graph", "--var", "extra", "--directed", cwd=tmp_path)
    assert ie.Graph.open(tmp_path / "d.graph").num_edges == 4


def test_parser_types_defaults_and_repeats():
    """The flags of the kernel's table (``_core.cli_commands``) parse as docs/CLI.md says."""
    p = cli.build_parser()
    a = p.parse_args(["reorder", "g", "o"])
    assert (a.method, a.rounds, a.threads) == ("communities", _core.DEFAULT_REORDER_ROUNDS, None)
    a = p.parse_args(["reorder", "g", "o", "--rounds", "3", "--workers", "2"])
    assert (a.rounds, a.threads) == (3, 2)
    a = p.parse_args(["embed", "karate", "-o", "e.npy"])
    assert (a.nodes, a.prefetch, a.batch_size, a.format, a.dim) == ("all", False, None, None, 512)
    a = p.parse_args(["embed", "-i", "g", "-o", "-", "--batch-size", "7", "--prefetch", "-d", "8"])
    assert (a.graph, a.input, a.batch_size, a.prefetch, a.dim) == (None, "g", 7, True, 8)
    a = p.parse_args(["update", "g", "--add", "x", "--add", "y", "--remove-nodes", "n"])
    assert (a.add, a.remove, a.remove_nodes, a.merge) == (["x", "y"], None, ["n"], None)
    a = p.parse_args(["convert", "a", "b", "c", "-i", "d", "--reorder", "bfs"])
    assert (a.paths, a.input, a.output, a.reorder) == (["a", "b", "c"], ["d"], None, "bfs")
    assert p.parse_args(["info", "g"]).sample == 50 and not p.parse_args(["info", "g"]).json
    assert p.parse_args(["demo"]).dim == 128  # the demo's own default
    # generated flags: settings (with aliases) and reading options (negatives, column indices)
    a = p.parse_args(["embed", "g", "-o", "x", "--dimensions", "8", "--eps", "1e-5"])
    assert (a.dim, a.eps, a.value) == (8, 1e-5, "p+r")
    a = p.parse_args(["convert", "a", "b", "--undirected", "--sep", ";", "--src-col", "2"])
    assert (a.directed, a.weighted, a.delimiter, a.src_col, a.dst_col) == (
        False,
        None,
        ";",
        2,
        None,
    )
    a = p.parse_args(["update", "g", "--no-header", "--dst-col", "to"])
    assert (a.header, a.dst_col) == (False, "to")
    bad_lines = (
        ["reorder", "g", "o", "--method", "x"],
        ["update", "g", "--merge", "min"],
        ["convert", "a", "b", "--weighted", "--unweighted"],
        ["update", "g", "--directed"],  # the graph settles it
    )
    for bad in bad_lines:
        with pytest.raises(SystemExit):
            p.parse_args(bad)
    # --format offers every format the facade writes
    (embed,) = [c for c in _core.cli_commands() if c["name"] == "embed"]
    (fmt,) = [f for f in embed["flags"] if f.get("names") == ["--format"]]
    assert tuple(fmt["choices"]) == FORMATS


def _numpy_demo_facts(emb, seeds, k=3, rounds=20):
    """The demo's facts computed with numpy: cosine neighbours of the seeds and cosine 2-means
    started at them (the oracle of the kernel's ``cosine_nearest`` / ``cosine_two_means``)."""
    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    sim = unit @ unit.T
    near = {v: [u for u in np.argsort(-sim[v], kind="stable") if u != v][:k] for v in seeds}
    centroids, groups = unit[list(seeds)], None
    for _ in range(rounds):
        new = np.argmax(unit @ centroids.T, axis=1)
        if groups is not None and np.array_equal(new, groups):
            break
        groups = new
        means = np.stack(
            [unit[groups == c].mean(0) if np.any(groups == c) else centroids[c] for c in (0, 1)]
        )
        centroids = means / np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    return near, sim, groups


@pytest.mark.parametrize("dim,value", [(128, "p+r"), (16, "p"), (64, "log1p")])
def test_demo_facts_match_numpy(dim, value):
    for g, seeds in ((ie.datasets.karate(), (0, 33)), (ie.datasets.lesmis(), (3, 60))):
        emb = ie.InstantEmbedding(dim=dim, value=value).embed(g, g.nodes)
        near, sim, groups = _numpy_demo_facts(emb, seeds)
        for v in seeds:
            got = _core.cosine_nearest(emb, v, 3)
            assert [u for u, _ in got] == near[v]
            assert np.allclose([s for _, s in got], sim[v, near[v]], atol=1e-5)
        assert np.array_equal(_core.cosine_two_means(emb, seeds, 20), groups)
    with pytest.raises(ValueError, match="row 34 of 34"):
        _core.cosine_nearest(emb[:34], 34, 3)
