"""The ``instant-embedding`` command line: ``convert``, ``embed``, ``info``, ``update``,
``compact``, ``reorder`` and ``demo`` (docs/CLI.md).

The subcommands and their flags are one table in the kernel (``_core.cli_commands``), whose
embedding and reading flags come from the kernel's settings tables. Errors print one line
(``error: ...``) and exit with status 1 (2 for usage errors, 130 when interrupted);
``--verbose`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import __version__, _core, datasets
from .embedding import EmbeddingConfig, InstantEmbedding
from .export import format_from_path, write_embeddings
from .graph import Graph, reorder_file
from .readers import ReadOptions, check_output, convert_with_stats, formats

__all__ = ["build_parser", "main"]

BUILTIN_GRAPHS = ("karate", "lesmis")


# ====================================================================== helpers
def _show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _note(args: argparse.Namespace, msg: str) -> None:
    if not args.quiet:
        print(msg, file=sys.stderr)


def _open_graph(spec: str, prefetch: bool = False) -> Any:
    """A graph file, or the name of a shipped example graph."""
    if os.path.isfile(spec) and not _core.is_graph_file(spec):
        root = os.path.splitext(spec)[0]
        # An input named x.graph cannot be converted to x.graph.
        target = f"{root}-ie.graph" if spec.endswith(".graph") else f"{root}.graph"
        what = "is not an instant-embedding graph file"
        if spec.endswith(".graph") and os.path.isfile(f"{root}.properties"):
            what = f"is a WebGraph BV graph ({root}.properties is beside it)"
        raise ValueError(
            f"{spec} {what}; convert it first: instant-embedding convert {spec} {target}"
        )
    if os.path.exists(spec):
        return Graph.open(spec, prefetch=prefetch)
    if spec in BUILTIN_GRAPHS:
        return getattr(datasets, spec)()
    raise FileNotFoundError(
        f"{spec}: no such graph file (shipped examples: {', '.join(BUILTIN_GRAPHS)})"
    )


def _node_ids(spec: str, graph: Any, listed: bool = False) -> Any:
    """Node ids of ``graph``'s kind from a file, one a line (blank lines and ``#`` lines
    skipped), or with ``listed`` (``--nodes``) also ``@FILE`` or comma-separated ids."""
    where = spec.removeprefix("@") if listed else spec
    if listed and not spec.startswith("@") and not os.path.isfile(spec):
        tokens, where = spec.split(","), "--nodes"
    else:
        if not os.path.isfile(where):
            raise FileNotFoundError(f"{where}: node list file not found")
        with open(where, encoding="utf-8") as f:
            tokens = [t for t in f.read().splitlines() if not t.strip().startswith("#")]
    tokens = [t.strip() for t in tokens if t.strip()]
    if not tokens:
        raise ValueError(f"{where}: no node ids given")
    kind = "str" if graph.id_kind == "utf8" else "int"
    return _core.node_ids(tokens, kind, where, "node", 0)


def cli_names(msg: str) -> str:
    """``msg`` with the library's parameter names (``header=False``, ``weight_col``) replaced
    by the command-line flags that say the same."""
    flags = {s["name"] for s in _reading_settings("build") if s["type"] == "flag"}

    def value(m: re.Match[str]) -> str:
        name, val = m.group(1), m.group(2)
        if name in flags and val in ("True", "False"):
            return _core.cli_flag(name, val == "True")
        v = val[1:-1] if val[:1] in "'\"" and len(val) > 1 else val
        # Plain words unquoted (--id-kind str); anything a shell could mangle stays quoted.
        shown = v if v.replace("-", "").replace("_", "").isalnum() else val
        return f"{_core.cli_flag(name)} {shown}" if val else _core.cli_flag(name)

    names = [s["name"] for s in _reading_settings("build")]
    msg = re.sub(
        rf"\b({'|'.join(names)})=('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[A-Za-z_][\w.]*|)", value, msg
    )
    snake = "|".join(n for n in names if "_" in n)
    return re.sub(rf"\b({snake})\b", lambda m: _core.cli_flag(m.group(1)), msg)


# ====================================================================== convert / reorder
def cmd_convert(args: argparse.Namespace) -> int:
    paths, inputs, output = list(args.paths or []), list(args.input or []), args.output
    if output is None:
        if not paths or (len(paths) < 2 and not inputs):
            raise ValueError("convert needs INPUT... OUTPUT.graph (or --input/--output)")
        paths, output = paths[:-1], paths[-1]
    inputs += paths
    if not inputs:
        raise ValueError("convert needs at least one input file")
    final = output
    if args.reorder:
        # Convert next to the output, then write the reordered file over the output; errors
        # about the output name the user's path, never the temporary one.
        check_output(final, inputs)
        output = f"{final}.unordered-{os.getpid()}.tmp"
    try:
        g, stats = convert_with_stats(
            inputs, output, progress=_show_progress(args), **_reading_options(args, "build")
        )
        if args.reorder:
            rounds, progress = _core.DEFAULT_REORDER_ROUNDS, _show_progress(args)
            st = reorder_file(g, final, args.reorder, rounds, None, progress)
            del g
            g = Graph.open(final)
    finally:
        if args.reorder and os.path.exists(output):
            os.remove(output)
    secs, read, cols = stats.get("seconds", 0.0), stats.get("edges_read"), stats.get("columns")
    how = ("directed" if g.directed else "undirected") + (", weighted" if g.weighted else "")
    rate = f", {read / secs:,.0f} edges/s" if read and secs > 0 else ""
    _note(
        args,
        f"wrote {final}: {g.num_nodes:,} nodes, {g.num_edges:,} edges ({how}, ids {g.id_kind}) "
        f"from {stats.get('format')} input in {secs:.2f} s{rate}",
    )
    if cols:
        weights = f", weights {cols[2]}" if len(cols) > 2 else ""
        _note(args, f"columns read: {' -> '.join(cols[:2])}{weights}")
    _header_notes(args, stats.get("headers", []))
    if args.reorder:
        _reorder_note(args, final, st)
    if stats.get("self_loops_dropped"):
        _note(args, f"dropped {stats['self_loops_dropped']:,} self-loops")
    return 0


def _header_notes(args: argparse.Namespace, headers: list[str]) -> None:
    for h in headers:
        _note(args, f"header line skipped: {h} (pass --no-header if it is an edge)")


def _reorder_note(args: argparse.Namespace, output: str, st: dict) -> None:
    _note(
        args,
        f"reordered into {output}: {st['method']}, {st['groups']:,} groups, "
        f"{st['internal_arcs'] / max(st['num_arcs'], 1):.1%} of arcs inside a group, "
        f"{st['rounds']} sweeps; order {st['order_seconds']:.2f} s, "
        f"write {st['write_seconds']:.2f} s ({st['threads']} threads)",
    )


def cmd_reorder(args: argparse.Namespace) -> int:
    g = Graph.open(args.graph)
    st = reorder_file(g, args.output, args.method, args.rounds, args.threads, _show_progress(args))
    _reorder_note(args, args.output, st)
    return 0


# ====================================================================== update / compact
class _Commit:
    """An ``EdgeTarget`` of the readers: each chunk of an ``update`` file, as it is read, is
    added to the graph or removed from it."""

    def __init__(self, graph: Any, remove: bool) -> None:
        self.graph, self.remove, self.edges, self.existed = graph, remove, 0, 0

    def add(self, src: Any, dst: Any, weights: Any) -> None:
        if self.remove:
            self.existed += self.graph.remove_edges(src, dst)
        else:
            self.graph.add_edges(src, dst, weights)
        self.edges += len(src)


def read_edge_file(path: str, graph: Any, args: argparse.Namespace, target: _Commit) -> None:
    """Reads an input file in any format ``convert`` reads into ``target``, with ``graph``'s
    id kind, direction and (when adding) weights, through the format's reader (the kernel's
    for the formats it parses: the rules and notices of ``convert``, and the graph's ids also
    settle a first line that could be a header)."""
    given = _reading_options(args, "parse")
    fmt = _core.resolve_format([path], ReadOptions(**given))
    weighted = graph.weighted and not target.remove
    if not weighted:
        given["weight_col"] = None
    given.update(format=fmt, weighted=weighted, directed=graph.directed)
    opts = ReadOptions(**given, id_kind="str" if graph.id_kind == "utf8" else "int")
    _, stats = formats()[fmt].read([path], target, opts, False)
    _header_notes(args, stats.get("headers", []))


def cmd_update(args: argparse.Namespace) -> int:
    if not args.add and not args.remove and not args.remove_nodes:
        raise ValueError("nothing to do: give --add FILE, --remove FILE and/or --remove-nodes FILE")
    with Graph.open(args.graph, writable=True, merge=args.merge) as g:
        t0, (n0, m0) = time.perf_counter(), (g.num_nodes, g.num_edges)
        if args.remove_nodes:
            parts = [_node_ids(f, g) for f in args.remove_nodes]
            ids = np.concatenate(parts) if g.id_kind != "utf8" else [x for p in parts for x in p]
            gone = g.remove_nodes(ids)
            _note(
                args,
                f"{args.graph}: {gone:,} of {len(ids):,} nodes removed with their edges "
                f"({g.num_edges - m0:+,} edges; file rewritten, log emptied)",
            )
        if not args.add and not args.remove:
            return 0
        adding, removing = _Commit(g, remove=False), _Commit(g, remove=True)
        with g.batch():
            for target, files in ((adding, args.add), (removing, args.remove)):
                for f in files or []:
                    read_edge_file(f, g, args, target)
        log = g.log_info() or {}
        _note(
            args,
            f"{args.graph}: {adding.edges:,} edges added, {removing.existed:,} of "
            f"{removing.edges:,} removed ({g.num_nodes - n0:+,} nodes, {g.num_edges - m0:+,} "
            f"edges) in one commit ({log.get('commits', 0):,} in the log, "
            f"{_core.human_bytes(log.get('bytes', 0))}); {_since(t0)}",
        )
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    with Graph.open(args.graph, writable=True) as g:
        log, t0 = g.log_info() or {}, time.perf_counter()
        g.compact(threads=args.threads)
        _note(
            args,
            f"{args.graph}: folded {log.get('commits', 0):,} commits "
            f"({_core.human_bytes(log.get('bytes', 0))} of log) into a new file of "
            f"{_core.human_bytes(os.path.getsize(args.graph))} in {_since(t0)}",
        )
    return 0


def _since(t0: float) -> str:
    """The time since ``t0`` (``time.perf_counter()``), as the notes show it."""
    return _core.human_seconds(time.perf_counter() - t0)


# ====================================================================== embed
def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The embedding settings the setting flags give."""
    return {s["name"]: getattr(args, s["name"]) for s in EmbeddingConfig.settings()}


