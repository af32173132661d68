//! Staged changes of a live graph: the arcs a batch sets and removes, the nodes it creates, and
//! the records a commit writes for them (deltas or whole rows).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::graph::build::{strength_of, Merge};
use crate::graph::csr::{Graph, NodeId};
use crate::graph::format::IdKind;
use crate::graph::log_format::{
    delta_header_len, inline_delta, pad8, row_header_len, LogId, Op, DELTA_FLAG,
};

use crate::graph::overlay::*;

use super::edges::EdgeEntry;

/// A map keyed by node indices, hashed by [`crate::hashing::IndexHasher`]: a small call looks
/// the staged edges up once per operation.
type IndexMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<crate::hashing::IndexHasher>>;

pub use crate::io::ids::Ids;

/// What [`Stage::look_ahead`] found for an operation: its endpoints' committed nodes, and
/// the committed weights of its arcs (forward and reverse), each `None` where not looked up.
#[derive(Default, Clone, Copy)]
pub(crate) struct Known {
    pub(crate) a: Option<Option<u32>>,
    pub(crate) b: Option<Option<u32>>,
    pub(crate) fwd: Option<Option<f32>>,
    pub(crate) rev: Option<Option<f32>>,
}

/// Operations looked up per parallel task.
const LOOK_AHEAD_CHUNK: usize = 4096;

/// How many items ahead of the current one their memory is prefetched (a row by
/// `Stage::look_ahead`, a look-ahead result by `Stage::apply_sorted`'s fold): enough for the
/// memory's latency to pass, few enough that the lines are still cached.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// A staged arc (a slot of an [`EdgeEntry`]): its weight now (None: removed), and whether the
/// committed graph has it.
pub(crate) type Staged = (Option<f32>, bool);

/// A changed arc `(a, b)`, its weight now (None: removed) and whether the committed graph
/// has it (a node's degree changes by the arcs it has now and had not, less those it had and
/// has not).
pub(crate) type ArcChange = (u32, u32, Option<f32>, bool);

/// What undoing a failed call needs: edge `(x, y)`'s entry in `Stage::arcs_set` before the
/// call (None: it had none).
pub(crate) struct Undo((u32, u32), Option<EdgeEntry>);

/// Calls of at least this many operations are applied through the sorted run
/// ([`Stage::apply_sorted`]) when they are not much smaller than what is staged already.
const SORTED_CALL_MIN: usize = 1024;

/// Changes applied on top of a committed graph, not yet written: the arcs they set or removed,
/// the nodes they created, the counts. Shared by the writer and by `validate`'s replay.
///
/// Only the changed arcs are kept, not the rows they belong to: memory grows with the batch,
/// not with the degrees of the nodes it touches. The new rows are merged from the committed
/// ones while the segment is written ([`Stage::for_each_row`]).
pub(crate) struct Stage {
    pub(crate) kind: IdKind,
    pub(crate) directed: bool,
    pub(crate) weighted: bool,
    pub(crate) merge: Merge,
    /// Node count of the committed graph, and with this batch's created nodes.
    pub(crate) committed_n: u32,
    pub(crate) n: u32,
    /// The staged arcs, by edge (see [`EdgeEntry`]): an arc's weight now, or None if removed
    /// (an entry may also record a removal of an arc added by this batch), and whether the
    /// committed graph has it. The tail node of each arc gets a new record in the segment.
    /// Small calls update this map; a large one folds its operations into `run`, sorted by
    /// edge. The map's entry of an edge is newer than the run's.
    pub(crate) arcs_set: IndexMap<(u32, u32), EdgeEntry>,
    /// Entries sorted by key, one per edge.
    pub(crate) run: Vec<EdgeEntry>,
    /// The smallest call applied through the run (tests lower it).
    pub(crate) sorted_min: usize,
    pub(crate) created: HashMap<LogId, u32>,
    /// Ids of created nodes `committed_n..n` (empty for implicit ids).
    pub(crate) new_ids: Vec<LogId>,
    pub(crate) arcs: u64,
    pub(crate) self_loops: u64,
    pub(crate) adds: u64,
    pub(crate) removes: u64,
    pub(crate) permuted: bool,
    /// Largest id in the graph (internal order equals id order while ids arrive increasing).
    pub(crate) max_id: Option<LogId>,
    pub(crate) ops: Vec<u8>,
    pub(crate) num_ops: u64,
    pub(crate) undo: Vec<Undo>,
}

/// The counts a stage starts from.
#[derive(Clone)]
pub(crate) struct Counts {
    pub(crate) n: u32,
    pub(crate) arcs: u64,
    pub(crate) self_loops: u64,
    pub(crate) adds: u64,
    pub(crate) removes: u64,
    pub(crate) permuted: bool,
    pub(crate) max_id: Option<LogId>,
}

impl Stage {
    pub(crate) fn new(g: &Graph, merge: Merge, c: Counts) -> Stage {
        Stage {
            kind: g.id_kind(),
            directed: g.directed(),
            weighted: g.weighted(),
            merge,
            committed_n: c.n,
            n: c.n,
            arcs_set: IndexMap::default(),
            run: Vec::new(),
            sorted_min: SORTED_CALL_MIN,
            created: HashMap::new(),
            new_ids: Vec::new(),
            arcs: c.arcs,
            self_loops: c.self_loops,
            adds: c.adds,
            removes: c.removes,
            permuted: c.permuted,
            max_id: c.max_id,
            ops: Vec::new(),
            num_ops: 0,
            undo: Vec::new(),
        }
    }

    /// The counts now: what a failed call restores.
    fn counts(&self) -> Counts {
        Counts {
            n: self.n,
            arcs: self.arcs,
            self_loops: self.self_loops,
            adds: self.adds,
            removes: self.removes,
            permuted: self.permuted,
            max_id: self.max_id.clone(),
        }
    }

    /// Back to counts `c`, with only the first `created` of the nodes this batch created.
    fn restore(&mut self, c: &Counts, created: usize) {
        for id in self.new_ids.drain(created..) {
            self.created.remove(&id);
        }
        let c = c.clone();
        (self.n, self.arcs, self.self_loops) = (c.n, c.arcs, c.self_loops);
        (self.adds, self.removes) = (c.adds, c.removes);
        (self.permuted, self.max_id) = (c.permuted, c.max_id);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.num_ops == 0
    }

