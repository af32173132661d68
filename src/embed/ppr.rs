//! Local approximate Personalized PageRank by push-flow (Andersen, Chung, Lang 2006).
//!
//! Touches only the nodes the push reaches. Per-query memory is proportional to the touched
//! nodes: a reusable open-addressing table keyed by node index, cleared through its list of
//! used slots, never an O(n) array.

use std::collections::VecDeque;

use crate::embed::config::EmbeddingConfig;
use crate::error::{Error, Result};
use crate::graph::csr::Graph;
use crate::graph::overlay::{ChangedIndex, ChangedStrength, CodeMemo, RowBuf};
use crate::graph::strength_code::CodeBounds;

/// Teleport (restart) probability: the walk returns to the seed with probability `alpha`.
pub const DEFAULT_ALPHA: f64 = EmbeddingConfig::DEFAULT.ppr.alpha;
/// Push threshold: a node `w` is pushed while `r[w] > eps * max(deg(w), 1)`.
pub const DEFAULT_EPS: f64 = EmbeddingConfig::DEFAULT.ppr.eps;
/// Default cap on the nodes one query may touch (guards memory on huge graphs).
pub const DEFAULT_MAX_TOUCHED: usize = EmbeddingConfig::DEFAULT.ppr.max_touched;

// The push's settings are defined with the others in `crate::embed::config`.
pub use crate::embed::config::{PprConfig, Variant, MIN_ALPHA};

/// Graphs with at most this many nodes use dense per-thread arrays (20 bytes a node: residual,
/// estimate and a touched list), allocated once per thread and reset through the touched list,
/// never per query. Larger graphs use an open-addressing table sized by the touched nodes only.
pub const DENSE_MAX_NODES: usize = crate::graph::csr::TABLE_MAX_NODES;

/// Residual bookkeeping. A residual is `+0.0` while a node is untouched; a push leaves `-0.0`
/// behind, so "first touch" is the bit test `r == +0.0` without a separate flag, and the
/// arithmetic is unchanged (`-0.0 + x == x`).
const UNTOUCHED: u64 = 0;
const PUSHED: f64 = -0.0;

/// Where one query's residuals `r` and estimates `p` live.
trait Store {
    /// `node`'s residual slot, inserted as untouched if absent.
    ///
    /// # Safety
    /// `node < n`, the node count the store was prepared for.
    unsafe fn r(&mut self, node: u32) -> &mut f64;
    /// Records `node` as touched when `first` (its residual was untouched).
    ///
    /// # Safety
    /// `node < n`, and `first` is true at most once per node between resets.
    unsafe fn note_touch(&mut self, node: u32, first: bool);
    /// `node`'s estimate slot (the node must be touched).
    fn p(&mut self, node: u32) -> &mut f64;
    /// The nodes touched so far, each once.
    fn touched(&self) -> &[u32];
    fn get(&self, node: u32) -> Option<(f64, f64)>;
    fn reset(&mut self);

    /// `deposit::<_, _, true>(u, unit)` for each `u` of `nbrs` in order (the row of `w`, checked
    /// `< n` here): the unweighted push's inner loop, where nearly all of a query's time goes.
    ///
    /// # Safety
    /// The store was prepared for `n` nodes and `unit > 0`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn deposit_row<T: Thresholds>(
        &mut self,
        thr: &T,
        queue: &mut VecDeque<u32>,
        w: u32,
        nbrs: &[u32],
        unit: f64,
        eps: f64,
        n: usize,
    ) -> Result<()>
    where
        Self: Sized,
    {
        for &u in nbrs {
            if u as usize >= n {
                return Err(corrupt_neighbour(w, u, n));
            }
            // SAFETY: u < n (checked above), unit > 0 (caller contract).
            unsafe { deposit::<_, _, true>(thr, self, queue, u, unit, eps)? };
        }
        Ok(())
    }

    /// `deposit_row`, deciding each threshold test from `codes` (aligned with `nbrs`, see
    /// `strength_code.rs`) where they suffice.
    ///
    /// # Safety
    /// As `deposit_row`; `codes.len() == nbrs.len()`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn deposit_row_coded<T: Thresholds>(
        &mut self,
        thr: &T,
        queue: &mut VecDeque<u32>,
        w: u32,
        nbrs: &[u32],
        codes: &[u8],
        unit: f64,
        eps: f64,
        n: usize,
    ) -> Result<()>
    where
        Self: Sized;
}

/// Where the push finds `max(strength(u), 1)`, its threshold divided by eps.
trait Thresholds {
    /// Whether a deposit skips the lookup while the residual is <= eps, the lowest possible
    /// threshold (see `deposit`). Worth it where the lookup reads the file (a cache or TLB
    /// miss on graphs too large for the CPU caches, a page fault on a cold file); a table in
    /// L2 is cheaper than the unpredictable branch (BlogCatalog: +30 % push time).
    const SKIP_BELOW_EPS: bool;
    /// # Safety
    /// `u < n`.
    unsafe fn floor_strength(&self, u: u32) -> Result<f64>;
    /// Whether deposits take the pushing row's neighbour codes (see `strength_code.rs`) to
    /// decide a threshold test without `floor_strength`. Not for the table: one load from it
    /// is cheaper than the bounds test.
    const USES_CODES: bool;
    /// Bounds `[lo, hi]` on `max(strength(u), 1)` given `u`'s code from a base-file row; where
    /// the code may not hold (a node the change log changed), the lookup that found it
    /// changed found its exact value too: `[value, value]`. None: the bounds are not used.
    fn code_bounds(&self, u: u32, code: u8) -> Result<Option<(f64, f64)>>;
    /// Whether `bounds_of(code_of_node(u, c))` bounds `max(strength(u), 1)` as
    /// `code_bounds(u, c)` does (a test they leave open reads the exact strength, so the
    /// decisions are the same), where `code_of_node(u, c)` depends on `u` alone for the codes
    /// `c` that rows give `u`: a store may then keep it per node for the query.
    #[inline(always)]
    fn codes_per_node(&self) -> bool {
        false
    }
    /// See `codes_per_node`.
    #[inline(always)]
    fn code_of_node(&self, _u: u32, code: u8) -> u8 {
        code
    }
    /// See `codes_per_node`.
    #[inline(always)]
    fn bounds_of(&self, _code: u8) -> (f64, f64) {
        (1.0, f64::INFINITY)
    }
    /// Asks the memory for what the threshold tests of a row's `nodes` read first: the row's
    /// codes `row_codes`, and the index's blocks for `code_of_node`, or each level's bitmap
    /// blocks while the index is not in memory (a hint: nothing else changes).
    #[inline(always)]
    fn prefetch_codes(&self, _nodes: &[u32], _row_codes: &[u8]) {}
}

/// The graph's checked table (`Graph::floor_strengths`): the dense workspace's graphs.
struct FromTable<'a>(&'a [f64]);

impl Thresholds for FromTable<'_> {
    const SKIP_BELOW_EPS: bool = false;
    const USES_CODES: bool = false;
    fn code_bounds(&self, _u: u32, _code: u8) -> Result<Option<(f64, f64)>> {
        Ok(None)
    }
    #[inline(always)]
    unsafe fn floor_strength(&self, u: u32) -> Result<f64> {
        // SAFETY: u < n == table length (caller contract).
        Ok(unsafe { *self.0.get_unchecked(u as usize) })
    }
}

/// Each lookup reads (and checks) the row or the stored strength: graphs too large for an
/// O(n) table per process. `LIVE`: through the change log (see `Graph::neighbors_in`), whose
/// index, once in memory, is taken at the push's start (it is built between pushes).
///
/// Without the index in memory, the tests go through its memo (`CodeMemo`), taken at the same
/// time.
struct FromFile<'a, const LIVE: bool>(
    &'a Graph,
    &'static CodeBounds,
    Option<&'a ChangedIndex>,
    Option<&'a CodeMemo>,
);

