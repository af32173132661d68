//! A stage's changed arcs grouped by edge ([`EdgeEntry`]), and a large call applied through a
//! sorted run of them ([`Stage::apply_sorted`]): its operations sorted by edge, then folded
//! edge by edge in the order of the call. A hash-map update per operation goes to memory once
//! the map outgrows the caches, as a large call's does; the sort and the fold stream.

use crate::error::{Error, Result};
use crate::graph::build::Merge;
use crate::graph::csr::Graph;
use crate::graph::log_format::Op;
use crate::graph::pages::prefetch_line;

use super::stage::{par_radix_sort_by_key, ArcChange, Known, Stage, Staged, PREFETCH_AHEAD};

/// An operation of a call sorted by edge: the edge's key, the operation's index (bits 0-29),
/// whether it is a removal (bit 30) and the slot of its forward arc (bit 31); an addition's
/// weight.
#[derive(Clone, Copy)]
struct Event {
    key: u64,
    tag: u32,
    w: f32,
}

const OP_MASK: u32 = (1 << 30) - 1;
const REMOVAL: u32 = 1 << 30;

const SET: u8 = 1;
const HAS: u8 = 2;
const HAD: u8 = 4;

/// The staged arcs of edge `(x, y)` (`key = x << 32 | y`): arc `x -> y` in slot 0 and, in an
/// undirected graph with `x < y`, arc `y -> x` in slot 1. A slot holds an arc's weight now
/// (None: removed) and whether the committed graph has it, or nothing if the batch has not
/// set that arc.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) struct EdgeEntry {
    pub(crate) key: u64,
    w: [f32; 2],
    /// `SET | HAS | HAD` bits, slot 1's shifted by 3.
    flags: u8,
}

impl EdgeEntry {
    pub(crate) fn new(key: u64) -> EdgeEntry {
        EdgeEntry {
            key,
            w: [0.0; 2],
            flags: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.flags == 0
    }

    pub(crate) fn get(&self, slot: usize) -> Option<Staged> {
        let f = self.flags >> (3 * slot);
        (f & SET != 0).then(|| ((f & HAS != 0).then_some(self.w[slot]), f & HAD != 0))
    }

    fn set(&mut self, slot: usize, (w, had): Staged) {
        let f = SET | if w.is_some() { HAS } else { 0 } | if had { HAD } else { 0 };
        self.flags = (self.flags & !(7 << (3 * slot))) | f << (3 * slot);
        self.w[slot] = w.unwrap_or(0.0);
    }

    /// The arcs this entry has set, as `(a, b, weight now, committed)`.
    pub(crate) fn arcs(&self) -> impl Iterator<Item = ArcChange> + '_ {
        let (x, y) = ((self.key >> 32) as u32, self.key as u32);
        (0..2).filter_map(move |slot| {
            let (a, b) = if slot == 0 { (x, y) } else { (y, x) };
            self.get(slot).map(|(w, had)| (a, b, w, had))
        })
    }
}

/// Merges `newer` into `older`, both sorted by key with distinct keys: an entry of `newer`
/// replaces `older`'s of the same key.
pub(crate) fn merge_runs(older: &[EdgeEntry], newer: &[EdgeEntry]) -> Vec<EdgeEntry> {
    let mut out = Vec::with_capacity(older.len() + newer.len());
    let mut i = 0;
    for e in newer {
        while i < older.len() && older[i].key < e.key {
            out.push(older[i]);
            i += 1;
        }
        if i < older.len() && older[i].key == e.key {
            i += 1;
        }
        out.push(*e);
    }
    out.extend_from_slice(&older[i..]);
    out
}

impl Stage {
    /// Edge key of arc `a -> b`, and the slot of its entry that holds the arc.
    #[inline]
    pub(crate) fn edge_slot(&self, a: u32, b: u32) -> (u64, usize) {
        if self.directed || a <= b {
            (u64::from(a) << 32 | u64::from(b), 0)
        } else {
            (u64::from(b) << 32 | u64::from(a), 1)
        }
    }

    /// Sets arc `a -> b` (in `slot` of `e`) to `f` of its current weight, if `f` gives one
    /// (it may refuse), and returns that current weight: the entry's if the batch set the arc,
    /// else the committed graph's (`known`, if looked up already).
    fn update_arc(
        g: &Graph,
        e: &mut EdgeEntry,
        slot: usize,
        (a, b): (u32, u32),
        known: Option<Option<f32>>,
        f: impl FnOnce(Option<f32>) -> Result<Option<Option<f32>>>,
    ) -> Result<Option<f32>> {
        let prev = e.get(slot);
        let old = match (prev, known) {
            (Some(p), _) => p.0,
            (None, Some(w)) => w,
            (None, None) => Stage::committed_arc(g, a, b)?,
        };
        if let Some(w) = f(old)? {
            e.set(slot, (w, prev.map_or(old.is_some(), |p| p.1)));
        }
        Ok(old)
    }