    pub(crate) fn lookup(&self, g: &Graph, id: &LogId) -> Result<Option<u32>> {
        match (self.kind, id) {
            (IdKind::Implicit, LogId::Int(i)) => {
                Ok((*i >= 0 && (*i as u64) < u64::from(self.n)).then_some(*i as u32))
            }
            (IdKind::Utf8, LogId::Int(_)) | (IdKind::Implicit | IdKind::Int64, LogId::Str(_)) => {
                Ok(None)
            }
            _ => {
                // The committed graph first: most ids are its, and the nodes this batch
                // created are not (a hash of every id would cost more than the search).
                let committed = match id {
                    LogId::Int(i) => g.lookup_int(*i)?,
                    LogId::Str(s) => g.lookup_str(s)?,
                };
                if committed.is_some() || self.created.is_empty() {
                    return Ok(committed);
                }
                Ok(self.created.get(id).copied())
            }
        }
    }

    pub(crate) fn check_id(&self, id: &LogId) -> Result<()> {
        match (self.kind, id) {
            (IdKind::Implicit, LogId::Int(i)) if *i < 0 || *i >= i64::from(u32::MAX) => {
                Err(Error::input(format!(
                    "node id {i} is outside 0..2**32-2: this graph has implicit ids 0..n-1"
                )))
            }
            (IdKind::Utf8, LogId::Int(i)) => Err(Error::input(format!(
                "node id {i} is an int but this graph has string ids"
            ))),
            (IdKind::Implicit | IdKind::Int64, LogId::Str(s)) => Err(Error::input(format!(
                "node id {s:?} is a string but this graph has integer ids"
            ))),
            _ => Ok(()),
        }
    }

    pub(crate) fn resolve_or_create(&mut self, g: &Graph, id: &LogId) -> Result<u32> {
        if let Some(v) = self.lookup(g, id)? {
            return Ok(v);
        }
        if self.kind == IdKind::Implicit {
            let LogId::Int(i) = id else { unreachable!() };
            // Ids are indices: every id up to this one becomes a node (isolated unless given
            // edges), as a rebuild with these ids would have them.
            self.n = *i as u32 + 1;
            return Ok(*i as u32);
        }
        self.create(id)
    }

    /// A new node for `id`, which neither the committed graph nor this batch has (int or
    /// string ids).
    fn create(&mut self, id: &LogId) -> Result<u32> {
        if self.n == u32::MAX {
            return Err(Error::input("the graph would exceed 2**32-1 nodes"));
        }
        let v = self.n;
        self.n += 1;
        if self.max_id.as_ref().is_some_and(|m| m > id) {
            self.permuted = true;
        }
        if self.max_id.as_ref().is_none_or(|m| m < id) {
            self.max_id = Some(id.clone());
        }
        self.created.insert(id.clone(), v);
        self.new_ids.push(id.clone());
        Ok(v)
    }

    /// The weight of arc `a -> b` in the committed graph `g`, if it has that arc. Rows are
    /// sorted by index, or by id in a permuted graph: a binary search in each delta of `a`'s
    /// row in the log, newest first, then in the row beneath them. Never merges the row.
    /// (A function of the committed graph alone, so that a caller may hold an entry of the
    /// stage's maps meanwhile.)
    pub(crate) fn committed_arc(g: &Graph, a: u32, b: u32) -> Result<Option<f32>> {
        let n = g.num_nodes();
        if a as usize >= n || b as usize >= n {
            return Ok(None);
        }
        // Both nodes are committed ones: their ids are the graph's.
        let cmp = |x: u32, y: u32| -> Result<Ordering> {
            let base = g.base_num_nodes() as u32;
            if g.base_in_id_order() && x < base && y < base {
                return Ok(x.cmp(&y));
            }
            Ok(committed_id(g, x)?.cmp(&committed_id(g, y)?))
        };
        let find = |nb: &[u32]| -> Result<Option<usize>> {
            if !g.permuted() || g.id_kind() == IdKind::Implicit {
                return Ok(nb.binary_search(&b).ok());
            }
            let (mut lo, mut hi) = (0, nb.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                match cmp(nb[mid], b)? {
                    Ordering::Less => lo = mid + 1,
                    Ordering::Greater => hi = mid,
                    Ordering::Equal => return Ok(Some(mid)),
                }
            }
            Ok(None)
        };
        let weighted = |w: f32| if g.weighted() { w } else { 1.0 };
        if let Some(o) = g.overlay() {
            let mut rec = o.record(a)?;
            loop {
                match rec {
                    Some(Record::Delta(d)) => {
                        if let Some(k) = find(d.nbrs())? {
                            let x = d.vals()[k];
                            return Ok((x > 0.0).then(|| weighted(x)));
                        }
                        rec = match d.older {
                            0 => None,
                            off => Some(o.record_at(a, off)?),
                        };
                    }
                    Some(Record::Row(r)) => {
                        return Ok(find(r.nbrs)?.map(|k| r.wts.get(k).copied().unwrap_or(1.0)));
                    }
                    None => break,
                }
            }
            if a >= o.base_n() {
                return Ok(None);
            }
        }
        let nb = g.neighbors_in::<false>(a)?;
        Ok(match find(nb)? {
            None => None,
            Some(k) => Some(g.base_weights(a)?.map_or(1.0, |w| w[k])),
        })
    }

    /// Node of `id` in the committed graph or this batch, if any; `known` is its committed
    /// node if already looked up (`Some(None)`: the committed graph has no such id).
    fn lookup_known(
        &self,
        g: &Graph,
        id: &LogId,
        known: Option<Option<u32>>,
    ) -> Result<Option<u32>> {
        match known {
            Some(Some(v)) => Ok(Some(v)),
            Some(None) => Ok(self.created.get(id).copied()),
            None => self.lookup(g, id),
        }
    }

    /// Node of `id`, created if it has none; `known` as in [`Stage::lookup_known`].
    fn resolve_known(&mut self, g: &Graph, id: &LogId, known: Option<Option<u32>>) -> Result<u32> {
        if known.is_none() {
            return self.resolve_or_create(g, id);
        }
        match self.lookup_known(g, id, known)? {
            Some(v) => Ok(v),
            None => self.create(id),
        }
    }

