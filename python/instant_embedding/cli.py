"""The ``instant-embedding`` command line: ``convert``, ``embed``, ``info``, ``update``,
``compact``, ``reorder`` and ``demo``.

Flag names follow node2vec and PecanPy (``--input``, ``--output``, ``--dimensions``,
``--workers``, ``--weighted``, ``--directed``, ``--delimiter``). Errors print one line
(``error: ...``) and exit with status 1 (2 for usage errors, 130 when interrupted); pass
``--verbose`` for the traceback. See ``docs/CLI.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["build_parser", "main"]

BUILTIN_GRAPHS = ("karate", "lesmis")


# ====================================================================== helpers
def _show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _note(args: argparse.Namespace, msg: str) -> None:
    if not args.quiet:
        print(msg, file=sys.stderr)


def _column(value: str | None) -> int | str | None:
    """A column given on the command line: an index if it is a number, else a name."""
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def _open_graph(spec: str, prefetch: bool = False) -> Any:
    """A graph file, or the name of a shipped example graph."""
    from . import datasets
    from .graph import Graph

    if os.path.exists(spec):
        if os.path.isfile(spec):
            from ._core import is_graph_file

            if not is_graph_file(spec):
                root = os.path.splitext(spec)[0]
                # An input named x.graph cannot be converted to x.graph.
                target = f"{root}-ie.graph" if spec.endswith(".graph") else f"{root}.graph"
                props = f"{root}.properties"
                what = (
                    f"is a WebGraph BV graph ({props} is beside it)"
                    if spec.endswith(".graph") and os.path.isfile(props)
                    else "is not an instant-embedding graph file"
                )
                raise ValueError(
                    f"{spec} {what}; convert it first: instant-embedding convert {spec} {target}"
                )
        return Graph.open(spec, prefetch=prefetch)
    if spec in BUILTIN_GRAPHS:
        return getattr(datasets, spec)()
    raise FileNotFoundError(
        f"{spec}: no such graph file (shipped examples: {', '.join(BUILTIN_GRAPHS)})"
    )


def _graph_label(spec: str) -> str:
    return spec if os.path.exists(spec) else f"{spec} (shipped example)"


def _parse_nodes(spec: str | None, graph: Any) -> Any:
    """``--nodes``: None/"all", a file with one id per line, or comma-separated ids."""
    if spec is None or spec == "all":
        return None
    if spec.startswith("@"):
        spec = spec[1:]
        if not os.path.isfile(spec):
            raise FileNotFoundError(f"{spec}: node list file not found")
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as f:
            tokens = [ln.strip() for ln in f]
        tokens = [t for t in tokens if t and not t.startswith("#")]
        where = spec
    else:
        tokens = [t.strip() for t in spec.split(",") if t.strip()]
        where = "--nodes"
    if not tokens:
        raise ValueError(f"{where}: no node ids given")
    if graph.id_kind == "utf8":
        return tokens
    ids = []
    for t in tokens:
        try:
            ids.append(int(t))
        except ValueError:
            raise ValueError(
                f"{where}: node {t!r} is not an integer, but this graph has integer node ids"
            ) from None
    return np.asarray(ids, dtype=np.int64)


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


# Methods of `Graph.reorder` (kernel: `reorder::Method::parse`).
REORDER_METHODS = ("communities", "bfs")


# ====================================================================== convert
def cmd_convert(args: argparse.Namespace) -> int:
    from .readers import check_output

    paths = list(args.paths or [])
    inputs = list(args.input or [])
    if args.output is not None:
        output = args.output
        inputs += paths
    else:
        if len(paths) < 1 or (len(paths) < 2 and not inputs):
            raise ValueError("convert needs INPUT... OUTPUT.graph (or --input/--output)")
        inputs += paths[:-1]
        output = paths[-1]
    if not inputs:
        raise ValueError("convert needs at least one input file")
    final_output = output
    if args.reorder:
        # Convert next to the output, then write the reordered file over the output; errors
        # about the output name the user's path, never the temporary one.
        check_output(final_output, inputs)
        output = f"{final_output}.unordered-{os.getpid()}.tmp"
    try:
        g, stats = _convert(args, inputs, output)
        if args.reorder:
            from ._core import DEFAULT_REORDER_ROUNDS
            from .graph import Graph, reorder_file

            st = reorder_file(
                g, final_output, args.reorder, DEFAULT_REORDER_ROUNDS, None, _show_progress(args)
            )
            del g
            g = Graph.open(final_output)
    finally:
        if args.reorder and os.path.exists(output):
            os.remove(output)
    secs = stats.get("seconds", 0.0)
    read = stats.get("edges_read")
    kind = "directed" if g.directed else "undirected"
    extra = ", weighted" if g.weighted else ""
    rate = f", {read / secs:,.0f} edges/s" if read and secs > 0 else ""
    _note(
        args,
        f"wrote {final_output}: {g.num_nodes:,} nodes, {g.num_edges:,} edges ({kind}{extra}, "
        f"ids {g.id_kind}) from {stats.get('format')} input in {secs:.2f} s{rate}",
    )
    if stats.get("columns"):
        _note(
            args,
            f"columns read: {' -> '.join(stats['columns'][:2])}"
            + (f", weights {stats['columns'][2]}" if len(stats["columns"]) > 2 else ""),
        )
    for h in stats.get("headers", []):
        _note(args, f"header line skipped: {h} (pass --no-header if it is an edge)")
    if args.reorder:
        _reorder_note(args, final_output, st)
    dropped = stats.get("self_loops_dropped")
    if dropped:
        _note(args, f"dropped {dropped:,} self-loops")
    return 0


def _convert(args: argparse.Namespace, inputs: list, output: str) -> tuple[Any, dict]:
    from .readers import convert_with_stats

    return convert_with_stats(
        inputs, output, progress=_show_progress(args), **_reading_options(args, "build")
    )


# Python parameters as the command line spells them: the library's messages name parameters
# (`header=False`, `weight_col`), the CLI's name flags.
_FLAG_VALUES = {
    ("header", "True"): "--header",
    ("header", "False"): "--no-header",
    ("weighted", "True"): "--weighted",
    ("weighted", "False"): "--unweighted",
    ("directed", "True"): "--directed",
    ("directed", "False"): "--undirected",
}


def cli_names(msg: str) -> str:
    """``msg`` with the library's parameter names replaced by command-line flags."""
    import re

    def value(m: re.Match[str]) -> str:
        name, val = m.group(1), m.group(2)
        if (name, val) in _FLAG_VALUES:
            return _FLAG_VALUES[(name, val)]
        flag = "--" + name.replace("_", "-")
        if not val:
            return flag
        v = val[1:-1] if val[:1] in "'\"" and len(val) > 1 else val
        # Plain words unquoted (--id-kind str); anything a shell could mangle stays quoted.
        return f"{flag} {v}" if v.replace("-", "").replace("_", "").isalnum() else f"{flag} {val}"

    names = "|".join(s["name"] for s in _reading_settings("build"))
    msg = re.sub(
        rf"\b({names})=('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[A-Za-z_][\w.]*|)",
        value,
        msg,
    )
    snake = "|".join(s["name"] for s in _reading_settings("build") if "_" in s["name"])
    return re.sub(
        rf"\b({snake})\b",
        lambda m: "--" + m.group(1).replace("_", "-"),
        msg,
    )


