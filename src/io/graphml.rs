//! GraphML (networkx, igraph, Gephi, yEd) as an edge source, streamed by `quick-xml`.
//!
//! One `<graph>` with `<node id>` and `<edge source target>` elements. Direction comes from
//! `edgedefault` unless `directed` is given (a file without it must be told); an edge whose
//! own `directed` attribute disagrees is refused. Weights come from the edge key whose
//! `attr.name` is `weight`: read unless `weighted=False`, the key's `<default>` (else 1) for
//! edges without it. Ids follow the text reader's typing rule (integers only if every id is a
//! canonical int64). Declared nodes without edges are kept.
//!
//! Hostile files are refused, never expanded: a DOCTYPE (and so any entity declaration or
//! external entity), an entity reference other than the five predefined ones and character
//! references, nesting deeper than `MAX_DEPTH`, an element or text run longer than
//! `MAX_EVENT` bytes, nested graphs, hyperedges and ports.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use crate::error::{Error, Result};
use crate::graph::external::{check_weight, BuildOptions, BuildStats, IdMode, ProgressFn};
use crate::io::input::open_input;
use crate::io::source::{EdgeSink, MakeSink};
use crate::io::text::canonical_int;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted", "id_kind"];

/// Deepest element nesting read (GraphML needs 4: graphml, graph, edge, data).
const MAX_DEPTH: usize = 64;
/// Longest element or text run, in bytes.
const MAX_EVENT: u64 = 1 << 24;

/// Options of the GraphML reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct GraphMlOptions {
    pub directed: Option<bool>,
    pub weighted: Option<bool>,
}

/// What the reader saw.
#[derive(Clone, Debug, Default)]
pub struct GraphMlStats {
    pub input_bytes: u64,
    pub nodes: u64,
    pub edges: u64,
    pub directed: bool,
    pub weighted: bool,
}

/// A reader that fails when one event runs longer than `MAX_EVENT` bytes (bounded memory).
struct Guard<R> {
    inner: R,
    since: Rc<Cell<u64>>,
}

impl<R: BufRead> Guard<R> {
    fn check(&self) -> std::io::Result<()> {
        if self.since.get() > MAX_EVENT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "an element or text run longer than 16 MiB",
            ));
        }
        Ok(())
    }
}

impl<R: BufRead> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.check()?;
        let n = self.inner.read(buf)?;
        self.since.set(self.since.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Guard<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.check()?;
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.since.set(self.since.get() + amt as u64);
    }
}

fn err(path: &Path, pos: u64, msg: impl std::fmt::Display) -> Error {
    Error::format(format!("{} (byte {pos}): {msg}", path.display()))
}

/// What the declarations say, from the first pass.
#[derive(Default)]
struct Plan {
    ints: bool,
    /// Key ids of edge weights, with their default value.
    weight_keys: HashMap<String, Option<String>>,
    edgedefault: Option<bool>,
}

enum Item {
    Node(String),
    Edge(String, String, Option<f32>, u64),
}

struct Pass<'p> {
    path: &'p Path,
    count: Rc<Cell<u64>>,
}

fn attr(path: &Path, pos: u64, e: &BytesStart<'_>, name: &[u8]) -> Result<Option<String>> {
    for a in e.attributes() {
        let a = a.map_err(|x| err(path, pos, format!("malformed attribute: {x}")))?;
        if a.key.as_ref() == name {
            let v = a.unescape_value().map_err(|x| {
                err(
                    path,
                    pos,
                    format!("attribute value with an entity that is not predefined: {x}"),
                )
            })?;
            return Ok(Some(v.into_owned()));
        }
    }
    Ok(None)
}

