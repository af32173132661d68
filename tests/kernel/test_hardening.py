"""Hostile parameters, ids, graph shapes, arrays and paths (see docs/RELIABILITY.md).

Every case gets a documented exception or a documented result, never a crash or a hang. The
cases that could hang run in a subprocess with a timeout, so a regression fails instead of
freezing the suite. Timeouts here are hang detectors with a wide margin, not performance checks.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import subprocess
import sys
import textwrap

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import _core

NAN, INF = float("nan"), float("inf")
MAX_DIM = _core.MAX_DIM
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
# Long cases run only on request (IE_RUN_SLOW=1), so `pytest -q` stays fast in CI.
_run_slow = pytest.mark.skipif(not os.environ.get("IE_RUN_SLOW"), reason="set IE_RUN_SLOW=1")


def slow(f):
    """``slow`` marker, and skipped unless IE_RUN_SLOW=1 (keeps `pytest -q` fast)."""
    return pytest.mark.slow(_run_slow(f))


def run_py(code: str, timeout: float, **kw) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter; a hang becomes a test failure, not a frozen run."""
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"subprocess did not finish within {timeout} s (hang):\n{code}")


# ================================================================ parameters
_BAD_PARAMS = [
    # (keyword, value, exception, message fragment)
    ("dim", 0, ValueError, "dim"),
    ("dim", -1, ValueError, "dim"),
    ("dim", MAX_DIM + 1, ValueError, "dim"),
    ("dim", 1.5, TypeError, "dim"),
    ("dim", "8", TypeError, "dim"),
    ("dim", None, TypeError, "dim"),
    ("dim", True, TypeError, "dim"),
    ("dim", NAN, TypeError, "dim"),
    ("alpha", NAN, ValueError, "alpha"),
    ("alpha", INF, ValueError, "alpha"),
    ("alpha", -INF, ValueError, "alpha"),
    ("alpha", -0.1, ValueError, "alpha"),
    ("alpha", 0.0, ValueError, "alpha"),
    ("alpha", 1.0, ValueError, "alpha"),
    ("alpha", 1.5, ValueError, "alpha"),
    ("alpha", 1e308, ValueError, "alpha"),
    ("alpha", "0.1", TypeError, "alpha"),
    ("alpha", None, TypeError, "alpha"),
    ("alpha", True, TypeError, "alpha"),
    ("eps", NAN, ValueError, "eps"),
    ("eps", INF, ValueError, "eps"),
    ("eps", 0.0, ValueError, "eps"),
    ("eps", -0.0, ValueError, "eps"),
    ("eps", -1e-5, ValueError, "eps"),
    ("eps", 5e-324, ValueError, "eps"),  # subnormal: the push could loop forever (fuzz find)
    ("eps", 1e-310, ValueError, "eps"),
    ("eps", "1e-5", TypeError, "eps"),
    ("eps", None, TypeError, "eps"),
    ("seed", -1, ValueError, "seed"),
    ("seed", 2**64, ValueError, "seed"),
    ("seed", 1.5, TypeError, "seed"),
    ("seed", None, TypeError, "seed"),
    ("seed", True, TypeError, "seed"),
    ("threads", 0, ValueError, "threads"),
    ("threads", -3, ValueError, "threads"),
    ("threads", 1.5, TypeError, "threads"),
    ("threads", "2", TypeError, "threads"),
    ("threads", True, TypeError, "threads"),
    ("max_touched", 0, ValueError, "max_touched"),
    ("max_touched", -1, ValueError, "max_touched"),
    ("max_touched", 1.5, TypeError, "max_touched"),
    ("max_touched", None, TypeError, "max_touched"),
    ("variant", "LAZY", ValueError, "variant"),
    ("variant", "", ValueError, "variant"),
    ("variant", None, ValueError, "variant"),
]


