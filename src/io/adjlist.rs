//! Adjacency lists as an edge source: one line per node, `v n1 n2 ...` (networkx
//! `write_adjlist`, k-NN graphs). Every neighbour on a line is an edge `v -> n`; a line with a
//! node alone adds that node (isolated unless another line names it). Fields are separated by
//! runs of spaces and tabs, or by one delimiter byte (no quoting): without `delimiter`, a file
//! whose lines have commas (or semicolons) and no spaces or tabs is split on that byte
//! (networkx `write_adjlist(delimiter=',')`). Lines whose first non-blank character is a
//! comment character are skipped, as are blank lines. A field that opens edge data (`{`) is a
//! multiline adjacency list (networkx `write_multiline_adjlist`: `v degree` lines, then one
//! `n {data}` line per neighbour), which is refused, not read as nodes. Ids follow the text
//! reader's typing rule: integers only if every id of every file is a canonical int64, else
//! strings as written. Adjacency lists carry no weights.

use std::cell::Cell;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::graph::external::{BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn};
use crate::io::input::open_input;
use crate::io::source::EdgeSink;
use crate::io::text::{canonical_int, parse_int, IntTok};

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["delimiter", "comment", "id_kind"];

/// Options of the adjacency-list reader.
#[derive(Clone, Debug)]
pub struct AdjOptions {
    /// `None`: runs of spaces and tabs.
    pub delimiter: Option<u8>,
    pub comment: Vec<u8>,
}

/// What the reader saw.
#[derive(Clone, Debug, Default)]
pub struct AdjStats {
    pub input_bytes: u64,
    pub lines: u64,
    /// Lines that named a node (with or without neighbours).
    pub node_lines: u64,
    pub edges: u64,
    pub passes: u32,
}

fn fields(line: &[u8], delim: Option<u8>) -> Vec<&[u8]> {
    let blank = |c: &u8| *c == b' ' || *c == b'\t' || *c == b'\r';
    match delim {
        None => line.split(|c| blank(c)).filter(|f| !f.is_empty()).collect(),
        Some(d) => line
            .split(|&c| c == d)
            .map(|f| {
                let a = f.iter().position(|c| !blank(c)).unwrap_or(f.len());
                let b = f.iter().rposition(|c| !blank(c)).map_or(a, |i| i + 1);
                &f[a..b.max(a)]
            })
            .collect(),
    }
}

/// What `scan` calls for each line: `(line number, raw line, fields)`.
type Visit<'v> = dyn FnMut(u64, &[u8], &[&[u8]]) -> Result<()> + 'v;

/// Calls `visit(line_no, raw, fields)` for every line that is not blank or a comment.
fn scan(
    path: &Path,
    opts: &AdjOptions,
    count: Rc<Cell<u64>>,
    visit: &mut Visit<'_>,
) -> Result<u64> {
    let mut r = BufReader::with_capacity(1 << 20, open_input(path, count)?);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let k = r.read_until(b'\n', &mut buf).map_err(|e| {
            Error::format(format!(
                "{}: corrupt or truncated data after line {line}: {e}",
                path.display()
            ))
        })?;
        if k == 0 {
            return Ok(line);
        }
        line += 1;
        let mut l = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line == 1 {
            l = l.strip_prefix(b"\xef\xbb\xbf").unwrap_or(l);
            if memchr::memchr(0, l).is_some() {
                return Err(Error::format(format!(
                    "{} holds binary data, not an adjacency list",
                    path.display()
                )));
            }
        }
        let first = l.iter().find(|c| !matches!(c, b' ' | b'\t' | b'\r'));
        match first {
            None => continue,
            Some(c) if opts.comment.contains(c) => continue,
            _ => {}
        }
        let f = fields(l, opts.delimiter);
        if f.iter().any(|t| t.first() == Some(&b'{')) {
            return Err(err(
                path,
                line,
                l,
                "edge data where a node id should be: a multiline adjacency list (networkx \
                 write_multiline_adjlist) is not read; load it with \
                 networkx.read_multiline_adjlist and pass the graph to ie.from_networkx",
            ));
        }
        visit(line, l, &f)?;
    }
}

