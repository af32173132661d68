"""Cold-query pages: what one query reads from a graph file that is not in the page cache, with
the neighbour codes (``nbr_codes``, docs/FORMAT.md) and without them.

For each graph and each of --queries seeds (drawn by a fixed generator):

- the file's pages are dropped (``posix_fadvise(DONTNEED)``, checked with ``mincore``), then a
  fresh Python process opens the graph (``Graph.open``, default settings) and embeds the seed
  once with the default ``InstantEmbedding()``; it reports the query's wall time;
- the pages of the file that became resident are counted with ``mincore``, per section.

"without codes" is a copy of the file whose header no longer names the ``nbr_codes`` section
(byte-identical otherwise): its queries read every touched neighbour's degree, as files without
the section do. Both copies give bit-identical embeddings (checked here for every seed).

The interleaved layout (each neighbour id followed by its code in the row, 5 bytes per arc, no
separate section) is not written by the library; its pages are estimated from the measured
ones: the measured pages minus those of ``indices`` and ``nbr_codes``, plus the pages the pushed
rows would span at 5 bytes per arc (pushed nodes from ``ppr_state``, offsets from ``indptr``).

The disk's random-read rate (4 KiB, queue depth 1, ``O_DIRECT`` where allowed, else after a
DONTNEED) is measured on the same file, so that a page count converts to a time.

Results: ``benches/results/cold_pages.json``, one record per graph (a graph measured again
replaces its record; each record names its run's machine and command); ``--smoke`` runs on a
small generated graph and writes nothing there.

Examples::

    python benches/cold_pages.py --smoke
    python benches/cold_pages.py --datasets blogcatalog,cnr_2000 --queries 30
    python benches/cold_pages.py --datasets none --graph /tmp/g8m.graph --queries 30
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

PAGE = 4096

CHILD = r"""
import json, sys, time
import numpy as np
import instant_embedding as ie
path, v = sys.argv[1], json.loads(sys.argv[2])
t0 = time.perf_counter_ns()
g = ie.Graph.open(path)
t1 = time.perf_counter_ns()
row = ie.InstantEmbedding().embed(g, [v])[0]
t2 = time.perf_counter_ns()
print(json.dumps({"open_us": (t1 - t0) / 1e3, "query_us": (t2 - t1) / 1e3,
                  "row": np.asarray(row, dtype=np.float32).tobytes().hex()}))