@pytest.mark.parametrize("key,value,exc,msg", _BAD_PARAMS)
def test_bad_constructor_parameters(key, value, exc, msg):
    with pytest.raises(exc, match=msg):
        ie.InstantEmbedding(**{key: value})


@pytest.mark.parametrize(
    "key,value,exc,msg",
    [p for p in _BAD_PARAMS if p[0] in ("alpha", "eps", "max_touched", "variant")],
)
def test_bad_ppr_parameters(karate, key, value, exc, msg):
    with pytest.raises(exc, match=msg):
        ie.ppr(karate, 0, **{key: value})


@pytest.mark.parametrize(
    "kw,exc",
    [
        ({"threads": 0}, ValueError),
        ({"threads": -1}, ValueError),
        ({"threads": 2.0}, TypeError),
        ({"threads": 4097}, ValueError),
        ({"batch_size": 0}, ValueError),
        ({"batch_size": -5}, ValueError),
        ({"batch_size": 1.5}, TypeError),
        ({"batch_size": True}, TypeError),
    ],
)
def test_bad_call_parameters(karate, kw, exc):
    model = ie.InstantEmbedding(dim=8)
    with pytest.raises(exc):
        model.embed(karate, [0, 1, 2], **kw)
    with pytest.raises(exc):
        model.embed_all(karate, **kw)


@pytest.mark.parametrize("key", ["dim", "max_touched", "threads"])
def test_parameters_beyond_u64_raise_value_error(karate, key):
    with pytest.raises(ValueError):
        ie.InstantEmbedding(**{key: 2**64}).embed(karate, [0, 1])


def test_extreme_but_valid_parameters_have_documented_results(karate):
    # A huge eps: no node is ever pushed (every threshold exceeds the seed's unit residual),
    # so the PPR estimate is empty; value="p" embeds the zero vector, the default "p+r" sees
    # the seed's residual 1: one coordinate +-ln(n), which the default normalize="ln_n" divides
    # by ln(n).
    ids, p = ie.ppr(karate, 0, eps=1e308)
    assert len(ids) == 0 and len(p) == 0
    assert not ie.InstantEmbedding(dim=8, eps=1e308, value="p").embed(karate, 0).any()
    e = ie.InstantEmbedding(dim=8, eps=1e308, normalize="none").embed(karate, 0)
    assert np.count_nonzero(e) == 1 and abs(e[e != 0][0]) == pytest.approx(math.log(34))
    e = ie.InstantEmbedding(dim=8, eps=1e308).embed(karate, 0)
    assert np.count_nonzero(e) == 1 and abs(e[e != 0][0]) == pytest.approx(1.0)
    # The smallest accepted eps (the smallest normal float) and alpha close to 1 terminate.
    ids, p = ie.ppr(karate, 0, eps=2.2250738585072014e-308, alpha=0.999999)
    assert np.all(p > 0) and p.sum() <= 1 + 1e-12
    # dim = 1 and dim = MAX_DIM, seed = 2**64 - 1 and many threads are fine.
    assert ie.InstantEmbedding(dim=1, seed=2**64 - 1).embed(karate, [0, 1]).shape == (2, 1)
    assert ie.InstantEmbedding(dim=MAX_DIM).embed(karate, 0).shape == (MAX_DIM,)
    a = ie.InstantEmbedding(dim=8, threads=64).embed(karate, list(range(34)))
    b = ie.InstantEmbedding(dim=8, threads=1).embed(karate, list(range(34)))
    assert np.array_equal(a, b)
    # max_touched = 1 refuses any push that spreads beyond the seed.
    with pytest.raises(ie.BudgetExceededError, match="max_touched"):
        ie.InstantEmbedding(dim=8, max_touched=1).embed(karate, 0)


