//! InstantEmbedding: approximate PPR of a node, projected to `dim` dimensions by signed hashing.
//!
//! `w[dim(j)] += sign(j) * max(ln(x_j * n), 0)` for every touched node `j`, each term rounded to
//! a multiple of 2^-32 and summed exactly (order-free), then divided by `ln(max(n, 3))` (default;
//! `normalize`) and rounded to f32 once, where `x = p + r` (default) or `x = p`
//! (the paper's Algorithm 2 literally), see docs/SPEC.md. Each node's row depends only on
//! the graph, the node and the config, so results are bit-identical for any thread count or
//! batch split.

use std::cell::RefCell;

use rayon::prelude::*;

pub use crate::embed::compress::LinearMap;
pub use crate::embed::config::EmbeddingConfig;
use crate::embed::config::{Normalize, Value};
use crate::embed::ppr::{push, Workspace};
use crate::error::{Error, Result};
use crate::graph::csr::Graph;
use crate::hashing::SignedHasher;

pub const DEFAULT_DIM: usize = EmbeddingConfig::DEFAULT.dim;
pub const DEFAULT_SEED: u64 = EmbeddingConfig::DEFAULT.seed;

struct Scratch {
    ws: Workspace,
    support: Vec<(u32, f64)>,
    acc: Vec<i64>,
    /// The non-zero coordinates of a compressed row's wide row.
    terms: Vec<(u32, f32)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch {
        ws: Workspace::new(),
        support: Vec::new(),
        acc: Vec::new(),
        terms: Vec::new(),
    });
}

/// Fixed-point scale of the accumulator: terms are rounded to multiples of 2^-32.
const FIXED_ONE: f64 = 4294967296.0;

/// Embeds one node into `out` (length `cfg.dim`), unsmoothed (`cfg.smooth` is ignored) and
/// finished as every output row is (`finish_rows`). Uses this thread's reusable workspace.
pub fn embed_one(graph: &Graph, node: u32, cfg: &EmbeddingConfig, out: &mut [f32]) -> Result<()> {
    let divisor = cfg.normalize.divisor(graph.num_nodes());
    embed_one_scaled(graph, node, cfg, divisor, out)?;
    finish_rows(cfg, out, None);
    Ok(())
}

/// [`embed_one`] with the row's divisor (`cfg.normalize.divisor(n)`) computed by the caller,
/// once for a whole batch.
fn embed_one_scaled(
    graph: &Graph,
    node: u32,
    cfg: &EmbeddingConfig,
    divisor: Option<f64>,
    out: &mut [f32],
) -> Result<()> {
    debug_assert_eq!(out.len(), cfg.dim);
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let sc = &mut *guard;
        support(graph, node, cfg, sc)?;
        project(graph, &sc.support, cfg, divisor, &mut sc.acc, out)
    })
}

/// The compressed row of `node` (docs/SPEC.md §2c): its wide row (`wide_cfg.dim` = `wide_dim`)
/// mapped by `map`. Only the wide row's non-zero sums are rounded and mapped, in ascending
/// order: the same values and order as rounding the whole row, then skipping its zeros (a
/// non-zero sum is at least 2^-32 / ln(n), far above f32's smallest value).
fn embed_one_mapped(
    graph: &Graph,
    node: u32,
    wide_cfg: &EmbeddingConfig,
    map: &LinearMap,
    divisor: Option<f64>,
    out: &mut [f32],
) -> Result<()> {
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let sc = &mut *guard;
        support(graph, node, wide_cfg, sc)?;
        if sc.support.len() >= (1 << 26) {
            let mut wide = vec![0f32; wide_cfg.dim];
            project(
                graph,
                &sc.support,
                wide_cfg,
                divisor,
                &mut sc.acc,
                &mut wide,
            )?;
            map.apply(&wide, out);
            return Ok(());
        }
        accumulate(graph, &sc.support, wide_cfg, &mut sc.acc)?;
        // Branch-free: about one coordinate in five is non-zero, in no predictable pattern,
        // so an `if` per coordinate would mispredict hundreds of times per row.
        sc.terms.clear();
        sc.terms.resize(sc.acc.len(), (0, 0.0));
        let mut k = 0;
        for (j, &a) in sc.acc.iter().enumerate() {
            sc.terms[k].0 = j as u32;
            k += usize::from(a != 0);
        }
        sc.terms.truncate(k);
        for t in sc.terms.iter_mut() {
            let mut w = [0f32];
            round_rows(
                std::iter::once(sc.acc[t.0 as usize] as f64),
                divisor,
                &mut w,
            );
            t.1 = w[0];
        }
        map.apply_sparse(&sc.terms, out);
        Ok(())
    })
}

