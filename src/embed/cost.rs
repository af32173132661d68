//! The measured cost of embedding single nodes, as `info` reports it: each node of a sample is
//! embedded alone on the calling thread (every setting counts: value, normalize, smoothing,
//! compression) and its push measured on its own.

use std::time::Instant;

use super::compress::LinearMap;
use super::config::EmbeddingConfig;
use super::ppr::{push, Workspace};
use crate::error::Result;
use crate::graph::csr::Graph;

/// One sampled node's cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeCost {
    /// Wall-clock seconds of its embedding, alone, on one thread.
    pub seconds: f64,
    /// Nodes with a nonzero approximate PPR value.
    pub support: u64,
    /// Nodes the push touched.
    pub touched: u64,
    /// Edge updates of the push.
    pub pushes: u64,
    /// The push workspace's heap bytes.
    pub heap_bytes: u64,
}

/// The cost of each of `nodes` (internal indices), in order.
pub fn node_costs(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
) -> Result<Vec<NodeCost>> {
    cfg.validate()?;
    let mut support = Vec::new();
    nodes
        .iter()
        .map(|&v| {
            let t0 = Instant::now();
            super::embed_nodes_mapped(graph, &[v], cfg, map, None)?;
            let seconds = t0.elapsed().as_secs_f64();
            let mut ws = Workspace::new(); // fresh: heap_bytes is this query's alone
            push(graph, v, &cfg.ppr, &mut ws)?;
            ws.support(&mut support);
            Ok(NodeCost {
                seconds,
                support: support.len() as u64,
                touched: ws.touched() as u64,
                pushes: ws.pushes,
                heap_bytes: ws.heap_bytes() as u64,
            })
        })
        .collect()
}

/// Median, 95th percentile and maximum of some measurements (percentiles interpolated linearly
/// between order statistics, as numpy's default `percentile` does).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Spread {
    pub median: f64,
    pub p95: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        Spread {
            median: percentile(&v, 50.0),
            p95: percentile(&v, 95.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
}

/// The `q`-th percentile of ascending `sorted` (0 for none).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let at = q / 100.0 * last as f64;
    let (lo, frac) = (at.floor() as usize, at - at.floor());
    let hi = (lo + 1).min(last);
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// `k` distinct nodes of `0..n` (all of them when `k >= n`), ascending, the same for the same
/// `seed`: a partial Fisher-Yates shuffle driven by splitmix64.
pub fn sample_nodes(n: usize, k: usize, seed: u64) -> Vec<u32> {
    let k = k.min(n);
    let mut picked: std::collections::HashMap<usize, usize> = Default::default();
    let mut state = seed;
    let mut out: Vec<u32> = (0..k)
        .map(|i| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let j = i + (crate::hashing::splitmix64(state) % (n - i) as u64) as usize;
            let at_j = *picked.get(&j).unwrap_or(&j);
            let at_i = *picked.get(&i).unwrap_or(&i);
            picked.insert(j, at_i);
            at_j as u32
        })
        .collect();
    out.sort_unstable();
    out
}

/// What one node's embedding costs on `graph` with `cfg`: the spread over a sample of nodes
/// (`sample_nodes`), each measured as [`node_costs`] does.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CostEstimate {
    /// Nodes measured.
    pub sample: usize,
    pub seconds: Spread,
    pub support: Spread,
    pub touched: Spread,
    pub pushes: Spread,
    pub heap_bytes: Spread,
    /// Mean seconds per node, for the whole graph's estimate.
    pub mean_seconds: f64,
}

pub fn estimate(
    graph: &Graph,
    cfg: &EmbeddingConfig,
    map: Option<&LinearMap>,
    sample: usize,
    seed: u64,
) -> Result<CostEstimate> {
    let nodes = sample_nodes(graph.num_nodes(), sample, seed);
    let costs = node_costs(graph, &nodes, cfg, map)?;
    let spread = |f: fn(&NodeCost) -> f64| Spread::of(costs.iter().map(f));
    Ok(CostEstimate {
        sample: nodes.len(),
        seconds: spread(|c| c.seconds),
        support: spread(|c| c.support as f64),
        touched: spread(|c| c.touched as f64),
        pushes: spread(|c| c.pushes as f64),
        heap_bytes: spread(|c| c.heap_bytes as f64),
        mean_seconds: costs.iter().map(|c| c.seconds).sum::<f64>() / nodes.len().max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_as_numpy_does() {
        // numpy.percentile([1, 2, 3, 10], [50, 95]) == [2.5, 8.95]
        let s = Spread::of([3.0, 1.0, 10.0, 2.0]);
        assert_eq!(s.median, 2.5);
        assert!((s.p95 - 8.95).abs() < 1e-12);
        assert_eq!(s.max, 10.0);
        assert_eq!(Spread::of([]), Spread::default());
        assert_eq!(Spread::of([7.0]).p95, 7.0);
    }

    #[test]
    fn samples_are_distinct_sorted_and_seeded() {
        for (n, k) in [(0, 5), (10, 10), (10, 3), (1000, 50), (5, 0)] {
            let s = sample_nodes(n, k, 7);
            assert_eq!(s.len(), k.min(n));
            assert!(s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&v| (v as usize) < n));
            assert_eq!(s, sample_nodes(n, k, 7));
        }
        assert_ne!(sample_nodes(1000, 50, 1), sample_nodes(1000, 50, 2));
        // every node can be drawn: over seeds, a sample of 1 of 4 hits each node
        let hit: std::collections::BTreeSet<u32> =
            (0..64).map(|seed| sample_nodes(4, 1, seed)[0]).collect();
        assert_eq!(hit.len(), 4);
    }
}