def _reorder_note(args: argparse.Namespace, output: str, st: dict) -> None:
    _note(
        args,
        f"reordered into {output}: {st['method']}, {st['groups']:,} groups, "
        f"{st['internal_arcs'] / max(st['num_arcs'], 1):.1%} of arcs inside a group, "
        f"{st['rounds']} sweeps; order {st['order_seconds']:.2f} s, "
        f"write {st['write_seconds']:.2f} s ({st['threads']} threads)",
    )


def cmd_reorder(args: argparse.Namespace) -> int:
    from .graph import Graph, reorder_file

    g = Graph.open(args.graph)
    st = reorder_file(g, args.output, args.method, args.rounds, args.threads, _show_progress(args))
    _reorder_note(args, args.output, st)
    return 0


# ====================================================================== update / compact


class _Commit:
    """Where an update's edges go, chunk by chunk as a file is read: added to the graph, or
    removed from it (an ``EdgeTarget`` of the readers)."""

    def __init__(self, graph: Any, remove: bool) -> None:
        self.graph, self.remove = graph, remove
        self.edges = self.existed = 0

    def add(self, src: Any, dst: Any, weights: Any) -> None:
        if self.remove:
            self.existed += self.graph.remove_edges(src, dst)
        else:
            self.graph.add_edges(src, dst, weights)
        self.edges += len(src)