def cmd_embed(args: argparse.Namespace) -> int:
    if args.graph is not None and args.input is not None and args.graph != args.input:
        raise ValueError("give the graph either as GRAPH or as --input, not both")
    spec = args.graph if args.graph is not None else args.input
    if spec is None:
        raise ValueError("embed needs a GRAPH (a .graph file, or karate / lesmis)")
    fmt = args.format or format_from_path(args.output)
    if args.output == "-" and fmt != "w2v":
        raise ValueError("--output - writes word2vec text; use --format w2v or a file name")
    g = _open_graph(spec, prefetch=args.prefetch)
    model = _embedding_model(args, g)
    nodes = None if args.nodes == "all" else _node_ids(args.nodes, g, listed=True)
    t0 = time.perf_counter()
    target: Any = sys.stdout if args.output == "-" else args.output
    progress = _show_progress(args)
    n = write_embeddings(
        model, g, nodes, target, format=fmt, batch_size=args.batch_size, progress=progress
    )
    secs = time.perf_counter() - t0
    if args.output != "-":
        rate = f", {n / secs:,.0f} nodes/s" if secs > 0 else ""
        # model.dim, not --dim: a model file brings its own
        _note(args, f"wrote {args.output}: {n:,} x {model.dim} ({fmt}) in {secs:.2f} s{rate}")
    return 0