impl<'a, const LIVE: bool> FromFile<'a, LIVE> {
    fn new(graph: &'a Graph) -> Self {
        let (changed, memo) = if LIVE {
            graph.prepare_lookups();
            match graph.changed_in_memory() {
                Some(c) => (Some(c), None),
                None => (None, graph.code_memo()),
            }
        } else {
            (None, None)
        };
        FromFile(
            graph,
            crate::graph::strength_code::bounds(graph.weighted()),
            changed,
            memo,
        )
    }
}

impl<const LIVE: bool> Thresholds for FromFile<'_, LIVE> {
    const SKIP_BELOW_EPS: bool = true;
    const USES_CODES: bool = true;
    #[inline(always)]
    fn code_bounds(&self, u: u32, code: u8) -> Result<Option<(f64, f64)>> {
        if LIVE {
            // One block of the index for every deposit that may cross (u < n: checked by the
            // deposit).
            if let Some(changed) = self.2 {
                return Ok(Some(self.bounds_of(changed.code_or(u, code))));
            }
            if let Some(memo) = self.3 {
                return self.memo_bounds(memo, u, code).map(Some);
            }
        }
        Ok(Some(match self.0.changed_floor_strength::<LIVE>(u)? {
            ChangedStrength::Unchanged => self.1 .0[code as usize],
            // The code of its current strength (the log's index in memory).
            ChangedStrength::Code(c) => self.1 .0[c as usize],
            // Equal bounds decide every test as `threshold` would (`crossing_by_bounds`).
            ChangedStrength::Exact(f) => (f, f),
        }))
    }
    #[inline(always)]
    unsafe fn floor_strength(&self, u: u32) -> Result<f64> {
        Ok(self.0.strength_in::<LIVE>(u)?.max(1.0))
    }
    /// With the index in memory: a node's code is its code in the index, or else the one
    /// every row gives it (see `ChangedIndex::code_or`). Not through the levels: keeping
    /// those did not speed up a reader just opened (a repeated lookup finds the levels'
    /// blocks in the CPU's caches).
    #[inline(always)]
    fn codes_per_node(&self) -> bool {
        LIVE && self.2.is_some()
    }
    #[inline(always)]
    fn code_of_node(&self, u: u32, code: u8) -> u8 {
        match self.2 {
            Some(changed) if LIVE => changed.code_or(u, code),
            _ => code,
        }
    }
    #[inline(always)]
    fn bounds_of(&self, code: u8) -> (f64, f64) {
        self.1 .0[code as usize]
    }
    #[inline(always)]
    fn prefetch_codes(&self, nodes: &[u32], row_codes: &[u8]) {
        if !LIVE {
            return;
        }
        // The deposits read the row's codes after this: asked for first, their misses overlap
        // the blocks' rather than following them (the last byte's line too: the row need not
        // start a line).
        for k in (0..row_codes.len())
            .step_by(64)
            .chain(row_codes.len().checked_sub(1))
        {
            crate::graph::pages::prefetch_line(row_codes[k..].as_ptr());
        }
        match (self.2, self.3) {
            (Some(changed), _) => nodes.iter().for_each(|&u| changed.prefetch(u)),
            (None, Some(memo)) => nodes.iter().for_each(|&u| memo.prefetch(u)),
            (None, None) => self.0.prefetch_changed_levels(nodes),
        }
    }
}

impl<const LIVE: bool> FromFile<'_, LIVE> {
    /// `code_bounds` through the memo: its byte when a test has looked `u` up before, else
    /// one lookup, whose answer the byte then keeps. The bounds of a kept code may be wider
    /// than the exact strength the lookup found; a test they leave open reads the exact
    /// strength (`threshold`), so the decisions are the same.
    #[inline(always)]
    fn memo_bounds(&self, memo: &CodeMemo, u: u32, code: u8) -> Result<(f64, f64)> {
        match memo.get(u) {
            CodeMemo::UNKNOWN => {}
            CodeMemo::UNCHANGED => return Ok(self.bounds_of(code)),
            c => return Ok(self.bounds_of(c)),
        }
        let (kept, bounds) = match self.0.changed_floor_strength::<LIVE>(u)? {
            ChangedStrength::Unchanged => (None, self.bounds_of(code)),
            ChangedStrength::Code(c) => (Some(c), self.bounds_of(c)),
            ChangedStrength::Exact(f) => (
                Some(crate::graph::strength_code::code_of(self.0.weighted(), f)),
                (f, f),
            ),
        };
        memo.keep(u, kept);
        Ok(bounds)
    }
}

#[derive(Default)]
struct Dense {
    r: Vec<f64>,
    p: Vec<f64>,
    /// Touched nodes in `touched[..len]`; its length is a power of two above `n`, so recording
    /// is a branch-free store at `len & (length - 1)`, in bounds whatever `len` is.
    touched: Vec<u32>,
    len: usize,
}

impl Dense {
    fn prepare(&mut self, n: usize) {
        if self.r.len() < n || self.touched.len() < n + 1 {
            self.r.resize(n, 0.0);
            self.p.resize(n, 0.0);
            // A spare slot: the branch-free store writes at `len` even when every node is
            // already recorded (len == n).
            self.touched.resize((n + 1).next_power_of_two(), 0);
        }
    }
}

impl Store for Dense {
    #[inline(always)]
    unsafe fn r(&mut self, node: u32) -> &mut f64 {
        // SAFETY: node < n <= r.len() (caller contract, `prepare`).
        unsafe { self.r.get_unchecked_mut(node as usize) }
    }
    #[inline(always)]
    unsafe fn note_touch(&mut self, node: u32, first: bool) {
        // Every node is recorded at most once, so len <= n < touched.len(); masking the index
        // keeps the store in bounds even if that invariant were ever broken, for one `and`
        // (a checked index cost ~3 instructions of the ~25 a deposit takes).
        let slot = self.len & (self.touched.len() - 1);
        // SAFETY: touched.len() is a power of two (`prepare`), so slot < touched.len().
        unsafe { *self.touched.get_unchecked_mut(slot) = node };
        self.len += usize::from(first);
    }
    #[inline(always)]
    fn p(&mut self, node: u32) -> &mut f64 {
        &mut self.p[node as usize]
    }
    fn touched(&self) -> &[u32] {
        &self.touched[..self.len]
    }
    fn get(&self, node: u32) -> Option<(f64, f64)> {
        let r = *self.r.get(node as usize)?;
        (r.to_bits() != UNTOUCHED).then(|| (r, self.p[node as usize]))
    }
    fn reset(&mut self) {
        for &u in &self.touched[..self.len] {
            self.r[u as usize] = 0.0;
            self.p[u as usize] = 0.0;
        }
        self.len = 0;
    }

    /// The same operations as the generic loop, on local copies of the arrays and of `len`:
    /// through `self` the compiler must assume a store to `r` or `touched` may change `self.len`
    /// or the buffers' addresses, so it reloaded them and stored `len` on every deposit
    /// (~5 of the ~22 instructions a deposit took).
    #[inline(always)]
    unsafe fn deposit_row<T: Thresholds>(
        &mut self,
        thr: &T,
        queue: &mut VecDeque<u32>,
        w: u32,
        nbrs: &[u32],
        unit: f64,
        eps: f64,
        n: usize,
    ) -> Result<()> {
        debug_assert!(unit > 0.0 && n <= self.r.len() && n < self.touched.len());
        let r = &mut self.r[..n];
        let touched = &mut self.touched[..];
        let mask = touched.len() - 1;
        let mut len = self.len;
        let result = (|| {
            for &u in nbrs {
                if u as usize >= n {
                    return Err(corrupt_neighbour(w, u, n));
                }
                // SAFETY: u < n == r.len() (checked above); the masked slot is in bounds since
                // touched.len() is a power of two (`prepare`).
                let old = unsafe {
                    let slot = r.get_unchecked_mut(u as usize);
                    let old = *slot;
                    // old is +-0.0 or positive and unit > 0: the sum cannot read as untouched.
                    *slot = old + unit;
                    *touched.get_unchecked_mut(len & mask) = u;
                    old
                };
                len += usize::from(old.to_bits() == UNTOUCHED);
                // SAFETY: u < n.
                unsafe { queue_if_crossed(thr, queue, u, old, old + unit, eps) }?;
            }
            Ok(())
        })();
        self.len = len;
        result
    }

