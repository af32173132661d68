"""The one reading-options object (``ReadOptions``, the kernel's table of reading options) and
what is built from it: the command line's reading flags, ``convert``'s keywords, refusals of
options a format does not use."""

from __future__ import annotations

import copy
import inspect
import pickle

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding.cli import build_parser
from instant_embedding.readers import DEFAULT_MEMORY_LIMIT, ReadOptions, formats, parse_size

SETTINGS = ReadOptions.settings()
BY_NAME = {s["name"]: s for s in SETTINGS}


def _subparser(name: str):
    return build_parser()._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]


def test_the_table_names_the_registered_formats():
    every = set(BY_NAME["format"]["formats"])
    assert every == set(formats())
    assert BY_NAME["format"]["choices"] == ("auto", *BY_NAME["format"]["formats"])
    for s in SETTINGS:
        assert set(s["formats"]) <= every, s["name"]
        assert s["stage"] in ("parse", "build") and s["help"], s["name"]


def test_defaults_come_from_the_table():
    d = ReadOptions()
    assert list(d.to_dict()) == list(BY_NAME)
    assert d.given() == []
    assert (d.format, d.comment, d.id_kind, d.merge, d.self_loops) == (
        "auto",
        "#%",
        "auto",
        "sum",
        "keep",
    )
    assert d.memory_limit == DEFAULT_MEMORY_LIMIT == parse_size(BY_NAME["memory_limit"]["default"])
    for name in ("directed", "weighted", "header", "delimiter", "src_col", "tmp_dir"):
        assert getattr(d, name) is None and BY_NAME[name]["default"] == "", name


def test_convert_takes_exactly_the_options_users_give():
    params = inspect.signature(ie.convert).parameters
    users = [s["name"] for s in SETTINGS if s["formats"]]
    assert [p for p in params if p not in ("input", "output", "progress")] == users
    for name in users:
        want = None if BY_NAME[name]["type"] == "size" else getattr(ReadOptions(), name)
        assert params[name].default == want, name


def test_cli_reading_flags_come_from_the_table():
    convert = {a.dest: a for a in _subparser("convert")._actions}
    update = {a.dest: a for a in _subparser("update")._actions}
    for s in SETTINGS:
        name = s["name"]
        if not s["formats"]:
            assert name not in convert, name
            continue
        a = convert[name]
        if s["choices"]:
            assert tuple(a.choices) == s["choices"], name
            assert a.default == s["default"], name
        # update reads records the way convert does; the graph settles the rest.
        assert (name in update) == (s["stage"] == "parse") or name == "merge", name
    args = _subparser("convert").parse_args(
        ["e.csv", "g.graph", "--sep", ";", "--src-col", "2", "--no-header", "--undirected"]
    )
    assert (args.delimiter, args.src_col, args.header, args.directed) == (";", 2, False, False)
    args = _subparser("update").parse_args(["g.graph", "--add", "e.txt", "--comment", "!"])
    assert args.comment == "!"


def test_options_are_frozen_comparable_and_pickle():
    o = ReadOptions(format="csv", src_col="a", dst_col=1, memory_limit="1.5G", header=False)
    assert o.memory_limit == 3 * 2**29 and (o.src_col, o.dst_col) == ("a", 1)
    assert o.given() == ["header", "src_col", "dst_col", "memory_limit"]
    assert o == ReadOptions(**o.to_dict()) and o != ReadOptions()
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(o, protocol=proto)) == o
    assert copy.deepcopy(o) == o
    with pytest.raises(AttributeError):
        o.header = True  # type: ignore[misc]
    r = o.replace(merge="max", header=None)
    assert (r.merge, r.header, o.merge, o.header) == ("max", None, "sum", False)
    assert "src_col" in dir(o)
    assert (
        repr(ReadOptions(format="mtx", weighted=True)) == "ReadOptions(format='mtx', weighted=True)"
    )


