//! Local approximate Personalized PageRank by push-flow (Andersen, Chung, Lang 2006).
//!
//! Touches only the nodes the push reaches. Per-query memory is proportional to the touched
//! nodes: a reusable open-addressing table keyed by node index, cleared through its list of
//! used slots, never an O(n) array.

use std::collections::VecDeque;

use crate::csr::Graph;
use crate::error::{Error, Result};

/// Teleport (restart) probability: the walk returns to the seed with probability `alpha`.
pub const DEFAULT_ALPHA: f64 = 0.15;
/// Push threshold: a node `w` is pushed while `r[w] > eps * max(deg(w), 1)`.
pub const DEFAULT_EPS: f64 = 1e-5;
/// Default cap on the nodes one query may touch (guards memory on huge graphs).
pub const DEFAULT_MAX_TOUCHED: usize = 50_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Standard transition matrix (paper eq. 1): all of `(1-alpha) r` leaves `w`.
    Standard,
    /// Lazy walk (paper appendix, Algorithm 3): half of `(1-alpha) r` stays at `w`.
    Lazy,
}

impl Variant {
    pub fn parse(s: &str) -> Result<Variant> {
        match s {
            "standard" => Ok(Variant::Standard),
            "lazy" => Ok(Variant::Lazy),
            _ => Err(Error::param(format!(
                "variant must be 'standard' or 'lazy', got {s:?}"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Variant::Standard => "standard",
            Variant::Lazy => "lazy",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct PprConfig {
    pub alpha: f64,
    pub eps: f64,
    pub variant: Variant,
    /// Refuse (with `Error::BudgetExceeded`) a query that touches more nodes than this.
    pub max_touched: usize,
}

impl Default for PprConfig {
    fn default() -> Self {
        PprConfig {
            alpha: DEFAULT_ALPHA,
            eps: DEFAULT_EPS,
            variant: Variant::Standard,
            max_touched: DEFAULT_MAX_TOUCHED,
        }
    }
}

impl PprConfig {
    pub fn validate(&self) -> Result<()> {
        if !(self.alpha.is_finite() && self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(Error::param(format!(
                "alpha must satisfy 0 < alpha < 1, got {}",
                self.alpha
            )));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(Error::param(format!(
                "eps must be finite and > 0, got {}",
                self.eps
            )));
        }
        if self.max_touched == 0 {
            return Err(Error::param("max_touched must be >= 1"));
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Slot {
    node: u32,
    queued: bool,
    p: f64,
    r: f64,
    /// `eps * max(strength, 1)` (unweighted: degree), cached at first touch.
    threshold: f64,
}

const EMPTY: u32 = u32::MAX;
const EMPTY_SLOT: Slot = Slot {
    node: EMPTY,
    queued: false,
    p: 0.0,
    r: 0.0,
    threshold: 0.0,
};

/// Reusable per-thread state of a push. Memory grows with the largest query seen, not with `n`.
pub struct Workspace {
    slots: Vec<Slot>,
    mask: usize,
    used: Vec<u32>,
    queue: VecDeque<u32>,
    /// Edge updates (residual additions along arcs) of the last query.
    pub pushes: u64,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn slot_of(node: u32, mask: usize) -> usize {
    // Fibonacci hashing: node ids are often consecutive, the multiply spreads them.
    ((u64::from(node).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 32) as usize & mask
}

impl Workspace {
    pub fn new() -> Self {
        let cap = 1 << 10;
        Workspace {
            slots: vec![EMPTY_SLOT; cap],
            mask: cap - 1,
            used: Vec::new(),
            queue: VecDeque::new(),
            pushes: 0,
        }
    }

    fn clear(&mut self) {
        for &i in &self.used {
            self.slots[i as usize] = EMPTY_SLOT;
        }
        self.used.clear();
        self.queue.clear();
        self.pushes = 0;
        // Give memory back after an unusually large query.
        if self.slots.len() > (1 << 22) {
            *self = Workspace::new();
        }
    }

    #[inline]
    fn find(&self, node: u32) -> Option<usize> {
        let mut i = slot_of(node, self.mask);
        loop {
            let s = &self.slots[i];
            if s.node == node {
                return Some(i);
            }
            if s.node == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Index of `node`'s slot, inserting it (with `threshold`) if absent.
    #[inline]
    fn entry(&mut self, node: u32, threshold: impl FnOnce() -> Result<f64>) -> Result<usize> {
        let mut i = slot_of(node, self.mask);
        loop {
            let s = &self.slots[i];
            if s.node == node {
                return Ok(i);
            }
            if s.node == EMPTY {
                break;
            }
            i = (i + 1) & self.mask;
        }
        if (self.used.len() + 1) * 2 > self.slots.len() {
            self.grow();
            return self.entry(node, threshold);
        }
        self.slots[i] = Slot {
            node,
            queued: false,
            p: 0.0,
            r: 0.0,
            threshold: threshold()?,
        };
        self.used.push(i as u32);
        Ok(i)
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

    /// Number of distinct nodes touched by the last query.
    pub fn touched(&self) -> usize {
        self.used.len()
    }

    /// Bytes held by this workspace (for memory reporting).
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.used.capacity() * 4
            + self.queue.capacity() * 4
    }

    /// Appends `(node, p)` for every node with `p > 0`, sorted by node index, to `out`.
    pub fn support(&self, out: &mut Vec<(u32, f64)>) {
        out.clear();
        out.extend(
            self.used
                .iter()
                .map(|&i| &self.slots[i as usize])
                .filter(|s| s.p > 0.0)
                .map(|s| (s.node, s.p)),
        );
        out.sort_unstable_by_key(|e| e.0);
    }

    /// The residual of `node` after the last query (0 if untouched).
    pub fn residual(&self, node: u32) -> f64 {
        self.find(node).map_or(0.0, |i| self.slots[i].r)
    }
}

#[inline]
fn threshold_of(graph: &Graph, v: u32, eps: f64) -> Result<f64> {
    Ok(eps * graph.strength(v)?.max(1.0))
}

/// Runs the push from `seed`; afterwards `ws.support()` yields the approximate PPR vector `p`.
///
/// Invariant at termination: every touched node has `r[w] <= eps * max(deg(w), 1)`, which for
/// undirected graphs bounds the error by `|pi_j - p_j| <= eps * deg(j)`.
pub fn push(graph: &Graph, seed: u32, cfg: &PprConfig, ws: &mut Workspace) -> Result<()> {
    ws.clear();
    let n = graph.num_nodes();
    if seed as usize >= n {
        return Err(Error::NodeIndexOutOfRange {
            index: u64::from(seed),
            num_nodes: n as u64,
        });
    }
    let alpha = cfg.alpha;
    let eps = cfg.eps;
    let lazy = cfg.variant == Variant::Lazy;
    let weighted = graph.weighted();

    let s = ws.entry(seed, || threshold_of(graph, seed, eps))?;
    ws.slots[s].r = 1.0;
    if ws.slots[s].r > ws.slots[s].threshold {
        ws.slots[s].queued = true;
        ws.queue.push_back(seed);
    }
    let mut pushes = 0u64;

    while let Some(w) = ws.queue.pop_front() {
        let wi = ws.find(w).expect("queued node has a slot");
        let slot = &mut ws.slots[wi];
        slot.queued = false;
        let rw = slot.r;
        slot.p += alpha * rw;
        let mut spread = (1.0 - alpha) * rw;
        if lazy {
            spread *= 0.5;
            slot.r = spread;
        } else {
            slot.r = 0.0;
        }
        if lazy && slot.r > slot.threshold {
            slot.queued = true;
            ws.queue.push_back(w);
        }

        let nbrs = graph.neighbors(w)?;
        if nbrs.is_empty() {
            // Dangling node: the walk restarts, so its mass returns to the seed.
            let si = ws.find(seed).expect("seed has a slot");
            let sl = &mut ws.slots[si];
            sl.r += spread;
            if !sl.queued && sl.r > sl.threshold {
                sl.queued = true;
                ws.queue.push_back(seed);
            }
            continue;
        }
        let wts = if weighted { graph.weights(w)? } else { None };
        let unit = match wts {
            Some(_) => {
                let st = graph.strength(w)?;
                if st.is_nan() || st <= 0.0 {
                    return Err(Error::format(format!(
                        "node {w} has arcs but strength {st}"
                    )));
                }
                spread / st
            }
            None => spread / nbrs.len() as f64,
        };
        for (k, &u) in nbrs.iter().enumerate() {
            if u as usize >= n {
                return Err(Error::format(format!(
                    "corrupted indices: node {w} has neighbour {u} >= {n}"
                )));
            }
            let add = match wts {
                Some(ws_) => {
                    let x = ws_[k];
                    if !(x.is_finite() && x > 0.0) {
                        return Err(Error::format(format!(
                            "corrupted weight {x} on an arc of node {w}"
                        )));
                    }
                    unit * f64::from(x)
                }
                None => unit,
            };
            let ui = ws.entry(u, || threshold_of(graph, u, eps))?;
            let sl = &mut ws.slots[ui];
            sl.r += add;
            if !sl.queued && sl.r > sl.threshold {
                sl.queued = true;
                ws.queue.push_back(u);
            }
        }
        pushes += nbrs.len() as u64;
        if ws.used.len() > cfg.max_touched {
            return Err(Error::BudgetExceeded(format!(
                "the push from node {seed} touched more than max_touched={} nodes; \
                 raise eps or max_touched",
                cfg.max_touched
            )));
        }
    }
    ws.pushes = pushes;
    Ok(())
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
