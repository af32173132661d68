//! Edge sources: the input formats, recognised by content (`sniff`) and read into an
//! [`source::EdgeSink`] (the out-of-core builder, or the buffer `update` applies).
//!
//! [`FORMATS`] is the one table of input formats: its rows give detection (magic, extensions),
//! the options each format uses, the command line's `--format` choices and the format table of
//! docs/CLI.md. A format the kernel parses is a source module, its row here and its arm in
//! [`convert`] and [`read_edges`]; one that a library parses (Arrow, scipy) is read by the
//! Python facade, which looks the row up by name.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::graph::csr::Graph;
use crate::graph::external::{BuildStats, IdMode, ProgressFn};

pub mod adjlist;
pub mod bcsr;
pub mod graphml;
pub mod ids;
pub mod input;
pub mod json;
pub mod mat;
pub mod mtx;
pub mod options;
pub mod pajek;
pub mod sniff;
pub mod source;
pub mod text;
pub mod webgraph;

use options::ReadOptions;
use source::{BufferedIds, EdgeBuffer};

/// One input format.
#[derive(Clone, Copy, Debug)]
pub struct Format {
    /// The `format=` value (`--format`).
    pub name: &'static str,
    /// Lower-case file name endings, tried after the content (text formats also under a
    /// compression suffix, see `compressed`).
    pub extensions: &'static [&'static str],
    /// The bytes a file of this format starts with (before any decompression); empty for
    /// formats recognised by their decompressed content ([`sniff`]) or their name.
    pub magic: &'static [u8],
    /// Whether the kernel parses it ([`convert`]); otherwise the Python facade reads it with the
    /// library that parses it.
    pub native: bool,
    /// Reading options it uses beyond those every format takes (see `options::READ_SETTINGS`):
    /// a kernel-parsed format declares them in its module, beside the code that uses them.
    pub options: &'static [&'static str],
    /// Several input files are read as one graph.
    pub several: bool,
    /// gzip/bzip2/zstd/xz files of it are read.
    pub compressed: bool,
    /// A directory (of shards) is an input of it.
    pub directories: bool,
    /// `update` reads it straight into its commit ([`read_edges`]).
    pub updates: bool,
    /// Its row in the format table of docs/CLI.md: the files it is, then notes.
    pub files: &'static str,
    pub notes: &'static str,
}

/// The options of the tables the facade reads (Parquet, Arrow).
const TABLE_OPTIONS: &[&str] = &["weighted", "src_col", "dst_col", "weight_col", "id_kind"];

const fn text(
    name: &'static str,
    extensions: &'static [&'static str],
    files: &'static str,
    notes: &'static str,
) -> Format {
    Format {
        name,
        extensions,
        magic: b"",
        native: true,
        options: text::OPTIONS,
        several: true,
        compressed: true,
        directories: false,
        updates: true,
        files,
        notes,
    }
}