    /// Adds arc `a -> b` with weight `w` to entry `e`, merged with an existing one.
    fn add_arc(
        &mut self,
        g: &Graph,
        e: &mut EdgeEntry,
        slot: usize,
        (a, b): (u32, u32),
        w: f32,
        known: Option<Option<f32>>,
    ) -> Result<()> {
        let (weighted, merge) = (self.weighted, self.merge);
        let old = Stage::update_arc(g, e, slot, (a, b), known, |old| {
            let new = match old {
                None => w,
                Some(_) if !weighted => 1.0,
                Some(x) => match merge {
                    Merge::Sum => x + w,
                    Merge::Max => x.max(w),
                },
            };
            if !new.is_finite() {
                return Err(Error::input(format!(
                    "merged weight of arc ({a}, {b}) overflows float32"
                )));
            }
            Ok(Some(Some(new)))
        })?;
        if old.is_none() {
            self.arcs += 1;
            // Self-loops are counted for undirected graphs only (their edge count).
            if a == b && !self.directed {
                self.self_loops += 1;
            }
        }
        Ok(())
    }

    /// Removes arc `a -> b` from entry `e` if it exists; returns whether it did.
    fn remove_arc(
        &mut self,
        g: &Graph,
        e: &mut EdgeEntry,
        slot: usize,
        (a, b): (u32, u32),
        known: Option<Option<f32>>,
    ) -> Result<bool> {
        // Only an existing arc is set (to removed): an absent one stays out of the stage.
        let old = Stage::update_arc(g, e, slot, (a, b), known, |old| Ok(old.map(|_| None)))?;
        if old.is_some() {
            self.arcs -= 1;
            if a == b && !self.directed {
                self.self_loops -= 1;
            }
        }
        Ok(old.is_some())
    }

    /// Applies to entry `e` (edge of nodes `s` and `d`) the addition of `s -> d` with weight
    /// `add`, or its removal if `add` is None; an undirected graph's reverse arc with it.
    /// Returns whether the graph changed: always for an addition, for a removal whether the
    /// edge existed.
    pub(crate) fn apply_to_edge(
        &mut self,
        g: &Graph,
        e: &mut EdgeEntry,
        (s, d): (u32, u32),
        add: Option<f32>,
        known: &Known,
    ) -> Result<bool> {
        let slot = self.edge_slot(s, d).1;
        let both = !self.directed && s != d;
        match add {
            Some(w) => {
                self.add_arc(g, e, slot, (s, d), w, known.fwd)?;
                if both {
                    self.add_arc(g, e, 1 - slot, (d, s), w, known.rev)?;
                }
                Ok(true)
            }
            None => {
                if !self.remove_arc(g, e, slot, (s, d), known.fwd)? {
                    return Ok(false);
                }
                if both {
                    // The reverse arc is looked up too: a damaged file may lack it.
                    self.remove_arc(g, e, 1 - slot, (d, s), known.rev)?;
                }
                Ok(true)
            }
        }
    }

    /// Where the run holds the edge of each operation whose endpoints are committed nodes
    /// (`known`): `Some(Some(i))` at entry `i`, `Some(None)` nowhere, `None` not searched
    /// (an endpoint the batch creates: searched when applied); empty while the run is. The
    /// searches run level by
    /// level for all operations together, so that their cache misses overlap: a small call
    /// after a large one would otherwise wait on memory at every level of every search.
    pub(crate) fn run_positions(&self, known: &[Known]) -> Vec<Option<Option<u32>>> {
        if self.run.is_empty() {
            return Vec::new();
        }
        let mut out = vec![None; known.len()];
        let (mut ops, mut keys) = (Vec::new(), Vec::new());
        for (i, k) in known.iter().enumerate() {
            if let (Some(Some(s)), Some(Some(d))) = (k.a, k.b) {
                ops.push(i);
                keys.push(self.edge_slot(s, d).0);
            }
        }
        // Each search keeps `run[at].key <= key` (or `at == 0`) and halves its range.
        let mut at = vec![0usize; keys.len()];
        let mut len = self.run.len();
        while len > 1 {
            let half = len / 2;
            for &a in &at {
                prefetch_line(&self.run[a + half]);
            }
            for (a, &key) in at.iter_mut().zip(&keys) {
                if self.run[*a + half].key <= key {
                    *a += half;
                }
            }
            len -= half;
        }
        for ((&i, &a), &key) in ops.iter().zip(&at).zip(&keys) {
            out[i] = Some((self.run[a].key == key).then_some(a as u32));
        }
        out
    }

