//! Pajek `.net` files (networkx `write_pajek`, igraph, Pajek itself) as an edge source.
//!
//! `*Vertices n` lists vertices `k ["label"] [x y ...]`: a vertex's id is its label when it
//! has one, else its number `k` (ids follow the text reader's typing rule). `*Arcs` lines
//! `u v [value]` are directed edges, `*Edges` lines undirected ones, `*Arcslist`/`*Edgeslist`
//! lines `u v1 v2 ...` list several; `u` and `v` are vertex numbers. A file with both arcs and
//! edges is read only when `directed` is given. Values are weights unless `weighted=False`;
//! a file whose values are all 1 (or absent) is unweighted. Every listed vertex is a node.
//! `*Matrix` sections, several networks and vertex numbers outside `1..n` are refused.

use std::cell::Cell;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::graph::external::{check_weight, BuildOptions, BuildStats, IdMode, ProgressFn};
use crate::io::input::open_input;
use crate::io::source::{EdgeSink, MakeSink};
use crate::io::text::{canonical_int, parse_int, IntTok};

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted", "id_kind"];

/// Options of the Pajek reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct PajekOptions {
    pub directed: Option<bool>,
    pub weighted: Option<bool>,
}

/// What the reader saw.
#[derive(Clone, Debug, Default)]
pub struct PajekStats {
    pub nodes: u64,
    pub edges: u64,
    pub directed: bool,
    pub weighted: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Vertices,
    Arcs,
    Edges,
    ArcsList,
    EdgesList,
}

fn err(path: &Path, line: u64, msg: impl std::fmt::Display) -> Error {
    Error::format(format!("{}:{line}: {msg}", path.display()))
}

/// Splits a line into tokens; `"..."` is one token (without its quotes).
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = line.chars().peekable();
    while let Some(&c) = it.peek() {
        if c.is_whitespace() {
            it.next();
            continue;
        }
        let mut t = String::new();
        if c == '"' {
            it.next();
            for c in it.by_ref() {
                if c == '"' {
                    break;
                }
                t.push(c);
            }
        } else {
            while let Some(&c) = it.peek() {
                if c.is_whitespace() {
                    break;
                }
                t.push(c);
                it.next();
            }
        }
        out.push(t);
    }
    out
}

/// What `scan` calls for an arc or edge: `(u, v, value, directed, line)`.
type OnEdge<'e> = dyn FnMut(u64, u64, Option<&str>, bool, u64) -> Result<()> + 'e;

