"""Property-based fuzzing of the graph-file reader from Python (see docs/RELIABILITY.md).

Valid graph files are mutated (byte flips, integer overwrites aimed at header fields and
sections, truncation, extension) with the header checksum optionally forged so mutations get
past the O(1) open checks, and optionally every section checksum too so they reach the
structural checks of ``validate()``. The contract checked on every example:

- ``Graph.open`` either succeeds or raises ``GraphFormatError`` (never another exception,
  never a crash: a Rust panic would surface as ``pyo3_runtime.PanicException``);
- on an opened graph, every accessor, a PPR push and an embedding of every node, ``embed_all``
  and ``validate()`` either work or raise ``GraphFormatError``; ``NodeNotFoundError`` is
  tolerated only when ``validate()`` also reports the file as corrupt (a corrupted id index
  can make an id unfindable before anything detects the corruption);
- a file that passes ``validate()`` raises nothing at all.

Profiles: ``IE_FUZZ_PROFILE=ci`` (default, 200 examples, a few seconds) or ``long``
(``IE_FUZZ_EXAMPLES`` examples, default 20000).
"""

from __future__ import annotations

import itertools
import os
import struct

import instant_embedding as ie
import numpy as np
import pytest
from instant_embedding import _core

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

settings.register_profile(
    "ie-fuzz-ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ie-fuzz-long",
    max_examples=int(os.environ.get("IE_FUZZ_EXAMPLES", "20000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile(
    "ie-fuzz-long" if os.environ.get("IE_FUZZ_PROFILE") == "long" else "ie-fuzz-ci"
)

HEADER_LEN = 256
SECTION_NAMES = ["indptr", "indices", "weights", "strength", "ids", "id_bytes", "id_index"]


def _base_graphs() -> list[ie.Graph]:
    rng = np.random.default_rng(11)
    src = rng.integers(0, 12, size=30)
    dst = rng.integers(0, 12, size=30)
    w = rng.random(30) + 0.25
    names = ["a", "b", "é", "", "dd", "z9", "x", "yy", "q", "r", "s", "t"]
    return [
        ie.Graph.from_edges(src, dst, num_nodes=12),
        ie.Graph.from_edges(src * 7 - 40, dst * 7 - 40, weights=w, directed=True),
        ie.Graph.from_edges([names[i] for i in src], [names[i] for i in dst], weights=w),
        ie.Graph.from_edges([0, 0, 0, 0], [1, 2, 3, 4], directed=True),
        ie.Graph.from_edges([0, 2, 3], [0, 2, 4], num_nodes=6),
        ie.Graph.from_edges([], [], num_nodes=0),
        ie.Graph.from_edges([], [], nodes=["solo"]),
    ]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_reader")


@pytest.fixture(scope="module")
def bases(workdir) -> list[bytes]:
    out = []
    for i, g in enumerate(_base_graphs()):
        p = workdir / f"base{i}.graph"
        g.save(p)
        out.append(p.read_bytes())
    return out


# ------------------------------------------------------------------ checksum forging
def _xxh3(data: bytes) -> int:
    """The file format's checksum (xxh3-64), computed by the library itself."""
    return _core.xxh3_64(data)


def fix_header(b: bytearray) -> None:
    if len(b) >= HEADER_LEN:
        struct.pack_into("<Q", b, 248, _xxh3(bytes(b[:248])))


def fix_all(b: bytearray) -> None:
    if len(b) < HEADER_LEN:
        return
    for i in range(7):
        off, length = struct.unpack_from("<QQ", b, 64 + 24 * i)
        if off + length <= len(b):
            struct.pack_into("<Q", b, 64 + 24 * i + 16, _xxh3(bytes(b[off : off + length])))
    fix_header(b)


# ------------------------------------------------------------------ the oracle
_counter = itertools.count()


def touch_everything(g: ie.Graph, workdir, light: bool = False) -> None:
    """Every read path; enforces the contract in the module docstring. ``light`` skips the
    multi-threaded and file-writing ``embed_all`` calls (for the exhaustive loops)."""
    errors: list[BaseException] = []

    def attempt(f, *a, **kw):
        try:
            return f(*a, **kw)
        except ie.GraphFormatError as e:
            assert str(e), "GraphFormatError without a message"
            errors.append(e)
        except ie.NodeNotFoundError as e:
            errors.append(e)
        return None

    n = g.num_nodes
    _ = (g.num_edges, g.num_arcs, g.directed, g.weighted, g.id_kind, g.path, repr(g), len(g))
    attempt(g.degrees)
    for v in range(n):
        attempt(g._g.degree, v)
        attempt(g._g.neighbors, v)
        attempt(g._g.strength, v)
        attempt(g._g.hash_key, v)
    nodes = attempt(lambda: g.nodes)
    if nodes is not None:
        for node in list(nodes)[:16]:
            attempt(g.degree, node)
            attempt(g.neighbors, node)
            attempt(g.edge_weights, node)
            attempt(ie.ppr, g, node, eps=1e-2)
            attempt(ie.ppr, g, node, eps=1e-2, variant="lazy")
        attempt(ie.InstantEmbedding(dim=8, eps=1e-2).embed, g, list(nodes)[:16])
    model = ie.InstantEmbedding(dim=8, eps=1e-2, threads=1 if light else 2)
    attempt(model.embed_all, g, batch_size=5)
    if not light:
        out = workdir / f"emb{next(_counter)}.npy"
        emb = attempt(model.embed_all, g, out=out)
        if emb is not None:
            assert emb.shape == (n, 8)
            del emb
            out.unlink()
        assert not [p for p in workdir.iterdir() if ".tmp-" in p.name], "temp file left behind"
    try:
        g.validate()
        valid = True
    except ie.GraphFormatError:
        valid = False
    if valid:
        assert not errors, f"validate() passed but queries failed: {errors!r}"
    else:
        assert all(isinstance(e, (ie.GraphFormatError, ie.NodeNotFoundError)) for e in errors)


def open_and_touch(data: bytes, workdir, light: bool = False) -> str:
    """Writes ``data`` to a fresh file, opens and touches it; returns what happened."""
    p = workdir / f"case{next(_counter)}.graph"
    p.write_bytes(data)
    try:
        try:
            g = ie.Graph.open(p)
        except ie.GraphFormatError as e:
            assert str(p) in str(e), f"error does not name the file: {e}"
            return "refused"
        touch_everything(g, workdir, light)
        return "opened"
    finally:
        p.unlink()


# ------------------------------------------------------------------ strategies
_INTERESTING = [0, 1, 2, 7, 8, 63, 64, 255, 256, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
                2**62, 2**63 - 1, 2**63, 2**64 - 1]
_u64 = st.one_of(st.sampled_from(_INTERESTING), st.integers(0, 2**64 - 1))
_u32 = st.one_of(st.sampled_from([x for x in _INTERESTING if x < 2**32]), st.integers(0, 2**32 - 1))
# header u64 fields: num_nodes, num_arcs, num_edges, file_len, then (offset, len) of 7 sections
_FIELDS = [16, 24, 32, 40] + [64 + 24 * s + 8 * k for s in range(7) for k in range(2)]

# "xor", "u32", ... land after the header (in the sections); "hxor" and "field" in the header.
_edit = st.one_of(
    st.tuples(st.just("hxor"), st.integers(0, HEADER_LEN - 1), st.integers(1, 255)),
    st.tuples(st.just("xor"), st.integers(0, 2**16), st.integers(1, 255)),
    st.tuples(st.just("u32"), st.integers(0, 2**16), _u32),
    st.tuples(st.just("u64"), st.integers(0, 2**16), _u64),
    st.tuples(st.just("field"), st.sampled_from(_FIELDS), _u64),
    st.tuples(st.just("f32"), st.integers(0, 2**16),
              st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e-45, 3e38])),
    st.tuples(st.just("f64"), st.integers(0, 2**16),
              st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 5e-324, 1e-300, 1e300])),
)


