//! Compressed output: rows hashed into `wide_dim` dimensions, then one fixed linear map to `dim`
//! (docs/SPEC.md §2c).
//!
//! The map is fitted without labels on a sample of nodes whose size does not grow with the
//! graph: the top `dim` right singular vectors of the sample's wide rows (uncentred PCA),
//! computed by a subspace iteration with a fixed start, fixed iteration counts, modified
//! Gram-Schmidt and a cyclic Jacobi eigensolver, all in f64 with every sum in a fixed order, so
//! the same graph, settings and seed give the same map bit for bit on any machine and for any
//! thread count (threads only split independent output entries). Applying it stays local per
//! node: a sparse wide row times the `wide_dim x dim` matrix.

use std::collections::HashSet;

use rayon::prelude::*;

use crate::embed::config::EmbeddingConfig;
use crate::error::{Error, Result};
use crate::graph::csr::Graph;
use crate::hashing::splitmix64;

pub use crate::embed::config::MAX_FIT_NODES;
/// Subspace-iteration steps after the first range estimate (each: one product with the
/// sample's rows and one with their transpose).
const POWER_STEPS: usize = 2;
/// Columns per block of a sparse-dense product.
const PRODUCT_BLOCK: usize = 32;
/// Jacobi sweeps at most (each sweep rotates every off-diagonal pair once).
const MAX_SWEEPS: usize = 60;
/// Salt of the start block's seed (distinct from the hash's use of the seed).
const START_SALT: u64 = 0x6d61_702d_7374_6172; // "map-star"
/// Salt of the sample's seed.
const SAMPLE_SALT: u64 = 0x6d61_702d_7361_6d70; // "map-samp"

/// A fitted linear map from the wide hashed rows to `dim` dimensions, with the settings it was
/// fitted for.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearMap {
    config: EmbeddingConfig,
    sample: usize,
    /// `wide_dim x dim`, row-major: row `j` is what wide coordinate `j` adds per unit.
    components: Vec<f32>,
}

impl LinearMap {
    /// A map from its parts (checked: the config is valid and compressed, the matrix has
    /// `wide_dim x dim` finite entries).
    pub fn new(config: EmbeddingConfig, sample: usize, components: Vec<f32>) -> Result<Self> {
        config.validate()?;
        if config.wide_dim == 0 {
            return Err(Error::param("a linear map needs wide_dim > 0"));
        }
        if components.len() != config.wide_dim * config.dim {
            return Err(Error::param(format!(
                "components have {} entries, wide_dim x dim is {}",
                components.len(),
                config.wide_dim * config.dim
            )));
        }
        if components.iter().any(|c| !c.is_finite()) {
            return Err(Error::param("components must be finite"));
        }
        Ok(LinearMap {
            config,
            sample,
            components,
        })
    }

    /// The settings the map was fitted for (its `wide_dim`, `dim` and the rows' settings).
    pub fn config(&self) -> &EmbeddingConfig {
        &self.config
    }

    /// Nodes in the sample the map was fitted on.
    pub fn sample(&self) -> usize {
        self.sample
    }

    /// The `wide_dim x dim` matrix, row-major.
    pub fn components(&self) -> &[f32] {
        &self.components
    }

    /// Checks that this map was fitted for `cfg`: the same settings, smoothing aside (rows are
    /// mapped before they are smoothed).
    pub fn check(&self, cfg: &EmbeddingConfig) -> Result<()> {
        if self.config.unsmoothed() != cfg.unsmoothed() {
            return Err(Error::param(format!(
                "the linear map was fitted for other settings ({:?}) than these ({:?}); fit \
                 it again",
                self.config, cfg
            )));
        }
        Ok(())
    }

