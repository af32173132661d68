//! Full checks of a live graph's change log, reading it whole, and saving a live graph.

use std::path::Path;

use crate::error::{Error, Result};
use crate::graph::build::{strength_of, Merge};
use crate::graph::csr::base_identity;
use crate::graph::csr::{Graph, NodeId};
use crate::graph::log_format::{read_log, LogId};

use crate::graph::overlay::*;
use crate::live::stage::*;

/// Full check of a live graph's log (O(log + changed rows), plus a pass over every row for
/// symmetry): every segment's checksums and operations; the operations replayed on the base
/// file give exactly the rows, ids and counts the log stores; every row is sorted by id, in
/// range, with valid weights and an exact strength.
pub(crate) fn validate_log(g: &Graph) -> Result<()> {
    let Some(o) = g.overlay() else {
        // A log that changes nothing (or none): its bytes must still read back.
        if let Some(bytes) = read_log_file(g)? {
            read_log(&bytes)?;
        }
        return Ok(());
    };
    let contents = crate::live::log::read_log_at(o.bytes(), o.slot)?;
    // The base file alone (the same bytes this snapshot reads beneath its log).
    let base = match g.path() {
        Some(p) => {
            let b = Graph::open_base(p)?;
            if base_identity(&b) != base_identity(g) {
                return Err(Error::io(
                    p,
                    std::io::Error::other(
                        "the graph file was replaced since this graph was opened; reopen it \
                         to validate",
                    ),
                ));
            }
            b
        }
        None => {
            let img = g.image();
            let mut words = vec![0u64; img.len().div_ceil(8)];
            // SAFETY: viewing the u64 buffer as bytes; img.len() <= 8 * words.len().
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), img.len()) }
                .copy_from_slice(img);
            Graph::from_image(words, img.len())?
        }
    };
    let merge = if contents.header.merge_max {
        Merge::Max
    } else {
        Merge::Sum
    };
    let c = counts_of(&base)?;
    let mut stage = Stage::new(&base, merge, c);
    for commit in &contents.commits {
        for op in &commit.ops {
            stage.apply(&base, op)?;
        }
    }
    let bad = |m: String| Error::format(format!("change log inconsistent: {m}"));
    let expect_n = stage.n as usize;
    if g.num_nodes() != expect_n || g.num_arcs() != stage.arcs {
        return Err(bad(format!(
            "replaying it gives {expect_n} nodes and {} arcs, it records {} and {}",
            stage.arcs,
            g.num_nodes(),
            g.num_arcs()
        )));
    }
    let stored = o.changed_nodes()?;
    if o.trailer.changed != stored.len() as u64 {
        return Err(bad("the changed-node count is wrong".into()));
    }
    let differ = || bad("the nodes with rows differ from the replayed ones".into());
    let mut listed = stored.iter();
    let changes = stage.sorted_changes(&base, None)?;
    stage.for_each_row(&base, &changes, |v, nbrs, wts| {
        if listed.next() != Some(&v) {
            return Err(differ());
        }
        let listed = o
            .record(v)?
            .ok_or_else(|| bad(format!("node {v} is in the index but its lookup misses it")))?;
        let strength = match listed {
            Record::Row(r) => r.strength,
            Record::Delta(d) => d.strength,
        };
        let (got, got_w) = (g.neighbors(v)?, g.weights(v)?.unwrap_or_default());
        let same = *got == *nbrs
            && (!g.weighted()
                || got_w.len() == wts.len()
                    && got_w
                        .iter()
                        .zip(wts)
                        .all(|(a, b)| a.to_bits() == b.to_bits()));
        if !same {
            return Err(bad(format!("the row of node {v} differs from its replay")));
        }
        if g.weighted() && strength.to_bits() != strength_of(&got_w).to_bits() {
            return Err(bad(format!("the strength of node {v} is wrong")));
        }
        let leaf = if g.weighted() {
            strength
        } else {
            got.len() as f64
        };
        if o.strength(v)?.map(f64::to_bits) != Some(leaf.to_bits()) {
            return Err(bad(format!("the tree's strength of node {v} is wrong")));
        }
        Ok(())
    })?;
    if listed.next().is_some() {
        return Err(differ());
    }
    for (k, id) in stage.new_ids.iter().enumerate() {
        let v = base.num_nodes() as u32 + k as u32;
        let got = match o.new_id(v, g.id_kind())? {
            NodeId::Int(i) => LogId::Int(i),
            NodeId::Str(s) => LogId::Str(s.to_owned()),
        };
        if &got != id {
            return Err(bad(format!("the id of created node {v} is wrong")));
        }
        let found = match id {
            LogId::Int(i) => o.lookup_int(*i)?,
            LogId::Str(s) => o.lookup_str(s)?,
        };
        if found != Some(v) {
            return Err(bad(format!("created node {v} cannot be found by its id")));
        }
    }
    if o.trailer.permuted() != stage.permuted {
        return Err(bad("the permuted flag is wrong".into()));
    }
    // The live rows as a whole: sorted by id rank, in range, symmetric when undirected.
    let rank = g.id_ranks()?;
    let n = g.num_nodes();
    let mut self_loops = 0u64;
    for v in 0..n as u32 {
        let row = g.neighbors_checked(v)?;
        for (k, &u) in row.iter().enumerate() {
            if k > 0 && rank[row[k - 1] as usize] >= rank[u as usize] {
                return Err(bad(format!("neighbours of node {v} are not sorted by id")));
            }
            if u == v {
                self_loops += 1;
            }
            if !g.directed() {
                let back = g.neighbors_checked(u)?;
                if back
                    .binary_search_by_key(&rank[v as usize], |&x| rank[x as usize])
                    .is_err()
                {
                    return Err(bad(format!("arc {v}->{u} has no reverse")));
                }
            }
        }
        if let Some(w) = g.weights(v)? {
            if let Some(x) = w.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
                return Err(bad(format!("node {v} has invalid weight {x}")));
            }
        }
    }
    if !g.directed() && 2 * g.num_edges() != g.num_arcs() + self_loops {
        return Err(bad("the edge count does not match the arcs".into()));
    }
    // The index file, when it serves this commit: what a reader loads equals the levels.
    if let Some(path) = g.path() {
        if o.index_file_agrees(path)? == Some(false) {
            return Err(bad(format!(
                "its index file {} differs from the index's levels (delete it)",
                crate::graph::index_file::index_path(path).display()
            )));
        }
    }
    Ok(())
}