def test_tiny_alpha_is_refused():
    """A push costs O(1 / (alpha * eps)) and conserves mass once 1 - alpha rounds to 1.0, so a
    tiny alpha would run for hours or forever inside one native call (it did, before alpha
    got a lower bound): refused up front. Run in a subprocess so a regression is a failure,
    not a frozen test run."""
    code = """
    import instant_embedding as ie
    g = ie.datasets.karate()
    for a in [1e-300, 1e-17, 1e-9]:
        for f in [lambda: ie.ppr(g, 0, alpha=a), lambda: ie.InstantEmbedding(alpha=a)]:
            try:
                f()
                print(a, "accepted")
            except ValueError as e:
                print(a, "ValueError", "alpha" in str(e))
    """
    r = run_py(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:-1] == [
        f"{a} ValueError True" for a in ["1e-300", "1e-300", "1e-17", "1e-17", "1e-09", "1e-09"]
    ]


# ================================================================ node ids
@pytest.fixture(scope="module")
def int64_graph() -> ie.Graph:
    return ie.Graph.from_edges([-7, 2**40, 5, 5], [2**40, 5, -7, 9])


@pytest.fixture(scope="module")
def str_graph() -> ie.Graph:
    return ie.Graph.from_edges(["a", "b", "c"], ["b", "c", "d"])


@pytest.mark.parametrize(
    "nodes,exc",
    [
        ([34], ie.NodeNotFoundError),
        ([-1], ie.NodeNotFoundError),
        ([0, 10**12], ie.NodeNotFoundError),
        ([2**63], ValueError),
        (np.array([2**64 - 1], dtype=np.uint64), ValueError),
        (["0"], ie.NodeNotFoundError),
        ([True], TypeError),
        ([1.0], TypeError),
        ([None], TypeError),
        ([0, "1"], TypeError),
        (np.array([0.0, 1.0]), TypeError),
        (np.zeros((2, 2), dtype=np.int64), ValueError),
        (None, TypeError),
        (1.0, TypeError),
        (True, TypeError),
    ],
)
def test_bad_node_ids_implicit(karate, nodes, exc):
    with pytest.raises(exc):
        ie.InstantEmbedding(dim=8).embed(karate, nodes)


@pytest.mark.parametrize(
    "nodes,exc",
    [
        ([6], ie.NodeNotFoundError),
        ([-8], ie.NodeNotFoundError),
        (["5"], ie.NodeNotFoundError),
        ([2**63], ValueError),
    ],
)
def test_bad_node_ids_int64(int64_graph, nodes, exc):
    with pytest.raises(exc):
        ie.InstantEmbedding(dim=8).embed(int64_graph, nodes)
    with pytest.raises(exc):
        ie.ppr(int64_graph, nodes[0])


@pytest.mark.parametrize(
    "nodes,exc",
    [
        (["e"], ie.NodeNotFoundError),
        ([0], ie.NodeNotFoundError),
        ([""], ie.NodeNotFoundError),
        (["a", 1], TypeError),
        ([b"a"], TypeError),
    ],
)
def test_bad_node_ids_str(str_graph, nodes, exc):
    with pytest.raises(exc):
        ie.InstantEmbedding(dim=8).embed(str_graph, nodes)


def test_unknown_id_error_names_it(int64_graph, str_graph):
    with pytest.raises(ie.NodeNotFoundError, match="123456"):
        ie.InstantEmbedding(dim=8).embed(int64_graph, [5, 123456])
    with pytest.raises(ie.NodeNotFoundError, match="zz"):
        ie.InstantEmbedding(dim=8).embed(str_graph, ["a", "zz"])


