"""Shared fixtures: small graphs built in code (tests never read ../shared)."""

from __future__ import annotations

import instant_embedding as ie
import pytest
from helpers import random_edges


@pytest.fixture
def karate() -> ie.Graph:
    return ie.datasets.karate()


@pytest.fixture
def random_graph() -> ie.Graph:
    src, dst = random_edges(300, 1500, seed=7)
    return ie.Graph.from_edges(src, dst, num_nodes=300)


@pytest.fixture
def saved_random_graph(tmp_path, random_graph) -> ie.Graph:
    path = tmp_path / "random.graph"
    random_graph.save(path)
    return ie.Graph.open(path)