/// The log bytes of a live graph's file, read whole (for `validate` and `info`).
pub(crate) fn read_log_file(g: &Graph) -> Result<Option<Vec<u8>>> {
    let Some(path) = g.path() else {
        return Ok(None);
    };
    let lp = log_path(path);
    match std::fs::read(&lp) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&lp, e)),
    }
}

/// Every commit of `g`'s log with its operations (for `info` and inspection).
pub fn read_commits(g: &Graph) -> Result<Vec<crate::live::log::Commit>> {
    match read_log_file(g)? {
        None => Ok(Vec::new()),
        Some(b) => Ok(read_log(&b)?.commits),
    }
}

/// Writes `graph` to `target` atomically: a graph without a change log as its image
/// ([`crate::graph::build::save`]), a live graph as its current state, rows merged with the log, in
/// its internal order (a permuted file when nodes were created by the log).
pub fn save(graph: &Graph, target: impl AsRef<Path>) -> Result<()> {
    if !graph.is_live() {
        return crate::graph::build::save(graph, target);
    }
    let order: Vec<u32> = (0..graph.num_nodes() as u32).collect();
    let pool = crate::parallel::pool(1)?;
    let mut stats = crate::graph::reorder::ReorderStats::default();
    crate::graph::reorder::write_permuted(graph, &order, target.as_ref(), &pool, None, &mut stats)
}

impl Graph {
    /// Full check of every invariant and checksum: O(n + m) for the graph file; for a live
    /// graph also the whole change log, its operations replayed against the rows it stores
    /// (see [`validate_log`]). Returns the first problem found.
    pub fn validate(&self) -> Result<()> {
        let _scan = self.scan();
        self.validate_base()?;
        validate_log(self)
    }
}
