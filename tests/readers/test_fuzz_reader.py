"""Property-based fuzzing of the graph-file reader from Python (see docs/RELIABILITY.md).

Three generators of hostile files, each aimed at a different layer of checks:

- **mutated files**: valid graph files with byte flips, integer overwrites aimed at header
  fields and sections, truncation and extension, the header checksum optionally forged so the
  mutation gets past the O(1) checks of ``Graph.open``;
- **section edits**: one element of one section of a valid file (a row offset, a neighbour, a
  weight, a strength, an id, an id byte, an ``id_index`` entry) or the edge count overwritten,
  with *every* checksum recomputed, so the edit reaches the structural checks of
  ``validate()`` (sorted rows, symmetry, strengths, id order, ...);
- **random sections**: a header consistent with the file (sizes, alignment, bounds), behind it
  random section contents, optionally tamed (sorted row offsets, neighbours in range,
  positive weights), checksums recomputed.

The contract checked on every example:

- ``Graph.open`` either succeeds or raises ``GraphFormatError`` naming the file (never another
  exception, never a crash: a Rust panic would surface as ``pyo3_runtime.PanicException``);
- on an opened graph, every accessor, a PPR push and an embedding of every node, ``embed_all``
  and ``validate()`` either work or raise ``GraphFormatError``; ``NodeNotFoundError`` is
  tolerated only when ``validate()`` also reports the file as corrupt (a corrupted id index
  can make an id unfindable before anything detects the corruption);
- a file that passes ``validate()`` raises nothing at all.

Each example ends in an *outcome*: the check that refused it (``open: <check>`` or
``validate: <check>``, from the error message) or ``valid``. ``test_every_check_is_reached``
replays the section-edit and random-section generators on a fixed seed and requires every
structural check of ``validate()`` to be the one that catches some example, and most examples
to get past the checksums, so a generator that stops reaching a check fails the suite.

Profiles: ``IE_FUZZ_PROFILE=ci`` (default, 200 examples per property, a few seconds) or
``long`` (``IE_FUZZ_EXAMPLES`` examples, default 20000).
"""

from __future__ import annotations

import itertools
import os
import re
import struct
from collections import Counter

import instant_embedding as ie
import numpy as np
import pytest
from helpers import SECTION_NAMES, forge_all_checksums, forge_header_checksum, section_table

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
fix_header = forge_header_checksum
fix_all = forge_all_checksums


# ------------------------------------------------------------------ outcomes
# Which check refused a file, from its message: the checks of Graph.open (O(1)) ...
OPEN_CHECKS = {
    "short": r"too short for a graph header",
    "magic": r"bad magic",
    "version": r"unsupported graph format version",
    "header checksum": r"header checksum mismatch",
    "flags": r"unknown header flags|unknown id kind",
    "file length": r"does not match the header's",
    "num_nodes": r"exceeds the u32 index limit",
    "num_arcs": r"num_arcs \d+ cannot fit",
    "permuted": r"permuted graph must store",
    "num_edges bound": r"num_edges exceeds",
    "section length": r"has length \d+ but|unexpected section",
    "alignment": r"not 64-byte aligned",
    "section bounds": r"overlaps another section|offset overflows",
    "indptr ends": r"indptr does not start at 0",
}
# ... and those of validate() (O(n + m)), in the order it runs them.
VALIDATE_CHECKS = {
    "checksum": r"checksum mismatch in section",
    "indptr order": r"indptr decreases",
    "neighbour range": r"has neighbour \d+ >= ",
    "row order": r"not strictly increasing",
    "num_edges": r"num_edges \d+ does not match",
    "symmetry": r"not symmetric",
    "weight": r"invalid weight",
    "strength": r"strength of node \d+ does not match",
    "nbr codes": r"neighbour code of arc \d+->\d+ does not match",
    "id_index": r"id_index is not a permutation",
    "string offsets": r"string id offsets do not span|corrupted string id offsets",
    "utf-8": r"is not valid UTF-8",
    "id order": r"not unique and sorted",
}
STRUCTURAL = [k for k in VALIDATE_CHECKS if k != "checksum"]


