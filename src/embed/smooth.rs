//! Neighbour smoothing of embeddings (docs/SPEC.md §2b): `smooth` steps of `E <- D^-1 A E`,
//! each row replaced by the arc-weighted mean of its out-neighbours' rows.
//!
//! The transform `ln(x n)` makes a node's embedding a non-linear function of its PPR vector, so
//! averaging the embeddings of the neighbours is not the same as embedding an averaged PPR
//! vector; it denoises the rows the way ProNE's spectral propagation does (docs/QUALITY.md).
//! A smoothed row of `u` depends on the embeddings of the nodes within `smooth` hops of `u`
//! (a [`Plan`] lists them level by level), so it stays local, at the cost of embedding that
//! neighbourhood.
//!
//! Which rows a node's smoothed row reads is decided in one place, [`inputs`]: both the plan
//! and the step go through it, so a variant that reads other rows (e.g. a capped number of
//! neighbours) changes that function and nothing else.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::graph::csr::Graph;

pub use crate::embed::config::MAX_SMOOTH;

/// Out-arcs and their weights (None when unweighted).
type SourceRow<'a> = (Cow<'a, [u32]>, Option<Cow<'a, [f32]>>);

/// The rows one smoothing step of `u` reads: `u`'s out-arcs and their weights (None when
/// unweighted). No arcs means the row is kept as it is.
#[inline]
fn inputs(graph: &Graph, u: u32) -> Result<SourceRow<'_>> {
    Ok((graph.neighbors_checked(u)?, graph.weights(u)?))
}