    /// The nodes of operation `op`'s endpoints, resolved as applying it does (an addition
    /// creates the nodes it lacks; `known` as in [`Stage::lookup_known`]), and the operation
    /// counted; None for a removal with an unknown endpoint.
    pub(crate) fn resolve_op(
        &mut self,
        g: &Graph,
        op: &Op,
        known: &Known,
    ) -> Result<Option<(u32, u32)>> {
        match op {
            Op::Add(a, b, _) => {
                let s = self.resolve_known(g, a, known.a)?;
                let d = self.resolve_known(g, b, known.b)?;
                self.adds += 1;
                Ok(Some((s, d)))
            }
            Op::Remove(a, b) => {
                let s = self.lookup_known(g, a, known.a)?;
                let d = self.lookup_known(g, b, known.b)?;
                self.removes += 1;
                Ok(s.zip(d))
            }
        }
    }

    /// Applies operation `op` to the map (through the run's entry of its edge, if the map has
    /// none): returns whether the graph changed (an addition, or the removal of an edge that
    /// existed).
    /// `in_run`: where the run holds the operation's edge, if known (see
    /// [`Stage::run_positions`]).
    fn apply_to_map(
        &mut self,
        g: &Graph,
        op: &Op,
        known: &Known,
        in_run: Option<Option<u32>>,
    ) -> Result<bool> {
        let Some((s, d)) = self.resolve_op(g, op, known)? else {
            return Ok(false);
        };
        let add = match op {
            Op::Add(_, _, w) => Some(w.unwrap_or(1.0)),
            Op::Remove(..) => None,
        };
        let key = self.edge_slot(s, d).0;
        let edge = ((key >> 32) as u32, key as u32);
        let start = match self.arcs_set.get(&edge) {
            Some(e) => *e,
            None => match in_run {
                Some(Some(i)) => self.run[i as usize],
                Some(None) => EdgeEntry::new(key),
                None => match self.run.binary_search_by_key(&key, |e| e.key) {
                    Ok(i) => self.run[i],
                    Err(_) => EdgeEntry::new(key),
                },
            },
        };
        let mut e = start;
        let changed = self.apply_to_edge(g, &mut e, (s, d), add, known)?;
        if e != start {
            let before = self.arcs_set.insert(edge, e);
            self.undo.push(Undo(edge, before));
        }
        Ok(changed)
    }
    /// What the operations `ops` find in the committed graph, looked up ahead of applying
    /// them (a pure function of the graph, computed on `pool`): their endpoints' committed
    /// nodes and, where both exist, the committed weights of the arcs between them. The ids
    /// are sorted and searched in id order (see [`Graph::lookup_ints_sorted`]). `None` where
    /// not looked up, or where a lookup failed: applying the operation looks it up again and
    /// reports the error in operation order.
    pub(crate) fn look_ahead(
        &self,
        g: &Graph,
        ops: &[Op],
        pool: Option<&rayon::ThreadPool>,
    ) -> Vec<Known> {
        let mut known = vec![Known::default(); ops.len()];
        fn ends(op: &Op) -> [&LogId; 2] {
            let (Op::Add(a, b, _) | Op::Remove(a, b)) = op;
            [a, b]
        }
        match self.kind {
            IdKind::Implicit => {
                let n = g.num_nodes() as i64;
                for (k, op) in known.iter_mut().zip(ops) {
                    // Nodes this batch creates are looked up when applied.
                    if let [LogId::Int(x), LogId::Int(y)] = ends(op) {
                        if (0..n).contains(x) && (0..n).contains(y) {
                            (k.a, k.b) = (Some(Some(*x as u32)), Some(Some(*y as u32)));
                        }
                    }
                }
            }
            IdKind::Int64 | IdKind::Utf8 => {
                // Endpoint 2i and 2i+1 are operation i's; sorted by id.
                let ids: Vec<&LogId> = ops.iter().flat_map(ends).collect();
                let mut order: Vec<(u64, u32)> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (sort_prefix(id), i as u32))
                    .collect();
                radix_sort_by_key(&mut order, |e| e.0);
                // Equal prefixes of strings: by the whole id (an int's key is the whole id).
                let exact = self.kind == IdKind::Int64;
                for run in order.chunk_by_mut(|x, y| x.0 == y.0 && !exact) {
                    if run.len() > 1 {
                        run.sort_unstable_by(|x, y| ids[x.1 as usize].cmp(ids[y.1 as usize]));
                    }
                }
                let found = crate::parallel::map_chunks(
                    pool,
                    &order.chunks(LOOK_AHEAD_CHUNK).collect::<Vec<_>>(),
                    1,
                    |chunk| match self.kind {
                        IdKind::Int64 => {
                            let q: Vec<i64> = chunk
                                .iter()
                                .map(|e| match ids[e.1 as usize] {
                                    LogId::Int(i) => *i,
                                    LogId::Str(_) => 0,
                                })
                                .collect();
                            g.lookup_ints_sorted(&q).ok()
                        }
                        _ => {
                            let q: Vec<&str> = chunk
                                .iter()
                                .map(|e| match ids[e.1 as usize] {
                                    LogId::Str(s) => s.as_str(),
                                    LogId::Int(_) => "",
                                })
                                .collect();
                            g.lookup_strs_sorted(&q).ok()
                        }
                    },
                );
                for (chunk, f) in order.chunks(LOOK_AHEAD_CHUNK).zip(found) {
                    let Some(f) = f else { continue };
                    for (e, v) in chunk.iter().zip(f) {
                        let k = &mut known[e.1 as usize / 2];
                        match e.1 % 2 {
                            0 => k.a = Some(v),
                            _ => k.b = Some(v),
                        }
                    }
                }
            }
        }
        // The arcs between committed endpoints, searched in the order of the rows they read
        // (each `row << 32 | 2 * operation + reverse`), each row asked of the memory a few
        // searches ahead: a call's arcs are scattered over the file.
        let directed = self.directed;
        let mut wanted: Vec<u64> = Vec::with_capacity(2 * known.len());
        // An operation's index takes 31 bits: any later one is looked up when it is applied.
        for (i, k) in known.iter().enumerate().take(1 << 31) {
            if let (Some(Some(s)), Some(Some(d))) = (k.a, k.b) {
                wanted.push(u64::from(s) << 32 | (2 * i) as u64);
                if !directed && s != d {
                    wanted.push(u64::from(d) << 32 | (2 * i + 1) as u64);
                }
            }
        }
        par_radix_sort_by_key(&mut wanted, |&x| x >> 32, pool);
        let lookup = |x: u64| {
            let k = &known[(x as u32 / 2) as usize];
            let (Some(Some(s)), Some(Some(d))) = (k.a, k.b) else {
                return None;
            };
            let (row, to) = if x & 1 == 0 { (s, d) } else { (d, s) };
            Stage::committed_arc(g, row, to).ok()
        };
        let chunks: Vec<&[u64]> = wanted.chunks(LOOK_AHEAD_CHUNK).collect();
        let found = crate::parallel::map_chunks(pool, &chunks, 1, |chunk| {
            let mut out = Vec::with_capacity(chunk.len());
            for (i, &x) in chunk.iter().enumerate() {
                // Two steps: a row's offsets, then (once they are cached) its lines.
                if let Some(&y) = chunk.get(i + 2 * PREFETCH_AHEAD) {
                    g.prefetch_base_offsets((y >> 32) as u32);
                }
                if let Some(&y) = chunk.get(i + PREFETCH_AHEAD) {
                    g.prefetch_base_row((y >> 32) as u32);
                }
                out.push(lookup(x));
            }
            out
        });
        for (x, f) in wanted.into_iter().zip(found.into_iter().flatten()) {
            let k = &mut known[(x as u32 / 2) as usize];
            if x & 1 == 0 {
                k.fwd = f;
            } else {
                k.rev = f;
            }
        }
        known
    }

    /// Applies one operation whose ids may not have been checked (a log's, replayed by
    /// `validate`: a corrupted one must be an error, not an overflow).
    pub(crate) fn apply(&mut self, g: &Graph, op: &Op) -> Result<bool> {
        let (Op::Add(a, b, _) | Op::Remove(a, b)) = op;
        self.check_id(a)?;
        self.check_id(b)?;
        self.apply_to_map(g, op, &Known::default(), None)
    }

    /// Applies one call's operations, all or none: on an error the stage is as before. The
    /// committed graph is searched for all of them first, in parallel on `pool` (see
    /// [`Stage::look_ahead`]). Then a large call is sorted by edge and folded into the run
    /// ([`Stage::apply_sorted`]); a small one updates the map, one operation after another.
    pub(crate) fn apply_call(
        &mut self,
        g: &Graph,
        ops: &[Op],
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<u64> {
        for op in ops {
            let (Op::Add(a, b, _) | Op::Remove(a, b)) = op;
            self.check_id(a)?;
            self.check_id(b)?;
        }
        self.undo.clear();
        let (saved, created) = (self.counts(), self.new_ids.len());
        let known = self.look_ahead(g, ops, pool);
        let staged = self.arcs_set.len() + self.run.len();
        let sorted = ops.len() >= self.sorted_min && ops.len() < 1 << 30 && ops.len() * 4 >= staged;
        let mut result = None;
        if sorted {
            self.flush_map(pool);
            match self.apply_sorted(g, ops, &known, pool) {
                Ok(changed) => result = Some(Ok(changed)),
                // Applied in order below, where the first operation that fails reports.
                Err(_) => self.restore(&saved, created),
            }
        }
        let result = result.unwrap_or_else(|| {
            // Most operations make a new entry: room for them at once.
            self.arcs_set.reserve(ops.len());
            self.undo.reserve(ops.len());
            let in_run = self.run_positions(&known);
            let mut changed = 0u64;
            for (i, (op, k)) in ops.iter().zip(&known).enumerate() {
                let r = in_run.get(i).copied().flatten();
                changed += u64::from(self.apply_to_map(g, op, k, r)?);
            }
            Ok(changed)
        });
        match result {
            Ok(changed) => {
                for op in ops {
                    crate::live::log::encode_op(&mut self.ops, op);
                }
                self.num_ops += ops.len() as u64;
                self.undo.clear();
                Ok(changed)
            }
            Err(e) => {
                while let Some(Undo(edge, before)) = self.undo.pop() {
                    match before {
                        Some(x) => self.arcs_set.insert(edge, x),
                        None => self.arcs_set.remove(&edge),
                    };
                }
                self.restore(&saved, created);
                Err(e)
            }
        }
    }

    /// The external id of `v` for sorting rows.
    /// Orders nodes `a` and `b` by id: by index while both are the base file's and it is in
    /// id order, else by their ids.
    #[inline]
    pub(crate) fn cmp_ids(&self, g: &Graph, a: u32, b: u32) -> Result<Ordering> {
        if g.base_in_id_order() && a < g.base_num_nodes() as u32 && b < g.base_num_nodes() as u32 {
            return Ok(a.cmp(&b));
        }
        Ok(self.id_of(g, a)?.cmp(&self.id_of(g, b)?))
    }

    pub(crate) fn id_of<'a>(&'a self, g: &'a Graph, v: u32) -> Result<LogIdRef<'a>> {
        if v >= self.committed_n {
            return Ok(match &self.new_ids[(v - self.committed_n) as usize] {
                LogId::Int(i) => LogIdRef::Int(*i),
                LogId::Str(s) => LogIdRef::Str(s),
            });
        }
        committed_id(g, v)
    }

    /// The changed arcs in the order of the new rows (the input of [`Stage::for_each_row`]):
    /// by node, then by the neighbours' ids (by index while internal order is id order).
    /// The rows of a permuted graph are sorted by id on `pool` if given (one task per row).
    pub(crate) fn sorted_changes(
        &self,
        g: &Graph,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<Vec<ArcChange>> {
        use rayon::prelude::*;
        // The run's entries less those the map has newer.
        let mut changes: Vec<ArcChange> =
            self.arcs_set.values().flat_map(EdgeEntry::arcs).collect();
        let newer = |e: &EdgeEntry| {
            !self.arcs_set.is_empty()
                && self
                    .arcs_set
                    .contains_key(&((e.key >> 32) as u32, e.key as u32))
        };
        changes.extend(
            self.run
                .iter()
                .filter(|e| !newer(e))
                .flat_map(EdgeEntry::arcs),
        );
        sort_arcs(&mut changes, pool);
        if !self.rows_by_index() {
            // Neighbours of the base file, in id order there, are sorted by id already.
            let (base, in_order) = (g.base_num_nodes() as u32, g.base_in_id_order());
            let by_id = |group: &mut [ArcChange]| -> Result<()> {
                if in_order && group.iter().all(|c| c.1 < base) {
                    return Ok(());
                }
                let mut keyed = group
                    .iter()
                    .map(|c| Ok((self.id_of(g, c.1)?, *c)))
                    .collect::<Result<Vec<_>>>()?;
                keyed.sort_unstable_by(|x, y| x.0.cmp(&y.0));
                for (slot, (_, c)) in group.iter_mut().zip(keyed) {
                    *slot = c;
                }
                Ok(())
            };
            match pool {
                Some(p) => p.install(|| {
                    changes
                        .par_chunk_by_mut(|x, y| x.0 == y.0)
                        .try_for_each(by_id)
                })?,
                None => changes
                    .chunk_by_mut(|x, y| x.0 == y.0)
                    .try_for_each(by_id)?,
            }
        }
        Ok(changes)
    }

    /// Whether rows are sorted by index (internal order is id order) rather than by id.
    pub(crate) fn rows_by_index(&self) -> bool {
        !self.permuted || self.kind == IdKind::Implicit
    }

    /// Calls `f(v, neighbours, weights)` with the new row of every node this batch changed,
    /// ascending by node; each row sorted like `changes` (from [`Stage::sorted_changes`]),
    /// weights merged (`weights` is empty for an unweighted graph). The rows are merged one at
    /// a time from the committed rows and the changed arcs.
    pub(crate) fn for_each_row(
        &self,
        g: &Graph,
        changes: &[ArcChange],
        mut f: impl FnMut(u32, &[u32], &[f32]) -> Result<()>,
    ) -> Result<()> {
        let (mut nbrs, mut wts) = (Vec::new(), Vec::new());
        for group in changes.chunk_by(|x, y| x.0 == y.0) {
            self.merge_group(g, group, &mut nbrs, &mut wts)?;
            f(group[0].0, &nbrs, &wts)?;
        }
        Ok(())
    }

    /// The new row of node `group[0].0`: its committed row merged with `group`, its changed
    /// arcs (sorted like rows).
    pub(crate) fn merge_group(
        &self,
        g: &Graph,
        group: &[ArcChange],
        nbrs: &mut Vec<u32>,
        wts: &mut Vec<f32>,
    ) -> Result<()> {
        let by_index = self.rows_by_index();
        let v = group[0].0;
        // The committed row is sorted in the output order: by index, or by id, which is
        // the same order for committed nodes while the graph is not permuted.
        let (old, old_w) = if (v as usize) < g.num_nodes() {
            (g.neighbors_checked(v)?, g.weights(v)?)
        } else {
            (Cow::Borrowed(&[][..]), None)
        };
        nbrs.clear();
        wts.clear();
        let mut emit = |u: u32, w: f32| {
            nbrs.push(u);
            if self.weighted {
                wts.push(w);
            }
        };
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < group.len() {
            let order = if i == old.len() {
                Ordering::Greater
            } else if j == group.len() {
                Ordering::Less
            } else if by_index {
                old[i].cmp(&group[j].1)
            } else {
                self.cmp_ids(g, old[i], group[j].1)?
            };
            match order {
                Ordering::Less => {
                    emit(old[i], old_w.as_ref().map_or(1.0, |w| w[i]));
                    i += 1;
                }
                Ordering::Equal | Ordering::Greater => {
                    if let Some(w) = group[j].2 {
                        emit(group[j].1, w);
                    }
                    i += usize::from(order.is_eq());
                    j += 1;
                }
            }
        }
        Ok(())
    }

    /// The record that the segment gets for node `group[0].0`, whose changed arcs are
    /// `group` (a run of [`Stage::sorted_changes`]), passed to `f` with whether the node had
    /// a record: a delta on the node's committed row, or its whole new row (see
    /// [`delta_pays`]). A function of the committed
    /// graph and the stage: the records of different nodes may be built on different threads.
    pub(crate) fn record<R>(
        &self,
        g: &Graph,
        group: &[ArcChange],
        sc: &mut RecordScratch,
        f: impl FnOnce(u32, NewRecord<'_>, bool) -> Result<R>,
    ) -> Result<R> {
        let by_index = self.rows_by_index();
        let cmp = |a: u32, b: u32| -> Result<Ordering> {
            if by_index {
                Ok(a.cmp(&b))
            } else {
                self.cmp_ids(g, a, b)
            }
        };
        let ov = g.overlay();
        let RecordScratch {
            nbrs,
            wts,
            entries,
            merged,
        } = sc;
        let v = group[0].0;
        let committed = (v as usize) < g.num_nodes();
        entries.clear();
        entries.extend(group.iter().map(|c| (c.1, c.2.unwrap_or(0.0))));
        // The committed record and the deltas beneath it: merge the newest deltas into
        // this one while they are not larger (the binary-counter rule: a chain holds
        // O(log) deltas, and each entry is rewritten O(log) times).
        let (mut below, value) = match ov {
            Some(o) if committed => o.leaf(v)?,
            _ => (0, 0.0),
        };
        let had = below != 0;
        let o = ov.filter(|_| had);
        let mut rec = match o {
            Some(o) => Some(o.record_of_entry(v, below, value)?),
            None => None,
        };
        // The committed degree: the newest record's, else the base file's row's (a created
        // node without a record has none). As `g.degree(v)`, without looking `v` up again.
        let old_degree = match &rec {
            Some(r) => r.degree(),
            None if committed && (v as usize) < g.base_num_nodes() => g.base_degree(v)?,
            None => 0,
        };
        while let Some(Record::Delta(d)) = &rec {
            if d.nbrs().len() > entries.len() {
                break;
            }
            compose((d.nbrs(), d.vals()), entries, &cmp, merged)?;
            std::mem::swap(entries, merged);
            below = d.older;
            rec = match (o, below) {
                (Some(o), off) if off != 0 => Some(o.record_at(v, off)?),
                _ => None,
            };
        }
        let (mut chain, mut total) = (1u32, entries.len() as u64);
        let mut r = rec;
        while let (Some(Record::Delta(d)), Some(o)) = (&r, o) {
            chain += 1;
            total += d.nbrs().len() as u64;
            r = match d.older {
                0 => None,
                off => Some(o.record_at(v, off)?),
            };
        }
        let change: i64 = group
            .iter()
            .map(|c| i64::from(c.2.is_some()) - i64::from(c.3))
            .sum();
        let degree = u64::try_from(old_degree as i64 + change)
            .map_err(|_| Error::format(format!("node {v} would get a negative degree")))?;
        // One arc on the row beneath (no older record): the index entry holds it.
        if !self.weighted && below == 0 && entries.len() == 1 {
            let (u, x) = entries[0];
            return f(
                v,
                NewRecord::Inline {
                    word: inline_delta(u, x > 0.0),
                    degree: degree as u32,
                },
                had,
            );
        }
        let delta = committed && delta_pays(total, chain, degree);
        // A weighted row's strength is the sum of its weights in row order, as a rebuild
        // computes it: the merged row is read once for it.
        let strength = if self.weighted || !delta {
            self.merge_group(g, group, nbrs, wts)?;
            if nbrs.len() as u64 != degree {
                return Err(Error::format(format!(
                    "the committed row of node {v} is inconsistent with its degree"
                )));
            }
            if self.weighted {
                strength_of(wts)
            } else {
                0.0
            }
        } else {
            0.0
        };
        if delta {
            f(
                v,
                NewRecord::Delta {
                    entries,
                    older: below,
                    degree: degree as u32,
                    chain,
                    strength,
                },
                had,
            )
        } else {
            f(
                v,
                NewRecord::Row {
                    nbrs,
                    wts,
                    strength,
                },
                had,
            )
        }
    }
}

/// The buffers [`Stage::record`] builds a record in (one set per thread, reused).
#[derive(Default)]
pub(crate) struct RecordScratch {
    nbrs: Vec<u32>,
    wts: Vec<f32>,
    entries: Vec<(u32, f32)>,
    merged: Vec<(u32, f32)>,
}

/// Sorts changed arcs by `(a, b)` (distinct pairs).
fn sort_arcs(v: &mut Vec<ArcChange>, pool: Option<&rayon::ThreadPool>) {
    let shift = 32 - v.iter().map(|c| c.1).max().unwrap_or(0).leading_zeros();
    par_radix_sort_by_key(v, |c| (u64::from(c.0) << shift) | u64::from(c.1), pool);
}

/// `radix_sort_by_key` on `pool`'s threads for large inputs: one pass distributes the items
/// into 256 buckets by the top 8 of the key bits that vary, then each bucket (a few hundred KB
/// for millions of items: in a core's cache, where the full-size passes go to memory) is
/// radix-sorted on its own. Stable, as `radix_sort_by_key`.
pub(crate) fn par_radix_sort_by_key<T: Copy + Send + Sync>(
    v: &mut Vec<T>,
    key: impl Fn(&T) -> u64 + Sync,
    pool: Option<&rayon::ThreadPool>,
) {
    use rayon::prelude::*;
    const PARALLEL_MIN: usize = 1 << 18;
    let Some(pool) = pool.filter(|_| v.len() >= PARALLEL_MIN) else {
        return radix_sort_by_key(v, key);
    };
    let (lo, hi) = v.iter().fold((u64::MAX, 0), |(lo, hi), x| {
        let k = key(x);
        (lo.min(k), hi.max(k))
    });
    let bits = 64 - (lo ^ hi).leading_zeros();
    if bits <= 8 {
        return radix_sort_by_key(v, key);
    }
    let bucket = |x: &T| ((key(x) >> (bits - 8)) & 0xff) as usize;
    let mut count = [0usize; 256];
    for x in v.iter() {
        count[bucket(x)] += 1;
    }
    let mut pos = [0usize; 256];
    let mut sum = 0;
    for (at, &n) in pos.iter_mut().zip(&count) {
        *at = sum;
        sum += n;
    }
    let mut buf = v.clone();
    for x in v.iter() {
        let b = bucket(x);
        buf[pos[b]] = *x;
        pos[b] += 1;
    }
    let mut parts = Vec::with_capacity(256);
    let mut rest = &mut buf[..];
    for &n in &count {
        let (part, tail) = rest.split_at_mut(n);
        parts.push(part);
        rest = tail;
    }
    pool.install(|| {
        parts.into_par_iter().for_each(|part| {
            let mut sorted = part.to_vec();
            radix_sort_by_key(&mut sorted, &key);
            part.copy_from_slice(&sorted);
        })
    });
    std::mem::swap(v, &mut buf);
}

/// A key that orders ids as they compare, up to ties: an int's bits with the sign flipped, a
/// string's first 8 bytes (big-endian, zero-padded; ties are sorted by the whole string).
fn sort_prefix(id: &LogId) -> u64 {
    match id {
        LogId::Int(i) => (*i as u64) ^ (1 << 63),
        LogId::Str(s) => {
            let mut b = [0u8; 8];
            let n = s.len().min(8);
            b[..n].copy_from_slice(&s.as_bytes()[..n]);
            u64::from_be_bytes(b)
        }
    }
}

/// Sorts `v` by `key`, stably: an LSD radix sort of 11-bit digits on the key bits that vary
/// (a comparison sort of the random keys of a large batch mispredicts a branch per
/// comparison).
fn radix_sort_by_key<T: Copy>(v: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    if v.len() <= 256 {
        v.sort_by_key(&key);
        return;
    }
    const DIGIT: u32 = 11;
    let (lo, hi) = v.iter().fold((u64::MAX, 0), |(lo, hi), x| {
        let k = key(x);
        (lo.min(k), hi.max(k))
    });
    // Digits above the highest bit that differs are the same for every key: no pass.
    let bits = 64 - (lo ^ hi).leading_zeros();
    let passes = bits.div_ceil(DIGIT) as usize;
    let mask = (1u64 << DIGIT) - 1;
    let mut counts = vec![[0u32; 1 << DIGIT]; passes];
    for x in v.iter() {
        let k = key(x);
        for (p, count) in counts.iter_mut().enumerate() {
            count[((k >> (DIGIT as usize * p)) & mask) as usize] += 1;
        }
    }
    let mut buf = v.clone();
    for (p, count) in counts.iter().enumerate() {
        let mut pos = [0u32; 1 << DIGIT];
        let mut sum = 0u32;
        for (at, &n) in pos.iter_mut().zip(count.iter()) {
            *at = sum;
            sum += n;
        }
        for x in v.iter() {
            let d = ((key(x) >> (DIGIT as usize * p)) & mask) as usize;
            buf[pos[d] as usize] = *x;
            pos[d] += 1;
        }
        std::mem::swap(v, &mut buf);
    }
}

/// The id of committed node `v` of `g`.
fn committed_id(g: &Graph, v: u32) -> Result<LogIdRef<'_>> {
    Ok(match g.node_id(v)? {
        NodeId::Int(i) => LogIdRef::Int(i),
        NodeId::Str(s) => LogIdRef::Str(s),
    })
}

/// Readies the committed snapshot's lookups for a call of `ops` operations, each of which
/// looks up the index twice or more: with at least n/64 of them, the index in memory (see
/// [`Overlay::build_changed`], O(n/64 + index entries)); else, with at least n/256 per
/// level, the level filter (`Overlay::build_level_filter`, O(n + the levels' bitmaps)),
/// which then saves each lookup the search of every level newer than the node's. The
/// writer carries the filter to the snapshots of its next commits at the cost of their new
/// levels.
pub(crate) fn index_for_batch(g: &Graph, ops: usize) {
    if let Some(o) = g.overlay() {
        let n = g.num_nodes() as u64;
        if (ops as u64).saturating_mul(64) >= n {
            o.build_changed();
        } else if (ops as u64).saturating_mul(256 * o.levels.len() as u64) >= n {
            o.build_level_filter();
        }
    }
}

/// Longest chain of deltas a row may have: the reader composes them all.
pub const MAX_DELTA_CHAIN: u32 = 24;

/// Rows with fewer arcs always get whole-row records: a delta saves them few bytes and costs
/// every read a merge (docs/LIVE.md, "Cost").
pub const MIN_DELTA_DEGREE: u64 = 32;

/// Whether a node's new record is a delta (else its whole row): for a row of at least
/// `MIN_DELTA_DEGREE` arcs, while the chain is short and its deltas hold at most half as many
/// entries as the row has arcs. A delta entry takes 8 bytes (neighbour and value) where a
/// row's arc takes 4 (8 weighted): past that point the whole row is smaller, and merging it
/// costs readers more than the row itself.
pub(crate) fn delta_pays(total_entries: u64, chain: u32, degree: u64) -> bool {
    degree >= MIN_DELTA_DEGREE && chain <= MAX_DELTA_CHAIN && 2 * total_entries <= degree
}

/// Pads `out` with zeros to a multiple of 8 bytes from `start` (a record's first byte).
fn pad_from(out: &mut Vec<u8>, start: usize) {
    out.resize(start + pad8((out.len() - start) as u64) as usize, 0);
}

/// A record for the segment (see [`Stage::record`]).
pub(crate) enum NewRecord<'a> {
    Row {
        nbrs: &'a [u32],
        wts: &'a [f32],
        strength: f64,
    },
    Delta {
        entries: &'a [(u32, f32)],
        older: u64,
        degree: u32,
        chain: u32,
        strength: f64,
    },
    /// A one-arc delta on the row beneath, held by the index entry (unweighted graphs; see
    /// `INLINE_DELTA`): no bytes among the records.
    Inline { word: u64, degree: u32 },
}

