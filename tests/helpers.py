"""Helpers shared by the test modules.

The reference implementations here are written from docs/SPEC.md and docs/FORMAT.md without
calling the library, so a test that compares the library with them can catch a bug that the
library's own code paths share:

- ``splitmix64``, ``fnv1a64``, ``bucket``: the signed hash (SPEC §2);
- ``reference_embedding``: the projection of a PPR vector, with or without ``normalize``
  (SPEC §2), from ``ie.ppr``'s output;
- ``dense_adjacency``, ``exact_ppr_matrix``: exact PPR from a raw edge list (SPEC §1);
- ``read_graph_file``: the graph file's header and sections, parsed with numpy (FORMAT.md);
- ``forge_header_checksum``, ``forge_all_checksums``: recompute the xxh3 checksums so a
  mutated file gets past them (the hash itself is the library's ``_core.xxh3_64``).

Also: ``random_edges`` (small random graphs) and ``run_cli`` (the console script).
"""

from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sys
from typing import Any

import numpy as np

# ------------------------------------------------------------------ graphs


# One value away from the default for every embedding setting: the engine conformance suite
# and the config tests use it, and fail until a new setting has its entry here.
NON_DEFAULT = {
    "dim": 20,
    "alpha": 0.3,
    "eps": 2e-3,
    "seed": 11,
    "variant": "lazy",
    "value": "log1p",
    "normalize": "l2",
    "smooth": 1,
    "max_touched": 10**6,
    "wide_dim": 64,
    "fit_nodes": 30,
}


def random_edges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random arcs among ``n`` nodes, self-loops removed (so slightly fewer than m)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    keep = src != dst
    return src[keep], dst[keep]


# ------------------------------------------------------------------ signed hash (SPEC §2)
_MASK = 2**64 - 1


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & _MASK
    return h


def bucket(key: int, seed: int, d: int) -> tuple[int, int]:
    """``(dim(j), sign(j))`` of hash key ``key``."""
    h = splitmix64(key ^ splitmix64(seed))
    return ((h >> 32) * d) >> 32, (1 if h & 1 == 0 else -1)


def reference_sums(
    graph: Any, node: Any, dim: int, seed: int, value: str = "p+r", **ppr_kw: Any
) -> np.ndarray:
    """The projection's exact sums ``acc / 2^32`` as float64 (SPEC §2, before any scaling),
    from ``ie.ppr``'s output.

    Terms are rounded to multiples of 2^-32 (ties to even) and summed exactly (Python ints), so
    the visiting order does not matter.
    """
    import instant_embedding as ie

    ids, p, r = ie.ppr(graph, node, return_residual=True, **ppr_kw)
    if value == "p+r":
        p = p + r
    elif value == "log1p":
        p = p + 0.5 * r
    acc = [0] * dim
    n = graph.num_nodes
    for k in np.random.default_rng(0).permutation(len(ids)):  # any order gives the same sums
        v = math.log1p(p[k] * n) if value == "log1p" else math.log(p[k] * n) if p[k] > 0 else 0.0
        if v > 0:
            nid = ids[k]
            key = fnv1a64(nid.encode()) if isinstance(nid, str) else int(nid) % 2**64
            d, s = bucket(key, seed, dim)
            acc[d] += s * round(v * 2**32)
    # int -> float64 rounds to nearest, ties to even (as the kernel's i64 -> f64); / 2^32 exact
    return np.array([float(a) for a in acc]) / 2**32


def reference_embedding(
    graph: Any,
    node: Any,
    dim: int,
    seed: int,
    value: str = "p+r",
    normalize: str = "ln_n",
    **ppr_kw: Any,
) -> np.ndarray:
    """The spec's embedding of ``node`` (SPEC §2): the exact sums of ``reference_sums``,
    divided in float64 by ``ln(max(n, 3))`` (libm ``log``) when ``normalize="ln_n"``, then
    rounded to float32 once."""
    sums = reference_sums(graph, node, dim, seed, value, **ppr_kw)
    if normalize == "ln_n":
        sums = sums / math.log(max(graph.num_nodes, 3))
    elif normalize != "none":
        raise ValueError(normalize)
    return sums.astype(np.float32)


# ------------------------------------------------------------------ exact PPR (SPEC §1)


