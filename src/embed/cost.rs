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