/// Pushes from `node` and leaves in `sc.support` the `(node, x)` pairs whose terms can be
/// non-zero, their pages requested on a cold file.
fn support(graph: &Graph, node: u32, cfg: &EmbeddingConfig, sc: &mut Scratch) -> Result<()> {
    push(graph, node, &cfg.ppr, &mut sc.ws)?;
    // With `ln(x n)` only x > 1/n contributes: a branch-free pass drops the rest (about half
    // of the touched nodes) before any `ln`. No contributor is dropped: fl(1/n) = (1 + d)/n
    // with |d| <= 2^-53, so x <= fl(1/n) gives x n <= 1 + 2^-53, which rounds to at most 1
    // (a tie goes to the even 1.0), and ln(1) = 0 adds nothing (`project` adds terms <= 0 as
    // 0). `ln(1 + x n)` keeps every x > 0.
    let n = graph.num_nodes() as f64;
    let (residual_share, min) = match cfg.value {
        Value::PPlusR => (1.0, 1.0 / n),
        Value::P => (0.0, 1.0 / n),
        Value::Log1p => (0.5, 0.0),
    };
    sc.ws.values_unsorted(&mut sc.support, residual_share, min);
    if graph.prefetch() {
        // Cold file: request the pages of the support's ids at once; `project` then reads
        // them one by one (each would otherwise be a separate page fault).
        for &(j, _) in &sc.support {
            graph.prefetch_id(j);
        }
    }
    Ok(())
}

/// Signed-hash projection of `(node, x)` pairs, in any order (docs/SPEC.md §2).
///
/// Each term `sign(j) * ln(x_j * n)` is rounded to a multiple of 2^-32 and summed exactly in
/// an integer: integer addition is associative, so the row does not depend on the order of
/// `support` (no sort is needed: sorting the support by node was half of the projection's
/// time) and is the same on every machine. The rounding (|error| <= 2^-33 per term) is far
/// below float32's resolution. Each sum is then divided by `divisor`
/// (`cfg.normalize.divisor(n)`, if any) in f64 and rounded to f32 once. `acc` is scratch, reused across
/// calls.
pub fn project(
    graph: &Graph,
    support: &[(u32, f64)],
    cfg: &EmbeddingConfig,
    divisor: Option<f64>,
    acc: &mut Vec<i64>,
    out: &mut [f32],
) -> Result<()> {
    // v < 23 for n < 2^32 (x <= 1), so every term is below 2^37 in magnitude and fewer than
    // 2^26 of them cannot overflow an i64. i64 sums convert to f64 in one instruction, i128
    // sums through a library call per dimension (2.4 % of a BlogCatalog query); both give the
    // same f64 for the same exact sum.
    if support.len() < (1 << 26) {
        accumulate(graph, support, cfg, acc)?;
        round_rows(acc.iter().map(|&a| a as f64), divisor, out);
    } else {
        let mut wide: Vec<i128> = Vec::new();
        accumulate(graph, support, cfg, &mut wide)?;
        round_rows(wide.iter().map(|&a| a as f64), divisor, out);
    }
    Ok(())
}

/// `out[k] = f32((sum_k / 2^32) / divisor)`, or `f32(sum_k / 2^32)` without a divisor: the
/// division by 2^32 is exact, the one by `divisor` one more f64 rounding, then one rounding to
/// f32.
#[inline(always)]
fn round_rows(sums: impl Iterator<Item = f64>, divisor: Option<f64>, out: &mut [f32]) {
    match divisor {
        None => {
            for (o, a) in out.iter_mut().zip(sums) {
                *o = (a / FIXED_ONE) as f32;
            }
        }
        Some(l) => {
            for (o, a) in out.iter_mut().zip(sums) {
                *o = ((a / FIXED_ONE) / l) as f32;
            }
        }
    }
}

/// `acc[dim(j)] += sign(j) * round(f(x_j n) * 2^32)` over the support (see `project`).
#[inline(always)]
fn accumulate<A>(
    graph: &Graph,
    support: &[(u32, f64)],
    cfg: &EmbeddingConfig,
    acc: &mut Vec<A>,
) -> Result<()>
where
    A: Copy + Default + From<i64> + std::ops::AddAssign,
{
    acc.clear();
    acc.resize(cfg.dim, A::default());
    match graph.hash_keys()? {
        Some(keys) => accumulate_with(graph, support, cfg, acc, |j| {
            keys.get(j as usize)
                .copied()
                .ok_or(Error::NodeIndexOutOfRange {
                    index: u64::from(j),
                    num_nodes: keys.len() as u64,
                })
        }),
        None => {
            accumulate_with(graph, support, cfg, acc, |j| graph.hash_key(j))?;
            graph.note_keyed(support.len());
            Ok(())
        }
    }
}

