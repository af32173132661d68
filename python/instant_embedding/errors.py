"""Exceptions raised by instant-embedding.

Every error a user can cause is one of these or a standard Python exception: ``ValueError`` /
``TypeError`` for a bad parameter or argument type, ``OSError`` and its subclasses for file-system
problems (with the path in the message).
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "GraphFormatError",
    "InstantEmbeddingError",
    "NodeNotFoundError",
    "NotFittedError",
]


class InstantEmbeddingError(Exception):
    """Base class of the package's own exceptions."""


class GraphFormatError(InstantEmbeddingError, ValueError):
    """A graph file (or an input file being converted) is malformed or corrupted."""


class NodeNotFoundError(InstantEmbeddingError, KeyError):
    """A node id is not in the graph."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class BudgetExceededError(InstantEmbeddingError, RuntimeError):
    """A single PPR query would touch more nodes than ``max_touched`` allows (raise ``eps``
    or ``max_touched``)."""


class NotFittedError(InstantEmbeddingError, ValueError, AttributeError):
    """A compressed model (``wide_dim > 0``) has no fitted linear map yet: call ``fit(graph)``
    (or load a saved model) first."""
