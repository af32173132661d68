//! Synthetic social-network-like graphs: Chung–Lu expected degrees inside planted communities
//! plus a fraction of Chung–Lu edges between communities (a degree-corrected planted partition,
//! generated edge by edge). Seeded, reproducible for any thread count.
//!
//! The model, exactly (all randomness from `splitmix64` streams keyed by the seed):
//!
//! 1. Node weights. For position `i in 0..n`: `u_i = unif(seed, 1, i)` in (0, 1], and
//!    `w_i = min(w_min * u_i^(-1/(gamma-1)), w_max)`: a power law with exponent `gamma`
//!    (`P(w > x) ~ x^-(gamma-1)`), truncated at `w_max`. A node's expected degree is
//!    proportional to its weight.
//! 2. Communities. Positions are cut into consecutive blocks whose sizes are drawn (one stream,
//!    `seed, 2`) from a truncated power law with exponent `tau` on `[c_min, c_max]`; the last
//!    block takes the remainder (merged into the previous one when smaller than `c_min`).
//! 3. Edges. `m` draws, in chunks of `CHUNK` draws; draw `k` uses the stream of its chunk
//!    (`seed, 3, k / CHUNK`), so a chunk's edges do not depend on which thread makes it.
//!    With probability `mu` a draw is an inter-community edge: both endpoints are sampled
//!    from all positions with probability `w_i / W`. Otherwise it is an intra-community edge:
//!    a community `c` is sampled with probability `W_c / W` (its weight share), then both
//!    endpoints inside `c` with probability `w_i / W_c`. Sampling uses Walker alias tables.
//!    A draw whose endpoints coincide (a self-loop) is dropped. Repeated pairs are emitted as
//!    they come; the graph builder merges them, so the stored edge count is the number of
//!    distinct pairs (reported by the generator).
//! 4. Node ids. With `shuffle`, position `i` becomes node `perm(i)`, a seeded pseudo-random
//!    bijection of `0..n` (a 4-round Feistel network with cycle walking, keyed by `seed, 4`),
//!    so neither communities nor degrees are correlated with ids (as in a crawled social
//!    network's ids; the pessimistic case for page locality). Without it, communities are
//!    contiguous id ranges.
//!
//! Expected degree of node `i`: `2 m w_i / W` (inter and intra parts both proportional to
//! `w_i`), slightly less after self-loops and repeats are removed (hubs in small communities
//! lose most).

use rayon::prelude::*;

/// Edge draws per chunk (the unit of parallel work and of the per-chunk random stream).
pub const CHUNK: u64 = 1 << 20;

#[inline(always)]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key of stream `(seed, a, b)`.
#[inline(always)]
fn key(seed: u64, a: u64, b: u64) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(a)) ^ b)
}

/// A SplitMix64 sequence: fast, 64-bit outputs, good enough for sampling.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, a: u64, b: u64) -> Rng {
        Rng(key(seed, a, b))
    }
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    #[inline(always)]
    pub fn unif(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[derive(Clone, Debug)]
pub struct Params {
    pub n: u64,
    /// Edge draws (before self-loop removal and merging of repeats).
    pub m: u64,
    pub gamma: f64,
    pub w_min: f64,
    pub w_max: f64,
    pub mu: f64,
    pub tau: f64,
    pub c_min: u64,
    pub c_max: u64,
    pub shuffle: bool,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            n: 1 << 16,
            m: 1 << 20,
            gamma: 2.5,
            w_min: 1.0,
            w_max: 10_000.0,
            mu: 0.2,
            tau: 2.0,
            c_min: 100,
            c_max: 10_000,
            shuffle: true,
            seed: 0,
        }
    }
}

/// One column of a Walker alias table: keep the column with probability `prob`, else take
/// `alias`. Interleaved so a draw costs one cache miss, not two.
#[derive(Clone, Copy, Default)]
pub struct Col {
    prob: f32,
    alias: u32,
}