impl NewRecord<'_> {
    /// The bytes it takes in a segment (it starts 8-aligned).
    pub(crate) fn len(&self, weighted: bool) -> u64 {
        match self {
            NewRecord::Row { nbrs, .. } => record_len(nbrs.len(), weighted),
            NewRecord::Delta { entries, .. } => {
                delta_header_len(weighted) + 2 * pad8(4 * entries.len() as u64)
            }
            NewRecord::Inline { .. } => 0,
        }
    }

    /// The leaf's value: the row's strength, or its degree on an unweighted graph.
    pub(crate) fn leaf(&self, weighted: bool) -> f64 {
        match self {
            NewRecord::Row { nbrs, strength, .. } => {
                if weighted {
                    *strength
                } else {
                    nbrs.len() as f64
                }
            }
            NewRecord::Delta {
                degree, strength, ..
            } => {
                if weighted {
                    *strength
                } else {
                    f64::from(*degree)
                }
            }
            NewRecord::Inline { degree, .. } => f64::from(*degree),
        }
    }

    /// Appends the record's bytes to `out` (none for an inline delta).
    pub(crate) fn encode_into(&self, v: u32, weighted: bool, out: &mut Vec<u8>) {
        if let NewRecord::Inline { .. } = self {
            return;
        }
        let start = out.len();
        out.extend_from_slice(&v.to_le_bytes());
        match self {
            NewRecord::Inline { .. } => {}
            NewRecord::Row {
                nbrs,
                wts,
                strength,
            } => {
                out.extend_from_slice(&(nbrs.len() as u32).to_le_bytes());
                if weighted {
                    out.extend_from_slice(&strength.to_bits().to_le_bytes());
                }
                for u in *nbrs {
                    out.extend_from_slice(&u.to_le_bytes());
                }
                pad_from(out, start);
                if weighted {
                    for w in *wts {
                        out.extend_from_slice(&w.to_le_bytes());
                    }
                    pad_from(out, start);
                }
            }
            NewRecord::Delta {
                entries,
                older,
                degree,
                chain,
                strength,
            } => {
                out.extend_from_slice(&(entries.len() as u32 | DELTA_FLAG).to_le_bytes());
                out.extend_from_slice(&older.to_le_bytes());
                out.extend_from_slice(&degree.to_le_bytes());
                out.extend_from_slice(&chain.to_le_bytes());
                if weighted {
                    out.extend_from_slice(&strength.to_bits().to_le_bytes());
                }
                for (u, _) in *entries {
                    out.extend_from_slice(&u.to_le_bytes());
                }
                pad_from(out, start);
                for (_, x) in *entries {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                pad_from(out, start);
            }
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LogIdRef<'a> {
    Int(i64),
    Str(&'a str),
}

/// The counts of `g`'s current state (its newest commit, or its base file).
pub(crate) fn counts_of(g: &Graph) -> Result<Counts> {
    let (adds, removes) = g
        .overlay()
        .map_or((0, 0), |o| (o.trailer.adds, o.trailer.removes));
    let info = g.log_state().map(|s| s.info).unwrap_or_default();
    let self_loops = if g.directed() {
        0
    } else {
        2 * g.num_edges() - g.num_arcs()
    };
    Ok(Counts {
        n: g.num_nodes() as u32,
        arcs: g.num_arcs(),
        self_loops,
        adds: adds.max(info.adds),
        removes: removes.max(info.removes),
        permuted: g.permuted(),
        max_id: max_id(g)?,
    })
}

/// The largest id of `g` (None when empty).
pub(crate) fn max_id(g: &Graph) -> Result<Option<LogId>> {
    let n = g.num_nodes();
    if n == 0 {
        return Ok(None);
    }
    let mut best: Option<LogId> = None;
    let mut consider = |v: u32| -> Result<()> {
        let id = match g.node_id(v)? {
            NodeId::Int(i) => LogId::Int(i),
            NodeId::Str(s) => LogId::Str(s.to_owned()),
        };
        if best.as_ref().is_none_or(|b| *b < id) {
            best = Some(id);
        }
        Ok(())
    };
    match g.id_kind() {
        IdKind::Implicit => consider(n as u32 - 1)?,
        _ => {
            let base_n = g.base_num_nodes();
            if base_n > 0 {
                consider(g.id_index()[base_n - 1])?;
            }
            if let Some(o) = g.overlay() {
                for r in &o.runs {
                    let order: &[u32] = o.slice(r.order, u64::from(r.count))?;
                    if let Some(&k) = order.last() {
                        if k >= r.count {
                            return Err(Error::format("change log corrupted: bad id-run order"));
                        }
                        consider(r.first + k)?;
                    }
                }
            }
        }
    }
    Ok(best)
}

/// The bytes a record of `degree` arcs takes in a segment (it starts 8-aligned).
pub(crate) fn record_len(degree: usize, weighted: bool) -> u64 {
    let arcs = pad8(4 * degree as u64);
    row_header_len(weighted) + arcs * (1 + u64::from(weighted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable};

    /// Ids looked up in id order (dense calls gallop, sparse ones search each) find what
    /// one-by-one lookups find: present ids, absent ones between and beyond, repeats.
    #[test]
    fn sorted_lookups_match_one_by_one_lookups() {
        let n = 5000u32;
        let mut x = 11u64;
        let mut next = || {
            x = crate::hashing::splitmix64(x);
            x
        };
        let src: Vec<u32> = (0..n).collect();
        let dst: Vec<u32> = (0..n).map(|v| (v + 1) % n).collect();
        let shuffled: Vec<u32> = {
            let mut p: Vec<u32> = (0..n).collect();
            for i in (1..p.len()).rev() {
                p.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            p
        };
        // Int ids in id order (searched directly); string ids in any order (searched through
        // the file's order of ids).
        let tables = [
            IdTable::Int((0..n).map(|v| 3 * i64::from(v) - 700).collect()),
            IdTable::Str(shuffled.iter().map(|&v| format!("id{}", 3 * v)).collect()),
        ];
        for table in tables {
            let parts =
                csr_from_edges(n as usize, &src, &dst, None, false, Merge::Sum, table).unwrap();
            let g = build_in_memory(&parts).unwrap();
            // Dense (several ids per node, gaps of a few nodes, of tens), sparse (a few
            // spread ids), single; half of them ids the graph has (node 0's among them).
            for count in [20_000usize, 400, 90, 30, 1] {
                let mut keys: Vec<u64> = (0..count)
                    .map(|i| match (i, next() % 2) {
                        (0, _) => 3,
                        (_, 0) => 3 * (next() % u64::from(n)) + 3,
                        _ => next() % (3 * u64::from(n) + 9),
                    })
                    .collect();
                keys.sort_unstable();
                match g.id_kind() {
                    IdKind::Int64 => {
                        let ids: Vec<i64> = keys.iter().map(|&k| k as i64 - 703).collect();
                        let want: Vec<_> = ids.iter().map(|&i| g.lookup_int(i).unwrap()).collect();
                        assert_eq!(g.lookup_ints_sorted(&ids).unwrap(), want, "{count} ints");
                        assert!(want.iter().any(Option::is_some));
                    }
                    _ => {
                        let owned: Vec<String> = keys.iter().map(|k| format!("id{k}")).collect();
                        let mut ids: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
                        ids.sort_unstable();
                        let want: Vec<_> = ids.iter().map(|i| g.lookup_str(i).unwrap()).collect();
                        assert_eq!(g.lookup_strs_sorted(&ids).unwrap(), want, "{count} strs");
                    }
                }
            }
        }
    }

    #[test]
    fn radix_sort_of_arcs_matches_a_comparison_sort() {
        let mut x = 7u64;
        let mut next = || {
            x = crate::hashing::splitmix64(x);
            x
        };
        let pool = crate::parallel::pool(2).unwrap();
        for (len, span) in [
            (0usize, 1u64),
            (1000, 40),
            (5000, 1 << 20),
            (20_000, 1 << 32),
            // The parallel sort's sizes: keys spread over every bucket, or few.
            (300_000, 1 << 32),
            (300_000, 700),
        ] {
            let mut seen = std::collections::HashSet::new();
            let mut v: Vec<ArcChange> = Vec::new();
            while v.len() < len {
                let (a, b) = ((next() % span) as u32, (next() % span) as u32);
                if seen.insert((a, b)) {
                    v.push((a, b, (next() % 3 != 0).then_some(v.len() as f32), a < b));
                }
            }
            let mut want = v.clone();
            want.sort_unstable_by_key(|c| (c.0, c.1));
            let mut par = v.clone();
            sort_arcs(&mut v, None);
            assert_eq!(v, want, "{len} pairs below {span}");
            sort_arcs(&mut par, Some(&pool));
            assert_eq!(par, want, "{len} pairs below {span}, 2 threads");
        }
    }
}
