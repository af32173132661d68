"""Embedding 1 million node ids through Spark, Dask and Ray local mode vs the plain batch API.

All engines embed the same node ids (sampled with replacement, seeded) of the same graph file
with the same parameters, on the same machine, in one run:

- ``plain``: ``instant_embedding.batch.embed_batch(path, ids, threads=<cores>)``, one call.
- ``dask``: ``instant_embedding.dask.embed`` on a ``LocalCluster`` (one worker process per
  core, one thread each), input persisted in ``--partitions`` partitions; the job ends with a
  per-partition summary (row count, sum of the first embedding coordinate) so the embeddings
  are materialised in the workers but not shipped to the client.
- ``spark``: ``instant_embedding.spark.embed`` (``mapInArrow``) on ``local[<cores>]``, input
  cached in ``--partitions`` partitions; the job ends with ``count`` and
  ``sum(element_at(embedding, 1))`` in the JVM, which reads every embedding array.
- ``spark-pandas``: the same through ``mapInPandas`` (one numpy array per row), to show why
  ``embed`` uses ``mapInArrow``.
- ``ray``: ``instant_embedding.ray.embed`` on a local Ray cluster of ``<cores>`` CPUs, input
  materialised in ``--partitions`` blocks, ``max_actors=<cores>`` (the input is materialised, so
  no upstream task needs a CPU; the adapter's default pool would leave one CPU free); the job
  ends with a per-batch summary computed in the cluster.

Every engine embeds with the same ``InstantEmbedding`` model, passed whole (``model=``).
Engine start-up (Spark session, Dask cluster, Ray cluster) and input loading are timed
separately; each
engine first runs a small warm-up job (spawns its Python workers, opens the graph there). The
timed job is reported as rows/s and as overhead per row versus ``plain``:
``(t_engine - t_plain) / rows``, where ``t_plain`` is a ``plain`` run made right before the
engine's job (on a shared machine the load drifts; a baseline minutes away would not be
comparable). Checksums (row counts, sum of the first coordinate) are
compared with ``plain`` so a broken engine cannot look fast.

The default ``--eps 1e-3`` makes a row cheap (tens of µs per core), so that the engines' own
per-row overhead stands out and a full run takes minutes. At eps 1e-5 a row of this graph
costs about 2 ms per core, and the same overhead is a far smaller fraction.

The default graph is a seeded Chung–Lu power-law graph (500k nodes, ~1.45M undirected edges)
built with ``Graph.from_edges`` and cached in ``benches/.cache/``; ``--graph PATH`` uses a given
graph file (integer ids).

Usage::

    python benches/distributed.py                      # 1M rows, dim 128 and 512
    python benches/distributed.py --dims 128 --engines plain,dask,spark
    python benches/distributed.py --smoke              # seconds (plus Spark's start-up)

Results: ``benches/results/distributed.json`` (smoke runs: ``benches/.cache/``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

_HERE = str(Path(__file__).resolve().parent)
sys.path.insert(0, _HERE)

import _common as C  # noqa: E402

# This file is named like dask's "distributed" package: keep its folder off the import path,
# or "import distributed" would import this script.
sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != _HERE]

ENGINES = ("plain", "dask", "spark", "spark-pandas", "ray")
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


# --------------------------------------------------------------------------- graph


def synthetic_graph(n: int, m: int, seed: int) -> Path:
    """A Chung–Lu power-law graph (weights ~ rank^-0.8), cached by its parameters."""
    import instant_embedding as ie

    path = C.cache_dir() / f"distributed_chung_lu_n{n}_m{m}_s{seed}.graph"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    w = (np.arange(n) + 1.0) ** -0.8
    p = w / w.sum()
    perm = rng.permutation(n)
    src = perm[rng.choice(n, size=m, p=p)]
    dst = perm[rng.choice(n, size=m, p=p)]
    keep = src != dst
    ie.Graph.from_edges(src[keep], dst[keep], num_nodes=n).save(path)
    return path


def sample_ids(path: Path, rows: int, seed: int) -> np.ndarray:
    import instant_embedding as ie

    g = ie.Graph.open(path)
    if g.id_kind == "utf8":
        raise SystemExit("--graph: this benchmark samples integer node ids; give an int graph")
    nodes = np.asarray(g.nodes, dtype=np.int64)
    return nodes[np.random.default_rng(seed).integers(0, len(nodes), size=rows)]


# --------------------------------------------------------------------------- engines


def run_plain(path: Path, ids: np.ndarray, model: Any, cores: int) -> dict[str, Any]:
    from instant_embedding.batch import clear_cache, embed_batch

    clear_cache()
    embed_batch(path, ids[:2000], threads=cores, model=model)  # warm: open, page cache
    t = time.perf_counter()
    emb = embed_batch(path, ids, threads=cores, model=model)
    dt = time.perf_counter() - t
    return {
        "seconds": dt,
        "rows": len(emb),
        "sum0": float(emb[:, 0].astype(np.float64).sum()),
        "node_sum": int(ids.sum()),
    }


def _dask_summary(pdf: Any) -> Any:
    import pandas as pd

    col = pdf["embedding"].to_numpy()
    s = float(sum(float(v[0]) for v in col))
    return pd.DataFrame({"rows": [len(pdf)], "sum0": [s], "node_sum": [int(pdf["node"].sum())]})


class DaskEngine:
    def __init__(self, cores: int) -> None:
        import distributed

        t = time.perf_counter()
        self.cluster = distributed.LocalCluster(
            n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None
        )
        self.client = distributed.Client(self.cluster)
        self.startup_s = time.perf_counter() - t

    def load(self, ids: np.ndarray, partitions: int) -> float:
        import dask.dataframe as dd
        import distributed
        import pandas as pd

        t = time.perf_counter()
        self.ddf = dd.from_pandas(pd.DataFrame({"node": ids}), npartitions=partitions).persist()
        distributed.wait(self.ddf)
        return time.perf_counter() - t

    def run(self, path: Path, model: Any) -> dict[str, Any]:
        import pandas as pd
        from instant_embedding import batch
        from instant_embedding import dask as ied

        self.client.run(batch.open_graph, str(path))  # warm: every worker opens the graph
        meta = pd.DataFrame(
            {
                "rows": pd.Series([], dtype=np.int64),
                "sum0": pd.Series([], dtype=np.float64),
                "node_sum": pd.Series([], dtype=np.int64),
            }
        )
        t = time.perf_counter()
        out = ied.embed(self.ddf, path, threads=1, model=model)
        res = out.map_partitions(_dask_summary, meta=meta).compute()
        dt = time.perf_counter() - t
        return {
            "seconds": dt,
            "rows": int(res["rows"].sum()),
            "sum0": float(res["sum0"].sum()),
            "node_sum": int(res["node_sum"].sum()),
        }

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


def _map_in_pandas(nodes: Any, body: Any, schema: Any) -> Any:
    """Spark's embed() through mapInPandas: the adapter's Arrow body behind per-row pandas
    objects, to measure what they cost against mapInArrow."""
    import functools

    return nodes.mapInPandas(functools.partial(_pandas_body, body), schema)


def _pandas_body(body: Any, batches: Any) -> Any:
    import pandas as pd
    import pyarrow as pa

    for pdf in batches:
        col = pdf.columns[0]
        rb = pa.RecordBatch.from_arrays([pa.array(pdf[col].to_numpy())], names=[col])
        for out in body(iter([rb])):
            emb = out.column(1).values.to_numpy().reshape(len(pdf), -1)
            yield pd.DataFrame({col: pdf[col], out.schema.names[1]: list(emb)})


class SparkEngine:
    def __init__(self, cores: int) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession

        t = time.perf_counter()
        self.spark = (
            SparkSession.builder.master(f"local[{cores}]")
            .appName("instant-embedding-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.spark.range(10).count()
        self.startup_s = time.perf_counter() - t
        self.cores = cores

    def load(self, ids: np.ndarray, partitions: int) -> float:
        import pandas as pd

        t = time.perf_counter()
        self.df = self.spark.createDataFrame(pd.DataFrame({"node": ids})).repartition(partitions)
        self.df.cache().count()
        self.small = self.spark.createDataFrame(pd.DataFrame({"node": ids[:2000]})).repartition(
            self.cores
        )
        return time.perf_counter() - t

    def run(self, path: Path, model: Any, api: str) -> dict[str, Any]:
        from instant_embedding import spark as ies
        from pyspark.sql import functions as F

        real = ies._map_in_arrow
        if api == "pandas":
            ies._map_in_arrow = _map_in_pandas
        try:
            agg = [
                F.count("*").alias("rows"),
                F.sum(F.element_at("embedding", 1)).alias("s"),
                F.sum("node").alias("node_sum"),
            ]
            ies.embed(self.small, str(path), threads=1, model=model).agg(*agg).collect()  # warm
            t = time.perf_counter()
            row = ies.embed(self.df, str(path), threads=1, model=model).agg(*agg).collect()[0]
            dt = time.perf_counter() - t
        finally:
            ies._map_in_arrow = real
        return {
            "seconds": dt,
            "rows": int(row["rows"]),
            "sum0": float(row["s"]),
            "node_sum": int(row["node_sum"]),
        }

    def close(self) -> None:
        self.spark.stop()


def _ray_summary(table: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    first = pc.list_element(table.column("embedding"), 0)
    return pa.table(
        {
            "rows": [table.num_rows],
            "sum0": [pc.sum(first.cast(pa.float64())).as_py() or 0.0],
            "node_sum": [pc.sum(table.column("node")).as_py() or 0],
        }
    )


class RayEngine:
    def __init__(self, cores: int) -> None:
        import ray
        import ray.data

        t = time.perf_counter()
        ray.init(
            num_cpus=cores,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
        ray.data.DataContext.get_current().enable_progress_bars = False
        self.startup_s = time.perf_counter() - t
        self.cores = cores

    def load(self, ids: np.ndarray, partitions: int) -> float:
        import pyarrow as pa
        import ray

        t = time.perf_counter()
        table = pa.table({"node": ids})
        self.ds = ray.data.from_arrow(table).repartition(partitions).materialize()
        self.small = ray.data.from_arrow(table.slice(0, 2000)).materialize()
        return time.perf_counter() - t

    def _job(self, ds: Any, path: Path, model: Any) -> Any:
        from instant_embedding import ray as ier

        out = ier.embed(ds, str(path), model=model, threads=1, max_actors=self.cores)
        return out.map_batches(_ray_summary, batch_format="pyarrow", batch_size=None).take_all()

    def run(self, path: Path, model: Any) -> dict[str, Any]:
        self._job(self.small, path, model)  # warm
        t = time.perf_counter()
        parts = self._job(self.ds, path, model)
        dt = time.perf_counter() - t
        return {
            "seconds": dt,
            "rows": int(sum(p["rows"] for p in parts)),
            "sum0": float(sum(p["sum0"] for p in parts)),
            "node_sum": int(sum(p["node_sum"] for p in parts)),
        }

    def close(self) -> None:
        import ray

        ray.shutdown()


# --------------------------------------------------------------------------- main


def engine_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("pyspark", "dask", "distributed", "ray", "pandas", "pyarrow"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def engine_unavailable(engine: str) -> str | None:
    """Why an engine cannot run here (missing package or Java), or None."""
    import importlib.util
    import shutil

    need = {
        "dask": ["dask", "distributed", "pandas"],
        "spark": ["pyspark", "pandas", "pyarrow"],
        "ray": ["ray", "pyarrow"],
    }
    for mod in need.get(engine.split("-")[0], []):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed"
    if engine.startswith("spark") and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java runtime"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", type=Path, help="graph file (default: a cached synthetic one)")
    ap.add_argument("--nodes", type=int, default=500_000, help="synthetic graph: nodes")
    ap.add_argument("--edges", type=int, default=1_500_000, help="synthetic graph: edges drawn")
    ap.add_argument("--rows", type=int, default=1_000_000, help="node ids to embed")
    ap.add_argument("--dims", type=lambda s: [int(x) for x in s.split(",")], default=[128, 512])
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--alpha", type=float, default=0.15)
    ap.add_argument("--value", default="p+r", help="the model's value setting")
    ap.add_argument("--smooth", type=int, default=0, help="the model's smooth setting")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--engines", type=lambda s: s.split(","), default=list(ENGINES))
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time each engine's job and its plain baseline this many times, alternating; "
        "report the fastest of each (robust to a shared machine's load)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny graph and rows: seconds")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    bad = [e for e in args.engines if e not in ENGINES]
    if bad:
        ap.error(f"unknown engines {bad}; choose from {ENGINES}")
    if "plain" not in args.engines:
        args.engines = ["plain", *args.engines]  # the reference
    skipped = {}
    for e in list(args.engines):
        why = engine_unavailable(e)
        if why:
            skipped[e] = why
            args.engines.remove(e)
            print(f"skipping {e}: {why}", file=sys.stderr)
    if args.smoke:
        args.nodes, args.edges, args.rows = 20_000, 60_000, 5_000
        args.dims, args.partitions, args.eps = [32], 4, 1e-3
    if args.out is None:
        args.out = (
            C.cache_dir() / "distributed_smoke.json"
            if args.smoke
            else C.RESULTS / "distributed.json"
        )

    t0 = time.time()
    machine = C.machine_info()
    machine["engines"] = engine_versions()
    if args.graph is not None:
        path = args.graph
        graph_desc = {"path": str(path)}
    else:
        path = synthetic_graph(args.nodes, args.edges, args.seed)
        graph_desc = {
            "synthetic": "chung_lu rank^-0.8",
            "nodes_arg": args.nodes,
            "edges_drawn": args.edges,
            "seed": args.seed,
        }
    import instant_embedding as ie

    g = ie.Graph.open(path)
    graph_desc.update(num_nodes=g.num_nodes, num_edges=g.num_edges, bytes=os.path.getsize(path))
    del g
    ids = sample_ids(path, args.rows, args.seed)
    print(f"graph {graph_desc}; {args.rows:,} node ids; cores {args.cores}", flush=True)

    runs: dict[tuple[str, int], dict[str, Any]] = {}
    startup: dict[str, Any] = {}

    def params(dim: int) -> Any:
        return ie.InstantEmbedding(
            dim, eps=args.eps, alpha=args.alpha, value=args.value, smooth=args.smooth
        )

    for dim in args.dims:
        runs[("plain", dim)] = run_plain(path, ids, params(dim), args.cores)
        print(f"plain dim {dim}: {runs[('plain', dim)]['seconds']:.1f} s", flush=True)

    def timed(engine: str, dim: int, job: Any) -> None:
        """The fastest of --repeat alternating (plain, engine) pairs."""
        for _ in range(max(1, args.repeat)):
            base = run_plain(path, ids, params(dim), args.cores)
            r = job()
            for key, new in (((f"plain@{engine}", dim), base), ((engine, dim), r)):
                if key not in runs or new["seconds"] < runs[key]["seconds"]:
                    runs[key] = new

    if "dask" in args.engines:
        eng = DaskEngine(args.cores)
        startup["dask_cluster_s"] = eng.startup_s
        startup["dask_load_s"] = eng.load(ids, args.partitions)
        try:
            for dim in args.dims:
                timed("dask", dim, lambda: eng.run(path, params(dim)))  # noqa: B023
                print(f"dask dim {dim}: {runs[('dask', dim)]['seconds']:.1f} s", flush=True)
        finally:
            eng.close()
    spark_apis = [(e, "arrow" if e == "spark" else "pandas") for e in ("spark", "spark-pandas")]
    spark_apis = [(e, a) for e, a in spark_apis if e in args.engines]
    if spark_apis:
        seng = SparkEngine(args.cores)
        startup["spark_session_s"] = seng.startup_s
        startup["spark_load_s"] = seng.load(ids, args.partitions)
        try:
            for dim in args.dims:
                for name, api in spark_apis:
                    timed(name, dim, lambda: seng.run(path, params(dim), api))  # noqa: B023
                    print(f"{name} dim {dim}: {runs[(name, dim)]['seconds']:.1f} s", flush=True)
        finally:
            seng.close()

    if "ray" in args.engines:
        reng = RayEngine(args.cores)
        startup["ray_init_s"] = reng.startup_s
        startup["ray_load_s"] = reng.load(ids, args.partitions)
        try:
            for dim in args.dims:
                timed("ray", dim, lambda: reng.run(path, params(dim)))  # noqa: B023
                print(f"ray dim {dim}: {runs[('ray', dim)]['seconds']:.1f} s", flush=True)
        finally:
            reng.close()

    rows_out = []
    ok = True
    for dim in args.dims:
        for eng_name in args.engines:
            r = runs.get((eng_name, dim))
            if r is None:
                continue
            base = runs.get((f"plain@{eng_name}", dim), runs[("plain", dim)])
            check = (
                r["rows"] == args.rows
                and r["node_sum"] == base["node_sum"]
                and np.isclose(r["sum0"], base["sum0"], rtol=1e-9, atol=1e-6)
            )
            ok &= bool(check)
            rows_out.append(
                {
                    "engine": eng_name,
                    "dim": dim,
                    "rows": r["rows"],
                    "seconds": round(r["seconds"], 3),
                    "rows_per_s": round(r["rows"] / r["seconds"], 1),
                    "us_per_row": round(r["seconds"] / r["rows"] * 1e6, 2),
                    "plain_seconds": round(base["seconds"], 3),
                    "overhead_us_per_row": round(
                        (r["seconds"] - base["seconds"]) / r["rows"] * 1e6, 2
                    ),
                    "vs_plain": round(r["seconds"] / base["seconds"], 3),
                    "sum0": r["sum0"],
                    "node_sum": r["node_sum"],
                    "checksum_ok": bool(check),
                }
            )
    res = {
        "benchmark": "distributed",
        "command": "python benches/distributed.py " + " ".join(argv),
        "machine": machine,
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.time() - t0, 1),
        "graph": graph_desc,
        "config": {
            "rows": args.rows,
            "dims": args.dims,
            "eps": args.eps,
            "alpha": args.alpha,
            "value": args.value,
            "smooth": args.smooth,
            "partitions": args.partitions,
            "repeat": args.repeat,
            "cores": args.cores,
            "threads": f"plain: {args.cores} threads; engines: {args.cores} tasks (Ray: up "
            f"to {args.cores} actors) x 1 thread",
        },
        "startup_s": {k: round(v, 2) for k, v in startup.items()},
        "skipped": skipped,
        "rows": rows_out,
    }
    C.write_json(args.out, res)
    print()
    C.print_table(rows_out)
    print("start-up / load (s):", res["startup_s"])
    print(f"wrote {args.out}")
    if not ok:
        print("CHECKSUM MISMATCH: an engine's output differs from plain", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
