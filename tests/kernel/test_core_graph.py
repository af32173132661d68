"""Graph construction, the file format, ids, and errors on bad files."""

from __future__ import annotations

import pickle
import struct

import instant_embedding as ie
import numpy as np
import pytest

HEADER = 256


def test_from_edges_undirected_both_directions_and_merge():
    g = ie.Graph.from_edges([0, 1, 1, 2, 2], [1, 0, 2, 2, 0])
    assert (g.num_nodes, g.num_edges, g.num_arcs) == (3, 4, 7)  # 0-1, 1-2, 2-2, 2-0
    assert list(g.neighbors(0)) == [1, 2]
    assert list(g.neighbors(2)) == [0, 1, 2]
    assert g.degree(2) == 3 and not g.directed and not g.weighted
    assert g.id_kind == "implicit"


def test_from_edges_directed_out_edges_only():
    g = ie.Graph.from_edges([0, 0, 1], [1, 2, 2], directed=True)
    assert g.directed and g.num_edges == 3
    assert list(g.neighbors(0)) == [1, 2] and list(g.neighbors(2)) == []


def test_num_nodes_keeps_isolated_nodes_and_checks_range():
    g = ie.Graph.from_edges([0], [1], num_nodes=5)
    assert g.num_nodes == 5 and g.degree(4) == 0
    with pytest.raises(ValueError, match="outside"):
        ie.Graph.from_edges([0], [5], num_nodes=5)


def test_int64_ids_are_kept():
    g = ie.Graph.from_edges([10, -3, 2**50], [-3, 2**50, 10])
    assert g.id_kind == "int64"
    assert list(g.nodes) == [-3, 10, 2**50]
    assert sorted(g.neighbors(10)) == [-3, 2**50]
    assert 10 in g and 11 not in g and "x" not in g


def test_string_ids_and_weights():
    g = ie.Graph.from_edges(["a", "b", "a"], ["b", "c", "b"], weights=[1.0, 2.5, 3.0])
    assert g.id_kind == "utf8" and g.weighted
    assert g.nodes == ["a", "b", "c"]
    assert list(g.neighbors("b")) == ["a", "c"]
    np.testing.assert_array_equal(g.edge_weights("b"), [4.0, 2.5])  # duplicates summed
    g2 = ie.Graph.from_edges(["a", "a"], ["b", "b"], weights=[1.0, 3.0], merge="max")
    np.testing.assert_array_equal(g2.edge_weights("a"), [3.0])
    assert "a" in g and "z" not in g


def test_unicode_ids_roundtrip(tmp_path):
    names = ["Zoë", "北京", "a b", ""]
    g = ie.Graph.from_edges(names[:3], names[1:])
    g.save(tmp_path / "u.graph")
    h = ie.Graph.open(tmp_path / "u.graph")
    assert sorted(h.nodes) == sorted(names)
    h.validate()
    assert list(h.neighbors("")) == ["a b"]


@pytest.mark.parametrize(
    "src,dst,kw,exc",
    [
        ([0, 1], [1], {}, ValueError),
        ([0], [1], {"weights": [0.0]}, ValueError),
        ([0], [1], {"weights": [float("nan")]}, ValueError),
        ([0], [1], {"weights": [-1.0]}, ValueError),
        ([0], [1], {"weights": [1e39]}, ValueError),
        ([0], [1], {"weights": [1.0, 2.0]}, ValueError),
        ([0, "a"], [1, "b"], {}, TypeError),
        ([0.5], [1], {}, TypeError),
        ([True], [1], {}, TypeError),
        ([0], [1], {"num_nodes": -1}, ValueError),
        ([0], [1], {"merge": "mean"}, ValueError),
        (["a"], ["b"], {"num_nodes": 3}, ValueError),
        (np.zeros((2, 2), dtype=int), [1, 2], {}, ValueError),
    ],
)
def test_from_edges_rejects_bad_input(src, dst, kw, exc):
    with pytest.raises(exc):
        ie.Graph.from_edges(src, dst, **kw)


