//! The embedding (docs/SPEC.md §2 and §2b) against the formulas written out here, for every
//! `value` and `normalize` and for smoothing over the whole graph and over a few nodes.
//!
//! The oracle starts from the push's final state (`ppr_state`: every touched node's `p` and
//! `r`, itself checked against exact PPR in tests/ppr_exact.rs) and applies the SPEC by hand:
//! the values per `value`, the terms `ln(x n)` or `ln(1 + x n)` (negative terms add nothing),
//! each rounded to a multiple of 2^-32 and summed exactly with its hash sign in its hash bucket,
//! the row divided by `ln(max(n, 3))` for `normalize="ln_n"` and rounded to f32 once; then `k`
//! smoothing steps `E_i[u] = f32(sum w(u,v) E_{i-1}[v] / sum w(u,v))` in f64, in row order;
//! with `normalize="l2"`, each final row over its f64 norm, rounded to f32. The signed hash (`SignedHasher`) is pinned by frozen golden values of its own.

use instant_embedding::embed::config::{Normalize, Value};
use instant_embedding::embed::ppr::{ppr_state, PprConfig, Variant};
use instant_embedding::embed::{embed_nodes, embed_one};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::graph::csr::Graph;
use instant_embedding::hashing::{splitmix64, SignedHasher};
use instant_embedding::EmbeddingConfig;

const VALUES: [Value; 3] = [Value::PPlusR, Value::P, Value::Log1p];
const NORMALIZE: [Normalize; 3] = [Normalize::LnN, Normalize::None, Normalize::L2];

