"""Embedding files: the library's streaming writer against embedding in memory and saving by hand.

For each output format, in one run and interleaved (A, B, A, B, ...), the fastest of
``--repeat`` runs of:

- ``library``: ``write_embeddings(model, g, None, path)``: one kernel job embeds every node batch
  by batch and streams the rows into the file (memory bounded by a batch; Parquet through
  pyarrow);
- ``by hand``: ``model.embed_all(g)`` into memory, then the obvious NumPy / pyarrow / Python code
  (``np.save`` of the rows and the ids, ``np.savez``, ``pq.write_table``, word2vec lines
  formatted with ``"%.9g"``, through ``gzip.open`` for ``.gz``).

Both files are read back and must hold the same ids and rows. The embedding alone
(``embed_all`` in memory) is timed too: what is left is the cost of writing. The graph is a
seeded random graph (``--nodes`` nodes, 8 edges each), ``InstantEmbedding(dim=--dim)`` with the
library's other defaults, ``--threads`` threads.

Results: ``benches/results/output_speed.json`` (with --smoke into a temporary folder).

Examples::

    python benches/output_speed.py
    python benches/output_speed.py --smoke
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from pathlib import Path

import instant_embedding as ie
import numpy as np
from _common import RESULTS, machine_info, write_json
from instant_embedding.export import read_embeddings, write_embeddings

FORMATS = ("npy", "npz", "parquet", "w2v", "w2v.gz")


def by_hand(model: ie.InstantEmbedding, g: ie.Graph, path: str, fmt: str) -> None:
    rows = model.embed_all(g)
    ids = g.nodes
    if fmt == "npy":
        np.save(path, rows)
        np.save(path[: -len(".npy")] + ".ids.npy", np.asarray(ids, dtype=np.int64))
    elif fmt == "npz":
        np.savez(path, ids=np.asarray(ids), embeddings=rows)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        emb = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), rows.shape[1])
        pq.write_table(pa.table({"node": pa.array(ids, pa.int64()), "embedding": emb}), path)
    else:
        opener = gzip.open if fmt.endswith(".gz") else open
        line = " ".join(["%.9g"] * rows.shape[1])
        with opener(path, "wt", encoding="utf-8") as f:
            f.write(f"{rows.shape[0]} {rows.shape[1]}\n")
            for i, r in zip(np.asarray(ids).tolist(), rows.tolist()):
                f.write(f"{i} {line % tuple(r)}\n")


def timed(f, *args) -> float:
    t0 = time.perf_counter()
    f(*args)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="tiny run (results in a temp folder)")
    args = ap.parse_args()
    if args.smoke:
        args.nodes, args.repeat = 2_000, 1
    rng = np.random.default_rng(0)
    n = args.nodes
    g = ie.Graph.from_edges(rng.integers(0, n, 8 * n), rng.integers(0, n, 8 * n), num_nodes=n)
    model = ie.InstantEmbedding(dim=args.dim, threads=args.threads)
    work = tempfile.mkdtemp(prefix="output_speed-")
    embed_s = min(timed(model.embed_all, g) for _ in range(args.repeat))
    rows = []
    for fmt in FORMATS:
        lib, hand = os.path.join(work, f"lib.{fmt}"), os.path.join(work, f"hand.{fmt}")
        t = {"library": [], "by_hand": []}
        for _ in range(args.repeat):  # interleaved, so both see the same load
            t["library"].append(timed(write_embeddings, model, g, None, lib))
            t["by_hand"].append(timed(by_hand, model, g, hand, fmt))
        a, b = read_embeddings(lib), read_embeddings(hand)
        assert np.array_equal(a[1], b[1]) and [str(x) for x in a[0]] == [str(x) for x in b[0]]
        row = {
            "format": fmt,
            "library_s": min(t["library"]),
            "by_hand_s": min(t["by_hand"]),
            "bytes": os.path.getsize(lib),
        }
        row["speedup"] = row["by_hand_s"] / row["library_s"]
        rows.append(row)
    print(f"{n:,} nodes, dim {args.dim}, {args.threads} threads; embed_all alone {embed_s:.2f} s")
    print(f"{'format':<9}{'library s':>11}{'by hand s':>11}{'by hand / library':>19}")
    for r in rows:
        print(
            f"{r['format']:<9}{r['library_s']:>11.2f}{r['by_hand_s']:>11.2f}{r['speedup']:>19.2f}"
        )
    for name in os.listdir(work):  # the embedding files: hundreds of MB at the defaults
        os.remove(os.path.join(work, name))
    out = Path(work if args.smoke else RESULTS) / "output_speed.json"
    write_json(
        out, {"machine": machine_info(), "args": vars(args), "embed_all_s": embed_s, "rows": rows}
    )
    print(f"wrote {out}")
    if not args.smoke:
        os.rmdir(work)


if __name__ == "__main__":
    main()
