//! VERSE / XGFS `.bcsr` binary CSR files, memory-mapped: `XGFS`, `i64 nv`, `i64 ne`, `i32` row
//! starts `[nv]` (no final sentinel), `i32` edges `[ne]`, then optionally `f32` weights `[ne]`,
//! present exactly when the file is `4 * ne` bytes longer (docs/CLI.md). Every size, row start
//! and edge is checked before it is used; ids are the rows `0..nv-1`.
//!
//! The same CSR walk reads a sparse matrix handed over in memory ([`csr_edges`]: a
//! scipy.sparse matrix, a MATLAB file's sparse variable), so every CSR input is checked,
//! tested for symmetry and read undirected the same way.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::external::{BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn};
use crate::hashing::splitmix64;
use crate::io::source::{EdgeBuffer, EdgeSink};

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted"];

const HEADER: usize = 20;

/// A validated CSR matrix: a memory-mapped `.bcsr` file, or arrays in memory.
struct Bcsr {
    arrays: Arrays,
    nv: usize,
    ne: usize,
    has_weights: bool,
    name: String,
}

enum Arrays {
    File(Option<Mmap>),
    /// Row starts (`nv + 1`), column indices and values of a matrix in memory.
    Memory(Vec<u64>, Vec<i64>, Vec<f64>),
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
            arrays: Arrays::File(map),
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
            let o = b.start(i);
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

    /// The matrix of a sparse adjacency matrix in memory (CSR: `indptr`, `indices`, `data`),
    /// checked: its row starts, columns, and every value finite and > 0.
    fn from_arrays(
        indptr: Vec<u64>,
        indices: Vec<i64>,
        data: Vec<f64>,
        name: &str,
    ) -> Result<Bcsr> {
        let ne = indices.len();
        let bad = |what: String| Err(Error::format(format!("{name}: {what}")));
        if indptr.first().is_some_and(|&s| s != 0) || indptr.last().is_some_and(|&s| s != ne as u64)
        {
            return bad(format!("row starts must run from 0 to {ne}"));
        }
        if let Some(i) = indptr.windows(2).position(|w| w[0] > w[1]) {
            return bad(format!(
                "row starts are not non-decreasing at node {}",
                i + 1
            ));
        }
        if data.len() != ne || indptr.len() > u32::MAX as usize {
            return bad(format!("{} values for {ne} entries", data.len()));
        }
        let b = Bcsr {
            nv: indptr.len().saturating_sub(1),
            ne,
            has_weights: data.iter().any(|&x| x != 1.0),
            arrays: Arrays::Memory(indptr, indices, data),
            name: name.to_string(),
        };
        b.arcs(false, |u, v, k| b.weight(u, v, k).map(drop))?;
        Ok(b)
    }

    fn bytes(&self) -> &[u8] {
        match &self.arrays {
            Arrays::File(map) => map.as_deref().unwrap_or(&[]),
            Arrays::Memory(..) => &[],
        }
    }

    /// Row `i`'s first arc (checked by `open`: `0 <= start <= ne`, non-decreasing).
    fn start(&self, i: usize) -> i64 {
        match &self.arrays {
            Arrays::File(_) => i64::from(i32_at(self.bytes(), HEADER + 4 * i)),
            Arrays::Memory(indptr, ..) => indptr[i] as i64,
        }
    }

    fn end(&self, i: usize) -> usize {
        if i + 1 < self.nv {
            self.start(i + 1) as usize
        } else {
            self.ne
        }
    }

    fn target(&self, k: usize) -> i64 {
        match &self.arrays {
            Arrays::File(_) => i64::from(i32_at(self.bytes(), HEADER + 4 * self.nv + 4 * k)),
            Arrays::Memory(_, indices, _) => indices[k],
        }
    }