def classify(message: str, checks: dict[str, str]) -> str:
    for name, pattern in checks.items():
        if re.search(pattern, message):
            return name
    return f"other ({message})"


# ------------------------------------------------------------------ the oracle
_counter = itertools.count()


def touch_everything(g: ie.Graph, workdir, light: bool = False) -> str | None:
    """Every read path; enforces the contract in the module docstring and returns the message
    of ``validate()``'s error (None for a valid file). ``light`` skips the multi-threaded and
    file-writing ``embed_all`` calls (for the exhaustive loops)."""
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
        try:
            emb = attempt(model.embed_all, g, out=out)
        except ValueError as e:
            # A valid string id holding a line break cannot go to the ids text file beside
            # the .npy: a documented refusal, and nothing is written.
            assert "line break" in str(e), e
            assert not out.exists()
            emb = None
        if emb is not None:
            assert emb.shape == (n, 8)
            del emb
            out.unlink()
        assert not [p for p in workdir.iterdir() if ".tmp-" in p.name], "temp file left behind"
    try:
        g.validate()
        problem = None
    except ie.GraphFormatError as e:
        problem = str(e)
    if problem is None:
        assert not errors, f"validate() passed but queries failed: {errors!r}"
    else:
        assert all(isinstance(e, (ie.GraphFormatError, ie.NodeNotFoundError)) for e in errors)
    return problem


def open_and_touch(data: bytes, workdir, light: bool = False) -> str:
    """Writes ``data`` to a fresh file, opens and touches it; returns the outcome:
    ``open: <check>``, ``validate: <check>`` or ``valid``."""
    p = workdir / f"case{next(_counter)}.graph"
    p.write_bytes(data)
    try:
        try:
            g = ie.Graph.open(p)
        except ie.GraphFormatError as e:
            assert str(p) in str(e), f"error does not name the file: {e}"
            return "open: " + classify(str(e), OPEN_CHECKS)
        problem = touch_everything(g, workdir, light)
        return "valid" if problem is None else "validate: " + classify(problem, VALIDATE_CHECKS)
    finally:
        p.unlink()


def refused(outcome: str) -> bool:
    return outcome.startswith("open: ")


# ------------------------------------------------------------------ strategies
_INTERESTING = [
    0,
    1,
    2,
    7,
    8,
    63,
    64,
    255,
    256,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**62,
    2**63 - 1,
    2**63,
    2**64 - 1,
]
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
    st.tuples(
        st.just("f32"),
        st.integers(0, 2**16),
        st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e-45, 3e38]),
    ),
    st.tuples(
        st.just("f64"),
        st.integers(0, 2**16),
        st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 5e-324, 1e-300, 1e300]),
    ),
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
        fmt, size = {
            "u32": ("<I", 4),
            "u64": ("<Q", 8),
            "field": ("<Q", 8),
            "f32": ("<f", 4),
            "f64": ("<d", 8),
        }[kind]
        if kind == "field":
            struct.pack_into(fmt, b, pos, val)
        elif len(b) - HEADER_LEN >= size:
            struct.pack_into(fmt, b, HEADER_LEN + pos % (len(b) - HEADER_LEN - size + 1), val)
    if truncate is not None:
        del b[truncate % (len(b) + 1) :]
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
def test_random_bytes_after_the_magic_are_refused(workdir, data, forge):
    """Random bytes behind the magic and version: open() refuses them, cleanly (a random
    file_len never matches the real length; random_sections below gets past open())."""
    b = bytearray(b"IEGRAPH\0\x01\0\0\0" + data)
    if forge:
        fix_header(b)
    outcome = open_and_touch(bytes(b), workdir)
    hypothesis.event(outcome)
    assert refused(outcome)


# ------------------------------------------------------------------ section edits
# (struct format, size) of one element of each section; ids are int64 or u64 offsets.
_ELEMENT = [
    ("<Q", 8),
    ("<I", 4),
    ("<f", 4),
    ("<d", 8),
    ("<Q", 8),
    ("<B", 1),
    ("<I", 4),
    ("<B", 1),
]
_FLOATS = [float("nan"), float("inf"), -1.0, 0.0, 1e-45, 0.25, 3.0, 3e38]  # f32-representable
HOWS = ["near", "small", "swap", "raw"]
NUM_EDGES_FIELD = 8  # edit target after the eight sections: the header's edge count


