//! Matrix Market coordinate files (`.mtx`, as SuiteSparse, the Network Repository and
//! `scipy.io.mmwrite` write them) as an edge source.
//!
//! The banner `%%MatrixMarket matrix coordinate FIELD SYMMETRY` says what follows: `FIELD` is
//! `pattern` (no values), `integer` or `real` (a value per entry: the edge weight, unless
//! `weighted=False`); `SYMMETRY` is `general` (directed, unless `directed=False`) or
//! `symmetric` (the lower triangle of an undirected graph; `directed=True` stores both
//! directions). Complex, Hermitian, skew-symmetric and dense (`array`) files are refused. After
//! `%` comment lines, the size line `rows cols entries` is read as sizes, never as an edge; the
//! matrix must be square. Node ids are the row and column numbers `1..n` as written (1-based),
//! every one of them a node, isolated rows included.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::{Error, Result};
use crate::graph::build::Merge;
use crate::graph::external::{
    check_weight, BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn,
};
use crate::io::input::open_input;
use crate::io::source::EdgeSink;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted"];

/// What the banner and size line declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtxHeader {
    /// The matrix has a value per entry (`integer` or `real`).
    pub values: bool,
    /// `symmetric`: only one triangle is stored.
    pub symmetric: bool,
    pub n: u64,
    pub entries: u64,
}

/// How the file's entries become edges.
#[derive(Clone, Copy, Debug)]
pub struct MtxRead {
    pub directed: bool,
    pub weighted: bool,
}

fn err(path: &Path, line: u64, msg: impl std::fmt::Display) -> Error {
    Error::format(format!("{}:{line}: {msg}", path.display()))
}

fn shown(t: &str) -> String {
    let cut: String = t.chars().take(120).collect();
    format!("'{cut}'")
}

/// Parses the banner (line 1).
fn banner(path: &Path, line: &str) -> Result<(bool, bool)> {
    let words: Vec<String> = line.split_whitespace().map(str::to_lowercase).collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") || words.len() < 5 {
        return Err(err(
            path,
            1,
            format!(
                "a Matrix Market banner needs '%%MatrixMarket matrix coordinate FIELD \
                 SYMMETRY', got {}",
                shown(line)
            ),
        ));
    }
    if words[1] != "matrix" {
        return Err(err(
            path,
            1,
            format!("a Matrix Market '{}' object is not a matrix", words[1]),
        ));
    }
    if words[2] != "coordinate" {
        return Err(err(
            path,
            1,
            format!(
                "a Matrix Market '{}' (dense) matrix is not read: only sparse 'coordinate' \
                 files are graphs; write it with scipy.io.mmwrite from a sparse matrix",
                words[2]
            ),
        ));
    }
    let values = match words[3].as_str() {
        "pattern" => false,
        "integer" | "real" | "double" => true,
        other => {
            return Err(err(
                path,
                1,
                format!(
                    "Matrix Market field '{other}' is not read: edge weights are 'real' or \
                     'integer' values (or none: 'pattern')"
                ),
            ))
        }
    };
    let symmetric = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => {
            return Err(err(
                path,
                1,
                format!(
                    "Matrix Market symmetry '{other}' is not read: its entries imply negated or \
                     conjugated ones, which are not edge weights ('general' and 'symmetric' are \
                     read)"
                ),
            ))
        }
    };
    Ok((values, symmetric))
}

fn parse_u64(t: &str) -> Option<u64> {
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// Reads the banner and size line of `path`.
pub fn read_header(path: &Path) -> Result<MtxHeader> {
    let mut r = BufReader::new(open_input(path, Default::default())?);
    read_header_from(path, &mut r).map(|(h, _)| h)
}

fn read_line(path: &Path, r: &mut dyn BufRead, buf: &mut Vec<u8>, line: u64) -> Result<bool> {
    buf.clear();
    match r.read_until(b'\n', buf) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(Error::format(format!(
            "{}: corrupt or truncated data after line {line}: {e}",
            path.display()
        ))),
    }
}

