"""Huge pages of the page cache: warm queries and a writer's commits on the same graph file,
its pages held in the page cache in 4 KiB folios or in 2 MiB ones.

Linux keeps a file's pages in folios as large as the writes or the sequential reads that
brought them in (on file systems with large folios, ext4 among them), and a process maps a
2 MiB folio with one huge-page entry; pages faulted in one at a time at random stay 4 KiB.
The library writes graph files in aligned 2 MiB chunks so that a file it just wrote is held
in 2 MiB folios. For each graph, a copy is written with ``Graph.save``, then each round
measures, in fresh processes and in turn:

- ``4 KiB``: the copy evicted (``posix_fadvise(DONTNEED)``) and read back with read-ahead
  off, each page in a folio of its own (the state a file queried cold reaches);
- ``2 MiB``: the copy evicted and read back sequentially (as ``save`` or ``compact`` leave it;
  each record also measures the copy as ``save`` left it, in its first round).

In each state: ``--queries`` fixed random nodes embedded once untimed, then ``--reps`` times
timed (default model, 1 thread): median latency; and a writer: ``--changes`` random edge
changes (half additions, half removals; ``benches/live.py``'s generator) committed in
batches of ``--batch``, in edges per second (its change log removed after each run). Each
child reports how much of the file it mapped with 2 MiB entries (``FilePmdMapped``).

Results: ``benches/results/page_cache.json``, one record per graph (a graph measured again
replaces its record). ``--smoke`` runs on a small generated graph and writes nothing.
``--no-copy`` measures the file itself, for a graph whose copy would not fit in the page
cache beside it (the ``as saved`` state is then not measured).

Examples::

    python benches/page_cache.py --smoke
    python benches/page_cache.py --graph /tmp/g8m.graph --rounds 3
    python benches/page_cache.py --graph /tmp/synth/synth_n65m.graph --no-copy --changes 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

CHILD = r"""
import json, resource, sys, time
import numpy as np
import instant_embedding as ie
what, path = sys.argv[1], sys.argv[2]

def pmd_mib():
    with open("/proc/self/smaps") as f:
        return sum(int(l.split()[1]) for l in f if l.startswith("FilePmdMapped")) / 1024

out = {}
if what == "query":
    nq, reps = int(sys.argv[3]), int(sys.argv[4])
    g = ie.Graph.open(path)
    nodes = g.nodes
    vs = [nodes[int(i)] for i in np.random.default_rng(5).integers(0, len(nodes), nq)]
    del nodes
    m = ie.InstantEmbedding(threads=1)
    m.embed(g, vs)
    ts = []
    for _ in range(reps):
        for v in vs:
            t = time.perf_counter()
            m.embed(g, [v])
            ts.append(time.perf_counter() - t)
    out = {"median_us": float(np.median(ts)) * 1e6, "mean_us": float(np.mean(ts)) * 1e6}
else:
    d = np.load(sys.argv[3])
    a, b, rs, rd = d["a"], d["b"], d["rs"], d["rd"]
    half = int(sys.argv[4]) // 2
    t = time.perf_counter()
    with ie.Graph.open(path, writable=True) as g:
        for k in range(0, len(a), half):
            with g.batch():
                g.add_edges(a[k : k + half], b[k : k + half])
                g.remove_edges(rs[k : k + half], rd[k : k + half])
        mapped = pmd_mib()
    out = {"edges_per_s": (len(a) + len(rs)) / (time.perf_counter() - t), "pmd_mib": mapped}