/// The nodes whose rows one smoothing step of `nodes` reads: every out-neighbour, or the node
/// itself when it has no arcs. Sorted, distinct.
pub fn sources(graph: &Graph, nodes: &[u32]) -> Result<Vec<u32>> {
    let n = graph.num_nodes();
    let mut out = Vec::new();
    for &u in nodes {
        let (nbrs, _) = inputs(graph, u)?;
        if nbrs.is_empty() {
            out.push(u);
        } else {
            out.extend_from_slice(&nbrs);
        }
        // Keep the buffer near the distinct count when rows overlap heavily (dense balls).
        if out.len() > 2 * n.max(1 << 16) {
            out.sort_unstable();
            out.dedup();
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The rows `steps` smoothing steps of some nodes need, level by level.
#[derive(Clone, Debug)]
pub enum Plan {
    /// The nodes are every node in internal order: every level is the whole graph, and each
    /// step is one sparse product over it.
    Whole { num_nodes: usize, steps: usize },
    /// `levels[0]` are the nodes, `levels[j + 1] = sources(levels[j])`: the rows after
    /// `steps - j - 1` steps that step `steps - j` reads.
    Local { levels: Vec<Vec<u32>> },
}

impl Plan {
    /// The plan for `steps` steps of `nodes` (internal indices, duplicates allowed).
    pub fn new(graph: &Graph, nodes: &[u32], steps: usize) -> Result<Plan> {
        let n = graph.num_nodes();
        if nodes.len() == n && nodes.iter().enumerate().all(|(i, &v)| v as usize == i) {
            return Ok(Plan::Whole {
                num_nodes: n,
                steps,
            });
        }
        let mut levels = vec![nodes.to_vec()];
        for _ in 0..steps {
            let next = sources(graph, levels.last().map_or(&[][..], |l| &l[..]))?;
            levels.push(next);
        }
        Ok(Plan::Local { levels })
    }

    /// The nodes whose unsmoothed rows `apply` takes, in the order it takes them.
    pub fn base_nodes(&self) -> Cow<'_, [u32]> {
        match self {
            Plan::Whole { num_nodes, .. } => Cow::Owned((0..*num_nodes as u32).collect()),
            Plan::Local { levels } => Cow::Borrowed(levels.last().map_or(&[][..], |l| &l[..])),
        }
    }

    /// Smooths `rows`, the unsmoothed rows of [`base_nodes`](Self::base_nodes) (row-major,
    /// `dim` wide), into the rows of the plan's nodes.
    pub fn apply(
        &self,
        graph: &Graph,
        rows: Vec<f32>,
        dim: usize,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<Vec<f32>> {
        match self {
            Plan::Whole { num_nodes, steps } => {
                let all: Vec<u32> = (0..*num_nodes as u32).collect();
                let mut rows = rows;
                for _ in 0..*steps {
                    rows = step(graph, &all, &all, &rows, dim, pool)?;
                }
                // Checked even without steps: the caller's rows must be the plan's.
                check_rows(rows.len(), all.len(), dim)?;
                Ok(rows)
            }
            Plan::Local { levels } => {
                let mut rows = rows;
                for j in (0..levels.len() - 1).rev() {
                    rows = step(graph, &levels[j], &levels[j + 1], &rows, dim, pool)?;
                }
                check_rows(rows.len(), levels[0].len(), dim)?;
                Ok(rows)
            }
        }
    }
}

fn check_rows(values: usize, sources: usize, dim: usize) -> Result<()> {
    if dim == 0 || sources.checked_mul(dim) != Some(values) {
        return Err(Error::param(format!(
            "smooth: {values} values for {sources} source rows of dim {dim}"
        )));
    }
    Ok(())
}

/// One smoothing step: row `i` of the result is, for `u = nodes[i]`,
/// `sum_v w(u, v) rows[v] / sum_v w(u, v)` over `u`'s out-arcs (`w = 1` when unweighted),
/// accumulated in f64 in the row's arc order and rounded to f32 once, or `rows[u]` itself when
/// `u` has no arcs. `rows` holds one `dim`-row per node of `src` (sorted, distinct), which must
/// contain `sources(graph, nodes)`. Each row is computed alone in a fixed order, so the result
/// is the same for any thread count or split of `nodes`.
pub fn step(
    graph: &Graph,
    nodes: &[u32],
    src: &[u32],
    rows: &[f32],
    dim: usize,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    check_rows(rows.len(), src.len(), dim)?;
    if src.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::param(
            "smooth: source nodes must be sorted and distinct",
        ));
    }
    let total = nodes
        .len()
        .checked_mul(dim)
        .ok_or_else(|| Error::param("nodes x dim overflows"))?;
    let mut out = vec![0f32; total];
    // Every node is a source when the whole graph is smoothed: then its row index is itself.
    let identity = src.len() == graph.num_nodes();
    let row_of = |v: u32| -> Result<&[f32]> {
        let i = if identity {
            v as usize
        } else {
            src.binary_search(&v)
                .map_err(|_| Error::param(format!("smooth: no source row for node {v}")))?
        };
        rows.get(i * dim..(i + 1) * dim)
            .ok_or_else(|| Error::param(format!("smooth: no source row for node {v}")))
    };
    let one = |u: u32, dst: &mut [f32], acc: &mut Vec<f64>| -> Result<()> {
        let (nbrs, weights) = inputs(graph, u)?;
        if nbrs.is_empty() {
            dst.copy_from_slice(row_of(u)?);
            return Ok(());
        }
        acc.clear();
        acc.resize(dim, 0.0);
        let mut total = 0f64;
        match weights {
            Some(ws) => {
                for (&v, &w) in nbrs.iter().zip(ws.iter()) {
                    let w = f64::from(w);
                    total += w;
                    add_scaled_row(acc, row_of(v)?, w);
                }
            }
            None => {
                // w = 1: `1.0 * x` is exact, so the product is skipped.
                for &v in nbrs.iter() {
                    total += 1.0;
                    add_row(acc, row_of(v)?);
                }
            }
        }
        if !(total.is_finite() && total > 0.0) {
            return Err(Error::format(format!(
                "node {u} has arcs of total weight {total}"
            )));
        }
        for (o, &a) in dst.iter_mut().zip(acc.iter()) {
            *o = (a / total) as f32;
        }
        Ok(())
    };
    match pool {
        Some(pool) if nodes.len() > 1 && pool.current_num_threads() > 1 => pool.install(|| {
            out.par_chunks_mut(dim)
                .zip(nodes.par_iter())
                .with_min_len(64)
                .try_for_each_init(Vec::new, |acc, (dst, &u)| one(u, dst, acc))
        })?,
        _ => {
            let mut acc = Vec::new();
            for (dst, &u) in out.chunks_mut(dim).zip(nodes) {
                one(u, dst, &mut acc)?;
            }
        }
    }
    Ok(out)
}

/// `acc += row` elementwise, in f64. Same operations on every machine; the AVX2 build of the
/// loop only does four of them per instruction (no fused multiply-add is involved).
#[inline]
fn add_row(acc: &mut [f64], row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { add_row_avx2(acc, row) };
    }
    add_row_portable(acc, row);
}

#[inline(always)]
fn add_row_portable(acc: &mut [f64], row: &[f32]) {
    for (a, &x) in acc.iter_mut().zip(row) {
        *a += f64::from(x);
    }
}

/// `acc += w * row` elementwise, in f64 (weighted graphs).
#[inline]
fn add_scaled_row(acc: &mut [f64], row: &[f32], w: f64) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { add_scaled_row_avx2(acc, row, w) };
    }
    add_scaled_row_portable(acc, row, w);
}