fn read_header_from(path: &Path, r: &mut dyn BufRead) -> Result<(MtxHeader, u64)> {
    let mut buf = Vec::new();
    if !read_line(path, r, &mut buf, 0)? {
        return Err(err(path, 1, "empty file"));
    }
    let first = String::from_utf8_lossy(&buf);
    let first = first.trim_start_matches('\u{feff}').trim();
    let (values, symmetric) = banner(path, first)?;
    let mut line = 1u64;
    loop {
        if !read_line(path, r, &mut buf, line)? {
            return Err(err(path, line, "the file ends before its size line"));
        }
        line += 1;
        let text = String::from_utf8_lossy(&buf);
        let t = text.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().collect();
        let nums: Vec<Option<u64>> = f.iter().map(|x| parse_u64(x)).collect();
        let (Some(Some(rows)), Some(Some(cols)), Some(Some(entries)), 3) =
            (nums.first(), nums.get(1), nums.get(2), f.len())
        else {
            return Err(err(
                path,
                line,
                format!(
                    "the size line must be 'rows columns entries', got {}",
                    shown(t)
                ),
            ));
        };
        if rows != cols {
            return Err(err(
                path,
                line,
                format!(
                    "a {rows} x {cols} matrix is not a graph's adjacency matrix (it must be \
                     square); a rectangular one is a bipartite graph: give its rows and columns \
                     distinct ids (e.g. with ie.from_scipy on [[0, A], [A.T, 0]])"
                ),
            ));
        }
        return Ok((
            MtxHeader {
                values,
                symmetric,
                n: *rows,
                entries: *entries,
            },
            line,
        ));
    }
}

/// Reads `path` into `sink`. `directed`, `weighted`: `None` lets the banner decide.
pub fn read_mtx<S: EdgeSink>(
    path: &Path,
    header: &MtxHeader,
    how: MtxRead,
    merge: Merge,
    sink: &mut S,
    nodes: bool,
    report: &dyn Fn(u64) -> bool,
) -> Result<u64> {
    let count = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let mut r = BufReader::with_capacity(1 << 20, open_input(path, count.clone())?);
    let (_, mut line) = read_header_from(path, &mut r)?;
    if how.weighted && !header.values {
        return Err(Error::param(format!(
            "{}: weighted=True, but the matrix is 'pattern': it has no values",
            path.display()
        )));
    }
    if !how.directed && !header.symmetric && how.weighted && merge == Merge::Sum {
        return Err(Error::param(format!(
            "{}: a 'general' matrix read as undirected: a value stored at (i, j) and at (j, i) \
             would be summed; pass directed=True, merge='max' (a symmetric matrix written \
             whole) or weighted=False",
            path.display()
        )));
    }
    let n = header.n;
    if nodes {
        for v in 1..=n {
            sink.push_node_int(v as i64)?;
        }
    }
    let want = if header.values { 3 } else { 2 };
    let mut buf = Vec::new();
    let mut seen = 0u64;
    loop {
        if !read_line(path, &mut r, &mut buf, line)? {
            break;
        }
        line += 1;
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t.trim(),
            Err(_) => return Err(err(path, line, "not valid UTF-8 text")),
        };
        if text.is_empty() || text.starts_with('%') {
            continue;
        }
        let f: Vec<&str> = text.split_whitespace().collect();
        if f.len() != want {
            return Err(err(
                path,
                line,
                format!(
                    "an entry of a '{}' matrix has {want} fields (row, column{}), got {}: {}",
                    if header.values { "valued" } else { "pattern" },
                    if header.values { ", value" } else { "" },
                    f.len(),
                    shown(text)
                ),
            ));
        }
        seen += 1;
        if seen > header.entries {
            return Err(err(
                path,
                line,
                format!(
                    "more entries than the {} the size line declares",
                    header.entries
                ),
            ));
        }
        let mut ij = [0u64; 2];
        for (slot, t) in ij.iter_mut().zip(&f) {
            match parse_u64(t) {
                Some(v) if (1..=n).contains(&v) => *slot = v,
                _ => {
                    return Err(err(
                        path,
                        line,
                        format!(
                            "index {} is not a row/column number in 1..{n}: {}",
                            shown(t),
                            shown(text)
                        ),
                    ))
                }
            }
        }
        let w = if how.weighted {
            let x: f64 = f[2]
                .parse()
                .map_err(|_| err(path, line, format!("value {} is not a number", shown(f[2]))))?;
            if !(x.is_finite() && x > 0.0) {
                return Err(err(
                    path,
                    line,
                    format!(
                        "value {} is not a weight (weights must be finite and > 0); pass \
                         weighted=False to read the matrix's pattern only",
                        shown(f[2])
                    ),
                ));
            }
            check_weight(x).map_err(|_| {
                err(
                    path,
                    line,
                    format!("value {} is outside the float32 range", shown(f[2])),
                )
            })?
        } else {
            1.0
        };
        let (i, j) = (ij[0] as i64, ij[1] as i64);
        let pushed = sink.push_int(i, j, w).and_then(|()| {
            if header.symmetric && how.directed && i != j {
                sink.push_int(j, i, w)
            } else {
                Ok(())
            }
        });
        pushed.map_err(|e| match e {
            Error::InvalidInput(m) => err(path, line, m),
            e => e,
        })?;
        if seen % (1 << 16) == 0 && !report(count.get()) {
            return Err(Error::Cancelled);
        }
    }
    if seen != header.entries {
        return Err(err(
            path,
            line,
            format!(
                "the file ends after {seen} of the {} entries its size line declares \
                 (truncated?)",
                header.entries
            ),
        ));
    }
    Ok(count.get())
}