def edit_section(base: bytes, target: int, pos: int, how: str, raw: int) -> bytes:
    """One element of one non-empty section of ``base`` (``target`` modulo their number, or
    the header's edge count) changed, then every checksum recomputed. ``how``: ``near`` (the
    old value plus a little), ``small`` (an in-range index, or a special float), ``swap``
    (exchanged with another element of the section) or ``raw`` (random bits)."""
    b = bytearray(base)
    n, m = struct.unpack_from("<QQ", b, 16)
    table = section_table(base)
    targets = [i for i, (_, length) in enumerate(table) if length] + [NUM_EDGES_FIELD]
    target = targets[target % len(targets)]
    if target == NUM_EDGES_FIELD:
        old = struct.unpack_from("<Q", b, 32)[0]
        struct.pack_into("<Q", b, 32, max(0, old + 1 + raw % 5 - 3 + (raw % 5 >= 2)))
        fix_all(b)
        return bytes(b)
    off, length = table[target]
    fmt, size = _ELEMENT[target]
    count = length // size
    i, j = pos % count, raw % count
    at = off + size * i
    old = struct.unpack_from(fmt, b, at)[0]
    bits = "<" + {1: "B", 4: "I", 8: "Q"}[size]
    if how == "swap":
        b[at : at + size], b[off + size * j : off + size * (j + 1)] = (
            b[off + size * j : off + size * (j + 1)],
            b[at : at + size],
        )
    elif how == "raw":
        struct.pack_into(bits, b, at, raw & ((1 << (8 * size)) - 1))
    elif fmt in ("<f", "<d"):
        struct.pack_into(fmt, b, at, old + 0.25 if how == "near" else _FLOATS[raw % len(_FLOATS)])
    elif how == "near":
        struct.pack_into(bits, b, at, max(0, min(old + raw % 5 - 2, (1 << (8 * size)) - 1)))
    else:  # small: a plausible index (a row offset up to m, a node up to n, a byte)
        bound = {0: m + 2, 5: 256, 7: 256}.get(target, n + 2)
        struct.pack_into(bits, b, at, raw % bound)
    fix_all(b)
    return bytes(b)


@settings(PROFILE)
@given(
    base=st.integers(0, 6),
    target=st.integers(0, 8),
    pos=st.integers(0, 2**16),
    how=st.sampled_from(HOWS),
    raw=st.integers(0, 2**64 - 1),
)
def test_section_edits_open_or_fail_cleanly(bases, workdir, base, target, pos, how, raw):
    outcome = open_and_touch(edit_section(bases[base], target, pos, how, raw), workdir)
    hypothesis.event(outcome)


# ------------------------------------------------------------------ random sections


