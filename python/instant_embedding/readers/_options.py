"""The reading options: the kernel's ``ReadOptions`` (src/io/options.rs), one object validated
once, with its table of options (``ReadOptions.settings()``)."""

from .._core import DEFAULT_MEMORY_LIMIT, ReadOptions, parse_size

__all__ = ["DEFAULT_MEMORY_LIMIT", "ReadOptions", "parse_size"]