def _embedding_model(args: argparse.Namespace, g: Any) -> Any:
    """The model ``embed`` uses: read from ``--model FILE`` when it exists, else made from the
    setting flags, and fitted when compressed (then written to ``--model FILE``, if given)."""
    settings = _settings(args)
    if args.model is not None and os.path.exists(args.model):
        model = InstantEmbedding.load(args.model, threads=args.threads)
        defaults = EmbeddingConfig().to_dict()
        for name, value in settings.items():
            if value != defaults[name] and value != getattr(model, name):
                raise ValueError(
                    f"--{name.replace('_', '-')} {value} disagrees with the model file "
                    f"{args.model} ({name}={getattr(model, name)!r}); leave it out, or give "
                    "another --model path to fit a new one"
                )
        return model
    model = InstantEmbedding(**settings, threads=args.threads)
    if args.model is not None and not model.compressed:
        raise ValueError("--model stores a compressed model: give --wide-dim too")
    if model.compressed:
        t0 = time.perf_counter()
        model.fit(g)
        if args.model is not None:
            model.save(args.model)
        _note(
            args,
            f"fitted the {model.wide_dim} -> {model.dim} map on {model.n_fit_nodes_:,} nodes "
            f"in {time.perf_counter() - t0:.2f} s"
            + (f", saved to {args.model}" if args.model is not None else ""),
        )
    return model


