//! What a file is, from its content: the first step of the reading contract (docs/CLI.md,
//! "How a file is recognised"). Formats with a signature in their first bytes are told apart
//! here, after decompression, before any extension is looked at; a file that is none of them
//! is text (or binary data) and its extension decides.

use std::cell::Cell;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::io::input::open_input;

/// Bytes of (decompressed) content examined.
const HEAD: usize = 1 << 16;

/// What the content of a file says it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// This library's graph file (`IEGRAPH\0`).
    Graph,
    /// A JSON document or JSON Lines (`{` or `[` first).
    Json,
    /// Matrix Market (`%%MatrixMarket` banner).
    MatrixMarket,
    /// GraphML (XML with a `graphml` root element).
    GraphMl,
    /// Other XML: the root element's name (`gexf`, `html`, ...).
    Xml(String),
    /// Pajek `.net` (`*Vertices`, `*Arcs`, `*Edges` or `*Network` first).
    Pajek,
    /// Graphviz DOT (`graph`, `digraph` or `strict` ... `{` first).
    Dot,
    /// GML (`graph [`, or igraph's `Creator "..."` line, first).
    Gml,
    /// LEDA's native graph format (`LEDA.GRAPH` first).
    Leda,
    /// A graph format of another tool that no reader here takes and whose lines would
    /// otherwise pass for an edge list: what it is, and how to load it instead.
    Foreign(&'static str, &'static str),
    /// Anything else: text edge lists, CSV, binary data.
    Other,
}

impl Content {
    /// The word the Python layer routes on.
    pub fn name(&self) -> &str {
        match self {
            Content::Graph => "graph",
            Content::Json => "json",
            Content::MatrixMarket => "mtx",
            Content::GraphMl => "graphml",
            Content::Xml(_) => "xml",
            Content::Pajek => "pajek",
            Content::Dot => "dot",
            Content::Gml => "gml",
            Content::Leda => "leda",
            Content::Foreign(..) => "foreign",
            Content::Other => "",
        }
    }
}

