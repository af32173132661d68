//! JSON inputs -> graph file, through the out-of-core builder (`external.rs`).
//!
//! Four shapes, told apart by the content (any name, any of the compressions of `text.rs`):
//!
//! - **JSON Lines** (`.jsonl`, `.ndjson`): one edge object per line, streamed:
//!   `{"source": .., "target": .., "weight": ..}`; the id keys are the first present pair of
//!   `source`/`target`, `src`/`dst`, `from`/`to`, `u`/`v` (or the keys given), the weight key
//!   `weight` (or the key given). Blank lines are skipped.
//! - **Node-link JSON**, as networkx (`node_link_data`) and D3 write it: one object with
//!   `nodes` (`[{"id": ..}, ...]`, every node kept, isolated ones too) and `links` (or `edges`,
//!   networkx >= 3.4) of `{"source": .., "target": .., "weight": ..}`; `directed` in the file
//!   is used unless the caller sets it. The document is loaded whole.
//! - **An array of edges**: `[[src, dst], ...]`, `[[src, dst, weight], ...]` or
//!   `[{"source": .., "target": ..}, ...]`. Loaded whole.
//! - **A pandas table**, as `DataFrame.to_json` writes it with `orient='split'`
//!   (`columns`, `index`, `data` rows) or `orient='table'` (a `schema` and `data` records,
//!   the index among them): its columns are chosen by the column rule of tables (names; the
//!   index is no column). Loaded whole.
//!
//! Ids are JSON integers (int64) or strings; the kind of the first id holds for all (mixing
//! them is an error that says what to do). `id_kind` "str" reads integers as their decimal
//! text; "int" reads strings holding decimal integers. Weights are JSON numbers, finite and
//! positive; an edge without one weighs 1. Anything else, e.g. a JSON object that is not a graph,
//! is refused with a message naming the file, the line (JSON Lines) or edge, and the text.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::graph::external::{
    check_weight, BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn,
};
use crate::io::input::open_input;
use crate::io::source::EdgeSink;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted", "src_col", "dst_col", "weight_col", "id_kind"];

/// Options of [`convert_json`].
#[derive(Clone, Debug, Default)]
pub struct JsonOptions {
    /// `None`: node-link JSON says (`directed` key), other shapes are undirected.
    pub directed: Option<bool>,
    /// `None`: weighted iff some edge has a weight.
    pub weighted: Option<bool>,
    pub src_key: Option<String>,
    pub dst_key: Option<String>,
    pub weight_key: Option<String>,
}

/// What the reader saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonStats {
    pub input_bytes: u64,
    /// `node-link`, `json-lines` or `edge-array`.
    pub shape: &'static str,
    /// Edges read (links, lines or array items).
    pub edges: u64,
    /// Nodes listed by node-link JSON (with isolated ones).
    pub nodes_listed: u64,
    pub weighted: bool,
    pub directed: bool,
    /// 2 when the input was read again (weights met after unweighted edges).
    pub passes: u32,
}

const ID_PAIRS: [(&str, &str); 4] = [
    ("source", "target"),
    ("src", "dst"),
    ("from", "to"),
    ("u", "v"),
];
const MAX_SHOWN: usize = 200;