# ====================================================================== info / demo
def cmd_info(args: argparse.Namespace) -> int:
    """Prints the kernel's report (``_core.graph_info``): the graph's facts and the median,
    95th percentile and maximum cost of one node's embedding with the setting flags (every
    setting counts) over a deterministic sample of nodes, each embedded alone on one thread."""
    g, model = _open_graph(args.graph), InstantEmbedding(**_settings(args))
    measured = model.compressed and args.sample and g.num_nodes
    if measured:
        model.fit(g)  # its map, as embed --wide-dim fits it
    label = args.graph if os.path.exists(args.graph) else f"{args.graph} (shipped example)"
    fitted = model._fitted_map() if measured else None
    report, text = _core.graph_info(g._native, model.config, label, fitted, args.sample)
    print(json.dumps(json.loads(report), indent=2) if args.json else text)
    return 0


def demo_result(model: Any = None) -> dict[str, Any]:
    """Embeds the karate club graph with ``model`` (default ``InstantEmbedding(128)``) and
    measures how well the embedding separates the two clubs: cosine 2-means on the
    embeddings, started at the two leaders (nodes 0 and 33)."""
    g, labels = datasets.karate(), datasets.karate_labels()
    model = InstantEmbedding(128) if model is None else model
    if model.compressed:
        model.fit(g)
    t0 = time.perf_counter()
    emb = model.embed(g, g.nodes)
    secs = time.perf_counter() - t0
    groups = _core.cosine_two_means(emb, (0, 33), 20)
    return {
        "shape": emb.shape,
        "seconds": secs,
        "neighbours": {v: _core.cosine_nearest(emb, v, 3) for v in (0, 33)},
        "correct": int(np.count_nonzero(groups == labels)),
        "total": len(labels),
        "nodes": g.num_nodes,
        "edges": g.num_edges,
    }