out.setdefault("pmd_mib", pmd_mib())
out["major_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
print(json.dumps(out))
"""


def child(*args: Any) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, args)], capture_output=True, text=True
    )
    if r.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def read_in_4k_folios(path: Path) -> None:
    """Evict ``path``, then read it back with read-ahead off (``POSIX_FADV_RANDOM``): the
    kernel then reads each requested page into a folio of its own, as page faults at random
    do, but at the disk's sequential speed."""
    C.evict(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        while os.read(fd, 8 << 20):
            pass
    finally:
        os.close(fd)


def measure(src: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    import instant_embedding as ie

    sys.path.insert(0, str(Path(__file__).parent))
    from live import random_changes

    if args.no_copy:
        copy = src
        if Path(str(src) + ".live").exists():
            raise SystemExit(f"{src} has a change log: --no-copy measures files without one")
    else:
        copy = work / "copy.graph"
        ie.Graph.open(src).save(copy)
    a, b, rs, rd = random_changes(copy, args.changes, seed=7)
    changes = work / "changes.npz"
    np.savez(changes, a=a, b=b, rs=rs, rd=rd)
    log = Path(str(copy) + ".live")

    def run(state: str) -> dict[str, Any]:
        q = child("query", copy, args.queries, args.reps)
        w = child("write", copy, changes, args.batch)
        log.unlink(missing_ok=True)
        return {"state": state, "query": q, "write": w}

    runs = [] if args.no_copy else [run("as saved")]
    for _ in range(args.rounds):
        for state in ("4 KiB", "2 MiB"):
            if state == "4 KiB":
                read_in_4k_folios(copy)
            else:
                C.evict(copy)
                C.warm(copy)
            runs.append(run(state))
    summary = {}
    for state in ("4 KiB", "2 MiB"):
        rs_ = [r for r in runs if r["state"] == state]
        summary[state] = {
            "query_median_us": float(np.median([r["query"]["median_us"] for r in rs_])),
            "edges_per_s": float(np.median([r["write"]["edges_per_s"] for r in rs_])),
            "pmd_mib": float(np.median([r["query"]["pmd_mib"] for r in rs_])),
        }
    return {
        "graph": C.repo_relative(src),
        "file_bytes": copy.stat().st_size,
        "queries": args.queries,
        "reps": args.reps,
        "changes": args.changes,
        "batch": args.batch,
        "runs": runs,
        "summary": summary,
        "query_4k_over_2m": summary["4 KiB"]["query_median_us"]
        / summary["2 MiB"]["query_median_us"],
        "writer_2m_over_4k": summary["2 MiB"]["edges_per_s"] / summary["4 KiB"]["edges_per_s"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", action="append", default=[], help="a graph file (repeatable)")
    ap.add_argument("--datasets", default="none", help="dataset names, or none")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--scratch", default=None, help="folder for the copy (the graph's size)")
    ap.add_argument(
        "--no-copy",
        action="store_true",
        help="measure the file itself (it must have no change log; the writer's log is "
        "removed after each run): for a graph whose copy would not fit in the page cache "
        "beside it",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny run for CI (results not written)")
    ap.add_argument("--out", default=str(C.RESULTS / "page_cache.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="page_cache-", dir=args.scratch))
    try:
        paths: list[Path] = []
        if args.smoke:
            import instant_embedding as ie

            rng = np.random.default_rng(1)
            p = work / "smoke.graph"
            ie.Graph.from_edges(rng.integers(0, 3000, 30000), rng.integers(0, 3000, 30000)).save(p)
            paths = [p]
            args.rounds, args.queries, args.reps, args.changes, args.batch = 1, 3, 2, 2000, 1000
        else:
            if args.datasets != "none":
                paths += [C.dataset_graph(d) for d in args.datasets.split(",")]
            paths += [Path(g) for g in args.graph]
        rows = []
        for p in paths:
            r = measure(p, work, args)
            rows.append(r)
            (work / "copy.graph").unlink(missing_ok=True)
        C.print_table(
            [
                {
                    "graph": Path(r["graph"]).name,
                    "state": st,
                    "mapped 2 MiB (MiB)": r["summary"][st]["pmd_mib"],
                    "warm query (us)": r["summary"][st]["query_median_us"],
                    "writer (edges/s)": r["summary"][st]["edges_per_s"],
                }
                for r in rows
                for st in ("4 KiB", "2 MiB")
            ]
        )
        for r in rows:
            print(
                f"{Path(r['graph']).name}: queries {r['query_4k_over_2m']:.2f}x faster, "
                f"writer {r['writer_2m_over_4k']:.2f}x faster with 2 MiB folios"
            )
        if not args.smoke:
            C.write_graph_records(args.out, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