def read_edge_file(path: str, graph: Any, args: argparse.Namespace, target: _Commit) -> None:
    """Reads an input file in any format ``convert`` reads into ``target``, with ids of
    ``graph``'s kind, its direction and (when adding) its weights.

    The formats whose row says ``updates`` (text, JSON, Matrix Market, adjacency lists,
    GraphML, Pajek, .bcsr, WebGraph) go through the kernel's readers, the same that
    ``convert`` uses (same rules, same notices), straight into edge arrays; a first line that
    could be a header or an edge is settled by the graph's own ids too. Parquet, Arrow, .npy
    and .mat stream their chunks into ``target`` through the facade's readers.
    """
    from . import _core
    from .readers import ReadOptions, detect_format, formats

    given = _reading_options(args, "parse")
    fmt = given["format"] if given["format"] != "auto" else detect_format(path)
    ReadOptions(**given).check_applies(fmt)
    weighted = graph.weighted and not target.remove
    if not weighted:
        given["weight_col"] = None
    id_kind = "str" if graph.id_kind == "utf8" else "int"
    opts = ReadOptions(
        **{**given, "format": fmt, "weighted": weighted, "directed": graph.directed},
        id_kind=id_kind,
    )
    info = formats()[fmt]
    if info.updates:  # the kernel reads it straight into the commit
        r = _core.read_edges([path], opts, graph._native)
        for h in r["headers"]:
            _note(args, f"header line skipped: {h} (pass --no-header if it is an edge)")
        target.add(r["src"], r["dst"], r["weights"])
    else:
        info.read([path], target, opts, False)


def cmd_update(args: argparse.Namespace) -> int:
    from .graph import Graph

    if not args.add and not args.remove and not args.remove_nodes:
        raise ValueError("nothing to do: give --add FILE, --remove FILE and/or --remove-nodes FILE")
    g = Graph.open(args.graph, writable=True, merge=args.merge)
    try:
        t0 = time.perf_counter()
        before = g.num_nodes, g.num_edges
        added = removed = existed = 0
        gone = [_read_node_ids(f, g.id_kind == "utf8") for f in args.remove_nodes or []]
        if gone:
            ids: list = [x for part in gone for x in part]
            n_gone = g.remove_nodes(np.array(ids, dtype=np.int64) if g.id_kind != "utf8" else ids)
            _note(
                args,
                f"{args.graph}: {n_gone:,} of {len(ids):,} nodes removed with their edges "
                f"({g.num_edges - before[1]:+,} edges; file rewritten, log emptied)",
            )
        if not args.add and not args.remove:
            return 0
        with g.batch():
            adding, removing = _Commit(g, remove=False), _Commit(g, remove=True)
            for f in args.add or []:
                read_edge_file(f, g, args, adding)
            for f in args.remove or []:
                read_edge_file(f, g, args, removing)
            added, removed, existed = adding.edges, removing.edges, removing.existed
        info = g.log_info() or {}
        _note(
            args,
            f"{args.graph}: {added:,} edges added, {existed:,} of {removed:,} removed "
            f"({g.num_nodes - before[0]:+,} nodes, {g.num_edges - before[1]:+,} edges) in one "
            f"commit ({info.get('commits', 0):,} in the log, "
            f"{_fmt_bytes(info.get('bytes', 0))}); {_fmt_seconds(time.perf_counter() - t0)}",
        )
    finally:
        g.close()
    return 0


def _read_node_ids(path: str, strings: bool) -> list:
    """Node ids, one a line (blank lines and lines starting with ``#`` skipped)."""
    out: list = []
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f, 1):
            x = line.strip()
            if not x or x.startswith("#"):
                continue
            if strings:
                out.append(x)
            else:
                try:
                    out.append(int(x))
                except ValueError:
                    raise ValueError(f"{path}:{k}: not an integer node id: {x!r}") from None
    return out


def cmd_compact(args: argparse.Namespace) -> int:
    from .graph import Graph

    g = Graph.open(args.graph, writable=True)
    try:
        info = g.log_info() or {}
        t0 = time.perf_counter()
        g.compact(threads=args.threads)
        _note(
            args,
            f"{args.graph}: folded {info.get('commits', 0):,} commits "
            f"({_fmt_bytes(info.get('bytes', 0))} of log) into a new file of "
            f"{_fmt_bytes(os.path.getsize(args.graph))} in "
            f"{_fmt_seconds(time.perf_counter() - t0)}",
        )
    finally:
        g.close()
    return 0