#[inline(always)]
fn add_scaled_row_portable(acc: &mut [f64], row: &[f32], w: f64) {
    for (a, &x) in acc.iter_mut().zip(row) {
        *a += w * f64::from(x);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_row_avx2(acc: &mut [f64], row: &[f32]) {
    add_row_portable(acc, row);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_scaled_row_avx2(acc: &mut [f64], row: &[f32], w: f64) {
    add_scaled_row_portable(acc, row, w);
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| std::is_x86_feature_detected!("avx2"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};

    fn graph(weighted: bool, directed: bool) -> Graph {
        // A path 0-1-2-3 plus 4 -> 0 when directed (4 has an arc, 0..3 keep theirs), and node 5
        // without arcs.
        let src = [0u32, 1, 2, 4];
        let dst = [1u32, 2, 3, 0];
        let w = [1.0f32, 2.0, 4.0, 0.5];
        let parts = csr_from_edges(
            6,
            &src,
            &dst,
            weighted.then_some(&w[..]),
            directed,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        build_in_memory(&parts).unwrap()
    }

    #[test]
    fn weighted_mean_of_neighbours_and_dangling_rows_kept() {
        let g = graph(true, false);
        let all: Vec<u32> = (0..6).collect();
        let rows: Vec<f32> = (0..12).map(|x| x as f32).collect(); // row v = [2v, 2v+1]
        let e = step(&g, &all, &all, &rows, 2, None).unwrap();
        // Node 1: neighbours 0 (w 1) and 2 (w 2): (1*[0,1] + 2*[4,5]) / 3.
        assert_eq!(&e[2..4], &[8.0 / 3.0, 11.0 / 3.0]);
        // Node 5 has no arcs: its own row.
        assert_eq!(&e[10..12], &[10.0, 11.0]);
        // Node 0: neighbours 1 (w 1) and 4 (w 0.5).
        assert_eq!(
            &e[0..2],
            &[
                ((2.0 + 0.5 * 8.0) / 1.5) as f32,
                ((3.0 + 0.5 * 9.0) / 1.5) as f32
            ]
        );
    }

    #[test]
    fn subsets_and_threads_give_the_same_rows() {
        for (weighted, directed) in [(false, false), (true, true)] {
            let g = graph(weighted, directed);
            let all: Vec<u32> = (0..6).collect();
            let rows: Vec<f32> = (0..6 * 3).map(|x| (x as f32).sin()).collect();
            let full = step(&g, &all, &all, &rows, 3, None).unwrap();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            assert_eq!(full, step(&g, &all, &all, &rows, 3, Some(&pool)).unwrap());
            for u in 0..6u32 {
                let src = sources(&g, &[u]).unwrap();
                let sub: Vec<f32> = src
                    .iter()
                    .flat_map(|&v| rows[v as usize * 3..v as usize * 3 + 3].to_vec())
                    .collect();
                let e = step(&g, &[u], &src, &sub, 3, None).unwrap();
                assert_eq!(e, full[u as usize * 3..u as usize * 3 + 3]);
            }
        }
    }

    #[test]
    fn missing_or_malformed_sources_are_errors() {
        let g = graph(false, false);
        assert!(step(&g, &[1], &[0], &[0.0, 0.0], 2, None).is_err()); // node 2 missing
        assert!(step(&g, &[1], &[2, 0], &[0.0; 4], 2, None).is_err()); // not sorted
        assert!(step(&g, &[1], &[0, 2], &[0.0; 3], 2, None).is_err()); // wrong length
        assert!(step(&g, &[9], &[0, 2], &[0.0; 4], 2, None).is_err()); // bad node
    }

    /// The AVX2 build of the row sums gives the portable loop's bits (same IEEE operations,
    /// four lanes at a time; no fused multiply-add).
    #[test]
    fn vector_row_sums_equal_the_portable_loop() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x = crate::hashing::splitmix64(x);
            // Mixed magnitudes and signs, so rounding differences would show.
            ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 10f64.powi((x % 9) as i32 - 4)
        };
        for len in [1usize, 3, 4, 7, 16, 100, 512, 515] {
            let row: Vec<f32> = (0..len).map(|_| next() as f32).collect();
            let start: Vec<f64> = (0..len).map(|_| next()).collect();
            let w = next().abs() + 0.1;
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
            let (mut a, mut b) = (start.clone(), start.clone());
            add_row(&mut a, &row);
            add_row_portable(&mut b, &row);
            assert_eq!(bits(&a), bits(&b), "add_row, len {len}");
            let (mut a, mut b) = (start.clone(), start);
            add_scaled_row(&mut a, &row, w);
            add_scaled_row_portable(&mut b, &row, w);
            assert_eq!(bits(&a), bits(&b), "add_scaled_row, len {len}");
        }
    }
}
