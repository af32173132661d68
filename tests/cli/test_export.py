"""Embedding writers: round trips of every format, streaming, atomicity, id handling."""

from __future__ import annotations

import io
import os

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import export as ex

FILES = ["e.npy", "e.npz", "e.parquet", "e.w2v", "e.emb", "e.txt.gz"]


def no_leftovers(directory) -> None:
    assert [f for f in os.listdir(directory) if ".tmp-" in f] == []


@pytest.fixture
def model():
    return ie.InstantEmbedding(dim=24, seed=3)


@pytest.fixture
def lesmis():
    return ie.datasets.lesmis()  # string ids


@pytest.mark.parametrize("name", FILES)
def test_round_trip_int_ids(tmp_path, model, karate, name):
    path = tmp_path / name
    n = ex.write_embeddings(model, karate, None, path, batch_size=7)
    assert n == 34
    ids, emb = ex.read_embeddings(path)
    expected = model.embed(karate, karate.nodes)
    if name.startswith("e.npy") or name.endswith((".npz", ".parquet")):
        assert np.asarray(ids).dtype == np.int64
        assert np.asarray(ids).tolist() == list(range(34))
    else:
        assert ids == [str(i) for i in range(34)]  # word2vec text ids are strings
    assert emb.dtype == np.float32
    assert np.array_equal(emb, expected)  # exact: 9 significant digits round-trip float32
    no_leftovers(tmp_path)


@pytest.mark.parametrize("name", FILES)
def test_round_trip_string_ids_subset(tmp_path, model, lesmis, name):
    nodes = ["Valjean", "Javert", "Cosette", "Valjean"]  # order kept, duplicates allowed
    path = tmp_path / name
    ex.write_embeddings(model, lesmis, nodes, path, batch_size=3)
    ids, emb = ex.read_embeddings(path)
    assert list(ids) == nodes
    assert np.array_equal(emb, model.embed(lesmis, nodes))


def test_npy_sidecars(tmp_path, model, karate, lesmis):
    path = tmp_path / "emb.npy"
    ex.write_embeddings(model, karate, [5, 1], path)
    assert np.load(tmp_path / "emb.ids.npy").tolist() == [5, 1]
    assert np.load(path).shape == (2, 24)
    ex.write_embeddings(model, lesmis, ["Babet", "Javert"], path)
    assert (tmp_path / "emb.ids.txt").read_text("utf-8") == "Babet\nJavert\n"
    assert not (tmp_path / "emb.ids.npy").exists()  # stale sidecar of the other kind removed
    assert ex.sidecar_path("x/y.npy", "int") == "x/y.ids.npy"


def test_npz_layout(tmp_path, model, lesmis):
    path = tmp_path / "e.npz"
    ex.write_embeddings(model, lesmis, None, path)
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["embeddings", "ids"]
        assert z["ids"].dtype.kind == "U"
        assert z["embeddings"].dtype == np.float32
        assert z["ids"].tolist() == lesmis.nodes


def test_parquet_schema(tmp_path, model, karate):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "e.parquet"
    ex.write_embeddings(model, karate, None, path, batch_size=5)
    schema = pq.read_schema(path)
    assert schema.field("node").type == pa.int64()
    assert schema.field("embedding").type == pa.list_(pa.float32(), 24)
    assert schema.metadata[b"instant_embedding.dim"] == b"24"


def test_gensim_reads_word2vec(tmp_path, model, lesmis):
    gensim = pytest.importorskip("gensim")
    for name in ("e.w2v", "e.w2v.gz"):
        path = tmp_path / name
        ex.write_embeddings(model, lesmis, None, path)
        kv = gensim.models.KeyedVectors.load_word2vec_format(str(path), binary=False)
        assert kv.index_to_key == lesmis.nodes
        assert np.array_equal(kv.vectors, model.embed(lesmis, lesmis.nodes))


def test_word2vec_format_strictly(tmp_path, model, karate):
    path = tmp_path / "e.w2v"
    ex.write_embeddings(model, karate, [0, 33], path)
    lines = path.read_text("ascii").split("\n")
    assert lines[0] == "2 24" and lines[-1] == ""
    for line, node in zip(lines[1:3], (0, 33)):
        parts = line.split(" ")
        assert parts[0] == str(node) and len(parts) == 25
        np.testing.assert_array_equal(
            np.asarray(parts[1:], dtype=np.float32), model.embed(karate, node)
        )


def test_word2vec_rejects_whitespace_ids(tmp_path):
    g = ie.Graph.from_edges(["new york", "a"], ["a", "b"])
    m = ie.InstantEmbedding(dim=4)
    out = tmp_path / "e.w2v"
    out.write_text("previous")
    with pytest.raises(ValueError, match="'new york' contains whitespace"):
        ex.write_embeddings(m, g, None, out)
    assert out.read_text() == "previous"
    no_leftovers(tmp_path)
    ex.write_embeddings(m, g, None, tmp_path / "ok.parquet")  # other formats keep such ids
    assert ex.read_embeddings(tmp_path / "ok.parquet")[0] == ["a", "b", "new york"]