# ====================================================================== embed
def _model(args: argparse.Namespace) -> Any:
    """The model that the setting flags (``_add_setting_flags``) describe."""
    from .embedding import EmbeddingConfig, InstantEmbedding

    settings = {s["name"]: getattr(args, s["name"]) for s in EmbeddingConfig.settings()}
    return InstantEmbedding(**settings, threads=getattr(args, "threads", None))


def cmd_embed(args: argparse.Namespace) -> int:
    from .embedding import EmbeddingConfig
    from .export import format_from_path, write_embeddings

    graph_spec = args.graph if args.graph is not None else args.input
    if graph_spec is None:
        raise ValueError("embed needs a GRAPH (a .graph file, or karate / lesmis)")
    if args.graph is not None and args.input is not None and args.graph != args.input:
        raise ValueError("give the graph either as GRAPH or as --input, not both")
    fmt = args.format or format_from_path(args.output)
    if args.output == "-" and fmt != "w2v":
        raise ValueError("--output - writes word2vec text; use --format w2v or a file name")
    settings = {s["name"]: getattr(args, s["name"]) for s in EmbeddingConfig.settings()}
    g = _open_graph(graph_spec, prefetch=args.prefetch)
    model = _embedding_model(args, settings, g)
    nodes = _parse_nodes(args.nodes, g)
    t0 = time.perf_counter()
    target: Any = sys.stdout if args.output == "-" else args.output
    n = write_embeddings(
        model,
        g,
        nodes,
        target,
        format=fmt,
        batch_size=args.batch_size,
        progress=_show_progress(args),
    )
    secs = time.perf_counter() - t0
    if args.output != "-":
        rate = f", {n / secs:,.0f} nodes/s" if secs > 0 else ""
        _note(args, f"wrote {args.output}: {n:,} x {args.dim} ({fmt}) in {secs:.2f} s{rate}")
    return 0


def _embedding_model(args: argparse.Namespace, settings: dict[str, Any], g: Any) -> Any:
    """The model ``embed`` uses: read from ``--model FILE`` when it exists, else made from the
    setting flags, and fitted when compressed (then written to ``--model FILE``, if given)."""
    from .embedding import EmbeddingConfig, InstantEmbedding

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
        where = ""
        if args.model is not None:
            model.save(args.model)
            where = f", saved to {args.model}"
        _note(
            args,
            f"fitted the {model.wide_dim} -> {model.dim} map on {model.n_fit_nodes_:,} nodes "
            f"in {time.perf_counter() - t0:.2f} s{where}",
        )
    return model


# ====================================================================== info
def graph_info(g: Any, model: Any, *, sample: int = 50, seed: int = 0) -> dict[str, Any]:
    """Facts about a graph and a measured estimate of the cost of one node's embedding.

    The estimate embeds a deterministic sample of nodes with ``model`` (every setting counts:
    ``value``, ``normalize`` and ``smooth`` as well as the push's), each alone on one thread in
    one kernel call, and reports the median, 95th percentile and maximum of the work per node.
    """
    from . import _core
    from .embedding import InstantEmbedding

    n = g.num_nodes
    deg = g.degrees().astype(np.float64) if n else np.zeros(0)
    info: dict[str, Any] = {
        "path": g.path,
        "nodes": n,
        "edges": g.num_edges,
        "arcs": g.num_arcs,
        "directed": g.directed,
        "weighted": g.weighted,
        "id_kind": g.id_kind,
        "permuted": g.permuted,
        "file_bytes": os.path.getsize(g.path) if g.path else None,
        "log": g.log_info() if hasattr(g, "log_info") else None,
    }
    zero = int(np.count_nonzero(deg == 0))
    info["degree"] = {
        "kind": "out-degree" if g.directed else "degree",
        "min": int(deg.min()) if n else 0,
        "mean": float(deg.mean()) if n else 0.0,
        "median": float(np.median(deg)) if n else 0.0,
        "max": int(deg.max()) if n else 0,
        ("zero_out_degree" if g.directed else "isolated"): zero,
    }
    k = min(sample, n)
    est: dict[str, Any] = {"settings": model.config.to_dict(), "sample": k}
    if k:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(n, size=k, replace=False)).astype(np.uint32)
        model = InstantEmbedding(**model.get_params())
        if model.compressed:
            model.fit(g)  # its map, as embed --wide-dim fits it
        cost = _core.node_costs(g._native, idx, model.config, model._fitted_map())
        secs = cost["seconds"]
        for key, name in [
            ("support_nodes", "support"),
            ("seconds_per_node", "seconds"),
            ("touched_nodes", "touched"),
            ("edge_updates", "pushes"),
            ("workspace_bytes", "heap_bytes"),
        ]:
            v = cost[name].astype(np.float64)
            est[key] = {
                "median": float(np.percentile(v, 50)),
                "p95": float(np.percentile(v, 95)),
                "max": float(v.max()),
            }
        threads = _core.resolve_threads(None)
        est["threads"] = threads
        est["output_bytes_per_node"] = 4 * model.dim
        est["all_nodes_seconds"] = float(np.mean(secs)) * n / threads
        est["all_nodes_output_bytes"] = 4 * model.dim * n
    info["estimate"] = est
    return info