"""


def strip_codes(src: Path, dst: Path) -> None:
    """A copy of ``src`` whose header does not name the nbr_codes section."""
    from instant_embedding import _core

    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        h = bytearray(f.read(256))
        h[232:248] = bytes(16)
        struct.pack_into("<Q", h, 248, _core.xxh3_64(bytes(h[:248])))
        f.seek(0)
        f.write(h)
        f.flush()
        os.fsync(f.fileno())  # dirty pages cannot be dropped: the first query would find them


def resident_pages(path: Path) -> np.ndarray:
    """Indices of ``path``'s 4 KiB pages resident in the page cache (``mincore``)."""
    import ctypes
    import mmap

    lib = C._c()
    size = os.path.getsize(path)
    npages = (size + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * npages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        try:
            if lib.mincore(addr, size, vec) != 0:
                raise OSError("mincore failed")
        finally:
            lib.munmap(addr, size)
    finally:
        os.close(fd)
    return np.flatnonzero(np.frombuffer(vec, dtype=np.uint8) & 1)


def section_pages(h: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Page range ``[first, last]`` of every present section."""
    return {
        name: (off // PAGE, (off + ln - 1) // PAGE)
        for name, (off, ln) in h["sections"].items()
        if ln > 0
    }


def by_section(pages: np.ndarray, ranges: dict[str, tuple[int, int]]) -> dict[str, int]:
    out = {"header": int(np.sum(pages == 0))}
    for name, (a, b) in ranges.items():
        out[name] = int(np.sum((pages >= a) & (pages <= b)))
    return out


def cold_query(path: Path, node_id: Any) -> tuple[dict[str, Any], np.ndarray]:
    """One cold query of the node whose external id is ``node_id`` (given to the child, so
    that it reads no more of the file than the query does)."""
    C.evict(path)
    left = len(resident_pages(path))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(node_id)],
        capture_output=True,
        text=True,
        check=True,
    )
    res = json.loads(out.stdout)
    res["resident_before"] = left
    return res, resident_pages(path)


def random_read_rate(path: Path, reads: int = 400) -> dict[str, float]:
    """Random 4 KiB reads per second at queue depth 1 on ``path``'s device (after DONTNEED)."""
    size = os.path.getsize(path)
    rng = np.random.default_rng(7)
    offs = rng.integers(0, max(1, size // PAGE), reads) * PAGE
    C.evict(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        t0 = time.perf_counter()
        for o in offs:
            os.pread(fd, PAGE, int(o))
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
    C.evict(path)
    return {"reads": reads, "reads_per_s": reads / dt, "us_per_read": dt / reads * 1e6}


def interleaved_rows(indptr: np.ndarray, pushed: np.ndarray, base: int) -> int:
    """Pages spanned by the rows of ``pushed`` in a section of 5-byte entries at ``base``."""
    if len(pushed) == 0:
        return 0
    s = base + 5 * indptr[pushed].astype(np.int64)
    e = base + 5 * indptr[pushed + 1].astype(np.int64)
    pages: set[int] = set()
    for a, b in zip(s.tolist(), e.tolist()):
        if b > a:
            pages.update(range(a // PAGE, (b - 1) // PAGE + 1))
    return len(pages)


def measure(path: Path, queries: int, work: Path) -> dict[str, Any]:
    import instant_embedding as ie

    h = C.read_header(path)
    if h["sections"].get("nbr_codes", (0, 0))[0] == 0:
        raise SystemExit(f"{path}: has no nbr_codes section (written by an older writer)")
    n = h["n"]
    bare = work / (path.stem + ".nocodes.graph")
    strip_codes(path, bare)
    rng = np.random.default_rng(2026)
    seeds = [int(x) for x in rng.integers(0, n, queries)]
    g = ie.Graph.open(path)
    node_ids = [g.nodes[v] if g.id_kind != "implicit" else v for v in seeds]
    node_ids = [x.item() if hasattr(x, "item") else x for x in node_ids]
    del g
    ranges = section_pages(h)
    runs: dict[str, list[dict[str, Any]]] = {"with codes": [], "without codes": []}
    for v, node_id in zip(seeds, node_ids):
        rows = {}
        for name, p in (("with codes", path), ("without codes", bare)):
            res, pages = cold_query(p, node_id)
            rows[name] = res.pop("row")
            res["pages"] = len(pages)
            res["by_section"] = by_section(pages, ranges)
            runs[name].append(res)
        if rows["with codes"] != rows["without codes"]:
            raise SystemExit(f"seed {v}: the embeddings differ with and without codes")
    bare.unlink()
    # Pushed nodes of each seed (a warm pass), for the interleaved estimate.
    g = ie.Graph.open(path)
    cfg = ie.InstantEmbedding()
    indptr = np.memmap(path, np.uint64, "r", h["sections"]["indptr"][0], (n + 1,))
    inter = []
    for node, r in zip(node_ids, runs["with codes"]):
        ids, p = ie.ppr(g, node, alpha=cfg.alpha, eps=cfg.eps)
        pushed = np.asarray(g.index(list(ids)) if g.id_kind != "implicit" else ids, np.int64)
        pushed = pushed[np.asarray(p) > 0]
        sec = r["by_section"]
        rest = r["pages"] - sec.get("indices", 0) - sec.get("nbr_codes", 0)
        inter.append(rest + interleaved_rows(indptr, pushed, h["sections"]["indices"][0]))
    del g, indptr
    out: dict[str, Any] = {
        "graph": C.repo_relative(path),
        "nodes": n,
        "arcs": h["m"],
        "file_bytes": os.path.getsize(path),
        "nbr_codes_bytes": h["sections"]["nbr_codes"][1],
        "queries": len(seeds),
    }
    for name, rs in runs.items():
        out[name] = {
            "pages_median": float(np.median([r["pages"] for r in rs])),
            "pages_p90": float(np.percentile([r["pages"] for r in rs], 90)),
            "query_ms_median": float(np.median([r["query_us"] for r in rs])) / 1e3,
            "resident_before_max": max(r["resident_before"] for r in rs),
            "by_section_median": {
                k: float(np.median([r["by_section"].get(k, 0) for r in rs]))
                for k in ["header", *ranges]
            },
        }
    out["interleaved_estimate"] = {"pages_median": float(np.median(inter))}
    out["page_ratio_without_over_with"] = (
        out["without codes"]["pages_median"] / out["with codes"]["pages_median"]
    )
    out["disk"] = random_read_rate(path)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="blogcatalog,cnr_2000", help="names, or none")
    ap.add_argument("--graph", action="append", default=[], help="a graph file (repeatable)")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--smoke", action="store_true", help="tiny run for CI (results not written)")
    ap.add_argument("--out", default=str(C.RESULTS / "cold_pages.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cold_pages-"))
    try:
        paths: list[Path] = []
        if args.smoke:
            import instant_embedding as ie

            rng = np.random.default_rng(1)
            u, v = rng.integers(0, 3000, 30000), rng.integers(0, 3000, 30000)
            p = work / "smoke.graph"
            ie.Graph.from_edges(u, v).save(p)
            paths, args.queries = [p], 3
        else:
            if args.datasets != "none":
                paths += [C.dataset_graph(d) for d in args.datasets.split(",")]
            paths += [Path(g) for g in args.graph]
        rows = []
        for p in paths:
            r = measure(p, args.queries, work)
            rows.append(r)
            w, b = r["with codes"], r["without codes"]
            print(
                f"{p.name}: pages/query {b['pages_median']:.0f} -> {w['pages_median']:.0f} "
                f"({r['page_ratio_without_over_with']:.2f}x), interleaved est. "
                f"{r['interleaved_estimate']['pages_median']:.0f}; cold query "
                f"{b['query_ms_median']:.1f} -> {w['query_ms_median']:.1f} ms; disk "
                f"{r['disk']['us_per_read']:.0f} us per random 4 KiB read"
            )
        C.print_table(
            [
                {
                    "graph": Path(r["graph"]).name,
                    "pages without": r["without codes"]["pages_median"],
                    "pages with": r["with codes"]["pages_median"],
                    "interleaved est.": r["interleaved_estimate"]["pages_median"],
                    "ms without": r["without codes"]["query_ms_median"],
                    "ms with": r["with codes"]["query_ms_median"],
                }
                for r in rows
            ]
        )
        if not args.smoke:
            C.write_graph_records(args.out, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