/// Walker alias table over `w.len()` items, written into `cols` (a caller slice, so tables
/// can share one array).
fn build_alias(w: &[f64], cols: &mut [Col]) {
    let k = w.len();
    let total: f64 = w.iter().sum();
    let mut scaled: Vec<f64> = w.iter().map(|&x| x * k as f64 / total).collect();
    let mut small: Vec<u32> = Vec::new();
    let mut large: Vec<u32> = Vec::new();
    for (i, &s) in scaled.iter().enumerate() {
        if s < 1.0 {
            small.push(i as u32);
        } else {
            large.push(i as u32);
        }
    }
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        cols[s as usize] = Col {
            prob: scaled[s as usize] as f32,
            alias: l,
        };
        scaled[l as usize] -= 1.0 - scaled[s as usize];
        if scaled[l as usize] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    for i in small.into_iter().chain(large) {
        cols[i as usize] = Col {
            prob: 1.0,
            alias: i,
        };
    }
}

/// One alias draw among `len` items from 64 random bits: the high 32 bits pick the column,
/// the low 32 bits the coin.
#[inline(always)]
fn alias_draw(r: u64, cols: &[Col]) -> u32 {
    let len = cols.len() as u64;
    let i = (((r >> 32) * len) >> 32) as usize;
    let coin = (r & 0xFFFF_FFFF) as f32 * (1.0 / 4_294_967_296.0);
    let c = cols[i];
    if coin < c.prob {
        i as u32
    } else {
        c.alias
    }
}