def random_sections(n: int, m: int, flags: int, tame: int, seed: int) -> bytes:
    """A graph file whose header is consistent with the file (sizes, alignment, bounds, first
    and last row offsets, checksums) and whose sections hold random bytes. Bit ``k`` of
    ``tame`` makes section ``k`` plausible instead: sorted row offsets, neighbours ``< n``,
    positive weights, strengths equal to the row sums, sorted ids, a permutation, ASCII names.
    ``flags``: bit 0 directed, bit 1 weighted, bits 2-3 id kind (0 implicit, 1 int64, 2 utf8).
    """
    rng = np.random.default_rng(seed)
    directed, weighted, kind = flags & 1, (flags >> 1) & 1, ((flags >> 2) & 3) % 3

    def noise(count: int, dtype: str) -> np.ndarray:
        return np.frombuffer(rng.bytes(count * np.dtype(dtype).itemsize), dtype).copy()

    ip = np.sort(rng.integers(0, m + 1, n + 1)) if tame & 1 else noise(n + 1, "<u8")
    ip[0], ip[-1] = 0, m
    if tame & 3 == 3:  # rows of distinct sorted neighbours where the row fits
        idx = np.concatenate(
            [np.zeros(0, np.int64)]
            + [
                np.sort(rng.choice(n, e - s, replace=False))
                if e - s <= n
                else rng.integers(0, max(n, 1), e - s)
                for s, e in zip(ip[:-1].astype(np.int64), ip[1:].astype(np.int64))
            ]
        )
    elif tame & 2:
        idx = rng.integers(0, max(n, 1), m)
    else:
        idx = noise(m, "<u4")
    secs: list[bytes] = [ip.astype("<u8").tobytes(), idx.astype("<u4").tobytes()] + [b""] * 5
    if weighted:
        w = (rng.integers(1, 9, m) / 4).astype("<f4") if tame & 4 else noise(m, "<f4")
        secs[2] = w.tobytes()
        if tame & 8 and tame & 1:
            st_ = np.array([sum(float(x) for x in w[ip[v] : ip[v + 1]]) for v in range(n)])
        else:
            st_ = rng.random(n) * 10 if tame & 8 else noise(n, "<f8")
        secs[3] = st_.astype("<f8").tobytes()
    if kind == 1:
        ids = np.sort(rng.choice(2**40, n, replace=False)) - 2**39 if tame & 16 else noise(n, "<i8")
        secs[4] = np.asarray(ids, "<i8").tobytes()
    elif kind == 2:
        letters = list("abcxyz")
        names = sorted({"".join(rng.choice(letters, rng.integers(1, 4))) for _ in range(3 * n)})
        names = names[:n] + [f"~{k}" for k in range(n - len(names[:n]))]
        raw_names = "".join(names).encode()
        offs = np.cumsum([0] + [len(x) for x in names]) if tame & 16 else noise(n + 1, "<u8")
        offs[0], offs[-1] = 0, len(raw_names)
        secs[4] = np.asarray(offs, "<u8").tobytes()
        secs[5] = raw_names if tame & 32 else rng.bytes(len(raw_names))
    if kind:
        order = np.arange(n) if tame & 64 else noise(n, "<u4")
        secs[6] = np.asarray(order, "<u4").tobytes()
    if directed:
        num_edges = m
    elif tame & 2:  # consistent with the stored arcs
        loops = sum(int(x == v) for v in range(n) for x in idx[ip[v] : ip[v + 1]])
        num_edges = (m + loops) // 2
    else:
        num_edges = int(rng.integers(0, m + 1))
    b = bytearray(HEADER_LEN)
    struct.pack_into("<8sII", b, 0, b"IEGRAPH\0", 1, directed | weighted << 1 | kind << 8)
    table = []
    for data in secs:
        if not data:
            table.append((0, 0))
            continue
        b.extend(b"\0" * (-len(b) % 64))
        table.append((len(b), len(data)))
        b.extend(data)
    struct.pack_into("<QQQQ", b, 16, n, m, num_edges, len(b))
    for i, (off, length) in enumerate(table):
        struct.pack_into("<QQ", b, 64 + 24 * i, off, length)
    fix_all(b)
    return bytes(b)


@settings(PROFILE)
@given(
    n=st.integers(0, 12),
    m=st.integers(0, 40),
    flags=st.integers(0, 15),
    tame=st.integers(0, 127),
    seed=st.integers(0, 2**32),
)
def test_random_sections_open_or_fail_cleanly(workdir, n, m, flags, tame, seed):
    outcome = open_and_touch(random_sections(n, m, flags, tame, seed), workdir)
    hypothesis.event(outcome)


# ------------------------------------------------------------------ coverage of the checks