    /// `out = wide @ components`: for each non-zero `wide[j]` in ascending `j`,
    /// `out[k] = f32(out[k] + f32(wide[j] * c[j][k]))` (docs/SPEC.md §2c).
    pub fn apply(&self, wide: &[f32], out: &mut [f32]) {
        let d = self.config.dim;
        debug_assert_eq!(wide.len() * d, self.components.len());
        debug_assert_eq!(out.len(), d);
        out.fill(0.0);
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU supports AVX2 (checked at run time).
            return unsafe { apply_avx2(wide, &self.components, out) };
        }
        apply_portable(wide, &self.components, out);
    }

    /// [`apply`](Self::apply) to a wide row given by its non-zero `(j, x[j])`, `j` ascending.
    pub fn apply_sparse(&self, terms: &[(u32, f32)], out: &mut [f32]) {
        debug_assert!(terms.windows(2).all(|t| t[0].0 < t[1].0));
        out.fill(0.0);
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU supports AVX2 (checked at run time).
            return unsafe { apply_sparse_avx2(terms, &self.components, out) };
        }
        apply_sparse_portable(terms, &self.components, out);
    }

    /// The map as bytes: a model file and the form it takes in pickles (docs/SPEC.md §2c).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut settings = String::new();
        for s in crate::embed::config::SETTINGS {
            if let Some(v) = self.config.get(s.name) {
                settings.push_str(s.name);
                settings.push('=');
                settings.push_str(&v.to_string());
                settings.push('\n');
            }
        }
        let mut b = Vec::with_capacity(48 + settings.len() + 4 * self.components.len());
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&(settings.len() as u64).to_le_bytes());
        b.extend_from_slice(settings.as_bytes());
        b.extend_from_slice(&(self.sample as u64).to_le_bytes());
        b.extend_from_slice(&(self.components.len() as u64).to_le_bytes());
        for c in &self.components {
            b.extend_from_slice(&c.to_le_bytes());
        }
        let sum = crate::graph::format::checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads [`to_bytes`](Self::to_bytes)'s output; anything else is `Error::Format`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |m: &str| Error::format(format!("not a valid linear-map file: {m}"));
        if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(bad("bad magic or too short"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        let stored = u64::from_le_bytes(tail.try_into().expect("8 bytes"));
        if crate::graph::format::checksum(body) != stored {
            return Err(bad("checksum mismatch (corrupted or truncated)"));
        }
        let mut at = MAGIC.len();
        let u64_at = |at: &mut usize| -> Result<u64> {
            let s = body
                .get(*at..*at + 8)
                .ok_or_else(|| bad("truncated header"))?;
            *at += 8;
            Ok(u64::from_le_bytes(s.try_into().expect("8 bytes")))
        };
        let text_len = usize::try_from(u64_at(&mut at)?).map_err(|_| bad("settings length"))?;
        let text = body
            .get(
                at..at
                    .checked_add(text_len)
                    .ok_or_else(|| bad("settings length"))?,
            )
            .ok_or_else(|| bad("truncated settings"))?;
        at += text_len;
        let text = std::str::from_utf8(text).map_err(|_| bad("settings are not UTF-8"))?;
        let mut config = EmbeddingConfig::DEFAULT;
        for line in text.lines() {
            let (name, value) = line.split_once('=').ok_or_else(|| bad("settings line"))?;
            let s = crate::embed::config::setting(name)
                .ok_or_else(|| bad(&format!("unknown setting {name:?}")))?;
            let v = crate::embed::config::SettingValue::parse(s, value)
                .ok_or_else(|| bad(&format!("bad value of {name}: {value:?}")))?;
            config.set(s.name, v)?;
        }
        let sample = usize::try_from(u64_at(&mut at)?).map_err(|_| bad("sample"))?;
        let count = usize::try_from(u64_at(&mut at)?).map_err(|_| bad("matrix size"))?;
        let data = &body[at..];
        if Some(data.len()) != count.checked_mul(4) {
            return Err(bad("matrix size"));
        }
        let components = data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        LinearMap::new(config, sample, components).map_err(|e| bad(&e.to_string()))
    }
}

const MAGIC: &[u8; 8] = b"IEMAP\x00\x00\x01";

#[inline(always)]
fn apply_portable(wide: &[f32], components: &[f32], out: &mut [f32]) {
    for (&w, row) in wide.iter().zip(components.chunks_exact(out.len())) {
        if w != 0.0 {
            // Element-wise over k (no sum is reordered): the same bits with or without vectors.
            for (o, &c) in out.iter_mut().zip(row) {
                *o += w * c;
            }
        }
    }
}