def test_empty_graph(tmp_path):
    g = ie.Graph.from_edges([], [])
    assert g.num_nodes == 0 and g.num_edges == 0
    g.save(tmp_path / "e.graph")
    h = ie.Graph.open(tmp_path / "e.graph")
    h.validate()
    assert ie.InstantEmbedding(dim=4).embed_all(h).shape == (0, 4)


def test_save_open_roundtrip_and_repr(tmp_path, random_graph):
    p = tmp_path / "g.graph"
    random_graph.save(p)
    g = ie.Graph.open(p)
    g.validate()
    assert g.path == str(p)
    assert (g.num_nodes, g.num_edges, g.num_arcs) == (
        random_graph.num_nodes,
        random_graph.num_edges,
        random_graph.num_arcs,
    )
    for v in [0, 1, 150, 299]:
        assert np.array_equal(g.neighbors(v), random_graph.neighbors(v))
    assert "num_nodes=300" in repr(g) and "g.graph" in repr(g)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["g.graph"]  # no temp files left


def test_pickle_by_path(tmp_path, random_graph):
    p = tmp_path / "g.graph"
    random_graph.save(p)
    g = pickle.loads(pickle.dumps(ie.Graph.open(p)))
    assert g.path == str(p) and g.num_nodes == 300
    with pytest.raises(TypeError, match="in-memory"):
        pickle.dumps(random_graph)


def test_prefetch_option_changes_no_result_and_survives_pickling(tmp_path):
    # weighted + directed + string ids, so the row hints cover the weights section too
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 400, 3000), rng.integers(0, 400, 3000)
    names = np.array([f"n{i}" for i in range(400)], dtype=object)
    for directed in (False, True):
        p = tmp_path / f"g{directed}.graph"
        ie.Graph.from_edges(
            list(names[src]), list(names[dst]), directed=directed, weights=rng.uniform(0.5, 2, 3000)
        ).save(p)
        plain, hinted = ie.Graph.open(p), ie.Graph.open(p, prefetch=True)
        assert not plain.prefetch and hinted.prefetch
        m = ie.InstantEmbedding(dim=64, eps=1e-5)
        assert np.array_equal(m.embed_all(plain), m.embed_all(hinted))
        assert pickle.loads(pickle.dumps(hinted)).prefetch
        assert not pickle.loads(pickle.dumps(plain)).prefetch
    with pytest.raises(TypeError, match="prefetch must be a bool"):
        ie.Graph.open(p, prefetch="yes")
    assert not ie.Graph.from_edges([0], [1]).prefetch  # in memory: nothing to hint


def test_save_replaces_atomically_while_mapped(tmp_path):
    p = tmp_path / "g.graph"
    ie.Graph.from_edges([0, 1], [1, 2]).save(p)
    old = ie.Graph.open(p)
    ie.Graph.from_edges([0, 1, 2], [1, 2, 3]).save(p)
    assert old.num_nodes == 3 and list(old.neighbors(1)) == [0, 2]  # old inode still mapped
    assert ie.Graph.open(p).num_nodes == 4


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        ie.Graph.open(tmp_path / "missing.graph")
    with pytest.raises(IsADirectoryError):
        ie.Graph.open(tmp_path)
    with pytest.raises(IsADirectoryError):
        ie.Graph.from_edges([0], [1]).save(tmp_path)
    bad = tmp_path / "bad.graph"
    bad.write_bytes(b"hello world")
    with pytest.raises(ie.GraphFormatError, match="magic"):
        ie.Graph.open(bad)
    bad.write_bytes(b"")
    with pytest.raises(ie.GraphFormatError, match="too short"):
        ie.Graph.open(bad)
    assert issubclass(ie.GraphFormatError, ValueError)


@pytest.fixture
def graph_bytes(tmp_path, random_graph) -> bytes:
    p = tmp_path / "g.graph"
    random_graph.save(p)
    return p.read_bytes()


def _write(tmp_path, data: bytes):
    p = tmp_path / "x.graph"
    p.write_bytes(data)
    return p