def test_duplicate_ids_and_odd_arrays_give_identical_rows(karate, int64_graph):
    model = ie.InstantEmbedding(dim=16)
    ref = model.embed(karate, list(range(34)))
    # duplicates
    dup = model.embed(karate, [3, 3, 0, 3])
    assert np.array_equal(dup, ref[[3, 3, 0, 3]])
    # non-contiguous, reversed, big-endian, small and unsigned dtypes, a 0-d array
    base = np.arange(34, dtype=np.int64)
    for arr in [
        base[::2],
        base[::-3],
        base.astype(">i8")[::2],
        base.astype(np.int8)[1::5],
        base.astype(np.uint16)[::7],
        np.asfortranarray(base),
    ]:
        assert np.array_equal(model.embed(karate, arr), ref[arr.astype(np.int64)])
    assert np.array_equal(model.embed(karate, np.int64(5)), ref[5])
    # empty selection
    assert model.embed(karate, []).shape == (0, 16)
    assert model.embed(karate, np.array([], dtype=np.int64)).shape == (0, 16)
    # int64-id graph through a strided view
    ids = np.array([9, 5, -7, 2**40, 9], dtype=np.int64)
    got = model.embed(int64_graph, ids[::2])
    assert np.array_equal(got, model.embed(int64_graph, [9, -7, 9]))


# ================================================================ building from arrays
@pytest.mark.parametrize(
    "src,dst,kw,exc",
    [
        (np.array([0.0, 1.0]), np.array([1, 2]), {}, TypeError),
        (np.array([0, 1]), np.array([1]), {}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0]}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0, NAN]}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0, INF]}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0, -1.0]}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0, 0.0]}, ValueError),
        ([0, 1], [1, 2], {"weights": [1.0, 1e39]}, ValueError),
        ([0, 1], [1, 2], {"weights": ["a", "b"]}, ValueError),
        ([0, 1], [1, 2], {"num_nodes": 2}, ValueError),
        ([0, -1], [1, 2], {"num_nodes": 5}, ValueError),
        ([0, 1], [1, 2], {"num_nodes": -1}, ValueError),
        ([0, 1], [1, 2], {"num_nodes": 2**32}, ValueError),
        ([0, 1], [1, 2], {"num_nodes": 3.0}, TypeError),
        ([0, 1], [1, 2], {"merge": "min"}, ValueError),
        ([0, "a"], [1, 2], {}, TypeError),
        ([None], [1], {}, TypeError),
        (np.zeros((2, 2), dtype=np.int64), np.zeros(2, dtype=np.int64), {}, ValueError),
        (["a"], ["b"], {"num_nodes": 2}, ValueError),
    ],
)
def test_from_edges_rejects_bad_arrays(src, dst, kw, exc):
    with pytest.raises(exc):
        ie.Graph.from_edges(src, dst, **kw)


def test_from_edges_accepts_non_contiguous_and_odd_dtypes():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 50, size=400)
    dst = rng.integers(0, 50, size=400)
    w = rng.random(400) + 0.1
    ref = ie.Graph.from_edges(src[::2].copy(), dst[::2].copy(), num_nodes=50, weights=w[::2].copy())
    for s, d, ww in [
        (src[::2], dst[::2], w[::2]),
        (src.astype(">i4")[::2], dst.astype(np.uint8)[::2], w.astype(np.float32)[::2]),
        (list(src[::2]), tuple(dst[::2]), list(w[::2])),
    ]:
        g = ie.Graph.from_edges(s, d, num_nodes=50, weights=ww)
        g.validate()
        assert np.array_equal(g.degrees(), ref.degrees())
        for v in (0, 7, 49):
            assert np.array_equal(g.neighbors(v), ref.neighbors(v))
            assert np.allclose(g.edge_weights(v), ref.edge_weights(v))


# ================================================================ graph shapes
def test_empty_graph(tmp_path):
    g = ie.Graph.from_edges([], [], num_nodes=0)
    g.validate()
    model = ie.InstantEmbedding(dim=4)
    assert model.embed_all(g).shape == (0, 4)
    assert model.embed(g, []).shape == (0, 4)
    with pytest.raises(ie.NodeNotFoundError):
        model.embed(g, [0])
    with pytest.raises(ie.NodeNotFoundError):
        ie.ppr(g, 0)
    p = tmp_path / "empty.graph"
    g.save(p)
    h = ie.Graph.open(p)
    h.validate()
    assert h.num_nodes == 0 and len(h.degrees()) == 0
    assert model.embed_all(h, out=tmp_path / "e.npy").shape == (0, 4)


