"""Quick start: embed the karate club graph, save it to a file, and use the embeddings.

Uses only the graph that ships with the package (no network). Run:

    python examples/quickstart.py
"""

from __future__ import annotations

import os
import tempfile

import instant_embedding as ie
import numpy as np


def main() -> None:
    g = ie.datasets.karate()  # Zachary's karate club: 34 members, 78 friendships
    labels = ie.datasets.karate_labels()  # the faction each member joined after the split
    print(g)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "karate.graph")
        g.save(path)  # atomic write
        g = ie.Graph.open(path)  # memory-mapped: opening costs O(1)

        model = ie.InstantEmbedding(dim=64, seed=0)
        X = model.embed_all(g)  # row i embeds g.nodes[i]
        print(f"embeddings: {X.shape} {X.dtype}")

        # Each node's embedding is local: embedding one node alone gives its row, bit for bit.
        assert np.array_equal(model.embed(g, [33]), X[[33]])

        # The PPR vector behind an embedding: the nodes most relevant to node 0 (Mr. Hi).
        nodes, scores = ie.ppr(g, 0, eps=1e-6)
        top = np.argsort(-scores)[:5]
        print("PPR around node 0:", ", ".join(f"{nodes[i]} ({scores[i]:.3f})" for i in top))

        # Leave-one-out nearest-centroid classification of the two factions (cosine).
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        correct = 0
        for i in range(g.num_nodes):
            rest = np.arange(g.num_nodes) != i
            centroids = [Xn[rest & (labels == c)].mean(axis=0) for c in (0, 1)]
            correct += int(np.argmax([Xn[i] @ c for c in centroids]) == labels[i])
        accuracy = correct / g.num_nodes
        print(f"faction predicted from the embedding: {accuracy:.0%} of members")
        assert accuracy > 0.8, accuracy


if __name__ == "__main__":
    main()