/// Every input format, in the order users see them.
pub const FORMATS: &[Format] = &[
    text(
        "edgelist",
        &[".txt", ".edges", ".edgelist", ".el", ".dat"],
        "`.txt`, `.edges`, anything else",
        "text, one edge per line: `src dst [weight]`",
    ),
    text(
        "csv",
        &[".csv"],
        "`.csv`",
        "comma-separated text; fields may be quoted with `\"`",
    ),
    text(
        "tsv",
        &[".tsv", ".tab"],
        "`.tsv`, `.tab`",
        "TAB-separated text",
    ),
    Format {
        name: "json",
        extensions: &[".json", ".jsonl", ".ndjson"],
        magic: b"",
        native: true,
        options: json::OPTIONS,
        several: true,
        compressed: true,
        directories: false,
        updates: true,
        files: "`.json`, `.jsonl`, `.ndjson`, or `{`/`[` first",
        notes: "networkx/D3 node-link JSON, JSON Lines edge objects, or an array of edges. \
                See [JSON](#json)",
    },
    Format {
        name: "parquet",
        extensions: &[".parquet", ".pq"],
        magic: b"PAR1",
        native: false,
        options: TABLE_OPTIONS,
        several: true,
        compressed: false,
        directories: true,
        updates: false,
        files: "`.parquet`, `.pq`, directories",
        notes: "streamed by record batch; never loads all edges",
    },
    Format {
        name: "arrow",
        extensions: &[".arrow", ".feather", ".ipc", ".arrows"],
        magic: b"ARROW1",
        native: false,
        options: TABLE_OPTIONS,
        several: true,
        compressed: false,
        directories: true,
        updates: false,
        files: "`.arrow`, `.feather`, `.ipc`, `.arrows`",
        notes: "Arrow IPC file (Feather v2), streamed by batch; an IPC stream (pyarrow \
                `RecordBatchStreamWriter`, Polars `write_ipc_stream`) is loaded whole",
    },
    Format {
        name: "mtx",
        extensions: &[".mtx", ".mm"],
        magic: b"",
        native: true,
        options: mtx::OPTIONS,
        several: false,
        compressed: true,
        directories: false,
        updates: true,
        files: "`.mtx`, `.mm`, or a `%%MatrixMarket` banner",
        notes: "Matrix Market coordinate (SuiteSparse, Network Repository, \
                `scipy.io.mmwrite`). See [Matrix Market](#matrix-market)",
    },
    Format {
        name: "graphml",
        extensions: &[".graphml"],
        magic: b"",
        native: true,
        options: graphml::OPTIONS,
        several: false,
        compressed: true,
        directories: false,
        updates: true,
        files: "`.graphml`, or an XML file whose root is `<graphml>`",
        notes: "GraphML (networkx, igraph, Gephi, yEd), streamed. See [GraphML](#graphml)",
    },
    Format {
        name: "pajek",
        extensions: &[".net", ".paj"],
        magic: b"",
        native: true,
        options: pajek::OPTIONS,
        several: false,
        compressed: true,
        directories: false,
        updates: true,
        files: "`.net`, `.paj`, or a file opening with `*Vertices`, `*Arcs`, `*Edges`",
        notes: "Pajek (networkx `write_pajek`, igraph): a vertex's id is its label, else its \
                number; `*Arcs` are directed, `*Edges` undirected (both: pass `--directed` or \
                `--undirected`); values are weights unless all 1 or `--unweighted`; every \
                listed vertex is a node",
    },
    Format {
        name: "adjlist",
        extensions: &[".adjlist", ".adj"],
        magic: b"",
        native: true,
        options: adjlist::OPTIONS,
        several: true,
        compressed: true,
        directories: false,
        updates: true,
        files: "`.adjlist`, `.adj`",
        notes: "adjacency list, one node and its neighbours a line: `v n1 n2 ...` (networkx \
                `write_adjlist`, k-NN graphs); a node alone on its line is kept; without \
                `--delimiter`, lines with commas (or `;`) and no blanks are split on them; \
                a multiline adjacency list (`{}` edge data) is refused",
    },
    Format {
        name: "mat",
        extensions: &[".mat"],
        magic: b"MATLAB",
        native: false,
        options: &["weighted", "var"],
        several: false,
        compressed: false,
        directories: false,
        updates: false,
        files: "`.mat`",
        notes: "MATLAB adjacency matrix (`scipy.io.loadmat`; v7.3 files need `h5py`)",
    },
    Format {
        name: "bcsr",
        extensions: &[".bcsr"],
        magic: b"XGFS",
        native: true,
        options: bcsr::OPTIONS,
        several: false,
        compressed: false,
        directories: false,
        updates: true,
        files: "`.bcsr`",
        notes: "VERSE / XGFS binary CSR",
    },
    Format {
        name: "npy",
        extensions: &[".npy"],
        magic: b"\x93NUMPY",
        native: false,
        options: &["weighted"],
        several: false,
        compressed: false,
        directories: false,
        updates: false,
        files: "`.npy`",
        notes: "integer array of shape `(k, 2)` or `(k, 3)` (third column: weights), \
                memory-mapped",
    },
    Format {
        name: "webgraph",
        extensions: &[".properties"],
        magic: b"",
        native: true,
        options: webgraph::OPTIONS,
        several: false,
        compressed: false,
        directories: false,
        updates: true,
        files: "`BASENAME.graph` + `BASENAME.properties`",
        notes: "WebGraph BV graph (the LAW web crawls); name either file or the basename; \
                `--properties PATH` when the properties file is elsewhere. See \
                [WebGraph](#webgraph-bv-graphs)",
    },
];

