"""instant-embedding: local node embeddings of very large graphs.

Implements InstantEmbedding (Postăvaru et al., 2020): the embedding of a node is its
approximate Personalized PageRank vector, computed locally by push-flow, projected to ``dim``
dimensions with two hash functions. Graphs live in a memory-mapped binary CSR file, so one
node's embedding reads only the pages around it.

>>> import instant_embedding as ie
>>> g = ie.datasets.karate()
>>> ie.InstantEmbedding(dim=16).embed(g, [0, 33]).shape
(2, 16)
"""

from __future__ import annotations

from . import datasets
from ._core import __version__
from .embedding import (
    DEFAULT_ALPHA,
    DEFAULT_DIM,
    DEFAULT_EPS,
    DEFAULT_MAX_TOUCHED,
    EmbeddingConfig,
    InstantEmbedding,
    ppr,
)
from .errors import (
    BudgetExceededError,
    GraphFormatError,
    InstantEmbeddingError,
    NodeNotFoundError,
    NotFittedError,
)
from .export import write_embeddings
from .graph import Graph

# Readers and writers import their optional dependencies lazily, inside the functions.
from .readers import convert, from_arrow, from_networkx, from_numpy, from_pandas, from_scipy

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_DIM",
    "DEFAULT_EPS",
    "DEFAULT_MAX_TOUCHED",
    "BudgetExceededError",
    "EmbeddingConfig",
    "Graph",
    "GraphFormatError",
    "InstantEmbedding",
    "InstantEmbeddingError",
    "NodeNotFoundError",
    "NotFittedError",
    "__version__",
    "convert",
    "datasets",
    "from_arrow",
    "from_networkx",
    "from_numpy",
    "from_pandas",
    "from_scipy",
    "ppr",
    "write_embeddings",
]