/// Converts a Matrix Market file into a graph file at `output` (atomically). `directed` and
/// `weighted`: `None` lets the banner decide (see the module docs).
pub fn convert_mtx(
    path: &Path,
    output: &Path,
    directed: Option<bool>,
    weighted: Option<bool>,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, MtxHeader)> {
    let h = read_header(path)?;
    let how = MtxRead {
        directed: directed.unwrap_or(!h.symmetric),
        weighted: weighted.unwrap_or(h.values),
    };
    let total = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len()
        .max(1);
    let mut b = ExternalBuilder::new(
        output,
        BuildOptions {
            directed: how.directed,
            weighted: how.weighted,
            ids: IdMode::Int,
            num_nodes: None,
            ..build.clone()
        },
    )?;
    let report = |done: u64| progress.is_none_or(|f| f(done.min(total), total));
    read_mtx(path, &h, how, build.merge, &mut b, true, &report)?;
    let hook = |_d: u64, _t: u64| progress.is_none_or(|f| f(total, total));
    let st = b.finish(Some(&hook))?;
    Ok((st, h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::source::{BufferedIds, EdgeBuffer};

    fn read(
        text: &str,
        directed: Option<bool>,
        weighted: Option<bool>,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<f32>)> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.mtx");
        std::fs::write(&p, text).unwrap();
        let h = read_header(&p)?;
        let how = MtxRead {
            directed: directed.unwrap_or(!h.symmetric),
            weighted: weighted.unwrap_or(h.values),
        };
        let mut b = EdgeBuffer::new(IdMode::Int, None);
        read_mtx(&p, &h, how, Merge::Sum, &mut b, false, &|_| true)?;
        let BufferedIds::Int(s, d) = b.ids else {
            unreachable!()
        };
        Ok((s, d, b.weights))
    }

    #[test]
    fn size_line_is_not_an_edge_and_ids_stay_one_based() {
        let (s, d, w) = read(
            "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 2 0.5\n3 1 2\n",
            None,
            None,
        )
        .unwrap();
        assert_eq!((s, d, w), (vec![1, 3], vec![2, 1], vec![0.5, 2.0]));
    }

    #[test]
    fn symmetric_directed_stores_both_directions() {
        let t = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n";
        let (s, d, _) = read(t, Some(true), None).unwrap();
        assert_eq!((s, d), (vec![2, 1, 3], vec![1, 2, 3]));
        let (s, _, _) = read(t, None, None).unwrap();
        assert_eq!(s, vec![2, 3]);
    }

    #[test]
    fn refusals() {
        for (t, what) in [
            (
                "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
                "complex",
            ),
            (
                "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 1\n",
                "skew",
            ),
            (
                "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
                "dense",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n2 3 1\n1 2\n",
                "square",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n",
                "truncated",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 3\n",
                "1..2",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 -1\n",
                "weighted=False",
            ),
        ] {
            let e = read(t, None, None).unwrap_err().to_string();
            assert!(e.contains(what), "{what}: {e}");
        }
    }
}