    /// Moves the staged entries of the map into the run (sorted by key): a map entry is
    /// newer than the run's of the same edge.
    pub(crate) fn flush_map(&mut self, pool: Option<&rayon::ThreadPool>) {
        if self.arcs_set.is_empty() {
            return;
        }
        let mut moved: Vec<EdgeEntry> = self.arcs_set.drain().map(|(_, e)| e).collect();
        par_radix_sort_by_key(&mut moved, |e| e.key, pool);
        self.run = merge_runs(&self.run, &moved);
    }

    /// Applies one call's operations (`known`: what [`Stage::look_ahead`] found for them)
    /// with the same result as applying them one by one in order, through the run: nodes are
    /// resolved (and created) in the order of the call, the operations are sorted by edge
    /// (stably, so each edge sees its operations in order), and each edge's entry is folded
    /// once. The map must be empty ([`Stage::flush_map`]) and `ops` fewer than 2^30.
    ///
    /// On an error the run is as before but the counts and the created nodes are not: the
    /// caller restores them (and applies the call in order to report the first operation
    /// that fails).
    pub(crate) fn apply_sorted(
        &mut self,
        g: &Graph,
        ops: &[Op],
        known: &[Known],
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<u64> {
        debug_assert!(self.arcs_set.is_empty() && ops.len() < 1 << 30);
        let mut events: Vec<Event> = Vec::with_capacity(ops.len());
        for (i, (op, k)) in ops.iter().zip(known).enumerate() {
            if let Some((s, d)) = self.resolve_op(g, op, k)? {
                let (key, slot) = self.edge_slot(s, d);
                let (w, removal) = match op {
                    Op::Add(_, _, w) => (w.unwrap_or(1.0), 0),
                    Op::Remove(..) => (0.0, REMOVAL),
                };
                let tag = i as u32 | removal | (slot as u32) << 31;
                events.push(Event { key, tag, w });
            }
        }
        par_radix_sort_by_key(&mut events, |e| e.key, pool);
        let older = std::mem::take(&mut self.run);
        let folded = self.fold_events(g, known, &events, &older);
        match folded {
            Ok((run, changed)) => {
                self.run = run;
                Ok(changed)
            }
            Err(e) => {
                self.run = older;
                Err(e)
            }
        }
    }

    /// The run with `events` (sorted by edge) applied to `older`, and how many operations
    /// changed the graph.
    fn fold_events(
        &mut self,
        g: &Graph,
        known: &[Known],
        events: &[Event],
        older: &[EdgeEntry],
    ) -> Result<(Vec<EdgeEntry>, u64)> {
        let mut run = Vec::with_capacity(older.len() + events.len());
        let (mut i, mut changed) = (0, 0u64);
        let mut e = EdgeEntry::new(0);
        for (j, &Event { key, tag, w }) in events.iter().enumerate() {
            // What the look-ahead found is read in the order of the edges, scattered over
            // the call.
            if let Some(ahead) = events.get(j + PREFETCH_AHEAD) {
                prefetch_line(&known[(ahead.tag & OP_MASK) as usize]);
            }
            if j == 0 || key != e.key {
                if j > 0 && !e.is_empty() {
                    run.push(e);
                }
                while i < older.len() && older[i].key < key {
                    run.push(older[i]);
                    i += 1;
                }
                e = match older.get(i) {
                    Some(o) if o.key == key => {
                        i += 1;
                        *o
                    }
                    _ => EdgeEntry::new(key),
                };
            }
            let op = (tag & OP_MASK) as usize;
            let (x, y) = ((key >> 32) as u32, key as u32);
            let ends = if tag >> 31 == 0 { (x, y) } else { (y, x) };
            let add = (tag & REMOVAL == 0).then_some(w);
            changed += u64::from(self.apply_to_edge(g, &mut e, ends, add, &known[op])?);
        }
        if !events.is_empty() && !e.is_empty() {
            run.push(e);
        }
        run.extend_from_slice(&older[i..]);
        Ok((run, changed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable};
    use crate::graph::log_format::LogId;
    use crate::live::stage::counts_of;

    /// Everything a stage holds that a commit writes, in one comparable value.
    fn state(st: &Stage, g: &Graph) -> String {
        format!(
            "n {} arcs {} loops {} adds {} removes {} permuted {} max {:?} new {:?} ops {} {:x} {:?}",
            st.n,
            st.arcs,
            st.self_loops,
            st.adds,
            st.removes,
            st.permuted,
            st.max_id,
            st.new_ids,
            st.ops.len(),
            st.ops.iter().fold(0u64, |h, &b| crate::hashing::splitmix64(h ^ u64::from(b))),
            st.sorted_changes(g, None).unwrap()
        )
    }

    /// Calls applied through the sorted run give what the same calls applied one operation
    /// at a time give (the map's path, the reference): the count of changed edges, the
    /// stage's counts, created nodes and changed arcs, for every setting: directed or not,
    /// weighted or not, both merges, implicit, int and string ids; additions of existing and
    /// new edges, between new nodes, self-loops, removals of present, absent and unknown
    /// edges in either direction, repeated operations on one edge in a call; calls of the
    /// map's path between the run's; and a call that fails (a merged weight overflows) leaves
    /// the stage as it was, with the same error.
    #[test]
    fn sorted_calls_match_calls_applied_in_order() {
        let mut x = 5u64;
        let mut next = move || {
            x = crate::hashing::splitmix64(x);
            x
        };
        for case in 0..24u32 {
            let (directed, weighted) = (case & 1 != 0, case & 2 != 0);
            let merge = if case & 4 != 0 {
                Merge::Max
            } else {
                Merge::Sum
            };
            let kind = case / 8;
            let n = 50u32;
            let id = |v: u64| match kind {
                0 => LogId::Int(v as i64),
                1 => LogId::Int(v as i64 * 7 - 100),
                _ => LogId::Str(format!("v{v}")),
            };
            let table = match kind {
                0 => IdTable::Implicit,
                1 => IdTable::Int((0..n).map(|v| i64::from(v) * 7 - 100).collect()),
                _ => IdTable::Str((0..n).map(|v| format!("v{v}")).collect()),
            };
            let (mut src, mut dst) = (Vec::new(), Vec::new());
            for _ in 0..120 {
                src.push((next() % u64::from(n)) as u32);
                dst.push((next() % u64::from(n)) as u32);
            }
            let wts: Vec<f32> = (0..src.len()).map(|i| 0.5 + (i % 5) as f32).collect();
            let parts = csr_from_edges(
                n as usize,
                &src,
                &dst,
                weighted.then_some(&wts[..]),
                directed,
                merge,
                table,
            )
            .unwrap();
            let g = build_in_memory(&parts).unwrap();
            let c = counts_of(&g).unwrap();
            let mut in_order = Stage::new(&g, merge, c.clone());
            in_order.sorted_min = usize::MAX;
            let mut sorted = Stage::new(&g, merge, c);
            sorted.sorted_min = 16;
            let mut sorted_calls = 0;
            for call in 0..12 {
                // Sizes above and below the run's threshold; ids over a wider span than the
                // graph's (new nodes), and over a narrow one (repeats).
                let size = [40usize, 3, 200, 17, 1, 90][call % 6];
                let span = if call % 3 == 0 { 12 } else { u64::from(n) + 15 };
                let removing = call % 2 == 1;
                let ops: Vec<Op> = (0..size)
                    .map(|i| {
                        let (a, b) = (id(next() % span), id(next() % span));
                        if removing && i % 5 != 0 {
                            Op::Remove(a, b)
                        } else {
                            Op::Add(a, b, weighted.then_some(0.25 * (next() % 9) as f32))
                        }
                    })
                    .collect();
                let want = in_order.apply_call(&g, &ops, None).unwrap();
                let staged = sorted.arcs_set.len() + sorted.run.len();
                let ran_sorted = ops.len() >= 16 && ops.len() * 4 >= staged;
                sorted_calls += usize::from(ran_sorted);
                let got = sorted.apply_call(&g, &ops, None).unwrap();
                let what = format!("case {case} call {call}");
                assert_eq!(got, want, "{what}: changed");
                assert_eq!(state(&sorted, &g), state(&in_order, &g), "{what}");
            }
            assert!(
                sorted_calls >= 4,
                "case {case}: {sorted_calls} sorted calls"
            );
            assert!(!sorted.run.is_empty(), "case {case}");
            if weighted && merge == Merge::Sum {
                // The last operation overflows; the ones before it are valid.
                let mut ops: Vec<Op> = (0..300)
                    .map(|i| Op::Add(id(i % 70), id(i % 69), Some(1.0)))
                    .collect();
                assert!(ops.len() * 4 >= sorted.arcs_set.len() + sorted.run.len());
                ops.push(Op::Add(id(3), id(4), Some(f32::MAX)));
                ops.push(Op::Add(id(3), id(4), Some(f32::MAX)));
                let before = state(&sorted, &g);
                let want = in_order.apply_call(&g, &ops, None).unwrap_err().to_string();
                let got = sorted.apply_call(&g, &ops, None).unwrap_err().to_string();
                assert_eq!(got, want, "case {case}: error");
                assert_eq!(state(&sorted, &g), before, "case {case}: after the error");
            }
        }
    }
}
