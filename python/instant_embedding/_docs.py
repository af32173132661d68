"""Parameter documentation written once: the embedding settings' (from the kernel's table,
``EmbeddingConfig.settings()``) and the arguments many functions share. :func:`doc` puts them
into docstrings, so ``help()``, pydoc and Sphinx show them in place."""

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
PARAMS.update(
    graph=_entry("graph : Graph", "An opened or built graph (:class:`Graph`)."),
    nodes=_entry(
        "nodes : int, str, or sequence / array of them",
        "Node ids (the graph's own ids). Duplicates are allowed; unknown ids raise "
        ":class:`NodeNotFoundError` before any work.",
    ),
    threads=_entry(
        "threads : int, optional",
        "Worker threads (default: the model's ``threads`` where there is a model, else "
        "``RAYON_NUM_THREADS`` or the number of CPUs). Results do not depend on it.",
    ),
    progress=_entry(
        "progress : bool or callable, default False",
        "True shows progress on stderr (a tqdm bar if tqdm is installed, else a status line "
        "with the percentage and time left); a callable receives ``(done, total)``.",
    ),
    batch_size=_entry(
        "batch_size : int, optional",
        "Nodes per native batch (default: sized to take about 0.2 s each); Ctrl-C and "
        "progress are handled between batches. Results do not depend on it.",
    ),
)

_FIELD = re.compile(r"^( *)\{(\w+)\}$", re.M)


def doc(obj: T) -> T:
    """Replaces each docstring line that is only ``{name}`` by ``PARAMS[name]``, indented
    as that line."""
    if obj.__doc__:
        obj.__doc__ = _FIELD.sub(
            lambda m: textwrap.indent(PARAMS[m.group(2)], m.group(1)), obj.__doc__
        )
    return obj