/// The delimiter of a file when none is given: `,` or `;` when the data lines of its first
/// block have that byte and no spaces or tabs (ids in a whitespace-separated file hold none
/// of them either way), else runs of blanks.
fn detect_delimiter(path: &Path, comment: &[u8]) -> Result<Option<u8>> {
    let head = crate::io::sniff::head(path)?;
    let mut seen = [false; 2];
    for l in head.split(|&c| c == b'\n').take(1000) {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let t = l.iter().position(|c| !matches!(c, b' ' | b'\t'));
        let Some(t) = t else { continue };
        if comment.contains(&l[t]) {
            continue;
        }
        if l[t..].iter().any(|c| matches!(c, b' ' | b'\t')) {
            return Ok(None);
        }
        seen[0] |= l.contains(&b',');
        seen[1] |= l.contains(&b';');
    }
    Ok(match seen {
        [true, false] => Some(b','),
        [false, true] => Some(b';'),
        _ => None,
    })
}

fn err(path: &Path, line: u64, raw: &[u8], msg: impl std::fmt::Display) -> Error {
    let text = String::from_utf8_lossy(raw);
    let cut: String = text.chars().take(200).collect();
    Error::format(format!("{}:{line}: {msg}: '{cut}'", path.display()))
}

/// Reads adjacency lists into a sink made by `make(ids)`. `ids`: `Auto` decides by the typing
/// rule (one extra pass over the input); `Int`/`Str` force a kind.
pub fn read_adjlist<S: EdgeSink>(
    inputs: &[PathBuf],
    opts: &AdjOptions,
    ids: IdMode,
    make: &mut dyn FnMut(IdMode) -> Result<S>,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(S, AdjStats, u64)> {
    if inputs.is_empty() {
        return Err(Error::param("no input files given"));
    }
    let mut total = 0u64;
    for p in inputs {
        total += std::fs::metadata(p).map_err(|e| Error::io(p, e))?.len();
    }
    let total = total.max(1);
    // The delimiter of each file, when none is given.
    let mut per_file = Vec::with_capacity(inputs.len());
    for p in inputs {
        let mut o = opts.clone();
        if o.delimiter.is_none() {
            o.delimiter = detect_delimiter(p, &o.comment)?;
        }
        per_file.push(o);
    }
    let mut stats = AdjStats::default();
    let mut mode = ids;
    if mode == IdMode::Auto || mode == IdMode::Implicit {
        let mut ints = true;
        for (p, opts) in inputs.iter().zip(&per_file) {
            scan(p, opts, Rc::new(Cell::new(0)), &mut |_, _, f| {
                ints &= f.iter().all(|t| canonical_int(t).is_some());
                Ok(())
            })?;
            if !ints {
                break;
            }
        }
        mode = if ints { IdMode::Int } else { IdMode::Str };
        stats.passes += 1;
    }
    stats.passes += 1;
    let mut b = make(mode)?;
    let mut before = 0u64;
    for (p, opts) in inputs.iter().zip(&per_file) {
        let count = Rc::new(Cell::new(0u64));
        let c2 = count.clone();
        let mut edges = 0u64;
        let mut nodes = 0u64;
        let lines = scan(p, opts, count, &mut |line, raw, f| {
            let at = |e: Error| match e {
                Error::InvalidInput(m) => err(p, line, raw, m),
                e => e,
            };
            if f.iter().any(|t| t.is_empty()) {
                return Err(err(p, line, raw, "empty node id"));
            }
            nodes += 1;
            match mode {
                IdMode::Str => {
                    let mut s = Vec::with_capacity(f.len());
                    for t in f {
                        s.push(
                            std::str::from_utf8(t)
                                .map_err(|_| err(p, line, raw, "node id is not valid UTF-8"))?,
                        );
                    }
                    b.push_node_str(s[0]).map_err(at)?;
                    for n in &s[1..] {
                        b.push_str(s[0], n, 1.0).map_err(at)?;
                    }
                }
                _ => {
                    let mut v = Vec::with_capacity(f.len());
                    for t in f {
                        v.push(match parse_int(t) {
                            IntTok::Int(x) => x,
                            IntTok::Overflow => {
                                return Err(err(p, line, raw, "id overflows int64"));
                            }
                            IntTok::NotInt => {
                                return Err(err(
                                    p,
                                    line,
                                    raw,
                                    format!(
                                        "id '{}' is not an integer (id_kind='int')",
                                        String::from_utf8_lossy(t)
                                    ),
                                ));
                            }
                        });
                    }
                    b.push_node_int(v[0]).map_err(at)?;
                    for &n in &v[1..] {
                        b.push_int(v[0], n, 1.0).map_err(at)?;
                    }
                }
            }
            edges += f.len() as u64 - 1;
            if line % 4096 == 0
                && !progress.is_none_or(|h| h((before + c2.get()).min(total), total))
            {
                return Err(Error::Cancelled);
            }
            Ok(())
        })?;
        if nodes == 0 {
            return Err(Error::format(format!(
                "{}: no nodes found (every line is blank or a comment)",
                p.display()
            )));
        }
        before += c2.get();
        stats.lines += lines;
        stats.node_lines += nodes;
        stats.edges += edges;
    }
    stats.input_bytes = before;
    Ok((b, stats, total))
}

/// Converts adjacency lists into a graph file at `output` (atomically).
pub fn convert_adjlist(
    inputs: &[PathBuf],
    output: &Path,
    opts: &AdjOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, AdjStats)> {
    if build.weighted {
        return Err(Error::param(
            "an adjacency list has no weights: weighted=True does not apply",
        ));
    }
    let mut make = |ids: IdMode| {
        ExternalBuilder::new(
            output,
            BuildOptions {
                ids,
                weighted: false,
                num_nodes: None,
                ..build.clone()
            },
        )
    };
    let (b, stats, total) = read_adjlist(inputs, opts, build.ids, &mut make, progress)?;
    let hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
    Ok((b.finish(Some(&hook))?, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::source::{BufferedIds, EdgeBuffer};

    #[test]
    fn every_neighbour_is_an_edge() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.adjlist");
        std::fs::write(&p, "# networkx\n0 1 2 3\n1 2\n4\n").unwrap();
        let opts = AdjOptions {
            delimiter: None,
            comment: b"#".to_vec(),
        };
        let mut make = |m: IdMode| Ok(EdgeBuffer::new(m, None));
        let (b, st, _) = read_adjlist(&[p], &opts, IdMode::Auto, &mut make, None).unwrap();
        let BufferedIds::Int(s, d) = b.ids else {
            panic!("int ids")
        };
        assert_eq!(s, vec![0, 0, 0, 1]);
        assert_eq!(d, vec![1, 2, 3, 2]);
        assert_eq!((st.node_lines, st.edges), (3, 4));
    }

    fn read_str(text: &str) -> Result<(Vec<String>, Vec<String>)> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.adjlist");
        std::fs::write(&p, text).unwrap();
        let opts = AdjOptions {
            delimiter: None,
            comment: b"#".to_vec(),
        };
        let mut make = |m: IdMode| Ok(EdgeBuffer::new(m, None));
        let (b, _, _) = read_adjlist(&[p], &opts, IdMode::Str, &mut make, None)?;
        let BufferedIds::Str(s, d) = b.ids else {
            panic!("str ids")
        };
        Ok((s, d))
    }

    #[test]
    fn a_comma_separated_adjacency_list_is_split_on_its_commas() {
        // networkx write_adjlist(G, path, delimiter=',')
        let (s, d) = read_str("# nx\na,b,c\nb,c\nd\n").unwrap();
        assert_eq!(s, vec!["a", "a", "b"]);
        assert_eq!(d, vec!["b", "c", "c"]);
        // blanks anywhere: whitespace-separated, commas are part of the ids
        let (s, d) = read_str("a,1 b\nb c\n").unwrap();
        assert_eq!(
            (s, d),
            (vec!["a,1".into(), "b".into()], vec!["b".into(), "c".into()])
        );
    }

    #[test]
    fn a_multiline_adjacency_list_is_refused() {
        // networkx write_multiline_adjlist: `v degree`, then `n {data}` per neighbour
        let e = read_str("0 2\n1 {}\n2 {'weight': 3}\n1 1\n2 {}\n2 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2:") && e.contains("ie.from_networkx"), "{e}");
    }
}