def test_single_isolated_and_self_loop_nodes():
    model = ie.InstantEmbedding(dim=32, normalize="none")
    # One node, no edges: all PPR mass returns to it (p = 1), ln(p * n) = ln 1 = 0, so the
    # embedding is the zero vector (documented: a lone node carries no information).
    one = ie.Graph.from_edges([], [], num_nodes=1)
    ids, p = ie.ppr(one, 0)
    assert list(ids) == [0] and p[0] == pytest.approx(1, abs=1e-4)
    assert not model.embed(one, 0).any()
    # Isolated nodes in a larger graph, and nodes whose only edge is a self-loop: the same
    # mass-returns-to-seed result, so exactly one coordinate is +-ln(p * n).
    n = 10
    g = ie.Graph.from_edges([0, 1, 2], [1, 2, 2], num_nodes=n)  # 3..9 isolated, 2 self-loop
    loops = ie.Graph.from_edges(list(range(n)), list(range(n)))
    model_p = ie.InstantEmbedding(dim=32, value="p", normalize="none")
    for graph, v in [(g, 5), (g, 9), (loops, 0), (loops, 7)]:
        ids, p = ie.ppr(graph, v)
        assert list(ids) == [v] and p[0] == pytest.approx(1, abs=1e-4)
        e = model_p.embed(graph, v)
        assert np.count_nonzero(e) == 1
        assert abs(e[e != 0][0]) == pytest.approx(math.log(p[0] * n), rel=1e-6)
        e = model.embed(graph, v)  # p + r: the whole unit of mass, ln(1 * n)
        assert np.count_nonzero(e) == 1
        assert abs(e[e != 0][0]) == pytest.approx(math.log(n), rel=1e-6)
        e = ie.InstantEmbedding(dim=32).embed(graph, v)  # divided by ln(n): log_n(n) = 1
        assert np.count_nonzero(e) == 1 and abs(e[e != 0][0]) == pytest.approx(1, rel=1e-6)
    loops.validate()
    assert loops.num_edges == n and all(loops.degree(v) == 1 for v in range(n))


STAR_CODE = """
import json, sys
import numpy as np
import instant_embedding as ie
from instant_embedding import _core
k = int(sys.argv[1])
g = ie.Graph.from_edges(np.zeros(k, dtype=np.int64), np.arange(1, k + 1, dtype=np.int64))
out = {"deg": g.degree(0)}
m = ie.InstantEmbedding(dim=64)
mp = ie.InstantEmbedding(dim=64, value="p")
# eps * deg(hub) >= 1: the hub is never pushed. value="p": zero vector; "p+r": only the hub's
# own residual 1 -> one coordinate. A leaf pushes once into the hub, whose threshold stops it.
out["hub_nonzero_p"] = int(np.count_nonzero(mp.embed(g, 0)))
out["hub_nonzero"] = int(np.count_nonzero(m.embed(g, 0)))
leaf = m.embed(g, [1, k])
out["leaf_nonzero"] = int(np.count_nonzero(leaf[0]))
ids, p = ie.ppr(g, 1)
out["leaf_support"] = len(ids)
# What a query holds (allocation accounting of its workspace, not the process's RSS).
for name, v in [("hub", 0), ("leaf", 1)]:
    out[name] = _core.ppr_stats(g._g, v, ie.EmbeddingConfig(dim=64, alpha=0.15, eps=1e-5))
# An eps small enough to push the hub touches every leaf: refused by max_touched ...
try:
    ie.InstantEmbedding(dim=64, eps=1e-9, max_touched=1000).embed(g, 0)
    out["budget"] = "no error"
except ie.BudgetExceededError as e:
    out["budget"] = str(e)
print(json.dumps(out))
"""


