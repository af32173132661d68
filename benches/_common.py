"""Shared helpers for the benchmarks in ``benches/``.

- Datasets: :func:`dataset_names` lists the data sets under the shared ``datasets/`` folder,
  :func:`dataset_graph` converts one (``edges.tsv.gz`` + ``stats.json``) into a cached graph
  file in ``benches/.cache/`` (git-ignored) and returns its path.
- Graph files: :func:`read_csr` maps a graph file's ``indptr``/``indices``/``ids`` sections as
  numpy arrays (for reference implementations and peers), without the package.
- Page cache: :func:`evict` drops a file's pages (``posix_fadvise(DONTNEED)``),
  :func:`residency` reports the fraction resident (``mincore``), :func:`warm` reads it in.
- Memory: :func:`rss_anon` (private resident memory of this process, from ``/proc``).
- Reporting: :func:`machine_info`, :func:`write_json` (atomic), :func:`print_table`,
  :func:`paper_runtime` (the paper's per-node figure for a data set).

Other benchmark authors may import this module (``from _common import ...`` with ``benches/``
on ``sys.path``, which is the case when a script in ``benches/`` is run directly).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import gzip
import json
import mmap
import os
import platform
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
CACHE = BENCHES / ".cache"
RESULTS = BENCHES / "results"

# The paper's data set names (keys of results.json "runtime_seconds") for ours.
PAPER_NAMES = {
    "blogcatalog": "BlogCatalog",
    "ppi_homo_sapiens_lcc": "PPI",
    "ppi_homo_sapiens": "PPI",
}


# --------------------------------------------------------------------------- locations
def shared_dir() -> Path | None:
    """The shared data folder: ``$IE_SHARED``, else ``../shared`` beside the repository."""
    cands = [os.environ.get("IE_SHARED"), REPO.parent / "shared"]
    for c in cands:
        if c and Path(c, "datasets").is_dir():
            return Path(c)
    return None


def datasets_dir() -> Path | None:
    s = shared_dir()
    return s / "datasets" if s else None


def cache_dir() -> Path:
    """``benches/.cache``, created with a ``.gitignore`` that ignores everything in it."""
    CACHE.mkdir(exist_ok=True)
    gi = CACHE / ".gitignore"
    if not gi.exists():
        gi.write_text("*\n")
    return CACHE


def dataset_names() -> list[str]:
    """Data sets (folders with ``edges.tsv.gz`` and ``stats.json``), smallest first."""
    root = datasets_dir()
    if root is None:
        return []
    out = []
    for d in sorted(root.iterdir()):
        if (d / "edges.tsv.gz").is_file() and (d / "stats.json").is_file():
            out.append((dataset_stats(d.name)["undirected_edges"], d.name))
    return [name for _, name in sorted(out)]


def dataset_stats(name: str) -> dict[str, Any]:
    root = datasets_dir()
    if root is None:
        raise FileNotFoundError("no shared datasets folder (set IE_SHARED)")
    with open(root / name / "stats.json") as f:
        st = json.load(f)
    g = st.get("graph", st)
    st["nodes"] = int(g["nodes"])
    st["undirected_edges"] = int(g["edges_undirected"])
    return st


def read_edge_tsv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``u<TAB>v`` lines (gzip) as two int64 arrays."""
    try:
        import pandas as pd

        df = pd.read_csv(path, sep="\t", header=None, names=["u", "v"], dtype=np.int64)
        return df["u"].to_numpy(), df["v"].to_numpy()
    except ImportError:
        with gzip.open(path, "rb") as f:
            a = np.loadtxt(f, dtype=np.int64, ndmin=2)
        return a[:, 0].copy(), a[:, 1].copy()


def dataset_graph(name: str) -> Path:
    """Path of the cached graph file of data set ``name``, converting it on first use.

    The conversion is ``Graph.from_edges(u, v, num_nodes=stats["nodes"]).save(path)``; the file
    is rebuilt when the source ``edges.tsv.gz`` is newer than it.
    """
    import instant_embedding as ie

    root = datasets_dir()
    if root is None:
        raise FileNotFoundError("no shared datasets folder (set IE_SHARED)")
    src = root / name / "edges.tsv.gz"
    out = cache_dir() / f"{name}.graph"
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    st = dataset_stats(name)
    u, v = read_edge_tsv(src)
    g = ie.Graph.from_edges(u, v, num_nodes=int(st["nodes"]))
    if g.num_edges != int(st["undirected_edges"]):
        raise RuntimeError(
            f"{name}: built {g.num_edges} edges, stats.json says {st['undirected_edges']}"
        )
    g.save(out)
    return out