/// One pass over the file: `vertex(k, label)` and `edge(u, v, value, directed, line)`.
fn scan(
    path: &Path,
    count: Rc<Cell<u64>>,
    vertex: &mut dyn FnMut(u64, Option<String>) -> Result<()>,
    edge: &mut OnEdge<'_>,
) -> Result<u64> {
    let mut r = BufReader::with_capacity(1 << 20, open_input(path, count)?);
    let mut buf = String::new();
    let mut line = 0u64;
    let mut section = Section::None;
    let mut n = 0u64;
    let mut networks = 0;
    loop {
        buf.clear();
        let k = r.read_line(&mut buf).map_err(|e| {
            err(
                path,
                line + 1,
                format!("not UTF-8 text, or damaged compressed data: {e}"),
            )
        })?;
        if k == 0 {
            return Ok(n);
        }
        line += 1;
        let t = buf.trim().trim_start_matches('\u{feff}');
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if let Some(head) = t.strip_prefix('*') {
            let words: Vec<&str> = head.split_whitespace().collect();
            let kw = words
                .first()
                .map(|w| w.to_ascii_lowercase())
                .unwrap_or_default();
            section = match kw.as_str() {
                "vertices" => {
                    n = words
                        .get(1)
                        .and_then(|x| x.parse::<u64>().ok())
                        .filter(|&x| x < (1 << 32))
                        .ok_or_else(|| err(path, line, "'*Vertices' needs a vertex count"))?;
                    Section::Vertices
                }
                "arcs" => Section::Arcs,
                "edges" => Section::Edges,
                "arcslist" => Section::ArcsList,
                "edgeslist" => Section::EdgesList,
                "network" => {
                    networks += 1;
                    if networks > 1 {
                        return Err(err(path, line, "several networks in one file are not read"));
                    }
                    Section::None
                }
                other => {
                    return Err(err(
                        path,
                        line,
                        format!(
                            "a '*{other}' section is not read (vertices, arcs, edges and their \
                             lists are): load the file with networkx.read_pajek and pass the \
                             graph to ie.from_networkx"
                        ),
                    ))
                }
            };
            continue;
        }
        let tok = tokens(t);
        let num = |s: &str| -> Result<u64> {
            s.parse::<u64>()
                .ok()
                .filter(|&v| (1..=n).contains(&v))
                .ok_or_else(|| {
                    err(
                        path,
                        line,
                        format!("'{s}' is not a vertex number in 1..{n}"),
                    )
                })
        };
        match section {
            Section::None => {
                return Err(err(path, line, "a line before any '*Vertices' section"));
            }
            Section::Vertices => {
                let k = num(&tok[0])?;
                vertex(k, tok.get(1).cloned())?;
            }
            Section::Arcs | Section::Edges => {
                if tok.len() < 2 {
                    return Err(err(path, line, "an arc or edge needs two vertex numbers"));
                }
                let (u, v) = (num(&tok[0])?, num(&tok[1])?);
                edge(
                    u,
                    v,
                    tok.get(2).map(String::as_str),
                    section == Section::Arcs,
                    line,
                )?;
            }
            Section::ArcsList | Section::EdgesList => {
                let u = num(&tok[0])?;
                for x in &tok[1..] {
                    edge(u, num(x)?, None, section == Section::ArcsList, line)?;
                }
            }
        }
    }
}