fn shown(v: &str) -> String {
    let cut: String = v.chars().take(MAX_SHOWN).collect();
    if cut.len() < v.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A node id as read.
enum Id<'a> {
    Int(i64),
    Str(std::borrow::Cow<'a, str>),
}

/// Converts ids: the builder's mode, forced by the caller or fixed by the first id.
struct Ids {
    mode: IdMode,
    forced: bool,
}

impl Ids {
    fn of<S: EdgeSink>(b: &S, forced: bool) -> Ids {
        Ids {
            mode: b.id_mode(),
            forced,
        }
    }

    fn id<'a>(&self, v: &'a Value) -> std::result::Result<Id<'a>, String> {
        match (v, self.mode) {
            (Value::Number(n), IdMode::Str) if self.forced => Ok(Id::Str(n.to_string().into())),
            (Value::Number(_), IdMode::Str) => Err(mixed(true)),
            (Value::Number(n), _) => match n.as_i64() {
                Some(x) => Ok(Id::Int(x)),
                None if n.is_u64() => Err(format!(
                    "id {n} overflows int64 (id_kind='str' keeps it as text)"
                )),
                None => Err(format!(
                    "id {n} is not an integer; ids are integers or strings"
                )),
            },
            (Value::String(s), IdMode::Str) => Ok(Id::Str(s.as_str().into())),
            (Value::String(s), IdMode::Int | IdMode::Implicit) => match s.parse::<i64>() {
                Ok(x) => Ok(Id::Int(x)),
                Err(_) => Err(format!(
                    "id {:?} is not an integer (id_kind={})",
                    shown(s),
                    if self.mode == IdMode::Int {
                        "'int'"
                    } else {
                        "'implicit'"
                    }
                )),
            },
            (Value::String(_), _) => Err(mixed(false)),
            (other, _) => Err(format!(
                "id {} is {}; ids are integers or strings",
                shown(&other.to_string()),
                kind_of(other)
            )),
        }
    }
}

fn first_kind(v: &Value) -> IdMode {
    match v {
        Value::String(_) => IdMode::Str,
        _ => IdMode::Auto,
    }
}

fn weight_of(v: Option<&Value>) -> std::result::Result<f32, String> {
    let Some(v) = v else { return Ok(1.0) };
    let x = match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Null => return Ok(1.0),
        other => {
            return Err(format!(
                "weight {} is {}, not a number",
                shown(&other.to_string()),
                kind_of(other)
            ))
        }
    };
    check_weight(x).map_err(|_| format!("weight {x} is invalid: weights must be finite and > 0"))
}

/// Pushes one edge; `where_` names it in errors.
fn push<S: EdgeSink>(
    b: &mut S,
    ids: &Ids,
    s: &Value,
    d: &Value,
    w: Option<&Value>,
    weighted: bool,
) -> std::result::Result<(), String> {
    let w = if weighted { weight_of(w)? } else { 1.0 };
    let r = match (ids.id(s)?, ids.id(d)?) {
        (Id::Int(a), Id::Int(c)) => b.push_int(a, c, w),
        (Id::Str(a), Id::Str(c)) => b.push_str(&a, &c, w),
        _ => return Err(mixed(b.id_mode() == IdMode::Str)),
    };
    r.map_err(|e| e.to_string())
}

fn push_node<S: EdgeSink>(b: &mut S, ids: &Ids, v: &Value) -> std::result::Result<(), String> {
    let r = match ids.id(v)? {
        Id::Int(x) => b.push_node_int(x),
        Id::Str(s) => b.push_node_str(&s),
    };
    r.map_err(|e| e.to_string())
}

fn mixed(strings: bool) -> String {
    format!(
        "{} id after {} ones: ids must be all integers or all strings (id_kind='str' reads \
         integers as strings)",
        if strings { "an integer" } else { "a string" },
        if strings { "string" } else { "integer" },
    )
}

/// The id keys of an edge object: the given ones, else the first known pair present.
fn id_keys(obj: &Map<String, Value>, opts: &JsonOptions) -> Option<(String, String)> {
    match (&opts.src_key, &opts.dst_key) {
        (Some(s), Some(d)) => Some((s.clone(), d.clone())),
        (s, d) => ID_PAIRS.iter().find_map(|(a, c)| {
            let a = s.as_deref().unwrap_or(a);
            let c = d.as_deref().unwrap_or(c);
            (obj.contains_key(a) && obj.contains_key(c)).then(|| (a.to_string(), c.to_string()))
        }),
    }
}

