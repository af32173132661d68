"""Writes the code and docs that list the settings, from the kernel's settings tables.

The tables (``SETTINGS`` in src/embed/config.rs and ``READ_SETTINGS`` in src/io/options.rs, read
here through ``EmbeddingConfig.settings()`` and ``ReadOptions.settings()`` of the installed
package) are the one place a setting or a reading option is written. This script regenerates
every block between ``# <settings: KIND>`` and ``# </settings>`` markers (``<!-- ... -->`` in
Markdown):

- ``python/instant_embedding/_core.pyi``: the config's attributes and the keyword arguments of
  ``EmbeddingConfig(...)`` and ``.replace(...)``; the same for ``ReadOptions``;
- ``python/instant_embedding/embedding.py``: the ``Literal`` aliases of the choice settings and
  the signature of ``InstantEmbedding.__init__`` (scikit-learn reads parameters from it);
- ``python/instant_embedding/readers/_convert.py``: the reading keywords of ``convert``;
- ``docs/CLI.md``: the tables of input formats (``FORMATS`` in src/io/mod.rs, through
  ``formats()``) and of reading options.

``python .ci/gen_settings.py`` rewrites the files; ``--check`` only reports blocks that differ
(CI runs it after building the package, so a setting added in Rust without regenerating fails).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from instant_embedding._core import EmbeddingConfig, ReadOptions, formats

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    ROOT / "python/instant_embedding/_core.pyi",
    ROOT / "python/instant_embedding/embedding.py",
    ROOT / "python/instant_embedding/readers/_convert.py",
    ROOT / "docs/CLI.md",
]
BLOCK = re.compile(
    r"^( *)(# |<!-- )<settings: (\w+)>( -->)?\n.*?^ *(# |<!-- )</settings>( -->)?\n", re.S | re.M
)

# Python annotations of the reading options' kinds (``ReadOptions.settings()[i]["type"]``).
READ_TYPES = {
    "flag": "bool | None",
    "text": "str | None",
    "column": "int | str | None",
    "int": "int | None",
    "size": "int | str | None",
    "path": "str | os.PathLike[str] | None",
}


def read_settings() -> list[dict]:
    """The reading options users give (those some format uses)."""
    return [s for s in ReadOptions.settings() if s["formats"]]


def read_annotation(s: dict, attribute: bool = False) -> str:
    """A reading option's type as a keyword (``attribute``: as the object holds it, sizes in
    bytes and paths as str). Choices are ``str``: callers pass names through several layers."""
    if s["choices"] or (s["type"] == "text" and s["default"]):
        return "str"
    if attribute and s["type"] == "size":
        return "int"
    if attribute and s["type"] == "path":
        return "str | None"
    return READ_TYPES[s["type"]]


def read_default(s: dict) -> str:
    """The Python default of a reading option: its value, or None where the input decides
    (or, for a size, where the kernel's default applies)."""
    if s["type"] == "size" or not s["default"]:
        return "None"
    return json.dumps(s["default"])


def read_table() -> list[str]:
    out = [
        "| option | default | formats | `update` | meaning |",
        "|--------|---------|---------|----------|---------|",
    ]
    for s in read_settings():
        flag = "--" + s["name"].replace("_", "-")
        if s["choices"] and len(s["choices"]) <= 4:
            flag += " " + "\\|".join(c for c in s["choices"])
        elif s["choices"]:
            flag += " NAME"
        elif s["metavar"]:
            flag += " " + s["metavar"]
        missing = [f for f in ReadOptions.settings()[0]["formats"] if f not in s["formats"]]
        formats = (
            "all"
            if not missing
            else f"all but {', '.join(missing)}"
            if len(missing) <= 2
            else ", ".join(s["formats"])
        )
        default = f"`{s['default']}`" if s["default"] else "–"
        update = "yes" if s["stage"] == "parse" else "no"
        help_ = s["help"].replace("|", "\\|")
        out.append(f"| `{flag}` | {default} | {formats} | {update} | {help_} |")
    return out


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
    if kind == "read_attributes":  # _core.pyi, ReadOptions class body
        return [f"{s['name']}: {read_annotation(s, True)}" for s in ReadOptions.settings()]
    if kind == "read_kwargs":  # _core.pyi, keyword-only arguments of ReadOptions(...)
        return [f"{s['name']}: {read_annotation(s)} = ...," for s in ReadOptions.settings()]
    if kind == "convert":  # readers/_convert.py, keywords of convert()
        return [f"{s['name']}: {read_annotation(s)} = {read_default(s)}," for s in read_settings()]
    if kind == "read_table":  # docs/CLI.md
        return read_table()
    if kind == "formats_table":  # docs/CLI.md
        rows = [f"| `{f['name']}` | {f['files']} | {f['notes']} |" for f in formats()]
        return ["| `--format` | files | notes |", "|---|---|---|", *rows]
    raise SystemExit(f"unknown settings block kind {kind!r}")


def regenerate(text: str) -> str:
    def block(m: re.Match[str]) -> str:
        indent, kind = m.group(1), m.group(3)
        body = "".join(f"{indent}{line}\n" for line in lines(kind))
        if m.group(2) == "<!-- ":
            return f"<!-- <settings: {kind}> -->\n{body}<!-- </settings> -->\n"
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