    /// `deposit_row`'s loop with the threshold tests of `deposit_row_coded`.
    #[inline(always)]
    unsafe fn deposit_row_coded<T: Thresholds>(
        &mut self,
        thr: &T,
        queue: &mut VecDeque<u32>,
        w: u32,
        nbrs: &[u32],
        codes: &[u8],
        unit: f64,
        eps: f64,
        n: usize,
    ) -> Result<()> {
        debug_assert!(unit > 0.0 && n <= self.r.len() && n < self.touched.len());
        let r = &mut self.r[..n];
        let touched = &mut self.touched[..];
        let mask = touched.len() - 1;
        let mut len = self.len;
        let result = (|| {
            for (&u, &c) in nbrs.iter().zip(codes) {
                if u as usize >= n {
                    return Err(corrupt_neighbour(w, u, n));
                }
                // SAFETY: as in `deposit_row`.
                let old = unsafe {
                    let slot = r.get_unchecked_mut(u as usize);
                    let old = *slot;
                    *slot = old + unit;
                    *touched.get_unchecked_mut(len & mask) = u;
                    old
                };
                len += usize::from(old.to_bits() == UNTOUCHED);
                // SAFETY: u < n.
                unsafe { queue_if_crossed_coded(thr, queue, u, c, old, old + unit, eps) }?;
            }
            Ok(())
        })();
        self.len = len;
        result
    }
}

#[derive(Clone, Copy)]
struct Slot {
    node: u32,
    /// The node's code for the threshold tests once `coded` (see
    /// `Thresholds::code_of_node`): in the slot's padding, so a repeated test on the node
    /// reads no index.
    code: u8,
    coded: bool,
    r: f64,
    p: f64,
}

const EMPTY: u32 = u32::MAX;
const EMPTY_SLOT: Slot = Slot {
    node: EMPTY,
    code: 0,
    coded: false,
    r: 0.0,
    p: 0.0,
};

struct Hash {
    slots: Vec<Slot>,
    mask: usize,
    /// Slot indices in use (for reset) and the touched nodes, in touch order.
    used: Vec<u32>,
    touched: Vec<u32>,
}

#[inline(always)]
fn slot_of(node: u32, mask: usize) -> usize {
    // Fibonacci hashing: node ids are often consecutive, the multiply spreads them.
    ((u64::from(node).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 32) as usize & mask
}

impl Hash {
    fn new() -> Self {
        let cap = 1 << 10;
        Hash {
            slots: vec![EMPTY_SLOT; cap],
            mask: cap - 1,
            used: Vec::new(),
            touched: Vec::new(),
        }
    }

    #[inline(always)]
    fn find(&self, node: u32) -> Option<usize> {
        let mut i = slot_of(node, self.mask);
        loop {
            let s = self.slots[i].node;
            if s == node {
                return Some(i);
            }
            if s == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline(always)]
    fn slot(&mut self, node: u32) -> usize {
        let mut i = slot_of(node, self.mask);
        loop {
            let s = self.slots[i].node;
            if s == node {
                return i;
            }
            if s == EMPTY {
                break;
            }
            i = (i + 1) & self.mask;
        }
        if (self.used.len() + 1) * 2 > self.slots.len() {
            self.grow();
            return self.slot(node);
        }
        self.slots[i].node = node;
        self.used.push(i as u32);
        i
    }

    fn grow(&mut self) {
        let cap = self.slots.len() * 2;
        let old: Vec<Slot> = self.used.iter().map(|&i| self.slots[i as usize]).collect();
        self.slots = vec![EMPTY_SLOT; cap];
        self.mask = cap - 1;
        self.used.clear();
        for s in old {
            let mut i = slot_of(s.node, self.mask);
            while self.slots[i].node != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = s;
            self.used.push(i as u32);
        }
    }
}

impl Store for Hash {
    /// `deposit_coded` for each neighbour; where the codes are per node
    /// (`Thresholds::codes_per_node`), each node's code is found once per query and kept in
    /// its slot: a push tests a node once per deposit that may cross, about twice per node
    /// on a large graph, and finding the code is a cache miss there.
    #[inline(always)]
    unsafe fn deposit_row_coded<T: Thresholds>(
        &mut self,
        thr: &T,
        queue: &mut VecDeque<u32>,
        w: u32,
        nbrs: &[u32],
        codes: &[u8],
        unit: f64,
        eps: f64,
        n: usize,
    ) -> Result<()> {
        let per_node = thr.codes_per_node();
        // A deposit above eps is tested whatever the residual before it: every such
        // neighbour's code is asked of the memory first, so that their cache misses overlap.
        if unit > eps {
            thr.prefetch_codes(nbrs, codes);
        }
        for (&u, &c) in nbrs.iter().zip(codes) {
            if u as usize >= n {
                return Err(corrupt_neighbour(w, u, n));
            }
            if !per_node {
                // SAFETY: u < n (checked above), unit > 0 (caller contract).
                unsafe { deposit_coded::<_, _, true>(thr, self, queue, u, c, unit, eps)? };
                continue;
            }
            // As `deposit_coded::<_, _, true>`, the code found once.
            let i = self.slot(u);
            let slot = &mut self.slots[i];
            let old = slot.r;
            let new = old + unit;
            slot.r = new;
            if old.to_bits() == UNTOUCHED {
                self.touched.push(u);
            }
            // As in `queue_if_crossed_coded`: a residual <= eps cannot cross.
            if new > eps {
                if !slot.coded {
                    slot.code = thr.code_of_node(u, c);
                    slot.coded = true;
                }
                let bounds = Some(thr.bounds_of(slot.code));
                // SAFETY: u < n (checked above).
                unsafe { queue_if_crossed_within(thr, queue, u, bounds, old, new, eps) }?;
            }
        }
        Ok(())
    }

    #[inline(always)]
    unsafe fn r(&mut self, node: u32) -> &mut f64 {
        let i = self.slot(node);
        &mut self.slots[i].r
    }
    #[inline(always)]
    unsafe fn note_touch(&mut self, node: u32, first: bool) {
        if first {
            self.touched.push(node);
        }
    }
    #[inline(always)]
    fn p(&mut self, node: u32) -> &mut f64 {
        let i = self.slot(node);
        &mut self.slots[i].p
    }
    fn touched(&self) -> &[u32] {
        &self.touched
    }
    fn get(&self, node: u32) -> Option<(f64, f64)> {
        self.find(node).map(|i| (self.slots[i].r, self.slots[i].p))
    }
    fn reset(&mut self) {
        for &i in &self.used {
            self.slots[i as usize] = EMPTY_SLOT;
        }
        self.used.clear();
        self.touched.clear();
        // Give memory back after an unusually large query.
        if self.slots.len() > (1 << 22) {
            *self = Hash::new();
        }
    }
}

/// Reusable per-thread state of a push. Memory follows the touched nodes (hash mode) or is one
/// set of dense arrays per thread for graphs of at most `DENSE_MAX_NODES` nodes; nothing is
/// allocated or cleared in O(n) per query.
pub struct Workspace {
    dense: Dense,
    hash: Hash,
    use_dense: bool,
    queue: VecDeque<u32>,
    /// Queue of the read-ahead push (`push_pipelined`).
    pending: VecDeque<Pending>,
    /// Scratch of `sort_by_node`.
    sort_buf: Vec<(u32, f64)>,
    /// Edge updates (residual additions along arcs) of the last query.
    pub pushes: u64,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

impl Workspace {
    pub fn new() -> Self {
        Workspace {
            dense: Dense::default(),
            hash: Hash::new(),
            use_dense: false,
            queue: VecDeque::new(),
            pending: VecDeque::new(),
            sort_buf: Vec::new(),
            pushes: 0,
        }
    }

    fn store(&self) -> &dyn Store {
        if self.use_dense {
            &self.dense
        } else {
            &self.hash
        }
    }

    fn clear(&mut self) {
        self.dense.reset();
        self.hash.reset();
        self.queue.clear();
        self.pending.clear();
        self.pushes = 0;
    }

    /// Number of distinct nodes touched by the last query.
    pub fn touched(&self) -> usize {
        self.store().touched().len()
    }

    /// Bytes held by this workspace (for memory reporting).
    pub fn heap_bytes(&self) -> usize {
        (self.dense.r.capacity() + self.dense.p.capacity()) * 8
            + self.dense.touched.capacity() * 4
            + self.hash.slots.capacity() * std::mem::size_of::<Slot>()
            + (self.hash.used.capacity() + self.hash.touched.capacity() + self.queue.capacity()) * 4
    }

    /// Writes `(node, p)` for every node with `p > 0`, sorted by node index, to `out`.
    pub fn support(&mut self, out: &mut Vec<(u32, f64)>) {
        self.values(out, false, 0.0);
    }

    /// Writes `(node, x)` sorted by node index for every touched node whose value `x` exceeds
    /// `min` (strictly), where `x = p` or, with `with_residual`, `x = p + r`.
    pub fn values(&mut self, out: &mut Vec<(u32, f64)>, with_residual: bool, min: f64) {
        self.values_unsorted(out, if with_residual { 1.0 } else { 0.0 }, min);
        sort_by_node(out, &mut self.sort_buf);
    }

    /// `(node, p + residual_share * r)` for every touched node whose value exceeds `min`, in
    /// touch order (no sort). `residual_share` is 1 (`p+r`), 0 (`p`) or 0.5 (`log1p`).
    pub fn values_unsorted(&self, out: &mut Vec<(u32, f64)>, residual_share: f64, min: f64) {
        out.clear();
        // Exact for the shares used: x * 1.0 == x, x * 0.5 is exact, p + 0.0 == p for p >= 0.
        let pick = |p: f64, r: f64| p + residual_share * r.max(0.0);
        if self.use_dense {
            // Branch-free filter: write every entry, keep it by advancing the cursor (about
            // half of the touched nodes pass, so a branch would mispredict half the time).
            let d = &self.dense;
            let touched = &d.touched[..d.len];
            out.resize(touched.len(), (0, 0.0));
            let mut k = 0;
            for (i, &u) in touched.iter().enumerate() {
                // SAFETY: touched nodes passed `deposit`'s contract u < n <= r.len() == p.len()
                // (`Dense::prepare`), and k <= i < out.len(). Unchecked indexing halves this
                // loop's instructions (three bounds checks per entry).
                debug_assert!((u as usize) < d.r.len() && k <= i);
                let x = unsafe {
                    let x = pick(
                        *d.p.get_unchecked(u as usize),
                        *d.r.get_unchecked(u as usize),
                    );
                    *out.get_unchecked_mut(k) = (u, x);
                    x
                };
                k += usize::from(x > min);
            }
            out.truncate(k);
        } else {
            let h = &self.hash;
            out.resize(h.used.len(), (0, 0.0));
            let mut k = 0;
            for &i in &h.used {
                let s = &h.slots[i as usize];
                let x = pick(s.p, s.r);
                out[k] = (s.node, x);
                k += usize::from(x > min);
            }
            out.truncate(k);
        }
    }

    /// `(node, p, r)` for every touched node, sorted by node index.
    pub fn state(&self) -> Vec<(u32, f64, f64)> {
        let st = self.store();
        let mut out: Vec<(u32, f64, f64)> = st
            .touched()
            .iter()
            .filter_map(|&u| st.get(u).map(|(r, p)| (u, p, r.max(0.0))))
            .collect();
        out.sort_unstable_by_key(|e| e.0);
        out
    }

    /// The residual of `node` after the last query (0 if untouched).
    pub fn residual(&self, node: u32) -> f64 {
        self.store().get(node).map_or(0.0, |(r, _)| r.max(0.0))
    }
}

/// Sorts `(node, x)` pairs with distinct nodes by node: an LSD radix sort on the bytes of the
/// node index that vary (one counting pass, then one scatter per such byte). A comparison
/// sort of the few thousand random keys of a query mispredicts a branch per comparison and was
/// half of the projection's time.
pub fn sort_by_node(v: &mut Vec<(u32, f64)>, buf: &mut Vec<(u32, f64)>) {
    if v.len() <= 64 {
        v.sort_unstable_by_key(|e| e.0);
        return;
    }
    let mut counts = [[0u32; 256]; 4];
    let (mut lo, mut hi) = (u32::MAX, 0u32);
    for &(k, _) in v.iter() {
        for (b, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * b)) & 0xff) as usize] += 1;
        }
        lo = lo.min(k);
        hi = hi.max(k);
    }
    buf.clear();
    buf.resize(v.len(), (0, 0.0));
    // A byte on which all keys agree (all keys share it, e.g. the top bytes of a small graph)
    // needs no pass.
    let diff = lo ^ hi;
    for (b, c) in counts.iter().enumerate() {
        if (diff >> (8 * b)) == 0 {
            break;
        }
        let mut pos = [0u32; 256];
        let mut sum = 0u32;
        for (p, &n) in pos.iter_mut().zip(c.iter()) {
            *p = sum;
            sum += n;
        }
        for &e in v.iter() {
            let d = ((e.0 >> (8 * b)) & 0xff) as usize;
            buf[pos[d] as usize] = e;
            pos[d] += 1;
        }
        std::mem::swap(v, buf);
    }
}