def test_stdout_stream(model, karate):
    buf = io.StringIO()
    ex.write_embeddings(model, karate, [2, 3], buf)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "2 24" and lines[1].startswith("2 ")
    with pytest.raises(ValueError, match="num_rows"):
        ex.EmbeddingWriter(io.StringIO(), 4)
    with pytest.raises(ValueError, match="only the w2v"):
        ex.EmbeddingWriter(io.StringIO(), 4, format="npy", num_rows=1)


@pytest.mark.parametrize("name", ["u.npy", "u.npz", "u.parquet", "u.w2v", "u.txt.gz"])
def test_writer_without_num_rows(tmp_path, name):
    """Headers are fixed up at close when the row count was not known in advance."""
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((1000, 5)).astype(np.float32)
    with ex.EmbeddingWriter(tmp_path / name, 5) as w:
        for a in range(0, 1000, 128):
            w.write(np.arange(a, min(a + 128, 1000)) * 10, rows[a : a + 128])
    ids, emb = ex.read_embeddings(tmp_path / name)
    assert np.array_equal(emb, rows)
    assert [int(x) for x in ids] == list(range(0, 10000, 10))
    no_leftovers(tmp_path)


@pytest.mark.parametrize("name", ["z.npy", "z.npz", "z.parquet", "z.w2v"])
def test_empty_output(tmp_path, name):
    with ex.EmbeddingWriter(tmp_path / name, 3, num_rows=0):
        pass
    ids, emb = ex.read_embeddings(tmp_path / name)
    assert len(ids) == 0 and emb.shape == (0, 3)


def test_writer_validation(tmp_path):
    w = ex.EmbeddingWriter(tmp_path / "v.npy", 3, num_rows=2)
    with pytest.raises(ValueError, match="shape"):
        w.write([1, 2], np.zeros((2, 4)))
    w.write([1], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="row 1: column 'ids' is missing"):
        w.write([None], np.zeros((1, 3)))  # rows count across batches
    with pytest.raises(TypeError, match="changed kind"):
        w.write(["a"], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="1 rows were written but num_rows=2"):
        w.close()
    assert not (tmp_path / "v.npy").exists()
    no_leftovers(tmp_path)
    with pytest.raises(ValueError, match="extension"):
        ex.EmbeddingWriter(tmp_path / "e.bin", 3)
    with pytest.raises(IsADirectoryError):
        ex.EmbeddingWriter(tmp_path, 3, format="npy")
    with pytest.raises(ValueError, match="line break"):
        ex.save_embeddings(tmp_path / "n.npy", ["a\nb"], np.zeros((1, 3)))


@pytest.mark.parametrize("name", ["a.npy", "a.npz", "a.parquet", "a.w2v"])
def test_interrupted_write_keeps_previous_file(tmp_path, model, karate, name):
    path = tmp_path / name
    ex.write_embeddings(model, karate, [0], path)
    before = path.read_bytes()

    def stop(done, total):
        if done >= 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ex.write_embeddings(model, karate, None, path, batch_size=5, progress=stop)
    assert path.read_bytes() == before
    no_leftovers(tmp_path)


def test_unknown_node_fails_before_writing(tmp_path, model, karate):
    with pytest.raises(ie.NodeNotFoundError, match="99"):
        ex.write_embeddings(model, karate, [0, 99], tmp_path / "e.npy")
    assert os.listdir(tmp_path) == []


def test_streaming_batches_are_bounded_and_deterministic(tmp_path, model, monkeypatch):
    g = ie.Graph.from_edges(np.arange(999), np.arange(1, 1000))
    done = []
    ex.write_embeddings(
        model, g, None, tmp_path / "a.npy", batch_size=64, progress=lambda d, t: done.append(d)
    )
    steps = np.diff([0, *done])
    assert max(steps) == 64 and done[-1] == 1000  # the writer gets one batch at a time
    ex.write_embeddings(model, g, None, tmp_path / "b.npy", batch_size=999)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    # The same through a Python sink (Parquet): batches of at most batch_size rows.
    pytest.importorskip("pyarrow")
    seen = []
    orig = ex._Parquet.write

    def spy(self, ids, rows):
        seen.append(len(rows))
        return orig(self, ids, rows)

    monkeypatch.setattr(ex._Parquet, "write", spy)
    ex.write_embeddings(model, g, None, tmp_path / "a.parquet", batch_size=64)
    assert max(seen) == 64 and sum(seen) == 1000
    rows = ex.read_embeddings(tmp_path / "a.parquet")[1]
    assert np.array_equal(rows, np.load(tmp_path / "a.npy"))


def test_save_embeddings(tmp_path):
    emb = np.arange(12, dtype=np.float64).reshape(4, 3)
    ex.save_embeddings(tmp_path / "s.npz", ["w", "x", "y", "z"], emb)
    ids, got = ex.read_embeddings(tmp_path / "s.npz")
    assert ids == ["w", "x", "y", "z"] and np.array_equal(got, emb.astype(np.float32))