/// `accumulate`'s loop, with the key source resolved outside it (one loop per source).
#[inline(always)]
fn accumulate_with<A, K>(
    graph: &Graph,
    support: &[(u32, f64)],
    cfg: &EmbeddingConfig,
    acc: &mut [A],
    key_of: K,
) -> Result<()>
where
    A: Copy + Default + From<i64> + std::ops::AddAssign,
    K: Fn(u32) -> Result<u64>,
{
    let hasher = SignedHasher::new(cfg.seed, cfg.dim);
    let n = graph.num_nodes() as f64;
    let log1p = cfg.value == Value::Log1p;
    // Branch-free: whether a term is positive and its sign are coin flips per node, and the two
    // branches they were cost ~1,400 mispredictions per BlogCatalog query (callgrind). A term
    // <= 0 adds 0 instead of being skipped, which leaves the sum unchanged.
    for &(j, x) in support {
        let v = if log1p { (x * n).ln_1p() } else { (x * n).ln() };
        let (d, negative) = hasher.bucket_bits(key_of(j)?);
        let t = fixed_point(v.max(0.0));
        // Two's-complement negation when `negative` (mask all ones), identity otherwise.
        let mask = -i64::from(negative);
        acc[d] += A::from((t ^ mask) - mask);
    }
    Ok(())
}

/// `round_ties_even(v * 2^32)` for `0 <= v < 2^19` (terms are below 2^37 in magnitude).
///
/// Adding 2^52 leaves no fractional bits, so the addition itself rounds to the nearest integer,
/// ties to even, exactly as `f64::round_ties_even` does; the subtraction is exact. Written out
/// because `round_ties_even` is a call to libm's `rint` on the baseline x86-64 target (no
/// SSE4.1 `roundsd`), 1.7 % of a query.
#[inline(always)]
fn fixed_point(v: f64) -> i64 {
    const SHIFT: f64 = 4503599627370496.0; // 2^52
    let y = v * FIXED_ONE;
    debug_assert!((0.0..SHIFT / 2.0).contains(&y));
    ((y + SHIFT) - SHIFT) as i64
}

/// Embeds `nodes` (internal indices) into a row-major `nodes.len() x dim` matrix, in parallel
/// on `pool` (or serially when `pool` is None), smoothed by `cfg.smooth` steps (docs/SPEC.md
/// §2b): the rows of the nodes within `cfg.smooth` hops are embedded first, then averaged
/// towards `nodes` one hop per step; when `nodes` is every node in order, each step is one
/// sparse product over the whole graph. Row `i` depends only on `nodes[i]`, so the result is
/// the same for any thread count or split of `nodes`.
///
/// A compressed config (`wide_dim > 0`) needs its fitted map: see [`embed_nodes_mapped`].
pub fn embed_nodes(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbeddingConfig,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    embed_nodes_mapped(graph, nodes, cfg, None, pool)
}

/// [`embed_nodes`] for any config: with `wide_dim > 0`, each unsmoothed row is hashed into
/// `wide_dim` dimensions and mapped to `dim` by `map` (docs/SPEC.md §2c), which must have been
/// fitted for `cfg`; smoothing then averages the mapped rows, and `normalize="l2"` scales the
/// result's rows last.
pub fn embed_nodes_mapped(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    let mut rows = if cfg.smooth == 0 {
        embed_base_rows(graph, nodes, cfg, map, pool)?
    } else {
        cfg.validate()?;
        let plan = crate::embed::smooth::Plan::new(graph, nodes, cfg.smooth)?;
        let rows = embed_base_rows(graph, &plan.base_nodes(), cfg, map, pool)?;
        plan.apply(graph, rows, cfg.dim, pool)?
    };
    finish_rows(cfg, &mut rows, pool);
    Ok(rows)
}