/// Seeded bijection of `0..n` (Feistel network on the smallest even-bit power of two >= n,
/// cycle-walking back into range).
pub struct Perm {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Perm {
    pub fn new(n: u64, seed: u64) -> Perm {
        let bits = (64 - n.max(2).saturating_sub(1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let keys = [0, 1, 2, 3].map(|r| key(seed, 4, r));
        Perm { n, half_bits, keys }
    }
    #[inline(always)]
    fn once(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = splitmix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }
    #[inline(always)]
    pub fn apply(&self, x: u64) -> u64 {
        let mut y = self.once(x);
        while y >= self.n {
            y = self.once(y);
        }
        y
    }
}

/// The sampling state of one graph: alias tables over nodes, over each community's members,
/// and over communities.
pub struct Model {
    pub p: Params,
    g_cols: Vec<Col>,
    /// Community `c` holds positions `c_start[c] .. c_start[c+1]`; its alias table is the same
    /// range of `c_cols` (indices local to the community).
    pub c_start: Vec<u64>,
    c_cols: Vec<Col>,
    cc_cols: Vec<Col>,
    perm: Option<Perm>,
    /// Sum of weights, and the largest weight (for reporting).
    pub total_weight: f64,
}

impl Model {
    pub fn new(p: Params) -> Model {
        assert!(p.n >= 2 && p.n <= u64::from(u32::MAX), "n must be in 2..2^32-1");
        assert!(p.gamma > 1.0 && p.w_min > 0.0 && p.w_max >= p.w_min);
        assert!((0.0..=1.0).contains(&p.mu));
        assert!(p.c_min >= 2 && p.c_max >= p.c_min);
        let n = p.n as usize;
        let (seed, gamma, w_min, w_max) = (p.seed, p.gamma, p.w_min, p.w_max);
        let inv = -1.0 / (gamma - 1.0);
        let w: Vec<f64> = (0..n as u64)
            .into_par_iter()
            .map(|i| (w_min * Rng::new(seed, 1, i).unif().powf(inv)).min(w_max))
            .collect();
        let total_weight: f64 = w.par_iter().sum();

        // Community sizes: truncated power law on [c_min, c_max] by inverse transform.
        let mut rng = Rng::new(seed, 2, 0);
        let (a, b) = (p.c_min as f64, p.c_max as f64);
        let t1 = 1.0 - p.tau;
        let mut c_start = vec![0u64];
        let mut pos = 0u64;
        while pos < p.n {
            let u = rng.unif();
            let size = if (p.tau - 1.0).abs() < 1e-12 {
                a * (b / a).powf(u)
            } else {
                (a.powf(t1) + u * (b.powf(t1) - a.powf(t1))).powf(1.0 / t1)
            };
            let size = (size.round() as u64).clamp(p.c_min, p.c_max);
            pos = (pos + size).min(p.n);
            c_start.push(pos);
        }
        let k = c_start.len();
        if k > 2 && c_start[k - 1] - c_start[k - 2] < p.c_min {
            c_start.remove(k - 2);
        }

        let mut g_cols = vec![Col::default(); n];
        build_alias(&w, &mut g_cols);
        let mut c_cols = vec![Col::default(); n];
        // Per-community tables, built in parallel over disjoint ranges.
        {
            let mut parts: Vec<(&mut [Col], &[f64])> = Vec::new();
            let mut rest = &mut c_cols[..];
            for win in c_start.windows(2) {
                let (head, tail) = rest.split_at_mut((win[1] - win[0]) as usize);
                parts.push((head, &w[win[0] as usize..win[1] as usize]));
                rest = tail;
            }
            parts.into_par_iter().for_each(|(cc, ww)| build_alias(ww, cc));
        }
        let cw: Vec<f64> = c_start
            .windows(2)
            .map(|win| w[win[0] as usize..win[1] as usize].iter().sum())
            .collect();
        let mut cc_cols = vec![Col::default(); cw.len()];
        build_alias(&cw, &mut cc_cols);
        let perm = p.shuffle.then(|| Perm::new(p.n, seed));
        Model {
            p,
            g_cols,
            c_start,
            c_cols,
            cc_cols,
            perm,
            total_weight,
        }
    }

    pub fn num_communities(&self) -> usize {
        self.c_start.len() - 1
    }

    pub fn num_chunks(&self) -> u64 {
        self.p.m.div_ceil(CHUNK)
    }

    #[inline(always)]
    fn node(&self, pos: u64) -> u64 {
        match &self.perm {
            Some(pm) => pm.apply(pos),
            None => pos,
        }
    }

    /// The edges of chunk `j` (self-loops dropped), appended to `out`.
    pub fn chunk(&self, j: u64, out: &mut Vec<(u64, u64)>) {
        let mut rng = Rng::new(self.p.seed, 3, j);
        let lo = j * CHUNK;
        let hi = (lo + CHUNK).min(self.p.m);
        // mu as a threshold on 64 random bits.
        let mu_thr = (self.p.mu * 18_446_744_073_709_551_616.0) as u64;
        let mu_all = self.p.mu >= 1.0;
        for _ in lo..hi {
            let (u, v) = if mu_all || rng.next_u64() < mu_thr {
                (
                    alias_draw(rng.next_u64(), &self.g_cols) as u64,
                    alias_draw(rng.next_u64(), &self.g_cols) as u64,
                )
            } else {
                let c = alias_draw(rng.next_u64(), &self.cc_cols) as usize;
                let (s, e) = (self.c_start[c] as usize, self.c_start[c + 1] as usize);
                let cols = &self.c_cols[s..e];
                (
                    s as u64 + alias_draw(rng.next_u64(), cols) as u64,
                    s as u64 + alias_draw(rng.next_u64(), cols) as u64,
                )
            };
            if u != v {
                out.push((self.node(u), self.node(v)));
            }
        }
    }

    /// Generates every chunk, `window` chunks at a time in parallel, handing them to `sink`
    /// in chunk order (so the edge sequence is the same for any thread count).
    pub fn generate<E>(
        &self,
        window: usize,
        mut sink: impl FnMut(&[(u64, u64)]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let chunks = self.num_chunks();
        let mut emitted = 0u64;
        let mut next = 0u64;
        let mut bufs: Vec<Vec<(u64, u64)>> = Vec::new();
        while next < chunks {
            let hi = (next + window as u64).min(chunks);
            bufs.resize_with((hi - next) as usize, Vec::new);
            bufs.par_iter_mut().enumerate().for_each(|(i, b)| {
                b.clear();
                self.chunk(next + i as u64, b);
            });
            for b in &bufs {
                sink(b)?;
                emitted += b.len() as u64;
            }
            next = hi;
        }
        Ok(emitted)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn perm_is_a_bijection() {
        for n in [2u64, 3, 10, 1000, 4097] {
            let p = super::Perm::new(n, 7);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let y = p.apply(i) as usize;
                assert!(!seen[y]);
                seen[y] = true;
            }
        }
    }
}
