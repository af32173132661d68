"""The engine-agnostic batch API: embed_batch, the per-process graph cache, remote copies."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import batch
from instant_embedding.batch import (
    as_node_ids,
    clear_cache,
    embed_batch,
    embeddings_to_arrow,
    local_graph_path,
    open_graph,
)

PARAMS = {"dim": 32, "alpha": 0.15, "eps": 1e-4, "seed": 3}
MODEL = ie.InstantEmbedding(**PARAMS)
M8, M16 = ie.InstantEmbedding(8), ie.InstantEmbedding(16)


def _edges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    keep = src != dst
    return src[keep], dst[keep]


@pytest.fixture
def graphs(tmp_path):
    """Paths of three saved graphs: implicit ids, arbitrary int64 ids, string ids."""
    src, dst = _edges(200, 1000, seed=11)
    rng = np.random.default_rng(5)
    big = np.unique(rng.integers(-(2**62), 2**62, size=400))[:200]
    names = np.array([f"user-{i:04d}" for i in range(200)], dtype=object)
    out = {}
    for kind, ids in (("implicit", None), ("int64", big), ("utf8", names)):
        s, d = (src, dst) if ids is None else (ids[src], ids[dst])
        g = ie.Graph.from_edges(list(s) if kind == "utf8" else s, list(d) if kind == "utf8" else d)
        assert g.id_kind == kind
        path = tmp_path / f"{kind}.graph"
        g.save(path)
        out[kind] = str(path)
    yield out
    clear_cache()


def _local(path: str, nodes) -> np.ndarray:
    return MODEL.embed(ie.Graph.open(path), nodes)


@pytest.mark.parametrize("kind", ["implicit", "int64", "utf8"])
def test_embed_batch_matches_local_api_for_any_split(graphs, kind):
    path = graphs[kind]
    nodes = ie.Graph.open(path).nodes
    rng = np.random.default_rng(1)
    pick = rng.integers(0, len(nodes), size=300)  # with repeats
    sample = [nodes[i] for i in pick] if kind == "utf8" else np.asarray(nodes)[pick]
    ref = _local(path, sample)
    assert ref.dtype == np.float32 and ref.shape == (300, MODEL.dim)
    whole = embed_batch(path, sample, model=MODEL)
    assert np.array_equal(whole, ref)
    for parts in (3, 7):
        bounds = np.linspace(0, 300, parts + 1).astype(int)
        pieces = [
            embed_batch(path, sample[a:b], threads=t, model=MODEL)
            for (a, b), t in zip(zip(bounds[:-1], bounds[1:]), [1, 2, None] * 3)
        ]
        assert np.array_equal(np.concatenate(pieces), ref)


def test_node_id_containers(graphs):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    ipath, spath = graphs["int64"], graphs["utf8"]
    ints = np.asarray(ie.Graph.open(ipath).nodes)[[5, 0, 5, 199]]
    strs = [ie.Graph.open(spath).nodes[i] for i in (5, 0, 5, 199)]
    iref, sref = _local(ipath, ints), _local(spath, strs)
    for ids in (
        ints,
        list(ints),
        pa.array(ints),
        pa.chunked_array([ints[:2], ints[2:]]),
        pd.Series(ints),
        pd.Series(ints, dtype="Int64"),
    ):
        assert np.array_equal(embed_batch(ipath, ids, model=MODEL), iref), type(ids)
    for ids in (
        strs,
        np.array(strs),
        np.array(strs, dtype=object),
        pa.array(strs),
        pa.array(strs, type=pa.large_string()),
        pa.array(strs).dictionary_encode(),
        pd.Series(strs),
        pd.Series(strs, dtype="string[pyarrow]"),
    ):
        assert np.array_equal(embed_batch(spath, ids, model=MODEL), sref), type(ids)
    empty = embed_batch(ipath, np.array([], dtype=np.int64), model=MODEL)
    assert empty.shape == (0, MODEL.dim) and empty.dtype == np.float32


def test_bad_ids_and_params(graphs):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    ipath, spath = graphs["implicit"], graphs["utf8"]
    with pytest.raises(ie.NodeNotFoundError, match=r"node 200 not found.*implicit\.graph"):
        embed_batch(ipath, [3, 200], model=MODEL)
    with pytest.raises(ie.NodeNotFoundError, match=r"nobody.*utf8\.graph"):
        embed_batch(spath, ["user-0001", "nobody"], model=MODEL)
    with pytest.raises(ie.NodeNotFoundError, match="string node ids"):
        embed_batch(spath, [1], model=MODEL)
    # The kernel's id boundary: nulls and non-integer floats name the row; integral floats
    # (an integer column that held nulls) are ids.
    with pytest.raises(ValueError, match="row 1: column 'node'.* missing"):
        embed_batch(ipath, pa.array([1, None, 2]), model=MODEL)
    with pytest.raises(ValueError, match="row 2: column 'node' is missing"):
        embed_batch(spath, pd.Series(["user-0001", "user-0002", None]), model=MODEL)
    with pytest.raises(ValueError, match="row 0: column 'node' is missing"):
        embed_batch(ipath, [None, 1], model=MODEL)
    with pytest.raises(ValueError, match="row 1: column 'node'.* missing"):
        embed_batch(ipath, pd.Series([1, None]), model=MODEL)
    with pytest.raises(ValueError, match="2.5 is not an integer id"):
        embed_batch(ipath, np.array([1.0, 2.5]), model=MODEL)
    with pytest.raises(ValueError, match="all int or all str"):
        embed_batch(ipath, [1, "a"], model=MODEL)
    assert np.array_equal(
        embed_batch(ipath, pd.Series([1, None, 2]).dropna(), model=MODEL),
        embed_batch(ipath, [1, 2], model=MODEL),
    )
    with pytest.raises(TypeError, match="scalar"):
        embed_batch(ipath, 5, model=MODEL)
    with pytest.raises(ValueError, match="threads"):
        embed_batch(ipath, [1], threads=0, model=MODEL)
    with pytest.raises(TypeError, match="model must be an InstantEmbedding"):
        embed_batch(ipath, [1], model={"dim": 0})  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="missing.graph"):
        embed_batch(os.path.join(os.path.dirname(ipath), "missing.graph"), [1], model=MODEL)


def test_graph_opened_once_per_process_and_reopened_when_replaced(tmp_path):
    path = str(tmp_path / "g.graph")
    ie.datasets.karate().save(path)
    g1 = open_graph(path)
    assert open_graph(path) is g1  # reused across batches
    assert open_graph(os.path.join(str(tmp_path), ".", "g.graph")) is g1  # same absolute path
    before = embed_batch(path, [0, 1], model=ie.InstantEmbedding(16))
    # Replace the file at the same path (atomic rename: new inode) with a different graph.
    src, dst = _edges(34, 200, seed=3)
    ie.Graph.from_edges(src, dst, num_nodes=34).save(path)
    g2 = open_graph(path)
    assert g2 is not g1 and g2.num_edges != g1.num_edges
    after = embed_batch(path, [0, 1], model=ie.InstantEmbedding(16))
    assert np.array_equal(after, ie.InstantEmbedding(16).embed(ie.Graph.open(path), [0, 1]))
    assert not np.array_equal(after, before)
    clear_cache()
    assert open_graph(path) is not g2


def test_open_graph_cache_is_bounded_and_thread_safe(tmp_path):
    paths = []
    for i in range(batch._MAX_OPEN_GRAPHS + 3):
        p = str(tmp_path / f"g{i}.graph")
        ie.datasets.karate().save(p)
        paths.append(p)
    clear_cache()
    for p in paths:
        open_graph(p)
    assert batch._opened.cache_info().currsize == batch._MAX_OPEN_GRAPHS
    first = {}

    def work(i: int) -> None:
        first[i] = open_graph(paths[-1])

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len({id(g) for g in first.values()}) == 1
    clear_cache()


def test_embeddings_to_arrow():
    pa = pytest.importorskip("pyarrow")
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = embeddings_to_arrow(m)
    assert a.type == pa.list_(pa.float32())
    assert a.to_pylist()[2] == [8.0, 9.0, 10.0, 11.0]
    f = embeddings_to_arrow(m, fixed_size=True)
    assert f.type == pa.list_(pa.float32(), 4)
    assert np.array_equal(np.asarray(f.values).reshape(3, 4), m)
    assert len(embeddings_to_arrow(np.zeros((0, 4), np.float32))) == 0


@pytest.mark.parametrize("k", [0, 1, 3])
def test_embeddings_frame_list_cells_are_views_of_the_matrix(k):
    pd = pytest.importorskip("pandas")
    m = np.arange(4 * k, dtype=np.float32).reshape(k, 4)
    nodes = pd.Series(np.arange(10, 10 + k), index=np.arange(k)[::-1], name="n")
    f = batch.embeddings_frame(nodes, m, node_col="v", output_col="e")
    assert list(f.columns) == ["v", "e"] and f["e"].dtype == object
    assert list(f.index) == list(nodes.index)
    for i in range(k):  # one float32 row view per cell, no copy
        cell = f["e"].iloc[i]
        assert cell.dtype == np.float32 and cell.shape == (4,) and np.shares_memory(cell, m)
        assert np.array_equal(cell, m[i])
    cols = batch.embeddings_frame(nodes, m, layout="columns")
    assert list(cols.columns) == ["node", "e0", "e1", "e2", "e3"]
    assert np.array_equal(cols[["e0", "e1", "e2", "e3"]].to_numpy(), m)


def test_as_node_ids_rejects_bad_kinds():
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="1.5 is not an integer id"):
        as_node_ids(pa.array([1.5]))
    with pytest.raises(ValueError, match="one-dimensional"):
        as_node_ids(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="overflows int64"):
        as_node_ids(np.array([2**63], dtype=np.uint64))
    with pytest.raises(ValueError, match="booleans"):
        as_node_ids(pd.Series([True, False]))
    with pytest.raises(TypeError, match="DataFrame"):
        as_node_ids(pd.DataFrame({"a": [1]}))
    assert as_node_ids(pa.chunked_array([["b"], ["a"]]).dictionary_encode()) == ["b", "a"]
    assert as_node_ids(pd.Index([3, 4])).tolist() == [3, 4]


# ------------------------------------------------------------------------------ remote cache


class _CountingFS:
    """Registers an fsspec protocol 'iefake' over a local directory, counting reads.

    ``downloads``: opens other than the small ranged reads of the header (``cat_file``).
    """

    def __init__(self, fsspec, root: str):
        from fsspec.implementations.local import LocalFileSystem

        counter = self

        class FakeRemote(LocalFileSystem):
            protocol = ("iefake",)
            root_marker = ""

            @classmethod
            def _strip_protocol(cls, path):
                path = str(path)
                if path.startswith("iefake://"):
                    return os.path.join(root, path[len("iefake://") :].lstrip("/"))
                return path  # already stripped

            def _open(self, path, mode="rb", **kw):
                counter.opens += 1
                return super()._open(path, mode=mode, **kw)

            def cat_file(self, path, start=None, end=None, **kw):
                counter.ranged += 1
                return super().cat_file(path, start=start, end=end, **kw)

        self.opens = 0
        self.ranged = 0
        self.cls = FakeRemote
        fsspec.register_implementation("iefake", FakeRemote, clobber=True)

    @property
    def downloads(self) -> int:
        return self.opens - self.ranged


@pytest.fixture
def fsspec():
    return pytest.importorskip("fsspec")


def test_file_uri_copied_once_keyed_by_content(tmp_path, fsspec):
    src = tmp_path / "remote"
    src.mkdir()
    ie.datasets.karate().save(src / "a.graph")
    ie.datasets.karate().save(src / "b.graph")  # same content, another name
    cache = tmp_path / "cache"
    uri = (src / "a.graph").as_uri()
    assert uri.startswith("file://")
    local = local_graph_path(uri, cache_dir=cache)
    assert os.path.dirname(local) == str(cache) and local.endswith(".graph")
    st = os.stat(local)
    assert local_graph_path(uri, cache_dir=cache) == local
    assert os.stat(local).st_ino == st.st_ino  # not copied again
    assert local_graph_path((src / "b.graph").as_uri(), cache_dir=cache) == local
    ref = ie.InstantEmbedding(16).embed(ie.datasets.karate(), [0, 5, 33])
    assert np.array_equal(embed_batch(uri, [0, 5, 33], model=M16, cache_dir=cache), ref)
    # A different object at the same URI gets a new entry (the key is the content).
    s, d = _edges(34, 150, seed=9)
    ie.Graph.from_edges(s, d, num_nodes=34).save(src / "a.graph")
    local2 = local_graph_path(uri, cache_dir=cache)
    assert local2 != local
    got = embed_batch(uri, [0, 5, 33], model=M16, cache_dir=cache)
    assert np.array_equal(
        got, ie.InstantEmbedding(16).embed(ie.Graph.open(src / "a.graph"), [0, 5, 33])
    )
    names = sorted(n for n in os.listdir(cache) if n.endswith(".graph"))
    assert len(names) == 2
    clear_cache(files=True, cache_dir=cache)
    assert not [n for n in os.listdir(cache) if n.endswith(".graph")]


def test_remote_download_happens_once_across_threads(tmp_path, fsspec):
    root = tmp_path / "bucket"
    root.mkdir()
    ie.datasets.lesmis().save(root / "lesmis.graph")
    fake = _CountingFS(fsspec, str(root))
    cache = str(tmp_path / "cache")
    results = []

    def work() -> None:
        results.append(local_graph_path("iefake://lesmis.graph", cache_dir=cache))

    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(results)) == 1
    # every caller reads the header (the content key) and looks for a change log's head ...
    assert fake.ranged == 12
    assert fake.downloads == 1  # ... but only one downloads; the others find the verified copy
    names = ["Valjean", "Javert"]
    ref = ie.InstantEmbedding(8).embed(ie.datasets.lesmis(), names)
    uri = "iefake://lesmis.graph"
    assert np.array_equal(embed_batch(uri, names, model=M8, cache_dir=cache), ref)
    clear_cache()  # a new process on the same machine: no new download either
    assert np.array_equal(embed_batch(uri, names, model=M8, cache_dir=cache), ref)
    assert fake.downloads == 1
    assert not [n for n in os.listdir(cache) if ".tmp-" in n]


def test_remote_errors(tmp_path, fsspec):
    root = tmp_path / "bucket"
    root.mkdir()
    cache = tmp_path / "cache"
    _CountingFS(fsspec, str(root))
    with pytest.raises(FileNotFoundError, match="iefake://nothing.graph"):
        local_graph_path("iefake://nothing.graph", cache_dir=cache)
    (root / "notes.txt").write_text("hello, not a graph " * 20)
    with pytest.raises(ie.GraphFormatError, match="bad magic"):
        local_graph_path("iefake://notes.txt", cache_dir=cache)
    # A body corrupted after the header: the copy fails verification and is not kept.
    ie.datasets.karate().save(root / "bad.graph")
    data = bytearray((root / "bad.graph").read_bytes())
    data[-1] ^= 0xFF
    (root / "bad.graph").write_bytes(bytes(data))
    with pytest.raises(ie.GraphFormatError, match="failed verification"):
        local_graph_path("iefake://bad.graph", cache_dir=cache)
    assert not [n for n in os.listdir(cache) if n.endswith(".graph") or ".tmp-" in n]
    with pytest.raises(FileNotFoundError, match="iefake://nothing.graph"):
        embed_batch("iefake://nothing.graph", [1], model=M8, cache_dir=cache)


def test_an_object_replaced_during_the_download_is_not_cached(tmp_path, fsspec):
    root = tmp_path / "bucket"
    root.mkdir()
    ie.datasets.karate().save(root / "swap.graph")
    fake = _CountingFS(fsspec, str(root))
    real_cat = fake.cls.cat_file

    def cat_then_replace(self, path, start=None, end=None, **kw):  # after the header read
        header = real_cat(self, path, start=start, end=end, **kw)
        ie.datasets.lesmis().save(root / "swap.graph")
        return header

    fake.cls.cat_file = cat_then_replace
    cache = tmp_path / "cache"
    with pytest.raises(ie.GraphFormatError, match="replaced during the download"):
        local_graph_path("iefake://swap.graph", cache_dir=cache)
    assert not [n for n in os.listdir(cache) if n.endswith(".graph") or ".tmp-" in n]


def test_shipped_copies_are_checked_on_the_worker(tmp_path):
    path = str(tmp_path / "g.graph")
    ie.datasets.karate().save(path)
    shipped, key = batch.ship_file(path)
    assert os.path.basename(shipped) == f"{key}.graph" and key == batch.header_digest(path)
    assert batch.shipped_copy(shipped, key, "g.graph") == shipped
    ie.datasets.lesmis().save(path)  # rebuilt at the same path: a new name, its own key
    assert batch.ship_file(path)[1] != key
    with pytest.raises(ie.GraphFormatError, match="stale"):
        batch.shipped_copy(path, key, "g.graph")
    with pytest.raises(FileNotFoundError, match="not on this worker"):
        batch.shipped_copy(str(tmp_path / "nothing.graph"), key, "g.graph")


def test_build_graph_checks_the_columns_before_reading_a_batch(tmp_path):
    pa = pytest.importorskip("pyarrow")
    calls = []

    def batches(cols):
        calls.append(cols)
        yield pa.RecordBatch.from_arrays([pa.array([1, 2]), pa.array([2, 3])], names=cols)

    out = str(tmp_path / "g.graph")
    with pytest.raises(KeyError, match="'zz'"):
        batch.build_graph(["a", "b"], batches, out, ("a", "zz", None))
    assert calls == [] and not os.path.exists(out)
    g = batch.build_graph(["a", "b"], batches, out, ("a", "b", None), directed=True)
    assert calls == [["a", "b"]] and (g.num_nodes, g.num_edges, g.directed) == (3, 2, True)


def test_remote_without_fsspec_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(ImportError, match="needs fsspec"):
        local_graph_path("s3://bucket/g.graph", cache_dir=tmp_path)
    assert local_graph_path(str(tmp_path / "x.graph")) == str(tmp_path / "x.graph")


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("INSTANT_EMBEDDING_CACHE_DIR", str(tmp_path / "c"))
    assert batch.default_cache_dir() == str(tmp_path / "c")
    monkeypatch.delenv("INSTANT_EMBEDDING_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert batch.default_cache_dir() == str(tmp_path / "xdg" / "instant-embedding" / "graphs")


def test_import_never_pulls_in_engines():
    code = (
        "import sys, instant_embedding, instant_embedding.batch, instant_embedding.spark, "
        "instant_embedding.dask\n"
        "bad = [m for m in ('pyspark', 'py4j', 'dask', 'distributed', 'fsspec', 'pandas', "
        "'pyarrow') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