fn keys_of(obj: &Map<String, Value>) -> String {
    let mut k: Vec<String> = obj.keys().take(8).map(|k| format!("'{k}'")).collect();
    if obj.len() > 8 {
        k.push("...".into());
    }
    k.join(", ")
}

/// The rows of a pandas `to_json` table (`orient='split'` or `'table'`) as edge arrays
/// `[src, dst(, weight)]`, its columns chosen by the column rule of tables; `None` when `obj`
/// is not such a table.
fn pandas_rows(
    obj: &Map<String, Value>,
    opts: &JsonOptions,
) -> std::result::Result<Option<Vec<Value>>, String> {
    let label = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let (names, rows): (Vec<String>, Vec<Vec<Value>>) = match (
        obj.get("columns"),
        obj.get("data"),
        obj.get("schema").and_then(|s| s.get("fields")),
    ) {
        (Some(Value::Array(cols)), Some(Value::Array(data)), None) if obj.contains_key("index") => {
            let names: Vec<String> = cols.iter().map(label).collect();
            let rows = data
                .iter()
                .map(|r| match r {
                    Value::Array(a) if a.len() == names.len() => Ok(a.clone()),
                    other => Err(format!(
                        "a row of the 'split' table is not {} values: {}",
                        names.len(),
                        shown(&other.to_string())
                    )),
                })
                .collect::<std::result::Result<_, _>>()?;
            (names, rows)
        }
        (None, Some(Value::Array(data)), Some(Value::Array(fields))) => {
            let index: Vec<String> = match obj["schema"].get("primaryKey") {
                Some(Value::Array(k)) => k.iter().map(label).collect(),
                _ => Vec::new(),
            };
            let names: Vec<String> = fields
                .iter()
                .filter_map(|f| f.get("name").map(label))
                .filter(|n| !index.contains(n))
                .collect();
            let rows = data
                .iter()
                .map(|r| {
                    names
                        .iter()
                        .map(|n| r.get(n).cloned().unwrap_or(Value::Null))
                        .collect()
                })
                .collect();
            (names, rows)
        }
        _ => return Ok(None),
    };
    let col = |k: &Option<String>| k.clone().map(crate::io::text::Column::Name);
    let text = crate::io::text::TextOptions {
        src_col: col(&opts.src_key),
        dst_col: col(&opts.dst_key),
        weight_col: col(&opts.weight_key),
        weighted: opts.weighted,
        ..Default::default()
    };
    let (s, d, w) = crate::io::text::table_columns(&names, &text).map_err(|e| match e {
        Error::Format(m) | Error::InvalidParameter(m) => m,
        e => e.to_string(),
    })?;
    Ok(Some(
        rows.into_iter()
            .map(|r| {
                let mut e = vec![r[s].clone(), r[d].clone()];
                e.extend(w.map(|w| r[w].clone()));
                Value::Array(e)
            })
            .collect(),
    ))
}

/// The shape of a file, from its first non-blank line.
enum Shape {
    Lines,
    Document,
}

fn read_all(r: &mut dyn Read, path: &Path) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    r.read_to_end(&mut v).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
            Error::format(format!(
                "{}: corrupt or truncated compressed data: {e}",
                path.display()
            ))
        }
        _ => Error::io(path, e),
    })?;
    Ok(v)
}

fn shape_of(path: &Path, opts: &JsonOptions) -> Result<Shape> {
    let mut r = BufReader::new(open_input(path, Default::default())?);
    let mut line = Vec::new();
    let mut first: Option<Map<String, Value>> = None;
    loop {
        line.clear();
        let k = r
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if k == 0 {
            break;
        }
        let t = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line);
        if t.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if first.is_some() {
            return Ok(Shape::Lines); // a whole object on the first line, and more lines
        }
        // A first line that is a whole JSON object is a JSON Lines record, unless it is the
        // only line and not an edge (a one-line document).
        match serde_json::from_slice::<Value>(t) {
            Ok(Value::Object(o)) => first = Some(o),
            _ => return Ok(Shape::Document),
        }
    }
    match first {
        None => Err(Error::format(format!(
            "{}: empty file (no edges found)",
            path.display()
        ))),
        // pandas `to_json()` (orient 'columns'): one object of columns, not an edge.
        Some(o) if id_keys(&o, opts).is_some_and(|(k, _)| !o[&k].is_object()) => Ok(Shape::Lines),
        Some(_) => Ok(Shape::Document),
    }
}

