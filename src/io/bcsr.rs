//! VERSE / XGFS `.bcsr` binary CSR files, memory-mapped: `XGFS`, `i64 nv`, `i64 ne`, `i32` row
//! starts `[nv]` (no final sentinel), `i32` edges `[ne]`, then optionally `f32` weights `[ne]`,
//! present exactly when the file is `4 * ne` bytes longer (docs/CLI.md). Every size, row start
//! and edge is checked before it is used; ids are the rows `0..nv-1`.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::external::{BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn};
use crate::hashing::splitmix64;
use crate::io::source::EdgeSink;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted"];

const HEADER: usize = 20;

/// A validated, memory-mapped `.bcsr` file.
struct Bcsr {
    map: Option<Mmap>,
    nv: usize,
    ne: usize,
    has_weights: bool,
    name: String,
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Bcsr {
    fn open(path: &Path) -> Result<Bcsr> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let size = f.metadata().map_err(|e| Error::io(path, e))?.len();
        // SAFETY: the map is read-only and every offset below is checked against its length;
        // a file truncated while mapped is the same hazard every reader of a mapped file has.
        let map = (size > 0)
            .then(|| unsafe { Mmap::map(&f) })
            .transpose()
            .map_err(|e| Error::io(path, e))?;
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        if bytes.len() < 4 || &bytes[..4] != b"XGFS" {
            let magic = &bytes[..bytes.len().min(4)];
            return Err(Error::format(format!(
                "{name}: not a VERSE .bcsr file (magic b'{}', expected b'XGFS')",
                String::from_utf8_lossy(magic).escape_debug()
            )));
        }
        if bytes.len() < HEADER {
            return Err(Error::format(format!(
                "{name}: truncated header ({size} bytes; needs {HEADER})"
            )));
        }
        let word = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let (nv, ne) = (word(4), word(12));
        if nv < 0 || ne < 0 {
            return Err(Error::format(format!(
                "{name}: negative sizes in header (nv={nv}, ne={ne})"
            )));
        }
        if nv > 1 << 31 || ne > i64::from(i32::MAX) {
            return Err(Error::format(format!(
                "{name}: nv={nv}, ne={ne} exceed the int32 limits of the format"
            )));
        }
        let (nv, ne) = (nv as usize, ne as usize);
        let base = (HEADER + 4 * nv + 4 * ne) as u64;
        let has_weights = if size == base {
            false
        } else if size == base + 4 * ne as u64 {
            true
        } else {
            return Err(Error::format(format!(
                "{name}: file size {size} does not match the header (nv={nv}, ne={ne}): \
                 expected {base} bytes (unweighted) or {} (weighted); truncated or not a .bcsr \
                 file",
                base + 4 * ne as u64
            )));
        };
        let b = Bcsr {
            map,
            nv,
            ne,
            has_weights,
            name,
        };
        if nv == 0 && ne > 0 {
            return Err(Error::format(format!(
                "{}: ne={ne} edges but no nodes",
                b.name
            )));
        }
        if nv > 0 && b.start(0) != 0 {
            return Err(Error::format(format!(
                "{}: first row start is {}, expected 0",
                b.name,
                b.start(0)
            )));
        }
        let mut prev = 0i64;
        for i in 0..nv {
            let o = i64::from(b.start(i));
            if o < prev || o > ne as i64 {
                return Err(Error::format(format!(
                    "{}: row starts are not non-decreasing within 0..ne at node {i} (start {o}, \
                     ne={ne})",
                    b.name
                )));
            }
            prev = o;
        }
        Ok(b)
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Row `i`'s first arc (checked by `open`: `0 <= start <= ne`, non-decreasing).
    fn start(&self, i: usize) -> i32 {
        i32_at(self.bytes(), HEADER + 4 * i)
    }

    fn end(&self, i: usize) -> usize {
        if i + 1 < self.nv {
            self.start(i + 1) as usize
        } else {
            self.ne
        }
    }

    /// Visits every arc `(u, v, k)` (checked: `v` inside `0..nv`), or those with `u <= v`.
    fn arcs(&self, upper: bool, mut f: impl FnMut(u32, u32, usize) -> Result<()>) -> Result<()> {
        let edges = HEADER + 4 * self.nv;
        for u in 0..self.nv {
            for k in self.start(u) as usize..self.end(u) {
                let v = i32_at(self.bytes(), edges + 4 * k);
                if v < 0 || v as usize >= self.nv {
                    return Err(Error::format(format!(
                        "{}: edge {k} (from node {u}) points to node {v}, outside 0..{}",
                        self.name,
                        self.nv - 1
                    )));
                }
                if !upper || u <= v as usize {
                    f(u as u32, v as u32, k)?;
                }
            }
        }
        Ok(())
    }

    /// Arc `k`'s weight, checked finite and > 0 (1 in a file without weights).
    fn weight(&self, k: usize) -> Result<f32> {
        if !self.has_weights {
            return Ok(1.0);
        }
        let at = HEADER + 4 * self.nv + 4 * self.ne + 4 * k;
        let x = f32::from_le_bytes(self.bytes()[at..at + 4].try_into().expect("4 bytes"));
        if x.is_finite() && x > 0.0 {
            return Ok(x);
        }
        let (shown, what) = if x.is_nan() {
            ("nan".to_string(), "missing or NaN")
        } else if x.is_infinite() {
            (if x > 0.0 { "inf" } else { "-inf" }.to_string(), "infinite")
        } else {
            (format!("{:?}", f64::from(x)), "<= 0")
        };
        Err(Error::format(format!(
            "{}: edge {k}: weight {shown} is {what}; weights must be finite and > 0",
            self.name
        )))
    }

    /// Whether the arc multiset equals its transpose: the wrapping sums of a 64-bit mixing
    /// hash of `(u, v[, w])` and of `(v, u[, w])` over all arcs are equal for a symmetric
    /// matrix, and unequal with probability `1 - 2^-64` otherwise (one pass, O(1) memory).
    fn symmetric(&self, weighted: bool) -> Result<bool> {
        let (mut fwd, mut rev) = (0u64, 0u64);
        self.arcs(false, |u, v, k| {
            let salt = if weighted {
                splitmix64(u64::from(self.weight(k)?.to_bits()))
            } else {
                0
            };
            let (u, v) = (u64::from(u), u64::from(v));
            fwd = fwd.wrapping_add(splitmix64(((u << 32) | v) ^ salt));
            rev = rev.wrapping_add(splitmix64(((v << 32) | u) ^ salt));
            Ok(())
        })?;
        Ok(fwd == rev)
    }
}

/// What the reader saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct BcsrStats {
    pub nodes: u64,
    pub arcs: u64,
    pub symmetric: Option<bool>,
}