/// The format named `name`, if there is one.
pub fn format(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}

/// The format `name`, or an error listing the formats.
pub fn known_format(name: &str) -> Result<&'static Format> {
    format(name).ok_or_else(|| {
        Error::param(format!(
            "format must be 'auto' or one of {}, got {name:?}",
            FORMATS
                .iter()
                .map(|f| format!("'{}'", f.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Compression suffixes stripped before an extension is looked at.
const COMPRESSION_EXT: &[&str] = &[".gz", ".gzip", ".bz2", ".zst", ".zstd", ".xz"];
const COMPRESSION_MAGIC: &[&[u8]] = &[b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\x00"];
const GRAPH_MAGIC: &[u8] = &crate::graph::format::MAGIC;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The format of the file `path` (docs/CLI.md, "The reading contract"): its first bytes (our
/// magic, a binary format's magic), a WebGraph's files, its decompressed content, then its
/// extension; else a text edge list. A directory is a dataset of the first format that reads
/// directories and has a file there (Parquet when none has).
pub fn detect(path: &Path) -> Result<&'static str> {
    if path.is_dir() {
        let files = dataset_files(path)?;
        let ours = |f: &Format, x: &PathBuf| {
            let x = x.to_string_lossy().to_lowercase();
            f.extensions.iter().any(|e| x.ends_with(e))
        };
        return Ok(FORMATS
            .iter()
            .find(|f| f.directories && files.iter().any(|x| ours(f, x)))
            .map_or("parquet", |f| f.name));
    }
    let name = path.to_string_lossy();
    let lower = name.to_lowercase();
    if !path.exists() && with_suffix(path, ".graph").is_file() {
        return Ok("webgraph"); // a WebGraph basename
    }
    let mut head = Vec::with_capacity(64);
    if path.is_file() {
        use std::io::Read;
        std::fs::File::open(path)
            .and_then(|f| f.take(64).read_to_end(&mut head))
            .map_err(|e| Error::io(path, e))?;
    }
    if head.starts_with(GRAPH_MAGIC) {
        return Err(Error::format(format!(
            "{name} is an instant-embedding graph file already (its magic says so): open it, \
             there is nothing to convert"
        )));
    }
    let compressed = COMPRESSION_MAGIC.iter().any(|m| head.starts_with(m));
    if !compressed {
        if let Some(f) = FORMATS
            .iter()
            .find(|f| !f.magic.is_empty() && head.starts_with(f.magic))
        {
            return Ok(f.name);
        }
    }
    let webgraph = if lower.ends_with(".properties") {
        path.is_file()
    } else if lower.ends_with(".graph") {
        path.with_extension("properties").is_file()
    } else {
        false
    };
    if webgraph {
        return Ok("webgraph");
    }
    if path.is_file() {
        let content = sniff::sniff(path)?;
        if let Some(e) = sniff::unsupported(path, &content) {
            return Err(e);
        }
        if let Some(f) = format(content.name()) {
            return Ok(f.name);
        }
    }
    let (stem, suffixed) = COMPRESSION_EXT
        .iter()
        .find_map(|c| lower.strip_suffix(c))
        .map_or((lower.as_str(), false), |s| (s, true));
    let compressed = compressed || suffixed;
    if !compressed && stem.ends_with(".graph") {
        let root = path.file_name().map_or(String::new(), |n| {
            let n = n.to_string_lossy();
            n[..n.len() - ".graph".len().min(n.len())].to_string()
        });
        // METIS and Chaco files are `.graph` text too: a counts line, then one line of
        // neighbours per vertex.
        let text = path.is_file() && !sniff::head(path)?.contains(&0);
        let hint = if text {
            "; it is text: a METIS or Chaco graph file (a counts line, then one line of \
             neighbours per vertex) is not read (convert it to an edge list first, e.g. with \
             networkx), and an edge list is read with format='edgelist'"
        } else {
            ""
        };
        return Err(Error::format(format!(
            "{name} is not an instant-embedding graph file (no IEGRAPH magic), and there is no \
             {root}.properties beside it for a WebGraph BV graph: pass the WebGraph properties \
             file (properties=PATH, --properties PATH) or the input's format{hint}"
        )));
    }
    Ok(FORMATS
        .iter()
        .find(|f| (f.compressed || !compressed) && f.extensions.iter().any(|e| stem.ends_with(e)))
        .map_or("edgelist", |f| f.name))
}

/// The data files of a dataset directory, recursively (each directory's files in name order,
/// then its subdirectories), without names starting with `.` or `_` (hidden files, Spark's
/// `_SUCCESS`).
pub fn dataset_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let listing = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut entries = listing
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.retain(|p| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        !name.is_some_and(|n| n.starts_with(['.', '_']))
    });
    entries.sort();
    let (dirs, mut files): (Vec<_>, Vec<_>) = entries.into_iter().partition(|p| p.is_dir());
    for d in dirs {
        files.extend(dataset_files(&d)?);
    }
    Ok(files)
}

/// The format `inputs` are read as: `opts.format`, or the one detected for every input (a
/// WebGraph with `opts.properties`); checked: the inputs exist (a WebGraph may be named by
/// its basename), the options apply to the format, a directory only where the format reads
/// datasets, several inputs only where it concatenates them.
pub fn resolve_format(inputs: &[PathBuf], opts: &ReadOptions) -> Result<&'static Format> {
    use std::io::{Error as IoError, ErrorKind};
    if inputs.is_empty() {
        return Err(Error::param("no input files given"));
    }
    if let Some(p) = inputs
        .iter()
        .find(|p| !p.exists() && !with_suffix(p, ".graph").is_file())
    {
        let missing = IoError::new(ErrorKind::NotFound, "no such file or directory");
        return Err(Error::io(p, missing));
    }
    let name = match opts.format.as_str() {
        "auto" if opts.properties.is_some() => "webgraph",
        "auto" => {
            let mut names = inputs
                .iter()
                .map(|p| detect(p))
                .collect::<Result<Vec<_>>>()?;
            names.sort_unstable();
            names.dedup();
            if names.len() > 1 {
                let names = names.join(", ");
                return Err(Error::param(format!(
                    "inputs have different formats ({names})"
                )));
            }
            names[0]
        }
        name => name,
    };
    let format = known_format(name)?;
    opts.check_applies(name)?;
    if let Some(p) = inputs.iter().find(|p| p.is_dir() && !format.directories) {
        let what = "is a directory (only Parquet/Arrow datasets can be)";
        return Err(Error::io(p, IoError::new(ErrorKind::IsADirectory, what)));
    }
    if inputs.len() > 1 && !format.several {
        return Err(Error::param(format!(
            "format '{name}' takes exactly one input file, got {}",
            inputs.len()
        )));
    }
    Ok(format)
}

/// One statistic of a reader, beside the builder's.
#[derive(Clone, Debug, PartialEq)]
pub enum Stat {
    Int(u64),
    Bool(bool),
    Text(String),
    List(Vec<String>),
}

/// A reader's statistics: `edge_lines` (records that held edges) always, then what the format
/// tells (`input_bytes`, `lines`, `passes`, `headers`, `columns`, `shape`, ...).
pub type Stats = Vec<(&'static str, Stat)>;

fn one_input(name: &str, inputs: &[PathBuf]) -> Result<PathBuf> {
    match inputs {
        [p] => Ok(p.clone()),
        _ => Err(Error::param(format!(
            "format '{name}' takes exactly one input file"
        ))),
    }
}

/// Converts `inputs` of a format the kernel parses (`opts.format`, never "auto") into the graph
/// file `output`, atomically: the one native entry point of `convert`.
pub fn convert(
    inputs: &[PathBuf],
    output: &Path,
    opts: &ReadOptions,
    hook: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, Stats)> {
    use Stat::{Bool, Int, List, Text};
    opts.validate()?;
    let build = opts.build()?;
    let (directed, weighted) = (opts.directed, opts.weighted);
    Ok(match opts.format.as_str() {
        "edgelist" | "csv" | "tsv" => {
            let (b, t) = text::convert_text(inputs, output, &opts.text()?, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(t.edge_lines)),
                ("input_bytes", Int(t.input_bytes)),
                ("lines", Int(t.lines)),
                ("passes", Int(t.passes.into())),
                ("headers", List(t.headers)),
                ("columns", List(t.columns)),
                ("delimiter", Text(t.delimiter)),
            ];
            (b, st)
        }
        "json" => {
            let json = json::JsonOptions {
                directed,
                weighted,
                src_key: opts.key("src_col")?,
                dst_key: opts.key("dst_col")?,
                weight_key: opts.key("weight_col")?,
            };
            let (b, j) = json::convert_json(inputs, output, &json, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(j.edges)),
                ("input_bytes", Int(j.input_bytes)),
                ("shape", Text(j.shape.into())),
                ("nodes_listed", Int(j.nodes_listed)),
                ("passes", Int(j.passes.into())),
            ];
            (b, st)
        }
        "mtx" => {
            let path = one_input("mtx", inputs)?;
            let (b, h) = mtx::convert_mtx(&path, output, directed, weighted, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(h.entries)),
                ("symmetric", Bool(h.symmetric)),
            ];
            (b, st)
        }
        "adjlist" => {
            let (b, a) = adjlist::convert_adjlist(inputs, output, &opts.adjlist()?, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(a.node_lines)),
                ("input_bytes", Int(a.input_bytes)),
                ("lines", Int(a.lines)),
                ("passes", Int(a.passes.into())),
            ];
            (b, st)
        }
        "graphml" => {
            let path = one_input("graphml", inputs)?;
            let how = graphml::GraphMlOptions { directed, weighted };
            let (b, g) = graphml::convert_graphml(&path, output, how, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(g.edges)),
                ("input_bytes", Int(g.input_bytes)),
                ("nodes_listed", Int(g.nodes)),
            ];
            (b, st)
        }
        "pajek" => {
            let path = one_input("pajek", inputs)?;
            let how = pajek::PajekOptions { directed, weighted };
            let (b, p) = pajek::convert_pajek(&path, output, how, &build, hook)?;
            let st = vec![("edge_lines", Int(p.edges)), ("nodes_listed", Int(p.nodes))];
            (b, st)
        }
        "bcsr" => {
            let path = one_input("bcsr", inputs)?;
            let (b, st) = bcsr::convert_bcsr(&path, output, directed, weighted, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(st.arcs)),
                ("source_nodes", Int(st.nodes)),
            ];
            (b, st)
        }
        "webgraph" => {
            let path = one_input("webgraph", inputs)?;
            if weighted == Some(true) {
                return Err(Error::param(
                    "weighted=True: a WebGraph BV graph has no arc weights",
                ));
            }
            if opts.id_kind == "str" {
                return Err(Error::param(
                    "id_kind='str' does not apply to webgraph input: its ids are 0..n-1",
                ));
            }
            let files = webgraph::WebGraphFiles::resolve(&path, opts.properties.as_deref());
            let (b, w) = webgraph::convert_webgraph(&files, output, &build, hook)?;
            let st = vec![
                ("edge_lines", Int(w.arcs)),
                ("input_bytes", Int(w.input_bytes)),
                ("source_nodes", Int(w.nodes)),
                ("source_arcs", Int(w.arcs)),
            ];
            (b, st)
        }
        other => {
            return Err(Error::param(format!(
                "format {other:?} is not parsed by the kernel"
            )))
        }
    })
}

