//! One embedding run as a streaming job: the rows of many nodes computed batch by batch, with a
//! caller's hook between batches (progress, cancellation) and the rows handed to a sink (a file
//! writer) or collected in memory. Smoothed rows follow the smoothing plan: the unsmoothed rows
//! of its base nodes batch by batch, then every step at once (docs/SPEC.md §2b).
//!
//! Results do not depend on the batch split, so batches are sized for responsiveness: without a
//! fixed size, each batch is sized to take about [`BATCH_SECONDS`] from the last one's rate.

use std::time::Instant;

use crate::embed::compress::LinearMap;
use crate::embed::config::EmbeddingConfig;
use crate::embed::smooth::Plan;
use crate::error::Result;
use crate::graph::csr::Graph;

/// Target duration of one batch when the batch size adapts.
pub const BATCH_SECONDS: f64 = 0.2;
/// Most nodes in one adaptive batch (bounds the memory of one batch's rows).
pub const MAX_BATCH: usize = 1 << 16;
/// Nodes per thread in the first adaptive batch.
const FIRST_BATCH_PER_THREAD: usize = 8;

/// Called between batches; an error stops the job and is returned by [`run`].
pub trait Hooks {
    /// `done` of `total` nodes are embedded (unsmoothed base rows when smoothing).
    fn progress(&mut self, done: usize, total: usize) -> Result<()>;
}

/// No reporting and no cancellation.
pub struct Silent;

impl Hooks for Silent {
    fn progress(&mut self, _done: usize, _total: usize) -> Result<()> {
        Ok(())
    }
}

/// Where the rows go, in node order: `rows` (row-major, `dim` wide) embed `nodes`.
pub trait RowSink {
    fn write(&mut self, graph: &Graph, nodes: &[u32], rows: &[f32]) -> Result<()>;
}

/// An embedding run's inputs other than its nodes.
pub struct Job<'a> {
    pub graph: &'a Graph,
    pub config: &'a EmbeddingConfig,
    /// The fitted map of a compressed config (`wide_dim > 0`).
    pub map: Option<&'a LinearMap>,
    pub threads: usize,
    /// Nodes per batch; None adapts it (see the module doc).
    pub batch_size: Option<usize>,
}

