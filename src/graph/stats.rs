//! Degree statistics of a graph, as `info` reports them.

use super::csr::Graph;
use crate::error::Result;

/// The spread of the (out-)degrees of a graph's nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DegreeStats {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    /// The middle degree (the mean of the two middle ones for an even count).
    pub median: f64,
    /// Nodes of degree 0: isolated nodes, or in a directed graph nodes without out-arcs.
    pub zero: u64,
}

pub fn degree_stats(graph: &Graph) -> Result<DegreeStats> {
    let n = graph.num_nodes();
    let mut deg = (0..n as u32)
        .map(|v| graph.degree(v))
        .collect::<Result<Vec<u64>>>()?;
    if n == 0 {
        return Ok(DegreeStats::default());
    }
    deg.sort_unstable();
    let median = (deg[(n - 1) / 2] + deg[n / 2]) as f64 / 2.0;
    Ok(DegreeStats {
        min: deg[0],
        max: deg[n - 1],
        mean: deg.iter().sum::<u64>() as f64 / n as f64,
        median,
        zero: deg.partition_point(|&d| d == 0) as u64,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};

    /// An in-memory graph of `n` nodes (implicit ids) and these arcs or edges.
    pub(crate) fn graph(n: usize, edges: &[(u32, u32)], directed: bool) -> Graph {
        let (src, dst): (Vec<u32>, Vec<u32>) = edges.iter().copied().unzip();
        let parts = csr_from_edges(n, &src, &dst, None, directed, Merge::Sum, IdTable::Implicit);
        build_in_memory(&parts.unwrap()).unwrap()
    }

    #[test]
    fn degree_stats_match_a_count_by_hand() {
        // undirected: a triangle 0-1-2, a pendant 2-3, isolated 4 and 5: degrees 2,2,3,1,0,0
        let g = graph(6, &[(0, 1), (1, 2), (2, 0), (2, 3)], false);
        let s = degree_stats(&g).unwrap();
        assert_eq!((s.min, s.max, s.zero), (0, 3, 2));
        assert_eq!((s.mean, s.median), (8.0 / 6.0, 1.5));
        // directed: out-degrees 1,1,2,0,0 (odd count: the middle one)
        let g = graph(5, &[(0, 1), (1, 2), (2, 0), (2, 3)], true);
        let s = degree_stats(&g).unwrap();
        assert_eq!((s.min, s.max, s.zero, s.median), (0, 2, 2, 1.0));
        assert_eq!(
            degree_stats(&graph(0, &[], false)).unwrap(),
            DegreeStats::default()
        );
    }
}