def _star(k: int, timeout: float) -> dict:
    import json

    try:
        p = subprocess.run(
            [sys.executable, "-c", STAR_CODE, str(k)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"star with {k} leaves did not finish in {timeout} s (hang)")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    print(f"star with {k} leaves:", out)
    return out


def _check_star(out: dict, k: int) -> None:
    assert out["deg"] == k
    assert out["hub_nonzero_p"] == 0
    assert out["hub_nonzero"] == 1
    assert out["leaf_nonzero"] in (1, 2)  # the leaf (p) and the hub (r), unless they collide
    # Only the leaf is pushed: p = alpha at the leaf; the hub keeps its residual unpushed.
    assert out["leaf_support"] == 1
    assert (out["hub"]["pushes"], out["hub"]["touched"]) == (0, 1)
    assert (out["leaf"]["pushes"], out["leaf"]["touched"]) == (1, 2)
    assert "max_touched=1000" in out["budget"]


def test_star_hub_small():
    k = 200_000
    _check_star(_star(k, timeout=120), k)


@slow
def test_star_hub_degree_ten_million():
    k = 10_000_000
    out = _star(k, timeout=600)
    _check_star(out, k)
    # Above DENSE_MAX_NODES the push keeps its state in a table sized by the touched nodes:
    # a query that touches 2 nodes holds kilobytes, never O(n) (80 MB per array here).
    assert out["leaf"]["heap_bytes"] < 1 << 20, out["leaf"]


def test_tiny_eps_on_a_large_graph_is_refused_by_max_touched():
    # More than DENSE_MAX_NODES nodes, so the push uses its touched-proportional hash table.
    code = """
    import numpy as np, instant_embedding as ie
    n = (1 << 20) + 1000
    rng = np.random.default_rng(0)
    g = ie.Graph.from_edges(rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n), num_nodes=n)
    try:
        ie.ppr(g, 0, eps=1e-300, max_touched=50_000)
        print("no error")
    except ie.BudgetExceededError as e:
        print("budget:", e)
    """
    r = run_py(code, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "budget:" in r.stdout and "max_touched=50000" in r.stdout


# ================================================================ paths
def test_paths_that_are_directories(tmp_path, karate):
    with pytest.raises(IsADirectoryError):
        ie.Graph.open(tmp_path)
    with pytest.raises(IsADirectoryError):
        karate.save(tmp_path)
    with pytest.raises(IsADirectoryError):
        ie.InstantEmbedding(dim=4).embed_all(karate, out=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_parent_directories(tmp_path, karate):
    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(FileNotFoundError):
        ie.Graph.open(missing / "g.graph")
    with pytest.raises(FileNotFoundError):
        karate.save(missing / "g.graph")
    with pytest.raises(FileNotFoundError):
        ie.InstantEmbedding(dim=4).embed_all(karate, out=missing / "e.npy")
    assert not missing.exists()


def test_parent_is_a_file(tmp_path, karate):
    f = tmp_path / "plain"
    f.write_bytes(b"x")
    # NotADirectoryError where the OS errno is passed through, a plain OSError otherwise
    with pytest.raises(OSError, match="Not a directory"):
        karate.save(f / "g.graph")
    with pytest.raises(OSError, match="Not a directory"):
        ie.Graph.open(f / "g.graph")
    with pytest.raises(OSError, match="Not a directory"):
        ie.InstantEmbedding(dim=4).embed_all(karate, out=f / "e.npy")
    assert [x.name for x in tmp_path.iterdir()] == ["plain"]


def test_fifo_and_devices_are_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "pipe.graph"
    os.mkfifo(fifo)
    code = f"""
    import instant_embedding as ie
    for p in [{str(fifo)!r}, "/dev/null", "/dev/zero"]:
        try:
            ie.Graph.open(p)
            print(p, "opened")
        except OSError as e:
            print(p, type(e).__name__, e)
    """
    r = run_py(code, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "opened" not in r.stdout
    assert r.stdout.count("regular file") == 3, r.stdout


@pytest.mark.skipif(IS_ROOT, reason="root bypasses file permissions")
def test_unreadable_and_unwritable_paths(tmp_path, karate):
    p = tmp_path / "g.graph"
    karate.save(p)
    p.chmod(0)
    try:
        with pytest.raises(PermissionError):
            ie.Graph.open(p)
    finally:
        p.chmod(0o644)
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            karate.save(d / "g.graph")
        with pytest.raises(PermissionError):
            ie.InstantEmbedding(dim=4).embed_all(karate, out=d / "e.npy")
    finally:
        d.chmod(0o755)


def test_unreadable_as_root_is_simulated_with_a_dropped_uid(karate):
    """Root ignores mode bits; run the permission checks as 'nobody' in a child process."""
    if not IS_ROOT:
        pytest.skip("covered by test_unreadable_and_unwritable_paths")
    import pwd
    import shutil
    import tempfile
    from pathlib import Path

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no 'nobody' user")
    # pytest's tmp_path lives under a 0700 directory that 'nobody' cannot traverse
    tmp_path = Path(tempfile.mkdtemp(prefix="ie-perm-"))
    tmp_path.chmod(0o755)
    try:
        _permission_checks_as(nobody, tmp_path, karate)
    finally:
        shutil.rmtree(tmp_path)


def _permission_checks_as(nobody, tmp_path, karate):
    p = tmp_path / "g.graph"
    karate.save(p)
    p.chmod(0)
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    code = f"""
    import os
    import instant_embedding as ie, instant_embedding.export  # import before dropping privileges
    g, model = ie.datasets.karate(), ie.InstantEmbedding(dim=4)
    os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})
    for what, f in [("open", lambda: ie.Graph.open({str(p)!r})),
                    ("save", lambda: g.save({str(ro / "g.graph")!r})),
                    ("embed_all", lambda: model.embed_all(g, out={str(ro / "e.npy")!r}))]:
        try:
            f()
            print(what, "ok")
        except PermissionError:
            print(what, "PermissionError")
    """
    parents_ok = all(os.stat(q).st_mode & 0o005 for q in [tmp_path, *tmp_path.parents])
    if not parents_ok:
        pytest.skip("the temporary directory is not world-traversable")
    r = run_py(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        "open",
        "PermissionError",
        "save",
        "PermissionError",
        "embed_all",
        "PermissionError",
    ]
    assert list(ro.iterdir()) == []


def _run_with_fsize_limit(code: str, limit: int) -> subprocess.CompletedProcess:
    def limit_fsize():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limit_fsize,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("write under RLIMIT_FSIZE hung")


def test_write_failure_leaves_previous_file_and_no_temp(tmp_path):
    """A write that fails half-way (EFBIG via RLIMIT_FSIZE, the portable stand-in for a full
    disk) raises OSError; the target keeps its previous content and no temp file remains."""
    target = tmp_path / "g.graph"
    small = ie.Graph.from_edges([0, 1], [1, 2])
    small.save(target)
    before = target.read_bytes()
    emb = tmp_path / "e.npy"
    np.save(emb, np.arange(6, dtype=np.float32).reshape(2, 3))
    emb_before = emb.read_bytes()
    code = f"""
    import numpy as np, instant_embedding as ie
    g = ie.Graph.from_edges(np.arange(20000), (np.arange(20000) + 1) % 20000)
    for what, f in [("save", lambda: g.save({str(target)!r})),
                    ("embed_all", lambda: ie.InstantEmbedding(dim=64).embed_all(
                        g, out={str(emb)!r}))]:
        try:
            f()
            print(what, "ok")
        except OSError as e:
            print(what, type(e).__name__)
    """
    r = _run_with_fsize_limit(code, 64 * 1024)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0].startswith("save ") and "ok" not in lines[0], r.stdout
    assert lines[1].startswith("embed_all ") and "ok" not in lines[1], r.stdout
    assert target.read_bytes() == before
    assert emb.read_bytes() == emb_before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["e.npy", "g.graph"]


def _tiny_tmpfs(path) -> bool:
    if not IS_ROOT or sys.platform != "linux":
        return False
    path.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return r.returncode == 0


def test_full_disk_tmpfs(tmp_path):
    """A real full file system (a 256 KiB tmpfs, when we may mount one)."""
    mnt = tmp_path / "full"
    if not _tiny_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root on Linux)")
    try:
        target = mnt / "g.graph"
        ie.Graph.from_edges([0, 1], [1, 2]).save(target)
        before = target.read_bytes()
        code = f"""
        import numpy as np, instant_embedding as ie
        g = ie.Graph.from_edges(np.arange(40000), (np.arange(40000) + 1) % 40000)
        try:
            g.save({str(target)!r})
            print("save ok")
        except OSError as e:
            print("save", type(e).__name__, e)
        """
        r = run_py(code, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("save OSError") and "No space left" in r.stdout, r.stdout
        assert target.read_bytes() == before
        assert [x.name for x in mnt.iterdir()] == ["g.graph"]
        ie.Graph.open(target).validate()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_full_disk_embed_all_raises_oserror(tmp_path):
    """embed_all(out=) on a full disk: OSError up front (the temporary file is preallocated),
    not death by SIGBUS on a page fault of a sparse memory map (what happened before this test
    found it)."""
    mnt = tmp_path / "full"
    if not _tiny_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root on Linux)")
    try:
        code = f"""
        import numpy as np, instant_embedding as ie
        g = ie.Graph.from_edges(np.arange(4000), (np.arange(4000) + 1) % 4000)
        try:
            ie.InstantEmbedding(dim=64).embed_all(g, out={str(mnt / "e.npy")!r})
            print("ok")
        except OSError as e:
            print("OSError", e.errno)
        """
        r = run_py(code, timeout=120)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-500:]}"
        assert r.stdout.startswith("OSError"), r.stdout
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


