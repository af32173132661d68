"""String node ids from a CSV edge list: convert it to a graph file, embed, and export.

Writes the Les Misérables co-appearance graph that ships with the package as a CSV file with a
header (``source,target,weight``), converts it, finds each main character's nearest
neighbours by cosine similarity, and writes all embeddings as word2vec text. Run:

    python examples/string_ids_and_csv.py
"""

from __future__ import annotations

import csv
import os
import tempfile
from importlib import resources

import instant_embedding as ie
import numpy as np
from instant_embedding.readers import convert


def write_csv(path: str) -> int:
    """The shipped ``lesmis.tsv`` as a CSV edge list with a header; returns the edge count."""
    text = resources.files("instant_embedding").joinpath("data").joinpath("lesmis.tsv")
    rows = [ln.split("\t") for ln in text.read_text("utf-8").splitlines() if ln[:1] != "#"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["source", "target", "weight"])
        out.writerows(rows)
    return len(rows)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = os.path.join(tmp, "lesmis.csv")
        edges = write_csv(csv_path)
        g = convert(
            csv_path,
            os.path.join(tmp, "lesmis.graph"),
            src_col="source",
            dst_col="target",
            weight_col="weight",
        )
        print(g)
        assert g.num_edges == edges and g.id_kind == "utf8"

        model = ie.InstantEmbedding(dim=128, seed=0)
        X = model.embed_all(g)  # row i embeds g.nodes[i]
        names = list(g.nodes)
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        for who in ["Valjean", "Javert", "Marius"]:
            sims = Xn @ Xn[names.index(who)]
            nearest = [names[i] for i in np.argsort(-sims)[1:4]]
            print(f"{who:8} is closest to {', '.join(nearest)}")

        # Nodes are named by their ids; unknown ids raise NodeNotFoundError (a KeyError).
        assert np.array_equal(model.embed(g, ["Cosette"]), X[[names.index("Cosette")]])
        try:
            model.embed(g, ["Gandalf"])
        except ie.NodeNotFoundError as e:
            print(f"NodeNotFoundError: {e}")

        # Stream every embedding to a word2vec text file (bounded memory for any graph size).
        w2v = os.path.join(tmp, "lesmis.w2v")
        rows = ie.write_embeddings(model, g, None, w2v)
        with open(w2v, encoding="utf-8") as f:
            header = f.readline().split()
        print(f"wrote {rows} rows of {header[1]} floats to {os.path.basename(w2v)}")
        assert header == [str(g.num_nodes), "128"]


if __name__ == "__main__":
    main()