/// Runs the push from `seed`; afterwards `ws.support()` yields the approximate PPR vector `p`.
///
/// Invariant at termination: every touched node has `r[w] <= eps * max(deg(w), 1)`, which for
/// undirected graphs bounds the error by `|pi_j - p_j| <= eps * deg(j)`.
pub fn push(graph: &Graph, seed: u32, cfg: &PprConfig, ws: &mut Workspace) -> Result<()> {
    // Compiled twice: a graph without a change log runs the loop that reads the file alone.
    if graph.is_live() {
        push_rows::<true>(graph, seed, cfg, ws)
    } else {
        push_rows::<false>(graph, seed, cfg, ws)
    }
}

fn push_rows<const LIVE: bool>(
    graph: &Graph,
    seed: u32,
    cfg: &PprConfig,
    ws: &mut Workspace,
) -> Result<()> {
    ws.clear();
    let n = graph.num_nodes();
    if seed as usize >= n {
        return Err(Error::NodeIndexOutOfRange {
            index: u64::from(seed),
            num_nodes: n as u64,
        });
    }
    ws.use_dense = n <= DENSE_MAX_NODES;
    ws.pushes = if ws.use_dense {
        ws.dense.prepare(n);
        match graph.floor_strengths()? {
            Some(table) => push_dispatch::<_, _, LIVE>(
                graph,
                seed,
                cfg,
                &FromTable(table),
                &mut ws.dense,
                &mut ws.queue,
                &mut ws.pending,
            )?,
            None => push_dispatch::<_, _, LIVE>(
                graph,
                seed,
                cfg,
                &FromFile::<LIVE>::new(graph),
                &mut ws.dense,
                &mut ws.queue,
                &mut ws.pending,
            )?,
        }
    } else {
        push_dispatch::<_, _, LIVE>(
            graph,
            seed,
            cfg,
            &FromFile::<LIVE>::new(graph),
            &mut ws.hash,
            &mut ws.queue,
            &mut ws.pending,
        )?
    };
    graph.note_work(ws.pushes);
    Ok(())
}

/// The plain push, or the read-ahead one for files opened with `prefetch` (same results).
// The workspace's parts are passed separately so the store can be borrowed beside them.
#[allow(clippy::too_many_arguments)]
fn push_dispatch<S: Store, T: Thresholds, const LIVE: bool>(
    graph: &Graph,
    seed: u32,
    cfg: &PprConfig,
    thr: &T,
    store: &mut S,
    queue: &mut VecDeque<u32>,
    pending: &mut VecDeque<Pending>,
) -> Result<u64> {
    if graph.prefetch() {
        // A major fault means the page cache dropped pages that earlier hints asked for:
        // they are hinted again from the next push on (see `HintedPages`).
        #[cfg(unix)]
        let faults = crate::graph::pages::major_faults();
        let pushes = push_pipelined::<S, T, LIVE>(graph, seed, cfg, thr, store, pending);
        #[cfg(unix)]
        if crate::graph::pages::major_faults() != faults {
            graph.forget_hints();
        }
        pushes
    } else {
        push_with::<S, T, LIVE>(graph, seed, cfg, thr, store, queue)
    }
}