/// A random graph with a hub, isolated nodes and (directed) dangling nodes; weights in 1/4s.
fn graph(directed: bool, weighted: bool) -> Graph {
    let n = 50usize;
    let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..220u64 {
        let a = (splitmix64(k) % (n as u64 - 4)) as u32;
        let b = if splitmix64(k + 1000) % 5 == 0 {
            0
        } else {
            (splitmix64(k + 2000) % (n as u64 - 4)) as u32
        };
        src.push(a);
        dst.push(b);
        w.push((1 + splitmix64(k + 3000) % 8) as f32 / 4.0);
    }
    let parts = csr_from_edges(
        n,
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

/// One node's unsmoothed row by the formulas of SPEC §2, before `normalize="l2"`'s scaling.
fn spec_row(g: &Graph, node: u32, cfg: &EmbeddingConfig) -> Vec<f32> {
    let n = g.num_nodes() as f64;
    let hasher = SignedHasher::new(cfg.seed, cfg.dim);
    let mut sums = vec![0i128; cfg.dim];
    for (j, p, r) in ppr_state(g, node, &cfg.ppr).unwrap() {
        let (x, keep, term) = match cfg.value {
            Value::PPlusR => (p + r, p + r > 1.0 / n, (p + r) * n),
            Value::P => (p, p > 1.0 / n, p * n),
            Value::Log1p => (p + 0.5 * r, p + 0.5 * r > 0.0, 0.0),
        };
        if !keep {
            continue;
        }
        let v = match cfg.value {
            Value::Log1p => (x * n).ln_1p(),
            _ => term.ln(),
        };
        if v <= 0.0 {
            continue;
        }
        let fixed = (v * 4294967296.0).round_ties_even() as i128;
        let (d, negative) = hasher.bucket_bits(g.hash_key(j).unwrap());
        sums[d] += if negative { -fixed } else { fixed };
    }
    let divisor = match cfg.normalize {
        Normalize::LnN => Some((g.num_nodes().max(3) as f64).ln()),
        Normalize::None | Normalize::L2 => None,
    };
    sums.iter()
        .map(|&s| {
            let x = s as f64 / 4294967296.0;
            divisor.map_or(x, |l| x / l) as f32
        })
        .collect()
}

/// The output's last step (SPEC §2): with `normalize="l2"`, the row over its f64 norm (summed
/// in order), rounded to f32; a zero row unchanged.
fn spec_finish(cfg: &EmbeddingConfig, mut row: Vec<f32>) -> Vec<f32> {
    if cfg.normalize == Normalize::L2 {
        let mut sum = 0f64;
        for &x in &row {
            sum += f64::from(x) * f64::from(x);
        }
        let norm = sum.sqrt();
        if norm > 0.0 {
            row = row.iter().map(|&x| (f64::from(x) / norm) as f32).collect();
        }
    }
    row
}

/// Every node's row after `k` smoothing steps (SPEC §2b), from the rows of `spec_row`, then
/// finished (`spec_finish`).
fn spec_smoothed(g: &Graph, cfg: &EmbeddingConfig, k: usize) -> Vec<Vec<f32>> {
    let n = g.num_nodes() as u32;
    let mut rows: Vec<Vec<f32>> = (0..n).map(|u| spec_row(g, u, cfg)).collect();
    for _ in 0..k {
        let prev = rows.clone();
        for u in 0..n {
            let nbrs = g.neighbors(u).unwrap();
            if nbrs.is_empty() {
                continue;
            }
            let weights = g.weights(u).unwrap();
            let w = |i: usize| weights.as_ref().map_or(1.0, |w| f64::from(w[i]));
            let total: f64 = (0..nbrs.len()).map(w).sum();
            for d in 0..cfg.dim {
                let mut acc = 0f64;
                for (i, &v) in nbrs.iter().enumerate() {
                    acc += w(i) * f64::from(prev[v as usize][d]);
                }
                rows[u as usize][d] = (acc / total) as f32;
            }
        }
    }
    rows.into_iter().map(|r| spec_finish(cfg, r)).collect()
}

fn config(value: Value, normalize: Normalize, variant: Variant, smooth: usize) -> EmbeddingConfig {
    EmbeddingConfig {
        dim: 24,
        seed: 5,
        value,
        normalize,
        smooth,
        ppr: PprConfig {
            alpha: 0.2,
            eps: 1e-4,
            variant,
            ..PprConfig::default()
        },
        ..EmbeddingConfig::DEFAULT
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn every_value_and_normalize_follow_the_spec_formula() {
    for (directed, weighted) in [(false, false), (false, true), (true, false), (true, true)] {
        let g = graph(directed, weighted);
        let nodes: Vec<u32> = (0..g.num_nodes() as u32).collect();
        for value in VALUES {
            for normalize in NORMALIZE {
                for variant in [Variant::Standard, Variant::Lazy] {
                    let cfg = config(value, normalize, variant, 0);
                    let got = embed_nodes(&g, &nodes, &cfg, None).unwrap();
                    for &u in &nodes {
                        let row = &got[u as usize * cfg.dim..(u as usize + 1) * cfg.dim];
                        assert_eq!(
                            bits(row),
                            bits(&spec_finish(&cfg, spec_row(&g, u, &cfg))),
                            "node {u}, {value:?} {normalize:?} {variant:?} \
                             directed={directed} weighted={weighted}"
                        );
                        // One node alone: the same row.
                        let mut one = vec![0f32; cfg.dim];
                        embed_one(&g, u, &cfg, &mut one).unwrap();
                        assert_eq!(bits(&one), bits(row), "embed_one, node {u}, {normalize:?}");
                    }
                }
            }
        }
    }
}

/// The values differ from each other on these graphs, so a kernel that ignored `value` or
/// `normalize` could not pass the test above by accident.
#[test]
fn the_settings_tested_give_different_rows() {
    let g = graph(false, true);
    let nodes: Vec<u32> = (0..g.num_nodes() as u32).collect();
    let mut seen = Vec::new();
    for value in VALUES {
        for normalize in NORMALIZE {
            let cfg = config(value, normalize, Variant::Standard, 0);
            let rows = bits(&embed_nodes(&g, &nodes, &cfg, None).unwrap());
            assert!(!seen.contains(&rows), "{value:?} {normalize:?}");
            seen.push(rows);
        }
    }
}

#[test]
fn whole_graph_smoothing_follows_the_spec_and_equals_local_rows() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for (directed, weighted) in [(false, false), (false, true), (true, true)] {
        let g = graph(directed, weighted);
        let all: Vec<u32> = (0..g.num_nodes() as u32).collect();
        for (value, normalize) in [
            (Value::Log1p, Normalize::LnN),
            (Value::PPlusR, Normalize::LnN),
            (Value::Log1p, Normalize::L2),
        ] {
            for k in [1usize, 2, 3] {
                let cfg = config(value, normalize, Variant::Standard, k);
                let want = spec_smoothed(&g, &config(value, normalize, Variant::Standard, 0), k);
                let whole = embed_nodes(&g, &all, &cfg, Some(&pool)).unwrap();
                for &u in &all {
                    let row = &whole[u as usize * cfg.dim..(u as usize + 1) * cfg.dim];
                    assert_eq!(
                        bits(row),
                        bits(&want[u as usize]),
                        "node {u}, k={k}, {value:?}, directed={directed} weighted={weighted}"
                    );
                }
                // A few nodes alone (the local plan) give the same rows as the whole graph.
                let some = [7u32, 0, 7, 31];
                let local = embed_nodes(&g, &some, &cfg, None).unwrap();
                for (i, &u) in some.iter().enumerate() {
                    assert_eq!(
                        bits(&local[i * cfg.dim..(i + 1) * cfg.dim]),
                        bits(&want[u as usize]),
                        "local node {u}, k={k}"
                    );
                }
            }
        }
    }
}
