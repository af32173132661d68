"""Writes the Python code that lists the embedding settings, from the kernel's settings table.

The table (``SETTINGS`` in src/embed/config.rs, read here through ``EmbeddingConfig.settings()`` of
the installed package) is the one place a setting is written. This script regenerates every
block of Python between ``# <settings: KIND>`` and ``# </settings>`` markers:

- ``python/instant_embedding/_core.pyi``: the config's attributes and the keyword arguments of
  ``EmbeddingConfig(...)`` and ``.replace(...)``;
- ``python/instant_embedding/embedding.py``: the ``Literal`` aliases of the choice settings and
  the signature of ``InstantEmbedding.__init__`` (scikit-learn reads parameters from it).

``python .ci/gen_settings.py`` rewrites the files; ``--check`` only reports blocks that differ
(CI runs it after building the package, so a setting added in Rust without regenerating fails).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from instant_embedding._core import EmbeddingConfig

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    ROOT / "python/instant_embedding/_core.pyi",
    ROOT / "python/instant_embedding/embedding.py",
]
BLOCK = re.compile(r"^( *)# <settings: (\w+)>\n.*?^ *# </settings>\n", re.S | re.M)


def alias(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def annotation(s: dict, literal_inline: bool) -> str:
    if s["choices"]:
        if literal_inline:
            return "Literal[" + ", ".join(f'"{c}"' for c in s["choices"]) + "]"
        return alias(s["name"])
    return s["type"]


def lines(kind: str) -> list[str]:
    settings = EmbeddingConfig.settings()
    if kind == "attributes":  # _core.pyi, class body
        return [f"{s['name']}: {annotation(s, True)}" for s in settings]
    if kind == "kwargs":  # _core.pyi, keyword-only arguments with defaults from the kernel
        return [f"{s['name']}: {annotation(s, True)} = ...," for s in settings]
    if kind == "aliases":  # embedding.py, module level
        return [f"{alias(s['name'])} = {annotation(s, True)}" for s in settings if s["choices"]]
    if kind == "init":  # embedding.py, InstantEmbedding.__init__ parameters after self
        first, rest = settings[0], settings[1:]
        out = [f"{first['name']}: {annotation(first, False)} = _DEFAULTS.{first['name']},", "*,"]
        out += [f"{s['name']}: {annotation(s, False)} = _DEFAULTS.{s['name']}," for s in rest]
        return [*out, "threads: int | None = None,"]
    raise SystemExit(f"unknown settings block kind {kind!r}")


def regenerate(text: str) -> str:
    def block(m: re.Match[str]) -> str:
        indent, kind = m.group(1), m.group(2)
        body = "".join(f"{indent}{line}\n" for line in lines(kind))
        return f"{indent}# <settings: {kind}>\n{body}{indent}# </settings>\n"

    return BLOCK.sub(block, text)


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for path in FILES:
        text = path.read_text()
        if not BLOCK.search(text):
            raise SystemExit(f"{path}: no '# <settings: ...>' block")
        new = regenerate(text)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new)
    if check and stale:
        print("settings blocks out of date (run python .ci/gen_settings.py):", *stale)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