def cmd_info(args: argparse.Namespace) -> int:
    from .embedding import EmbeddingConfig

    g = _open_graph(args.graph)
    info = graph_info(g, _model(args), sample=args.sample)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    d = info["degree"]
    lines = [
        f"graph        {_graph_label(args.graph)}",
        f"nodes        {info['nodes']:,}",
        f"edges        {info['edges']:,} ({'directed' if info['directed'] else 'undirected'}"
        f"{', weighted' if info['weighted'] else ''}; {info['arcs']:,} stored arcs)",
        f"node ids     {info['id_kind']}"
        f"{' (stored in an order other than id order)' if info['permuted'] else ''}",
    ]
    if info["file_bytes"] is not None:
        lines.append(f"file size    {_fmt_bytes(info['file_bytes'])}")
    log = info.get("log")
    if log is not None:
        lines.append(
            f"change log   {log['commits']:,} commits: {log['adds']:,} adds, "
            f"{log['removes']:,} removes; {log['new_nodes']:,} new nodes, "
            f"{log['changed_nodes']:,} rows in the log; {_fmt_bytes(log['bytes'])} "
            f"(merge={log['merge']}; `compact` folds it into the file)"
        )
    zero_key = "zero_out_degree" if "zero_out_degree" in d else "isolated"
    lines.append(
        f"{d['kind']:<12} min {d['min']:,}  mean {d['mean']:,.2f}  median {d['median']:,.1f}  "
        f"max {d['max']:,}  {zero_key.replace('_', ' ')} {d[zero_key]:,}"
    )
    e = info["estimate"]
    if e["sample"]:
        lines.append("")
        changed = {k: v for k, v in e["settings"].items() if v != EmbeddingConfig().to_dict()[k]}
        shown = (
            ", ".join(
                f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in changed.items()
            )
            or "the default settings"
        )
        lines.append(
            f"per-node cost with {shown} "
            f"(measured on {e['sample']} sampled nodes, 1 thread; median / p95 / max):"
        )

        def row(label: str, q: dict[str, float], fmt: Any) -> str:
            return f"  {label:<24} {fmt(q['median'])} / {fmt(q['p95'])} / {fmt(q['max'])}"

        def num(x: float) -> str:
            return f"{x:,.0f}"

        lines.append(row("time", e["seconds_per_node"], _fmt_seconds))
        lines.append(row("nodes with p > 0", e["support_nodes"], num))
        lines.append(row("touched nodes", e["touched_nodes"], num))
        lines.append(row("edge updates", e["edge_updates"], num))
        lines.append(row("workspace", e["workspace_bytes"], _fmt_bytes))
        lines.append(f"  {'output per node':<24} {_fmt_bytes(e['output_bytes_per_node'])}")
        lines.append(
            f"all {info['nodes']:,} nodes: about {_fmt_seconds(e['all_nodes_seconds'])} on "
            f"{e['threads']} thread(s), {_fmt_bytes(e['all_nodes_output_bytes'])} of output"
        )
    print("\n".join(lines))
    return 0