struct Pass<'a> {
    opts: &'a JsonOptions,
    weighted: bool,
    /// The id kind is the caller's (`id_kind`), not the first id's.
    forced: bool,
    stats: JsonStats,
    /// Set when an edge has a weight but the pass reads none: read again, weighted.
    weights_seen: bool,
}

impl Pass<'_> {
    fn lines<S: EdgeSink>(
        &mut self,
        b: &mut Option<S>,
        path: &Path,
        open: &mut Opener<'_, S>,
    ) -> Result<()> {
        let name = path.display().to_string();
        let mut r = BufReader::with_capacity(1 << 20, open_input(path, Default::default())?);
        let mut line = Vec::new();
        let mut no = 0u64;
        let mut keys: Option<(String, String)> = None;
        let wkey = self
            .opts
            .weight_key
            .clone()
            .unwrap_or_else(|| "weight".into());
        loop {
            line.clear();
            let k = r.read_until(b'\n', &mut line).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                    Error::format(format!(
                        "{name}: corrupt or truncated compressed data after line {no}: {e}"
                    ))
                }
                _ => Error::io(path, e),
            })?;
            if k == 0 {
                break;
            }
            no += 1;
            let t = if no == 1 {
                line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line)
            } else {
                &line[..]
            };
            if t.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = || shown(String::from_utf8_lossy(t).trim_end());
            let obj = match serde_json::from_slice::<Value>(t) {
                Ok(Value::Object(o)) => o,
                Ok(other) => {
                    return Err(Error::format(format!(
                        "{name}:{no}: a JSON Lines edge must be an object, found {}: {}",
                        kind_of(&other),
                        text()
                    )))
                }
                Err(e) => {
                    return Err(Error::format(format!(
                        "{name}:{no}: not valid JSON ({e}): {}",
                        text()
                    )))
                }
            };
            if keys.is_none() {
                keys = Some(id_keys(&obj, self.opts).ok_or_else(|| {
                    Error::format(format!(
                        "{name}:{no}: an edge object needs source and target keys (source/target, \
                         src/dst, from/to or u/v; or name them with src_col and dst_col), found {}",
                        keys_of(&obj)
                    ))
                })?);
            }
            let (sk, dk) = keys.as_ref().expect("set above");
            let (Some(s), Some(d)) = (obj.get(sk), obj.get(dk)) else {
                return Err(Error::format(format!(
                    "{name}:{no}: no '{sk}' or '{dk}' key, as the first edge has: {}",
                    text()
                )));
            };
            let w = obj.get(&wkey).filter(|v| !v.is_null());
            if w.is_some() && !self.weighted && self.opts.weighted.is_none() {
                self.weights_seen = true;
                return Ok(());
            }
            if b.is_none() {
                *b = Some(open(first_kind(s), None)?);
            }
            let builder = b.as_mut().expect("opened above");
            let ids = Ids::of(builder, self.forced);
            push(builder, &ids, s, d, w, self.weighted)
                .map_err(|m| Error::format(format!("{name}:{no}: {m}: {}", text())))?;
            self.stats.edges += 1;
        }
        Ok(())
    }

    fn document<S: EdgeSink>(
        &mut self,
        b: &mut Option<S>,
        path: &Path,
        open: &mut Opener<'_, S>,
    ) -> Result<()> {
        let name = path.display().to_string();
        let mut r = open_input(path, Default::default())?;
        let bytes = read_all(&mut r, path)?;
        let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
        let doc: Value = serde_json::from_slice(body)
            .map_err(|e| Error::format(format!("{name}: not valid JSON: {e}")))?;
        let wkey = self
            .opts
            .weight_key
            .clone()
            .unwrap_or_else(|| "weight".into());
        let doc = match doc {
            Value::Object(obj) => match pandas_rows(&obj, self.opts)
                .map_err(|m| Error::format(format!("{name}: {m}")))?
            {
                Some(rows) => Value::Array(rows),
                None => Value::Object(obj),
            },
            doc => doc,
        };
        match doc {
            Value::Object(obj) => {
                let links = obj.get("links").or_else(|| obj.get("edges"));
                let (Some(Value::Array(nodes)), Some(Value::Array(links))) =
                    (obj.get("nodes"), links)
                else {
                    return Err(Error::format(format!(
                        "{name} is a JSON object with keys {}, not a graph: node-link JSON needs \
                         'nodes' and 'links' (or 'edges') lists; for another layout, load it \
                         with its library (networkx.adjacency_graph, cytoscape_graph, \
                         tree_graph; pandas.read_json) and pass the result to ie.from_networkx \
                         or ie.from_pandas",
                        keys_of(&obj)
                    )));
                };
                self.stats.shape = "node-link";
                let directed = match obj.get("directed") {
                    Some(Value::Bool(d)) => Some(*d),
                    _ => None,
                };
                if !self.weighted
                    && self.opts.weighted.is_none()
                    && links
                        .iter()
                        .any(|l| l.get(&wkey).is_some_and(|v| !v.is_null()))
                {
                    self.weights_seen = true;
                    return Ok(());
                }
                let (sk, dk) = (
                    self.opts.src_key.clone().unwrap_or_else(|| "source".into()),
                    self.opts.dst_key.clone().unwrap_or_else(|| "target".into()),
                );
                let first = nodes
                    .iter()
                    .find_map(|n| n.get("id"))
                    .or_else(|| links.first().and_then(|l| l.get(&sk)));
                if b.is_none() {
                    *b = Some(open(first.map_or(IdMode::Auto, first_kind), directed)?);
                }
                let builder = b.as_mut().expect("opened above");
                let ids = Ids::of(builder, self.forced);
                for (i, n) in nodes.iter().enumerate() {
                    let id = n.get("id").ok_or_else(|| {
                        Error::format(format!(
                            "{name}: node {i} has no 'id': {}",
                            shown(&n.to_string())
                        ))
                    })?;
                    push_node(builder, &ids, id).map_err(|m| {
                        Error::format(format!("{name}: node {i}: {m}: {}", shown(&n.to_string())))
                    })?;
                    self.stats.nodes_listed += 1;
                }
                for (i, l) in links.iter().enumerate() {
                    let (Some(s), Some(d)) = (l.get(&sk), l.get(&dk)) else {
                        return Err(Error::format(format!(
                            "{name}: link {i} has no '{sk}' or '{dk}': {}",
                            shown(&l.to_string())
                        )));
                    };
                    push(builder, &ids, s, d, l.get(&wkey), self.weighted).map_err(|m| {
                        Error::format(format!("{name}: link {i}: {m}: {}", shown(&l.to_string())))
                    })?;
                    self.stats.edges += 1;
                }
            }
            Value::Array(items) => {
                self.stats.shape = "edge-array";
                let has_w = |it: &Value| match it {
                    Value::Array(a) => a.len() >= 3,
                    Value::Object(o) => o.get(&wkey).is_some_and(|v| !v.is_null()),
                    _ => false,
                };
                if !self.weighted && self.opts.weighted.is_none() && items.iter().any(has_w) {
                    self.weights_seen = true;
                    return Ok(());
                }
                let mut keys = None;
                for (i, it) in items.iter().enumerate() {
                    let bad = |m: String| {
                        Error::format(format!("{name}: edge {i}: {m}: {}", shown(&it.to_string())))
                    };
                    let (s, d, w) = match it {
                        Value::Array(a) if (2..=3).contains(&a.len()) => (&a[0], &a[1], a.get(2)),
                        Value::Object(o) => {
                            if keys.is_none() {
                                keys = id_keys(o, self.opts);
                            }
                            let Some((sk, dk)) = &keys else {
                                return Err(bad(format!(
                                    "an edge object needs source and target keys, found {}",
                                    keys_of(o)
                                )));
                            };
                            match (o.get(sk), o.get(dk)) {
                                (Some(s), Some(d)) => (s, d, o.get(&wkey)),
                                _ => return Err(bad(format!("no '{sk}' or '{dk}' key"))),
                            }
                        }
                        other => {
                            return Err(bad(format!(
                                "an edge must be [source, target(, weight)] or an object, found {}",
                                kind_of(other)
                            )))
                        }
                    };
                    if b.is_none() {
                        *b = Some(open(first_kind(s), None)?);
                    }
                    let builder = b.as_mut().expect("opened above");
                    let ids = Ids::of(builder, self.forced);
                    push(builder, &ids, s, d, w, self.weighted).map_err(bad)?;
                    self.stats.edges += 1;
                }
            }
            other => {
                return Err(Error::format(format!(
                    "{name} holds {} JSON value, not a graph: give node-link JSON, JSON Lines \
                     edges or an array of edges",
                    kind_of(&other).replace("a ", "a single ")
                )))
            }
        }
        Ok(())
    }
}