impl Pass<'_> {
    /// Streams the file, calling `visit` for each node and edge. `plan`: filled in (keys,
    /// edgedefault) when `first` is true.
    fn run(
        &self,
        plan: &mut Plan,
        first: bool,
        weight_of: Option<&HashMap<String, Option<String>>>,
        visit: &mut dyn FnMut(Item) -> Result<()>,
    ) -> Result<()> {
        let path = self.path;
        let since = Rc::new(Cell::new(0u64));
        let raw = BufReader::with_capacity(1 << 16, open_input(path, self.count.clone())?);
        let mut r = Reader::from_reader(Guard {
            inner: raw,
            since: since.clone(),
        });
        r.config_mut().expand_empty_elements = false;
        r.config_mut().trim_text(true);
        let mut buf = Vec::new();
        let mut depth = 0usize;
        let mut stack: Vec<Vec<u8>> = Vec::new();
        let mut graphs = 0;
        // The edge being read: (source, target, weight text, byte).
        let mut edge: Option<(String, String, Option<String>, u64)> = None;
        // Inside <data key=K> of an edge whose K is a weight key; inside <key ...><default>.
        let mut data_key: Option<String> = None;
        let mut key_id: Option<(String, bool)> = None;
        let mut in_default = false;
        let mut text = String::new();
        loop {
            since.set(0);
            buf.clear();
            let pos = r.buffer_position();
            let ev = r
                .read_event_into(&mut buf)
                .map_err(|e| err(path, pos, format!("not well-formed XML: {e}")))?;
            match ev {
                Event::DocType(_) => {
                    return Err(err(
                        path,
                        pos,
                        "a DOCTYPE (entity declarations, external entities) is not read: \
                         GraphML needs none; remove it",
                    ))
                }
                Event::GeneralRef(g) => {
                    let name = g.as_ref();
                    let s = match name {
                        b"amp" => "&".to_string(),
                        b"lt" => "<".to_string(),
                        b"gt" => ">".to_string(),
                        b"quot" => "\"".to_string(),
                        b"apos" => "'".to_string(),
                        _ => match g.resolve_char_ref() {
                            Ok(Some(c)) => c.to_string(),
                            _ => {
                                return Err(err(
                                    path,
                                    pos,
                                    format!(
                                        "entity reference &{}; is not predefined and is not \
                                         expanded",
                                        String::from_utf8_lossy(name)
                                    ),
                                ))
                            }
                        },
                    };
                    text.push_str(&s);
                }
                Event::Text(t) => {
                    let s = t
                        .decode()
                        .map_err(|e| err(path, pos, format!("not UTF-8 text: {e}")))?;
                    text.push_str(&s);
                }
                Event::CData(t) => {
                    text.push_str(&String::from_utf8_lossy(&t));
                }
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let empty = matches!(ev, Event::Empty(_));
                    let name = e.local_name().as_ref().to_vec();
                    if !empty {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return Err(err(
                                path,
                                pos,
                                format!("elements nested deeper than {MAX_DEPTH}"),
                            ));
                        }
                        stack.push(name.clone());
                    }
                    text.clear();
                    let parent = stack
                        .len()
                        .checked_sub(if empty { 1 } else { 2 })
                        .and_then(|i| stack.get(i))
                        .map(Vec::as_slice);
                    match name.as_slice() {
                        b"graphml" => {}
                        b"graph" => {
                            graphs += 1;
                            if graphs > 1 || parent != Some(b"graphml".as_slice()) {
                                return Err(err(
                                    path,
                                    pos,
                                    "several or nested <graph> elements are not read: load the \
                                     file with networkx.read_graphml and pass the graph to \
                                     ie.from_networkx",
                                ));
                            }
                            if first {
                                plan.edgedefault =
                                    match attr(path, pos, e, b"edgedefault")?.as_deref() {
                                        Some("directed") => Some(true),
                                        Some("undirected") => Some(false),
                                        None => None,
                                        Some(o) => {
                                            return Err(err(
                                                path,
                                                pos,
                                                format!(
                                            "edgedefault '{o}' is not 'directed' or 'undirected'"
                                        ),
                                            ))
                                        }
                                    };
                            }
                        }
                        b"key" => {
                            let id = attr(path, pos, e, b"id")?.unwrap_or_default();
                            let for_ = attr(path, pos, e, b"for")?.unwrap_or_default();
                            let an = attr(path, pos, e, b"attr.name")?.unwrap_or_default();
                            let is_w = (for_ == "edge" || for_ == "all")
                                && an.eq_ignore_ascii_case("weight");
                            if first && is_w {
                                plan.weight_keys.insert(id.clone(), None);
                            }
                            key_id = if empty { None } else { Some((id, is_w)) };
                        }
                        b"default" => in_default = key_id.as_ref().is_some_and(|k| k.1),
                        b"node" => {
                            if parent != Some(b"graph".as_slice()) {
                                return Err(err(path, pos, "a <node> outside the <graph>"));
                            }
                            let id = attr(path, pos, e, b"id")?
                                .ok_or_else(|| err(path, pos, "a <node> without an id"))?;
                            visit(Item::Node(id))?;
                        }
                        b"edge" => {
                            let s = attr(path, pos, e, b"source")?;
                            let t = attr(path, pos, e, b"target")?;
                            let (Some(s), Some(t)) = (s, t) else {
                                return Err(err(path, pos, "an <edge> without source and target"));
                            };
                            if let Some(d) = attr(path, pos, e, b"directed")? {
                                let d = d == "true" || d == "1";
                                if plan.edgedefault.is_some_and(|x| x != d) {
                                    return Err(err(
                                        path,
                                        pos,
                                        "an edge whose 'directed' differs from the graph's \
                                         edgedefault: mixed graphs are not read",
                                    ));
                                }
                            }
                            if empty {
                                visit(
                                    Item::Edge(s, t, None, pos)
                                        .with_weight(path, weight_of, None)?,
                                )?;
                            } else {
                                edge = Some((s, t, None, pos));
                            }
                        }
                        b"data" => {
                            let k = attr(path, pos, e, b"key")?.unwrap_or_default();
                            data_key = (edge.is_some()
                                && weight_of.is_some_and(|w| w.contains_key(&k)))
                            .then_some(k);
                        }
                        b"hyperedge" | b"port" => {
                            return Err(err(
                                path,
                                pos,
                                format!(
                                    "<{}> is not read: load the file with networkx or igraph",
                                    String::from_utf8_lossy(&name)
                                ),
                            ))
                        }
                        _ => {}
                    }
                }
                Event::End(e) => {
                    let name = e.local_name().as_ref().to_vec();
                    depth = depth.saturating_sub(1);
                    stack.pop();
                    match name.as_slice() {
                        b"data" if data_key.take().is_some() => {
                            if let Some(ed) = edge.as_mut() {
                                ed.2 = Some(text.trim().to_string());
                            }
                        }
                        b"default" => {
                            if in_default && first {
                                if let Some((id, _)) = &key_id {
                                    plan.weight_keys
                                        .insert(id.clone(), Some(text.trim().to_string()));
                                }
                            }
                            in_default = false;
                        }
                        b"key" => key_id = None,
                        b"edge" => {
                            if let Some((s, t, w, at)) = edge.take() {
                                visit(Item::Edge(s, t, None, at).with_weight(
                                    path,
                                    weight_of,
                                    w.as_deref(),
                                )?)?;
                            }
                        }
                        _ => {}
                    }
                    text.clear();
                }
                Event::Eof => break,
                _ => {}
            }
        }
        if graphs == 0 {
            return Err(Error::format(format!(
                "{}: GraphML without a <graph> element",
                path.display()
            )));
        }
        Ok(())
    }
}