    /// Visits every arc `(u, v, k)` (checked: `v` inside `0..nv`), or those with `u <= v`.
    fn arcs(&self, upper: bool, mut f: impl FnMut(u32, u32, usize) -> Result<()>) -> Result<()> {
        for u in 0..self.nv {
            for k in self.start(u) as usize..self.end(u) {
                let v = self.target(k);
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

    /// Arc `k`'s (row `u`, column `v`) weight, checked finite and > 0 (1 in a file without
    /// weights).
    fn weight(&self, u: u32, v: u32, k: usize) -> Result<f32> {
        let x = match &self.arrays {
            Arrays::File(_) if !self.has_weights => return Ok(1.0),
            Arrays::File(_) => {
                let at = HEADER + 4 * self.nv + 4 * self.ne + 4 * k;
                f64::from(f32::from_le_bytes(
                    self.bytes()[at..at + 4].try_into().expect("4"),
                ))
            }
            Arrays::Memory(.., data) => data[k],
        };
        if x.is_finite() && x > 0.0 {
            return Ok(x as f32);
        }
        let (shown, what) = if x.is_nan() {
            ("nan".to_string(), "missing or NaN")
        } else if x.is_infinite() {
            (if x > 0.0 { "inf" } else { "-inf" }.to_string(), "infinite")
        } else {
            (format!("{x:?}"), "<= 0")
        };
        // A file's arcs are numbered; a matrix's entries are (row, column).
        let at = match self.arrays {
            Arrays::File(_) => format!("edge {k}: weight {shown}"),
            Arrays::Memory(..) => format!("entry ({u}, {v}) = {shown}"),
        };
        Err(Error::format(format!(
            "{}: {at} is {what}; edge weights must be finite and > 0",
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
                splitmix64(u64::from(self.weight(u, v, k)?.to_bits()))
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
    read_csr(&Bcsr::open(path)?, directed, weighted, make)
}

/// The edges of a square sparse adjacency matrix in memory, in CSR form (`indptr`, `indices`,
/// `data`; `name` names it in errors), read as a `.bcsr` file is (weighted by default unless
/// every value is 1): `(edges, directed, weighted)`.
pub fn csr_edges(
    indptr: Vec<u64>,
    indices: Vec<i64>,
    data: Vec<f64>,
    directed: Option<bool>,
    weighted: Option<bool>,
    name: &str,
) -> Result<(EdgeBuffer<'static>, bool, bool)> {
    let b = Bcsr::from_arrays(indptr, indices, data, name)?;
    let mut shape = (false, false);
    let mut make = |d: bool, w: bool, _nv: u64| {
        shape = (d, w);
        Ok(EdgeBuffer::new(IdMode::Int, None))
    };
    let (edges, _) = read_csr(&b, directed, weighted, &mut make)?;
    Ok((edges, shape.0, shape.1))
}

fn read_csr<S: EdgeSink>(
    b: &Bcsr,
    directed: Option<bool>,
    weighted: Option<bool>,
    make: &mut dyn FnMut(bool, bool, u64) -> Result<S>,
) -> Result<(S, BcsrStats)> {
    let weighted = weighted.unwrap_or(b.has_weights);
    let symmetric = match directed {
        Some(true) => None,
        _ => Some(b.symmetric(weighted)?),
    };
    let directed = directed.unwrap_or(symmetric == Some(false));
    if !directed && symmetric == Some(false) && weighted {
        return Err(Error::param(format!(
            "{}: the weighted matrix is not symmetric, so it cannot be read as an undirected \
             graph; pass directed=True, or symmetrise it first (e.g. A.maximum(A.T) or A + A.T)",
            b.name
        )));
    }
    // Undirected: a symmetric matrix gives each edge once; an asymmetric unweighted one, the
    // union of both directions (its duplicates merge).
    let upper = !directed && symmetric == Some(true);
    let mut sink = make(directed, weighted, b.nv as u64)?;
    let mut arcs = 0u64;
    b.arcs(upper, |u, v, k| {
        let w = if weighted { b.weight(u, v, k)? } else { 1.0 };
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
    use crate::io::source::BufferedIds;

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

    #[test]
    fn matrices_in_memory_are_read_like_files() {
        let arcs = |(b, ..): (EdgeBuffer<'static>, bool, bool)| {
            let BufferedIds::Int(s, d) = b.ids else {
                panic!("int ids")
            };
            s.into_iter()
                .zip(d)
                .zip(b.weights)
                .map(|((s, d), w)| (s, d, w))
                .collect::<Arcs>()
        };
        // symmetric, all values 1: undirected, unweighted, each edge once
        let sym = || (vec![0, 1, 3, 4], vec![1, 0, 2, 1], vec![1.0; 4]);
        let (p, i, x) = sym();
        let r = csr_edges(p, i, x, None, None, "m").unwrap();
        assert_eq!((r.1, r.2), (false, false));
        assert_eq!(arcs(r), vec![(0, 1, 1.0), (1, 2, 1.0)]);
        let (p, i, x) = sym();
        assert_eq!(
            arcs(csr_edges(p, i, x, Some(true), None, "m").unwrap()).len(),
            4
        );
        // a value other than 1: weighted; asymmetric: directed, and refused undirected
        let (p, i, x) = (vec![0, 1, 2], vec![1, 0], vec![2.0, 3.0]);
        let r = csr_edges(p.clone(), i.clone(), x.clone(), None, None, "m").unwrap();
        assert_eq!((r.1, r.2), (true, true));
        let e = csr_edges(p, i, x, Some(false), None, "m")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not symmetric"), "{e}");
        // every value is checked, even unweighted; entries are named by row and column
        let e = csr_edges(
            vec![0, 1, 2],
            vec![1, 0],
            vec![1.0, -1.0],
            None,
            Some(false),
            "m",
        );
        let e = e.unwrap_err().to_string();
        assert!(e.contains("m: entry (1, 0) = -1.0 is <= 0"), "{e}");
        for (p, i) in [
            (vec![1, 2], vec![0, 0]),
            (vec![0, 2, 1], vec![0, 1]),
            (vec![0, 1], vec![5]),
        ] {
            let x = vec![1.0; i.len()];
            assert!(csr_edges(p, i, x, None, None, "m").is_err());
        }
    }
}