/// The first bytes of `path`'s content (decompressed), at most `HEAD`.
pub fn head(path: &Path) -> Result<Vec<u8>> {
    let mut r = open_input(path, Rc::new(Cell::new(0)))?;
    let mut buf = vec![0u8; HEAD];
    let mut n = 0;
    while n < HEAD {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Damaged compressed data: the reader that follows reports it with its line.
            Err(_) => break,
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// What `path` holds, from its content.
pub fn sniff(path: &Path) -> Result<Content> {
    Ok(classify(&head(path)?))
}

fn skip_blank(mut t: &[u8]) -> &[u8] {
    while let [c, rest @ ..] = t {
        if c.is_ascii_whitespace() {
            t = rest;
        } else {
            break;
        }
    }
    t
}

/// The content kind of a file starting with `head`.
pub fn classify(head: &[u8]) -> Content {
    if head.starts_with(b"IEGRAPH\0") {
        return Content::Graph;
    }
    let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if body.starts_with(b"%%MatrixMarket") || body.starts_with(b"%%matrixmarket") {
        return Content::MatrixMarket;
    }
    let t = skip_blank(body);
    match t.first() {
        Some(b'{' | b'[') => return Content::Json,
        Some(b'<') => {
            return match xml_root(t) {
                Some(r) if r.eq_ignore_ascii_case("graphml") => Content::GraphMl,
                Some(r) => Content::Xml(r),
                None => Content::Xml(String::new()),
            }
        }
        _ => {}
    }
    // The first line that is not blank or a comment.
    for line in body.split(|&c| c == b'\n') {
        let l = skip_blank(line);
        if l.is_empty() || l.starts_with(b"%") || l.starts_with(b"#") || l.starts_with(b"//") {
            continue;
        }
        let low: Vec<u8> = l.iter().take(32).map(u8::to_ascii_lowercase).collect();
        for kw in [
            &b"*vertices"[..],
            b"*arcs",
            b"*edges",
            b"*network",
            b"*matrix",
        ] {
            if low.starts_with(kw) {
                return Content::Pajek;
            }
        }
        if low.starts_with(b"leda.graph") {
            return Content::Leda;
        }
        if is_dot(body) {
            return Content::Dot;
        }
        if is_gml(l, body) {
            return Content::Gml;
        }
        break;
    }
    foreign(body).unwrap_or(Content::Other)
}

/// The graph formats of other tools that look like text edge lists at a glance.
fn foreign(body: &[u8]) -> Option<Content> {
    let lines: Vec<&[u8]> = body
        .split(|&c| c == b'\n')
        .map(|l| {
            let l = skip_blank(l);
            let end = l
                .iter()
                .rposition(|c| !c.is_ascii_whitespace())
                .map_or(0, |i| i + 1);
            &l[..end]
        })
        .filter(|l| !l.is_empty())
        .take(1000)
        .collect();
    let first = lines.first()?;
    let low = first.to_ascii_lowercase();
    let nx = |what, todo| Content::Foreign(what, todo);
    if low.starts_with(b">>graph6<<")
        || low.starts_with(b">>sparse6<<")
        || low.starts_with(b">>digraph6<<")
    {
        return Some(nx(
            "a graph6/sparse6 file",
            "load it with networkx.read_graph6 (or read_sparse6) and pass the graph to ie.from_networkx",
        ));
    }
    if lines.len() <= 2 && lines.iter().all(|l| is_graph6(l)) {
        return Some(nx(
            "a graph6/sparse6 file",
            "load it with networkx.read_graph6 (or read_sparse6) and pass the graph to ie.from_networkx",
        ));
    }
    // networkx write_network_text: a drawing of the graph as a tree.
    if ["╙── ", "╟── ", "+-- "]
        .iter()
        .any(|p| first.starts_with(p.as_bytes()))
    {
        return Some(nx(
            "a drawing of a graph (networkx write_network_text), not its data",
            "write the graph with networkx.write_edgelist, or pass it to ie.from_networkx",
        ));
    }
    if low.starts_with(b"nodedef>") || low.starts_with(b"edgedef>") {
        return Some(nx(
            "a GDF file (GUESS, Gephi)",
            "open it in Gephi and export it as GraphML (format='graphml')",
        ));
    }
    if low.starts_with(b"*node data") || low.starts_with(b"*tie data") {
        return Some(nx(
            "a NetDraw VNA file",
            "build a networkx graph from its '*tie data' lines and pass it to ie.from_networkx",
        ));
    }
    let words: Vec<&[u8]> = low
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    if words.first() == Some(&&b"dl"[..]) && low.windows(2).any(|w| w == b"n=" || w == b"n ") {
        return Some(nx(
            "a UCINET DL file",
            "load it with igraph.Graph.Read_DL(path).to_networkx() and pass the graph to ie.from_networkx",
        ));
    }
    // DIMACS: `c` comment lines, then a `p FORMAT n m` problem line.
    let p = lines
        .iter()
        .position(|l| !l.starts_with(b"c ") && *l != b"c")?;
    let pw: Vec<&[u8]> = lines[p]
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    if pw.len() >= 4 && pw[0] == b"p" && pw[2..4].iter().all(|w| w.iter().all(u8::is_ascii_digit)) {
        return Some(nx(
            "a DIMACS graph file (a 'p' problem line; 'a'/'e' lines hold the edges)",
            "build a networkx graph from its 'a'/'e' lines and pass it to ie.from_networkx",
        ));
    }
    // TGF (yEd): node lines, a line `#`, then edge lines. Comments never come first here.
    if let Some(h) = lines.iter().position(|l| *l == b"#") {
        if h > 0 && h + 1 < lines.len() && !lines[..h].iter().any(|l| l.starts_with(b"#")) {
            return Some(nx(
                "a Trivial Graph Format (TGF) file (nodes, '#', edges)",
                "open it in yEd and save it as GraphML (format='graphml')",
            ));
        }
    }
    None
}

/// One graph6 or sparse6 line without its header: printable characters 63..=126 (sparse6
/// after a `:`), of the length graph6 gives a graph of the size its first character says.
fn is_graph6(l: &[u8]) -> bool {
    if let Some(rest) = l.strip_prefix(b":") {
        return rest.len() >= 2 && rest.iter().all(|c| (63..=126).contains(c));
    }
    if l.len() < 2 || !l.iter().all(|c| (63..=126).contains(c)) || l[0] > 62 + 63 {
        return false;
    }
    let n = (l[0] - 63) as usize;
    l.len() == 1 + (n * n.saturating_sub(1) / 2).div_ceil(6)
}

/// GML: `graph [` (networkx), or a `Creator "..."` line (igraph) before `graph [`.
fn is_gml(first: &[u8], body: &[u8]) -> bool {
    let words = |t: &[u8]| -> Vec<Vec<u8>> {
        t.split(|c| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .take(2)
            .map(<[u8]>::to_vec)
            .collect()
    };
    let w = words(first);
    if w.first().is_some_and(|x| x.as_slice() == b"Creator") {
        return true;
    }
    if w.first().is_some_and(|x| x.as_slice() == b"graph[") {
        return true;
    }
    if w.first().is_some_and(|x| x.as_slice() == b"graph") {
        return match w.get(1) {
            Some(x) => x.starts_with(b"["),
            // `graph` alone on its line: the next line opens the list.
            None => {
                let at = body
                    .windows(first.len().max(1))
                    .position(|x| x == first)
                    .map_or(body.len(), |i| i + first.len());
                skip_blank(&body[at.min(body.len())..]).starts_with(b"[")
            }
        };
    }
    false
}

/// Graphviz DOT: `[strict] (graph|digraph) [name] {`, possibly after `/* */` comments.
fn is_dot(body: &[u8]) -> bool {
    let mut t = skip_blank(body);
    loop {
        if let Some(rest) = t.strip_prefix(b"/*") {
            match rest.windows(2).position(|w| w == b"*/") {
                Some(i) => t = skip_blank(&rest[i + 2..]),
                None => return false,
            }
        } else if t.starts_with(b"//") || t.starts_with(b"#") {
            match memchr::memchr(b'\n', t) {
                Some(i) => t = skip_blank(&t[i + 1..]),
                None => return false,
            }
        } else {
            break;
        }
    }
    let words: Vec<&[u8]> = t
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    let lower = |w: &[u8]| w.to_ascii_lowercase();
    let mut i = 0;
    if words.first().is_some_and(|w| lower(w) == b"strict") {
        i = 1;
    }
    let Some(kw) = words.get(i) else { return false };
    let kw = lower(kw);
    let opens = |w: &[u8]| w.starts_with(b"{");
    // `graph{a--b}`: the keyword may run into the brace.
    let brace = kw.iter().position(|&c| c == b'{');
    let base = &kw[..brace.unwrap_or(kw.len())];
    let kw_ok = base == b"graph" || base == b"digraph";
    kw_ok
        && (brace.is_some()
            || words
                .get(i + 1)
                .is_some_and(|w| opens(w) || w.ends_with(b"{"))
            || words.get(i + 2).is_some_and(|w| opens(w)))
}

/// The name of the root element of an XML document, skipping the XML declaration, comments,
/// processing instructions and a DOCTYPE. `None` when it is not within the head.
fn xml_root(t: &[u8]) -> Option<String> {
    let mut t = t;
    loop {
        t = skip_blank(t);
        if let Some(rest) = t.strip_prefix(b"<?") {
            let i = rest.windows(2).position(|w| w == b"?>")?;
            t = &rest[i + 2..];
        } else if let Some(rest) = t.strip_prefix(b"<!--") {
            let i = rest.windows(3).position(|w| w == b"-->")?;
            t = &rest[i + 3..];
        } else if let Some(rest) = t.strip_prefix(b"<!") {
            // DOCTYPE (possibly with an internal subset in brackets).
            let mut depth = 0i32;
            let mut end = None;
            for (k, &c) in rest.iter().enumerate() {
                match c {
                    b'[' => depth += 1,
                    b']' => depth -= 1,
                    b'>' if depth <= 0 => {
                        end = Some(k);
                        break;
                    }
                    _ => {}
                }
            }
            t = &rest[end? + 1..];
        } else if let Some(rest) = t.strip_prefix(b"<") {
            let name: Vec<u8> = rest
                .iter()
                .take_while(|&&c| !c.is_ascii_whitespace() && c != b'>' && c != b'/')
                .copied()
                .collect();
            let name = String::from_utf8_lossy(&name).into_owned();
            // A namespace prefix (`<ns:graphml>`) does not change what the element is.
            let local = name.rsplit(':').next().unwrap_or("").to_string();
            return Some(local);
        } else {
            return None;
        }
    }
}

/// The refusal for content that no reader of this library takes, or `None`.
pub fn unsupported(path: &Path, content: &Content) -> Option<Error> {
    let name = path.display();
    let what = match content {
        Content::Xml(r) if r.eq_ignore_ascii_case("gexf") => "a GEXF file (Gephi)".to_string(),
        Content::Xml(r) if r.is_empty() => "an XML document".to_string(),
        Content::Xml(r) => format!("an XML document (root element <{r}>), not GraphML"),
        Content::Dot => "a Graphviz DOT file".to_string(),
        Content::Gml => "a GML file".to_string(),
        Content::Leda => "a LEDA graph file".to_string(),
        Content::Foreign(what, todo) => {
            return Some(Error::format(format!(
                "{name} is {what}, which this library does not read: {todo}"
            )))
        }
        _ => return None,
    };
    let load = match content {
        Content::Dot => "networkx.nx_pydot.read_dot",
        Content::Gml => "networkx.read_gml",
        Content::Leda => "networkx.read_leda",
        Content::Xml(r) if r.eq_ignore_ascii_case("gexf") => "networkx.read_gexf",
        _ => "networkx",
    };
    Some(Error::format(format!(
        "{name} is {what}, which this library does not read: load it with {load} and pass \
         the graph to ie.from_networkx"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_signatures() {
        assert_eq!(
            classify(b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n"),
            Content::MatrixMarket
        );
        assert_eq!(
            classify(b"<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns=\"x\">"),
            Content::GraphMl
        );
        assert_eq!(
            classify(b"<?xml version=\"1.0\"?><!-- c --><gexf version=\"1.2\">"),
            Content::Xml("gexf".into())
        );
        assert_eq!(classify(b"*vertices 3\n1 \"a\"\n"), Content::Pajek);
        assert_eq!(classify(b"% c\n*Network x\n*Vertices 3\n"), Content::Pajek);
        assert_eq!(classify(b"digraph G {\n a -> b;\n}\n"), Content::Dot);
        assert_eq!(
            classify(b"LEDA.GRAPH\nstring\nvoid\n-2\n3\n"),
            Content::Leda
        );
        assert_eq!(classify(b"strict graph {\n a -- b\n}\n"), Content::Dot);
        assert_eq!(classify(b"/* x */ graph{a--b}"), Content::Dot);
        assert_eq!(classify(b"  [[1, 2]]"), Content::Json);
        assert_eq!(classify(b"graph [\n  node [\n    id 0\n"), Content::Gml);
        assert_eq!(
            classify(b"Creator \"igraph\"\nVersion 1\ngraph\n[\n"),
            Content::Gml
        );
        assert_eq!(classify(b"graph\n[\n  directed 0\n"), Content::Gml);
        assert_eq!(classify(b"graph node\n1 2\n"), Content::Other);
        assert_eq!(classify(b"graph,node\na,b\n"), Content::Other);
        assert_eq!(classify(b"0 1\n1 2\n"), Content::Other);
        assert_eq!(classify(b"IEGRAPH\0xxxx"), Content::Graph);
    }

    #[test]
    fn recognises_the_formats_that_pass_for_edge_lists() {
        let foreign = |t: &[u8]| matches!(classify(t), Content::Foreign(..));
        // networkx write_graph6 / write_sparse6, with and without the header
        assert!(foreign(b">>graph6<<C~\n"));
        assert!(foreign(b"C~\n")); // K4
        assert!(foreign(b":Cdv\n"));
        assert!(foreign(
            b"nodedef>name VARCHAR\na\nedgedef>node1 VARCHAR,node2 VARCHAR\na,a\n"
        ));
        assert!(foreign(b"*node data\nID\na\n*tie data\nfrom to\na b\n"));
        assert!(foreign(b"DL n=3 format=edgelist1\ndata:\n1 2\n"));
        assert!(foreign(b"c created by igraph\np max 4 3\nn 1 s\na 1 2 1\n"));
        assert!(foreign(b"p edge 3 2\ne 1 2\ne 2 3\n"));
        assert!(foreign(b"1 a\n2 b\n#\n1 2\n"));
        assert!(foreign("╙── 0\n    └── 1\n".as_bytes()));
        assert!(foreign(b"+-- 7\n    L-- 3\n"));
        // edge lists stay edge lists
        for t in [
            &b"# SNAP\n#\n# FromNodeId\tToNodeId\n1\t2\n"[..],
            b"a b\nb c\n",
            b"Cat\n",      // one id: not graph6 of this length
            b"c d\nd e\n", // ids named c
            b"dl x\ny z\n",
            b"1 2\n# trailing\n",
        ] {
            assert_eq!(
                classify(t),
                Content::Other,
                "{}",
                String::from_utf8_lossy(t)
            );
        }
    }
}