impl Job<'_> {
    /// The rows of `nodes` (internal indices, duplicates allowed): handed to `sink` batch by
    /// batch and an empty vector returned, or, without a sink, returned as one row-major matrix.
    pub fn run(
        &self,
        nodes: &[u32],
        hooks: &mut dyn Hooks,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Vec<f32>> {
        self.config.validate()?;
        if self.config.smooth == 0 {
            return self.batches(nodes, self.config, hooks, sink);
        }
        let plan = Plan::new(self.graph, nodes, self.config.smooth)?;
        let rows = self.batches(&plan.base_nodes(), self.config, hooks, None)?;
        let pool = crate::parallel::pool_for(self.threads, nodes.len())?;
        let mut rows = plan.apply(self.graph, rows, self.config.dim, pool.as_deref())?;
        crate::embed::finish_rows(self.config, &mut rows, pool.as_deref());
        match sink {
            None => Ok(rows),
            Some(sink) => {
                sink.write(self.graph, nodes, &rows)?;
                Ok(Vec::new())
            }
        }
    }

    fn batches(
        &self,
        nodes: &[u32],
        config: &EmbeddingConfig,
        hooks: &mut dyn Hooks,
        mut sink: Option<&mut dyn RowSink>,
    ) -> Result<Vec<f32>> {
        let total = nodes.len();
        let dim = config.dim;
        let mut out = Vec::new();
        if sink.is_none() {
            out.reserve_exact(total * dim);
        }
        let mut size = self
            .batch_size
            .unwrap_or(FIRST_BATCH_PER_THREAD * self.threads)
            .max(1);
        let mut start = 0;
        while start < total {
            let stop = total.min(start + size);
            let batch = &nodes[start..stop];
            let t0 = Instant::now();
            let pool = crate::parallel::pool_for(self.threads, batch.len())?;
            let mut rows = crate::embed::embed_base_rows(
                self.graph,
                batch,
                config,
                self.map,
                pool.as_deref(),
            )?;
            // With smoothing, these are the base rows that `run` smooths, then finishes.
            if config.smooth == 0 {
                crate::embed::finish_rows(config, &mut rows, pool.as_deref());
            }
            let per_node = t0.elapsed().as_secs_f64() / batch.len() as f64;
            match sink.as_deref_mut() {
                Some(s) => s.write(self.graph, batch, &rows)?,
                None => out.extend_from_slice(&rows),
            }
            hooks.progress(stop, total)?;
            if self.batch_size.is_none() {
                size = (BATCH_SECONDS / per_node.max(1e-9)).clamp(1.0, MAX_BATCH as f64) as usize;
            }
            start = stop;
        }
        if total == 0 {
            hooks.progress(0, 0)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn path_graph(n: u32) -> Graph {
        let src: Vec<u32> = (0..n - 1).collect();
        let dst: Vec<u32> = (1..n).collect();
        use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
        let parts = csr_from_edges(
            n as usize,
            &src,
            &dst,
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        );
        build_in_memory(&parts.unwrap()).unwrap()
    }

    struct Collect(Vec<(Vec<u32>, Vec<f32>)>);
    impl RowSink for Collect {
        fn write(&mut self, _: &Graph, nodes: &[u32], rows: &[f32]) -> Result<()> {
            self.0.push((nodes.to_vec(), rows.to_vec()));
            Ok(())
        }
    }

    struct StopAfter(usize, Vec<usize>);
    impl Hooks for StopAfter {
        fn progress(&mut self, done: usize, _: usize) -> Result<()> {
            self.1.push(done);
            if done >= self.0 {
                return Err(Error::Cancelled);
            }
            Ok(())
        }
    }

    #[test]
    fn batched_rows_equal_one_call_for_every_split_and_smoothing() {
        let g = path_graph(40);
        let nodes: Vec<u32> = vec![3, 39, 0, 3, 17, 22, 5];
        for smooth in [0, 2] {
            let cfg = EmbeddingConfig {
                dim: 8,
                smooth,
                ..Default::default()
            };
            let want = crate::embed::embed_nodes(&g, &nodes, &cfg, None).unwrap();
            for batch_size in [Some(1), Some(3), Some(100), None] {
                let job = Job {
                    graph: &g,
                    config: &cfg,
                    map: None,
                    threads: 2,
                    batch_size,
                };
                assert_eq!(job.run(&nodes, &mut Silent, None).unwrap(), want);
                let mut sink = Collect(Vec::new());
                assert!(job
                    .run(&nodes, &mut Silent, Some(&mut sink))
                    .unwrap()
                    .is_empty());
                let got_nodes: Vec<u32> = sink.0.iter().flat_map(|(n, _)| n.clone()).collect();
                let got_rows: Vec<f32> = sink.0.iter().flat_map(|(_, r)| r.clone()).collect();
                assert_eq!(got_nodes, nodes);
                assert_eq!(got_rows, want);
                if smooth == 0 {
                    if let Some(b) = batch_size {
                        assert!(sink.0.iter().all(|(n, _)| n.len() <= b));
                    }
                }
            }
        }
    }

    #[test]
    fn a_hook_error_stops_between_batches() {
        let g = path_graph(30);
        let cfg = EmbeddingConfig {
            dim: 4,
            ..Default::default()
        };
        let nodes: Vec<u32> = (0..30).collect();
        let job = Job {
            graph: &g,
            config: &cfg,
            map: None,
            threads: 1,
            batch_size: Some(4),
        };
        let mut sink = Collect(Vec::new());
        let mut hooks = StopAfter(8, Vec::new());
        let err = job.run(&nodes, &mut hooks, Some(&mut sink)).unwrap_err();
        assert!(matches!(err, Error::Cancelled));
        assert_eq!(hooks.1, vec![4, 8]);
        assert_eq!(sink.0.len(), 2);
    }
}