def test_every_check_is_reached(bases, workdir):
    """The generators above, replayed on a fixed seed, count which check ends each example.
    Every structural check of validate() must catch some section edit, and most edits and
    random files must get past open() and the checksums to those checks."""
    rng = np.random.default_rng(2024)
    edits: Counter[str] = Counter()
    for _ in range(400):
        data = edit_section(
            bases[int(rng.integers(0, 7))],
            int(rng.integers(0, 9)),
            int(rng.integers(0, 2**16)),
            HOWS[int(rng.integers(0, 4))],
            int(rng.integers(0, 2**63)),
        )
        edits[open_and_touch(data, workdir, light=True)] += 1
    randoms: Counter[str] = Counter()
    for _ in range(200):
        data = random_sections(
            int(rng.integers(0, 13)),
            int(rng.integers(0, 41)),
            int(rng.integers(0, 16)),
            int(rng.integers(0, 128)),
            int(rng.integers(0, 2**32)),
        )
        randoms[open_and_touch(data, workdir, light=True)] += 1
    print("section edits:", dict(edits.most_common()))
    print("random sections:", dict(randoms.most_common()))
    for counts in (edits, randoms):
        assert not [k for k in counts if "other (" in k], f"unclassified errors: {counts}"
        assert counts["validate: checksum"] == 0, "checksums were recomputed"
    missing = [c for c in STRUCTURAL if edits[f"validate: {c}"] < 2]
    assert not missing, f"no section edit reached these checks: {missing}\n{edits}"
    reached = sum(v for k, v in edits.items() if not refused(k))
    assert reached >= 0.7 * 400, edits
    reached = sum(v for k, v in randoms.items() if not refused(k))
    assert reached >= 0.8 * 200, randoms
    assert len({k for k in randoms if k.startswith("validate: ")}) >= 5, randoms


# ------------------------------------------------------------------ exhaustive small cases
def test_every_truncation_is_refused(bases, workdir):
    for base in bases[:3]:
        for cut in range(0, len(base)):
            assert refused(open_and_touch(base[:cut], workdir, light=True)), cut


def test_every_header_byte_flip_is_refused(bases, workdir):
    for base in bases[:3]:
        for i in range(HEADER_LEN):
            b = bytearray(base)
            b[i] ^= 0x20
            assert refused(open_and_touch(bytes(b), workdir, light=True)), i


def _cheap_bytes(b: bytes) -> set[int]:
    """Bytes of the sections that open() reads: the first and last indptr entries."""
    off, length = section_table(b)[0]
    return set(range(off, off + 8)) | set(range(off + length - 8, off + length))


def test_every_section_byte_flip_is_harmless_or_reported(bases, workdir):
    """Every byte after the header of the weighted string-id graph, flipped one at a time:
    open() refuses exactly the flips of the two indptr entries it checks; a flip inside any
    other section opens, stays safe on every access (the oracle in touch_everything) and is
    reported by validate()'s checksums; a flip in the padding between sections is harmless."""
    base = bases[2]
    inside = {i for off, length in section_table(base) for i in range(off, off + length)}
    for i in range(HEADER_LEN, len(base)):
        b = bytearray(base)
        b[i] ^= 0x41
        expect = (
            "open: indptr ends"
            if i in _cheap_bytes(base)
            else "validate: checksum"
            if i in inside
            else "valid"
        )
        assert open_and_touch(bytes(b), workdir, light=True) == expect, i


# ------------------------------------------------------------------ checksums (what validate adds)
def test_every_section_flip_is_caught_by_validate_and_named(bases, workdir):
    """A flip anywhere inside a section passes the O(1) open (which reads only the header)
    and is caught by ``validate()``, whose message names the section."""
    for base in bases[:3]:
        for sec, (off, length) in enumerate(section_table(base)):
            if length == 0:
                continue
            for pos in sorted({off, off + length // 2, off + length - 1} - _cheap_bytes(base)):
                b = bytearray(base)
                b[pos] ^= 0x01
                p = workdir / "flip.graph"
                p.write_bytes(bytes(b))
                g = ie.Graph.open(p)  # cheap open: no section is read
                with pytest.raises(
                    ie.GraphFormatError, match=f"checksum mismatch in section {SECTION_NAMES[sec]}"
                ):
                    g.validate()
                del g
                p.unlink()


def test_in_range_neighbour_change_passes_open_and_queries_but_not_validate(workdir):
    g0 = ie.Graph.from_edges(np.arange(50), (np.arange(50) + 1) % 50)
    p = workdir / "ring.graph"
    g0.save(p)
    b = bytearray(p.read_bytes())
    off, _ = section_table(bytes(b))[1]
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