/// Opens the sink once the first id is seen: `(kind of the first id, the file's directed
/// flag)`.
type Opener<'a, S> = dyn FnMut(IdMode, Option<bool>) -> Result<S> + 'a;

/// Reads JSON inputs once into the sink `make` opens, with the weighting `json.weighted`
/// settles (it must be given) and ids of the sink's kind: how `update` reads JSON.
pub fn read_json<S: EdgeSink>(
    inputs: &[PathBuf],
    json: &JsonOptions,
    make: &mut Opener<'_, S>,
) -> Result<(S, JsonStats)> {
    let weighted = json
        .weighted
        .ok_or_else(|| Error::param("read_json needs weighted to be given"))?;
    let mut pass = Pass {
        opts: json,
        weighted,
        forced: true,
        stats: JsonStats {
            shape: "json-lines",
            passes: 1,
            ..JsonStats::default()
        },
        weights_seen: false,
    };
    let mut b: Option<S> = None;
    for p in inputs {
        match shape_of(p, json)? {
            Shape::Lines => pass.lines(&mut b, p, make)?,
            Shape::Document => pass.document(&mut b, p, make)?,
        }
    }
    match b {
        Some(b) if pass.stats.edges > 0 || pass.stats.nodes_listed > 0 => Ok((b, pass.stats)),
        _ => Err(Error::format(format!(
            "{}: no edges found",
            inputs
                .first()
                .map_or(String::new(), |p| p.display().to_string())
        ))),
    }
}