#[inline(always)]
fn apply_sparse_portable(terms: &[(u32, f32)], components: &[f32], out: &mut [f32]) {
    let d = out.len();
    for &(j, w) in terms {
        let row = &components[j as usize * d..][..d];
        for (o, &c) in out.iter_mut().zip(row) {
            *o += w * c;
        }
    }
}

/// [`apply_sparse_portable`] with 64 output columns at a time held in eight registers over all
/// the terms (instead of loading and storing `out` once per term): the same products and sums
/// in the same order, so the same bits. `out` must be zero on entry.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_sparse_avx2(terms: &[(u32, f32)], components: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    const LANES: usize = 8;
    const BLOCK: usize = 8 * LANES;
    let d = out.len();
    let full = d - d % BLOCK;
    for k0 in (0..full).step_by(BLOCK) {
        let mut acc = [_mm256_setzero_ps(); 8];
        for &(j, w) in terms {
            let row = &components[j as usize * d + k0..][..BLOCK];
            let wv = _mm256_set1_ps(w);
            for (b, a) in acc.iter_mut().enumerate() {
                // SAFETY: `row` has BLOCK = 8 * LANES floats; loadu needs no alignment.
                let c = _mm256_loadu_ps(row.as_ptr().add(b * LANES));
                *a = _mm256_add_ps(*a, _mm256_mul_ps(wv, c));
            }
        }
        let dst = &mut out[k0..k0 + BLOCK];
        for (b, a) in acc.iter().enumerate() {
            // SAFETY: `dst` has BLOCK floats.
            _mm256_storeu_ps(dst.as_mut_ptr().add(b * LANES), *a);
        }
    }
    if full < d {
        for &(j, w) in terms {
            let row = &components[j as usize * d + full..][..d - full];
            for (o, &c) in out[full..].iter_mut().zip(row) {
                *o += w * c;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_avx2(wide: &[f32], components: &[f32], out: &mut [f32]) {
    apply_portable(wide, components, out);
}

/// The fit's sample: `min(n, size)` distinct internal indices drawn by Floyd's algorithm from
/// a SplitMix64 stream seeded by `seed` (docs/SPEC.md §2c), ascending. O(size), whatever `n`.
pub fn sample_nodes(n: usize, size: usize, seed: u64) -> Vec<u32> {
    if size >= n {
        return (0..n as u32).collect();
    }
    let mut state = splitmix64(seed ^ SAMPLE_SALT);
    let mut chosen: HashSet<u32> = HashSet::with_capacity(size);
    let mut out = Vec::with_capacity(size);
    for j in (n - size)..n {
        state = splitmix64(state);
        // Uniform in 0..=j by the high 64 bits of a 128-bit product.
        let t = ((u128::from(state) * (j as u128 + 1)) >> 64) as u32;
        let pick = if chosen.contains(&t) { j as u32 } else { t };
        chosen.insert(pick);
        out.push(pick);
    }
    out.sort_unstable();
    out
}

/// Fits the map for `cfg` (whose `wide_dim` must be set) on `graph`: embeds the sample's
/// unsmoothed rows at `wide_dim`, then takes their top `dim` right singular vectors
/// (docs/SPEC.md §2c). Bit-identical for any `pool`.
pub fn fit(
    graph: &Graph,
    cfg: &EmbeddingConfig,
    pool: Option<&rayon::ThreadPool>,
) -> Result<LinearMap> {
    cfg.validate()?;
    if cfg.wide_dim == 0 {
        return Err(Error::param(
            "wide_dim is 0: the rows are hashed into dim directly and there is no map to fit",
        ));
    }
    let full = *cfg;
    let cfg = cfg.unsmoothed();
    let wide_cfg = EmbeddingConfig {
        dim: cfg.wide_dim,
        wide_dim: 0,
        ..cfg
    };
    let nodes = sample_nodes(graph.num_nodes(), cfg.fit_nodes, cfg.seed);
    // The sample's rows as the map sees them: before the output's unit-length scaling.
    let rows = crate::embed::embed_base_rows(graph, &nodes, &wide_cfg, None, pool)?;
    let mut x = Sparse::from_dense(&rows, cfg.wide_dim, pool.is_some());
    drop(rows);
    let scale = x.balance_columns();
    let run = || top_right_singular_vectors(&x, cfg.dim, cfg.seed, &scale);
    let v = match pool {
        Some(p) => p.install(run),
        None => run(),
    };
    LinearMap::new(full, nodes.len(), v)
}

/// The sample's rows, sparse, by row (columns ascending) and by column (rows ascending).
struct Sparse {
    /// Whether products run on rayon's current pool (else serially).
    parallel: bool,
    rows: usize,
    cols: usize,
    row_ptr: Vec<usize>,
    row_idx: Vec<u32>,
    row_val: Vec<f64>,
    col_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    col_val: Vec<f64>,
}

impl Sparse {
    fn from_dense(dense: &[f32], cols: usize, parallel: bool) -> Sparse {
        let rows = dense.len().checked_div(cols).unwrap_or(0);
        let (mut row_ptr, mut row_idx, mut row_val) = (vec![0], Vec::new(), Vec::new());
        let mut count = vec![0usize; cols + 1];
        for r in dense.chunks_exact(cols) {
            for (j, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    row_idx.push(j as u32);
                    row_val.push(f64::from(v));
                    count[j + 1] += 1;
                }
            }
            row_ptr.push(row_idx.len());
        }
        for j in 0..cols {
            count[j + 1] += count[j];
        }
        let col_ptr = count.clone();
        let mut fill = count;
        let mut col_idx = vec![0u32; row_idx.len()];
        let mut col_val = vec![0f64; row_idx.len()];
        for i in 0..rows {
            for e in row_ptr[i]..row_ptr[i + 1] {
                let j = row_idx[e] as usize;
                col_idx[fill[j]] = i as u32;
                col_val[fill[j]] = row_val[e];
                fill[j] += 1;
            }
        }
        Sparse {
            parallel,
            rows,
            cols,
            row_ptr,
            row_idx,
            row_val,
            col_ptr,
            col_idx,
            col_val,
        }
    }

    /// Scales each column `j` by `w[j] = sqrt(rms / rms_j)`, where `rms_j` is its root mean
    /// square over the rows and `rms` the root of the mean of the non-zero columns' mean
    /// squares (`w[j] = 1` for a zero column), and returns `w` (docs/SPEC.md §2c). Halfway to
    /// standardising: a hashed coordinate that many heavy nodes share no longer dominates the
    /// leading directions, a rare one is not blown up to unit variance, and the rows keep
    /// about their scale (as a classifier on raw features needs).
    fn balance_columns(&mut self) -> Vec<f64> {
        let rows = self.rows as f64;
        let mean_square: Vec<f64> = (0..self.cols)
            .map(|j| {
                let col = &self.col_val[self.col_ptr[j]..self.col_ptr[j + 1]];
                col.iter().fold(0.0, |s, &v| s + v * v) / rows
            })
            .collect();
        let (sum, used) = mean_square
            .iter()
            .filter(|&&m| m > 0.0)
            .fold((0.0, 0usize), |(s, c), &m| (s + m, c + 1));
        if used == 0 {
            return vec![1.0; self.cols];
        }
        let rms = (sum / used as f64).sqrt();
        let w: Vec<f64> = mean_square
            .iter()
            .map(|&m| {
                if m > 0.0 {
                    (rms / m.sqrt()).sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        for (j, &wj) in w.iter().enumerate() {
            for v in &mut self.col_val[self.col_ptr[j]..self.col_ptr[j + 1]] {
                *v *= wj;
            }
        }
        for (v, &j) in self.row_val.iter_mut().zip(&self.row_idx) {
            *v *= w[j as usize];
        }
        w
    }

    /// `X @ m` (`m`: cols x l row-major) -> rows x l row-major.
    fn times(&self, m: &[f64], l: usize) -> Vec<f64> {
        let (p, i, v) = (&self.row_ptr, &self.row_idx, &self.row_val);
        product(self.rows, l, p, i, v, m, self.parallel)
    }

    /// `X^T @ m` (`m`: rows x l row-major) -> cols x l row-major.
    fn transposed_times(&self, m: &[f64], l: usize) -> Vec<f64> {
        let (p, i, v) = (&self.col_ptr, &self.col_idx, &self.col_val);
        product(self.cols, l, p, i, v, m, self.parallel)
    }
}

/// Row `i` of the result is `sum_e val[e] * m[idx[e]]` over `ptr[i]..ptr[i+1]` in that order:
/// each output row is independent, so rayon's split never changes a bit.
fn product(
    n: usize,
    l: usize,
    ptr: &[usize],
    idx: &[u32],
    val: &[f64],
    m: &[f64],
    parallel: bool,
) -> Vec<f64> {
    let mut out = vec![0f64; n * l];
    if l == 0 {
        return out;
    }
    // Columns in blocks, all rows per block, so that the block of `m` read stays in cache;
    // each entry's sum runs over `e` in order all the same.
    for c0 in (0..l).step_by(PRODUCT_BLOCK) {
        let c1 = (c0 + PRODUCT_BLOCK).min(l);
        let one = |(i, o): (usize, &mut [f64])| {
            let r = ptr[i]..ptr[i + 1];
            row_product(&mut o[c0..c1], &idx[r.clone()], &val[r], m, l, c0);
        };
        if parallel {
            out.par_chunks_mut(l)
                .enumerate()
                .with_min_len(16)
                .for_each(one);
        } else {
            out.chunks_mut(l).enumerate().for_each(one);
        }
    }
    out
}

/// `o[c] += val[e] * m[idx[e]][c0 + c]` for each `e` in order (one output row's block).
fn row_product(o: &mut [f64], idx: &[u32], val: &[f64], m: &[f64], l: usize, c0: usize) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        return unsafe { row_product_avx2(o, idx, val, m, l, c0) };
    }
    row_product_portable(o, idx, val, m, l, c0);
}

#[inline(always)]
fn row_product_portable(o: &mut [f64], idx: &[u32], val: &[f64], m: &[f64], l: usize, c0: usize) {
    let width = o.len();
    for (&j, &x) in idx.iter().zip(val) {
        let row = &m[j as usize * l + c0..][..width];
        // Element-wise (no sum is reordered): the same bits with or without vectors.
        for (a, &b) in o.iter_mut().zip(row) {
            *a += x * b;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_product_avx2(
    o: &mut [f64],
    idx: &[u32],
    val: &[f64],
    m: &[f64],
    l: usize,
    c0: usize,
) {
    row_product_portable(o, idx, val, m, l, c0);
}

/// Whether the CPU has AVX2: element-wise loops and the four-lane dot product then run on
/// wider vectors, with the same operations in the same order (the same bits).
#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| std::is_x86_feature_detected!("avx2"))
}

/// `sum a[i] b[i]` in a fixed order: four interleaved partial sums (`i mod 4`), combined as
/// `(s0 + s1) + (s2 + s3)`.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = [0f64; 4];
    let n4 = a.len() / 4 * 4;
    for (x, y) in a[..n4].chunks_exact(4).zip(b[..n4].chunks_exact(4)) {
        for k in 0..4 {
            s[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in a[n4..].iter().zip(&b[n4..]).enumerate() {
        s[k] += x * y;
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// Row-major `n x l` -> column-major (`l` columns of length `n`), and back.
fn transpose(m: &[f64], n: usize, l: usize) -> Vec<f64> {
    let mut t = vec![0f64; n * l];
    for i in 0..n {
        for c in 0..l {
            t[c * n + i] = m[i * l + c];
        }
    }
    t
}

/// Orthonormalises the columns of the row-major `n x l` matrix `m` by modified Gram-Schmidt,
/// left to right, `passes` times (a second pass restores orthogonality lost to rounding); a
/// column that vanishes (norm below 1e-12 of its norm before the pass) becomes zero.
fn orthonormalise(m: &[f64], n: usize, l: usize, passes: usize) -> Vec<f64> {
    let mut t = transpose(m, n, l);
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked at run time).
        unsafe { gram_schmidt_avx2(&mut t, n, l, passes) };
        return transpose(&t, l, n);
    }
    gram_schmidt(&mut t, n, l, passes);
    transpose(&t, l, n)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gram_schmidt_avx2(t: &mut [f64], n: usize, l: usize, passes: usize) {
    gram_schmidt(t, n, l, passes);
}

/// [`orthonormalise`] on column-major `t`.
#[inline(always)]
fn gram_schmidt(t: &mut [f64], n: usize, l: usize, passes: usize) {
    let mut live = vec![true; l];
    for _pass in 0..passes {
        for c in 0..l {
            let (done, rest) = t.split_at_mut(c * n);
            let v = &mut rest[..n];
            let before = dot(v, v).sqrt();
            for p in 0..c {
                if !live[p] {
                    continue;
                }
                let q = &done[p * n..][..n];
                let r = dot(q, v);
                for (a, &b) in v.iter_mut().zip(q) {
                    *a -= r * b;
                }
            }
            let norm = dot(v, v).sqrt();
            if live[c] && norm > 1e-12 * before && norm > 0.0 {
                for a in v.iter_mut() {
                    *a /= norm;
                }
            } else {
                live[c] = false;
                v.fill(0.0);
            }
        }
    }
}

/// Eigenvalues and eigenvectors (columns of the returned row-major `l x l` matrix) of the
/// symmetric row-major `a`, by cyclic Jacobi rotations (rows in order, then columns), until
/// no off-diagonal entry exceeds 1e-15 of the diagonal's scale, at most [`MAX_SWEEPS`] sweeps.
/// Only `+ - * /` and `sqrt`: IEEE operations, the same everywhere.
fn jacobi(mut a: Vec<f64>, l: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; l * l];
    for i in 0..l {
        v[i * l + i] = 1.0;
    }
    for _ in 0..MAX_SWEEPS {
        let scale: f64 = (0..l).map(|i| a[i * l + i].abs()).fold(0.0, f64::max);
        let tol = 1e-15 * scale;
        let mut rotated = false;
        for p in 0..l {
            for q in p + 1..l {
                let apq = a[p * l + q];
                if apq.abs() <= tol || apq == 0.0 {
                    continue;
                }
                rotated = true;
                let (app, aqq) = (a[p * l + p], a[q * l + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..l {
                    let (akp, akq) = (a[k * l + p], a[k * l + q]);
                    a[k * l + p] = c * akp - s * akq;
                    a[k * l + q] = s * akp + c * akq;
                }
                for k in 0..l {
                    let (apk, aqk) = (a[p * l + k], a[q * l + k]);
                    a[p * l + k] = c * apk - s * aqk;
                    a[q * l + k] = s * apk + c * aqk;
                }
                for k in 0..l {
                    let (vkp, vkq) = (v[k * l + p], v[k * l + q]);
                    v[k * l + p] = c * vkp - s * vkq;
                    v[k * l + q] = s * vkp + c * vkq;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    ((0..l).map(|i| a[i * l + i]).collect(), v)
}

/// The top `dim` right singular vectors of `x` (columns of the row-major `cols x dim` result;
/// zero columns beyond the sample's rank), each signed so that its entry of largest magnitude
/// (the first, on ties) is positive, then row `j` multiplied by `scale[j]` and rounded to f32.
fn top_right_singular_vectors(x: &Sparse, dim: usize, seed: u64, scale: &[f64]) -> Vec<f32> {
    let w = x.cols;
    let k = dim.min(x.rows).min(w);
    let l = (k + (k / 4).max(8)).min(x.rows).min(w);
    let mut out = vec![0f32; w * dim];
    if l == 0 {
        return out;
    }
    // Start block: uniform in [-1, 1) from a SplitMix64 stream, row-major w x l.
    let seed_mix = splitmix64(seed ^ START_SALT);
    let omega: Vec<f64> = (0..(w * l) as u64)
        .map(|i| (splitmix64(seed_mix ^ i) >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0)
        .collect();
    let mut q = orthonormalise(&x.times(&omega, l), x.rows, l, 1);
    for _ in 0..POWER_STEPS {
        // X^T Q needs no orthonormalising in f64: with Q orthonormal, X X^T Q's condition is
        // at most (s_1 / s_l)^2, and Q is re-orthonormalised at every step.
        q = orthonormalise(&x.times(&x.transposed_times(&q, l), l), x.rows, l, 1);
    }
    // Rayleigh-Ritz on the row space: basis z (w x l, orthonormal), h = (x z)^T (x z).
    let z = orthonormalise(&x.transposed_times(&q, l), w, l, 1);
    let p = x.times(&z, l);
    // h[a][b] = column a of p . column b of p (the four-lane dot product).
    let pt = transpose(&p, x.rows, l);
    let mut h = vec![0f64; l * l];
    let n = x.rows;
    for a in 0..l {
        for b in a..l {
            let d = dot(&pt[a * n..(a + 1) * n], &pt[b * n..(b + 1) * n]);
            h[a * l + b] = d;
            h[b * l + a] = d;
        }
    }
    let (values, u) = jacobi(h, l);
    let mut order: Vec<usize> = (0..l).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    // The kept eigenvectors (positive eigenvalues, largest first): `sel` is l x kept.
    let kept: Vec<usize> = order
        .iter()
        .take(k)
        .copied()
        .take_while(|&e| values[e] > 0.0)
        .collect();
    let r = kept.len();
    let mut sel = vec![0f64; l * r];
    for t in 0..l {
        for (c, &e) in kept.iter().enumerate() {
            sel[t * r + c] = u[t * l + e];
        }
    }
    // v = z @ sel: each entry sums over t ascending (element-wise over the columns).
    let mut v = vec![0f64; w * r];
    for (vj, zj) in v.chunks_exact_mut(r.max(1)).zip(z.chunks_exact(l)) {
        for (t, &zt) in zj.iter().enumerate() {
            for (a, &b) in vj.iter_mut().zip(&sel[t * r..(t + 1) * r]) {
                *a += zt * b;
            }
        }
    }
    for c in 0..r {
        let mut big = 0;
        for j in 0..w {
            if v[j * r + c].abs() > v[big * r + c].abs() {
                big = j;
            }
        }
        let flip = v[big * r + c] < 0.0;
        for j in 0..w {
            let x = v[j * r + c];
            out[j * dim + c] = ((if flip { -x } else { x }) * scale[j]) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_is_distinct_sorted_bounded_and_seeded() {
        for (n, s) in [(10, 3), (100, 100), (100, 200), (1_000_000, 2000), (5, 0)] {
            let a = sample_nodes(n, s, 7);
            assert_eq!(a.len(), s.min(n));
            assert!(a.windows(2).all(|w| w[0] < w[1]));
            assert!(a.iter().all(|&v| (v as usize) < n));
            assert_eq!(a, sample_nodes(n, s, 7));
        }
        assert_ne!(sample_nodes(1000, 10, 1), sample_nodes(1000, 10, 2));
    }

    #[test]
    fn jacobi_diagonalises_a_symmetric_matrix() {
        let l = 7;
        let mut a = vec![0f64; l * l];
        for i in 0..l {
            for j in 0..=i {
                let x = (splitmix64((i * l + j) as u64) >> 11) as f64 / (1u64 << 53) as f64;
                a[i * l + j] = x;
                a[j * l + i] = x;
            }
        }
        let (vals, v) = jacobi(a.clone(), l);
        // a v_e = lambda_e v_e
        for e in 0..l {
            for i in 0..l {
                let av: f64 = (0..l).map(|k| a[i * l + k] * v[k * l + e]).sum();
                assert!((av - vals[e] * v[i * l + e]).abs() < 1e-12, "{e} {i}");
            }
        }
    }

    #[test]
    fn orthonormalise_gives_orthonormal_columns_and_zeroes_dependent_ones() {
        let (n, l) = (50, 5);
        let mut m: Vec<f64> = (0..n * l)
            .map(|i| (splitmix64(i as u64) >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
            .collect();
        for i in 0..n {
            m[i * l + 3] = 2.0 * m[i * l + 1] - m[i * l]; // dependent
        }
        let q = orthonormalise(&m, n, l, 2);
        for a in 0..l {
            for b in 0..l {
                let d: f64 = (0..n).map(|i| q[i * l + a] * q[i * l + b]).sum();
                let want = if a == b && a != 3 { 1.0 } else { 0.0 };
                assert!((d - want).abs() < 1e-12, "{a} {b} {d}");
            }
        }
    }

    /// The fit is the same on any pool, and a compressed row equals the map applied to the
    /// uncompressed wide row (both `apply` forms).
    #[test]
    fn fit_is_pool_independent_and_rows_are_the_mapped_wide_rows() {
        use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
        let n = 500u32;
        let src: Vec<u32> = (0..n).collect();
        let dst: Vec<u32> = (0..n).map(|i| (i * 7 + 1) % n).collect();
        let parts = csr_from_edges(
            n as usize,
            &src,
            &dst,
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        );
        let g = build_in_memory(&parts.unwrap()).unwrap();
        let cfg = EmbeddingConfig {
            dim: 6,
            wide_dim: 64,
            fit_nodes: 200,
            ..EmbeddingConfig::DEFAULT
        };
        let serial = fit(&g, &cfg, None).unwrap();
        let pool = crate::parallel::pool(3).unwrap();
        assert_eq!(serial, fit(&g, &cfg, Some(&pool)).unwrap());
        assert_eq!(serial.sample(), 200);
        assert!(serial.components().iter().any(|&c| c != 0.0));
        let nodes: Vec<u32> = (0..n).collect();
        let rows = crate::embed::embed_nodes_mapped(&g, &nodes, &cfg, Some(&serial), Some(&pool));
        let wide_cfg = EmbeddingConfig {
            dim: 64,
            wide_dim: 0,
            ..cfg
        };
        let wide = crate::embed::embed_nodes(&g, &nodes, &wide_cfg, None).unwrap();
        let rows = rows.unwrap();
        let mut out = vec![0f32; 6];
        for (v, w) in wide.chunks_exact(64).enumerate() {
            serial.apply(w, &mut out);
            assert_eq!(out[..], rows[v * 6..(v + 1) * 6]);
            let terms: Vec<(u32, f32)> = w
                .iter()
                .enumerate()
                .filter(|(_, &x)| x != 0.0)
                .map(|(j, &x)| (j as u32, x))
                .collect();
            serial.apply_sparse(&terms, &mut out);
            assert_eq!(out[..], rows[v * 6..(v + 1) * 6]);
        }
        // Without its map, or with another config's, a compressed config is refused.
        assert!(crate::embed::embed_nodes(&g, &nodes, &cfg, None).is_err());
        let other = EmbeddingConfig { seed: 1, ..cfg };
        assert!(crate::embed::embed_nodes_mapped(&g, &nodes, &other, Some(&serial), None).is_err());
    }

    #[test]
    fn apply_sparse_vectors_give_the_portable_bits() {
        let mut x = 7u64;
        let mut next = || {
            x = splitmix64(x);
            ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
        };
        let wide = 300;
        for d in [1, 8, 63, 64, 72, 128, 130, 200] {
            let components: Vec<f32> = (0..wide * d).map(|_| next()).collect();
            let terms: Vec<(u32, f32)> = (0..wide as u32).step_by(3).map(|j| (j, next())).collect();
            let mut want = vec![0f32; d];
            apply_sparse_portable(&terms, &components, &mut want);
            let mut got = vec![0f32; d];
            #[cfg(target_arch = "x86_64")]
            if avx2() {
                // SAFETY: the CPU supports AVX2.
                unsafe { apply_sparse_avx2(&terms, &components, &mut got) };
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "d = {d}");
            }
        }
    }

    #[test]
    fn bytes_round_trip_and_corruption_is_a_format_error() {
        let cfg = EmbeddingConfig {
            dim: 3,
            wide_dim: 8,
            ..EmbeddingConfig::DEFAULT
        };
        let comps: Vec<f32> = (0..24).map(|i| i as f32 * 0.25 - 2.0).collect();
        let m = LinearMap::new(cfg, 11, comps).unwrap();
        let b = m.to_bytes();
        assert_eq!(LinearMap::from_bytes(&b).unwrap(), m);
        for cut in [0, 5, 20, b.len() - 1] {
            assert!(matches!(
                LinearMap::from_bytes(&b[..cut]),
                Err(Error::Format(_))
            ));
        }
        for at in [3, 20, b.len() / 2, b.len() - 3] {
            let mut c = b.clone();
            c[at] ^= 1;
            assert!(matches!(LinearMap::from_bytes(&c), Err(Error::Format(_))));
        }
    }
}