# ====================================================================== demo
def demo_result(model: Any = None) -> dict[str, Any]:
    """Embeds the karate club graph with ``model`` (default ``InstantEmbedding(128)``) and
    measures how well the embedding separates the two clubs."""
    from .datasets import karate, karate_labels
    from .embedding import InstantEmbedding

    g = karate()
    labels = karate_labels()
    model = InstantEmbedding(128) if model is None else model
    if model.compressed:
        model.fit(g)
    t0 = time.perf_counter()
    emb = model.embed(g, g.nodes)
    secs = time.perf_counter() - t0
    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    sim = unit @ unit.T
    neighbours = {}
    for v in (0, 33):
        order = [int(u) for u in np.argsort(-sim[v], kind="stable") if u != v][:3]
        neighbours[v] = [(u, float(sim[v, u])) for u in order]
    # 2-means on the unit vectors (cosine), started at the two leaders' embeddings.
    centroids = unit[[0, 33]].copy()
    assign = np.zeros(len(unit), dtype=np.int64)
    for _ in range(20):
        new = np.argmax(unit @ centroids.T, axis=1)
        if np.array_equal(new, assign) and _ > 0:
            break
        assign = new
        for c in (0, 1):
            if np.any(assign == c):
                m = unit[assign == c].mean(axis=0)
                centroids[c] = m / max(float(np.linalg.norm(m)), 1e-12)
    correct = int(np.count_nonzero(assign == labels))
    return {
        "shape": emb.shape,
        "seconds": secs,
        "neighbours": neighbours,
        "correct": correct,
        "total": len(labels),
        "nodes": g.num_nodes,
        "edges": g.num_edges,
    }


def cmd_demo(args: argparse.Namespace) -> int:
    r = demo_result(_model(args))
    print(
        f"Zachary's karate club: {r['nodes']} members, {r['edges']} friendships "
        "(shipped with the package)"
    )
    print(
        f"InstantEmbedding(dim={args.dim}): embedded all {r['shape'][0]} nodes -> array of "
        f"shape {r['shape']} in {r['seconds'] * 1e3:.1f} ms"
    )
    names = {0: "node 0 (Mr. Hi, instructor)", 33: "node 33 (John A., president)"}
    for v, nb in r["neighbours"].items():
        listed = ", ".join(f"{u} ({s:.2f})" for u, s in nb)
        print(f"most cosine-similar to {names[v]}: {listed}")
    print(
        f"2-means on the embeddings, seeded at nodes 0 and 33, puts {r['correct']} of "
        f"{r['total']} members in the club they joined after the split"
    )
    print(
        "next: instant-embedding convert edges.txt g.graph && "
        "instant-embedding embed g.graph -o emb.npy"
    )
    return 0


# ====================================================================== parser
# Extra spellings of the embedding settings' flags (node2vec / PecanPy users' names).
_SETTING_ALIASES = {"dim": ("-d", "--dimensions")}
_SETTING_METAVARS = {"smooth": "K"}


def _add_setting_flags(
    parser: argparse.ArgumentParser, defaults: dict[str, Any] | None = None
) -> None:
    """One flag per embedding setting, with the kernel's defaults (or ``defaults``), choices
    and help."""
    from .embedding import EmbeddingConfig

    types: dict[str, Any] = {"int": int, "float": float, "str": str}
    for s in EmbeddingConfig.settings():
        name = s["name"]
        flag = "--" + name.replace("_", "-")
        aliases = _SETTING_ALIASES.get(name, ())
        flags = [a for a in aliases if len(a) == 2] + [flag] + [a for a in aliases if len(a) > 2]
        default = (defaults or {}).get(name, s["default"])
        shown = f"{default:g}" if isinstance(default, float) else default
        parser.add_argument(
            *flags,
            dest=name,
            type=types[s["type"]],
            default=default,
            choices=s["choices"],
            metavar=_SETTING_METAVARS.get(name),
            help=f"{s['help']} (default: {shown})",
        )


# Command-line spellings of reading options beyond --NAME (and --no-NAME for flags).
_READ_ALIASES = {"delimiter": ("--sep",)}
_READ_NEGATIVE = {"directed": "--undirected", "weighted": "--unweighted"}


def _reading_settings(stage: str) -> list[Any]:
    """The reading options a command takes, from the kernel's table: ``"build"`` (convert)
    takes every option some format uses, ``"parse"`` (update) those that say how records are
    read (the graph settles the rest)."""
    from ._core import ReadOptions

    return [
        s
        for s in ReadOptions.settings()
        if s["formats"] and (stage == "build" or s["stage"] == "parse")
    ]


def _reading_options(args: argparse.Namespace, stage: str) -> dict[str, Any]:
    """The reading options given on the command line, as ``ReadOptions`` keywords."""
    out = {s["name"]: getattr(args, s["name"]) for s in _reading_settings(stage)}
    return {k: v for k, v in out.items() if v is not None}