impl Item {
    /// The edge with its weight: `text` (from its data), else the key's default, else 1.
    fn with_weight(
        self,
        path: &Path,
        keys: Option<&HashMap<String, Option<String>>>,
        text: Option<&str>,
    ) -> Result<Self> {
        let Item::Edge(s, t, _, at) = self else {
            return Ok(self);
        };
        let Some(keys) = keys else {
            return Ok(Item::Edge(s, t, None, at));
        };
        let default = keys.values().flatten().next().map(String::as_str);
        let w = match text.or(default) {
            None => 1.0,
            Some(x) => {
                let v: f64 = x
                    .parse()
                    .map_err(|_| err(path, at, format!("edge weight '{x}' is not a number")))?;
                if !(v.is_finite() && v > 0.0) {
                    return Err(err(
                        path,
                        at,
                        format!(
                            "edge weight '{x}' is not > 0 and finite; pass weighted=False to \
                             ignore the weights"
                        ),
                    ));
                }
                check_weight(v).map_err(|e| err(path, at, e))?
            }
        };
        Ok(Item::Edge(s, t, Some(w), at))
    }
}

/// Reads a GraphML file into a sink made by `make(ids, directed, weighted)`.
pub fn read_graphml<S: EdgeSink>(
    path: &Path,
    opts: GraphMlOptions,
    ids: IdMode,
    make: &mut MakeSink<'_, S>,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(S, GraphMlStats)> {
    let total = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len()
        .max(1);
    // First pass: declarations and the id kind.
    let mut plan = Plan {
        ints: true,
        ..Plan::default()
    };
    let pass = Pass {
        path,
        count: Rc::new(Cell::new(0)),
    };
    let mut ints = true;
    {
        let mut p2 = Plan::default();
        pass.run(&mut p2, true, None, &mut |item| {
            match item {
                Item::Node(id) => ints &= canonical_int(id.as_bytes()).is_some(),
                Item::Edge(s, t, _, _) => {
                    ints &= canonical_int(s.as_bytes()).is_some()
                        && canonical_int(t.as_bytes()).is_some()
                }
            }
            Ok(())
        })?;
        plan.weight_keys = p2.weight_keys;
        plan.edgedefault = p2.edgedefault;
    }
    plan.ints = ints;
    let directed = match (opts.directed, plan.edgedefault) {
        (Some(d), _) => d,
        (None, Some(d)) => d,
        (None, None) => {
            return Err(Error::format(format!(
                "{}: the <graph> has no edgedefault: pass directed=True or directed=False",
                path.display()
            )))
        }
    };
    let weighted = match opts.weighted {
        Some(false) => false,
        Some(true) if plan.weight_keys.is_empty() => {
            return Err(Error::param(format!(
                "{}: weighted=True, but no edge key is named 'weight'",
                path.display()
            )))
        }
        _ => !plan.weight_keys.is_empty(),
    };
    let mode = match ids {
        IdMode::Auto | IdMode::Implicit => {
            if plan.ints {
                IdMode::Int
            } else {
                IdMode::Str
            }
        }
        m => m,
    };
    let mut b = make(mode, directed, weighted)?;
    let mut st = GraphMlStats {
        directed,
        weighted,
        ..GraphMlStats::default()
    };
    let count = Rc::new(Cell::new(0u64));
    let pass = Pass {
        path,
        count: count.clone(),
    };
    let keys = weighted.then_some(&plan.weight_keys);
    let mut n = 0u64;
    let mut scratch = Plan::default();
    pass.run(&mut scratch, false, keys, &mut |item| {
        n += 1;
        if n % 65536 == 0 && !progress.is_none_or(|h| h(count.get().min(total), total)) {
            return Err(Error::Cancelled);
        }
        let int = |x: &str| -> Result<i64> {
            match crate::io::text::parse_int(x.as_bytes()) {
                crate::io::text::IntTok::Int(v) => Ok(v),
                _ => Err(Error::format(format!(
                    "{}: node id '{x}' is not an integer (id_kind='int')",
                    path.display()
                ))),
            }
        };
        let at = |e: Error| match e {
            Error::InvalidInput(m) => Error::format(format!("{}: {m}", path.display())),
            e => e,
        };
        match item {
            Item::Node(id) => {
                st.nodes += 1;
                if mode == IdMode::Str {
                    b.push_node_str(&id).map_err(at)
                } else {
                    b.push_node_int(int(&id)?).map_err(at)
                }
            }
            Item::Edge(s, t, w, _) => {
                st.edges += 1;
                let w = w.unwrap_or(1.0);
                if mode == IdMode::Str {
                    b.push_str(&s, &t, w).map_err(at)
                } else {
                    b.push_int(int(&s)?, int(&t)?, w).map_err(at)
                }
            }
        }
    })?;
    st.input_bytes = count.get();
    Ok((b, st))
}