/// Reads a Pajek file into a sink made by `make(ids, directed, weighted)`.
pub fn read_pajek<S: EdgeSink>(
    path: &Path,
    opts: PajekOptions,
    ids: IdMode,
    make: &mut MakeSink<'_, S>,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(S, PajekStats)> {
    // First pass: labels, the kinds of edge sections, whether values are weights.
    let mut labels: Vec<Option<String>> = Vec::new();
    let (mut arcs, mut edges, mut all_one) = (false, false, true);
    let mut bad_value: Option<(u64, String)> = None;
    let n = scan(
        path,
        Rc::new(Cell::new(0)),
        &mut |k, label| {
            let i = (k - 1) as usize;
            if labels.len() <= i {
                labels.resize(i + 1, None);
            }
            labels[i] = label;
            Ok(())
        },
        &mut |_, _, value, directed, line| {
            if directed {
                arcs = true;
            } else {
                edges = true;
            }
            if let Some(v) = value {
                match v.parse::<f64>() {
                    Ok(1.0) => {}
                    Ok(x) if x.is_finite() && x > 0.0 => all_one = false,
                    _ => {
                        all_one = false;
                        bad_value.get_or_insert((line, v.to_string()));
                    }
                }
            }
            Ok(())
        },
    )?;
    let directed = match (opts.directed, arcs, edges) {
        (Some(d), _, _) => d,
        (None, true, true) => {
            return Err(Error::format(format!(
                "{}: both '*Arcs' and '*Edges': pass directed=True (edges become both arcs) \
                 or directed=False",
                path.display()
            )))
        }
        (None, a, _) => a,
    };
    let weighted = opts.weighted.unwrap_or(!all_one);
    if weighted {
        if let Some((line, v)) = bad_value {
            return Err(err(
                path,
                line,
                format!(
                    "value '{v}' is not a weight (finite and > 0); pass weighted=False to \
                     ignore the values"
                ),
            ));
        }
    }
    let name = |k: u64| -> String {
        labels
            .get((k - 1) as usize)
            .and_then(Clone::clone)
            .unwrap_or_else(|| k.to_string())
    };
    let ints = (1..=n).all(|k| canonical_int(name(k).as_bytes()).is_some());
    let mode = match ids {
        IdMode::Auto | IdMode::Implicit => {
            if ints {
                IdMode::Int
            } else {
                IdMode::Str
            }
        }
        m => m,
    };
    let int = |s: &str| -> Result<i64> {
        match parse_int(s.as_bytes()) {
            IntTok::Int(v) => Ok(v),
            _ => Err(Error::format(format!(
                "{}: vertex label '{s}' is not an integer (id_kind='int')",
                path.display()
            ))),
        }
    };
    let mut b = make(mode, directed, weighted)?;
    let ids: Vec<String> = (1..=n).map(name).collect();
    let at = |e: Error| match e {
        Error::InvalidInput(m) => Error::format(format!("{}: {m}", path.display())),
        e => e,
    };
    for id in &ids {
        if mode == IdMode::Str {
            b.push_node_str(id).map_err(at)?;
        } else {
            b.push_node_int(int(id)?).map_err(at)?;
        }
    }
    let mut st = PajekStats {
        nodes: n,
        directed,
        weighted,
        ..PajekStats::default()
    };
    let total = std::fs::metadata(path).map_or(1, |m| m.len().max(1));
    let count = Rc::new(Cell::new(0u64));
    let c2 = count.clone();
    scan(
        path,
        count,
        &mut |_, _| Ok(()),
        &mut |u, v, value, arc, _line| {
            st.edges += 1;
            if st.edges % 65536 == 0 && !progress.is_none_or(|h| h(c2.get().min(total), total)) {
                return Err(Error::Cancelled);
            }
            let w = match (weighted, value) {
                (true, Some(x)) => check_weight(x.parse::<f64>().unwrap_or(1.0)).map_err(at)?,
                _ => 1.0,
            };
            let (s, t) = (&ids[(u - 1) as usize], &ids[(v - 1) as usize]);
            // An undirected edge in a graph read as directed: both arcs.
            let both = directed && !arc && u != v;
            if mode == IdMode::Str {
                b.push_str(s, t, w).map_err(at)?;
                if both {
                    b.push_str(t, s, w).map_err(at)?;
                }
            } else {
                let (si, ti) = (int(s)?, int(t)?);
                b.push_int(si, ti, w).map_err(at)?;
                if both {
                    b.push_int(ti, si, w).map_err(at)?;
                }
            }
            Ok(())
        },
    )?;
    Ok((b, st))
}

/// Converts a Pajek file into a graph file at `output` (atomically).
pub fn convert_pajek(
    path: &Path,
    output: &Path,
    opts: PajekOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, PajekStats)> {
    crate::io::source::build_file(path, output, build, progress, |make| {
        read_pajek(path, opts, build.ids, make, progress)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::source::{BufferedIds, EdgeBuffer};

    #[test]
    fn labels_are_ids_and_values_weights() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.net");
        std::fs::write(
            &p,
            "*Vertices 3\n1 \"a b\" 0.1 0.2\n2 c\n3 d\n*Edges\n1 2 2.5\n2 3 1\n",
        )
        .unwrap();
        let mut make = |m: IdMode, d: bool, w: bool| {
            assert!(!d && w);
            Ok(EdgeBuffer::new(m, None))
        };
        let (b, st) =
            read_pajek(&p, PajekOptions::default(), IdMode::Auto, &mut make, None).unwrap();
        assert_eq!((st.nodes, st.edges), (3, 2));
        let BufferedIds::Str(s, t) = b.ids else {
            panic!("string ids")
        };
        assert_eq!(s, vec!["a b", "c"]);
        assert_eq!(t, vec!["c", "d"]);
        assert_eq!(b.weights, vec![2.5, 1.0]);
    }
}