# ================================================================ the command line
@pytest.mark.parametrize(
    "argv",
    [
        ["embed", "karate", "--dimensions", "0", "--output", "{tmp}/e.npy"],
        ["embed", "karate", "--alpha", "nan", "--output", "{tmp}/e.npy"],
        ["embed", "karate", "--alpha", "1", "--output", "{tmp}/e.npy"],
        ["embed", "karate", "--eps", "-1", "--output", "{tmp}/e.npy"],
        ["embed", "karate", "--workers", "0", "--output", "{tmp}/e.npy"],
        ["embed", "karate", "--nodes", "999", "--output", "{tmp}/e.npy"],
        ["embed", "{tmp}/missing.graph", "--output", "{tmp}/e.npy"],
        ["embed", "{tmp}", "--output", "{tmp}/e.npy"],
        ["embed", "{tmp}/junk.graph", "--output", "{tmp}/e.npy"],
        ["info", "{tmp}/junk.graph"],
        ["convert", "{tmp}/missing.txt", "{tmp}/g.graph"],
        ["convert", "{tmp}/bad.txt", "{tmp}/g.graph"],
    ],
)
def test_cli_bad_input_is_one_line_error(tmp_path, argv):
    (tmp_path / "junk.graph").write_bytes(b"IEGRAPH\0" + b"\x01" * 300)
    (tmp_path / "bad.txt").write_text("0 1\n2\n")  # a line with one column
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    r = subprocess.run(
        [sys.executable, "-m", "instant_embedding", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode in (1, 2), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert "error" in r.stderr.lower()
    assert not (tmp_path / "e.npy").exists() and not (tmp_path / "g.graph").exists()
    assert not [x for x in tmp_path.iterdir() if ".tmp-" in x.name]