# --------------------------------------------------------------------------- graph files
_SECTIONS = ("indptr", "indices", "weights", "strength", "ids", "id_bytes", "id_index")


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Decode the 256-byte header of a graph file (see docs/FORMAT.md)."""
    with open(path, "rb") as f:
        h = f.read(256)
    if h[:8] != b"IEGRAPH\0":
        raise ValueError(f"{path}: not a graph file")
    version, flags, n, m, num_edges, file_len = struct.unpack_from("<IIQQQQ", h, 8)
    secs = {}
    for i, name in enumerate(_SECTIONS):
        off, ln, _ = struct.unpack_from("<QQQ", h, 64 + 24 * i)
        secs[name] = (off, ln)
    # nbr_codes: {offset, xxh3} at 232, its length the arc count when present
    off = struct.unpack_from("<Q", h, 232)[0]
    secs["nbr_codes"] = (off, m if off else 0)
    return {
        "version": version,
        "directed": bool(flags & 1),
        "weighted": bool(flags & 2),
        "id_kind": ("implicit", "int64", "utf8")[(flags >> 8) & 0xFF],
        "n": n,
        "m": m,
        "num_edges": num_edges,
        "file_len": file_len,
        "sections": secs,
    }


def read_csr(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Memory-mapped numpy views of a graph file's sections (read-only)."""
    h = read_header(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r")

    def view(name: str, dtype: Any) -> np.ndarray | None:
        off, ln = h["sections"][name]
        if ln == 0:
            return None
        return mm[off : off + ln].view(dtype)

    h["indptr"] = view("indptr", np.uint64)
    h["indices"] = view("indices", np.uint32)
    h["weights"] = view("weights", np.float32)
    h["strength"] = view("strength", np.float64)
    h["ids"] = view("ids", np.int64) if h["id_kind"] == "int64" else None
    return h


# --------------------------------------------------------------------------- page cache
def evict(path: str | os.PathLike[str]) -> None:
    """Ask the kernel to drop ``path``'s pages from the page cache.

    Pages still mapped by a process are not dropped: close (unmap) the graph first.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path: str | os.PathLike[str]) -> None:
    """Read the whole file so its pages are in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _libc = lib
    return _libc


def residency(path: str | os.PathLike[str]) -> float:
    """Fraction of ``path``'s pages resident in the page cache, by ``mincore(2)``.

    Maps the file (without touching it), asks the kernel which pages are resident, unmaps.
    Returns nan where this is not possible.
    """
    size = os.path.getsize(path)
    if size == 0:
        return 1.0
    try:
        lib = _c()
    except OSError:
        return float("nan")
    page = mmap.PAGESIZE
    npages = (size + page - 1) // page
    vec = (ctypes.c_ubyte * npages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return float("nan")
        try:
            rc = lib.mincore(addr, size, vec)
        finally:
            lib.munmap(addr, size)
    finally:
        os.close(fd)
    if rc != 0:
        return float("nan")
    return float(np.frombuffer(vec, dtype=np.uint8).__and__(1).sum()) / npages


# --------------------------------------------------------------------------- memory
def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def rss_anon() -> int:
    """Private (anonymous) resident bytes of this process; excludes mapped file pages."""
    return _status_kb("RssAnon") * 1024


def rss_file() -> int:
    """Resident bytes of file mappings of this process (e.g. the graph's mapped pages)."""
    return _status_kb("RssFile") * 1024


def peak_rss() -> int:
    """Peak resident set size (VmHWM) of this process in bytes."""
    return _status_kb("VmHWM") * 1024


# --------------------------------------------------------------------------- reporting
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_info() -> dict[str, Any]:
    """Where and when a benchmark ran: CPU, cores, memory, load, versions, commit."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        mem = 0
    try:
        import instant_embedding as ie

        version = ie.__version__
    except ImportError:
        version = "not installed"
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "kernel": platform.release(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "instant_embedding": version,
        "commit": _git_commit(),
    }


def repo_relative(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the repository when inside it (results never record local paths)."""
    p = Path(path).resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(path)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, default=_json_default)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_graph_records(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
    """Merge per-graph records (each with a ``graph`` key) into ``path``'s ``graphs`` list:
    a graph measured again replaces its record; each record gets this run's machine and
    command."""
    run = {"machine": machine_info(), "command": sys.argv}
    for r in rows:
        r["run"] = run
    path = Path(path)
    old = json.loads(path.read_text()) if path.exists() else {}
    fresh = {r["graph"] for r in rows}
    keep = [g for g in old.get("graphs", []) if g["graph"] not in fresh]
    write_json(path, {"graphs": keep + rows})


def _json_default(x: Any) -> Any:
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def print_table(rows: Sequence[dict[str, Any]], columns: Iterable[str] | None = None) -> None:
    """Print dict rows as an aligned text table (markdown-compatible)."""
    if not rows:
        return
    cols = list(columns) if columns is not None else list(rows[0])
    cells = [[_fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cols, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(x.rjust(w) for x, w in zip(row, widths)) + " |")
    sys.stdout.flush()


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if x != x:
            return "-"
        if x == 0:
            return "0"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        if abs(x) >= 10:
            return f"{x:.1f}"
        if abs(x) >= 0.01:
            return f"{x:.3g}"
        return f"{x:.2e}"
    if x is None:
        return "-"
    return str(x)


def paper_results() -> dict[str, Any] | None:
    s = shared_dir()
    p = s / "paper" / "results.json" if s else None
    if p is None or not p.is_file():
        return None
    with open(p) as f:
        return json.load(f)


def paper_runtime(dataset: str, dim: int) -> float | None:
    """The paper's InstantEmbedding per-node running time in seconds, if it reports one."""
    res = paper_results()
    key = PAPER_NAMES.get(dataset)
    if res is None or key is None:
        return None
    try:
        return float(res["runtime_seconds"][key][str(dim)]["InstantEmbedding"])
    except (KeyError, TypeError):
        return None


def percentile(xs: Sequence[float] | np.ndarray, q: float) -> float:
    a = np.asarray(xs, dtype=np.float64)
    return float(np.percentile(a, q)) if a.size else float("nan")
