//! The `instant-embedding` command's subcommands and flags (docs/CLI.md), as one table: the
//! Python command builds its parser from [`COMMANDS`]. The flags of the embedding settings and
//! of the reading options are not written here one by one: a [`Flag::Settings`] or
//! [`Flag::Reading`] entry stands for the group that their tables
//! ([`SETTINGS`](crate::embed::config::SETTINGS),
//! [`READ_SETTINGS`](crate::io::options::READ_SETTINGS)) generate, spelled by [`flag_names`]
//! and [`flag`] (which error messages use too, to name flags rather than parameters).

use crate::embed::config::SettingValue;
use crate::graph::reorder;
use crate::io::options::{Stage, MERGES};

/// A subcommand: its one-line help, the description above its flags and its examples.
#[derive(Clone, Copy, Debug)]
pub struct Command {
    pub name: &'static str,
    pub help: &'static str,
    /// Empty: none.
    pub description: &'static str,
    /// Command lines after `instant-embedding `, with a `# comment` where useful.
    pub examples: &'static [&'static str],
    pub flags: &'static [Flag],
}

#[derive(Clone, Copy, Debug)]
pub enum Flag {
    One(Arg),
    /// One flag per embedding setting, with the kernel's defaults but these.
    Settings(&'static [(&'static str, SettingValue)]),
    /// One flag per reading option of a stage: every option for `Build` (convert), the ones
    /// that say how records are read for `Parse` (update; the graph settles the rest).
    Reading(Stage),
}

/// A flag (names starting with `-`) or a positional argument.
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    pub names: &'static [&'static str],
    /// What the help calls its value; empty: the default (the flag's name).
    pub metavar: &'static str,
    pub help: &'static str,
    pub kind: ArgKind,
}

#[derive(Clone, Copy, Debug)]
pub enum ArgKind {
    /// A text value (a path), with its default (None: absent).
    Text(Option<&'static str>),
    /// A text value the command cannot do without.
    Required,
    /// A positional argument that may be left out.
    Optional,
    /// A positional argument taking any number of values.
    Many,
    /// A flag given any number of times, its values in a list.
    Repeated,
    /// An integer, with its default (None: absent).
    Int(Option<u64>),
    /// One of some names, with its default (None: absent).
    Choice(&'static [&'static str], Option<&'static str>),
    /// A flag without a value: true when given.
    Switch,
}

const fn arg(names: &'static [&'static str], metavar: &'static str, help: &'static str) -> Arg {
    Arg {
        names,
        metavar,
        help,
        kind: ArgKind::Text(None),
    }
}

const fn with(a: Arg, kind: ArgKind) -> Flag {
    Flag::One(Arg { kind, ..a })
}

/// Spellings of the generated flags beyond `--NAME`: node2vec and PecanPy users' names of the
/// dimension, pandas' name of the delimiter.
const ALIASES: &[(&str, &[&str])] = &[("dim", &["-d", "--dimensions"]), ("delimiter", &["--sep"])];
/// The flags that set a reading flag to false, where `--no-NAME` does not read well.
const NEGATIVES: &[(&str, &str)] = &[("directed", "--undirected"), ("weighted", "--unweighted")];
/// What `--help` calls the value of a setting whose name does not say it.
const METAVARS: &[(&str, &str)] = &[("smooth", "K")];

fn lookup<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table.iter().find(|e| e.0 == name).map(|e| e.1)
}

/// The flag that sets the setting or reading option `name` to `value` (false: the negative of
/// a reading flag): `--weight-col`, `--no-header`, `--undirected`.
pub fn flag(name: &str, value: bool) -> String {
    let flag = format!("--{}", name.replace('_', "-"));
    match lookup(NEGATIVES, name) {
        _ if value => flag,
        Some(negative) => negative.to_string(),
        None => format!("--no-{}", &flag[2..]),
    }
}

/// Every flag of the setting or reading option `name`: short aliases, `--NAME`, long aliases.
pub fn flag_names(name: &str) -> Vec<String> {
    let aliases = lookup(ALIASES, name).unwrap_or(&[]);
    let (short, long): (Vec<&str>, Vec<&str>) = aliases.iter().partition(|a| a.len() == 2);
    let mut names: Vec<String> = short.into_iter().map(String::from).collect();
    names.push(flag(name, true));
    names.extend(long.into_iter().map(String::from));
    names
}

/// What `--help` calls the value of the setting `name`; None: its flag's name.
pub fn metavar(name: &str) -> Option<&'static str> {
    lookup(METAVARS, name)
}

