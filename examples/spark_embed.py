"""Embed a Spark DataFrame column of node ids on the executors (``pip install
"instant-embedding[spark]"``, Java 17+).

Starts a local Spark session, embeds the karate club's members partition by partition, and
checks the result is bit-identical to the local API. Prints a note and exits cleanly when
PySpark or Java is missing. Run:

    python examples/spark_embed.py
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile

import instant_embedding as ie
import numpy as np


def main() -> int:
    if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
        print("skipped: needs PySpark and Java (pip install 'instant-embedding[spark]')")
        return 0
    from instant_embedding import spark as ies
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory() as tmp:
        graph_path = os.path.join(tmp, "karate.graph")
        ie.datasets.karate().save(graph_path)
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("instant-embedding example")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            nodes = spark.createDataFrame([(i,) for i in range(34)], ["node"]).repartition(3)
            model = ie.InstantEmbedding(32, seed=7)
            out = ies.embed(nodes, graph_path, node_col="node", model=model)
            with ies.worker_errors():  # executor errors come back as our exception types
                rows = sorted(out.collect())
        finally:
            spark.stop()

        got = np.array([r.embedding for r in rows], dtype=np.float32)
        want = model.embed(ie.Graph.open(graph_path), range(34))
        assert np.array_equal(got, want), "Spark and local embeddings differ"
        print(f"embedded {len(rows)} nodes on Spark {spark.version}: identical to the local API")
    return 0


if __name__ == "__main__":
    sys.exit(main())