def dense_adjacency(
    src: Any, dst: Any, n: int, weights: Any = None, directed: bool = False
) -> np.ndarray:
    """The weight matrix ``W[u, v]`` of a raw edge list over node indices ``0..n-1``.

    As documented for the builders: undirected edges count in both directions (a self-loop
    once), duplicate weights are summed, and unweighted duplicates collapse to one arc.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.ones(len(src)) if weights is None else np.asarray(weights, dtype=np.float64)
    W = np.zeros((n, n))
    np.add.at(W, (src, dst), w)
    if not directed:
        off = src != dst
        np.add.at(W, (dst[off], src[off]), w[off])
    if weights is None:
        W = (W > 0).astype(np.float64)
    return W


def exact_ppr_matrix(W: np.ndarray, seed: int, alpha: float, variant: str) -> np.ndarray:
    """``Pi[u] =`` the exact PPR vector of ``u`` for the push from ``seed``: row-stochastic
    ``P = D^-1 W`` whose dangling rows jump to ``seed``, ``(I + P) / 2`` for ``lazy``, and
    ``Pi = alpha (I - (1 - alpha) P)^-1`` (dense solve)."""
    n = len(W)
    strength = W.sum(axis=1)
    P = np.zeros((n, n))
    live = strength > 0
    P[live] = W[live] / strength[live, None]
    P[~live, seed] = 1.0
    if variant == "lazy":
        P = 0.5 * (np.eye(n) + P)
    elif variant != "standard":
        raise ValueError(variant)
    return alpha * np.linalg.inv(np.eye(n) - (1 - alpha) * P)


# ------------------------------------------------------------------ graph files (FORMAT.md)
HEADER_LEN = 256
SECTION_NAMES = [
    "indptr",
    "indices",
    "weights",
    "strength",
    "ids",
    "id_bytes",
    "id_index",
    "nbr_codes",
]


def section_table(data: bytes) -> list[tuple[int, int]]:
    """``(offset, length)`` of the eight sections (``nbr_codes``: its offset at byte 232, its
    length the arc count when present)."""
    codes_off = struct.unpack_from("<Q", data, 232)[0]
    codes_len = struct.unpack_from("<Q", data, 24)[0] if codes_off else 0
    table = [struct.unpack_from("<QQ", data, 64 + 24 * i) for i in range(7)]
    return [*table, (codes_off, codes_len)]


def read_graph_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parses a graph file with numpy only: header fields and every section as arrays, and
    ``ids`` as a list of external ids in internal order (ints, or str for utf8 files)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"IEGRAPH\0":
        raise ValueError("bad magic")
    version, flags = struct.unpack_from("<II", data, 8)
    n, m, num_edges, file_len = struct.unpack_from("<QQQQ", data, 16)
    sections = section_table(data)

    def sec(i: int, dtype: Any) -> np.ndarray | None:
        off, length = sections[i]
        if length == 0:
            return None
        return np.frombuffer(data, dtype, length // np.dtype(dtype).itemsize, off)

    kind = {0: "implicit", 1: "int64", 2: "utf8"}[flags >> 8]
    if kind == "implicit":
        ids: list = list(range(n))
    elif kind == "int64":
        ids = sec(4, "<i8").tolist()
    else:
        offs = sec(4, "<u8").tolist()
        raw = bytes(sec(5, np.uint8)) if sections[5][1] else b""
        ids = [raw[offs[i] : offs[i + 1]].decode() for i in range(n)]
    return {
        "version": version,
        "directed": bool(flags & 1),
        "weighted": bool(flags & 2),
        "permuted": bool(flags & 4),
        "id_kind": kind,
        "num_nodes": n,
        "num_arcs": m,
        "num_edges": num_edges,
        "file_len": file_len,
        "indptr": sec(0, "<u8"),
        "indices": sec(1, "<u4") if m else np.zeros(0, np.uint32),
        "weights": sec(2, "<f4"),
        "strength": sec(3, "<f8"),
        "ids": ids,
        "id_index": sec(6, "<u4"),
        "nbr_codes": sec(7, np.uint8) if sections[7][0] else None,
    }


def forge_header_checksum(b: bytearray) -> None:
    """Recomputes the header checksum (bytes 248..256) of a mutated file image."""
    from instant_embedding import _core

    if len(b) >= HEADER_LEN:
        struct.pack_into("<Q", b, 248, _core.xxh3_64(bytes(b[:248])))


def forge_all_checksums(b: bytearray) -> None:
    """Recomputes every in-bounds section checksum, then the header's: only the structural
    checks of ``validate()`` then stand between a mutation and the caller."""
    from instant_embedding import _core

    if len(b) < HEADER_LEN:
        return
    for i in range(7):
        off, length = struct.unpack_from("<QQ", b, 64 + 24 * i)
        if off + length <= len(b):
            struct.pack_into("<Q", b, 64 + 24 * i + 16, _core.xxh3_64(bytes(b[off : off + length])))
    # nbr_codes: {offset, xxh3} at 232, its length the arc count m
    off, length = struct.unpack_from("<Q", b, 232)[0], struct.unpack_from("<Q", b, 24)[0]
    if off and off + length <= len(b):
        struct.pack_into("<Q", b, 240, _core.xxh3_64(bytes(b[off : off + length])))
    forge_header_checksum(b)


# ------------------------------------------------------------------ command line


def cli_command() -> list[str]:
    """The installed ``instant-embedding`` console script (or ``python -m`` the same)."""
    exe = shutil.which("instant-embedding")
    if exe is None:  # not on PATH (e.g. a venv that is not activated): same entry point
        venv_exe = os.path.join(os.path.dirname(sys.executable), "instant-embedding")
        exe = venv_exe if os.path.exists(venv_exe) else None
    return [exe] if exe else [sys.executable, "-m", "instant_embedding"]


def run_cli(*args: str, cwd=None, ok: bool = True) -> subprocess.CompletedProcess:
    """Runs the console script with ``args``; with ``ok``, asserts it exits 0."""
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    p = subprocess.run(
        cli_command() + list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )
    if ok:
        assert p.returncode == 0, p.stderr
    return p


# ------------------------------------------------------------------ killed children


class ForkedScript:
    """``python -c src argv...`` for the crash tests, forked from a server process that has
    imported numpy and the package, so that each of hundreds of short-lived writers does not
    pay an interpreter start and its imports (~0.25 s). The child is a process of its own, as
    one started with ``subprocess`` is: its own file descriptors, locks and thread pool.

    The parts of ``subprocess.Popen`` the tests use: ``stdout`` and ``stderr`` (text),
    ``send_signal``, ``kill``, ``poll``, ``wait`` and ``returncode``. Scripts should write their
    lines with ``os.write`` (one write each): ``print`` buffers, and a kill loses the buffer."""

    def __init__(self, src: str, *argv: str) -> None:
        import multiprocessing

        # The server's preloaded modules are set once, in tests/conftest.py.
        ctx = multiprocessing.get_context("forkserver")
        out_r, out_w = ctx.Pipe(duplex=False)
        err_r, err_w = ctx.Pipe(duplex=False)
        scope = {"__name__": "__main__", "OUT": out_w, "ERR": err_w, "ARGV": ["-c", *argv]}
        scope["SRC"] = src
        # `exec` is the target: a builtin pickles by name, so the child imports nothing
        # before the script runs.
        self._proc = ctx.Process(target=exec, args=(_FORKED_PRELUDE, scope), daemon=True)
        self._proc.start()
        out_w.close()
        err_w.close()
        self.stdout = os.fdopen(os.dup(out_r.fileno()), "r")
        self.stderr = os.fdopen(os.dup(err_r.fileno()), "r")
        out_r.close()
        err_r.close()

    @property
    def returncode(self) -> int | None:
        return self._proc.exitcode

    def send_signal(self, sig: int) -> None:
        os.kill(self._proc.pid, sig)

    def kill(self) -> None:
        self._proc.kill()

    def poll(self) -> int | None:
        return self._proc.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._proc.join(timeout)
        if self._proc.exitcode is None:
            raise subprocess.TimeoutExpired("forked script", timeout or 0)
        return self._proc.exitcode

    def __del__(self) -> None:
        for f in (getattr(self, "stdout", None), getattr(self, "stderr", None)):
            if f is not None:
                f.close()


# The child's stdout and stderr become the pipes to the parent and sys.argv the script's;
# then the script runs (compiled here, so that even its syntax errors reach the stderr pipe).
_FORKED_PRELUDE = """\
import os as _os, sys as _sys
_os.dup2(OUT.fileno(), 1)
_os.dup2(ERR.fileno(), 2)
OUT.close()
ERR.close()
_sys.argv = ARGV
_src = SRC
del OUT, ERR, ARGV, SRC
exec(compile(_src, "<forked script>", "exec"))
"""