const GRAPH: Flag = Flag::One(arg(&["graph"], "GRAPH", "graph file"));
const THREADS: Flag = with(
    arg(
        &["-t", "--threads", "--workers"],
        "",
        "worker threads (default: all CPUs)",
    ),
    ArgKind::Int(None),
);

pub const COMMANDS: &[Command] = &[
    Command {
        name: "convert",
        help: "convert an edge list / CSV / JSON / Parquet / .mat / .bcsr into a graph file",
        description: "Convert input files into an instant-embedding graph file (written \
            atomically; bounded memory for text and Parquet input).",
        examples: &[
            "convert soc-Slashdot0902.txt.gz slashdot.graph --directed",
            "convert edges.csv g.graph --src-col from --dst-col to --weight-col w",
            "convert blogcatalog.mat blog.graph --var network",
            "convert shards/ g.graph   # directory of Parquet files",
            "convert cnr-2000.graph cnr.ie.graph   # WebGraph BV graph",
        ],
        flags: &[
            with(
                arg(
                    &["paths"],
                    "INPUT... OUTPUT",
                    "input file(s) or Parquet directory, then the output .graph file",
                ),
                ArgKind::Many,
            ),
            with(
                arg(
                    &["-i", "--input"],
                    "PATH",
                    "input file (repeatable; alternative to positional INPUT)",
                ),
                ArgKind::Repeated,
            ),
            Flag::One(arg(&["-o", "--output"], "GRAPH", "output graph file")),
            Flag::Reading(Stage::Build),
            with(
                arg(
                    &["--reorder"],
                    "",
                    "renumber the nodes for locality after converting (same embeddings, \
                     faster queries on large graphs; see the reorder command)",
                ),
                ArgKind::Choice(reorder::Method::NAMES, None),
            ),
        ],
    },
    Command {
        name: "reorder",
        help: "renumber a graph file's nodes for locality (embeddings unchanged)",
        description: "Write a copy of GRAPH whose internal node order puts the nodes of one \
            neighbourhood next to each other, so that a query reads fewer cache lines and \
            pages. Embeddings, PPR vectors and node ids stay bit-identical.",
        examples: &[],
        flags: &[
            GRAPH,
            Flag::One(arg(
                &["output"],
                "OUTPUT",
                "output graph file (written atomically)",
            )),
            with(
                arg(
                    &["--method"],
                    "",
                    "communities (label propagation, default) or bfs (one pass, weaker)",
                ),
                ArgKind::Choice(reorder::Method::NAMES, Some("communities")),
            ),
            with(
                arg(
                    &["--rounds"],
                    "",
                    "label-propagation sweeps at most (default: %(default)s)",
                ),
                ArgKind::Int(Some(reorder::DEFAULT_ROUNDS as u64)),
            ),
            THREADS,
        ],
    },
    Command {
        name: "embed",
        help: "embed nodes of a graph and write npy / npz / parquet / word2vec text",
        description: "Embed all nodes, or only the ones you list, and write them with their \
            ids. Results are bit-identical for any thread count.",
        examples: &[
            "embed g.graph -o emb.npy",
            "embed g.graph --nodes alice,bob -o emb.parquet",
            "embed karate --dimensions 64 -o -   # word2vec text to stdout",
        ],
        flags: &[
            with(
                arg(
                    &["graph"],
                    "GRAPH",
                    "graph file, or a shipped example: karate, lesmis",
                ),
                ArgKind::Optional,
            ),
            Flag::One(arg(&["-i", "--input"], "GRAPH", "alias of GRAPH")),
            with(
                arg(
                    &["--nodes"],
                    "FILE|IDS|all",
                    "nodes to embed: 'all' (default), a file with one id per line, or \
                     comma-separated ids",
                ),
                ArgKind::Text(Some("all")),
            ),
            Flag::Settings(&[]),
            Flag::One(arg(
                &["--model"],
                "FILE",
                "compressed model file: used when FILE exists (its settings apply), else \
                 fitted from the flags (--wide-dim) and written there, so later runs and other \
                 graph versions share the map (without --model, --wide-dim fits the map at \
                 each run)",
            )),
            THREADS,
            with(
                arg(
                    &["--prefetch"],
                    "",
                    "send read-ahead hints while pushing: faster for a graph file that is not \
                     in the page cache (a few nodes of a large graph on disk), up to 2x slower \
                     for a small one that is",
                ),
                ArgKind::Switch,
            ),
            with(
                arg(&["--batch-size"], "", "nodes per written batch"),
                ArgKind::Int(None),
            ),
            with(
                arg(
                    &["-o", "--output"],
                    "FILE",
                    "output file (.npy, .npz, .parquet, .w2v/.emb/.txt[.gz]) or - for \
                     word2vec text on stdout",
                ),
                ArgKind::Required,
            ),
            with(
                arg(
                    &["--format"],
                    "",
                    "output format (default: from the extension)",
                ),
                ArgKind::Choice(&crate::output::FORMATS, None),
            ),
        ],
    },
    Command {
        name: "info",
        help: "show graph facts and the measured cost of one node's embedding",
        description: "Nodes, edges, flags, degree statistics, file size, and the work and \
            memory one node's embedding needs with the given settings (measured on a \
            deterministic sample of nodes).",
        examples: &[],
        flags: &[
            Flag::One(arg(&["graph"], "GRAPH", "graph file, or karate / lesmis")),
            Flag::Settings(&[]),
            with(
                arg(
                    &["--sample"],
                    "",
                    "number of sampled nodes for the estimate (default: 50; 0 skips it)",
                ),
                ArgKind::Int(Some(50)),
            ),
            with(arg(&["--json"], "", "print JSON"), ArgKind::Switch),
        ],
    },
    Command {
        name: "update",
        help: "add and remove edges of a graph file in place (one durable commit)",
        description: "Add the edges of --add files and remove those of --remove files, in \
            one atomic, durable commit to GRAPH's change log (GRAPH.live). Unknown ids become \
            new nodes. Files are read like `convert` input (any format). Embeddings of the \
            result are bit-identical to those of a graph rebuilt from the final edge list. \
            See docs/LIVE.md.",
        examples: &[],
        flags: &[
            GRAPH,
            with(
                arg(&["--add"], "FILE", "edges to add (repeatable)"),
                ArgKind::Repeated,
            ),
            with(
                arg(&["--remove"], "FILE", "edges to remove (repeatable)"),
                ArgKind::Repeated,
            ),
            with(
                arg(
                    &["--remove-nodes"],
                    "FILE",
                    "node ids to remove with all their edges, one a line (repeatable); done \
                     first, by rewriting the file without them (the ids are then gone from the \
                     file and the log)",
                ),
                ArgKind::Repeated,
            ),
            Flag::Reading(Stage::Parse),
            with(
                arg(
                    &["--merge"],
                    "",
                    "weights of an edge added again: sum or max (fixed when the log is \
                     created; default sum)",
                ),
                ArgKind::Choice(MERGES, None),
            ),
        ],
    },
    Command {
        name: "compact",
        help: "fold a graph file's change log into a new file (atomically)",
        description: "Write GRAPH with its change log (GRAPH.live) folded in, replace it \
            atomically and start an empty log. The graph does not change.",
        examples: &[],
        flags: &[GRAPH, THREADS],
    },
    Command {
        name: "demo",
        help: "embed the shipped karate club graph and show what the embedding captures",
        description: "",
        examples: &[],
        // a small graph: 128 dimensions do
        flags: &[Flag::Settings(&[("dim", SettingValue::Int(128))])],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_within_a_command_and_kinds_fit_names() {
        for c in COMMANDS {
            let mut names: Vec<&str> = c
                .flags
                .iter()
                .filter_map(|f| match f {
                    Flag::One(a) => Some(a.names),
                    _ => None,
                })
                .flatten()
                .copied()
                .collect();
            let n = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), n, "{}: a flag name twice", c.name);
            for f in c.flags {
                if let Flag::One(a) = f {
                    let positional = !a.names[0].starts_with('-');
                    let kind_is_positional = matches!(a.kind, ArgKind::Optional | ArgKind::Many);
                    assert!(
                        positional || !kind_is_positional,
                        "{}: {:?}",
                        c.name,
                        a.names
                    );
                    assert!(
                        !positional || a.names.len() == 1,
                        "{}: {:?}",
                        c.name,
                        a.names
                    );
                }
            }
        }
    }

    #[test]
    fn flags_are_spelled_for_the_command_line() {
        assert_eq!(flag("weight_col", true), "--weight-col");
        assert_eq!(flag("header", false), "--no-header");
        assert_eq!(flag("weighted", false), "--unweighted");
        assert_eq!(flag_names("dim"), ["-d", "--dim", "--dimensions"]);
        assert_eq!(flag_names("delimiter"), ["--delimiter", "--sep"]);
        assert_eq!(flag_names("max_touched"), ["--max-touched"]);
        assert_eq!((metavar("smooth"), metavar("dim")), (Some("K"), None));
    }

    #[test]
    fn choices_are_names_the_kernel_reads() {
        for name in reorder::Method::NAMES {
            reorder::Method::parse(name).unwrap();
        }
        let mut o = crate::io::options::ReadOptions::default();
        for name in MERGES {
            let merge = crate::io::options::ReadValue::Text(name.to_string());
            o.set("merge", merge).unwrap();
        }
    }
}
