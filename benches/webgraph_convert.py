"""WebGraph BV input: cnr-2000 from its BV files equals cnr-2000 from its edge list, and how
fast each converts.

One run

1. converts cnr-2000 (LAW web crawl, 325,557 nodes, 3,216,152 arcs) twice per repeat, each
   conversion in a fresh child process (seconds measured inside the child after its imports;
   peak RSS is the child's ``ru_maxrss``), alternating the order:

   - ``bv``: ``convert_with_stats("original/cnr-2000.graph", out,
     properties="cnr-2000.properties.reconstructed", self_loops="drop")``, i.e.
     ``instant-embedding convert original/cnr-2000.graph out.graph --properties
     cnr-2000.properties.reconstructed --self-loops drop`` (the data set ships its properties
     under that name, in another folder);
   - ``text``: ``convert_with_stats("edges.tsv.gz", out)``, the data set's undirected edge list
     (self-loops dropped and reciprocal arcs merged by the data set's own conversion);

2. checks that the two graph files hold the same graph: node count, edge count, and the
   ``indptr`` and ``indices`` arrays element for element (and reports whether the files are
   byte-identical); then converts the BV graph once more as a directed graph with self-loops
   kept and checks its arc count against the properties, and the undirected build's dropped
   self-loops and merged reciprocal arcs against the data set's ``stats.json``, and converts
   it once with a small memory limit (--spill-limit, default 16M: the builder spills to
   disk) and checks that the file is the same;
3. prints a table and the text/BV time ratio, and writes ``benches/results/webgraph_convert.json``
   with machine info and the load before and after (or, with --smoke, into a temporary folder).
   Exits with status 1 if any check fails.

``--smoke``: the 16-byte fixture of the tests (``tests/data/webgraph/tiny``) against an edge
list written from it, one repeat, a few seconds, no shared data (CI).

Examples::

    python benches/webgraph_convert.py --smoke
    python benches/webgraph_convert.py --repeats 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    REPO,
    RESULTS,
    datasets_dir,
    machine_info,
    print_table,
    read_csr,
    write_json,
)


def child(argv: list[str]) -> None:
    """Converts in this process and prints one JSON line."""
    from instant_embedding import _core
    from instant_embedding.readers import ReadOptions, convert_with_stats, parse_size

    method, src, out, props, directed, loops, mem, num_nodes = argv
    kwargs: dict[str, Any] = {"directed": directed == "1", "self_loops": loops}
    if method == "bv" and props:
        kwargs["properties"] = props
    if method == "text":
        kwargs["header"] = False  # the data set's edge lists have none (a first edge 0 1 is data)
    t0 = time.perf_counter()
    if num_nodes:
        # Smoke: an edge list cannot hold the fixture's isolated nodes; the kernel's text
        # converter takes the node count.
        opts = ReadOptions(
            format="edgelist", num_nodes=int(num_nodes), memory_limit=parse_size(mem), **kwargs
        )
        st = dict(_core.convert_native([src], out, opts))
        st["format"] = "edgelist"
    else:
        _, st = convert_with_stats(src, out, memory_limit=mem, **kwargs)
    secs = time.perf_counter() - t0
    keep = (
        "num_nodes",
        "num_edges",
        "num_arcs",
        "input_edges",
        "self_loops_dropped",
        "duplicates_merged",
        "input_bytes",
        "peak_node_bytes",
        "segments",
        "file_size",
    )
    res = {k: st.get(k) for k in keep}
    res.update(
        method=method,
        seconds=secs,
        format=st["format"],
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    print(json.dumps(res))


def run_child(*argv: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", *argv],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise RuntimeError(f"child {argv} failed (rc {p.returncode}):\n{p.stderr[-3000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    return res


def smoke_inputs(tmp: Path) -> dict[str, Any]:
    """The test fixture and an undirected edge list of the same graph, written from it."""
    from instant_embedding.readers import convert

    base = REPO / "tests" / "data" / "webgraph" / "tiny"
    g = convert(str(base), tmp / "directed.graph", directed=True)
    pairs = {(min(u, int(v)), max(u, int(v))) for u in range(g.num_nodes) for v in g.neighbors(u)}
    edges = tmp / "edges.tsv.gz"
    with gzip.open(edges, "wt") as f:
        f.writelines(f"{u}\t{v}\n" for u, v in sorted(pairs) if u != v)
    return {
        "name": "tiny fixture",
        "graph": str(base) + ".graph",
        "properties": "",
        "edges": str(edges),
        "stats": None,
        "num_nodes": str(g.num_nodes),
    }


def cnr_inputs() -> dict[str, Any]:
    d = datasets_dir()
    if d is None or not (d / "cnr_2000").is_dir():
        raise SystemExit("cnr_2000 not found under the shared datasets folder (set IE_SHARED)")
    d = d / "cnr_2000"
    return {
        "name": "cnr-2000",
        "graph": str(d / "original" / "cnr-2000.graph"),
        "properties": str(d / "cnr-2000.properties.reconstructed"),
        "edges": str(d / "edges.tsv.gz"),
        "stats": json.loads((d / "stats.json").read_text()),
        "num_nodes": "",
    }


def declared_arcs(props: str, graph: str) -> int:
    path = props or graph[: -len(".graph")] + ".properties"
    for line in Path(path).read_text().splitlines():
        if line.startswith("arcs="):
            return int(line[5:])
    raise ValueError(f"{path}: no arcs")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny fixture, one repeat (CI)")
    ap.add_argument("--repeats", type=int, default=3, help="conversions per method (default 3)")
    ap.add_argument("--memory-limit", default="2G", help="builder memory limit (default 2G)")
    ap.add_argument(
        "--spill-limit", default="16M", help="memory limit of the spilling BV run (default 16M)"
    )
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="wgbench-") as tmpdir:
        tmp = Path(tmpdir)
        inp = smoke_inputs(tmp) if args.smoke else cnr_inputs()
        repeats = 1 if args.smoke else args.repeats
        out = {"bv": str(tmp / "bv.graph"), "text": str(tmp / "text.graph")}
        src = {"bv": inp["graph"], "text": inp["edges"]}
        rows: list[dict[str, Any]] = []
        for r in range(repeats):
            for m in ("bv", "text") if r % 2 == 0 else ("text", "bv"):
                res = run_child(
                    m,
                    src[m],
                    out[m],
                    inp["properties"],
                    "0",
                    "drop",
                    args.memory_limit,
                    inp["num_nodes"] if m == "text" else "",
                )
                res["repeat"] = r
                rows.append(res)
        a, b = read_csr(out["bv"]), read_csr(out["text"])
        checks = {
            "num_nodes": int(a["n"]) == int(b["n"]),
            "num_edges": int(a["num_edges"]) == int(b["num_edges"]),
            "indptr": np.array_equal(a["indptr"], b["indptr"]),
            "indices": np.array_equal(a["indices"], b["indices"]),
            "id_kind": a["id_kind"] == b["id_kind"],
            "unweighted": a["weights"] is None and b["weights"] is None,
        }
        same_bytes = Path(out["bv"]).read_bytes() == Path(out["text"]).read_bytes()
        graph = {
            "num_nodes": int(a["n"]),
            "num_edges": int(a["num_edges"]),
            "num_arcs": int(a["indptr"][-1]),
            "id_kind": a["id_kind"],
        }
        del a, b
        directed = run_child(
            "bv",
            src["bv"],
            str(tmp / "directed.graph"),
            inp["properties"],
            "1",
            "keep",
            args.memory_limit,
            "",
        )
        checks["directed_arcs_equal_properties"] = directed["num_arcs"] == declared_arcs(
            inp["properties"], inp["graph"]
        )
        spill = run_child(
            "bv",
            src["bv"],
            str(tmp / "spill.graph"),
            inp["properties"],
            "0",
            "drop",
            args.spill_limit,
            "",
        )
        checks["same_file_when_spilling"] = (
            Path(tmp / "spill.graph").read_bytes() == Path(out["bv"]).read_bytes()
        )
        last_bv = [x for x in rows if x["method"] == "bv"][-1]
        if inp["stats"] is not None:
            conv = inp["stats"]["conversion"]
            checks["self_loops_dropped"] = (
                last_bv["self_loops_dropped"] == conv["self_loops_dropped"]
            )
            checks["reciprocal_arcs_merged"] = (
                last_bv["duplicates_merged"] == conv["duplicate_or_reverse_pairs_merged"]
            )
            checks["edges_equal_stats_json"] = (
                graph["num_edges"] == inp["stats"]["graph"]["edges_undirected"]
            )
    med = {
        m: statistics.median(x["seconds"] for x in rows if x["method"] == m) for m in ("bv", "text")
    }
    ratio = med["text"] / med["bv"] if med["bv"] > 0 else float("nan")
    print_table(
        [
            {
                k: x.get(k)
                for k in (
                    "method",
                    "repeat",
                    "seconds",
                    "wall_s",
                    "num_nodes",
                    "num_edges",
                    "input_bytes",
                    "peak_rss_bytes",
                )
            }
            for x in rows
        ]
    )
    print(
        f"\n{inp['name']}: median conversion {med['bv']:.3f} s from BV, {med['text']:.3f} s "
        f"from text: text/BV = {ratio:.2f}x"
    )
    failed = [k for k, v in checks.items() if not v]
    print(
        f"same graph: {not failed} ({', '.join(failed) or 'all checks pass'}); "
        f"files byte-identical: {same_bytes}"
    )
    result = {
        "benchmark": "webgraph_convert",
        "dataset": inp["name"],
        "smoke": args.smoke,
        "command": " ".join(["python", "benches/webgraph_convert.py", *sys.argv[1:]]),
        "memory_limit": args.memory_limit,
        "machine": machine_info(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "graph": graph,
        "checks": checks,
        "files_byte_identical": same_bytes,
        "median_seconds": med,
        "text_over_bv": ratio,
        "runs": rows,
        "directed_run": directed,
        "spill_run": spill,
    }
    dest = (Path(tempfile.gettempdir()) if args.smoke else RESULTS) / "webgraph_convert.json"
    write_json(dest, result)
    print(f"wrote {dest}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