def test_truncated_file_is_refused(tmp_path, graph_bytes):
    for cut in [len(graph_bytes) - 1, len(graph_bytes) // 2, 300, 255, 8]:
        with pytest.raises(ie.GraphFormatError):
            ie.Graph.open(_write(tmp_path, graph_bytes[:cut]))


def test_header_corruption_detected_on_open(tmp_path, graph_bytes):
    for pos in [9, 13, 17, 30, 70, 100, 250]:
        data = bytearray(graph_bytes)
        data[pos] ^= 0x01
        with pytest.raises(ie.GraphFormatError):
            ie.Graph.open(_write(tmp_path, bytes(data)))


def test_unsupported_version(tmp_path, graph_bytes):
    data = bytearray(graph_bytes)
    data[8:12] = struct.pack("<I", 99)
    with pytest.raises(ie.GraphFormatError, match="version 99"):
        ie.Graph.open(_write(tmp_path, bytes(data)))


def _sections(data: bytes) -> list[tuple[int, int]]:
    return [struct.unpack_from("<QQ", data, 64 + 24 * i) for i in range(7)]


def test_in_range_neighbour_flip_caught_by_validate_only(tmp_path, graph_bytes):
    off, length = _sections(graph_bytes)[1]  # indices
    data = bytearray(graph_bytes)
    first = struct.unpack_from("<I", data, off)[0]
    struct.pack_into("<I", data, off, (first + 1) % 300)
    g = ie.Graph.open(_write(tmp_path, bytes(data)))  # cheap open does not read sections
    with pytest.raises(ie.GraphFormatError, match="checksum"):
        g.validate()


def test_out_of_range_neighbour_is_an_error_not_a_crash(tmp_path, graph_bytes):
    off, _ = _sections(graph_bytes)[1]
    data = bytearray(graph_bytes)
    struct.pack_into("<I", data, off, 10**9)
    g = ie.Graph.open(_write(tmp_path, bytes(data)))
    with pytest.raises(ie.GraphFormatError, match="neighbour"):
        ie.InstantEmbedding(dim=8).embed_all(g)
    with pytest.raises(ie.GraphFormatError):
        g.neighbors(0)


def test_corrupted_indptr_is_an_error(tmp_path, graph_bytes):
    off, _ = _sections(graph_bytes)[0]
    data = bytearray(graph_bytes)
    struct.pack_into("<Q", data, off + 8 * 5, 2**60)
    g = ie.Graph.open(_write(tmp_path, bytes(data)))
    with pytest.raises(ie.GraphFormatError, match="indptr"):
        g.degree(4)
    with pytest.raises(ie.GraphFormatError):
        ie.InstantEmbedding(dim=8).embed_all(g)


def test_id_and_weight_arguments_are_checked_by_the_kernel():
    g = ie.datasets.karate()
    with pytest.raises(TypeError, match="mixes int and str"):
        ie.Graph.from_edges([1, "a"], [2, "b"])
    with pytest.raises(TypeError, match="mix int and str"):
        ie.Graph.from_edges([1], ["a"])
    for bad in ([True], [1.5], np.array([1.0]), [None], [b"a"]):
        with pytest.raises(TypeError, match="nodes must hold"):
            g.index(bad)
    with pytest.raises(ValueError, match="one-dimensional"):
        g.index(np.zeros((1, 1), dtype=np.int64))
    with pytest.raises(ValueError, match="int64 range"):
        g.index([2**64])
    with pytest.raises(ValueError, match="int64 range"):
        g.index(np.array([2**63], dtype=np.uint64))
    assert list(g.index(np.array([33, 0], dtype=np.uint8))) == [33, 0]
    assert list(g.index(x for x in [np.int32(2)])) == [2]
    with pytest.raises(ValueError, match="overflows float32"):
        ie.Graph.from_edges([0], [1], weights=[3e39])
    with pytest.raises(ValueError, match="weights must be finite"):
        ie.Graph.from_edges([0], [1], weights=[-1.0])
    with pytest.raises(ValueError, match="shape"):
        ie.Graph.from_edges([0], [1], weights=[1.0, 2.0])
    with pytest.raises(TypeError, match="num_nodes"):
        ie.Graph.from_edges([0], [1], num_nodes=True)
    with pytest.raises(ValueError, match="num_nodes"):
        ie.Graph.from_edges([0], [1], num_nodes=-1)
    assert ie.Graph.from_edges([0], [1], num_nodes=np.int64(3)).num_nodes == 3