/// Converts JSON inputs (see the module docs) into a graph file at `output`, atomically.
/// `build.weighted` and (when `json.directed` is `None`) `build.directed` are replaced by
/// what the input says.
pub fn convert_json(
    inputs: &[PathBuf],
    output: &Path,
    json: &JsonOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, JsonStats)> {
    if inputs.is_empty() {
        return Err(Error::param("no input files given"));
    }
    let mut total = 0u64;
    let mut shapes = Vec::with_capacity(inputs.len());
    for p in inputs {
        total += std::fs::metadata(p).map_err(|e| Error::io(p, e))?.len();
        shapes.push(shape_of(p, json)?);
    }
    if inputs.len() > 1 && shapes.iter().any(|s| matches!(s, Shape::Document)) {
        return Err(Error::param(
            "several JSON inputs must all be JSON Lines files (a node-link document is one graph)",
        ));
    }
    let mut weighted = json.weighted.unwrap_or(false);
    let mut passes = 1;
    loop {
        let mut pass = Pass {
            opts: json,
            weighted,
            forced: build.ids != IdMode::Auto || build.num_nodes.is_some(),
            stats: JsonStats {
                shape: "json-lines",
                passes,
                ..JsonStats::default()
            },
            weights_seen: false,
        };
        let mut b: Option<ExternalBuilder> = None;
        let mut open = |mode: IdMode, in_file: Option<bool>| -> Result<ExternalBuilder> {
            let ids = match (build.ids, build.num_nodes) {
                (IdMode::Auto, None) => mode,
                (IdMode::Auto, Some(_)) => IdMode::Implicit,
                (forced, _) => forced,
            };
            ExternalBuilder::new(
                output,
                BuildOptions {
                    ids,
                    weighted,
                    directed: json.directed.or(in_file).unwrap_or(false),
                    ..build.clone()
                },
            )
        };
        for (p, shape) in inputs.iter().zip(&shapes) {
            match shape {
                Shape::Lines => pass.lines(&mut b, p, &mut open)?,
                Shape::Document => pass.document(&mut b, p, &mut open)?,
            }
            if pass.weights_seen {
                break;
            }
            if let Some(h) = progress {
                if !h(total.min(total), total) {
                    return Err(Error::Cancelled);
                }
            }
        }
        if pass.weights_seen {
            weighted = true;
            passes += 1;
            continue;
        }
        let Some(b) = b else {
            let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            return Err(Error::format(format!(
                "{}: no edges and no nodes found",
                names.join(", ")
            )));
        };
        if pass.stats.edges == 0 && pass.stats.nodes_listed == 0 {
            return Err(Error::format(format!(
                "{}: no edges found",
                inputs[0].display()
            )));
        }
        let directed = b.options().directed;
        let hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
        let st = b.finish(Some(&hook))?;
        let mut stats = pass.stats;
        stats.input_bytes = total;
        stats.weighted = weighted;
        stats.directed = directed;
        return Ok((st, stats));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::csr::{Graph, NodeId};

    fn conv(files: &[(&str, &str)], opts: &JsonOptions) -> Result<(Graph, JsonStats)> {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = files
            .iter()
            .map(|(n, c)| {
                let p = dir.path().join(n);
                std::fs::write(&p, c).unwrap();
                p
            })
            .collect();
        let out = dir.path().join("out.graph");
        let r = convert_json(&paths, &out, opts, &BuildOptions::default(), None);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        let (_, st) = match r {
            Ok(v) => v,
            Err(e) => {
                assert_eq!(left.len(), files.len(), "leftovers after an error");
                return Err(e);
            }
        };
        let g = Graph::open(&out).unwrap();
        g.validate().unwrap();
        Ok((g, st))
    }

    fn ids(g: &Graph) -> Vec<String> {
        (0..g.num_nodes() as u32)
            .map(|v| match g.node_id(v).unwrap() {
                NodeId::Int(x) => x.to_string(),
                NodeId::Str(s) => s.to_string(),
            })
            .collect()
    }

    #[test]
    fn node_link_keeps_isolated_nodes_and_its_direction() {
        let doc = r#"{"directed": true, "nodes": [{"id": "a"}, {"id": "b"}, {"id": "z"}],
                      "edges": [{"source": "a", "target": "b", "weight": 2.5}]}"#;
        let (g, st) = conv(&[("g.json", doc)], &JsonOptions::default()).unwrap();
        assert_eq!(ids(&g), ["a", "b", "z"]);
        assert!(g.directed() && g.weighted() && st.directed && st.shape == "node-link");
        assert_eq!((g.num_edges(), st.nodes_listed), (1, 3));
        let undirected = JsonOptions {
            directed: Some(false),
            ..JsonOptions::default()
        };
        assert!(!conv(&[("g.json", doc)], &undirected).unwrap().0.directed());
    }

    #[test]
    fn json_lines_stream_and_type_ids() {
        let lines = "{\"src\": 3, \"dst\": 5}\n\n{\"src\": 5, \"dst\": -1, \"x\": [1]}\n";
        let (g, st) = conv(&[("e.jsonl", lines)], &JsonOptions::default()).unwrap();
        assert_eq!(ids(&g), ["-1", "3", "5"]);
        assert_eq!((st.shape, st.edges, st.weighted), ("json-lines", 2, false));
        let mixed = "{\"source\": \"a\", \"target\": 1}\n";
        let e = conv(&[("e.jsonl", mixed)], &JsonOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("e.jsonl:1: an integer id after string ones"),
            "{e}"
        );
    }

    #[test]
    fn pandas_tables_by_their_columns() {
        // pandas DataFrame({"ts": [..], "source": [..], "target": [..], "weight": [..]})
        // .to_json(orient='split') and orient='table'
        let split = "{\"columns\":[\"ts\",\"source\",\"target\",\"weight\"],\"index\":[0,1],\
                     \"data\":[[7,\"a\",\"b\",1.5],[8,\"b\",\"c\",2.0]]}";
        let table = "{\"schema\":{\"fields\":[{\"name\":\"index\",\"type\":\"integer\"},\
                     {\"name\":\"ts\",\"type\":\"integer\"},{\"name\":\"source\",\"type\":\"string\"},\
                     {\"name\":\"target\",\"type\":\"string\"},{\"name\":\"weight\",\"type\":\"number\"}],\
                     \"primaryKey\":[\"index\"],\"pandas_version\":\"1.4.0\"},\"data\":[\
                     {\"index\":0,\"ts\":7,\"source\":\"a\",\"target\":\"b\",\"weight\":1.5},\
                     {\"index\":1,\"ts\":8,\"source\":\"b\",\"target\":\"c\",\"weight\":2.0}]}";
        for doc in [split, table] {
            let (g, st) = conv(&[("e.json", doc)], &JsonOptions::default()).unwrap();
            assert_eq!(ids(&g), ["a", "b", "c"]);
            assert_eq!((st.edges, st.weighted), (2, true));
        }
        // Integer labels (DataFrame(array)): columns "0" and "1".
        let ints = "{\"columns\":[0,1],\"index\":[0,1],\"data\":[[5,7],[7,9]]}";
        let (g, _) = conv(&[("e.json", ints)], &JsonOptions::default()).unwrap();
        assert_eq!(ids(&g), ["5", "7", "9"]);
        // No known pair among three columns: refused, naming the options.
        let abc = "{\"columns\":[\"x\",\"y\",\"z\"],\"index\":[0],\"data\":[[1,2,3]]}";
        let e = conv(&[("e.json", abc)], &JsonOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("src_col"), "{e}");
    }

    #[test]
    fn refuses_json_that_is_no_graph() {
        for (doc, want) in [
            ("{\"a\": [1, 2], \"b\": [3]}", "not a graph"),
            // pandas to_json() (orient 'columns') and orient='index'
            (
                "{\"source\":{\"0\":1,\"1\":2},\"target\":{\"0\":2,\"1\":3}}",
                "pandas.read_json",
            ),
            ("{\"0\":{\"source\":1,\"target\":2}}", "ie.from_pandas"),
            ("\"text\"", "single string JSON value"),
            (
                "{\"source\": 1, \"target\": 2}\n{oops\n",
                "e.json:2: not valid JSON",
            ),
            ("", "empty file"),
        ] {
            let e = conv(&[("e.json", doc)], &JsonOptions::default())
                .err()
                .unwrap();
            assert!(
                matches!(e, Error::Format(_)) && e.to_string().contains(want),
                "{e}"
            );
        }
    }
}
