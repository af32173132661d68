//! InstantEmbedding: approximate PPR of a node, projected to `dim` dimensions by signed hashing.
//!
//! `w[dim(j)] += sign(j) * max(ln(p_j * n), 0)` for every `j` in the PPR support, accumulated in
//! f64 in increasing node-index order and rounded to f32 once. Each node's row depends only on
//! the graph, the node and the config, so results are bit-identical for any thread count or
//! batch split.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use crate::csr::Graph;
use crate::error::{Error, Result};
use crate::hashing::SignedHasher;
use crate::ppr::{push, PprConfig, Workspace};

pub const DEFAULT_DIM: usize = 512;
pub const DEFAULT_SEED: u64 = 0;
/// Largest accepted embedding dimension (keeps `dim` * rows allocations sane).
pub const MAX_DIM: usize = 1 << 20;

#[derive(Clone, Copy, Debug)]
pub struct EmbedConfig {
    pub dim: usize,
    pub seed: u64,
    pub ppr: PprConfig,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        EmbedConfig {
            dim: DEFAULT_DIM,
            seed: DEFAULT_SEED,
            ppr: PprConfig::default(),
        }
    }
}

impl EmbedConfig {
    pub fn validate(&self) -> Result<()> {
        if self.dim == 0 || self.dim > MAX_DIM {
            return Err(Error::param(format!(
                "dim must satisfy 1 <= dim <= {MAX_DIM}, got {}",
                self.dim
            )));
        }
        self.ppr.validate()
    }
}

struct Scratch {
    ws: Workspace,
    support: Vec<(u32, f64)>,
    acc: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch {
        ws: Workspace::new(),
        support: Vec::new(),
        acc: Vec::new(),
    });
}

/// Embeds one node into `out` (length `cfg.dim`). Uses this thread's reusable workspace.
pub fn embed_one(graph: &Graph, node: u32, cfg: &EmbedConfig, out: &mut [f32]) -> Result<()> {
    debug_assert_eq!(out.len(), cfg.dim);
    SCRATCH.with(|cell| {
        let mut guard = cell.borrow_mut();
        let sc = &mut *guard;
        push(graph, node, &cfg.ppr, &mut sc.ws)?;
        sc.ws.support(&mut sc.support);
        project(graph, &sc.support, cfg, &mut sc.acc, out)
    })
}

/// Signed-hash projection of a PPR support sorted by node index.
pub fn project(
    graph: &Graph,
    support: &[(u32, f64)],
    cfg: &EmbedConfig,
    acc: &mut Vec<f64>,
    out: &mut [f32],
) -> Result<()> {
    let hasher = SignedHasher::new(cfg.seed, cfg.dim);
    let n = graph.num_nodes() as f64;
    acc.clear();
    acc.resize(cfg.dim, 0.0);
    for &(j, p) in support {
        let v = (p * n).ln();
        if v > 0.0 {
            let (d, sign) = hasher.bucket(graph.hash_key(j)?);
            acc[d] += sign * v;
        }
    }
    for (o, &a) in out.iter_mut().zip(acc.iter()) {
        *o = a as f32;
    }
    Ok(())
}

/// Embeds `nodes` (internal indices) into a row-major `nodes.len() x dim` matrix, in parallel
/// on `pool` (or serially when `pool` is None).
pub fn embed_nodes(
    graph: &Graph,
    nodes: &[u32],
    cfg: &EmbedConfig,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Vec<f32>> {
    cfg.validate()?;
    let d = cfg.dim;
    let total = nodes
        .len()
        .checked_mul(d)
        .ok_or_else(|| Error::param("nodes x dim overflows"))?;
    let mut out = vec![0f32; total];
    match pool {
        Some(pool) if nodes.len() > 1 && pool.current_num_threads() > 1 => pool.install(|| {
            out.par_chunks_mut(d)
                .zip(nodes.par_iter())
                .with_min_len(8)
                .try_for_each(|(row, &v)| embed_one(graph, v, cfg, row))
        })?,
        _ => {
            for (row, &v) in out.chunks_mut(d).zip(nodes) {
                embed_one(graph, v, cfg, row)?;
            }
        }
    }
    Ok(out)
}

/// Thread count to use: explicit `threads`, else `RAYON_NUM_THREADS`, else the CPU count.
pub fn resolve_threads(threads: Option<usize>) -> Result<usize> {
    match threads {
        Some(0) => Err(Error::param("threads must be >= 1")),
        Some(t) if t > 4096 => Err(Error::param(format!("threads must be <= 4096, got {t}"))),
        Some(t) => Ok(t),
        None => Ok(std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .filter(|&t| t > 0)
            .unwrap_or_else(cpu_count)),
    }
}

/// The CPU count, read once: `available_parallelism` reads cgroup files (tens of µs), too slow
/// for a per-call lookup on the single-node latency path.
fn cpu_count() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

type PoolCache = Mutex<HashMap<(u32, usize), Arc<rayon::ThreadPool>>>;

/// A cached rayon pool with `threads` workers, private to this process.
///
/// Pools are keyed by process id: a child created by `fork()` has none of the parent's worker
/// threads, so it builds its own instead of deadlocking on the inherited (dead) pool.
pub fn pool(threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<PoolCache> = OnceLock::new();
    let pid = std::process::id();
    let cache = POOLS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    let stale: Vec<_> = map.keys().filter(|k| k.0 != pid).copied().collect();
    for k in stale {
        // Leaked on purpose: dropping a pool whose threads died with the parent is not safe.
        std::mem::forget(map.remove(&k));
    }
    if let Some(p) = map.get(&(pid, threads)) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("instant-embedding-{i}"))
            .build()
            .map_err(|e| Error::param(format!("cannot start {threads} threads: {e}")))?,
    );
    map.insert((pid, threads), p.clone());
    Ok(p)
}