def _add_reading_flags(p: argparse.ArgumentParser, stage: str) -> None:
    """One flag per reading option of ``stage`` (see :func:`_reading_settings`), with the
    kernel's choices, defaults and help."""
    for s in _reading_settings(stage):
        name = s["name"]
        flag = "--" + name.replace("_", "-")
        text = s["help"].replace("%", "%%")
        if s["default"]:
            text += f" (default: {s['default']})".replace("%", "%%")
        if s["type"] == "flag":
            g = p.add_mutually_exclusive_group()
            g.add_argument(flag, dest=name, action="store_const", const=True, help=text)
            g.add_argument(
                _READ_NEGATIVE.get(name, f"--no-{name.replace('_', '-')}"),
                dest=name,
                action="store_const",
                const=False,
                help=f"the opposite of {flag}",
            )
            continue
        p.add_argument(
            flag,
            *_READ_ALIASES.get(name, ()),
            dest=name,
            type=_column if s["type"] == "column" else str,
            default=s["default"] or None,
            choices=s["choices"],
            metavar=s["metavar"] or None,
            help=text,
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``instant-embedding`` (exposed for documentation and tests)."""
    from . import __version__
    from ._core import DEFAULT_REORDER_ROUNDS
    from .export import FORMATS as OUT_FORMATS

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

    # ---- convert
    c = sub.add_parser(
        "convert",
        parents=[common],
        help="convert an edge list / CSV / JSON / Parquet / .mat / .bcsr into a graph file",
        description="Convert input files into an instant-embedding graph file (written "
        "atomically; bounded memory for text and Parquet input).",
        epilog="Examples:\n"
        "  instant-embedding convert soc-Slashdot0902.txt.gz slashdot.graph --directed\n"
        "  instant-embedding convert edges.csv g.graph --src-col from --dst-col to "
        "--weight-col w\n"
        "  instant-embedding convert blogcatalog.mat blog.graph --var network\n"
        "  instant-embedding convert shards/ g.graph   # directory of Parquet files\n"
        "  instant-embedding convert cnr-2000.graph cnr.ie.graph   # WebGraph BV graph",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument(
        "paths",
        nargs="*",
        metavar="INPUT... OUTPUT",
        help="input file(s) or Parquet directory, then the output .graph file",
    )
    c.add_argument(
        "-i",
        "--input",
        action="append",
        metavar="PATH",
        help="input file (repeatable; alternative to positional INPUT)",
    )
    c.add_argument("-o", "--output", metavar="GRAPH", help="output graph file")
    _add_reading_flags(c, "build")
    c.add_argument(
        "--reorder",
        choices=REORDER_METHODS,
        default=None,
        help="renumber the nodes for locality after converting (same embeddings, faster "
        "queries on large graphs; see the reorder command)",
    )
    c.set_defaults(func=cmd_convert)

    # ---- reorder
    r = sub.add_parser(
        "reorder",
        parents=[common],
        help="renumber a graph file's nodes for locality (embeddings unchanged)",
        description="Write a copy of GRAPH whose internal node order puts the nodes of one "
        "neighbourhood next to each other, so that a query reads fewer cache lines and pages. "
        "Embeddings, PPR vectors and node ids stay bit-identical.",
    )
    r.add_argument("graph", metavar="GRAPH", help="input graph file")
    r.add_argument("output", metavar="OUTPUT", help="output graph file (written atomically)")
    r.add_argument(
        "--method",
        choices=REORDER_METHODS,
        default="communities",
        help="communities (label propagation, default) or bfs (one pass, weaker)",
    )
    r.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_REORDER_ROUNDS,
        help=f"label-propagation sweeps at most (default: {DEFAULT_REORDER_ROUNDS})",
    )
    r.add_argument("-t", "--threads", type=int, default=None, help="threads (default: all CPUs)")
    r.set_defaults(func=cmd_reorder)

    # ---- embed
    e = sub.add_parser(
        "embed",
        parents=[common],
        help="embed nodes of a graph and write npy / npz / parquet / word2vec text",
        description="Embed all nodes, or only the ones you list, and write them with their "
        "ids. Results are bit-identical for any thread count.",
        epilog="Examples:\n"
        "  instant-embedding embed g.graph -o emb.npy\n"
        "  instant-embedding embed g.graph --nodes alice,bob -o emb.parquet\n"
        "  instant-embedding embed karate --dimensions 64 -o -   # word2vec text to stdout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument(
        "graph", nargs="?", metavar="GRAPH", help="graph file, or a shipped example: karate, lesmis"
    )
    e.add_argument("-i", "--input", metavar="GRAPH", help="alias of GRAPH")
    e.add_argument(
        "--nodes",
        metavar="FILE|IDS|all",
        default="all",
        help="nodes to embed: 'all' (default), a file with one id per line, or comma-separated ids",
    )
    _add_setting_flags(e)
    e.add_argument(
        "--model",
        metavar="FILE",
        default=None,
        help="compressed model file: used when FILE exists (its settings apply), else fitted "
        "from the flags (--wide-dim) and written there, so later runs and other graph "
        "versions share the map (without --model, --wide-dim fits the map at each run)",
    )
    e.add_argument(
        "--threads",
        "--workers",
        dest="threads",
        type=int,
        default=None,
        help="worker threads (default: all CPUs)",
    )
    e.add_argument(
        "--prefetch",
        action="store_true",
        help="send read-ahead hints while pushing: faster for a graph file that is not in the "
        "page cache (a few nodes of a large graph on disk), slower for one that is",
    )
    e.add_argument("--batch-size", type=int, default=None, help="nodes per written batch")
    e.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="output file (.npy, .npz, .parquet, .w2v/.emb/.txt[.gz]) or - for "
        "word2vec text on stdout",
    )
    e.add_argument(
        "--format",
        choices=OUT_FORMATS,
        default=None,
        help="output format (default: from the extension)",
    )
    e.set_defaults(func=cmd_embed)

    # ---- info
    i = sub.add_parser(
        "info",
        parents=[common],
        help="show graph facts and the measured cost of one node's embedding",
        description="Nodes, edges, flags, degree statistics, file size, and the work and "
        "memory one node's embedding needs at the given eps (measured on a deterministic "
        "sample of nodes).",
    )
    i.add_argument("graph", metavar="GRAPH", help="graph file, or karate / lesmis")
    _add_setting_flags(i)
    i.add_argument(
        "--sample",
        type=int,
        default=50,
        help="number of sampled nodes for the estimate (default: 50; 0 skips it)",
    )
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=cmd_info)

    # ---- update
    u = sub.add_parser(
        "update",
        parents=[common],
        help="add and remove edges of a graph file in place (one durable commit)",
        description="Add the edges of --add files and remove those of --remove files, in "
        "one atomic, durable commit to GRAPH's change log (GRAPH.live). Unknown ids become "
        "new nodes. Files are read like `convert` input (any format). Embeddings of the "
        "result are bit-identical to those of a graph rebuilt from the final edge list. "
        "See docs/LIVE.md.",
    )
    u.add_argument("graph", metavar="GRAPH", help="graph file")
    u.add_argument("--add", action="append", metavar="FILE", help="edges to add (repeatable)")
    u.add_argument("--remove", action="append", metavar="FILE", help="edges to remove (repeatable)")
    u.add_argument(
        "--remove-nodes",
        action="append",
        metavar="FILE",
        help="node ids to remove with all their edges, one a line (repeatable); done first, "
        "by rewriting the file without them (the ids are then gone from the file and the log)",
    )
    _add_reading_flags(u, "parse")
    u.add_argument(
        "--merge",
        choices=("sum", "max"),
        default=None,
        help="weights of an edge added again: sum or max (fixed when the log is created; "
        "default sum)",
    )
    u.set_defaults(func=cmd_update)

    # ---- compact
    k = sub.add_parser(
        "compact",
        parents=[common],
        help="fold a graph file's change log into a new file (atomically)",
        description="Write GRAPH with its change log (GRAPH.live) folded in, replace it "
        "atomically and start an empty log. The graph does not change.",
    )
    k.add_argument("graph", metavar="GRAPH", help="graph file")
    k.add_argument("-t", "--threads", type=int, default=None, help="threads (default: all CPUs)")
    k.set_defaults(func=cmd_compact)

    # ---- demo
    m = sub.add_parser(
        "demo",
        parents=[common],
        help="embed the shipped karate club graph and show what the embedding captures",
    )
    _add_setting_flags(m, defaults={"dim": 128})  # a small graph: 128 dimensions do
    m.set_defaults(func=cmd_demo)
    return p


def _setup_logging(args: argparse.Namespace) -> None:
    """Route the package's log records to stderr (progress lines when tqdm is missing)."""
    import logging

    logger = logging.getLogger("instant_embedding")
    if args.quiet or logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    logger.propagate = False


def _one_line(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    if isinstance(e, KeyError) and not hasattr(e, "__module__"):  # pragma: no cover
        msg = str(e.args[0]) if e.args else msg
    return " ".join(msg.split("\n"))


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
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - the CLI reports every error in one line
        if args.verbose:
            raise
        print(f"error: {cli_names(_one_line(e))}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