def cmd_demo(args: argparse.Namespace) -> int:
    r = demo_result(InstantEmbedding(**_settings(args)))
    names = {0: "node 0 (Mr. Hi, instructor)", 33: "node 33 (John A., president)"}
    print(
        f"Zachary's karate club: {r['nodes']} members, {r['edges']} friendships (shipped with "
        f"the package)\nInstantEmbedding(dim={args.dim}): embedded all {r['shape'][0]} nodes "
        f"-> array of shape {r['shape']} in {r['seconds'] * 1e3:.1f} ms"
    )
    for v, nb in r["neighbours"].items():
        print(f"most cosine-similar to {names[v]}: {', '.join(f'{u} ({s:.2f})' for u, s in nb)}")
    print(
        f"2-means on the embeddings, seeded at nodes 0 and 33, puts {r['correct']} of "
        f"{r['total']} members in the club they joined after the split\n"
        "next: instant-embedding convert edges.txt g.graph && "
        "instant-embedding embed g.graph -o emb.npy"
    )
    return 0


# ====================================================================== flags from tables
def _reading_settings(stage: str) -> list[Any]:
    """The reading options a command takes, from the kernel's table: ``"build"`` (convert)
    takes every option some format uses, ``"parse"`` (update) those that say how records are
    read (the graph settles the rest)."""
    settings = ReadOptions.settings()
    return [s for s in settings if s["formats"] and (stage == "build" or s["stage"] == "parse")]


def _reading_options(args: argparse.Namespace, stage: str) -> dict[str, Any]:
    """The reading options given on the command line, as ``ReadOptions`` keywords."""
    given = {s["name"]: getattr(args, s["name"]) for s in _reading_settings(stage)}
    return {k: v for k, v in given.items() if v is not None}


# The kernel's flags' types by name; a column given as a number is an index, else a name.
_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "column": lambda v: int(v) if v.isdigit() else v,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``instant-embedding``, made from the kernel's table of
    subcommands and flags (``_core.cli_commands``, the settings' and reading options' flags
    included)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", help="show the full traceback on errors"
    )
    common.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar or summary lines"
    )
    p = argparse.ArgumentParser(
        prog="instant-embedding",
        description="Local node embeddings of very large graphs (InstantEmbedding): "
        "convert a graph once, then embed any nodes you need.",
        epilog="Try: instant-embedding demo. Docs: docs/CLI.md.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for c in _core.cli_commands():
        examples = "".join(f"\n  instant-embedding {x}" for x in c["examples"])
        sp = sub.add_parser(
            c["name"],
            parents=[common],
            help=c["help"],
            description=c["description"],
            epilog=f"Examples:{examples}" if examples else None,
            formatter_class=argparse.RawDescriptionHelpFormatter
            if examples
            else argparse.HelpFormatter,
        )
        for how in c["flags"]:
            names, negative = how.pop("names"), how.pop("negative", None)
            if "type" in how:
                how["type"] = _TYPES[how["type"]]
            if negative is None:
                sp.add_argument(*names, **how)
                continue
            # A reading flag and the flag that says the opposite, one of them at most.
            group = sp.add_mutually_exclusive_group()
            group.add_argument(*names, action="store_const", const=True, **how)
            opposite = f"the opposite of {names[0]}"
            group.add_argument(
                negative, dest=how["dest"], action="store_const", const=False, help=opposite
            )
        sp.set_defaults(func=globals()[f"cmd_{c['name']}"])
    return p


def _setup_logging(args: argparse.Namespace) -> None:
    """Route the package's log records to stderr (progress lines when tqdm is missing)."""
    logger = logging.getLogger("instant_embedding")
    if args.quiet or logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``instant-embedding`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    _setup_logging(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # e.g. `embed ... -o - | head`: the reader went away; exit quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - the CLI reports every error in one line
        if args.verbose:
            raise
        msg = " ".join((str(e).strip() or type(e).__name__).split("\n"))
        print(f"error: {cli_names(msg)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