/// Converts a GraphML file into a graph file at `output` (atomically).
pub fn convert_graphml(
    path: &Path,
    output: &Path,
    opts: GraphMlOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, GraphMlStats)> {
    crate::io::source::build_file(path, output, build, progress, |make| {
        read_graphml(path, opts, build.ids, make, progress)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::source::{BufferedIds, EdgeBuffer};

    fn read(xml: &str, opts: GraphMlOptions) -> Result<(EdgeBuffer<'static>, GraphMlStats)> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.graphml");
        std::fs::write(&p, xml).unwrap();
        let mut make = |m: IdMode, _d: bool, _w: bool| Ok(EdgeBuffer::new(m, None));
        read_graphml(&p, opts, IdMode::Auto, &mut make, None)
    }

    const HEAD: &str = r#"<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="d0" for="edge" attr.name="weight" attr.type="double"><default>2.5</default></key>
"#;

    #[test]
    fn reads_nodes_edges_and_weights() {
        let xml = format!(
            "{HEAD}<graph edgedefault=\"undirected\"><node id=\"0\"/><node id=\"1\"/>\
             <node id=\"7\"/><edge source=\"0\" target=\"1\"><data key=\"d0\">4</data></edge>\
             <edge source=\"1\" target=\"0\"/></graph></graphml>"
        );
        let (b, st) = read(&xml, GraphMlOptions::default()).unwrap();
        assert!(!st.directed && st.weighted && st.nodes == 3 && st.edges == 2);
        let BufferedIds::Int(s, d) = b.ids else {
            panic!("int ids")
        };
        assert_eq!((s, d, b.weights), (vec![0, 1], vec![1, 0], vec![4.0, 2.5]));
    }

    #[test]
    fn hostile_files_are_refused() {
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">\
                    <!ENTITY lol2 \"&lol;&lol;\">]><graphml><graph edgedefault=\"directed\">\
                    <node id=\"&lol2;\"/></graph></graphml>";
        let e = read(bomb, GraphMlOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("DOCTYPE"), "{e}");
        let ext = "<graphml><graph edgedefault=\"directed\"><node id=\"a\"><data key=\"x\">\
                   &ext;</data></node></graph></graphml>";
        let e = read(ext, GraphMlOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("&ext;"), "{e}");
        let deep = format!(
            "<graphml><graph edgedefault=\"directed\">{}{}</graph></graphml>",
            "<a>".repeat(100),
            "</a>".repeat(100)
        );
        let e = read(&deep, GraphMlOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("nested deeper"), "{e}");
        let no_default = "<graphml><graph><node id=\"a\"/></graph></graphml>";
        let e = read(no_default, GraphMlOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("directed=True"), "{e}");
    }
}