/// Edges read for a live graph's update, in file order.
#[derive(Debug)]
pub struct ReadEdges {
    pub ids: BufferedIds,
    /// One per edge when the graph is weighted, else empty.
    pub weights: Vec<f32>,
    /// Header lines skipped by detection, as `convert` reports them.
    pub headers: Vec<String>,
    pub columns: Vec<String>,
    pub edge_lines: u64,
}

/// Reads the edges of `inputs` (a format the kernel parses, `opts.format`) for an update of
/// `graph`, with the readers `convert` uses: ids of the graph's kind, its direction and
/// weighting, and a first line settled by the graph's ids too.
pub fn read_edges(inputs: &[PathBuf], opts: &ReadOptions, g: &Graph) -> Result<ReadEdges> {
    opts.validate()?;
    let mode = if matches!(g.id_kind(), crate::graph::format::IdKind::Utf8) {
        IdMode::Str
    } else {
        IdMode::Int
    };
    let weighted = opts.weighted.unwrap_or(false);
    let done = |b: EdgeBuffer<'_>, keep: bool, lines: u64| ReadEdges {
        ids: b.ids,
        weights: if keep { b.weights } else { Vec::new() },
        headers: Vec::new(),
        columns: Vec::new(),
        edge_lines: lines,
    };
    match opts.format.as_str() {
        "edgelist" | "csv" | "tsv" => {
            let mut make = |ids: IdMode, _w: bool| Ok(EdgeBuffer::new(ids, Some(g)));
            let text = text::TextOptions {
                directed: Some(g.directed()),
                ..opts.text()?
            };
            let (b, t, _) = text::read_text(inputs, &text, mode, opts.merge()?, &mut make, None)?;
            Ok(ReadEdges {
                headers: t.headers,
                columns: t.columns,
                ..done(b, t.weighted, t.edge_lines)
            })
        }
        "mtx" => {
            let path = one_input("mtx", inputs)?;
            let h = mtx::read_header(&path)?;
            if weighted && !h.values {
                return Err(Error::param(format!(
                    "{}: the graph is weighted, but the matrix is 'pattern': it has no values",
                    path.display()
                )));
            }
            let how = mtx::MtxRead {
                directed: g.directed(),
                weighted,
            };
            let mut b = EdgeBuffer::new(IdMode::Int, Some(g));
            mtx::read_mtx(
                &path,
                &h,
                how,
                crate::graph::build::Merge::Max,
                &mut b,
                false,
                &|_| true,
            )?;
            Ok(done(b, weighted, h.entries))
        }
        "adjlist" => {
            if weighted {
                return Err(Error::param(
                    "the graph is weighted, but an adjacency list has no weights",
                ));
            }
            let mut make = |ids: IdMode| Ok(EdgeBuffer::new(ids, Some(g)));
            let (b, a, _) = adjlist::read_adjlist(inputs, &opts.adjlist()?, mode, &mut make, None)?;
            Ok(done(b, false, a.node_lines))
        }
        "graphml" => {
            let path = one_input("graphml", inputs)?;
            let how = graphml::GraphMlOptions {
                directed: Some(g.directed()),
                weighted: Some(weighted),
            };
            let mut make = |_i: IdMode, _d: bool, _w: bool| Ok(EdgeBuffer::new(mode, Some(g)));
            let (b, st) = graphml::read_graphml(&path, how, mode, &mut make, None)?;
            Ok(done(b, weighted, st.edges))
        }
        "pajek" => {
            let path = one_input("pajek", inputs)?;
            let how = pajek::PajekOptions {
                directed: Some(g.directed()),
                weighted: Some(weighted),
            };
            let mut make = |_i: IdMode, _d: bool, _w: bool| Ok(EdgeBuffer::new(mode, Some(g)));
            let (b, st) = pajek::read_pajek(&path, how, mode, &mut make, None)?;
            Ok(done(b, weighted, st.edges))
        }
        "json" => {
            let how = json::JsonOptions {
                directed: Some(g.directed()),
                weighted: Some(weighted),
                src_key: opts.key("src_col")?,
                dst_key: opts.key("dst_col")?,
                weight_key: opts.key("weight_col")?,
            };
            let mut make = |_m: IdMode, _d: Option<bool>| Ok(EdgeBuffer::new(mode, Some(g)));
            let (b, st) = json::read_json(inputs, &how, &mut make)?;
            Ok(done(b, weighted, st.edges))
        }
        "bcsr" => {
            let path = one_input("bcsr", inputs)?;
            let mut make = |_d: bool, _w: bool, _n: u64| Ok(EdgeBuffer::new(IdMode::Int, Some(g)));
            let (b, st) = bcsr::read_bcsr(&path, Some(g.directed()), Some(weighted), &mut make)?;
            Ok(done(b, weighted, st.arcs))
        }
        "webgraph" => {
            let path = one_input("webgraph", inputs)?;
            if weighted {
                return Err(Error::param(
                    "the graph is weighted, but a WebGraph BV graph has no arc weights",
                ));
            }
            if mode == IdMode::Str {
                return Err(Error::param(
                    "the graph's node ids are strings, but a WebGraph's ids are 0..n-1",
                ));
            }
            let files = webgraph::WebGraphFiles::resolve(&path, opts.properties.as_deref());
            let mut b = EdgeBuffer::new(IdMode::Int, Some(g));
            let arcs = webgraph::read_webgraph(&files, &mut b)?;
            if let (false, BufferedIds::Int(s, t)) = (g.directed(), &mut b.ids) {
                // Undirected: each edge once, as the builder of `convert` would merge a
                // reciprocal pair.
                let mut pairs: Vec<(i64, i64)> = s
                    .iter()
                    .zip(t.iter())
                    .map(|(&u, &v)| (u.min(v), u.max(v)))
                    .collect();
                pairs.sort_unstable();
                pairs.dedup();
                (*s, *t) = pairs.into_iter().unzip();
            }
            Ok(done(b, false, arcs))
        }
        other => Err(Error::param(format!(
            "an update does not stream format {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasets_list_their_data_files_and_inputs_resolve_to_one_checked_format() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in [
            "b.parquet",
            "a.parquet",
            "_SUCCESS",
            ".hidden",
            "sub/c.parquet",
            "_tmp/x",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), b"").unwrap();
        }
        let files = dataset_files(d).unwrap();
        let want: Vec<_> = ["a.parquet", "b.parquet", "sub/c.parquet"]
            .map(|f| d.join(f))
            .into();
        assert_eq!(files, want);
        assert_eq!(detect(d).unwrap(), "parquet");
        std::fs::write(d.join("sub/e.arrow"), b"").unwrap();
        std::fs::remove_file(d.join("sub/c.parquet")).unwrap();
        std::fs::remove_file(d.join("a.parquet")).unwrap();
        std::fs::remove_file(d.join("b.parquet")).unwrap();
        assert_eq!(detect(d).unwrap(), "arrow");

        let text = d.join("e.txt");
        std::fs::write(&text, "0 1\n").unwrap();
        let auto = ReadOptions::default();
        assert_eq!(
            resolve_format(std::slice::from_ref(&text), &auto)
                .unwrap()
                .name,
            "edgelist"
        );
        let err = |inputs: &[PathBuf], opts: &ReadOptions| {
            resolve_format(inputs, opts).unwrap_err().to_string()
        };
        assert!(err(&[d.join("nope.txt")], &auto).contains("nope.txt: no such file"));
        assert!(err(&[text.clone(), d.to_path_buf()], &auto).contains("different formats"));
        let mut mtx = auto.clone();
        mtx.format = "mtx".into();
        let two = [text.clone(), text.clone()];
        assert!(err(&two, &mtx).contains("takes exactly one input file, got 2"));
        assert!(err(&[d.to_path_buf()], &mtx).contains("is a directory"));
        assert!(err(&[], &auto).contains("no input files"));
        let mut var = auto.clone();
        var.var = Some("x".into());
        assert!(err(&[text], &var).contains("var do(es) not apply to edgelist input"));
    }

    #[test]
    fn every_format_is_named_once_and_its_options_exist() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert!(
                FORMATS[..i].iter().all(|g| g.name != f.name),
                "{} twice",
                f.name
            );
            for o in f.options {
                assert!(options::read_setting(o).is_some(), "{}: {o}", f.name);
            }
            for e in f.extensions {
                assert!(e.starts_with('.') && e.to_lowercase() == *e, "{e}");
            }
        }
        assert!(known_format("nope").is_err());
        assert_eq!(known_format("mtx").unwrap().name, "mtx");
    }
}
