"""The options of every reader, in one object validated once."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Default memory budget of the out-of-core builder (bytes).
DEFAULT_MEMORY_LIMIT = 2 * 1024**3

ID_KINDS = ("auto", "int", "str")
SELF_LOOPS = ("keep", "drop")
MERGES = ("sum", "max")


def parse_size(value: int | str | None) -> int:
    """Parses a memory size: an int (bytes) or a string such as ``"2G"``, ``"512MiB"``, ``"1.5g"``.

    Returns
    -------
    int
        The size in bytes (binary units: ``1K = 1024``).
    """
    if value is None:
        return DEFAULT_MEMORY_LIMIT
    if isinstance(value, bool):
        raise TypeError("memory_limit must be an int or a size string such as '2G'")
    if isinstance(value, (int, np.integer)):
        if value <= 0:
            raise ValueError(f"memory_limit must be > 0, got {value}")
        return int(value)
    if not isinstance(value, str):
        raise TypeError(f"memory_limit must be an int or a size string, got {type(value).__name__}")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", value, re.IGNORECASE)
    if not m:
        raise ValueError(f"invalid size {value!r}; use e.g. 2G, 512M, 1.5GiB or a byte count")
    num = float(m.group(1))
    mult = 1024 ** " kmgt".index(m.group(2).lower() or " ")
    size = int(num * mult)
    if size <= 0:
        raise ValueError(f"memory_limit must be > 0, got {value!r}")
    return size


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return str(value)


def _column(name: str, value: Any) -> int | str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise TypeError(f"{name} must be a column index >= 0 or a column name, got {value!r}")


@dataclass(frozen=True)
class ReadOptions:
    """How to read an input: every option of :func:`instant_embedding.convert`.

    Built once from the caller's keywords and validated in ``__post_init__``; the readers (and
    the native text and JSON readers, which read it by attribute) share it. Fields a format
    does not use must keep their defaults (see :attr:`Format.options`).
    """

    format: str = "auto"
    directed: bool | None = None
    weighted: bool | None = None
    delimiter: str | None = None
    comment: str = "#%"
    header: bool | None = None
    src_col: int | str | None = None
    dst_col: int | str | None = None
    weight_col: int | str | None = None
    id_kind: str = "auto"
    num_nodes: int | None = None
    self_loops: str = "keep"
    merge: str = "sum"
    var: str | None = None
    properties: str | None = None
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    tmp_dir: str | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if not isinstance(self.format, str):
            raise TypeError(f"format must be a str, got {self.format!r}")
        for name in ("directed", "weighted", "header"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{name} must be True, False or None, got {v!r}")
            put(name, None if v is None else bool(v))
        check_choice("id_kind", self.id_kind, ID_KINDS)
        check_choice("self_loops", self.self_loops, SELF_LOOPS)
        check_choice("merge", self.merge, MERGES)
        for name in ("src_col", "dst_col", "weight_col"):
            put(name, _column(name, getattr(self, name)))
        if self.weight_col is not None and self.weighted is False:
            raise ValueError("weight_col is given but weighted=False; drop one of them")
        if self.delimiter is not None and not isinstance(self.delimiter, str):
            raise TypeError(f"delimiter must be a str, got {self.delimiter!r}")
        if not isinstance(self.comment, str) or not self.comment.isascii():
            raise ValueError(f"comment characters must be ASCII, got {self.comment!r}")
        if self.num_nodes is not None and (
            isinstance(self.num_nodes, bool) or not isinstance(self.num_nodes, (int, np.integer))
        ):
            raise TypeError(f"num_nodes must be an int, got {self.num_nodes!r}")
        put("memory_limit", parse_size(self.memory_limit))
        for name in ("tmp_dir", "properties"):
            v = getattr(self, name)
            put(name, None if v is None else os.fspath(v))

    def replace(self, **changes: Any) -> ReadOptions:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def given(self) -> list[str]:
        """Names of the fields that differ from their defaults (``format`` aside)."""
        default = ReadOptions()
        return [
            f.name
            for f in dataclasses.fields(self)
            if f.name != "format" and getattr(self, f.name) != getattr(default, f.name)
        ]

    def check_applies(self, fmt: str, allowed: frozenset[str]) -> None:
        """Refuses options that mean nothing for format ``fmt``."""
        bad = [n for n in self.given() if n not in allowed]
        if bad:
            raise ValueError(f"{', '.join(bad)} do(es) not apply to {fmt} input")

    def directed_flag(self) -> bool:
        """``directed`` for inputs that cannot say it themselves: None means undirected."""
        return bool(self.directed)
