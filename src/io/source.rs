//! Where a reader's edges go. Every reader (text, Matrix Market, adjacency lists) pushes into an
//! [`EdgeSink`]: the out-of-core builder when converting, or an [`EdgeBuffer`] when `update`
//! applies a file's edges to a live graph, so both read a file the same way.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::graph::csr::Graph;
use crate::graph::external::{BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn};

/// Receives edges (and isolated nodes) from a reader.
pub trait EdgeSink {
    fn push_int(&mut self, src: i64, dst: i64, w: f32) -> Result<()>;
    fn push_str(&mut self, src: &str, dst: &str, w: f32) -> Result<()>;
    fn push_node_int(&mut self, id: i64) -> Result<()>;
    fn push_node_str(&mut self, id: &str) -> Result<()>;
    /// Whether a string id is known already (it settles whether a first line is data).
    fn has_str_id(&self, id: &[u8]) -> bool;
    /// Edges received so far.
    fn input_edges(&self) -> u64;
    /// The kind of ids it takes (a reader types ids by it).
    fn id_mode(&self) -> IdMode;
}

impl EdgeSink for ExternalBuilder {
    #[inline]
    fn push_int(&mut self, src: i64, dst: i64, w: f32) -> Result<()> {
        ExternalBuilder::push_int(self, src, dst, w)
    }
    #[inline]
    fn push_str(&mut self, src: &str, dst: &str, w: f32) -> Result<()> {
        ExternalBuilder::push_str(self, src, dst, w)
    }
    fn push_node_int(&mut self, id: i64) -> Result<()> {
        ExternalBuilder::push_node_int(self, id)
    }
    fn push_node_str(&mut self, id: &str) -> Result<()> {
        ExternalBuilder::push_node_str(self, id)
    }
    fn has_str_id(&self, id: &[u8]) -> bool {
        ExternalBuilder::has_str_id(self, id)
    }
    fn input_edges(&self) -> u64 {
        ExternalBuilder::input_edges(self)
    }
    fn id_mode(&self) -> IdMode {
        self.options().ids
    }
}

/// Ids collected by an [`EdgeBuffer`].
#[derive(Debug)]
pub enum BufferedIds {
    Int(Vec<i64>, Vec<i64>),
    Str(Vec<String>, Vec<String>),
}

/// Edges held in memory, in file order, with the ids of a graph they are for: `update` reads
/// its files into one and hands the arrays to the live writer. Isolated nodes are not kept
/// (an update adds and removes edges).
pub struct EdgeBuffer<'g> {
    pub ids: BufferedIds,
    pub weights: Vec<f32>,
    seen: HashSet<String>,
    graph: Option<&'g Graph>,
}

impl<'g> EdgeBuffer<'g> {
    /// `strings`: the ids are strings; `graph`: whose ids count as known.
    pub fn new(mode: IdMode, graph: Option<&'g Graph>) -> EdgeBuffer<'g> {
        EdgeBuffer {
            ids: if mode == IdMode::Str {
                BufferedIds::Str(Vec::new(), Vec::new())
            } else {
                BufferedIds::Int(Vec::new(), Vec::new())
            },
            weights: Vec::new(),
            seen: HashSet::new(),
            graph,
        }
    }
}

impl EdgeSink for EdgeBuffer<'_> {
    fn push_int(&mut self, src: i64, dst: i64, w: f32) -> Result<()> {
        match &mut self.ids {
            BufferedIds::Int(s, d) => {
                s.push(src);
                d.push(dst);
            }
            BufferedIds::Str(..) => return Err(Error::input("integer id for a string-id graph")),
        }
        self.weights.push(w);
        Ok(())
    }
    fn push_str(&mut self, src: &str, dst: &str, w: f32) -> Result<()> {
        match &mut self.ids {
            BufferedIds::Str(s, d) => {
                for x in [src, dst] {
                    if !self.seen.contains(x) {
                        self.seen.insert(x.to_string());
                    }
                }
                s.push(src.to_string());
                d.push(dst.to_string());
            }
            BufferedIds::Int(..) => return Err(Error::input("string id for an integer-id graph")),
        }
        self.weights.push(w);
        Ok(())
    }
    fn push_node_int(&mut self, _id: i64) -> Result<()> {
        Ok(())
    }
    fn push_node_str(&mut self, _id: &str) -> Result<()> {
        Ok(())
    }
    fn has_str_id(&self, id: &[u8]) -> bool {
        let Ok(s) = std::str::from_utf8(id) else {
            return false;
        };
        self.seen.contains(s)
            || self
                .graph
                .is_some_and(|g| matches!(g.lookup_str(s), Ok(Some(_))))
    }
    fn input_edges(&self) -> u64 {
        self.weights.len() as u64
    }
    fn id_mode(&self) -> IdMode {
        match self.ids {
            BufferedIds::Int(..) => IdMode::Int,
            BufferedIds::Str(..) => IdMode::Str,
        }
    }
}

impl std::fmt::Debug for EdgeBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeBuffer")
            .field("ids", &self.ids)
            .field("weights", &self.weights)
            .finish_non_exhaustive()
    }
}

/// The signature of a reader that decides the id mode, direction and weights itself (from
/// the file's declarations) before it adds an edge: it asks `make` for its sink then.
pub type MakeSink<'a, S> = dyn FnMut(IdMode, bool, bool) -> Result<S> + 'a;

/// Runs such a reader (`read`) into a new out-of-core builder writing `output`, then
/// finishes the graph file atomically: the `convert_*` of the self-describing formats.
pub fn build_file<T>(
    path: &std::path::Path,
    output: &std::path::Path,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
    read: impl FnOnce(&mut MakeSink<'_, ExternalBuilder>) -> Result<(ExternalBuilder, T)>,
) -> Result<(BuildStats, T)> {
    let mut make = |ids: IdMode, directed: bool, weighted: bool| {
        ExternalBuilder::new(
            output,
            BuildOptions {
                ids,
                directed,
                weighted,
                num_nodes: None,
                ..build.clone()
            },
        )
    };
    let (b, st) = read(&mut make)?;
    let total = std::fs::metadata(path).map_or(1, |m| m.len().max(1));
    let hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
    Ok((b.finish(Some(&hook))?, st))
}