/// The rows smoothing starts from: unsmoothed (`cfg.smooth` is ignored) and before the
/// output's unit-length scaling; mapped by `map` when `wide_dim > 0` (checked as in
/// [`embed_nodes_mapped`]). [`finish_rows`] turns rows made from them into the output.
pub fn embed_base_rows(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    cfg.validate()?;
    let map = match (cfg.wide_dim, map) {
        (0, None) => None,
        (0, Some(_)) => {
            return Err(Error::param(
                "a linear map was given but wide_dim is 0 (no compression)",
            ))
        }
        (_, None) => {
            return Err(Error::param(
                "wide_dim is set: the compressed output needs a fitted linear map (fit first)",
            ))
        }
        (_, Some(m)) => {
            m.check(cfg)?;
            Some(m)
        }
    };
    embed_rows(graph, nodes, cfg, map, pool)
}

/// The output's last step on (smoothed) rows: with `normalize="l2"`, each row scaled to unit
/// length; otherwise nothing.
pub fn finish_rows(cfg: &EmbeddingConfig, rows: &mut [f32], pool: Option<&rayon::ThreadPool>) {
    if cfg.normalize == Normalize::L2 {
        unit_rows(rows, cfg.dim, pool);
    }
}

/// Scales each `dim`-row to unit Euclidean length (docs/SPEC.md §2): `norm = sqrt(sum of
/// x^2)` in f64 over the row in order, then `x = f32(x / norm)`; a zero row stays zero. Each
/// row alone, so the same for any thread count or split.
fn unit_rows(rows: &mut [f32], dim: usize, pool: Option<&rayon::ThreadPool>) {
    let one = |row: &mut [f32]| {
        let norm = row
            .iter()
            .fold(0f64, |s, &x| s + f64::from(x) * f64::from(x))
            .sqrt();
        if norm > 0.0 {
            for x in row {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
    };
    match pool {
        Some(pool) if rows.len() > dim && pool.current_num_threads() > 1 => pool.install(|| {
            rows.par_chunks_mut(dim).with_min_len(64).for_each(one);
        }),
        _ => rows.chunks_mut(dim).for_each(one),
    }
}

/// Row of `v`: hashed into `cfg.dim`, or with `map`, into `cfg.wide_dim` and then mapped.
fn embed_row(
    graph: &Graph,
    v: u32,
    cfg: &EmbeddingConfig,
    wide_cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
    divisor: Option<f64>,
    row: &mut [f32],
) -> Result<()> {
    match map {
        None => embed_one_scaled(graph, v, cfg, divisor, row),
        Some(m) => embed_one_mapped(graph, v, wide_cfg, m, divisor, row),
    }
}

/// The unsmoothed rows (docs/SPEC.md §2, §2c) of `nodes`.
fn embed_rows(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    let wide_cfg = EmbeddingConfig {
        dim: if map.is_some() { cfg.wide_dim } else { cfg.dim },
        wide_dim: 0,
        ..*cfg
    };
    let d = cfg.dim;
    let total = nodes
        .len()
        .checked_mul(d)
        .ok_or_else(|| Error::param("nodes x dim overflows"))?;
    let mut out = vec![0f32; total];
    let divisor = cfg.normalize.divisor(graph.num_nodes());
    match pool {
        Some(pool) if nodes.len() > 1 && pool.current_num_threads() > 1 => pool.install(|| {
            out.par_chunks_mut(d)
                .zip(nodes.par_iter())
                .with_min_len(8)
                .try_for_each(|(row, &v)| embed_row(graph, v, cfg, &wide_cfg, map, divisor, row))
        })?,
        _ => {
            for (row, &v) in out.chunks_mut(d).zip(nodes) {
                embed_row(graph, v, cfg, &wide_cfg, map, divisor, row)?;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::config::Normalize;
    use crate::embed::ppr::{sort_by_node, PprConfig};
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
    use crate::hashing::splitmix64;

    /// The support filter's cut-off `x > fl(1/n)` (embed_one) never drops a node whose term
    /// `ln(x n)` is positive: at and just below the cut-off, the term is <= 0.
    #[test]
    fn one_over_n_cut_off_drops_no_contributor() {
        for k in 0..20_000u64 {
            let n = (1 + splitmix64(k) % (1 << 40)) as f64;
            let cut = 1.0 / n;
            let mut x = cut;
            for _ in 0..4 {
                assert!((x * n).ln() <= 0.0, "n = {n}, x = {x:e}");
                x = x.next_down();
            }
        }
    }

    #[test]
    fn fixed_point_rounds_like_round_ties_even() {
        let scale = FIXED_ONE;
        // Exact ties (k + 1/2) / 2^32 round to the even neighbour; values a bit off a tie, zero,
        // and random magnitudes across the whole range of ln(x n).
        let mut cases = vec![0.0, 0.5 / scale, 1.5 / scale, 2.5 / scale, 23.0, 1e-300];
        for k in 0..2000u64 {
            let tie = ((splitmix64(k) >> 28) as f64 + 0.5) / scale;
            cases.extend([tie, tie.next_up(), tie.next_down()]);
            cases.push((splitmix64(k + 7) >> 11) as f64 / (1u64 << 53) as f64 * 23.0);
        }
        for v in cases {
            assert_eq!(
                fixed_point(v),
                (v * scale).round_ties_even() as i64,
                "v = {v:e}"
            );
        }
    }

    #[test]
    fn radix_sort_by_node_matches_a_comparison_sort() {
        let mut buf = Vec::new();
        for (len, range) in [
            (0, 1),
            (1, 1),
            (65, 100),
            (3000, 10_000),
            (5000, 1 << 20),
            (9000, u32::MAX),
        ] {
            let mut keys: Vec<u32> = (0..len as u64)
                .map(|i| (splitmix64(i + len as u64) % u64::from(range)) as u32)
                .collect();
            keys.sort_unstable();
            keys.dedup();
            // shuffle deterministically
            let mut v: Vec<(u32, f64)> = keys.iter().map(|&k| (k, f64::from(k) * 0.5)).collect();
            for i in (1..v.len()).rev() {
                v.swap(i, (splitmix64(i as u64) % (i as u64 + 1)) as usize);
            }
            let mut want = v.clone();
            want.sort_unstable_by_key(|e| e.0);
            sort_by_node(&mut v, &mut buf);
            assert_eq!(v, want, "len {len} range {range}");
        }
    }

    /// A ring with chords `i -> 7i + 1 (mod n)`, undirected, with the given ids.
    fn chord_ring(n: u32, ids: IdTable) -> Graph {
        let src: Vec<u32> = (0..n).collect();
        let dst: Vec<u32> = (0..n).map(|i| (i * 7 + 1) % n).collect();
        let parts = csr_from_edges(n as usize, &src, &dst, None, false, Merge::Sum, ids);
        build_in_memory(&parts.unwrap()).unwrap()
    }

    #[test]
    fn projection_does_not_depend_on_the_support_order() {
        // A ring with chords; any graph works: project() only needs n and hash keys.
        let n = 1000u32;
        let g = chord_ring(n, IdTable::Implicit);
        let cfg = EmbeddingConfig {
            dim: 64,
            ..EmbeddingConfig::default()
        };
        let mut support: Vec<(u32, f64)> = (0..n)
            .map(|j| (j, 1.0 / (1.0 + f64::from(j)) + 1e-9 * f64::from(j)))
            .collect();
        let (mut acc, mut a, mut b) = (Vec::new(), vec![0f32; 64], vec![0f32; 64]);
        project(&g, &support, &cfg, None, &mut acc, &mut a).unwrap();
        support.reverse();
        for i in (1..support.len()).rev() {
            support.swap(i, (splitmix64(i as u64 ^ 99) % (i as u64 + 1)) as usize);
        }
        project(&g, &support, &cfg, None, &mut acc, &mut b).unwrap();
        assert_eq!(a, b);
        assert!(a.iter().any(|&x| x != 0.0));
    }

    /// `normalize="ln_n"` divides each exact sum by `ln(max(n, 3))` in f64 before the one
    /// rounding to f32; `"none"` rounds the sum itself. Checked against the accumulator, for
    /// graphs of 1, 2, 3 and 1000 nodes (the first two divide by ln 3).
    #[test]
    fn normalize_divides_the_exact_sum_by_ln_n() {
        assert_eq!(Normalize::LnN.divisor(1), Some(3f64.ln()));
        assert_eq!(Normalize::LnN.divisor(2), Some(3f64.ln()));
        assert_eq!(Normalize::LnN.divisor(1000), Some(1000f64.ln()));
        assert_eq!(Normalize::None.divisor(1000), None);
        for n in [1u32, 2, 3, 1000] {
            let g = chord_ring(n, IdTable::Implicit);
            let base = EmbeddingConfig {
                dim: 24,
                ppr: PprConfig {
                    eps: 1e-4,
                    ..PprConfig::default()
                },
                ..EmbeddingConfig::default()
            };
            assert_eq!(base.normalize, Normalize::LnN, "the default");
            let plain = EmbeddingConfig {
                normalize: Normalize::None,
                ..base
            };
            let ln_n = f64::from(n.max(3)).ln();
            let nodes: Vec<u32> = (0..n).collect();
            let scaled = embed_nodes(&g, &nodes, &base, None).unwrap();
            let unscaled = embed_nodes(&g, &nodes, &plain, None).unwrap();
            let mut nonzero = 0;
            for v in 0..n as usize {
                // The row's exact sums, from the same push and accumulator.
                let mut ws = Workspace::new();
                push(&g, v as u32, &base.ppr, &mut ws).unwrap();
                let mut support = Vec::new();
                ws.values_unsorted(&mut support, 1.0, 1.0 / f64::from(n));
                let mut acc: Vec<i64> = Vec::new();
                accumulate(&g, &support, &base, &mut acc).unwrap();
                for (k, &a) in acc.iter().enumerate() {
                    let sum = a as f64 / FIXED_ONE;
                    let i = v * 24 + k;
                    assert_eq!(unscaled[i].to_bits(), (sum as f32).to_bits());
                    assert_eq!(scaled[i].to_bits(), ((sum / ln_n) as f32).to_bits());
                    nonzero += usize::from(a != 0);
                }
            }
            assert!(n < 3 || nonzero > 0, "n = {n}: the rows test nothing");
        }
    }

    /// String-id graphs read hash keys from a table once enough keys were hashed: rows are
    /// bit-identical before and after, and to a fresh graph that never built it.
    #[test]
    fn string_id_key_table_gives_the_same_rows() {
        let n = 300u32;
        let names: Vec<String> = (0..n).map(|i| format!("node-{}", i * 31 % n)).collect();
        let warm = chord_ring(n, IdTable::Str(names.clone()));
        let fresh = chord_ring(n, IdTable::Str(names));
        let cfg = EmbeddingConfig {
            dim: 32,
            ppr: PprConfig {
                eps: 1e-4,
                ..PprConfig::default()
            },
            ..EmbeddingConfig::default()
        };
        let nodes: Vec<u32> = (0..n).collect();
        assert!(warm.hash_keys().unwrap().is_none());
        let first = embed_nodes(&warm, &nodes, &cfg, None).unwrap();
        let keys = warm
            .hash_keys()
            .unwrap()
            .expect("built after n hashed keys");
        assert_eq!(keys.len(), n as usize);
        assert_eq!(keys[5], warm.hash_key(5).unwrap());
        let again = embed_nodes(&warm, &nodes, &cfg, None).unwrap();
        // Only node 0's row: the fresh graph must not build its table before the comparison.
        let mut one = vec![0f32; 32];
        embed_one(&fresh, 0, &cfg, &mut one).unwrap();
        assert!(fresh.hash_keys().unwrap().is_none());
        assert_eq!(first, again);
        assert_eq!(&again[..32], &one[..]);
    }

    /// Smoothing in the kernel: a node's smoothed row is the same whether it is embedded alone,
    /// in any subset (duplicates included), on any number of threads, or with every node (the
    /// whole-graph plan); and smoothing changes the rows.
    #[test]
    fn smoothed_rows_are_the_same_for_any_subset_threads_or_the_whole_graph() {
        let n = 300u32;
        for ids in [
            IdTable::Implicit,
            IdTable::Str((0..n).map(|i| format!("v{i}")).collect()),
        ] {
            let g = chord_ring(n, ids);
            let d = 16;
            let cfg = EmbeddingConfig {
                dim: d,
                smooth: 2,
                ppr: PprConfig {
                    eps: 1e-3,
                    ..PprConfig::default()
                },
                ..EmbeddingConfig::default()
            };
            let all: Vec<u32> = (0..n).collect();
            let whole = embed_nodes(&g, &all, &cfg, None).unwrap();
            assert_ne!(
                whole,
                embed_nodes(&g, &all, &cfg.unsmoothed(), None).unwrap()
            );
            let pool = crate::parallel::pool(3).unwrap();
            assert_eq!(whole, embed_nodes(&g, &all, &cfg, Some(&pool)).unwrap());
            let reversed: Vec<u32> = all.iter().rev().copied().collect();
            for pick in [vec![5u32], vec![7, 7, 299, 0], reversed] {
                for p in [None, Some(&*pool)] {
                    let got = embed_nodes(&g, &pick, &cfg, p).unwrap();
                    for (i, &v) in pick.iter().enumerate() {
                        let v = v as usize;
                        assert_eq!(got[i * d..(i + 1) * d], whole[v * d..(v + 1) * d]);
                    }
                }
            }
        }
    }
}