/// Reads a `.bcsr` file into the sink `make(directed, weighted, nv)` gives: directed as given,
/// else iff the matrix is not symmetric (a symmetric one read undirected gives each edge once,
/// from its upper triangle); weighted as given, else iff the file has weights.
pub fn read_bcsr<S: EdgeSink>(
    path: &Path,
    directed: Option<bool>,
    weighted: Option<bool>,
    make: &mut dyn FnMut(bool, bool, u64) -> Result<S>,
) -> Result<(S, BcsrStats)> {
    let b = Bcsr::open(path)?;
    let weighted = weighted.unwrap_or(b.has_weights);
    let symmetric = match directed {
        Some(true) => None,
        _ => Some(b.symmetric(weighted)?),
    };
    let directed = directed.unwrap_or(symmetric == Some(false));
    if !directed && symmetric == Some(false) && weighted {
        return Err(Error::param(format!(
            "{}: the weighted .bcsr graph is not symmetric, so it cannot be read as undirected; \
             pass directed=True",
            b.name
        )));
    }
    // Undirected: a symmetric matrix gives each edge once; an asymmetric unweighted one, the
    // union of both directions (its duplicates merge).
    let upper = !directed && symmetric == Some(true);
    let mut sink = make(directed, weighted, b.nv as u64)?;
    let mut arcs = 0u64;
    b.arcs(upper, |u, v, k| {
        let w = if weighted { b.weight(k)? } else { 1.0 };
        arcs += 1;
        sink.push_int(i64::from(u), i64::from(v), w)
    })?;
    let stats = BcsrStats {
        nodes: b.nv as u64,
        arcs,
        symmetric,
    };
    Ok((sink, stats))
}