@pytest.mark.parametrize(
    "kw,exc,msg",
    [
        ({"header": 1}, TypeError, "header must be True, False or None"),
        ({"directed": "yes"}, TypeError, "directed must be True, False or None"),
        ({"src_col": -1}, TypeError, "src_col must be a column index >= 0 or a column name"),
        ({"src_col": 1.5}, TypeError, "src_col must be a column index"),
        ({"src_col": True}, TypeError, "src_col must be a column index"),
        ({"merge": "min"}, ValueError, "merge must be one of 'sum', 'max', got \"min\""),
        ({"id_kind": 3}, ValueError, "id_kind must be one of 'auto', 'int', 'str'"),
        ({"format": "x-y"}, ValueError, "format must be 'auto' or one of 'edgelist', 'csv'"),
        ({"memory_limit": "lots"}, ValueError, "invalid size"),
        ({"memory_limit": 0}, ValueError, "memory_limit must be > 0"),
        ({"memory_limit": True}, TypeError, "memory_limit must be an int or a size string"),
        ({"comment": "§"}, ValueError, "comment characters must be ASCII"),
        ({"delimiter": "ab"}, ValueError, "delimiter"),
        ({"weight_col": "w", "weighted": False}, ValueError, "weight_col is given but"),
        ({"dim": 3}, TypeError, "unknown reading option 'dim'"),
    ],
)
def test_bad_options_are_refused_with_their_name(kw, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        ReadOptions(**kw)


def test_numpy_values_are_taken():
    o = ReadOptions(directed=np.bool_(True), src_col=np.int64(3), memory_limit=np.int64(2048))
    assert (o.directed, o.src_col, o.memory_limit) == (True, 3, 2048)


def test_an_option_a_format_does_not_use_is_refused(tmp_path):
    (tmp_path / "e.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"
    )
    with pytest.raises(ValueError, match=r"header, src_col do\(es\) not apply to mtx input"):
        ie.convert(tmp_path / "e.mtx", tmp_path / "g.graph", header=False, src_col=0)
    assert not (tmp_path / "g.graph").exists()
    for s in SETTINGS:
        for fmt in s["formats"]:
            ReadOptions(format=fmt).check_applies(fmt)


def test_decimal_comma_weights(tmp_path):
    """``1,5`` is a weight of 1.5 where the writer's locale says so: detected with ``;``
    (a spreadsheet's CSV), asked for elsewhere, refused when turned off."""
    tsv = tmp_path / "e.tsv"
    tsv.write_text("a\tb\t1,5\nb\tc\t2\n")
    with pytest.raises(ie.GraphFormatError, match="non-numeric weight '1,5'"):
        ie.convert(tsv, tmp_path / "g.graph", weighted=True)
    g = ie.convert(tsv, tmp_path / "g.graph", weighted=True, decimal_comma=True)
    assert g.edge_weights("a").tolist() == [1.5]
    semi = tmp_path / "e.csv"
    semi.write_text("src;dst;weight\na;b;2,25\n")
    assert ie.convert(semi, tmp_path / "h.graph").edge_weights("a").tolist() == [2.25]
    with pytest.raises(ie.GraphFormatError, match="non-numeric weight '2,25'"):
        ie.convert(semi, tmp_path / "h.graph", decimal_comma=False)
    mtx = tmp_path / "x.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1.5\n")
    with pytest.raises(ValueError, match=r"decimal_comma do\(es\) not apply to mtx input"):
        ie.convert(mtx, tmp_path / "m.graph", decimal_comma=True)


