"""Exceptions raised by instant-embedding.

Every error a user can cause is one of these or a standard Python exception:

- :class:`GraphFormatError` (also a :class:`ValueError`): a graph file is malformed, truncated or
  corrupted, or an input file cannot be parsed.
- :class:`NodeNotFoundError` (also a :class:`KeyError`): a node id is not in the graph.
- :class:`BudgetExceededError` (also a :class:`RuntimeError`): one query would touch more nodes
  than ``max_touched`` allows (raise ``eps`` or ``max_touched``).
- :class:`NotFittedError` (also a :class:`ValueError` and an :class:`AttributeError`, as
  scikit-learn's): a compressed model (``wide_dim > 0``) was asked to embed before ``fit``.
- :class:`ValueError` / :class:`TypeError`: a bad parameter or argument type.
- :class:`OSError` and its subclasses (``FileNotFoundError``, ``IsADirectoryError``,
  ``PermissionError``): file-system problems, with the path in the message.
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
    """A single PPR query would touch more nodes than ``max_touched`` allows."""


class NotFittedError(InstantEmbeddingError, ValueError, AttributeError):
    """A compressed model (``wide_dim > 0``) has no fitted linear map yet: call ``fit(graph)``
    (or load a saved model) first."""
