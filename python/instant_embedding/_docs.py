"""Parameter documentation written once: the embedding settings' (from the kernel's table,
``EmbeddingConfig.settings()``) and the arguments (and sections) many functions and the
engine adapters share. :func:`doc` puts them into docstrings, so ``help()``, pydoc and Sphinx
show them in place."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ._core import EmbeddingConfig

T = TypeVar("T", bound=Callable[..., object])


def _entry(head: str, text: str) -> str:
    # No line break inside a ``literal``: its spaces are held as NULs while wrapping.
    text = re.sub(r"``.*?``", lambda m: m.group(0).replace(" ", "\0"), text)
    body = textwrap.fill(text, 84, break_on_hyphens=False).replace("\0", " ")
    return head + "\n" + textwrap.indent(body, "    ")


def _setting(s: Mapping[str, Any]) -> str:
    kind = "{" + ", ".join(f'"{c}"' for c in s["choices"]) + "}" if s["choices"] else s["type"]
    d = s["default"]
    default = f"{d:_}" if s["type"] == "int" else f'"{d}"' if s["type"] == "str" else d
    return _entry(f"{s['name']} : {kind}, default {default}", s["doc"].replace("`", "``"))


#: Shared parameter entries by name; ``doc`` fills ``{name}`` lines with them.
PARAMS: dict[str, str] = {s["name"]: _setting(s) for s in EmbeddingConfig.settings()}
PARAMS["settings"] = "\n".join(PARAMS[s["name"]] for s in EmbeddingConfig.settings())
# Shared entries: ``[key] `` starts the entry ``PARAMS[key]``, NumPy style (or a section).
_SHARED = """\
[graph] graph : Graph
    An opened or built graph (:class:`Graph`).
[nodes] nodes : int, str, or sequence / array of them
    Node ids (the graph's own ids). Duplicates are allowed; unknown ids raise
    :class:`NodeNotFoundError` before any work.
[all_nodes] nodes : sequence or array of ids, optional
    The nodes, in output order; default (None) every node, in internal order
    (``graph.nodes``, as :meth:`InstantEmbedding.embed_all`). Unknown ids raise
    :class:`NodeNotFoundError` before any work.
[threads] threads : int, optional
    Worker threads (default: the model's ``threads`` where there is a model, else
    ``RAYON_NUM_THREADS`` or the number of CPUs). Results do not depend on it.
[progress] progress : bool or callable, default False
    True shows progress on stderr (a tqdm bar if tqdm is installed, else a status line
    with the percentage and time left); a callable receives ``(done, total)``.
[batch_size] batch_size : int, optional
    Nodes per native batch (default: sized to take about 0.2 s each); Ctrl-C and
    progress are handled between batches. Results do not depend on it.
[format] format : {"npy", "npz", "parquet", "w2v"}, optional
    The embedding file's format; default: from the extension (see
    :func:`instant_embedding.export.format_from_path`), which must not imply another.
[graph_path] graph_path : str or os.PathLike
    The graph file as the workers see it: a path every worker can read (checked on the
    driver), a URI (``s3://``, ``gs://``, ``http(s)://``, ...: copied once per machine
    into a cache keyed by content; needs fsspec), or, with ``ship`` where offered, a
    driver's file.
[node_col] node_col : str, default "node"
    The node ids (integer or string type, no nulls); other columns are dropped (join
    back).
[model] model : InstantEmbedding, optional
    The settings (default ``InstantEmbedding()``), shipped whole: rows equal
    ``model.embed`` bit for bit (its ``threads`` is not used).
[output_col] output_col : str, default "embedding"
    The embedding column: float32 values, ``dim`` per row.
[cache_dir] cache_dir : str or os.PathLike, optional
    Worker-local copy cache for URIs (default: ``batch.default_cache_dir()``).
[output_path] output_path : str or os.PathLike
    The graph file to write on the driver; it appears atomically when complete.
[edge_cols] src_col, dst_col, weight_col
    Endpoint columns (integer or string node ids), default "src" and "dst", and an
    optional column of positive weights (the graph is then weighted).
[build_options] **options
    ``directed`` (default False), ``self_loops`` ("keep", "drop"), ``merge`` ("sum",
    "max": duplicate edges' weights), ``memory_limit`` (the builder's budget, e.g.
    ``"4G"``) and ``tmp_dir`` (its scratch directory), as in
    :func:`instant_embedding.from_arrow`.
[embed_raises] Raises
------
KeyError, FileNotFoundError, ValueError, TypeError
    On the driver: ``node_col`` not a column (where the schema is known), a local graph path
    the driver cannot see, bad parameters.
NodeNotFoundError, GraphFormatError, BudgetExceededError
    On the workers, naming the node and the graph.
[build_returns] Returns
-------
Graph
    The new graph file, opened (``KeyError`` for a missing column).
"""
_parts = re.split(r"^\[(\w+)\] ", _SHARED, flags=re.M)[1:]
PARAMS.update({k: v.rstrip("\n") for k, v in zip(_parts[::2], _parts[1::2], strict=True)})

# A line holding only ``{name}`` fields (one or more, space-separated).
_FIELD = re.compile(r"^( *)((?:\{\w+\} ?)+)$", re.M)


def doc(obj: T) -> T:
    """Replaces each docstring line that holds only ``{name}`` fields by ``PARAMS[name]`` for
    each, indented as that line (a ``KeyError`` names an unknown field)."""
    if obj.__doc__:
        obj.__doc__ = _FIELD.sub(
            lambda m: textwrap.indent(
                "\n".join(PARAMS[n] for n in re.findall(r"\w+", m.group(2))), m.group(1)
            ),
            obj.__doc__,
        )
    return obj