/// `eps * max(strength(u), 1)`: the residual `u` may keep without being pushed.
///
/// # Safety
/// `u < n`.
#[inline(always)]
unsafe fn threshold<T: Thresholds>(thr: &T, u: u32, eps: f64) -> Result<f64> {
    // SAFETY: u < n (this function's contract).
    Ok(eps * unsafe { thr.floor_strength(u) }?)
}

/// A touched node's residual must never read as untouched (+0.0): when a deposit or a lazy
/// spread underflows to zero (tiny `eps`), -0.0 + +0.0 == +0.0 would record the node twice.
#[inline(always)]
fn keep_touched(r: f64) -> f64 {
    if r.to_bits() == UNTOUCHED {
        PUSHED
    } else {
        r
    }
}

/// Adds `add` to `u`'s residual; queues `u` when this makes it cross its threshold. Between two
/// pushes a node's residual only grows, so the crossing happens once and nothing is queued twice.
///
/// `POSITIVE`: the caller knows `add > 0`, so the new residual cannot read as untouched and
/// `keep_touched` is skipped (two instructions of the ~30 a deposit costs).
///
/// # Safety
/// `u < graph.num_nodes()` and the store was prepared for that many nodes.
#[inline(always)]
unsafe fn deposit<S: Store, T: Thresholds, const POSITIVE: bool>(
    thr: &T,
    store: &mut S,
    queue: &mut VecDeque<u32>,
    u: u32,
    add: f64,
    eps: f64,
) -> Result<()> {
    // SAFETY: u < n (this function's contract).
    let r = unsafe { store.r(u) };
    let old = *r;
    let new = old + add;
    // old is +-0.0 or positive, so with add > 0 the sum is positive.
    *r = if POSITIVE { new } else { keep_touched(new) };
    // SAFETY: u < n, and only the first deposit sees an untouched (+0.0) residual.
    unsafe { store.note_touch(u, old.to_bits() == UNTOUCHED) };
    // SAFETY: u < n.
    unsafe { queue_if_crossed(thr, queue, u, old, new, eps) }
}

/// Queues `u` if its residual went from `old` to `new` across its threshold.
///
/// # Safety
/// `u < n`.
#[inline(always)]
unsafe fn queue_if_crossed<T: Thresholds>(
    thr: &T,
    queue: &mut VecDeque<u32>,
    u: u32,
    old: f64,
    new: f64,
    eps: f64,
) -> Result<()> {
    // The threshold is eps * max(strength, 1) >= eps (rounding is monotone), so a residual
    // <= eps cannot cross it: skip reading u's degree, a random access into `indptr` (a cache
    // miss, or a page fault on a cold file) for most nodes at the edge of the push.
    if !T::SKIP_BELOW_EPS || new > eps {
        // SAFETY: u < n (this function's contract).
        let t = unsafe { threshold(thr, u, eps) }?;
        if new > t && old <= t {
            queue.push_back(u);
        }
    }
    Ok(())
}

/// The threshold test `new > t && old <= t` decided from bounds `[lo, hi]` on
/// `max(strength, 1)` (so `eps * lo <= t <= eps * hi`, rounding being monotone), or None when
/// the bounds leave it open (never when `lo == hi`: then `t` is `eps * lo` exactly).
#[inline(always)]
fn crossing_by_bounds(lo: f64, hi: f64, old: f64, new: f64, eps: f64) -> Option<bool> {
    let (t_lo, t_hi) = (eps * lo, eps * hi);
    if new <= t_lo || old > t_hi {
        Some(false)
    } else if new > t_hi && old <= t_lo {
        Some(true)
    } else {
        None
    }
}

/// `queue_if_crossed`, deciding from `u`'s code (from the pushing row) where its bounds
/// suffice and from `u`'s exact strength otherwise: the same decision either way.
///
/// # Safety
/// `u < n`.
#[inline(always)]
unsafe fn queue_if_crossed_coded<T: Thresholds>(
    thr: &T,
    queue: &mut VecDeque<u32>,
    u: u32,
    code: u8,
    old: f64,
    new: f64,
    eps: f64,
) -> Result<()> {
    // As in `queue_if_crossed`: a residual <= eps cannot cross.
    if new > eps {
        let bounds = thr.code_bounds(u, code)?;
        // SAFETY: u < n (this function's contract).
        unsafe { queue_if_crossed_within(thr, queue, u, bounds, old, new, eps) }?;
    }
    Ok(())
}

/// `queue_if_crossed` for a residual above eps, deciding from `bounds` on `u`'s
/// `max(strength, 1)` where they suffice and from its exact strength otherwise.
///
/// # Safety
/// `u < n`.
#[inline(always)]
unsafe fn queue_if_crossed_within<T: Thresholds>(
    thr: &T,
    queue: &mut VecDeque<u32>,
    u: u32,
    bounds: Option<(f64, f64)>,
    old: f64,
    new: f64,
    eps: f64,
) -> Result<()> {
    let crossed = match bounds.and_then(|(lo, hi)| crossing_by_bounds(lo, hi, old, new, eps)) {
        Some(c) => c,
        None => {
            // SAFETY: u < n (this function's contract).
            let t = unsafe { threshold(thr, u, eps) }?;
            new > t && old <= t
        }
    };
    if crossed {
        queue.push_back(u);
    }
    Ok(())
}

/// `deposit` with `u`'s code from the pushing row (see `queue_if_crossed_coded`).
///
/// # Safety
/// As `deposit`.
#[inline(always)]
unsafe fn deposit_coded<S: Store, T: Thresholds, const POSITIVE: bool>(
    thr: &T,
    store: &mut S,
    queue: &mut VecDeque<u32>,
    u: u32,
    code: u8,
    add: f64,
    eps: f64,
) -> Result<()> {
    // SAFETY: u < n (this function's contract).
    let r = unsafe { store.r(u) };
    let old = *r;
    let new = old + add;
    *r = if POSITIVE { new } else { keep_touched(new) };
    // SAFETY: as in `deposit`.
    unsafe { store.note_touch(u, old.to_bits() == UNTOUCHED) };
    // SAFETY: u < n.
    unsafe { queue_if_crossed_coded(thr, queue, u, code, old, new, eps) }
}