/// Converts a `.bcsr` file into a graph file at `output`, atomically; ids are the rows.
pub fn convert_bcsr(
    path: &Path,
    output: &Path,
    directed: Option<bool>,
    weighted: Option<bool>,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, BcsrStats)> {
    let mut make = |directed: bool, weighted: bool, nv: u64| {
        ExternalBuilder::new(
            output,
            BuildOptions {
                directed,
                weighted,
                ids: IdMode::Implicit,
                num_nodes: Some(nv),
                ..build.clone()
            },
        )
    };
    let (b, st) = read_bcsr(path, directed, weighted, &mut make)?;
    let total = std::fs::metadata(path).map_or(1, |m| m.len().max(1));
    let hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
    Ok((b.finish(Some(&hook))?, st))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::source::{BufferedIds, EdgeBuffer};

    fn file(nv: i64, rows: &[i32], edges: &[i32], weights: &[f32]) -> tempfile::NamedTempFile {
        let mut b = b"XGFS".to_vec();
        b.extend(nv.to_le_bytes());
        b.extend((edges.len() as i64).to_le_bytes());
        rows.iter().for_each(|x| b.extend(x.to_le_bytes()));
        edges.iter().for_each(|x| b.extend(x.to_le_bytes()));
        weights.iter().for_each(|x| b.extend(x.to_le_bytes()));
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), b).unwrap();
        f
    }

    type Arcs = Vec<(i64, i64, f32)>;

    /// The arcs read and whether the graph is directed.
    fn read(f: &tempfile::NamedTempFile, directed: Option<bool>) -> Result<(Arcs, bool)> {
        let mut shape = (false, false);
        let mut make = |d: bool, w: bool, _n: u64| {
            shape = (d, w);
            Ok(EdgeBuffer::new(IdMode::Int, None))
        };
        let (b, _) = read_bcsr(f.path(), directed, None, &mut make)?;
        let BufferedIds::Int(s, d) = b.ids else {
            panic!("int ids")
        };
        let arcs = s
            .into_iter()
            .zip(d)
            .zip(b.weights)
            .map(|((s, d), w)| (s, d, w))
            .collect();
        Ok((arcs, shape.0))
    }

    #[test]
    fn symmetric_files_give_each_edge_once_and_asymmetric_ones_are_directed() {
        let sym = file(3, &[0, 1, 3], &[1, 0, 2, 1], &[]);
        assert_eq!(
            read(&sym, None).unwrap(),
            (vec![(0, 1, 1.0), (1, 2, 1.0)], false)
        );
        let asym = file(2, &[0, 1], &[1, 0], &[1.0, 2.0]);
        assert!(read(&asym, None).unwrap().1, "weights differ: directed");
        assert!(read(&asym, Some(false)).is_err());
    }

    #[test]
    fn damaged_files_are_refused() {
        let bad = file(3, &[0, 1, 2], &[1, 7], &[]);
        let e = read(&bad, Some(true)).unwrap_err().to_string();
        assert!(e.contains("edge 1 (from node 1) points to node 7"), "{e}");
        let bad = file(3, &[0, 2, 1], &[1, 2], &[]);
        let e = read(&bad, Some(true)).unwrap_err().to_string();
        assert!(
            e.contains("not non-decreasing") && e.contains("node 2"),
            "{e}"
        );
    }
}