def apply_edits(base: bytes, edits, truncate, extend, forge) -> bytes:
    b = bytearray(base)
    for kind, pos, val in edits:
        if kind == "hxor":
            b[pos] ^= val
            continue
        if kind == "xor":
            b[HEADER_LEN + pos % (len(b) - HEADER_LEN)] ^= val
            continue
        fmt, size = {"u32": ("<I", 4), "u64": ("<Q", 8), "field": ("<Q", 8),
                     "f32": ("<f", 4), "f64": ("<d", 8)}[kind]
        if kind == "field":
            struct.pack_into(fmt, b, pos, val)
        elif len(b) - HEADER_LEN >= size:
            struct.pack_into(fmt, b, HEADER_LEN + pos % (len(b) - HEADER_LEN - size + 1), val)
    if truncate is not None:
        del b[truncate % (len(b) + 1):]
    b.extend(b"\0" * extend)
    if forge == "all":
        fix_all(b)
    elif forge == "header":
        fix_header(b)
    return bytes(b)


@settings(PROFILE)
@given(
    base=st.integers(0, 6),
    edits=st.lists(_edit, max_size=6),
    # mostly length-preserving, so that most mutations get past open() to the sections
    truncate=st.one_of(st.none(), st.none(), st.none(), st.integers(0, 2**16)),
    extend=st.sampled_from([0] * 9 + [1, 64, 200]),
    forge=st.sampled_from(["none", "header", "header", "all"]),
)
def test_mutated_files_open_or_fail_cleanly(bases, workdir, base, edits, truncate, extend, forge):
    data = apply_edits(bases[base], edits, truncate, extend, forge)
    hypothesis.event(f"{open_and_touch(data, workdir)} (checksums forged: {forge})")