/// The push loop (docs/SPEC.md §1). Files read with read-ahead hints use `push_pipelined`,
/// which performs the same operations in the same order; keeping the hints out of this loop
/// matters (a run-time flag in it cost 25% of the warm push when tested).
fn push_with<S: Store, T: Thresholds, const LIVE: bool>(
    graph: &Graph,
    seed: u32,
    cfg: &PprConfig,
    thr: &T,
    store: &mut S,
    queue: &mut VecDeque<u32>,
) -> Result<u64> {
    let n = graph.num_nodes();
    let alpha = cfg.alpha;
    let eps = cfg.eps;
    let lazy = cfg.variant == Variant::Lazy;
    let weighted = graph.weighted();
    let mut pushes = 0u64;
    // A row with deltas in the change log is merged here (see `Graph::row_in`).
    let mut row_buf = RowBuf::default();

    // SAFETY (all `deposit`/`r` calls below): the seed was range-checked by `push`, queued nodes
    // were deposited before, and every neighbour is checked `< n` before its deposit.
    unsafe { deposit::<_, _, false>(thr, store, queue, seed, 1.0, eps)? };

    while let Some(w) = queue.pop_front() {
        let rw = unsafe { *store.r(w) };
        *store.p(w) += alpha * rw;
        let mut spread = (1.0 - alpha) * rw;
        if lazy {
            spread *= 0.5;
            unsafe { *store.r(w) = keep_touched(spread) };
            if spread > unsafe { threshold(thr, w, eps) }? {
                queue.push_back(w); // still above its threshold: stays queued
            }
        } else {
            unsafe { *store.r(w) = PUSHED };
        }

        let (nbrs, wts, codes) = if T::USES_CODES {
            graph.row_in::<LIVE, true>(w, &mut row_buf)?
        } else {
            graph.row_in::<LIVE, false>(w, &mut row_buf)?
        };
        if nbrs.is_empty() {
            // Dangling node: the walk restarts, so its mass returns to the seed.
            unsafe { deposit::<_, _, false>(thr, store, queue, seed, spread, eps)? };
            continue;
        }
        if weighted {
            let st = graph.strength_in::<LIVE>(w)?;
            if st.is_nan() || st <= 0.0 {
                return Err(Error::format(format!(
                    "node {w} has arcs but strength {st}"
                )));
            }
            let unit = spread / st;
            let mut sum = 0f64;
            for (k, (&u, &x)) in nbrs.iter().zip(wts).enumerate() {
                if u as usize >= n {
                    return Err(corrupt_neighbour(w, u, n));
                }
                if !(x.is_finite() && x > 0.0) {
                    return Err(Error::format(format!(
                        "corrupted weight {x} on an arc of node {w}"
                    )));
                }
                sum += f64::from(x);
                let add = unit * f64::from(x);
                match codes {
                    Some(c) if T::USES_CODES => unsafe {
                        deposit_coded::<_, _, false>(thr, store, queue, u, c[k], add, eps)?
                    },
                    _ => unsafe { deposit::<_, _, false>(thr, store, queue, u, add, eps)? },
                }
            }
            // A stored strength below the weights' sum would create residual mass on every
            // push, so the push would never end (corrupted file; validate() reports it).
            if sum > st * (1.0 + 1e-9) {
                return Err(Error::format(format!(
                    "corrupted strength at node {w}: {st} is less than the sum of its weights {sum}"
                )));
            }
        } else {
            let unit = spread / nbrs.len() as f64;
            if unit > 0.0 {
                match codes {
                    Some(c) if T::USES_CODES => unsafe {
                        store.deposit_row_coded(thr, queue, w, nbrs, c, unit, eps, n)?
                    },
                    _ => unsafe { store.deposit_row(thr, queue, w, nbrs, unit, eps, n)? },
                }
            } else {
                // Underflow (eps near the smallest normal float): keep_touched is needed.
                for &u in nbrs {
                    if u as usize >= n {
                        return Err(corrupt_neighbour(w, u, n));
                    }
                    unsafe { deposit::<_, _, false>(thr, store, queue, u, unit, eps)? };
                }
            }
        }
        pushes += nbrs.len() as u64;
        if store.touched().len() > cfg.max_touched {
            return Err(Error::BudgetExceeded(format!(
                "the push from node {seed} touched more than max_touched={} nodes; \
                 raise eps or max_touched",
                cfg.max_touched
            )));
        }
    }
    Ok(pushes)
}