def test_text_and_tables_share_one_column_rule(tmp_path):
    """A frame written by pandas, read back and written again, has an ``Unnamed: 0`` index
    column: an index for text and tables alike, and the same refusal of three candidates."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": ["x", "y"], "b": ["y", "z"]})
    df.to_csv(tmp_path / "once.csv")
    pd.read_csv(tmp_path / "once.csv").to_csv(tmp_path / "twice.csv", index=False)
    assert open(tmp_path / "twice.csv").readline().startswith("Unnamed: 0,a,b")
    twice = pd.read_csv(tmp_path / "twice.csv")
    want = sorted(zip(df["a"], df["b"]))
    for g in (ie.convert(tmp_path / "twice.csv", tmp_path / "t.graph"), ie.from_pandas(twice)):
        assert sorted((u, v) for u in g.nodes for v in g.neighbors(u) if u < v) == want
    three = pd.DataFrame({"ts": [1, 2], "a": ["x", "y"], "b": ["y", "z"]})
    three.to_csv(tmp_path / "three.csv", index=False)
    # Text cannot tell "ts,a,b" from an edge line; both refuse and name the flags.
    with pytest.raises(ie.GraphFormatError, match="src_col and dst_col to choose the columns"):
        ie.convert(tmp_path / "three.csv", tmp_path / "3.graph")
    msg = r"DataFrame: 3 columns \('ts', 'a', 'b'\) and no known pair .* pass src_col and dst_col"
    with pytest.raises(ie.GraphFormatError, match=msg):
        ie.from_pandas(three)


def test_update_streams_files_without_a_temporary_graph(tmp_path, monkeypatch):
    """``update`` reads text, JSON, tables, arrays and matrices into its commit, with the
    readers of ``convert`` and never through a temporary graph file."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import instant_embedding.readers as readers
    from instant_embedding.cli import main

    def no_temporary_graph(*a, **k):
        raise AssertionError("update converted to a temporary graph")

    monkeypatch.setattr(readers, "convert", no_temporary_graph)
    base = tmp_path / "g.graph"
    ie.Graph.from_edges([0], [1], weights=[1.0]).save(base)
    pq.write_table(
        pa.table({"src": [1, 2], "dst": [2, 3], "weight": [2.0, 3.0]}), tmp_path / "e.pq"
    )
    np.save(tmp_path / "e.npy", np.array([[3, 4, 5], [4, 5, 6]], dtype=np.int64))
    (tmp_path / "r.csv").write_text("src,dst\n0,1\n9,9\n")
    (tmp_path / "e.jsonl").write_text('{"source": 5, "target": 6, "weight": 7}\n')
    args = ["update", str(base), "--add", str(tmp_path / "e.pq"), "--add", str(tmp_path / "e.npy")]
    args += ["--add", str(tmp_path / "e.jsonl")]
    assert main([*args, "--remove", str(tmp_path / "r.csv"), "-q"]) == 0
    g = ie.Graph.open(base)
    want = {(1, 2): 2.0, (2, 3): 3.0, (3, 4): 5.0, (4, 5): 6.0, (5, 6): 7.0}
    got = {
        (u, v): w
        for u in g.nodes
        for v, w in zip(g.neighbors(u).tolist(), g.edge_weights(u).tolist())
        if u < v
    }
    assert got == want


def test_one_node_id_boundary_for_arrays_tables_and_lists():
    """numpy arrays of any integer, float or text dtype, Arrow columns and lists become the same
    typed ids, and are refused with the same error type naming the input, row and column."""
    from instant_embedding import _core

    pa = pytest.importorskip("pyarrow")
    want = np.array([3, -1, 2**40], dtype=np.int64)
    for values in (
        want,
        want.astype(np.float64),
        np.array(["3", "-1", str(2**40)]),
        [3, -1, 2**40],
        pa.array(want).to_numpy(),
    ):
        got = _core.node_ids(values, "int", "x", "src", 0)
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
    assert _core.node_ids(np.array([7, 8], dtype=np.uint8), "str", "x", "c", 0) == ["7", "8"]
    bad = [
        (np.array([1.0, 2.5]), r"x: row 11: column 'src': value 2\.5 is not an integer id"),
        (np.array([1.0, np.nan]), r"x: row 11: column 'src': value is missing"),
        (np.array([1, 2**63], dtype=np.uint64), r"row 11: id 9223372036854775808 .* overflows"),
        ([1, "a"], r"row 11: column 'src' holds 'a' \(str\); node ids must be all int or all str"),
        ([1, None], r"row 11: column 'src' is missing"),
        (np.array([True, False]), r"x: column 'src' holds booleans"),
        (np.zeros((2, 2)), r"x: column 'src' must be one-dimensional"),
    ]
    for values, msg in bad:
        with pytest.raises(ie.GraphFormatError, match=msg):
            _core.node_ids(values, "auto", "x", "src", 10)
    with pytest.raises(ie.GraphFormatError, match=r"x: row 3: weight -1\.0 in column 'w' is <= 0"):
        _core.edge_weights(np.array([1, -1]), "x", 2, "w")
    with pytest.raises(ie.GraphFormatError, match=r"x: edge 1: non-numeric weight 'a'"):
        _core.edge_weights(["1.5", "a"], "x", 0, None, "edge")


def test_convert_documents_each_of_its_reading_keywords_once_from_the_table():
    doc = ie.convert.__doc__ or ""
    keywords = [p for p in inspect.signature(ie.convert).parameters if p in BY_NAME]
    assert keywords == [s["name"] for s in SETTINGS if s["formats"]]
    for name in keywords:
        assert doc.count(f"\n    {name} : ") == 1, name
        first_words = " ".join(BY_NAME[name]["help"].split()[1:4])
        assert first_words in " ".join(doc.split()), name
    assert "<reading options>" not in doc