@settings(PROFILE)
@given(data=st.binary(min_size=0, max_size=1024), forge=st.booleans())
def test_random_bytes_with_a_valid_magic(workdir, data, forge):
    b = bytearray(b"IEGRAPH\0\x01\0\0\0" + data)
    if forge:
        fix_header(b)
    hypothesis.event(open_and_touch(bytes(b), workdir))


# ------------------------------------------------------------------ exhaustive small cases
def test_every_truncation_is_refused(bases, workdir):
    for base in bases[:3]:
        for cut in range(0, len(base)):
            assert open_and_touch(base[:cut], workdir, light=True) == "refused", cut


def test_every_header_byte_flip_is_refused(bases, workdir):
    for base in bases[:3]:
        for i in range(HEADER_LEN):
            b = bytearray(base)
            b[i] ^= 0x20
            assert open_and_touch(bytes(b), workdir, light=True) == "refused", i


def _sections(b: bytes) -> list[tuple[int, int]]:
    return [struct.unpack_from("<QQ", b, 64 + 24 * i) for i in range(7)]


def _cheap_bytes(b: bytes) -> set[int]:
    """Bytes of the sections that open() reads: the first and last indptr entries."""
    off, length = _sections(b)[0]
    return set(range(off, off + 8)) | set(range(off + length - 8, off + length))


def test_every_section_byte_flip_is_harmless_or_reported(bases, workdir):
    """Every byte after the header of the weighted string-id graph, flipped one at a time:
    open() refuses exactly the flips of the two indptr entries it checks; everything else
    opens, and every access on it stays safe (the oracle in touch_everything)."""
    base = bases[2]
    for i in range(HEADER_LEN, len(base)):
        b = bytearray(base)
        b[i] ^= 0x41
        expect = "refused" if i in _cheap_bytes(base) else "opened"
        assert open_and_touch(bytes(b), workdir, light=True) == expect, i


# ------------------------------------------------------------------ checksums (what validate adds)
def test_every_section_flip_is_caught_by_validate_and_named(bases, workdir):
    """A flip anywhere inside a section passes the O(1) open (which reads only the header)
    and is caught by ``validate()``, whose message names the section."""
    for base in bases[:3]:
        for sec, (off, length) in enumerate(_sections(base)):
            if length == 0:
                continue
            for pos in sorted({off, off + length // 2, off + length - 1} - _cheap_bytes(base)):
                b = bytearray(base)
                b[pos] ^= 0x01
                p = workdir / "flip.graph"
                p.write_bytes(bytes(b))
                g = ie.Graph.open(p)  # cheap open: no section is read
                with pytest.raises(ie.GraphFormatError,
                                   match=f"checksum mismatch in section {SECTION_NAMES[sec]}"):
                    g.validate()
                del g
                p.unlink()


def test_in_range_neighbour_change_passes_open_and_queries_but_not_validate(workdir):
    g0 = ie.Graph.from_edges(np.arange(50), (np.arange(50) + 1) % 50)
    p = workdir / "ring.graph"
    g0.save(p)
    b = bytearray(p.read_bytes())
    off, _ = _sections(bytes(b))[1]
    first = struct.unpack_from("<I", b, off)[0]
    struct.pack_into("<I", b, off, (first + 17) % 50)  # still a valid node index
    p.write_bytes(bytes(b))
    g = ie.Graph.open(p)
    ie.InstantEmbedding(dim=8).embed_all(g)  # silently different answers: in range
    with pytest.raises(ie.GraphFormatError, match="checksum mismatch in section indices"):
        g.validate()
    # Forge the section checksum too: the structural checks still catch it (an undirected
    # graph whose arc has no reverse, or a row no longer sorted).
    fix_all(b)
    p.write_bytes(bytes(b))
    with pytest.raises(ie.GraphFormatError, match="symmetric|increasing|num_edges"):
        ie.Graph.open(p).validate()