/// A deposit that may have made `u` cross its threshold, with the residual before and after
/// it. Whether it did depends only on these and on `u`'s degree, so it can be decided later,
/// once the degree's page has been read.
#[derive(Clone, Copy)]
struct Pending {
    u: u32,
    state: Decision,
    old: f64,
    new: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Decision {
    Undecided,
    /// Decided a push by the node's code; its row is not hinted yet.
    Cross,
    Push,
    Skip,
}

/// Entries are decided ahead of the front until this many of them are pushes (their rows are
/// then being read while the pushes before them run), or [`MAX_LOOKAHEAD`] entries.
const PUSHES_AHEAD: usize = 32;
const MAX_LOOKAHEAD: usize = 4096;

/// The push for cold files (`Graph::set_prefetch`): the same operations in the same order as
/// `push_with`, so results are bit-identical, but no deposit waits for a page. A deposit that
/// may cross its node's threshold queues a [`Pending`] entry and hints the node's degree page;
/// entries are decided (threshold read) up to [`LOOKAHEAD`] places before they reach the front,
/// which hints the rows of the nodes to be pushed. Dropping the entries decided `Skip` leaves
/// exactly `push_with`'s queue. A query's page reads thus overlap across many pushes instead
/// of costing one round trip to the disk per push.
fn push_pipelined<S: Store, T: Thresholds, const LIVE: bool>(
    graph: &Graph,
    seed: u32,
    cfg: &PprConfig,
    thr: &T,
    store: &mut S,
    pending: &mut VecDeque<Pending>,
) -> Result<u64> {
    let n = graph.num_nodes();
    let alpha = cfg.alpha;
    let eps = cfg.eps;
    let lazy = cfg.variant == Variant::Lazy;
    let weighted = graph.weighted();
    let mut pushes = 0u64;
    let mut row_buf = RowBuf::default();

    // SAFETY: u < n (checked by the callers below); records the deposit as `deposit` does and
    // queues it when it may cross (its residual exceeds eps, the lowest possible threshold).
    // A deposit whose code (from the pushing row) decides the test is queued decided: a
    // `Skip` not at all, a crossing as `Cross` (its row is hinted once it is near the front),
    // and neither reads `u`'s degree.
    let deposit =
        |store: &mut S, pending: &mut VecDeque<Pending>, u: u32, code: Option<u8>, add: f64| {
            let r = unsafe { store.r(u) };
            let old = *r;
            let new = old + add;
            *r = keep_touched(new);
            unsafe { store.note_touch(u, old.to_bits() == UNTOUCHED) };
            if new > eps {
                // A failed lookup is left undecided: `decide` reports it.
                let by_code = match code.map(|c| thr.code_bounds(u, c)) {
                    Some(Ok(Some((lo, hi)))) => crossing_by_bounds(lo, hi, old, new, eps),
                    _ => None,
                };
                let state = match by_code {
                    Some(false) => return,
                    Some(true) => Decision::Cross,
                    None => {
                        graph.prefetch_degree(u);
                        Decision::Undecided
                    }
                };
                pending.push_back(Pending { u, state, old, new });
            }
        };
    let decide = |e: &mut Pending| -> Result<()> {
        match e.state {
            Decision::Undecided => {
                // SAFETY: e.u < n (it was deposited).
                let t = unsafe { threshold(thr, e.u, eps) }?;
                e.state = if e.new > t && e.old <= t {
                    graph.prefetch_row(e.u);
                    Decision::Push
                } else {
                    Decision::Skip
                };
            }
            Decision::Cross => {
                graph.prefetch_row(e.u);
                e.state = Decision::Push;
            }
            Decision::Push | Decision::Skip => {}
        }
        Ok(())
    };

    // The seed was range-checked by `push`.
    deposit(store, pending, seed, None, 1.0);
    let mut decided = 0usize; // entries pending[..decided] are decided
    let mut pushes_ahead = 0usize; // of which this many are pushes
    loop {
        while decided < pending.len() && pushes_ahead < PUSHES_AHEAD && decided < MAX_LOOKAHEAD {
            decide(&mut pending[decided])?;
            pushes_ahead += usize::from(pending[decided].state == Decision::Push);
            decided += 1;
        }
        let Some(e) = pending.pop_front() else {
            break;
        };
        decided -= 1;
        if e.state != Decision::Push {
            continue;
        }
        pushes_ahead -= 1;
        let w = e.u;
        // SAFETY: w < n (it was deposited).
        let rw = unsafe { *store.r(w) };
        *store.p(w) += alpha * rw;
        let mut spread = (1.0 - alpha) * rw;
        if lazy {
            spread *= 0.5;
            unsafe { *store.r(w) = keep_touched(spread) };
            if spread > unsafe { threshold(thr, w, eps) }? {
                pending.push_back(Pending {
                    u: w,
                    state: Decision::Push,
                    old: 0.0,
                    new: spread,
                });
                if decided == pending.len() - 1 {
                    decided += 1;
                    pushes_ahead += 1;
                }
            }
        } else {
            unsafe { *store.r(w) = PUSHED };
        }
        // The same neighbour loop as `push_with`. Sharing it through a helper taking the
        // deposit as a closure was tried: callgrind counted 55 % more instructions per warm
        // BlogCatalog query, so the loop is written out in both.
        let (nbrs, wts, codes) = if T::USES_CODES {
            graph.row_in::<LIVE, true>(w, &mut row_buf)?
        } else {
            graph.row_in::<LIVE, false>(w, &mut row_buf)?
        };
        if nbrs.is_empty() {
            deposit(store, pending, seed, None, spread);
            continue;
        }
        if weighted {
            let st = graph.strength_in::<LIVE>(w)?;
            if st.is_nan() || st <= 0.0 {
                return Err(Error::format(format!(
                    "node {w} has arcs but strength {st}"
                )));
            }
            let unit = spread / st;
            let mut sum = 0f64;
            for (k, (&u, &x)) in nbrs.iter().zip(wts).enumerate() {
                if u as usize >= n {
                    return Err(corrupt_neighbour(w, u, n));
                }
                if !(x.is_finite() && x > 0.0) {
                    return Err(Error::format(format!(
                        "corrupted weight {x} on an arc of node {w}"
                    )));
                }
                sum += f64::from(x);
                let code = codes.map(|c| c[k]);
                deposit(store, pending, u, code, unit * f64::from(x));
            }
            if sum > st * (1.0 + 1e-9) {
                return Err(Error::format(format!(
                    "corrupted strength at node {w}: {st} is less than the sum of its weights {sum}"
                )));
            }
        } else {
            let unit = spread / nbrs.len() as f64;
            // As in `deposit_row_coded`: every deposit above eps is tested, so the index lines
            // its tests read are asked for first (nothing without a change log).
            if LIVE && unit > eps {
                if let Some(c) = codes {
                    thr.prefetch_codes(nbrs, c);
                }
            }
            for (k, &u) in nbrs.iter().enumerate() {
                if u as usize >= n {
                    return Err(corrupt_neighbour(w, u, n));
                }
                deposit(store, pending, u, codes.map(|c| c[k]), unit);
            }
        }
        pushes += nbrs.len() as u64;
        if store.touched().len() > cfg.max_touched {
            return Err(Error::BudgetExceeded(format!(
                "the push from node {seed} touched more than max_touched={} nodes; \
                 raise eps or max_touched",
                cfg.max_touched
            )));
        }
    }
    Ok(pushes)
}

#[cold]
fn corrupt_neighbour(w: u32, u: u32, n: usize) -> Error {
    Error::format(format!(
        "corrupted indices: node {w} has neighbour {u} >= {n}"
    ))
}

/// Convenience wrapper: the approximate PPR vector of `seed` as `(node, p)` sorted by node.
pub fn ppr(graph: &Graph, seed: u32, cfg: &PprConfig) -> Result<Vec<(u32, f64)>> {
    cfg.validate()?;
    let mut ws = Workspace::new();
    push(graph, seed, cfg, &mut ws)?;
    let mut out = Vec::new();
    ws.support(&mut out);
    Ok(out)
}

/// The full push state of `seed`: `(node, p, r)` for every touched node, sorted by node.
pub fn ppr_state(graph: &Graph, seed: u32, cfg: &PprConfig) -> Result<Vec<(u32, f64, f64)>> {
    cfg.validate()?;
    let mut ws = Workspace::new();
    push(graph, seed, cfg, &mut ws)?;
    Ok(ws.state())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
    use crate::hashing::splitmix64;

    /// A dense store prepared for `n` nodes.
    fn dense(n: u32) -> Dense {
        let mut d = Dense::default();
        d.prepare(n as usize);
        d
    }

    /// Saves at `path` a graph of `n` nodes with `arcs` random arcs among its first `core`:
    /// sources uniform, targets skewed towards low ids by `power` (hubs and leaves), weights
    /// multiples of 1/4. Returns the arcs kept (self-loops dropped).
    fn skewed_graph(
        path: &std::path::Path,
        n: u32,
        core: u32,
        arcs: u64,
        power: u32,
        directed: bool,
        weighted: bool,
    ) -> (Vec<u32>, Vec<u32>) {
        let core = u64::from(core);
        let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..arcs {
            let a = (splitmix64(k) % core) as u32;
            let b = ((splitmix64(k + 7777) % core).pow(power) / core.pow(power - 1)) as u32;
            if a != b {
                src.push(a);
                dst.push(b);
                w.push(0.25 + (splitmix64(k + 99) % 16) as f32 / 4.0);
            }
        }
        let parts = csr_from_edges(
            n as usize,
            &src,
            &dst,
            weighted.then_some(&w[..]),
            directed,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        save(&build_in_memory(&parts).unwrap(), path).unwrap();
        (src, dst)
    }

    /// Every touched node's (node, p bits, r bits), sorted.
    fn state_bits<S: Store>(store: &S) -> Vec<(u32, u64, u64)> {
        let mut v: Vec<(u32, u64, u64)> = store
            .touched()
            .iter()
            .map(|&u| {
                let (r, p) = store.get(u).unwrap();
                (u, p.to_bits(), r.to_bits())
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// `path` opened with read-ahead hints.
    #[cfg(unix)]
    fn open_prefetching(path: &std::path::Path) -> Graph {
        let mut g = Graph::open(path).unwrap();
        g.set_prefetch(true);
        g
    }

    /// The hint tests' query (node 17, eps 1e-5): its pushes and touched nodes.
    #[cfg(unix)]
    fn hinted_query(g: &Graph) -> (u64, usize) {
        let cfg = PprConfig {
            eps: 1e-5,
            ..PprConfig::default()
        };
        let mut ws = Workspace::new();
        push(g, 17, &cfg, &mut ws).unwrap();
        (ws.pushes, ws.touched())
    }

    /// A reader with `prefetch` hints a page once, not once per query: a second push on the
    /// same pages asks for nothing, until the pages are forgotten (as after a major fault).
    #[test]
    #[cfg(unix)]
    fn pipelined_push_hints_each_page_once_until_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.graph");
        skewed_graph(&path, 20_000, 20_000, 150_000, 2, false, false);
        let g = open_prefetching(&path);
        let run = hinted_query;
        // Run once first: the code's own pages faulted in would start a new round.
        let first = run(&g);
        g.forget_hints();
        assert_eq!(run(&g), first);
        let marked = g.hinted_pages().marked();
        assert!(marked > 10, "{marked} pages hinted");
        // The same query again: every page it reads was hinted, nothing is marked anew.
        assert_eq!(run(&g), first);
        assert_eq!(g.hinted_pages().marked(), marked);
        g.forget_hints();
        assert_eq!(g.hinted_pages().marked(), 0);
        assert_eq!(run(&g), first);
        assert_eq!(g.hinted_pages().marked(), marked);

        // The change log's pages too: rows of 100 arcs or more get records in the log.
        use crate::live::{Ids, LiveWriter};
        let mut w = LiveWriter::open(&path, Some(Merge::Sum), false).unwrap();
        let (a, b): (Vec<i64>, Vec<i64>) = (0..3000).map(|k| (k % 300, 1000 + k)).unzip();
        w.add_edges(&Ids::Int(a), &Ids::Int(b), None).unwrap();
        assert!(w.commit().unwrap());
        drop(w);
        let g = open_prefetching(&path);
        let log_marked = |g: &Graph| g.hinted_log_pages().unwrap().marked();
        let first = run(&g);
        g.forget_hints();
        assert_eq!(log_marked(&g), 0);
        assert_eq!(run(&g), first);
        let marked = log_marked(&g);
        assert!(marked > 0);
        assert_eq!(run(&g), first);
        assert_eq!(log_marked(&g), marked);
    }

    /// A push that faults pages in from disk (the file left the page cache after its pages
    /// were hinted) forgets the hinted pages, so that the next push hints them again.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_push_that_faults_forgets_the_hinted_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.graph");
        skewed_graph(&path, 20_000, 20_000, 150_000, 2, false, false);
        // Written pages are dirty until synced, and the page cache keeps dirty pages.
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        let g = open_prefetching(&path);
        let run = hinted_query;
        run(&g);
        g.forget_hints();
        run(&g);
        let marked = g.hinted_pages().marked();
        assert!(marked > 10, "{marked} pages hinted");
        if !g.evict_for_test() {
            eprintln!("skipped: this file system keeps the file's pages in memory");
            return;
        }
        // Every page is marked, so nothing is hinted: the push reads them from disk.
        run(&g);
        assert_eq!(g.hinted_pages().marked(), 0);
        run(&g);
        assert_eq!(g.hinted_pages().marked(), marked);
    }

    #[test]
    fn pipelined_push_is_bit_identical_to_the_plain_push() {
        let dir = tempfile::tempdir().unwrap();
        let n = 300u32;
        for (directed, weighted) in [(false, false), (false, true), (true, false), (true, true)] {
            // A few dangling nodes when directed.
            let path = dir.path().join(format!("{directed}{weighted}.graph"));
            skewed_graph(&path, n, n, 2500, 2, directed, weighted);
            let mut g = Graph::open(&path).unwrap();
            g.set_prefetch(true);
            assert!(g.prefetch());
            // The table is built once the graph has done n edge updates.
            assert!(g.floor_strengths().unwrap().is_none());
            g.note_work(u64::from(n));
            let floors = g.floor_strengths().unwrap().unwrap().to_vec();
            for variant in [Variant::Standard, Variant::Lazy] {
                for eps in [1e-2, 1e-4, 1e-6] {
                    let cfg = PprConfig {
                        eps,
                        variant,
                        ..PprConfig::default()
                    };
                    for seed in (0..n).step_by(7) {
                        let (mut d1, mut d2, mut d3) = (dense(n), dense(n), dense(n));
                        let (mut h1, mut h2) = (Hash::new(), Hash::new());
                        let mut q = VecDeque::new();
                        let mut pend = VecDeque::new();
                        let (table, file) = (FromTable(&floors), FromFile::<false>::new(&g));
                        let a = push_with::<_, _, false>(&g, seed, &cfg, &table, &mut d1, &mut q)
                            .unwrap();
                        let b = push_pipelined::<_, _, false>(
                            &g, seed, &cfg, &table, &mut d2, &mut pend,
                        )
                        .unwrap();
                        q.clear();
                        pend.clear();
                        let c = push_with::<_, _, false>(&g, seed, &cfg, &file, &mut h1, &mut q)
                            .unwrap();
                        q.clear();
                        let d = push_pipelined::<_, _, false>(
                            &g, seed, &cfg, &file, &mut h2, &mut pend,
                        )
                        .unwrap();
                        // The table and the file give the same thresholds.
                        let e = push_with::<_, _, false>(&g, seed, &cfg, &file, &mut d3, &mut q)
                            .unwrap();
                        assert_eq!((a, c, d, e), (b, b, b, b));
                        let s = state_bits(&d1);
                        assert_eq!(
                            s,
                            state_bits(&d2),
                            "{directed} {weighted} {variant:?} {eps} {seed}"
                        );
                        assert_eq!(s, state_bits(&h1));
                        assert_eq!(s, state_bits(&h2));
                        assert_eq!(s, state_bits(&d3));
                        assert!(pend.is_empty());
                    }
                }
            }
        }
    }

    /// A live graph's pushes read the index in memory (its blocks, their inline codes and the
    /// codes past them, and the codes kept in the sparse store's slots) as the pushes that
    /// search the index's levels on disk do: the same thresholds, so the same states.
    #[test]
    fn live_pushes_decide_from_the_index_in_memory_as_from_its_levels() {
        use crate::live::{Ids, LiveWriter};
        let dir = tempfile::tempdir().unwrap();
        // The edges are among the first `core` nodes; the others (isolated) make the file
        // large enough for the push to read its neighbour codes (NBR_CODES_MIN_INDPTR_PAGES).
        let (n, core) = (40_000u32, 3000u64);
        for (directed, weighted) in [(false, false), (true, false), (false, true)] {
            // Hubs of degree above 128 (range codes) and leaves.
            let path = dir.path().join(format!("live{directed}{weighted}.graph"));
            let (src, dst) = skewed_graph(&path, n, core as u32, 30_000, 3, directed, weighted);
            let mut writer = LiveWriter::open(&path, Some(Merge::Sum), false).unwrap();
            let mut next = {
                let mut k = u64::from(directed) * 1000 + u64::from(weighted) * 7;
                move || {
                    k += 1;
                    splitmix64(k)
                }
            };
            for commit in 0..3u64 {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                // Every node of the first 96 (three blocks of 32, more than a block's inline
                // codes) gains arcs, up to doubling a leaf's degree or more.
                for v in 0..96i64 {
                    for _ in 0..=commit {
                        a.push(v);
                        b.push((next() % core) as i64);
                    }
                }
                // Random arcs elsewhere, some to created nodes (with no row of their own when
                // directed), and some removals.
                for _ in 0..400 {
                    a.push((next() % core) as i64);
                    b.push(match next() % 10 {
                        0 => i64::from(n) + (next() % 40) as i64,
                        _ => (next() % core) as i64,
                    });
                }
                let weights: Vec<f32> = a.iter().map(|_| 0.5 + (next() % 8) as f32).collect();
                writer
                    .add_edges(&Ids::Int(a), &Ids::Int(b), weighted.then_some(&weights[..]))
                    .unwrap();
                let (mut ra, mut rb) = (Vec::new(), Vec::new());
                for _ in 0..300 {
                    let i = (next() % src.len() as u64) as usize;
                    ra.push(i64::from(src[i]));
                    rb.push(i64::from(dst[i]));
                }
                writer.remove_edges(&Ids::Int(ra), &Ids::Int(rb)).unwrap();
                assert!(writer.commit().unwrap());
            }
            drop(writer);
            let levels = Graph::open(&path).unwrap().with_index_on_disk();
            let g = Graph::open(&path).unwrap();
            let m = g.num_nodes() as u32;
            g.note_work(u64::from(m));
            levels.note_work(u64::from(m));
            assert!(g.changed_in_memory().is_some());
            assert!(levels.changed_in_memory().is_none());
            assert!(g.push_reads_nbr_codes());
            for variant in [Variant::Standard, Variant::Lazy] {
                for eps in [1e-3, 1e-4] {
                    let cfg = PprConfig {
                        eps,
                        variant,
                        ..PprConfig::default()
                    };
                    let seeds = (0..core as u32).step_by(41).chain(n..m);
                    for seed in seeds {
                        let (mut want, mut dense) = (dense(m), dense(m));
                        let (mut h1, mut h2, mut h3) = (Hash::new(), Hash::new(), Hash::new());
                        let mut q = VecDeque::new();
                        let mut pend = VecDeque::new();
                        let (on_disk, in_memory) =
                            (FromFile::<true>::new(&levels), FromFile::<true>::new(&g));
                        assert!(on_disk.2.is_none() && in_memory.2.is_some());
                        assert!(on_disk.3.is_some() && in_memory.3.is_none());
                        let a = push_with::<_, _, true>(
                            &levels, seed, &cfg, &on_disk, &mut want, &mut q,
                        )
                        .unwrap();
                        q.clear();
                        let b =
                            push_with::<_, _, true>(&g, seed, &cfg, &in_memory, &mut h1, &mut q)
                                .unwrap();
                        q.clear();
                        let c =
                            push_with::<_, _, true>(&g, seed, &cfg, &in_memory, &mut dense, &mut q)
                                .unwrap();
                        let d = push_pipelined::<_, _, true>(
                            &g, seed, &cfg, &in_memory, &mut h2, &mut pend,
                        )
                        .unwrap();
                        q.clear();
                        // The sparse store through the levels.
                        let e =
                            push_with::<_, _, true>(&levels, seed, &cfg, &on_disk, &mut h3, &mut q)
                                .unwrap();
                        let what = format!("{directed} {weighted} {variant:?} {eps} {seed}");
                        assert_eq!((b, c, d, e), (a, a, a, a), "{what}");
                        let s = state_bits(&want);
                        assert_eq!(s, state_bits(&h1), "{what}");
                        assert_eq!(s, state_bits(&dense), "{what}");
                        assert_eq!(s, state_bits(&h2), "{what}");
                        assert_eq!(s, state_bits(&h3), "{what}");
                    }
                }
            }
        }
    }
}
