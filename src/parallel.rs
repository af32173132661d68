//! Thread pools: one cached rayon pool per thread count and process, and the thread count a
//! call uses. Every wing that runs in parallel (embedding, building, renumbering, compaction)
//! takes its pool from here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};

/// The pool for `jobs` independent jobs on `threads` threads, or None when they run serially
/// (one thread or one job: no pool is built or entered).
pub fn pool_for(threads: usize, jobs: usize) -> Result<Option<Arc<rayon::ThreadPool>>> {
    if threads > 1 && jobs > 1 {
        pool(threads).map(Some)
    } else {
        Ok(None)
    }
}

/// `f` of every item, in order: in parallel on `pool` (tasks of at least `chunk` items), else
/// on the calling thread. The result does not depend on the thread count.
pub fn map_chunks<T: Sync, R: Send>(
    pool: Option<&rayon::ThreadPool>,
    items: &[T],
    chunk: usize,
    f: impl Fn(&T) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    match pool {
        Some(p) if items.len() > chunk => {
            p.install(|| items.par_iter().with_min_len(chunk).map(f).collect())
        }
        _ => items.iter().map(f).collect(),
    }
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
